"""``rlsched sim …``: replay workloads, run experiments."""

from __future__ import annotations

import csv
import inspect
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import numpy as np

from rlsched.sim.engine import DEFAULT_OVERRUN, Schedule
from rlsched.sim.workload import Workload

#: Name of the embedded default workload (synthetic, calibrated to the LAL trace of P-grid).
DEFAULT_WORKLOAD = "lal"


def load_workload(spec: str, *, seed: int = 0, max_procs: int | None = None) -> Workload:
    """``lal`` (the embedded LAL-like generator), a trace path, or a trace name."""
    if spec == DEFAULT_WORKLOAD:
        from rlsched.sim.workloads.lal import generate_lal

        workload = generate_lal(seed)
    else:
        from rlsched.sim.traces.swf import read_swf, resolve_trace

        workload = read_swf(resolve_trace(spec))
    if max_procs is not None and max_procs != workload.max_procs:
        workload = workload.with_max_procs(max_procs)
    return workload


@contextmanager
def progress_bar(total: int, label: str) -> Iterator[Callable[[int], None] | None]:
    """A progress callback drawing a bar on a terminal; None (quiet) when stderr is not one."""
    if not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr, show_pos=True) as bar:
        shown = 0

        def update(done: int) -> None:
            nonlocal shown
            bar.update(done - shown)
            shown = done

        yield update


def write_schedule_csv(schedule: Schedule, path: Path) -> None:
    """One row per job: SWF job number, submit, start, end, cores, class, VO."""
    w = schedule.workload
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["job_id", "submit", "start", "end", "procs", "wait", "job_class", "vo"])
        vo_names = np.array(w.vo_names if w.vo_names else [""], dtype=object)
        vos = vo_names[w.vo] if w.vo_names else w.vo
        for row in zip(w.job_id.tolist(), w.submit.tolist(), schedule.start.tolist(), schedule.end.tolist(),
                       w.procs.tolist(), schedule.wait.tolist(), w.job_class.tolist(), vos.tolist(), strict=True):
            out.writerow(row)


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        return f"{value:.{digits}f}"
    return str(value)


def format_summary(summary: dict[str, Any]) -> str:
    """The human-readable result table of ``rlsched sim run``."""
    lines = [
        f"workload {summary['workload']}  scheduler {summary['scheduler']}  cores {summary['cores']}  "
        f"jobs {summary['jobs']} (simulated {summary['jobs_simulated']}, trimmed {summary['jobs_trimmed']})",
    ]
    dropped = summary["jobs_dropped"]
    if dropped:
        lines.append("dropped: " + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items())))
    if summary.get("killed_at_limit"):
        lines.append(f"killed at their requested time: {summary['killed_at_limit']} jobs")
    lines.append("")
    header = f"{'':<14}{'jobs':>8}{'mean wait s':>14}{'median wait s':>15}{'mean W':>9}{'sd W':>8}{'wait<120s':>11}"
    lines.append(header)
    rows = [("all", {"jobs": summary["jobs"], "mean_wait_s": summary["mean_wait_s"],
                     "median_wait_s": summary["median_wait_s"],
                     "mean_responsiveness": summary["mean_responsiveness"], "sd_responsiveness": None,
                     "frac_wait_under_120s": None})]
    rows += list(summary["by_class"].items())
    for name, g in rows:
        lines.append(f"{name:<14}{_fmt(g['jobs']):>8}{_fmt(g['mean_wait_s'], 0):>14}"
                     f"{_fmt(g['median_wait_s'], 0):>15}{_fmt(g['mean_responsiveness']):>9}"
                     f"{_fmt(g['sd_responsiveness']):>8}{_fmt(g['frac_wait_under_120s']):>11}")
    lines.append("")
    lines.append(f"utilization {summary['utilization']:.3f}   makespan {summary['makespan_s'] / 86400:.1f} days   "
                 f"mean bounded slowdown {_fmt(summary['mean_bounded_slowdown'], 2)}   "
                 f"simulation {summary['sim_seconds']:.2f} s")
    return "\n".join(lines)


