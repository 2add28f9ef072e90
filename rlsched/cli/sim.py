"""``rlsched sim …``: replay workloads, run experiments."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import click
import numpy as np

from rlsched.cli._common import (
    CLASS_BY,
    DEFAULT_WORKLOAD,
    check_output_file,
    classed,
    load_workload,
    progress_bar,
)
from rlsched.sim.engine import DEFAULT_OVERRUN, Schedule


def write_schedule_csv(schedule: Schedule, path: Path) -> None:
    """One row per job: SWF job number, submit, start, end, cores, class, VO."""
    w = schedule.workload
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["job_id", "submit", "start", "end", "procs", "wait", "job_class", "vo"])
        vo_names = np.array(w.vo_names if w.vo_names else [""], dtype=object)
        vos = vo_names[w.vo] if w.vo_names else w.vo
        for row in zip(
            w.job_id.tolist(),
            w.submit.tolist(),
            schedule.start.tolist(),
            schedule.end.tolist(),
            w.procs.tolist(),
            schedule.wait.tolist(),
            w.job_class.tolist(),
            vos.tolist(),
            strict=True,
        ):
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
    if summary.get("class_rule"):
        lines.append(f"classes by {summary['class_rule']}")
    if summary.get("killed_at_limit"):
        lines.append(f"killed at their requested time: {summary['killed_at_limit']} jobs")
    lines.append("")
    header = f"{'':<14}{'jobs':>8}{'mean wait s':>14}{'median wait s':>15}{'mean W':>9}{'sd W':>8}{'wait<120s':>11}"
    lines.append(header)
    rows = [
        (
            "all",
            {
                "jobs": summary["jobs"],
                "mean_wait_s": summary["mean_wait_s"],
                "median_wait_s": summary["median_wait_s"],
                "mean_responsiveness": summary["mean_responsiveness"],
                "sd_responsiveness": None,
                "frac_wait_under_120s": None,
            },
        )
    ]
    rows += list(summary["by_class"].items())
    for name, g in rows:
        lines.append(
            f"{name:<14}{_fmt(g['jobs']):>8}{_fmt(g['mean_wait_s'], 0):>14}"
            f"{_fmt(g['median_wait_s'], 0):>15}{_fmt(g['mean_responsiveness']):>9}"
            f"{_fmt(g['sd_responsiveness']):>8}{_fmt(g['frac_wait_under_120s']):>11}"
        )
    lines.append("")
    lines.append(
        f"utilization {summary['utilization']:.3f}   makespan {summary['makespan_s'] / 86400:.1f} days   "
        f"mean bounded slowdown {_fmt(summary['mean_bounded_slowdown'], 2)}   "
        f"simulation {summary['sim_seconds']:.2f} s"
    )
    return "\n".join(lines)


@click.group()
def sim() -> None:
    """Trace-driven simulation: replay a workload, run the papers' experiments."""


def _policy_choice(policy: str | None, scheduler: str | None, backfill: bool | None) -> tuple[str, str | None]:
    """The ``--policy`` text to run and the schedule's label (the former ``--scheduler`` keeps its labels)."""
    from rlsched.sim.schedulers import legacy_scheduler

    if policy is not None and scheduler is not None:
        raise click.UsageError("give --policy or its deprecated alias --scheduler, not both")
    if policy is None:
        spec, label = legacy_scheduler(scheduler or "easy", backfill)
        return spec.label(), label
    if backfill is not None:
        raise click.UsageError(
            "--backfill goes with --scheduler; with --policy name the rule "
            "(fcfs / easy, sjf / easy-sjf, edf:backfill=true)"
        )
    return policy, None


def _is_model_path(policy: str) -> bool:
    return policy.endswith(".npz") or Path(policy).is_file()


def _write_results(
    summary: dict[str, Any],
    schedule: Schedule,
    json_path: Path | None,
    model_path: Path | None,
    schedule_path: Path | None,
) -> None:
    """Print the summary of ``sim run`` (a table, or JSON for ``--json -``); write the --json and --schedule files."""
    to_stdout = json_path is not None and str(json_path) == "-"
    try:
        if to_stdout:
            click.echo(json.dumps(summary, indent=2))
        else:
            click.echo(format_summary(summary))
            if json_path is not None:
                json_path.write_text(json.dumps(summary, indent=2) + "\n")
        if model_path is not None:
            click.echo(f"model saved to {model_path}", err=to_stdout)
        if schedule_path is not None:
            write_schedule_csv(schedule, schedule_path)
    except OSError as exc:
        raise click.ClickException(f"cannot write the results: {exc}") from exc


