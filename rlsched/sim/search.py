"""Direct policy search: the weights of a scoring function found by the cross-entropy method on the simulator.

The policy is a :class:`rlsched.core.scoring.ScoringFunction` (a weighted sum of job features, lower
first); its fitness is the simulated objective itself — :attr:`SearchConfig.objective`'s score (by default the
mean bounded slowdown, τ = 10 s; the mean wait, or P-grid's W, optionally class-weighted) of a replay with EASY
backfilling, every job's reservation from its requested time — so the search optimises exactly what it is
judged on, with no reward shaping and no value function.  The search minimises: a higher-is-better objective
(W) enters negated, or as easy-sjf's score over its own in the ``ratio`` fitness.

The search (:func:`search_scoring`), NumPy only and deterministic for a seed (docs/scoring.md):

0. The family's rules (:data:`rlsched.core.scoring.FAMILY_RULES`: SJF, smallest area first, F4's size term
   r·√n, FCFS) are replayed on the whole training window; the best by the objective is the first mean.
1. Each generation samples ``population`` weight vectors around the current mean (Gaussian, one
   standard deviation per weight), clips the ``non_negative`` ones (the wait's: no job starves by design)
   and scales each to unit length: ranking by a score is ranking by any positive multiple of it, so only the
   direction counts.  The current mean is always member 0.
2. Every member is replayed on the same ``sequences`` windows of ``sequence_jobs`` consecutive jobs of
   the training workload (drawn anew each generation from the seed: common random numbers within a
   generation, no over-fit to fixed windows), each from an empty machine, or (``warmup_jobs``) after the
   member has scheduled the jobs before it, which are not scored.  Fitness (``ratio``, the default):
   the geometric mean over the windows of its score over easy-sjf's on the same window (easy-sjf's over its
   own when higher is better); (``pooled``): the score of all their jobs.
3. The best ``elite_fraction`` set the next mean and standard deviations (smoothed; a floor keeps the
   search exploring).
4. Selection: the mean and the best member of every generation, and the family's rules, are replayed on the
   whole validation window as recorded and jittered (``validation_replays``); the best mean score over them
   is the result.  (``select_on = "train"``: on the whole training window instead, so that the validation
   window stays unseen for the seed's selection and the verdict that follow.)  The test window is never seen
   here.

Without ``log_pred`` every policy runs on the simulator's static-key path (a priority per job): the features
are known at submit and the wait enters linearly (as the submit time, see :mod:`rlsched.core.scoring`), so one
fitness evaluation of 8 × 2,000 jobs costs about 85 ms of CPU.  With ``log_pred`` (a predicted runtime) the
score is made at submit by the engine's dynamic priority (:mod:`rlsched.sim.scored`), 5× (``user-last2``) to
11× (``learned``) that.  A wait term that is not linear (WFP3's (w/r)³) would need re-prioritisation passes
and is not searched here.

Every replay is in gate mode unless :attr:`SearchConfig.boost` gives boost settings: then the start, the fitness
and the selection replay as the daemon deploys the ranking (about 5× the cost; measured in docs/scoring.md, "The
mode of the search", where it won nothing, so ``rlsched train`` leaves it off).

:func:`split_experiment` is the measurement of ``docs/results/scoring``: train on the first half of a trace,
select on the next quarter, report the last quarter against easy, easy-sjf, saf, wfp3, unicep and F1–F4.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np

from rlsched.core.measures import bounded_slowdown
from rlsched.core.objective import Objective
from rlsched.core.policies import PolicySpec, resolve, save_scored_model
from rlsched.core.scoring import (
    CARASTAN_SANTOS,
    LOG_FAMILY,
    PREDICTED_FAMILY,
    ScoringFunction,
    family_rules,
    format_weights,
)
from rlsched.core.view import FloatArray
from rlsched.sim.boost import BoostSettings
from rlsched.sim.engine import DEFAULT_OVERRUN, Overrun, Schedule, Simulator
from rlsched.sim.policies import simulate_policy
from rlsched.sim.scored import ScoredPriority
from rlsched.sim.workload import Workload


@dataclass(frozen=True)
class SearchConfig:
    """The cross-entropy search's settings (see the module docstring)."""

    features: tuple[str, ...] = LOG_FAMILY
    #: Where the search starts: one weight per feature (default: the best of the family's rules on the training
    #: window, :data:`rlsched.core.scoring.FAMILY_RULES`; log_req alone, easy-sjf's order, without them).
    initial: tuple[float, ...] | None = None
    #: The family's rules also stand for selection on validation: the search keeps one only if nothing it found
    #: does better there.
    rules: bool = True
    #: Weights kept ≥ 0 (clipped after sampling): with ``submit_h`` a job never loses rank to an identical job
    #: submitted after it, so no job starves by design (a negative weight favours the newest jobs).
    non_negative: tuple[str, ...] = ("submit_h",)
    population: int = 24
    generations: int = 12
    elite_fraction: float = 0.25
    initial_std: float = 0.5
    #: Floor of every weight's standard deviation (the search never stops exploring entirely).
    min_std: float = 0.02
    #: Weight of the new elite statistics against the old ones in each update.
    smoothing: float = 0.7
    sequences: int = 8
    sequence_jobs: int = 2000
    #: Jobs replayed before each sequence and not scored: the member schedules them too, so its sequence starts
    #: from the queue and the running jobs its own order built, as a window of a busy trace does, rather than
    #: from an empty machine.  0: from an empty machine (every search written before this setting).  A training
    #: window too short for a warm-up and a sequence is replayed whole, as without either.
    warmup_jobs: int = 0
    #: The runtime behind ``log_pred`` (user-last2, learned; oracle for an upper bound); requested without it.
    runtime_model: str = "requested"
    #: ``pooled``: mean bounded slowdown over all sampled jobs; ``ratio``: geometric mean over the sequences of
    #: the ratio to easy-sjf on the same sequence (a burst in one sequence does not outweigh the others).
    fitness: str = "ratio"
    #: Selection replays the validation window this many times: as recorded, then with every submit moved by
    #: up to ±``jitter_s`` (:meth:`Workload.jittered`, seeds 1, 2, …); the mean bounded slowdown over them
    #: decides.  One burst replayed once makes the mean bounded slowdown swing by 2× between weights that differ
    #: in the third digit; a choice that holds over the jittered replays is one that does not rest on it.
    validation_replays: int = 4
    jitter_s: float = 300.0
    #: The window the selection replays: ``validation`` (every search written before this setting), or ``train``,
    #: the whole training window, so that the search never sees the validation window.  train selects the seed
    #: and judges the model against the rules on validation after the search; with the search's own selection
    #: on it too, the seed validation ranks first is the one most fitted to that window.  Measured, it did no
    #: better on test (docs/scoring.md, "Selecting the member on the training window"), so train keeps the
    #: default.  The record then keeps the selection's scores as ``selection_<objective>``.
    select_on: Literal["validation", "train"] = "validation"
    backfill: bool = True
    #: The mode of every replay of the search (the family's start, the fitness, the selection).  ``None``: gate
    #: mode, the function's order as the engine's priority with EASY backfilling (``backfill``) — every search
    #: written before this setting.  Boost settings: the daemon's boost mode (the top ``max_boosted`` of the
    #: ranking ahead of the site's base order, re-ranked every poll, the base's backfilling), the mode the found
    #: policy is deployed and judged in; about 5× the cost of a gate replay.
    boost: BoostSettings | None = None
    seed: int = 0
    #: What the fitness, the family's start and the selection score (:func:`_search_score`): the site's
    #: objective, so the search optimises what the policy is judged by (default: mean bounded slowdown).
    objective: Objective = field(default_factory=Objective)

    def __post_init__(self) -> None:
        if self.population < 2:
            raise ValueError(f"population must be >= 2, got {self.population}")
        if self.generations < 1:
            raise ValueError(f"generations must be >= 1, got {self.generations}")
        if not 0 < self.elite_fraction <= 1:
            raise ValueError(f"elite_fraction must lie in (0, 1], got {self.elite_fraction}")
        if self.sequences < 1 or self.sequence_jobs < 0 or self.warmup_jobs < 0:
            raise ValueError("sequences must be >= 1, sequence_jobs and warmup_jobs >= 0")
        if ("log_pred" in self.features) == (self.runtime_model == "requested"):
            raise ValueError("log_pred and runtime_model go together (a prediction with log_pred; requested without)")
        if self.validation_replays < 1 or self.jitter_s < 0:
            raise ValueError("validation_replays must be >= 1 and jitter_s >= 0")
        if self.select_on not in ("validation", "train"):
            raise ValueError(f"select_on must be 'validation' or 'train', got {self.select_on!r}")
        if self.fitness not in ("pooled", "ratio"):
            raise ValueError(f"fitness must be 'pooled' or 'ratio', got {self.fitness!r}")
        if self.initial is not None and len(self.initial) != len(self.features):
            raise ValueError(f"{len(self.initial)} initial weights for {len(self.features)} features")

    def start(self) -> FloatArray:
        """The initial weights when no family rule is tried first."""
        if self.initial is not None:
            return self.clip(_unit(np.asarray(self.initial, dtype=np.float64)))
        start = np.zeros(len(self.features))
        start[self.features.index("log_req") if "log_req" in self.features else 0] = 1.0
        return start

    def clip(self, weights: FloatArray) -> FloatArray:
        """``weights`` (one row, or one per member) with the :attr:`non_negative` ones at 0 or above."""
        out = np.array(weights, dtype=np.float64)
        for name in self.non_negative:
            if name in self.features:
                k = self.features.index(name)
                out[..., k] = np.maximum(out[..., k], 0.0)
        return out