@click.group()
def sim() -> None:
    """Trace-driven simulation: replay a workload, run the papers' experiments."""


@sim.command("run")
@click.option("--workload", "workload_spec", default=DEFAULT_WORKLOAD, show_default=True,
              help="'lal' (embedded synthetic LAL-like workload), an SWF path, or a trace name.")
@click.option("--scheduler", default="easy", show_default=True,
              type=click.Choice(["fcfs", "easy", "sjf", "edf", "native"]))
@click.option("--backfill/--no-backfill", default=None,
              help="EASY backfilling behind the queue head (default: on for easy, off for the others).")
@click.option("--cores", type=int, default=None, help="Pool size (default: the workload's machine size).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the synthetic workload.")
@click.option("--trim", type=int, default=0, show_default=True,
              help="Leave the first and last N jobs out of the statistics (P-grid uses 500).")
@click.option("--overrun", type=click.Choice(["kill", "run"]), default=DEFAULT_OVERRUN, show_default=True,
              help="Jobs that ran past their request: killed at the limit, or run to their recorded end.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the summary as JSON.")
@click.option("--schedule", "schedule_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write one CSV row per job (job_id, submit, start, end, procs, …).")
def run_command(workload_spec: str, scheduler: str, backfill: bool | None, cores: int | None, seed: int,
                trim: int, overrun: str, json_path: Path | None, schedule_path: Path | None) -> None:
    """Replay a workload under a classic scheduler and print the metrics."""
    from rlsched.sim.metrics import summarize
    from rlsched.sim.schedulers import simulate, with_recorded_waits

    try:
        workload = load_workload(workload_spec, seed=seed, max_procs=cores)
        if scheduler == "native":
            workload = with_recorded_waits(workload)
        with progress_bar(len(workload), f"{workload.name} {scheduler}") as progress:
            schedule = simulate(workload, scheduler, cores=cores, backfill=backfill,
                                overrun=overrun, progress=progress)  # type: ignore[arg-type]
        summary = summarize(schedule, trim=trim)
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(format_summary(summary))
    if json_path is not None:
        json_path.write_text(json.dumps(summary, indent=2) + "\n")
    if schedule_path is not None:
        write_schedule_csv(schedule, schedule_path)


@sim.command("experiment")
@click.argument("name")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory for results.json, report.md and the figures (required but for 'list').")
@click.option("--quick", is_flag=True, help="A small version for smoke tests.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--n-seeds", type=click.IntRange(min=1), default=None,
              help="Reporting seeds SEED .. SEED+N-1 (the experiment's default when omitted).")
def experiment_command(name: str, out_dir: Path | None, quick: bool, seed: int, n_seeds: int | None) -> None:
    """Regenerate a paper's tables and figures (see `rlsched sim experiment list`)."""
    from rlsched.sim.experiments import output_dir, registry

    experiments = registry()
    if name == "list":
        for exp in sorted(experiments.values(), key=lambda e: e.name):
            click.echo(f"{exp.name:<18} {exp.help}")
        return
    if name not in experiments:
        raise click.ClickException(f"unknown experiment {name!r}; known: {', '.join(sorted(experiments)) or 'none'}")
    if out_dir is None:
        raise click.UsageError("--out DIR is required")
    options: dict[str, Any] = {"quick": quick, "seed": seed}
    if n_seeds is not None:
        if "n_seeds" not in inspect.signature(experiments[name].run).parameters:
            raise click.UsageError(f"experiment {name!r} takes no --n-seeds")
        options["n_seeds"] = n_seeds
    result = experiments[name].run(output_dir(out_dir), **options)
    click.echo(json.dumps(result, indent=2, default=str))


def _add_sweep() -> None:
    from rlsched.cli.sweep import sweep

    sim.add_command(sweep)


_add_sweep()