@sim.command("run")
@click.option(
    "--workload",
    "workload_spec",
    default=DEFAULT_WORKLOAD,
    show_default=True,
    help="'lal' (embedded synthetic LAL-like workload), an SWF path, or a trace name.",
)
@click.option(
    "--policy",
    default=None,
    metavar="NAME[:k=v,...] | PATH.npz",
    help="A registry policy (see `rlsched sim policies`; default easy) with parameters, or a saved "
    "model to evaluate (greedy, not learning).",
)
@click.option(
    "--scheduler",
    default=None,
    type=click.Choice(["fcfs", "easy", "sjf", "edf", "native"]),
    help="Deprecated alias of --policy (edf: the registry's EDF under the requested runtime model).",
)
@click.option(
    "--backfill/--no-backfill",
    default=None,
    help="With --scheduler: EASY backfilling behind the queue head (default: on for easy, off for the others).",
)
@click.option(
    "--cores", type=click.IntRange(min=1), default=None, help="Pool size (default: the workload's machine size)."
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the synthetic workload."
)
@click.option(
    "--scale",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Scale of the synthetic LAL-like workload (fraction of its jobs; default 1).",
)
@click.option(
    "--trim",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Leave the first and last N jobs out of the statistics (P-grid uses 500).",
)
@click.option(
    "--overrun",
    type=click.Choice(["kill", "run"]),
    default=DEFAULT_OVERRUN,
    show_default=True,
    help="Jobs that ran past their request: killed at the limit, or run to their recorded end.",
)
@click.option(
    "--save-model",
    "model_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Learned policies: write the trained model (spec, weights, experience) to this .npz.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    is_flag=False,
    flag_value="-",
    default=None,
    help="Print the summary as JSON instead of the table (--json alone or --json -), or write it to "
    "the file PATH (--json PATH; the table is printed too).",
)
@click.option(
    "--schedule",
    "schedule_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write one CSV row per job (job_id, submit, start, end, procs, …).",
)
@click.option(
    "--class-by",
    "class_by",
    type=click.Choice(CLASS_BY),
    default="time-limit",
    show_default=True,
    help="Class jobs by their time limit (the daemon's rule, as train and evaluate do) or by their "
    "runtime (P-grid §4.2's rule, for reproducing the papers).",
)
def run_command(
    workload_spec: str,
    policy: str | None,
    scheduler: str | None,
    backfill: bool | None,
    cores: int | None,
    seed: int,
    scale: float | None,
    trim: int,
    overrun: str,
    model_path: Path | None,
    json_path: Path | None,
    schedule_path: Path | None,
    class_by: str,
) -> None:
    """Replay a workload under a policy (a rule, a learned agent, or a saved model) and print the metrics.

    The folders of --json PATH, --schedule and --save-model must exist: they are checked before the run."""
    from rlsched.core.agents import SchedulingAgent
    from rlsched.core.policies import PolicyError, load_model, save_policy
    from rlsched.core.view import Agent
    from rlsched.sim.policies import simulate_policy, workload_vos
    from rlsched.sim.schedulers import with_recorded_waits
    from rlsched.sim.summary import summarize

    text, label = _policy_choice(policy, scheduler, backfill)
    check_output_file(json_path, "--json")
    check_output_file(schedule_path, "--schedule")
    check_output_file(model_path, "--save-model")
    try:
        workload, class_rule = classed(load_workload(workload_spec, seed=seed, max_procs=cores, scale=scale), class_by)
        if 2 * trim >= len(workload):
            raise click.BadParameter(
                f"{trim} leaves none of the {len(workload)} jobs in the statistics (the first "
                f"and last {trim} are left out)",
                param_hint="--trim",
            )
        agent: Agent | None = None
        spec: Any = text
        if _is_model_path(text):
            from rlsched.workflow.evaluate import check_model

            check_model(Path(text), workload_vos(workload), None, None, workload.name)
            loaded, spec = load_model(text, expect_vos=workload_vos(workload))
            if isinstance(loaded, SchedulingAgent):
                loaded.learn = False  # evaluate the model as it is
                agent = loaded
            # A scored model runs from its spec alone: a static key, the simulator's native path.
        elif text.split(":", 1)[0] in ("native", "recorded"):
            workload = with_recorded_waits(workload)
        with progress_bar(len(workload), f"{workload.name} {label or text}") as progress:
            ran = simulate_policy(
                workload,
                spec,
                cores,
                overrun=overrun,  # type: ignore[arg-type]
                agent=agent,
                progress=progress,
                name=label,
            )
        if model_path is not None:
            if ran.agent is None or agent is not None:
                raise PolicyError(
                    f"--save-model: policy {ran.spec.name!r} trained no model here (only learned "
                    "policies run by name do)"
                )
            save_policy(ran.agent, ran.spec, model_path)  # type: ignore[arg-type]
        summary = {**summarize(ran.schedule, trim=trim), "class_rule": class_rule}
        if summary["jobs"] == 0:
            raise ValueError(
                f"no job left in the statistics of {workload.name} (simulated "
                f"{summary['jobs_simulated']}, trimmed {summary['jobs_trimmed']}, dropped "
                f"{sum(summary['jobs_dropped'].values())})"
            )
    except click.ClickException:
        raise
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise click.ClickException(" ".join(str(exc).split())) from exc
    _write_results(summary, ran.schedule, json_path, model_path, schedule_path)