def _unit(weights: FloatArray) -> FloatArray:
    norm = float(np.linalg.norm(weights))
    return weights / norm if norm > 0 else weights


def simulate_scores(
    workload: Workload,
    function: ScoringFunction,
    cores: int | None = None,
    *,
    backfill: bool = True,
    overrun: Overrun = DEFAULT_OVERRUN,
    runtime_model: str = "requested",
) -> Schedule:
    """Replay ``workload`` with ``function`` as the static priority (``log_submit`` counts from its first submit),
    or, when it reads a predicted runtime, as the dynamic priority of :class:`rlsched.sim.scored.ScoredPriority`
    with ``runtime_model``'s predictions.

    The same order as ``simulate_policy(workload, scored spec)`` (ties by row, i.e. submit order, then job).
    """
    if function.reads_prediction:
        scored = ScoredPriority(workload, function, runtime_model, overrun)
        return Simulator(workload, cores, dynamic=scored, backfill=backfill, overrun=overrun).run()
    origin = float(workload.submit[0]) if len(workload) else 0.0
    priority = function.with_origin(origin).score_jobs(
        workload.req_time, workload.procs, workload.submit, workload.job_class
    )
    return Simulator(workload, cores, priority=priority, backfill=backfill, overrun=overrun).run()


def mean_bsld(schedule: Schedule) -> float:
    return float(bounded_slowdown(schedule.run, schedule.wait).mean())


