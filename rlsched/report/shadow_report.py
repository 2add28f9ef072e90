"""``rlsched report shadow``'s outputs: ``shadow.md``, ``shadow.json`` and two PNG figures (written atomically).

- ``shadow-agreement.png``: top-1 and top-k agreement beside a random order's, and where rlsched ranked the
  job Slurm started next (histogram of the rank);
- ``shadow-beyond.png``: the distribution (CDF) of waits beyond rlsched's pick, per class.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.atomic import atomic_write
from rlsched.report.shadow import ShadowAnalysis, WaitSummary, summarise_beyond

REPORT_MD = "shadow.md"
REPORT_JSON = "shadow.json"
AGREEMENT_PNG = "shadow-agreement.png"
BEYOND_PNG = "shadow-beyond.png"


@dataclass
class ReportContext:
    """What the report says about its inputs."""

    since: str
    until: str
    log_files: Sequence[str]
    skipped_lines: int = 0
    first_skipped: str | None = None
    sources: Sequence[str] = ()
    modes: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100.0 * x:.1f} %"


def _dur(s: float) -> str:
    if not math.isfinite(s):
        return "n/a"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def _table(rows: Sequence[WaitSummary], label: str) -> list[str]:
    lines = [
        f"| {label} | started jobs | rlsched earlier | mean beyond | median | p95 | max |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.group} | {r.jobs} | {r.earlier} | {_dur(r.mean_s)} | {_dur(r.median_s)} | "
            f"{_dur(r.p95_s)} | {_dur(r.max_s)} |"
        )
    return lines


def markdown(a: ShadowAnalysis, ctx: ReportContext) -> str:
    """The report's text (docs/workflow.md, ``## report shadow``, explains each number)."""
    k = a.top_k
    lines = [
        "# rlsched shadow report",
        "",
        f"Decision log {', '.join(ctx.log_files) or '(none)'}, cycles from {ctx.since} to {ctx.until}; "
        f"start times from {', '.join(ctx.sources) or '(none)'}.",
        "",
    ]
    if ctx.modes:
        lines += ["Cycles by daemon mode: " + ", ".join(f"{m} {n}" for m, n in sorted(ctx.modes.items())) + ".", ""]
    lines += [
        "## Agreement",
        "",
        "| measure | rlsched vs Slurm | random order |",
        "|---|---:|---:|",
        f"| top-1: Slurm's next start was rlsched's first job | {_pct(a.rate(a.top1_hits))} | "
        f"{_pct(a.top1_chance if a.contested else math.nan)} |",
        f"| top-{k}: Slurm's next start was among rlsched's first {k} | {_pct(a.rate(a.topk_hits))} | "
        f"{_pct(a.topk_chance if a.contested else math.nan)} |",
        "",
    ]
    if a.slurm_pick_ranks:
        ranks = np.asarray(a.slurm_pick_ranks)
        lines += [
            f"Rank rlsched gave Slurm's next start: median {float(np.median(ranks)):g}, "
            f"p90 {float(np.percentile(ranks, 90)):g}, worst {int(ranks.max())}.",
            "",
        ]
    lines += [
        "## Cycles and jobs",
        "",
        "| | count |",
        "|---|---:|",
        f"| cycles in the window | {a.cycles} |",
        f"| decisive (a ranked job started before the next cycle) | {a.decisive} |",
        f"| contested (decisive, 2+ jobs pending): the agreement rates' base | {a.contested} |",
        f"| trivial (decisive, one job pending) | {a.trivial} |",
        f"| quiet (no ranked job started before the next cycle) | {a.quiet} |",
        f"| jobs ranked | {a.jobs_seen} |",
        f"| jobs ranked and started | {a.jobs_started} |",
        f"| jobs unmatched (no start in the source: pending, cancelled, or outside it) | {a.jobs_unmatched} |",
        f"| jobs started before a cycle that ranked them (clock skew, requeue; left out) | {a.inconsistent} |",
        f"| damaged or torn log lines skipped | {ctx.skipped_lines} |",
        "",
    ]
    if ctx.first_skipped:
        lines += [f"First skipped line: {ctx.first_skipped}.", ""]
    earlier = a.earlier
    lines += [
        "## Jobs rlsched would have started earlier",
        "",
        f"{len(earlier)} of {a.jobs_started} started jobs would have started earlier under rlsched "
        f"(throughput-matched: rlsched fills the cores Slurm filled in each cycle's window, in its order); "
        f"Slurm started {a.slurm_first} no later than rlsched would have.  How long they waited beyond "
        "rlsched's pick:",
        "",
    ]
    lines += [*_table(summarise_beyond(a.outcomes, "all"), "all"), ""]
    lines += [*_table(summarise_beyond(a.outcomes, "class"), "class"), ""]
    lines += [*_table(summarise_beyond(a.outcomes, "vo"), "VO"), ""]
    lines += [f"Figures: [{AGREEMENT_PNG}]({AGREEMENT_PNG}), [{BEYOND_PNG}]({BEYOND_PNG}).", ""]
    if a.window_s != math.inf:
        lines += [f"A cycle's window ends at the next cycle, at most {_dur(a.window_s)} later.", ""]
    for note in ctx.notes:
        lines += [f"Note: {note}", ""]
    return "\n".join(lines)