@sim.command("policies")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print {policies: [{name, family, description, live, aliases, params}], lease_policies} as JSON.",
)
def policies_command(as_json: bool) -> None:
    """List the registry's policies (rules, learned agents, replay) with their parameters."""
    from rlsched.core.policies import ALIASES, DEPRECATED_LEASE_POLICIES, LEASE_POLICIES, POLICIES
    from rlsched.core.policies.registry import load_policy_plugins

    def former(name: str) -> list[str]:
        return [old for old, new in DEPRECATED_LEASE_POLICIES.items() if new == name]

    load_policy_plugins()  # the policies other packages add (entry points)
    if as_json:
        listed = [
            {
                "name": e.name,
                "family": e.family,
                "description": e.description,
                "live": e.live,
                "aliases": [a for a, target in ALIASES.items() if target == e.name],
                "params": [{"name": p.name, "default": p.default, "help": p.help} for p in e.params],
            }
            for e in POLICIES.values()
        ]
        click.echo(
            json.dumps(
                {
                    "policies": listed,
                    "lease_policies": [
                        {"name": n, "description": d, "deprecated_aliases": former(n)}
                        for n, d in LEASE_POLICIES.items()
                    ],
                },
                indent=2,
                default=str,
            )
        )
        return
    for e in POLICIES.values():
        aliases = [a for a, target in ALIASES.items() if target == e.name]
        click.echo(
            f"{e.name:<28} {e.family:<8} {e.description}"
            + (f" (alias: {', '.join(aliases)})" if aliases else "")
            + ("" if e.live else " [simulator only]")
        )
        for p in e.params:
            click.echo(f"{'':<30}{p.name}={p.default!s:<10} {p.help}")
    click.echo("")
    click.echo("leasing policies (FH):")
    for name, description in LEASE_POLICIES.items():
        old = former(name)
        click.echo(f"{name:<28} lease    {description}" + (f" (deprecated alias: {', '.join(old)})" if old else ""))


@sim.command("experiment")
@click.argument("name")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for results.json, report.md and the figures (required but for 'list').",
)
@click.option("--quick", is_flag=True, help="A small version for smoke tests.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option(
    "--n-seeds",
    type=click.IntRange(min=1),
    default=None,
    help="Reporting seeds SEED .. SEED+N-1 (the experiment's default when omitted).",
)
@click.option("--json", "as_json", is_flag=True, help="With 'list': print [{name, help}] as JSON.")
@click.option(
    "--report-only",
    is_flag=True,
    help="Rewrite report.md from the results.json already in --out, with the current report code (no simulation).",
)
def experiment_command(
    name: str, out_dir: Path | None, quick: bool, seed: int, n_seeds: int | None, as_json: bool, report_only: bool
) -> None:
    """Regenerate a paper's tables and figures (see `rlsched sim experiment list`); prints results as JSON."""
    from rlsched.sim.experiments import registry
    from rlsched.sim.experiments.harness import ExperimentOptions

    experiments = registry()
    if name == "list":
        if as_json:
            click.echo(
                json.dumps(
                    [
                        {"name": exp.name, "help": exp.help}
                        for exp in sorted(experiments.values(), key=lambda e: e.name)
                    ],
                    indent=2,
                )
            )
            return
        for exp in sorted(experiments.values(), key=lambda e: e.name):
            click.echo(f"{exp.name:<18} {exp.help}")
        return
    if name not in experiments:
        raise click.ClickException(f"unknown experiment {name!r}; known: {', '.join(sorted(experiments)) or 'none'}")
    if out_dir is None:
        raise click.UsageError("--out DIR is required")
    if out_dir.exists() and not out_dir.is_dir():
        raise click.BadParameter(f"{out_dir} exists and is not a directory", param_hint="--out")
    if report_only:
        try:
            written = experiments[name].rerender(out_dir)
        except ValueError as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(f"wrote {written}")
        return
    options = ExperimentOptions(out_dir, quick=quick, seed=seed, n_seeds=n_seeds)
    try:
        experiments[name].kwargs(options)
    except ValueError as err:
        raise click.UsageError(str(err)) from err
    try:
        result = experiments[name].run_with(options)
    except (FileNotFoundError, ValueError, OSError) as exc:  # a missing trace names `rlsched trace fetch`
        raise click.ClickException(f"experiment {name}: {' '.join(str(exc).split())}") from exc
    click.echo(json.dumps(result, indent=2, default=str))


def _add_sweep() -> None:
    from rlsched.cli.sweep import sweep

    sim.add_command(sweep)


_add_sweep()
