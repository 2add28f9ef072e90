"""``rlsched evaluate``: replay a trace under several policies; tables per class and VO, figures, report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import click
from click.core import ParameterSource

from rlsched.cli._common import load_workload, progress_bar
from rlsched.cli._options import deployment_options

if TYPE_CHECKING:
    from rlsched.sim.workload import Workload
    from rlsched.workflow.evaluate import Contender, Evaluation
    from rlsched.workflow.leasing import LeasingEvaluation
    from rlsched.workflow.site import Site

#: The options that only mean something with --leasing (their parameter names).
LEASING_OPTIONS = (
    "cloud_nodes",
    "thetas",
    "no_qlearning",
    "random_runs",
    "no_daily",
    "daily_prior_from",
    "daily_transfer_days",
)


class Replicates(NamedTuple):
    """What each policy is replayed on: ``--windows``, ``--seeds`` from ``--seed``, ``--jitter`` with
    ``--jitter-s``."""

    windows: int
    seeds: int
    seed: int
    jitter: int
    jitter_s: float


@click.command("evaluate")
@click.option(
    "--workload", "workload_spec", required=True, help="The trace: an SWF path, a trace name (docs/traces.md) or 'lal'."
)
@click.option(
    "--policy",
    "policies",
    multiple=True,
    metavar="NAME[:k=v,...] | PATH.npz | recorded",
    help="A policy to replay (repeat): a registry name with parameters, a saved model, or 'recorded' "
    "(the trace's own start times).",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for report.md, results.json and the figures.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="A daemon config: jobs classed by its class rule, VOs and target shares from it.",
)
@click.option(
    "--split",
    "split_text",
    default=None,
    metavar="TRAIN/VALIDATION/TEST",
    help="The split of `rlsched train`; only the test window is replayed (default: the split the models "
    "record, else 50/25/25).",
)
@click.option(
    "--windows",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Cut the test window into K consecutive windows (the spread is over them).",
)
@deployment_options("The mode every policy runs in", "What ranks the policies first")
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Seeds for the learned policies run by name (they learn online).",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="The first seed.")
@click.option(
    "--jitter",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Also replay each window N times with its submits jittered (seeds 1..N), under every simulated policy: "
    "a spread for deterministic policies too; N+1 times the replays ('recorded' is not jittered).",
)
@click.option(
    "--jitter-s",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="--jitter: every submit moved by up to this many seconds, earlier or later.",
)
@click.option(
    "--cores", type=click.IntRange(min=1), default=None, help="Pool size (default: the trace's machine size)."
)
@click.option("--no-figures", is_flag=True, help="Skip the PNG figures.")
@click.option("--json", "as_json", is_flag=True, help="Print results.json instead of the table.")
@click.option(
    "--leasing",
    is_flag=True,
    help="Also run FH's leasing policies on the trace (constant V sweep, random V, FH Q-learning, the daily "
    "learned cap, the state-aware rule held for a day, and the per-pass state-aware rule) and print the "
    "exchange rate κ for the daemon's [leasing] table.",
)
@click.option("--cloud-nodes", type=click.IntRange(min=1), default=None, help="--leasing: the cloud nodes there are.")
@click.option(
    "--thetas", default="0.5,1,1.5,2,3,4", show_default=True, help="--leasing: the state-aware thresholds θ to run."
)
@click.option("--no-qlearning", is_flag=True, help="--leasing: skip FH's Q-learning (every V simulated each day).")
@click.option(
    "--random-runs",
    type=click.IntRange(min=0),
    default=100,
    show_default=True,
    help="--leasing: random-V runs (FH: 1000); 0 skips them.",
)
@click.option("--no-daily", is_flag=True, help="--leasing: skip the daily learned cap.")
@click.option(
    "--daily-prior-from",
    default="",
    metavar="SETUPS",
    help="--leasing: start the daily learned cap from a prior built on these FH setups' daily clones "
    "(comma-separated, e.g. kth,ctc,sdsc; their traces must be in RLSCHED_TRACE_DIR).",
)
@click.option(
    "--daily-transfer-days",
    type=click.FloatRange(min=0, min_open=True),
    default=30.0,
    show_default=True,
    help="--leasing with --daily-prior-from: how many days' worth of the prior the estimates start from.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def evaluate(
    workload_spec: str,
    policies: tuple[str, ...],
    out: Path,
    config_path: Path | None,
    split_text: str | None,
    windows: int,
    mode: str | None,
    boost_base: str | None,
    objective: str | None,
    class_weights: tuple[str, ...],
    seeds: int,
    seed: int,
    jitter: int,
    jitter_s: float,
    cores: int | None,
    no_figures: bool,
    as_json: bool,
    leasing: bool,
    cloud_nodes: int | None,
    thetas: str,
    no_qlearning: bool,
    random_runs: int,
    no_daily: bool,
    daily_prior_from: str,
    daily_transfer_days: float,
    quiet: bool,
) -> None:
    """Replay a trace under each policy and judge them on the same jobs (docs/workflow.md)."""
    from rlsched.workflow.evaluate import to_json
    from rlsched.workflow.site import load_site

    theta_grid = _check_usage(policies, leasing, cloud_nodes, thetas, jitter)
    data: dict[str, object] = {}
    evaluation: tuple[Evaluation, dict[str, Path]] | None = None  # with --policy: the evaluation, the files
    lease: LeasingEvaluation | None = None  # with --leasing
    try:
        site = load_site(config_path) if config_path is not None else None
        contenders = _contenders(policies)
        workload = load_workload(workload_spec, max_procs=cores)
        if contenders:
            evaluation = _evaluate_policies(
                workload,
                contenders,
                site,
                out,
                config_path=config_path,
                mode=mode,
                objective=objective,
                class_weights=class_weights,
                boost_base=boost_base,
                split_text=split_text,
                replicates=Replicates(windows, seeds, seed, jitter, jitter_s),
                cores=cores,
                figures=not no_figures,
                quiet=quiet,
            )
            data = to_json(evaluation[0])
        if leasing:
            assert cloud_nodes is not None
            from rlsched.workflow.leasing import write_leasing

            lease = _evaluate_leasing(
                workload,
                cloud_nodes,
                cores=cores,
                thetas=theta_grid,
                qlearning=not no_qlearning,
                random_runs=random_runs,
                seed=seed,
                daily=not no_daily,
                daily_prior_from=daily_prior_from,
                daily_transfer_days=daily_transfer_days,
                quiet=quiet,
            )
            data["leasing"] = write_leasing(lease, out, figures=not no_figures)
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise click.ClickException(" ".join(str(exc).split())) from exc
    _echo(data, as_json, evaluation, lease)


def _echo(
    data: dict[str, object],
    as_json: bool,
    evaluation: tuple[Evaluation, dict[str, Path]] | None,
    lease: LeasingEvaluation | None,
) -> None:
    """Print results.json (--json), else the policies' table and verdict, then the leasing table."""
    from rlsched.workflow.evaluate import text_table, verdict_lines, window_line

    if as_json:
        click.echo(json.dumps(data, indent=2, default=float))
        return
    if evaluation is not None:
        ev, written = evaluation
        click.echo(f"{ev.workload}: {ev.jobs} jobs, {ev.cores} cores, classes by {ev.class_rule}")
        click.echo(window_line(ev))
        click.echo(text_table(ev))
        click.echo("")
        click.echo("\n".join(verdict_lines(ev)))
        click.echo(f"\nreport: {written['report']}")
    if lease is not None:
        from rlsched.workflow.leasing import leasing_table

        click.echo("")
        click.echo(leasing_table(lease))


