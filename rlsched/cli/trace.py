"""``rlsched trace``: fetch Parallel Workloads Archive logs and describe SWF traces."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from rlsched.cli._common import CLASS_BY, classed
from rlsched.sim.traces.fetch import CATALOGUE, FetchError, cache_dir, fetch_trace, sha256_of
from rlsched.sim.traces.swf import SwfFormatError, resolve_trace

#: Header keys shown first by ``trace info`` (the rest follow in file order).
_MAIN_HEADER_KEYS = (
    "Computer",
    "Installation",
    "MaxProcs",
    "MaxNodes",
    "MaxJobs",
    "MaxRecords",
    "UnixStartTime",
    "TimeZoneString",
    "StartTime",
    "EndTime",
    "MaxQueues",
    "MaxPartitions",
)
_KEY_WIDTH = 26


@click.group()
def trace() -> None:
    """Workload traces in the Standard Workload Format (SWF)."""


@trace.command("list")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print {cache, logs: [{name, aliases, sha256, description, cached}]} as JSON.",
)
def list_logs(as_json: bool) -> None:
    """Archive logs that `rlsched trace fetch` knows by name."""
    if as_json:
        from rlsched.sim.traces.swf import resolve_trace

        logs = []
        for entry in CATALOGUE.values():
            try:
                cached: str | None = str(resolve_trace(entry.name))
            except FileNotFoundError:
                cached = None
            logs.append(
                {
                    "name": entry.name,
                    "aliases": list(entry.aliases),
                    "sha256": entry.sha256 or None,
                    "description": entry.description,
                    "cached": cached,
                }
            )
        click.echo(json.dumps({"cache": str(cache_dir()), "logs": logs}, indent=2))
        return
    click.echo(f"{'archive name':<26} {'aliases':<24} {'sha256':<7} description")
    for entry in CATALOGUE.values():
        known = "known" if entry.sha256 else "-"
        click.echo(f"{entry.name:<26} {', '.join(entry.aliases):<24} {known:<7} {entry.description}")
    click.echo(f"\ncache: {cache_dir()}")


@trace.command()
@click.argument("name")
@click.option("--base-url", help="Archive base URL (default: $RLSCHED_PWA_URL or the PWA).")
@click.option("--dest", type=click.Path(file_okay=False), help="Folder to save to (default: the cache).")
@click.option("--sha256", "sha256", metavar="HEX", help="Expected sha256 (needed for logs without one).")
@click.option("--no-verify", is_flag=True, help="Skip the sha256 check (for logs with no known hash).")
@click.option("--force", is_flag=True, help="Download again even if a verified copy exists.")
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True, max=86_400),
    default=60.0,
    show_default=True,
    help="Network timeout in seconds.",
)
@click.option("--json", "as_json", is_flag=True, help="Print {path, bytes, sha256, verified, seconds} as JSON.")
def fetch(
    name: str,
    base_url: str | None,
    dest: str | None,
    sha256: str | None,
    no_verify: bool,
    force: bool,
    timeout_s: float,
    as_json: bool,
) -> None:
    """Download the archive log NAME (archive name like KTH-SP2-1996-2.1-cln, or alias like kth)."""
    progress = _progress_printer() if sys.stderr.isatty() else None
    started = time.perf_counter()
    try:
        path = fetch_trace(
            name,
            base=base_url,
            dest=dest,
            sha256=sha256,
            verify=not no_verify,
            force=force,
            timeout_s=timeout_s,
            progress=progress,
        )
    except FetchError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if progress:
            click.echo("", err=True)
    size = path.stat().st_size
    digest = sha256_of(path)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "path": str(path),
                    "bytes": size,
                    "sha256": digest,
                    "verified": not no_verify,
                    "seconds": round(time.perf_counter() - started, 3),
                },
                indent=2,
            )
        )
        return
    check = "not verified" if no_verify else f"sha256 {digest} ok"
    click.echo(f"{path} ({size:,} bytes, {check}, {time.perf_counter() - started:.1f} s)")


def _progress_printer() -> Any:
    def show(done: int, total: int | None) -> None:
        of = f" of {total / 1e6:.1f}" if total else ""
        click.echo(f"\r  {done / 1e6:.1f}{of} MB", err=True, nl=False)

    return show


@trace.command()
@click.argument("path_or_name")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option("--max-procs", type=click.IntRange(min=1), help="Override the header's MaxProcs.")
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed, for the synthetic 'lal' workload."
)
@click.option(
    "--class-by",
    "class_by",
    type=click.Choice(CLASS_BY),
    default="time-limit",
    show_default=True,
    help="Count interactive and batch jobs by their time limit (the daemon's rule, as train and "
    "evaluate class them) or by their runtime (P-grid §4.2's rule).",
)
def info(path_or_name: str, as_json: bool, max_procs: int | None, seed: int, class_by: str) -> None:
    """Header fields and job statistics of a trace (a file, a name found by `trace fetch`, or 'lal')."""
    try:
        started = time.perf_counter()
        if path_or_name == "lal":
            from rlsched.sim.workloads.lal import generate_lal

            path: Path | str = f"lal (synthetic, seed {seed})"
            workload = generate_lal(seed)
            if max_procs is not None:
                workload = workload.with_max_procs(max_procs)
        else:
            from rlsched.sim.traces.sidecar import read_trace

            path = resolve_trace(path_or_name)
            workload = read_trace(path, max_procs=max_procs)  # an imported trace's classes and VOs
        load_s = time.perf_counter() - started
        workload, class_rule = classed(workload, class_by)
    except (OSError, SwfFormatError, ValueError) as exc:  # OSError: not found / unreadable (names the path)
        raise click.ClickException(" ".join(str(exc).split())) from None
    summary = _with_class_rule(workload.summary(), class_rule)
    if len(workload) == 0:
        dropped = ", ".join(f"{reason} {n}" for reason, n in summary.get("dropped", {}).items())
        raise click.ClickException(
            f"{path}: the trace holds no job"
            + (f" (every record dropped: {dropped})" if dropped else " (an empty SWF, or comments only)")
        )
    if as_json:
        click.echo(
            json.dumps(
                {"path": str(path), "header": workload.header, "summary": summary, "load_seconds": load_s}, indent=2
            )
        )
        return
    click.echo(f"{path}  (loaded in {load_s:.3f} s)\n")
    click.echo("Header")
    keys = [k for k in _MAIN_HEADER_KEYS if k in workload.header]
    keys += [k for k in workload.header if k not in keys]
    for key in keys:
        _echo_row(key, workload.header[key])
    click.echo("\nJobs")
    for key, value in summary.items():
        if key in ("dropped", "fixed"):
            continue
        _echo_row(key, _fmt(value))
    for title in ("dropped", "fixed"):
        counts: dict[str, int] = summary[title]
        click.echo(f"\n{title.capitalize()} (by reason, see docs/traces.md)")
        if not counts:
            _echo_row("(none)", "0")
        for reason, count in counts.items():
            _echo_row(reason, f"{count:,}")


def _with_class_rule(summary: dict[str, Any], class_rule: str) -> dict[str, Any]:
    """The summary with ``class_rule`` just before the class counts it produced (the counts mean nothing
    without it: by the time limit and by the runtime they differ several-fold on a grid site)."""
    out: dict[str, Any] = {}
    for key, value in summary.items():
        if key == "interactive_jobs":
            out["class_rule"] = class_rule
        out[key] = value
    out.setdefault("class_rule", class_rule)
    return out


def _echo_row(key: str, value: str) -> None:
    lines = value.splitlines() or [""]
    click.echo(f"  {key:<{_KEY_WIDTH}}{lines[0]}")
    for line in lines[1:]:
        click.echo(f"  {'':<{_KEY_WIDTH}}{line}")


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    return str(value)