def _plain_bsld(objective: Objective) -> bool:
    """Is ``objective`` the unweighted mean bounded slowdown (the default, every committed search's)?"""
    return objective.name == "bsld" and all(float(w) == 1.0 for w in objective.class_weights.values())


def _search_score(schedule: Schedule, objective: Objective) -> float:
    """``objective``'s score of ``schedule`` (its rows are its workload's jobs, in order): what
    :func:`rlsched.workflow.verdict.schedule_score` computes, except that the plain mean bounded slowdown keeps
    :func:`mean_bsld`'s arithmetic, so that every bsld search stays what it was, bit for bit."""
    if _plain_bsld(objective):
        return mean_bsld(schedule)
    return objective.score(schedule.run, schedule.wait, schedule.workload.job_class)


def _loss(score: float, objective: Objective) -> float:
    """What the search minimises for an ``objective`` score: the score, or its negative when higher is better.

    The negative rather than 1 − W: it ranks as the objective does for any higher-is-better score, bounded by 1
    or not, and reads back as the score itself (the ``ratio`` fitness, which needs a positive loss, has its own
    orientation, :func:`_ratio`)."""
    return -score if objective.higher_is_better else score


def _ratio(score: float, reference: float, objective: Objective) -> float:
    """One part's ``ratio`` fitness term: its score against easy-sjf's on the same part, positive and lower is
    better so that the geometric mean over the parts can be taken.  Lower-is-better: score / reference (bsld ≥ 1,
    so never 0/0; a mean wait of 0 under easy-sjf means no queue ever forms on the part, so none forms under any
    order either: a tie, 1).  Higher-is-better: reference / score (W > 0 for every job that ran)."""
    if objective.higher_is_better:
        return reference / score
    if reference == 0.0 and score == 0.0:
        return 1.0
    return score / reference


def score_key(prefix: str, objective: Objective) -> str:
    """The key a search record keeps ``objective``'s score under: ``validation_bsld``, ``train_W``, …  Named by
    the objective so that a bsld record keeps the keys of every file written before other objectives (and a
    reader finds any record's score from its ``objective``, :func:`searched_for`)."""
    return f"{prefix}_{objective.name}"


def selection_prefix(config: SearchConfig) -> str:
    """What a record calls the selection's scores: ``validation`` (``validation_bsld``, …), or ``selection`` when
    the selection replays the training window (:attr:`SearchConfig.select_on`), whose ``train_…`` scores are
    the family's start."""
    return "validation" if config.select_on == "validation" else "selection"


def searched_for(search: Mapping[str, Any]) -> Objective:
    """The objective a saved search record (a model file's ``search`` metadata) was searched for: bsld for a
    file written before the search had others."""
    recorded = search.get("objective")
    return Objective.from_dict(recorded) if recorded is not None else Objective()


#: The reference of the ``ratio`` fitness: easy-sjf's order (requested time, shortest first).
RATIO_REFERENCE = ScoringFunction(("log_req",), (1.0,))


def _fitness(
    parts: Sequence[_Part],
    function: ScoringFunction,
    config: SearchConfig,
    pool: int,
    overrun: Overrun,
    reference: Sequence[float] | None,
) -> float:
    """The (minimised) fitness of ``function`` for ``config.objective``.  ``pooled``: the objective's score of all
    jobs of all ``parts`` (each replayed from an empty machine, its warm-up not scored).  ``ratio`` (``reference``
    given: each part's score under easy-sjf): the geometric mean over the parts of :func:`_ratio`, so that each
    part counts alike whatever its load."""
    objective = config.objective
    schedules = [_replay_part(part, function, config, pool, overrun) for part in parts]
    if reference is not None:
        logs = [
            np.log(_ratio(_search_score(s, objective), r, objective)) for s, r in zip(schedules, reference, strict=True)
        ]
        return float(np.exp(np.mean(logs)))
    return _loss(_pooled_score(schedules, objective), objective)


