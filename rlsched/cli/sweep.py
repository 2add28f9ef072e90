"""``rlsched sim sweep``: a grid of leasing simulations on a process pool or a Dask cluster."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import click

from rlsched.core.policies.registry import SIM_LEASE_POLICIES


def _ints(text: str) -> list[int]:
    """``0,5,10`` or ``0:100:5`` (start:stop:step, stop included) or a mix."""
    values: list[int] = []
    for part in filter(None, (p.strip() for p in text.split(","))):
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
    return values


def _floats(text: str) -> list[float]:
    try:
        return [float(p) for p in text.split(",") if p.strip()]
    except ValueError as exc:
        raise click.BadParameter(f"{text!r}: a comma-separated list of numbers") from exc


@click.command("sweep")
@click.option("--setup", "setups", multiple=True, default=("kth",), show_default=True,
              help="Workload setup (kth, ctc, sdsc, ctc-file, sdsc-file, kth-quick); repeatable.")
@click.option("--policy", "policies", multiple=True, default=("constant",), show_default=True,
              type=click.Choice(list(SIM_LEASE_POLICIES)), help="Repeatable.")
@click.option("--caps", default="0:100:10", show_default=True,
              help="Constant V values: '0,8,16' or '0:100:5' (stop included); -1 means unbounded.")
@click.option("--caps-per-task", type=int, default=8, show_default=True,
              help="Constant V values per task (values in one task share simulation work).")
@click.option("--seeds", default="0", show_default=True, help="Random-policy seeds ('0:9').")
@click.option("--runs", type=int, default=10, show_default=True, help="Random-V runs per seed.")
@click.option("--lam", "lams", default="1", show_default=True,
              help="Cost weights λ of the balance (twt_imp% − λ·c%; FH: 1), comma-separated.")
@click.option("--threshold", "thresholds", default="1", show_default=True,
              help="The state-aware rule's θ values (ours, ours-daily), comma-separated.")
@click.option("--period-s", type=float, default=86_400.0, show_default=True,
              help="The policies' step in seconds (FH: one day).")
@click.option("--executor", type=click.Choice(["serial", "process", "dask"]), default="process",
              show_default=True)
@click.option("--workers", type=int, default=None, help="Process-pool size (default: the usable cores).")
@click.option("--scheduler-address", default=None, help="Dask scheduler, e.g. tcp://10.0.0.1:8786.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the rows: .json or .csv.")
def sweep(setups: tuple[str, ...], policies: tuple[str, ...], caps: str, caps_per_task: int, seeds: str,
          runs: int, lams: str, thresholds: str, period_s: float, executor: str, workers: int | None,
          scheduler_address: str | None,
          out_path: Path | None) -> None:
    """Run a grid of leasing simulations (V, seeds, λ, θ, policies); results do not depend on --executor."""
    from rlsched.cli.sim import progress_bar
    from rlsched.sim.leasing.setups import setup as check_setup
    from rlsched.sim.sweep import execute, grid, rows

    try:
        for name in setups:
            check_setup(name)
        tasks = grid(setups, policies, caps=_ints(caps), seeds=_ints(seeds), cost_weights=_floats(lams),
                     thresholds=_floats(thresholds), runs=runs, caps_per_task=caps_per_task,
                     period_s=period_s)
        with progress_bar(len(tasks), f"sweep ({executor})") as progress:
            results = execute(tasks, executor=executor, workers=workers, scheduler_address=scheduler_address,
                              progress=progress)
    except (ValueError, RuntimeError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    table = rows(results)
    for r in table:
        label = r["V"] if r["V"] is not None else (r["threshold"] if r["threshold"] is not None else r["run"])
        click.echo(f"{r['trace']:<10} {r['policy']:<10} {label!s:>6} λ={r['lambda']:<4g} "
                   f"twt_imp={r['twt_imp_pct']:7.2f}% cost={r['cost_pct']:7.2f}% balance={r['balance']:7.2f}")
    if out_path is not None:
        if out_path.suffix == ".csv":
            with out_path.open("w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(table[0]) if table else [])
                writer.writeheader()
                writer.writerows(table)
        else:
            out_path.write_text(json.dumps({"rows": table}, indent=2) + "\n")
