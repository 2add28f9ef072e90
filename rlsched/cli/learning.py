"""``rlsched learning``: issue 23's results table (learned models against every rule, test window, boost mode)."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from rlsched.cli._common import load_workload

if TYPE_CHECKING:
    from rlsched.sim.workload import Workload

#: Where the committed table lives.
DEFAULT_OUT = Path("docs/results/learning")
#: rlsched.workflow.learning.LEARNED_RUNTIMES (not imported here: the CLI starts without the simulator).
LEARNED_RUNTIMES = ("estimated", "user-last2", "learned")
#: OUT's folder of finished rows, one file per trace: a stopped run started again resumes from them.
ROWS_DIR = "rows"


def _say(text: str) -> None:
    """A run's progress, on stderr (stdout names the files written)."""
    click.echo(text, err=True)


@click.command("learning")
@click.option(
    "--traces",
    "traces_text",
    default=None,
    metavar="NAME[,NAME...]",
    help="Traces (names under RLSCHED_TRACE_DIR, SWF paths or 'lal'); default: issue 23's nine.",
)
@click.option(
    "--seeds",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Seeds 0..N-1 for sarsa-esn and the scored search (mean and spread over them).",
)
@click.option(
    "--epochs",
    type=click.IntRange(min=1),
    default=None,
    help="sarsa-esn's passes over the train window (default 3; 1 with --quick).",
)
@click.option(
    "--max-jobs",
    type=click.IntRange(min=10),
    default=None,
    help="Only the first N jobs of each trace (default: all; 600 with --quick).",
)
@click.option(
    "--generations",
    type=click.IntRange(min=1),
    default=None,
    help="The scored search's generations (default: the search's; 1 with --quick).",
)
@click.option(
    "--population",
    type=click.IntRange(min=2),
    default=None,
    help="The scored search's population (default: the search's; 4 with --quick).",
)
@click.option(
    "--scored-runtime",
    type=click.Choice(["requested", "user-last2", "learned"]),
    default="learned",
    show_default=True,
    help="The scored search's runtime input beside the request (requested: none).",
)
@click.option(
    "--learned-runtime",
    type=click.Choice(LEARNED_RUNTIMES),
    default="learned",
    show_default=True,
    help="sarsa-esn's runtime input: each job's prediction (learned, its registry default; user-last2) or P-grid's "
    "class median (estimated).",
)
@click.option(
    "--job-names",
    is_flag=True,
    help="Let the policies read each job's program (the SWF executable id, field 14, as the daemon reads job "
    "names live): the learned predictor then keeps each user's runtimes per program.  Off: the tables' default.",
)
@click.option(
    "--objective",
    type=click.Choice(["bsld", "wait", "W"]),
    default="bsld",
    show_default=True,
    help="What every policy is ranked by (the scored search's fitness stays bounded slowdown).",
)
@click.option(
    "--class-weight",
    "class_weights",
    multiple=True,
    metavar="CLASS=W",
    help="Weigh a class's jobs W times in the objective (repeat; e.g. interactive=3).",
)
@click.option(
    "--rule-windows",
    type=click.IntRange(min=1, max=3),
    default=1,
    show_default=True,
    help="As train's: the windows the rule deployed instead of a losing model is chosen on.",
)
@click.option("--scale", type=float, default=None, help="'lal' only: the share of its jobs.")
@click.option("--quick", is_flag=True, help="A small setting (the first 600 jobs, one epoch, a tiny search).")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Processes for the seeds (sarsa-esn's, the scored search's) and the rules' replays; the table is the same.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_OUT,
    show_default=True,
    help="Directory for report.md, results.json and ratios.png.",
)
@click.option("--report-only", is_flag=True, help="Regenerate report.md and the figure from OUT/results.json.")
@click.option(
    "--other-code",
    is_flag=True,
    help="Resume from rows and pieces in OUT that another rlsched code computed (by default only this code's are "
    "read back); the report names the rows so made.",
)
def learning(
    traces_text: str | None,
    seeds: int,
    epochs: int | None,
    max_jobs: int | None,
    generations: int | None,
    population: int | None,
    scored_runtime: str,
    learned_runtime: str,
    job_names: bool,
    objective: str,
    class_weights: tuple[str, ...],
    rule_windows: int,
    scale: float | None,
    quick: bool,
    workers: int,
    out: Path,
    report_only: bool,
    other_code: bool,
) -> None:
    """Regenerate issue 23's table into OUT: every rule, sarsa-esn (train's epochs, selection and verdict), the
    scored search and the runtime predictors, per trace, on the test window in boost mode, bounded slowdown.

    A run stopped and started again resumes: the rows finished from OUT/rows/, the row it was in from the
    replays and trainings kept in OUT/pieces/ (keyed by their arguments, and read back only by the code that
    computed them: after a change to rlsched's core, sim or workflow they are computed again)."""
    from dataclasses import replace

    from rlsched.core.objective import Objective, parse_class_weights
    from rlsched.workflow.learning import TRACES, LearningSettings, quick_settings, run_learning, scored_features
    from rlsched.workflow.learning_report import write_outputs

    if report_only:
        _report_only(out)
        return
    seed_list = tuple(range(seeds))
    settings = quick_settings(seed_list) if quick else LearningSettings(seeds=seed_list)
    search = replace(
        settings.search,
        runtime_model=scored_runtime,
        features=scored_features(scored_runtime),
        generations=generations if generations is not None else settings.search.generations,
        population=population if population is not None else settings.search.population,
    )
    try:
        chosen = Objective(objective, parse_class_weights(class_weights))
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    settings = replace(
        settings,
        search=search,
        workers=workers,
        objective=chosen,
        rule_windows=rule_windows,
        learned_runtime=learned_runtime,
        job_names=job_names,
        epochs=epochs if epochs is not None else settings.epochs,
        max_jobs=max_jobs if max_jobs is not None else settings.max_jobs,
    )
    traces = [t for t in traces_text.split(",") if t] if traces_text else list(TRACES)

    def loader(name: str, max_procs: int | None) -> Workload:
        return load_workload(name, max_procs=max_procs, scale=scale if name == "lal" else None)

    t0 = time.perf_counter()
    try:
        data = run_learning(loader, traces, settings, say=_say, rows_dir=out / ROWS_DIR, other_code=other_code)
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(" ".join(str(exc).split())) from exc
    argv = list(sys.argv[1:]) if sys.argv and "learning" in sys.argv else ["learning"]
    data["command"] = "rlsched " + shlex.join(argv[argv.index("learning") :])
    data["seconds"] = round(time.perf_counter() - t0, 1)
    for path in write_outputs(data, out):
        click.echo(f"wrote {path}")


def _report_only(out: Path) -> None:
    """``--report-only``: report.md and the figure from OUT/results.json alone."""
    from rlsched.workflow.learning_report import read_results, write_outputs

    try:
        data = read_results(out)
    except (OSError, ValueError) as exc:
        raise click.ClickException(f"{out}/results.json: {' '.join(str(exc).split())}") from exc
    for path in write_outputs(data, out, results=False):
        click.echo(f"wrote {path}")
