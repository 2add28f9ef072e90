"""``rlsched history …``: a site's own records as a trace the simulator replays (docs/history.md), and the deployed
policy's runtime predictor taught that trace (``history predictor``, docs/daemon.md "The first start")."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click

from rlsched.history.sources import DEFAULT_SACCT_TIMEOUT_S, SOURCES


@click.group()
def history() -> None:
    """A site's job history (sacct, sacct --json, the jobcomp file) as a trace for the simulator, and the
    deployed policy's runtime predictor taught it before the daemon's first start."""


@history.command("import")
@click.option(
    "--from",
    "source",
    required=True,
    type=click.Choice(list(SOURCES)),
    help="sacct: run sacct now (slurmdbd) for --start/--end; sacct-file: a saved `sacct --parsable2` "
    "file; sacct-json: a saved `sacct --json` file; jobcomp: the jobcomp/filetxt file; "
    "pbs-accounting: a PBS accounting log (or its folder).",
)
@click.option(
    "--input",
    "input_path",
    type=click.Path(path_type=Path),
    default=None,
    help="The file to read (every source but sacct; pbs-accounting: also the accounting folder).",
)
@click.option(
    "--start",
    default=None,
    metavar="YYYY-MM-DD[THH:MM[:SS]]",
    help="Window start (local time): sacct's --starttime, and jobs submitted before it are dropped.",
)
@click.option(
    "--end",
    default=None,
    metavar="YYYY-MM-DD[THH:MM[:SS]]|now",
    help="Window end (default: now for sacct, none for files): jobs submitted from it on are dropped.",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The SWF to write (NAME.swf); NAME.jobs.csv and NAME.meta.json go beside it.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The daemon config (rlsched.toml): class rule, account -> VO mapping, Slurm commands. "
    "Without it: interactive iff time limit <= 900 s, one VO per account.",
)
@click.option(
    "--cores",
    type=click.IntRange(min=1),
    default=None,
    help="The machine's size for the SWF MaxProcs (default: the peak allocation of the records).",
)
@click.option("--clusters", default=None, help="--from sacct: sacct's --clusters (default: the local cluster).")
@click.option(
    "--columns",
    default=None,
    metavar="F1,F2,...",
    help="--from sacct-file: the field names of a file saved with --noheader.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1),
    default=DEFAULT_SACCT_TIMEOUT_S,
    show_default=True,
    help="--from sacct: seconds sacct may take (each attempt).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="A malformed line is an error (exit 1, nothing written); default: skipped, counted, reported.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
def import_command(
    source: str,
    input_path: Path | None,
    start: str | None,
    end: str | None,
    out: Path,
    config_path: Path | None,
    cores: int | None,
    clusters: str | None,
    columns: str | None,
    timeout_s: float,
    strict: bool,
    as_json: bool,
) -> None:
    """Import job records into NAME.swf + NAME.jobs.csv + NAME.meta.json.

    \b
    Examples:
      rlsched history import --from sacct --start 2026-10-01 --end 2026-11-01 \\
          --config /etc/rlsched/rlsched.toml --out oct.swf
      sacct -a -X -P -S 2026-10-01 -E 2026-11-01 > oct.txt \\
          --format=JobIDRaw,JobID,User,Account,Partition,QOS,State,Submit,Start,End,TimelimitRaw,AllocCPUS,NNodes
      rlsched history import --from sacct-file --input oct.txt --out oct.swf
    """
    from rlsched.backends.common.runner import BackendError
    from rlsched.history.records import HistoryFormatError
    from rlsched.history.sources import ImportRequest, import_history, site_settings
    from rlsched.history.trace import write_trace

    _check_options(source, input_path, start, out, clusters, columns)
    t0 = time.perf_counter()
    try:
        settings = site_settings(config_path)
        request = ImportRequest(
            source=source,
            input=input_path,
            start=start,
            end=end,
            clusters=clusters,
            columns=tuple(c.strip() for c in columns.split(",")) if columns else None,
            timeout_s=timeout_s,
            strict=strict,
            cores=cores,
        )
        trace = import_history(request, settings)
        paths = write_trace(trace, out, meta=trace.meta, unlimited_time_s=settings.unlimited_time_s)
    except (HistoryFormatError, BackendError, ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from None
    elapsed = time.perf_counter() - t0
    summary = {
        "jobs": len(trace),
        "dropped": trace.log.as_dict(),
        "malformed_examples": trace.log.examples,
        "vos": trace.vo_counts(),
        "classes": trace.class_counts(),
        "max_procs": trace.max_procs,
        "max_procs_from": trace.max_procs_from,
        "larger_than_machine": sum(1 for j in trace.jobs if j.cpus > trace.max_procs),
        "files": [str(p) for p in paths],
        "seconds": round(elapsed, 3),
    }
    if as_json:
        click.echo(json.dumps(summary, indent=2))
        return
    click.echo(_format_summary(source, summary))


@history.command("predictor")
@click.option(
    "--config",
    "config_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The daemon config (rlsched.toml) whose policy and state dir the predictor is for.",
)
@click.option("--force", is_flag=True, help="Replace an existing predictor.json (what a daemon learned is lost).")
@click.argument("history_spec", metavar="HISTORY")
def predictor_command(config_path: Path, force: bool, history_spec: str) -> None:
    """Teach the configured policy's runtime predictor the imported HISTORY (NAME.swf of `rlsched history
    import`) and write it to the state dir's predictor.json, where the daemon starts from it.

    Before the first start of a policy with runtime_model=user-last2 or learned: `rlsched train` judged it on
    a predictor that had learned the jobs before each window; without this the daemon starts it cold (the
    request, until users' jobs finish).  Users are keyed by name and VOs by the config, as the daemon keys them.

    \b
    Example:
      rlsched history predictor --config /etc/rlsched/rlsched.toml oct.swf
    """
    from rlsched.cli._common import load_workload
    from rlsched.daemon.config import load_config
    from rlsched.daemon.state import save_predictor
    from rlsched.history.warmup import (
        configured_runtime,
        live_history,
        refuse_overwrite,
        warm_predictor,
    )

    try:
        config = load_config(config_path, require_mode=True)
        target = config.predictor_file
        refuse_overwrite(target, force)  # before any work: the refusal costs nothing
        runtime, policy = configured_runtime(config)
        workload = load_workload(history_spec)
        done = warm_predictor(runtime, live_history(workload, config.vo_mapping()), policy)
        save_predictor(target, runtime.state())
    except (ValueError, OSError) as exc:  # the config's, the history's, the agent's errors: one line each
        raise click.ClickException(" ".join(str(exc).split())) from None
    if done.unnamed_users:
        click.echo(
            f"warning: {done.unnamed_users} of the {done.users} users of {history_spec} have no name in its meta "
            "file: their history cannot be matched to live users (they start cold)",
            err=True,
        )
    click.echo(
        f"learned {done.learned} jobs of {done.users} users from {history_spec} into the {done.predictor} runtime "
        f"predictor of policy {done.policy}; wrote {target}"
    )


def _check_options(
    source: str, input_path: Path | None, start: str | None, out: Path, clusters: str | None, columns: str | None
) -> None:
    """Refuse a .gz --out or one in no folder, options that do not go with --from, a missing --input (one line each)."""
    if out.name.endswith(".gz"):
        raise click.UsageError("--out: write a plain NAME.swf (compress it afterwards if you like)")
    if not out.parent.is_dir():
        raise click.ClickException(f"--out: folder {out.parent} does not exist")
    if source != "sacct" and input_path is None:
        raise click.UsageError(f"--from {source} reads a file: give --input FILE")
    if source == "sacct" and input_path is not None:
        raise click.UsageError("--from sacct runs sacct; to read a saved file use --from sacct-file or sacct-json")
    if source == "sacct" and start is None:
        raise click.UsageError("--from sacct needs --start (and --end, default now)")
    if columns is not None and source != "sacct-file":
        raise click.UsageError("--columns goes with --from sacct-file")
    if clusters is not None and source != "sacct":
        raise click.UsageError("--clusters goes with --from sacct")
    folder_ok = source == "pbs-accounting" and input_path is not None and input_path.is_dir()
    if input_path is not None and not input_path.is_file() and not folder_ok:
        raise click.ClickException(f"--input: no such file: {input_path}")


def _format_summary(source: str, summary: dict[str, Any]) -> str:
    swf, jobs_csv, meta = summary["files"]
    lines = [
        f"imported {summary['jobs']} jobs from {source} into {swf} (+ {Path(jobs_csv).name}, "
        f"{Path(meta).name}) in {summary['seconds']:.1f} s",
        f"machine: {summary['max_procs']} cores ({summary['max_procs_from']})"
        + (
            f"; {summary['larger_than_machine']} jobs ask more (the simulator drops them)"
            if summary["larger_than_machine"]
            else ""
        ),
        "VOs: " + (", ".join(f"{vo or '(no account)'} {n}" for vo, n in summary["vos"].items()) or "-"),
        "classes: " + ", ".join(f"{c} {n}" for c, n in summary["classes"].items()),
    ]
    dropped = summary["dropped"]
    total = sum(dropped.values())
    lines.append(f"dropped {total}" + (": " + ", ".join(f"{k} {v}" for k, v in dropped.items()) if total else ""))
    for example in summary["malformed_examples"]:
        lines.append(f"  malformed: {example}")
    if dropped.get("malformed", 0) > len(summary["malformed_examples"]):
        lines.append(
            f"  … and {dropped['malformed'] - len(summary['malformed_examples'])} more malformed "
            "(--strict stops at the first)"
        )
    return "\n".join(lines)
