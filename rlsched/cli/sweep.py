"""``rlsched sim sweep``: a grid of leasing simulations on a process pool or a Dask cluster."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import click

from rlsched.core.policies.registry import DEPRECATED_LEASE_POLICIES, SIM_LEASE_POLICIES


def _ints(text: str) -> list[int]:
    """``0,5,10`` or ``0:100:5`` (start:stop:step, stop included) or a mix; BadParameter otherwise."""
    values: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            if ":" in part:
                bits = part.split(":")
                if len(bits) not in (2, 3):
                    raise click.BadParameter(f"range {part!r}: use start:stop[:step]")
                start, stop = int(bits[0]), int(bits[1])
                step = int(bits[2]) if len(bits) == 3 else 1
                if step <= 0:
                    raise click.BadParameter(f"range {part!r}: step must be positive")
                values.extend(range(start, stop + 1, step))
            else:
                values.append(int(part))
        except ValueError:
            raise click.BadParameter(f"{part!r} is not an integer (expected e.g. '0,8,16' or '0:100:5')") from None
    if not values:
        raise click.BadParameter(f"{text!r}: no value")
    return values


def _floats(text: str) -> list[float]:
    try:
        values = [float(p) for p in text.split(",") if p.strip()]
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected a comma-separated list of numbers") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise click.BadParameter(f"{text!r}: expected a comma-separated list of finite numbers")
    return values


def _parse_ints(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    return _ints(value)


def _parse_floats(ctx: click.Context, param: click.Parameter, value: str) -> list[float]:
    return _floats(value)


def _current_policies(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    """The policies under their names now; a former name (``ours``, ``ours-daily``) warns once on stderr."""
    for old in dict.fromkeys(v for v in value if v in DEPRECATED_LEASE_POLICIES):
        click.echo(
            f"rlsched: warning: --policy {old} is deprecated, use --policy {DEPRECATED_LEASE_POLICIES[old]} "
            "(the old name goes in the next release)",
            err=True,
        )
    return tuple(DEPRECATED_LEASE_POLICIES.get(v, v) for v in value)


@click.command("sweep")
@click.option(
    "--setup",
    "setups",
    multiple=True,
    default=("kth",),
    show_default=True,
    help="Workload setup (kth, ctc, sdsc, ctc-file, sdsc-file, kth-quick); repeatable.",
)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    default=("constant",),
    show_default=True,
    type=click.Choice([*SIM_LEASE_POLICIES, *DEPRECATED_LEASE_POLICIES]),
    metavar=f"[{'|'.join(SIM_LEASE_POLICIES)}]",
    callback=_current_policies,
    help="Repeatable.",
)
@click.option(
    "--caps",
    default="0:100:10",
    show_default=True,
    callback=_parse_ints,
    help="Constant V values: '0,8,16' or '0:100:5' (stop included); -1 means unbounded.",
)
@click.option(
    "--caps-per-task",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Constant V values per task (values in one task share simulation work).",
)
@click.option("--seeds", default="0", show_default=True, callback=_parse_ints, help="Random-policy seeds ('0:9').")
@click.option("--runs", type=click.IntRange(min=1), default=10, show_default=True, help="Random-V runs per seed.")
@click.option(
    "--lam",
    "lams",
    default="1",
    show_default=True,
    callback=_parse_floats,
    help="Cost weights λ of the balance (twt_imp% − λ·c%; FH: 1), comma-separated.",
)
@click.option(
    "--threshold",
    "thresholds",
    default="1",
    show_default=True,
    callback=_parse_floats,
    help="The state-aware rule's θ values (state-aware, state-aware-daily), comma-separated.",
)
@click.option(
    "--period-s",
    type=click.FloatRange(min=0, min_open=True, max=1e9),
    default=86_400.0,
    show_default=True,
    help="The policies' step in seconds (FH: one day).",
)
@click.option("--executor", type=click.Choice(["serial", "process", "dask"]), default="process", show_default=True)
@click.option(
    "--workers", type=click.IntRange(min=1), default=None, help="Process-pool size (default: the usable cores)."
)
@click.option("--scheduler-address", default=None, help="Dask scheduler, e.g. tcp://10.0.0.1:8786.")
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the rows: .json or .csv (the folder must exist).",
)
@click.option("--json", "as_json", is_flag=True, help="Print {rows: [...]} as JSON instead of the table.")
def sweep(
    setups: tuple[str, ...],
    policies: tuple[str, ...],
    caps: list[int],
    caps_per_task: int,
    seeds: list[int],
    runs: int,
    lams: list[float],
    thresholds: list[float],
    period_s: float,
    executor: str,
    workers: int | None,
    scheduler_address: str | None,
    out_path: Path | None,
    as_json: bool,
) -> None:
    """Run a grid of leasing simulations (V, seeds, λ, θ, policies); results do not depend on --executor.

    The --out folder must exist: it is checked before the runs (not created)."""
    from rlsched.cli._common import check_output_file, progress_bar
    from rlsched.sim.hybrid_cloud.setups import setup as check_setup
    from rlsched.sim.sweep import execute, grid, rows

    check_output_file(out_path, "--out")
    if any(s < 0 for s in seeds):
        raise click.BadParameter("seeds must be >= 0", param_hint="--seeds")
    try:
        for name in setups:
            check_setup(name)
        tasks = grid(
            setups,
            policies,
            caps=caps,
            seeds=seeds,
            cost_weights=lams,
            thresholds=thresholds,
            runs=runs,
            caps_per_task=caps_per_task,
            period_s=period_s,
        )
        with progress_bar(len(tasks), f"sweep ({executor})") as progress:
            results = execute(
                tasks, executor=executor, workers=workers, scheduler_address=scheduler_address, progress=progress
            )
    except (ValueError, RuntimeError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    table = rows(results)
    if as_json:
        click.echo(json.dumps({"rows": table}, indent=2))
    for r in table if not as_json else ():
        label = r["V"] if r["V"] is not None else (r["threshold"] if r["threshold"] is not None else r["run"])
        click.echo(
            f"{r['trace']:<10} {r['policy']:<17} {label!s:>6} λ={r['lambda']:<4g} "
            f"twt_imp={r['twt_imp_pct']:7.2f}% cost={r['cost_pct']:7.2f}% balance={r['balance']:7.2f}"
        )
    if out_path is not None:
        _write_rows(table, out_path)


def _write_rows(table: list[dict[str, Any]], out_path: Path) -> None:
    try:
        if out_path.suffix == ".csv":
            with out_path.open("w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(table[0]) if table else [])
                writer.writeheader()
                writer.writerows(table)
        else:
            out_path.write_text(json.dumps({"rows": table}, indent=2) + "\n")
    except OSError as exc:
        raise click.ClickException(f"--out: cannot write {out_path}: {exc.strerror or exc}") from exc