def summary_json(a: ShadowAnalysis, ctx: ReportContext) -> dict[str, Any]:
    def num(x: float) -> float | None:
        return x if math.isfinite(x) else None

    def rows(by: str) -> list[dict[str, Any]]:
        return [
            {
                "group": r.group,
                "jobs": r.jobs,
                "earlier": r.earlier,
                "mean_s": num(r.mean_s),
                "median_s": num(r.median_s),
                "p95_s": num(r.p95_s),
                "max_s": num(r.max_s),
            }
            for r in summarise_beyond(a.outcomes, by)
        ]

    return {
        "since": ctx.since,
        "until": ctx.until,
        "log_files": list(ctx.log_files),
        "sources": list(ctx.sources),
        "modes": dict(ctx.modes),
        "skipped_lines": ctx.skipped_lines,
        "top_k": a.top_k,
        "cycles": a.cycles,
        "decisive": a.decisive,
        "contested": a.contested,
        "trivial": a.trivial,
        "quiet": a.quiet,
        "top1": num(a.rate(a.top1_hits)),
        "topk": num(a.rate(a.topk_hits)),
        "top1_chance": num(a.top1_chance) if a.contested else None,
        "topk_chance": num(a.topk_chance) if a.contested else None,
        "jobs_seen": a.jobs_seen,
        "jobs_started": a.jobs_started,
        "jobs_unmatched": a.jobs_unmatched,
        "inconsistent": a.inconsistent,
        "earlier": len(a.earlier),
        "slurm_first": a.slurm_first,
        "beyond": {"all": rows("all"), "class": rows("class"), "vo": rows("vo")},
        "window_s": num(a.window_s),
    }


def _save_png(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write(path, lambda fh: fh.write(buf.getvalue()))


def figures(a: ShadowAnalysis, out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    labels = ["top-1", f"top-{a.top_k}"]
    x = np.arange(2)
    got = [a.rate(a.top1_hits), a.rate(a.topk_hits)]
    chance = [a.top1_chance, a.topk_chance] if a.contested else [math.nan, math.nan]
    left.bar(x - 0.2, [100 * v if math.isfinite(v) else 0 for v in got], 0.4, label="rlsched vs Slurm")
    left.bar(x + 0.2, [100 * v if math.isfinite(v) else 0 for v in chance], 0.4, label="random order")
    left.set_xticks(x, labels)
    left.set_ylabel("% of contested cycles")
    left.set_ylim(0, 100)
    left.set_title(f"Agreement ({a.contested} contested cycles)")
    left.legend()
    if a.slurm_pick_ranks:
        ranks = np.asarray(a.slurm_pick_ranks)
        right.hist(ranks, bins=np.arange(1, min(int(ranks.max()), 50) + 2) - 0.5)
    right.set_xlabel("rank rlsched gave Slurm's next start")
    right.set_ylabel("cycles")
    right.set_title("Where Slurm's pick stood in rlsched's order")
    agreement = out / AGREEMENT_PNG
    _save_png(fig, agreement)

    fig, ax = plt.subplots(figsize=(6, 4))
    for cls in sorted({o.job_class for o in a.outcomes}):
        waits = np.sort([o.beyond_s for o in a.earlier if o.job_class == cls and o.beyond_s is not None])
        if waits.size:
            ax.step(
                waits / 60.0,
                np.arange(1, waits.size + 1) / waits.size,
                where="post",
                label=f"{cls} ({waits.size} jobs)",
            )
    ax.set_xlabel("wait beyond rlsched's pick (minutes)")
    ax.set_ylabel("fraction of those jobs")
    ax.set_title("Jobs rlsched would have started earlier")
    if ax.get_legend_handles_labels()[0]:
        ax.legend()
    else:
        ax.text(0.5, 0.5, "no such job", ha="center", va="center", transform=ax.transAxes)
    beyond = out / BEYOND_PNG
    _save_png(fig, beyond)
    return [agreement, beyond]


def write_report(a: ShadowAnalysis, ctx: ReportContext, out: Path) -> list[Path]:
    """Write the markdown, JSON and figures into ``out`` (created); returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    md = out / REPORT_MD
    js = out / REPORT_JSON
    atomic_write(md, lambda fh: fh.write(markdown(a, ctx).encode()))
    atomic_write(js, lambda fh: fh.write(json.dumps(summary_json(a, ctx), indent=1).encode()))
    return [md, js, *figures(a, out)]