def _pooled_score(schedules: Sequence[Schedule], objective: Objective) -> float:
    """``objective``'s score of the jobs of all ``schedules`` together."""
    if _plain_bsld(objective):
        # Each part's sum over all the jobs: the arithmetic of every bsld search so far.
        total, count = 0.0, 0
        for s in schedules:
            b = bounded_slowdown(s.run, s.wait)
            total += float(b.sum())
            count += b.size
        return total / max(count, 1)
    return objective.score(
        np.concatenate([s.run for s in schedules]),
        np.concatenate([s.wait for s in schedules]),
        np.concatenate([s.workload.job_class for s in schedules]),
    )


@dataclass(frozen=True)
class _Part:
    """One part of the fitness: ``workload`` replayed whole, its first ``warmup`` jobs not scored."""

    workload: Workload
    warmup: int = 0


def _sequences(workload: Workload, config: SearchConfig, generation: int) -> list[_Part]:
    n = len(workload)
    warmup = config.warmup_jobs
    if config.sequence_jobs == 0 or config.sequence_jobs + warmup >= n:
        return [_Part(workload)]
    rng = np.random.default_rng([config.seed, generation, 1])
    # Without a warm-up, the draws of every search written before it (the same starts, bit for bit).
    starts = np.sort(rng.integers(warmup, n - config.sequence_jobs + 1, size=config.sequences))
    return [_Part(workload.window(s - warmup, s + config.sequence_jobs), warmup) for s in starts.tolist()]


@dataclass
class SearchResult:
    """What :func:`search_scoring` found and how (one row of ``history`` per generation: the fitness, minimised —
    for a higher-is-better objective the pooled one is the negative score — and the selection's scores)."""

    function: ScoringFunction
    #: Its score by :attr:`SearchConfig.objective` on the window the selection replays (the validation window, or
    #: the training one: :attr:`SearchConfig.select_on`; mean over :attr:`SearchConfig.validation_replays`);
    #: recorded as ``validation_<objective name>`` (``selection_…`` on the training window; :func:`score_key`).
    selection_score: float
    #: Which candidate won the selection: ("mean" | "best", generation), or ("rule:NAME", -1).
    chosen: tuple[str, int]
    config: SearchConfig
    history: list[dict[str, Any]] = field(default_factory=list)
    #: The family's rules: name → {"weights", "train_bsld" (whole training window), "validation_bsld"
    #: ("selection_bsld" when the selection replays the training window)}, the scores named by the objective
    #: (:func:`score_key`: ``train_W``, … for another).
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    evaluations: int = 0
    seconds: float = 0.0

    @property
    def spec(self) -> PolicySpec:
        """The registry spec of the found policy (``scored:features=…,weights=…``)."""
        return scored_spec(self.function, self.config.runtime_model, self.config.backfill)

    def summary(self) -> dict[str, Any]:
        objective = self.config.objective
        return {
            "spec": self.spec.label(),
            "objective": objective.to_dict(),
            score_key(selection_prefix(self.config), objective): self.selection_score,
            "chosen": list(self.chosen),
            "evaluations": self.evaluations,
            "seconds": round(self.seconds, 2),
            "rules": self.rules,
            # The objective is recorded above, as Objective.to_dict() writes it.
            # A gate-mode search's record as before the boost setting (boost: None) existed, and one without a
            # warm-up, or selecting on validation, as before those.
            "config": {
                k: list(v) if isinstance(v, tuple) else v
                for k, v in asdict(self.config).items()
                if k != "objective"
                and not (k == "boost" and v is None)
                and not (k == "warmup_jobs" and v == 0)
                and not (k == "select_on" and v == "validation")
            },
            "history": self.history,
        }

    def save(self, path: str | Path, *, timed: bool = True) -> None:
        """The model file: the spec (it alone rebuilds the policy) and the search's record (``timed=False``:
        without the wall time, so that the file depends on the inputs and the seed alone)."""
        summary = self.summary()
        if not timed:
            del summary["seconds"]
        save_scored_model(
            self.spec,
            path,
            search=summary,
            arrays={
                "mean_weights": np.array([h["mean_weights"] for h in self.history]),
                "train_fitness_best": np.array([h["train_best"] for h in self.history]),
            },
        )


