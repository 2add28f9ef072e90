"""``rlsched train``: train a learned policy (or search the ``scored`` policy's weights) on a trace and save the
model the daemon loads."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click
import numpy as np
from click.core import ParameterSource

from rlsched.cli._common import Progress, check_output_file, load_workload, progress_bar
from rlsched.cli._options import deployment_options
from rlsched.sim.search import SearchConfig
from rlsched.workflow.train_scored import SCORED_RUNTIME, SCORED_RUNTIMES

if TYPE_CHECKING:
    from rlsched.core.objective import Objective
    from rlsched.sim.workload import Workload
    from rlsched.workflow.site import Site
    from rlsched.workflow.split import SiteChoices, TimeSplit
    from rlsched.workflow.train import DaskSlurm, TrainResult, TrainTask
    from rlsched.workflow.verdict import RulePrior, Verdict

#: What ``--window I/K`` (the former way to hold data out) became.
WINDOW_RETIRED = (
    "--window is replaced by --split TRAIN/VALIDATION/TEST (default 50/25/25): train learns on the train "
    "window, selects and judges on the validation window, and evaluate reports the test window "
    "(docs/workflow.md)"
)


def seed_list(seed: int, seeds: int) -> list[int]:
    return list(range(seed, seed + seeds))


#: Seconds between two estimates of the time left printed on stderr when it is not a terminal (a log).
ESTIMATE_EVERY_S = 60.0
#: Traces from this many jobs get a note before training that the time per job grows as the policy learns.
LONG_TRAINING_JOBS = 20_000
#: The search's defaults, for the --search-* options' help.
SEARCH_DEFAULTS = SearchConfig()


class TimeLeft:
    """The time a training run has left, from the (jobs done, seconds) it has reported so far.

    Every re-fit of a learned policy passes over its replay memory, so the time per job grows with the
    jobs done until the memory's bound ``M``, then stays: ``T(n) = a·n + b·G(n)`` with ``G(n) = n²/2``
    up to ``M`` and ``M²/2 + M·(n − M)`` beyond (fqi-esn on LPC-EGEE: 4,000 jobs 42 s, 8,000 jobs
    122 s).  A job-count bar's linear ETA is then far too short (when the time per job grows in proportion
    to the jobs done, 11× too short a tenth of the way in).  The fit
    uses differences from the first report, so a run resumed from a checkpoint is estimated as well.
    With two reports ``a`` and ``b`` cannot be told apart and all growth is assumed: an upper bound.
    """

    def __init__(self, total: int, memory: int | None) -> None:
        self.total = total
        self.memory = memory
        self.points: list[tuple[int, float]] = []

    def growth(self, n: float) -> float:
        m = self.memory
        return n * n / 2 if m is None or n <= m else m * m / 2 + m * (n - m)

    def add(self, done: int, seconds: float) -> None:
        if not self.points or done > self.points[-1][0]:
            self.points.append((done, seconds))

    def left(self) -> tuple[float, bool] | None:
        """(seconds left, True when it is an upper bound), or None before two reports."""
        if len(self.points) < 2:
            return None
        (n0, t0), (n, _) = self.points[0], self.points[-1]
        dn = np.array([p[0] - n0 for p in self.points[1:]], dtype=np.float64)
        dg = np.array([self.growth(p[0]) - self.growth(n0) for p in self.points[1:]])
        dt = np.array([p[1] - t0 for p in self.points[1:]])
        if len(dt) == 1:
            a, b, bound = 0.0, float(dt[0] / dg[0]) if dg[0] > 0 else 0.0, True
        else:
            a, b = (float(x) for x in np.linalg.lstsq(np.column_stack([dn, dg]), dt, rcond=None)[0])
            bound = False
            if b < 0:  # no growth seen: linear
                a, b = float(dt @ dn / (dn @ dn)), 0.0
            elif a < 0:  # all growth
                a, b = 0.0, float(dt @ dg / (dg @ dg))
        return max(a * (self.total - n) + b * (self.growth(self.total) - self.growth(n)), 0.0), bound

    def text(self) -> str | None:
        found = self.left()
        if found is None:
            return None
        seconds, bound = found
        return f"{'up to' if bound else 'about'} {duration(seconds)} left"


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


#: The clock of the estimates (read at each call: a test's fake clock stands in for it).
clock: Callable[[], float] = time.monotonic


def estimating(
    progress: Progress | None, total: int, label: str, memory: int | None, quiet: bool
) -> Callable[[int], None] | None:
    """``progress`` (a terminal's bar, or None) that also estimates the time left (:class:`TimeLeft`): in the
    bar's label on a terminal, else as a line on stderr at most every :data:`ESTIMATE_EVERY_S` (a log)."""
    if quiet:
        return progress
    estimate = TimeLeft(total, memory)
    started = clock()
    printed = started

    def update(done: int) -> None:
        nonlocal printed
        now = clock()
        estimate.add(done, now - started)
        left = estimate.text() if done < total else None
        if progress is not None:
            progress(done, None, f"{label} ({left})" if left else label)
        elif left and now - printed >= ESTIMATE_EVERY_S:
            printed = now
            click.echo(f"{label}: {done:,} of {total:,} jobs in {duration(now - started)}; {left}", err=True)

    return update


@click.command("train")
@click.option(
    "--workload",
    "workload_spec",
    required=True,
    help="The trace: an SWF path, a trace name (docs/traces.md) or 'lal' (the synthetic LAL-like one).",
)
@click.option(
    "--policy",
    required=True,
    metavar="NAME[:k=v,...]",
    help="A learned registry policy with parameters (see `rlsched sim policies`), or 'scored': its weights "
    "found by the direct policy search (--search-* options).",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The model file (.npz): the seed and pass that score best on validation, with its verdict.",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="A daemon config: the jobs are classed by its class rule and mapped to its VO list, and the "
    "model records both (the daemon refuses a model that does not match its config).",
)
@click.option(
    "--split",
    "split_text",
    default="50/25/25",
    show_default=True,
    metavar="TRAIN/VALIDATION/TEST",
    help="Percentages of the jobs, in submit order: learn on the first, select the model and judge it "
    "against every rule on the second; the third is left for `rlsched evaluate` (same --split).",
)
@click.option(
    "--epochs",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Passes over the train window, the agent continuing; the best pass on validation is kept (learned policies).",
)
@deployment_options("The mode to train and judge in", "What selects the model and judges it")
@click.option(
    "--pretrain-rule",
    "pretrain_rule",
    default=None,
    metavar="best|RULE[:k=v;...]",
    help="A learned policy: the rule the first pretrain_decisions decisions follow and record (its pretrain_rule, "
    "default edf): a rule spec, or 'best': every rule of the verdict scored on the train window (never "
    "validation or test) in the mode, by the objective, and the best one taken.",
)
@click.option(
    "--search-runtime",
    type=click.Choice(SCORED_RUNTIMES),
    default=None,
    help=f"--policy scored: the runtime behind its log_pred feature (requested: none) [default: {SCORED_RUNTIME}].",
)
@click.option(
    "--search-population",
    type=click.IntRange(min=2),
    default=None,
    help=f"--policy scored: weight vectors tried per generation [default: {SEARCH_DEFAULTS.population}].",
)
@click.option(
    "--search-generations",
    type=click.IntRange(min=1),
    default=None,
    help=f"--policy scored: generations of the search [default: {SEARCH_DEFAULTS.generations}].",
)
@click.option("--window", "window", default=None, hidden=True)
@click.option(
    "--rule-windows",
    "rule_windows_count",
    type=click.IntRange(min=1, max=3),
    default=1,
    show_default=True,
    help="Windows the rule deployed instead of a losing model is chosen on: 1, validation; 3, the train "
    "window's halves too (docs/workflow.md).",
)
@click.option(
    "--rule-prior",
    "rule_prior_path",
    default=None,
    metavar="public|RESULTS",
    help="The rule deployed instead of a losing model is the one best over other traces' validation windows, the "
    "trained trace's own left out: 'public', the nine public logs shipped with rlsched (bounded slowdown), or a "
    "learning run's results.json (docs/workflow.md).",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="The first seed.")
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Train this many seeds (SEED … SEED+N-1) and keep the best on validation.",
)
@click.option(
    "--checkpoint-every",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="A learned policy: train on consecutive chunks of N jobs, checkpointing after each (MODEL.ckpt.npz); a rerun "
    "with the same arguments resumes after the last finished chunk. 0: one run, no checkpoint.",
)
@click.option(
    "--fresh", is_flag=True, help="Start afresh when the checkpoint was written for other arguments (default: refuse)."
)
@click.option(
    "--cores", type=click.IntRange(min=1), default=None, help="Pool size (default: the trace's machine size)."
)
@click.option(
    "--workers",
    "--jobs",
    "workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Train the seeds, and replay the verdict's rules, on a local pool of K processes.",
)
@click.option(
    "--dask",
    "dask_address",
    default=None,
    metavar="ADDRESS",
    help="Train the seeds on an existing Dask scheduler (tcp://HOST:PORT).",
)
@click.option(
    "--dask-slurm",
    is_flag=True,
    help="Train the seeds on Dask workers that dask-jobqueue submits to this site's Slurm.",
)
@click.option(
    "--slurm-cores",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="--dask-slurm: cores per worker job.",
)
@click.option("--slurm-memory", default="2GB", show_default=True, help="--dask-slurm: memory per worker job.")
@click.option("--slurm-walltime", default="01:00:00", show_default=True, help="--dask-slurm: time limit per job.")
@click.option(
    "--slurm-partition", "--slurm-queue", "slurm_partition", default=None, help="--dask-slurm: the partition."
)
@click.option("--slurm-account", default=None, help="--dask-slurm: the account.")
@click.option(
    "--slurm-jobs",
    type=click.IntRange(min=1),
    default=None,
    help="--dask-slurm: worker jobs (default: one per seed, at most --workers when given).",
)
@click.option(
    "--dask-host", default=None, help="--dask-slurm: the address the scheduler and workers listen on (e.g. 127.0.0.1)."
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def train(
    workload_spec: str,
    policy: str,
    out: Path,
    config_path: Path | None,
    split_text: str,
    epochs: int,
    mode: str | None,
    boost_base: str | None,
    objective: str | None,
    class_weights: tuple[str, ...],
    pretrain_rule: str | None,
    search_runtime: str | None,
    search_population: int | None,
    search_generations: int | None,
    window: str | None,
    rule_windows_count: int,
    rule_prior_path: str | None,
    seed: int,
    seeds: int,
    checkpoint_every: int,
    fresh: bool,
    cores: int | None,
    workers: int,
    dask_address: str | None,
    dask_slurm: bool,
    slurm_cores: int,
    slurm_memory: str,
    slurm_walltime: str,
    slurm_partition: str | None,
    slurm_account: str | None,
    slurm_jobs: int | None,
    dask_host: str | None,
    quiet: bool,
) -> None:
    """Train a learned policy on a trace (or search the scored policy's weights), select it on validation, judge
    it against every rule and save it with its verdict (`[agent] model` in the daemon config)."""
    from rlsched.core.objective import parse_class_weights
    from rlsched.workflow.site import load_site
    from rlsched.workflow.split import TimeSplit, site_choices
    from rlsched.workflow.train import DaskSlurm

    if window is not None:
        raise click.UsageError(WINDOW_RETIRED)
    check_output_file(out, "--out")  # before hours of training, not after
    try:
        split = TimeSplit.parse(split_text)
        choices = site_choices(config_path, mode, objective, parse_class_weights(class_weights), boost_base)
        site = load_site(config_path) if config_path is not None else None
        search = _search(policy, search_runtime, search_population, search_generations)
        epochs = 1 if search is not None else epochs  # the search makes no passes (its own options refused)
        whole = load_workload(workload_spec, max_procs=cores)
        prior = _rule_prior(rule_prior_path, rule_windows_count, whole.name, choices.objective)
        workload, tasks = _plan(
            whole,
            split,
            policy,
            out,
            choices,
            pretrain_rule,
            quiet,
            seeds=seed_list(seed, seeds),
            site=site,
            checkpoint_every=checkpoint_every,
            cores=cores,
            fresh=fresh,
            epochs=epochs,
            search=search,
        )
        jobs = slurm_jobs or min(len(tasks), workers if workers > 1 else len(tasks))
        slurm = DaskSlurm(slurm_cores, slurm_memory, slurm_walltime, slurm_partition, slurm_account, jobs, dask_host)
        results = _run(tasks, workload, epochs, workers, dask_address, slurm if dask_slurm else None, quiet)
        verdict = _judge(
            results, tasks, out, whole, split, workload.name, choices, (rule_windows_count, prior), quiet, workers
        )
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise click.ClickException(" ".join(str(exc).split())) from exc
    _echo_split(site, split, len(whole), choices)
    _echo_results(tasks, results, verdict, choices.objective.name, out)


def _plan(
    whole: Workload,
    split: TimeSplit,
    policy: str,
    out: Path,
    choices: SiteChoices,
    pretrain_rule: str | None,
    quiet: bool,
    *,
    seeds: list[int],
    site: Site | None,
    checkpoint_every: int,
    cores: int | None,
    fresh: bool,
    epochs: int,
    search: SearchConfig | None = None,
) -> tuple[Workload, list[TrainTask]]:
    """The train window and a task per seed (with --pretrain-rule best, a bar over the rules scored on it)."""
    from rlsched.sim.policies import workload_vos
    from rlsched.workflow.train import train_plan
    from rlsched.workflow.verdict import candidate_rules

    workload = split.window(whole, "train")
    n_rules = len(candidate_rules(workload_vos(workload), choices.deployment)[0]) if pretrain_rule == "best" else 0
    with progress_bar(n_rules, f"{workload.name} rules on the train window", quiet or not n_rules) as bar:
        tasks = train_plan(
            workload,
            policy,
            out,
            seeds=seeds,
            site=site,
            checkpoint_every=checkpoint_every,
            cores=cores,
            fresh=fresh,
            validation=split.window(whole, "validation"),
            epochs=epochs,
            deployment=choices.deployment,
            objective=choices.objective,
            pretrain_rule=pretrain_rule,
            pretrain_progress=bar,
            search=search,
        )
    return workload, tasks


def _run(
    tasks: Sequence[TrainTask],
    workload: Workload,
    epochs: int,
    workers: int,
    dask_address: str | None,
    slurm: DaskSlurm | None,
    quiet: bool,
) -> list[TrainResult]:
    """Train the tasks with a progress bar (per job and with the time left for one task here, else per task)."""
    from rlsched.workflow.train import run_tasks

    single = len(tasks) == 1 and dask_address is None and slurm is None
    total = len(workload) * epochs if single else len(tasks)
    label = f"{workload.name} {tasks[0].spec.name}" + ("" if single else f" ({len(tasks)} seeds)")
    memory = int(tasks[0].spec.params.get("memory", 0)) or None
    # A search's generations take alike: the bar's linear ETA holds, not the re-fits' estimate.
    searched = tasks[0].search is not None
    if single and total >= LONG_TRAINING_JOBS and not quiet and not searched:
        kept = min(memory or total, total)
        click.echo(
            f"{label}: {total:,} jobs; each re-fit passes over the replay memory (up to {kept:,} "
            "transitions), so the time per job grows as it learns; an estimate of the time left follows "
            "once a few thousand jobs are done (--checkpoint-every N lets a long run resume)",
            err=True,
        )
    with progress_bar(total, label, quiet, show_eta=not single or searched) as bar:
        progress = estimating(bar, total, label, memory, quiet) if single and not searched else bar
        return run_tasks(tasks, workers=workers, dask_address=dask_address, dask_slurm=slurm, progress=progress)


def _judge(
    results: Sequence[TrainResult],
    tasks: Sequence[TrainTask],
    out: Path,
    whole: Workload,
    split: TimeSplit,
    name: str,
    choices: SiteChoices,
    deploy_by: tuple[int, RulePrior | None],
    quiet: bool,
    workers: int,
) -> Verdict:
    """Judge the selected model against every rule (with a progress bar; the rules on ``--workers`` local
    processes) and write it with its verdict; ``deploy_by``: what chooses the rule deployed instead of a losing
    model (``--rule-windows``, ``--rule-prior``)."""
    from rlsched.sim.policies import workload_vos
    from rlsched.workflow.train import judge_and_write, rule_windows
    from rlsched.workflow.verdict import candidate_rules

    bounds = split.windows(whole)
    about = {"workload": whole.name, "jobs": len(whole), "split": split.to_dict(), "windows": bounds}
    validation = tasks[0].validation
    assert validation is not None
    rules, _ = candidate_rules(workload_vos(validation), choices.deployment)
    rule_windows_count, prior = deploy_by
    windows = len(rule_windows(tasks[0], rule_windows_count))
    where = "validation" if windows == 1 else f"{windows} windows"
    with progress_bar(len(rules) * windows, f"{name} rules on {where}", quiet) as progress:
        return judge_and_write(
            results,
            tasks,
            out,
            about=about,
            progress=progress,
            windows=rule_windows_count,
            workers=workers,
            prior=prior,
        )


def _rule_prior(path: str | None, rule_windows_count: int, trace: str, objective: Objective) -> RulePrior | None:
    """``--rule-prior``'s windows without the trained trace's own, checked against the objective before any
    training (a ValueError naming the file)."""
    if path is None:
        return None
    if rule_windows_count > 1:
        raise click.UsageError("--rule-prior and --rule-windows both choose the rule to deploy: give one")
    from rlsched.workflow.verdict import PUBLIC_PRIOR, RulePrior

    prior = (RulePrior.public() if path == PUBLIC_PRIOR else RulePrior.from_results(Path(path))).without(trace)
    prior.check(objective)
    return prior


def _echo_split(site: Site | None, split: TimeSplit, jobs: int, choices: SiteChoices) -> None:
    """What train prints before the seeds: the site's class rule and VOs (with --config), then the split line."""
    if site is not None:
        click.echo(f"classes by the rule of {site.source}; VOs ({', '.join(site.vos)})")
    click.echo(
        f"split {split.text()} of {jobs} jobs: "
        + ", ".join(f"{name} jobs {lo}–{hi - 1}" for name, (lo, hi) in split.bounds(jobs).items() if hi > lo)
        + f"; mode {choices.deployment.label()}; objective {choices.objective.label()}"
    )


def _echo_results(
    tasks: Sequence[TrainTask], results: Sequence[TrainResult], verdict: Verdict, objective: str, out: Path
) -> None:
    """What train prints after the split line: the pretraining rule, a line per seed, the model, the verdict."""
    choice = tasks[0].pretrain_choice
    if choice is not None:
        click.echo(
            f"pretraining on {choice['rule']}: the best of {len(choice['scores'])} rules on the train window "
            f"({objective} {choice['score']:.4g}, {choice['seconds']:.1f} s)"
        )
    selected = verdict.extra["selected"]
    if tasks[0].search is not None:
        _echo_searches(results, selected["seed"], objective, out)
        _echo_verdict(verdict)
        return
    for r in results:
        for note in r.notes:
            click.echo(note)
        mean_w = f"{r.mean_w:.3f}" if r.mean_w is not None else "-"
        per_epoch = " ".join(f"{v:.4g}" for v in r.validation_scores)
        mark = "  <- selected" if r.seed == selected["seed"] else ""
        still = [str(p + 1) for p, pretraining in enumerate(r.pass_pretraining) if pretraining]
        pretraining = f"  still pretraining after pass {', '.join(still)}" if still else ""
        click.echo(
            f"seed {r.seed}: {r.label}  jobs {r.jobs} x {r.epochs} passes  chunks {r.chunks}  "
            f"decisions {r.decisions}{pretraining}  "
            f"training mean W {mean_w}  validation {objective} by pass [{per_epoch}], best "
            f"pass {r.best_epoch + 1}  {r.seconds:.1f} s{mark}"
        )
    click.echo(f"{out}: the model of seed {selected['seed']}, pass {selected['epoch'] + 1}")
    if selected.get("pretraining"):
        click.echo(
            f"that pass ended still following its pretraining rule {verdict.extra.get('pretrain_rule', 'edf')} "
            f"({selected['decisions']} decisions, fewer than pretrain_decisions; in boost mode a decision is a job "
            "started from the ranking): the model ranks as that rule, its Q-function never did"
        )
    _echo_verdict(verdict)


def _echo_verdict(verdict: Verdict) -> None:
    """The verdict line, then (with ``--rule-windows`` 2 or more) how far each window's best rule carried to the
    next: what the verdict's margin over the rules is worth on this site's history."""
    from rlsched.workflow.verdict import carryover_line, rank_carryover, verdict_windows

    click.echo(verdict.line())
    carried = carryover_line(rank_carryover(verdict.objective, verdict_windows(verdict.extra)))
    if carried:
        click.echo(carried)


def _echo_searches(results: Sequence[TrainResult], selected_seed: int, objective: str, out: Path) -> None:
    """A scored training's lines: per seed what the search chose (its note) and found, then the model."""
    for r in results:
        for note in r.notes:
            click.echo(note)
        mark = "  <- selected" if r.seed == selected_seed else ""
        click.echo(
            f"seed {r.seed}: found {r.label}  train jobs {r.jobs}  replays {r.decisions}  validation {objective} "
            f"{r.validation_scores[0]:.4g}  {r.seconds:.1f} s{mark}"
        )
    click.echo(f"{out}: the scored policy of seed {selected_seed}")


def _search(policy: str, runtime: str | None, population: int | None, generations: int | None) -> SearchConfig | None:
    """The search settings of a ``scored`` training (None for a learned policy); a one-line error for an option
    that means nothing to the policy's family (ValueError: an unknown policy, said by the caller)."""
    from rlsched.core.policies import entry, resolve
    from rlsched.workflow.train_scored import scored_search_config

    context = click.get_current_context()
    scored = entry(resolve(policy).name).family == "scored"
    given = {
        name: context.get_parameter_source(key) not in (None, ParameterSource.DEFAULT)
        for name, key in (
            ("--search-runtime", "search_runtime"),
            ("--search-population", "search_population"),
            ("--search-generations", "search_generations"),
            ("--epochs", "epochs"),
            ("--checkpoint-every", "checkpoint_every"),
            ("--pretrain-rule", "pretrain_rule"),
        )
    }
    wrong = [n for n, on in given.items() if on and n.startswith("--search-") != scored]
    if wrong:
        raise click.ClickException(
            f"{', '.join(wrong)}: for a learned policy, not --policy scored (a search: no passes, checkpoints "
            "or pretraining)"
            if scored
            else f"{', '.join(wrong)}: only for --policy scored, not {policy!r}"
        )
    if not scored:
        return None
    settings = {"population": population, "generations": generations}
    return scored_search_config(runtime or SCORED_RUNTIME, **{k: v for k, v in settings.items() if v is not None})
