"""``rlsched report shadow``: how the daemon's shadow decisions compare with what Slurm did."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections import Counter
from pathlib import Path

import click

from rlsched.backends.common.runner import BackendError
from rlsched.backends.slurm.config import SlurmBackendConfig
from rlsched.daemon.config import MODES, ConfigError, load_config
from rlsched.daemon.decision_log import LogRead, read_decision_log
from rlsched.report.shadow import DEFAULT_TOP_K, Cycle, ShadowLogError, analyse, cycle_from_record
from rlsched.report.shadow_report import ReportContext, write_report
from rlsched.report.starts import SOURCES, StartsReader, read_starts
from rlsched.report.times import TimeSpecError, parse_when


@click.group()
def report() -> None:
    """Reports on what the daemon did or would have done."""


def _iso(epoch_s: float) -> str:
    if not math.isfinite(epoch_s):
        return "now"
    return dt.datetime.fromtimestamp(epoch_s).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


@report.command()
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="The daemon's TOML configuration (its [shadow] decision log and [backend] Slurm).",
)
@click.option("--since", required=True, help="From: now, an age (12h, 7d), @EPOCH or an ISO date/date-time.")
@click.option("--until", default=None, help="To (default: now); same forms as --since.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder for the report.")
@click.option(
    "--source",
    type=click.Choice(SOURCES),
    default="auto",
    show_default=True,
    help="Where Slurm's start times come from (auto: sacct with slurmdbd, else the jobcomp file "
    "plus squeue, else squeue).",
)
@click.option(
    "--jobcomp",
    "jobcomp_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="The jobcomp/filetxt file (default: [backend] jobcomp_path, else Slurm's JobCompLoc).",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="The decision log (default: the config's [shadow] decision_log).",
)
@click.option(
    "--mode",
    "mode",
    type=click.Choice([*MODES, "all"]),
    default="shadow",
    show_default=True,
    help="Which cycles: those the daemon ran in this mode.",
)
@click.option(
    "--top-k", default=DEFAULT_TOP_K, show_default=True, type=click.IntRange(min=1), help="k of the top-k agreement."
)
def shadow(
    config_path: str,
    since: str,
    until: str | None,
    out_dir: str,
    source: str,
    jobcomp_path: str | None,
    log_path: str | None,
    mode: str,
    top_k: int,
) -> None:
    """Join the decision log with Slurm's start times: top-1/top-k agreement and the waits of jobs rlsched
    would have started earlier (markdown, JSON and PNG in --out; docs/workflow.md explains them)."""
    now = time.time()
    try:
        since_s = parse_when(since, now)
    except TimeSpecError as exc:
        raise click.ClickException(f"--since: {exc}") from None
    try:
        until_s = math.inf if until is None else parse_when(until, now)
    except TimeSpecError as exc:
        raise click.ClickException(f"--until: {exc}") from None
    if until_s <= since_s:
        raise click.ClickException(f"--until ({_iso(until_s)}) is not after --since ({_iso(since_s)})")
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None
    if not isinstance(config.backend, SlurmBackendConfig):
        raise click.ClickException(
            f"{config.source}: [backend] kind {config.backend.kind!r}: report shadow reads start times from Slurm only"
        )
    path = Path(log_path) if log_path else config.decision_log_file
    try:
        read = read_decision_log(path, config.shadow.keep, since_s, until_s)
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot read the decision log: {exc.strerror or exc}") from None
    if not read.files:
        raise click.ClickException(
            f"no decision log at {path}: the daemon writes it in shadow mode ([shadow] decision_log in "
            f"{config.source}); is the daemon running, with this config?"
        )
    cycles, modes, skipped = _select_cycles(read, path, mode, since_s, until_s)
    notes: list[str] = []
    first_s = min(c.time_s for c in cycles)
    try:
        starts = read_starts(StartsReader(config.backend), source, first_s - 60.0, jobcomp_path, notes.append)
    except (BackendError, ValueError) as exc:
        raise click.ClickException(f"cannot read Slurm's start times ({source}): {exc}") from None
    analysis = analyse(cycles, starts.start_s, top_k=top_k)
    ctx = ReportContext(
        since=_iso(since_s),
        until=_iso(until_s),
        log_files=[str(p) for p in read.files],
        skipped_lines=skipped,
        first_skipped=read.first_skipped,
        sources=starts.sources,
        modes=dict(modes),
        notes=notes,
    )
    try:
        written = write_report(analysis, ctx, Path(out_dir))
    except OSError as exc:
        raise click.ClickException(f"{out_dir}: cannot write the report: {exc.strerror or exc}") from None
    rate = analysis.rate
    click.echo(
        f"{analysis.cycles} cycles ({analysis.contested} contested), {analysis.jobs_seen} jobs ranked, "
        f"{analysis.jobs_started} started, {analysis.jobs_unmatched} unmatched, {skipped} log lines skipped"
    )
    click.echo(
        f"top-1 agreement {_pct(rate(analysis.top1_hits))} (random {_pct(analysis.top1_chance)}), "
        f"top-{top_k} {_pct(rate(analysis.topk_hits))} (random {_pct(analysis.topk_chance)}); "
        f"{len(analysis.earlier)} jobs rlsched would have started earlier"
    )
    for p in written:
        click.echo(f"wrote {p}")


def _select_cycles(
    read: LogRead, path: Path, mode: str, since_s: float, until_s: float
) -> tuple[list[Cycle], Counter[str], int]:
    """The decision cycles of ``mode`` in ``read``, the count of records per mode, and the lines skipped."""
    cycles: list[Cycle] = []
    modes: Counter[str] = Counter()
    skipped = read.skipped
    for n, record in enumerate(read.records, 1):
        try:
            cycle = cycle_from_record(record, f"{path}: record {n}")
        except ShadowLogError:
            skipped += 1
            continue
        modes[cycle.mode] += 1
        if mode == "all" or cycle.mode == mode:
            cycles.append(cycle)
    if not cycles:
        found = ", ".join(f"{n} {m}" for m, n in sorted(modes.items())) or "none"
        raise click.ClickException(
            f"{path}: no {'' if mode == 'all' else mode + '-mode '}decision records between "
            f"{_iso(since_s)} and {_iso(until_s)} (records in that span: {found})"
        )
    return cycles, modes, skipped


def _pct(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{100.0 * x:.1f} %"