def search_scoring(
    train: Workload,
    validation: Workload,
    config: SearchConfig = SearchConfig(),
    cores: int | None = None,
    *,
    overrun: Overrun = DEFAULT_OVERRUN,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> SearchResult:
    """The cross-entropy search of the module docstring; deterministic for ``config.seed``.

    ``cores``: the pool (default: the training workload's machine size).  ``progress`` gets each
    generation's history row.
    """
    t0 = time.perf_counter()
    pool = int(cores if cores is not None else train.max_procs)
    rng = np.random.default_rng([config.seed, 0])
    d = len(config.features)
    history: list[dict[str, Any]] = []
    candidates: list[tuple[str, int, FloatArray]] = []
    rules: dict[str, dict[str, Any]] = {}
    evaluations = 0

    mean = config.start()
    if config.rules:
        rules = _family_on_train(train, config, pool, overrun)
        candidates += [
            (f"rule:{name}", -1, np.asarray(rule["weights"], dtype=np.float64)) for name, rule in rules.items()
        ]
        evaluations += len(rules)
        if config.initial is None and rules:
            train_key = score_key("train", config.objective)
            best_rule = min(rules, key=lambda name: _loss(rules[name][train_key], config.objective))
            mean = np.asarray(rules[best_rule]["weights"], dtype=np.float64)
    std = np.full(d, config.initial_std)

    for g in range(config.generations):
        mean, std, row, chosen, spent = _generation(train, config, g, mean, std, rng, pool, overrun)
        candidates += chosen
        evaluations += spent
        history.append(row)
        if progress is not None:
            progress(row)

    # Selection on the validation (or training) window, whole, from an empty machine, as recorded and jittered.
    replays = jittered_replays(
        train if config.select_on == "train" else validation, config.validation_replays, config.jitter_s
    )
    prefix = selection_prefix(config)
    scored = [
        (_mean_over(replays, _function_of(config, w), config, pool, overrun), k)
        for k, (_, _, w) in enumerate(candidates)
    ]
    evaluations += len(replays) * len(candidates)
    for value, k in scored:
        what, g, _ = candidates[k]
        if g < 0:
            rules[what.removeprefix("rule:")][score_key(prefix, config.objective)] = value
        else:
            history[g][f"{prefix}_{what}"] = value
    # Ties: the earlier candidate (the rules come first).
    value, k = min(scored, key=lambda vk: (_loss(vk[0], config.objective), vk[1]))
    what, g, w = candidates[k]
    return SearchResult(
        _function_of(config, w), value, (what, g), config, history, rules, evaluations, time.perf_counter() - t0
    )


def scored_spec(function: ScoringFunction, runtime_model: str, backfill: bool) -> PolicySpec:
    """The registry spec of ``function`` (``scored:features=…,weights=…``)."""
    return resolve(
        PolicySpec(
            "scored",
            {
                "features": "/".join(function.features),
                "weights": format_weights(function.weights),
                "runtime_model": runtime_model,
                "backfill": backfill,
            },
        )
    )


def _replay(
    workload: Workload, function: ScoringFunction, config: SearchConfig, pool: int, overrun: Overrun
) -> Schedule:
    """``workload`` replayed under ``function`` in the search's mode (:attr:`SearchConfig.boost`)."""
    runtime_model = config.runtime_model if function.reads_prediction else "requested"
    if config.boost is None:
        return simulate_scores(
            workload, function, pool, backfill=config.backfill, overrun=overrun, runtime_model=runtime_model
        )
    spec = scored_spec(function, runtime_model, config.backfill)
    return simulate_policy(workload, spec, pool, mode="boost", boost=config.boost, overrun=overrun).schedule


def _replay_part(part: _Part, function: ScoringFunction, config: SearchConfig, pool: int, overrun: Overrun) -> Schedule:
    """``part`` replayed under ``function``; the schedule of its scored jobs (the warm-up's cut off)."""
    schedule = _replay(part.workload, function, config, pool, overrun)
    if part.warmup == 0:
        return schedule
    n = len(part.workload)
    # Only the scored jobs' columns are read (no past: the replay is over).
    return replace(
        schedule,
        workload=part.workload.select(np.arange(part.warmup, n)),
        start=schedule.start[part.warmup :],
        end=schedule.end[part.warmup :],
    )


def _function_of(config: SearchConfig, weights: FloatArray) -> ScoringFunction:
    """The scoring function of ``config``'s features with ``weights``."""
    return ScoringFunction(config.features, tuple(float(w) for w in weights))


def _generation(
    train: Workload,
    config: SearchConfig,
    g: int,
    mean: FloatArray,
    std: FloatArray,
    rng: np.random.Generator,
    pool: int,
    overrun: Overrun,
) -> tuple[FloatArray, FloatArray, dict[str, Any], list[tuple[str, int, FloatArray]], int]:
    """Generation ``g`` of :func:`search_scoring`: (next mean, next std, history row, candidates, evaluations)."""
    evaluations = 0
    d = len(config.features)
    n_elite = max(1, round(config.elite_fraction * config.population))
    parts = _sequences(train, config, g)
    reference = None
    if config.fitness == "ratio":
        reference = [
            _search_score(_replay_part(p, RATIO_REFERENCE, config, pool, overrun), config.objective) for p in parts
        ]
        evaluations += len(parts)
    population = config.clip(mean + std * rng.standard_normal((config.population, d)))
    population[0] = mean
    population = np.array([_unit(w) for w in population])
    fitness = np.array([_fitness(parts, _function_of(config, w), config, pool, overrun, reference) for w in population])
    evaluations += config.population
    # Stable order: equal fitness keeps the lower index (the mean first), so the result does not depend
    # on how NumPy breaks ties.
    elite = population[np.argsort(fitness, kind="stable")[:n_elite]]
    best = int(np.argmin(fitness))
    chosen = [("mean", g, population[0].copy()), ("best", g, population[best].copy())]
    row = {
        "generation": g,
        "train_mean": float(fitness[0]),
        "train_best": float(fitness[best]),
        "train_median": float(np.median(fitness)),
        "mean_weights": population[0].tolist(),
        "best_weights": population[best].tolist(),
        "std": std.tolist(),
    }
    a = config.smoothing
    mean = _unit(config.clip(a * elite.mean(axis=0) + (1 - a) * mean))
    std = np.maximum(a * elite.std(axis=0) + (1 - a) * std, config.min_std)
    return mean, std, row, chosen, evaluations


def _family_on_train(train: Workload, config: SearchConfig, pool: int, overrun: Overrun) -> dict[str, dict[str, Any]]:
    """The family's rules (:func:`rlsched.core.scoring.family_rules`), unit weights, each replayed on the whole
    training window: ``{name: {"weights", "train_bsld"}}`` (the objective's score, :func:`score_key`)."""
    rules: dict[str, dict[str, Any]] = {}
    for name, weights in family_rules(config.features).items():
        w = _unit(np.asarray(weights, dtype=np.float64))
        s = _replay(train, _function_of(config, w), config, pool, overrun)
        rules[name] = {"weights": w.tolist(), score_key("train", config.objective): _search_score(s, config.objective)}
    return rules


def _mean_over(
    replays: Sequence[Workload], function: ScoringFunction, config: SearchConfig, pool: int, overrun: Overrun
) -> float:
    """The mean over ``replays`` of each one's score by ``config.objective`` under ``function``."""
    return float(
        np.mean([_search_score(_replay(r, function, config, pool, overrun), config.objective) for r in replays])
    )


def jittered_replays(workload: Workload, replays: int, jitter_s: float) -> list[Workload]:
    """``workload`` as recorded, then ``replays − 1`` copies with every submit moved by up to ±``jitter_s``."""
    return [workload, *(workload.jittered(k, jitter_s) for k in range(1, replays))]


# ------------------------------------------------------------------------------ the measurement
def split_by_jobs(workload: Workload, fractions: Sequence[float] = (0.5, 0.25, 0.25)) -> list[Workload]:
    """Consecutive windows of the given shares of the jobs, in submit order (train, validation, test)."""
    bounds = np.round(np.cumsum([0.0, *fractions]) / sum(fractions) * len(workload)).astype(int)
    names = ("train", "validation", "test")
    return [
        workload.window(bounds[i], bounds[i + 1], name=f"{workload.name}[{names[i]}]") for i in range(len(fractions))
    ]


#: The registry rules every measurement compares against, by label (EASY backfilling, requested time; WFP3 and
#: UNICEP re-prioritised every 300 s, the registry's default pass).
REGISTRY_RULES: dict[str, str] = {
    "easy": "easy",
    "easy-sjf": "easy-sjf",
    "easy-saf": "saf:backfill=true",
    "easy-wfp3": "wfp3:backfill=true",
    "easy-unicep": "unicep:backfill=true",
}


def reference_bsld(replays: Sequence[Workload], cores: int, runtime_model: str = "requested") -> dict[str, float]:
    """Mean over ``replays`` of the mean bounded slowdown of the :data:`REGISTRY_RULES` and of F1–F4 with EASY
    (this module's features, ``s`` counted from each replay's first submit).

    With a predicted ``runtime_model`` also the registry's sjf, saf and F1–F4 on it (``-RUNTIME_MODEL``; F1–F4's
    ``origin_s`` at each replay's first submit): the rules with the same information as the search.
    """

    def mean_of(spec: str, clock: bool = False) -> float:
        """``spec`` on every replay (``clock``: with F1–F4's origin at the replay's first submit)."""
        return float(
            np.mean(
                [
                    mean_bsld(
                        simulate_policy(r, f"{spec},origin_s={float(r.submit[0])!r}" if clock else spec, cores).schedule
                    )
                    for r in replays
                ]
            )
        )

    out = {label: mean_of(spec) for label, spec in REGISTRY_RULES.items()}
    for name, function in CARASTAN_SANTOS.items():
        out[f"easy-{name}"] = float(
            np.mean([mean_bsld(simulate_scores(r, function, cores, backfill=True)) for r in replays])
        )
    if runtime_model != "requested":
        for rule in ("sjf", "saf", *CARASTAN_SANTOS):
            out[f"easy-{rule}-{runtime_model}"] = mean_of(
                f"{rule}:runtime_model={runtime_model},backfill=true", clock=rule in CARASTAN_SANTOS
            )
    return out


def split_experiment(
    workload: Workload,
    config: SearchConfig,
    cores: int | None = None,
    seeds: Sequence[int] = (0,),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Train on the first 50 % of ``workload``, select on the next 25 %, report the last 25 % (see module)."""
    if config.select_on != "validation":
        # Its report sets each search's validation score beside the rules': a search that selects on the
        # training window has none (benchmarks/diag_scored_mode.py --select-on train measures that setting).
        raise ValueError("split_experiment selects on the validation window: select_on must be 'validation'")
    train, validation, test = split_by_jobs(workload)
    pool = int(cores if cores is not None else workload.max_procs)
    out: dict[str, Any] = {
        "trace": workload.name,
        "cores": pool,
        "jobs": len(workload),
        "windows": {"train": len(train), "validation": len(validation), "test": len(test)},
        "runtime_information": "requested time only (no actual or predicted runtime)"
        if config.runtime_model == "requested"
        else f"requested time and the {config.runtime_model} prediction (the rules: both)",
        "rules": {},
        "searches": [],
    }
    tests = jittered_replays(test, config.validation_replays, config.jitter_s)
    rm = config.runtime_model
    on_validation = reference_bsld(jittered_replays(validation, config.validation_replays, config.jitter_s), pool, rm)
    on_test, on_tests = reference_bsld(tests[:1], pool, rm), reference_bsld(tests, pool, rm)
    out["rules"] = {
        name: {"validation_bsld": on_validation[name], "test_bsld": on_test[name], "test_jittered_bsld": on_tests[name]}
        for name in on_validation
    }
    for seed in seeds:
        cfg = replace(config, seed=seed)
        report = None
        if progress is not None:

            def report(row: dict[str, Any], seed: int = seed, say: Callable[[str], None] = progress) -> None:
                say(
                    f"seed {seed} gen {row['generation']}: train mean {row['train_mean']:.2f} "
                    f"best {row['train_best']:.2f}"
                )

        result = search_scoring(train, validation, cfg, pool, progress=report)
        found = [
            mean_bsld(simulate_scores(t, result.function, pool, backfill=cfg.backfill, runtime_model=rm)) for t in tests
        ]
        test_bsld = found[0]
        out["searches"].append(
            {**result.summary(), "seed": seed, "test_bsld": test_bsld, "test_jittered_bsld": float(np.mean(found))}
        )
        if progress is not None:
            progress(
                f"seed {seed}: validation {result.selection_score:.2f} test {test_bsld:.2f} ({result.seconds:.0f} s)"
            )
    return out


def write_report(folder: Path) -> None:
    """``folder/report.md`` from every ``*.json`` result in ``folder`` (sorted by name)."""
    results = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    (folder / "report.md").write_text(HEADER + report_markdown(results))


HEADER = """# Direct policy search on the traces (docs/scoring.md)

Generated by `python -m rlsched.sim.search TRACE --seeds 0,1,2 [--runtime-model M] --out docs/results/scoring`
(one JSON per run here; `--report-only --out docs/results/scoring` rewrites this file from them).  Train: the
first 50 % of the jobs; validation: the next 25 % (selection only); test: the last 25 %, never seen by the
search or the selection.  F1–F4: s counted from the first submit of the window they replay.

"""


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rlsched.sim.search TRACE [--seeds 0,1,2] [--runtime-model M] [--out DIR]``: the split experiment
    of one trace (DIR gets its JSON and a report.md of every JSON there)."""
    import argparse

    from rlsched.sim.traces.sidecar import read_trace
    from rlsched.sim.traces.swf import resolve_trace

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("trace", nargs="?", help="a trace name or path (omit with --report-only)")
    parser.add_argument("--report-only", action="store_true", help="rewrite --out's report.md from its JSONs")
    parser.add_argument("--seeds", default="0")
    parser.add_argument(
        "--features", default=None, help="default: the log family, with log_pred when --runtime-model predicts"
    )
    parser.add_argument("--runtime-model", default="requested", choices=("requested", "user-last2", "learned"))
    parser.add_argument("--generations", type=int, default=SearchConfig.generations)
    parser.add_argument("--population", type=int, default=SearchConfig.population)
    parser.add_argument("--sequences", type=int, default=SearchConfig.sequences)
    parser.add_argument("--sequence-jobs", type=int, default=SearchConfig.sequence_jobs)
    parser.add_argument("--warmup-jobs", type=int, default=SearchConfig.warmup_jobs)
    parser.add_argument("--fitness", default=SearchConfig.fitness, choices=("pooled", "ratio"))
    parser.add_argument("--validation-replays", type=int, default=SearchConfig.validation_replays)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.report_only or args.trace is None:
        if args.out is None:
            parser.error("--report-only needs --out DIR")
        write_report(args.out)
        return
    workload = read_trace(resolve_trace(args.trace))
    features = args.features or "/".join(LOG_FAMILY if args.runtime_model == "requested" else PREDICTED_FAMILY)
    config = SearchConfig(
        features=tuple(features.split("/")),
        runtime_model=args.runtime_model,
        generations=args.generations,
        population=args.population,
        sequences=args.sequences,
        sequence_jobs=args.sequence_jobs,
        warmup_jobs=args.warmup_jobs,
        fitness=args.fitness,
        validation_replays=args.validation_replays,
    )
    result = split_experiment(
        workload, config, seeds=[int(s) for s in args.seeds.split(",")], progress=lambda line: print(line, flush=True)
    )
    text = json.dumps(result, indent=1)
    if args.out is not None:
        # One JSON per trace and run; report.md is regenerated from every JSON in the folder.
        args.out.mkdir(parents=True, exist_ok=True)
        suffix = "" if args.runtime_model == "requested" else f"-{args.runtime_model}"
        (args.out / f"{workload.name}{suffix}.json").write_text(text + "\n")
        write_report(args.out)
    else:
        print(text)


def report_markdown(results: Sequence[dict[str, Any]]) -> str:
    """The tables of ``docs/results/scoring/report.md`` from :func:`split_experiment` results (one per trace)."""
    lines: list[str] = []
    for res in results:
        searches = res["searches"]
        test = np.array([s["test_bsld"] for s in searches])
        jittered = np.array([s["test_jittered_bsld"] for s in searches])
        rules = res["rules"]
        best = min(rules, key=lambda name: rules[name]["test_bsld"])
        best_jittered = min(rules, key=lambda name: rules[name]["test_jittered_bsld"])
        predicted = next(
            (
                s["config"]["runtime_model"]
                for s in searches
                if s["config"].get("runtime_model", "requested") != "requested"
            ),
            None,
        )
        lines += [
            f"### {res['trace']}"
            + (f", with {predicted} predictions" if predicted else ", requested time")
            + f" ({res['jobs']} jobs, {res['cores']} cores; train {res['windows']['train']}, "
            f"validation {res['windows']['validation']}, test {res['windows']['test']} jobs)",
            "",
            f"Runtime information: {res['runtime_information']}.  Mean bounded slowdown (τ = 10 s), EASY "
            "backfilling; validation = mean over the window as recorded and 3 jittered replays (±300 s), "
            "test = the window as recorded, test jittered = the same 4-replay mean on the test window.",
            "",
            "| policy | validation | test | test jittered |",
            "|---|---|---|---|",
        ]
        for name, r in sorted(rules.items(), key=lambda kv: kv[1]["test_bsld"]):
            lines.append(
                f"| {name} | {r['validation_bsld']:.2f} | {r['test_bsld']:.2f} | {r['test_jittered_bsld']:.2f} |"
            )
        for s in searches:
            lines.append(
                f"| scored, seed {s['seed']} (chose {s['chosen'][0]}"
                + (f", generation {s['chosen'][1]}" if s["chosen"][1] >= 0 else "")
                + f") | {s['validation_bsld']:.2f} | {s['test_bsld']:.2f} | {s['test_jittered_bsld']:.2f} |"
            )
        chosen = min(rules, key=lambda name: rules[name]["validation_bsld"])
        spread = f" (min {test.min():.2f}, max {test.max():.2f})" if len(test) > 1 else ""
        inside = len(test) > 1 and test.min() <= rules[best]["test_bsld"] <= test.max()
        lines += [
            "",
            f"Scored over {len(searches)} seed(s): test {test.mean():.2f}{spread}.",
            f"- against the best rule on test ({best}, {rules[best]['test_bsld']:.2f}; a choice only hindsight "
            f"makes): {test.mean() / rules[best]['test_bsld']:.2f}×"
            + (" — inside the spread over seeds: a tie" if inside else "")
            + ";",
            f"- against the rule the validation window picks ({chosen}, validation "
            f"{rules[chosen]['validation_bsld']:.2f}, test {rules[chosen]['test_bsld']:.2f}): "
            f"{test.mean() / rules[chosen]['test_bsld']:.2f}×;",
            f"- on the jittered test replays {jittered.mean():.2f} against the best rule there ({best_jittered}, "
            f"{rules[best_jittered]['test_jittered_bsld']:.2f}): "
            f"{jittered.mean() / rules[best_jittered]['test_jittered_bsld']:.2f}×.",
            "",
        ]
        for s in searches:
            lines.append(f"- seed {s['seed']}: `{s['spec']}` ({s['evaluations']} replays, {s['seconds']:.0f} s)")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
