"""``rlsched train --policy scored``: the direct policy search as the training of the ``scored`` policy.

A ``scored`` policy is a :class:`rlsched.core.scoring.ScoringFunction`; training it is finding its weights by the
cross-entropy search of :func:`rlsched.sim.search.search_scoring` (fitness on the train window, selection among
its candidates on the validation window).  :func:`train_scored` runs one search per task (the task's seed is the
search's) and returns a :class:`rlsched.workflow.train_task.TrainResult` like a learned policy's, so
:func:`rlsched.workflow.train.run_tasks` (here, a process pool, Dask), :func:`rlsched.workflow.train.select` and
the verdict of :func:`rlsched.workflow.train.judge_and_write` treat both alike.

The search is trained for the task's objective: its fitness, its start among the family's rules and its pick
among its candidates are all the objective's score (:attr:`rlsched.sim.search.SearchConfig.objective`).  Two
selections, two replays: the search picks its candidate by its own replays of the validation window (EASY
backfilling, as recorded and jittered); the result's validation score is the found policy replayed once on the
validation window **in the task's deployment mode** (:meth:`rlsched.workflow.train_task.TrainTask.validation_score`,
as for a learned model), so the seeds and the rules are compared like for like.

The search settings (:func:`scored_search_config`) live here, and :mod:`rlsched.workflow.learning` (the
experiment that also runs the search) imports them.
"""

from __future__ import annotations

import io
import tempfile
import time
import zipfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rlsched.core.policies import PolicySpec
from rlsched.core.scoring import LOG_FAMILY, PREDICTED_FAMILY
from rlsched.sim.search import SearchConfig, SearchResult, search_scoring
from rlsched.workflow.train_task import TrainError, TrainResult, TrainTask

#: The scored search's runtime input: the learned prediction beside the request (``log_pred``), the user
#: history the rules on ``user-last2`` and ``learned`` have too; ``requested``: the request alone.
SCORED_RUNTIME = "learned"
SCORED_RUNTIMES = ("requested", "user-last2", "learned")


def scored_features(runtime_model: str) -> tuple[str, ...]:
    """The scored search's features for ``runtime_model``: the log family, with ``log_pred`` but for ``requested``."""
    if runtime_model not in SCORED_RUNTIMES:
        raise ValueError(f"scored search runtime {runtime_model!r}: expected one of {', '.join(SCORED_RUNTIMES)}")
    return LOG_FAMILY if runtime_model == "requested" else PREDICTED_FAMILY


def scored_search_config(runtime_model: str = SCORED_RUNTIME, **settings: Any) -> SearchConfig:
    """The scored search's settings with ``runtime_model``'s prediction as a feature (:func:`scored_features`)."""
    return SearchConfig(features=scored_features(runtime_model), runtime_model=runtime_model, **settings)


def check_scored_plan(spec: PolicySpec, *, checkpoint_every: int, epochs: int, pretrain_rule: str | None) -> None:
    """A one-line :class:`TrainError` for a training argument that means nothing to a search."""
    if spec.explicit:
        raise TrainError(
            f"policy 'scored' is trained without parameters ({', '.join(sorted(spec.explicit))} given): the search "
            "sets its features, weights and runtime_model (--search-runtime chooses the runtime)"
        )
    if epochs != 1:
        raise TrainError(f"--epochs {epochs}: the scored search makes no passes (--search-generations sets its length)")
    if checkpoint_every:
        raise TrainError("--checkpoint-every: the scored search does not checkpoint (it runs in one go)")
    if pretrain_rule is not None:
        raise TrainError("--pretrain-rule: the scored search starts from the best of its family's rules by itself")


def train_scored(task: TrainTask, progress: Callable[[int], None] | None = None) -> TrainResult:
    """Search ``task``'s scored policy (see the module docstring); ``progress(jobs)`` after each generation, in
    train-window jobs (the last generation: all of them), so a bar over the window fills as for a learned policy."""
    t0 = time.perf_counter()
    train, validation = task.workload, task.validation
    if len(train) == 0:
        raise TrainError(f"workload {train.name!r} has no job to train on")
    if validation is None or len(validation) == 0:
        raise TrainError("the scored search selects on a validation window: give one (--split)")
    config = replace(task.search if task.search is not None else scored_search_config(), objective=task.objective)

    def generation_done(row: dict[str, Any]) -> None:
        if progress is not None:
            progress(round((int(row["generation"]) + 1) / config.generations * len(train)))

    try:
        found = search_scoring(train, validation, config, task.cores, overrun=task.overrun, progress=generation_done)
    except ValueError as exc:  # e.g. a runtime model the workload cannot feed
        raise TrainError(f"scored search: {exc}") from None
    score = task.validation_score(found.spec)
    return TrainResult(
        task.seed,
        task.model_path,
        _model_bytes(found),
        found.spec.label(),
        len(train),
        found.evaluations,
        1,
        None,
        time.perf_counter() - t0,
        notes=[search_note(found, task.seed)],
        epochs=1,
        validation_scores=[score],
        best_epoch=0,
    )


def search_note(found: SearchResult, seed: int) -> str:
    """What the search chose, for the user (the model file records the whole summary)."""
    kind, generation = found.chosen
    which = f"the family's rule {kind.removeprefix('rule:')}" if kind.startswith("rule:") else f"the {kind} member"
    where = f" of generation {generation + 1} of {found.config.generations}" if generation >= 0 else ""
    objective = found.config.objective
    # The title ("mean bounded slowdown (τ = 10 s)") unless class weights need the label ("W (interactive ×3)").
    measure = objective.title if objective.label() == objective.name else objective.label()
    return (
        f"seed {seed}: the search chose {which}{where} ({measure} {found.selection_score:.4g} over its "
        f"{found.config.validation_replays} {found.config.select_on} replays; {found.evaluations} replays, "
        f"{found.seconds:.1f} s)"
    )


#: The date every member of a scored model's archive carries: the bytes then depend on the search alone.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _model_bytes(found: SearchResult) -> bytes:
    """The model file of ``found`` (:meth:`SearchResult.save`, without the search's wall time), its archive
    members dated :data:`ZIP_DATE`: the same seed gives the same bytes here, on a process pool and on Dask."""
    with tempfile.TemporaryDirectory(prefix="rlsched-train-") as tmp:
        path = Path(tmp) / "model.npz"
        found.save(path, timed=False)
        with zipfile.ZipFile(path) as source:
            members = [(info, source.read(info)) for info in source.infolist()]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as target:
        for info, data in members:
            stable = zipfile.ZipInfo(info.filename, date_time=ZIP_DATE)
            stable.compress_type = info.compress_type
            stable.external_attr = info.external_attr
            target.writestr(stable, data)
    return buffer.getvalue()