def _check_usage(
    policies: tuple[str, ...], leasing: bool, cloud_nodes: int | None, thetas: str, jitter: int
) -> tuple[float, ...]:
    """Refuse options that do not go together (one line each); the θ grid of ``--thetas``."""
    _check_jitter(jitter)
    if not policies and not leasing:
        raise click.UsageError("give --policy at least once, or --leasing")
    if not leasing:
        # A leasing option alone would be silently ignored: the user meant --leasing, or a typo.
        context = click.get_current_context()
        given = [
            f"--{name.replace('_', '-')}"
            for name in LEASING_OPTIONS
            if context.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)
        ]
        if given:
            raise click.UsageError(
                f"{', '.join(given)} {'goes' if len(given) == 1 else 'go'} with --leasing "
                "(add --leasing to run the leasing policies)"
            )
    if leasing and cloud_nodes is None:
        raise click.UsageError("--leasing needs --cloud-nodes N")
    try:
        return tuple(float(t) for t in thetas.split(",") if t.strip())
    except ValueError:
        raise click.UsageError(f"--thetas: expected numbers separated by commas, got {thetas!r}") from None


def _check_jitter(jitter: int) -> None:
    """Refuse ``--jitter-s`` without ``--jitter N`` (N >= 1): it would be silently ignored."""
    source = click.get_current_context().get_parameter_source("jitter_s")
    if jitter == 0 and source not in (None, ParameterSource.DEFAULT):
        raise click.UsageError("--jitter-s goes with --jitter N (N >= 1 jittered replays of each window)")


def _contenders(policies: tuple[str, ...]) -> list[Contender]:
    from rlsched.workflow.evaluate import parse_contender

    return [parse_contender(p) for p in policies]


def _evaluate_policies(
    workload: Workload,
    contenders: list[Contender],
    site: Site | None,
    out: Path,
    *,
    config_path: Path | None,
    mode: str | None,
    objective: str | None,
    class_weights: tuple[str, ...],
    boost_base: str | None,
    split_text: str | None,
    replicates: Replicates,
    cores: int | None,
    figures: bool,
    quiet: bool,
) -> tuple[Evaluation, dict[str, Path]]:
    """Replay the test window under every contender; the evaluation and the files written."""
    from rlsched.core.objective import parse_class_weights
    from rlsched.workflow.evaluate import evaluate as run_evaluation
    from rlsched.workflow.evaluate import recorded_split, replays_per_window, write_outputs
    from rlsched.workflow.split import TimeSplit, site_choices

    choices = site_choices(config_path, mode, objective, parse_class_weights(class_weights), boost_base)
    split = TimeSplit.parse(split_text) if split_text is not None else recorded_split(contenders)
    # In jobs replayed (the evaluation sets the exact total: the test window, and `recorded` keeps the
    # jobs with a start); each window's jittered replays count like the window (the bar's ETA with them).
    lo, hi = split.bounds(len(workload))["test"]
    total = (hi - lo) * sum(replays_per_window(c, replicates.seeds, replicates.jitter) for c in contenders)
    with progress_bar(total, f"{workload.name} evaluate (jobs)", quiet) as progress:
        ev = run_evaluation(
            workload,
            contenders,
            site=site,
            windows=replicates.windows,
            seeds=replicates.seeds,
            seed=replicates.seed,
            cores=cores,
            progress=progress,
            split=split,
            deployment=choices.deployment,
            objective=choices.objective,
            jitter=replicates.jitter,
            jitter_s=replicates.jitter_s,
        )
    return ev, write_outputs(ev, out, figures=figures)


def _evaluate_leasing(
    workload: Workload,
    cloud_nodes: int,
    *,
    cores: int | None,
    thetas: tuple[float, ...],
    qlearning: bool,
    random_runs: int,
    seed: int,
    daily: bool,
    daily_prior_from: str,
    daily_transfer_days: float,
    quiet: bool,
) -> LeasingEvaluation:
    """FH's leasing policies on the trace (``--leasing``)."""
    from rlsched.workflow.leasing import daily_prior_from_setups, evaluate_leasing

    # A bar over the leasing steps (policies and settings), naming the one running: minutes on a real trace.
    with progress_bar(1, f"{workload.name} leasing", quiet) as lease_progress:
        if daily_prior_from.strip() and daily:
            if lease_progress is not None:
                lease_progress(0, None, f"{workload.name} leasing: the daily prior from {daily_prior_from}")
            daily_params, prior = daily_prior_from_setups(daily_prior_from, daily_transfer_days)
        else:
            daily_params, prior = None, None
        return evaluate_leasing(
            workload,
            cloud_nodes,
            cores=cores,
            thetas=thetas,
            qlearning=qlearning,
            random_runs=random_runs,
            seed=seed,
            daily=daily,
            daily_params=daily_params,
            daily_prior=prior,
            progress=lease_progress,
        )
