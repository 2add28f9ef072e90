"""Never deploy a loser: the trained model against every rule, on the validation window, in the deployment mode.

``rlsched train`` selects one model among its epochs and seeds by the objective on the
validation window (:mod:`rlsched.workflow.train`), then replays the same window under every
rule of the registry (:func:`candidate_rules`: each ``rule``-family entry with its defaults,
and once more per live ``runtime_model`` it accepts — so rules added to the registry join
without a change here), in the mode the daemon will run it, and writes the outcome into the
model file (:data:`rlsched.core.policies.VERDICT_KEY`): the best rule, both scores, the spread
of the model's score over the seeds, the objective, the mode and the windows.

Outcome: a difference within the spread over seeds (the standard deviation of each seed's
selected validation score) is a tie; otherwise the model ``beats`` or ``loses to`` the best
rule.  With one seed there is no spread and any difference decides.

The rule a losing model is replaced by is, by default, the best rule on validation too.  With
``rlsched train --rule-windows 3`` it is chosen on more jobs (:func:`rule_over_windows`): rules learn
nothing, so the training window is as unseen by them as the validation window; the deployed rule is
then the one with the best geometric mean, over the training window's halves and the validation
window, of its score relative to each window's best rule (a rule good everywhere rather than best
once).  Measured on nine traces (docs/results/learning) it did not pick better rules for the test
window than validation alone (better on 3, worse on 3, the same on 3; geometric-mean ratio to the test
window's best rule 1.95 against 1.57), hence not the default.  With ``rlsched train --rule-prior
public`` or ``RESULTS`` (:class:`RulePrior`) it is chosen on other sites' evidence instead: the rule
with the best such geometric mean over the validation windows of every trace of a learning run (the
shipped 12,000-job table, or a results.json) but the one trained on.  On the nine traces, leaving each
one's own out, that rule came closer to the test window's best than the site's own validation pick
(geometric-mean ratio 1.21 against 1.40 at 4,000 jobs, 1.35 against 1.53 at 12,000; worse with the
three-trace W table, 1.06 against 1.02): a site's next window is often unlike its last one.  Either
way the model is judged against the best rule on validation (the strictest comparison), so a model
that loses to any rule there is not deployed.  The daemon and
``rlsched config check`` refuse a model whose verdict is ``loses`` unless ``[agent]
allow_losing_model = true``.

The validation window also selected the model, so its score there is optimistic; the
out-of-sample figure is ``rlsched evaluate``'s, on the test window.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.objective import Objective
from rlsched.core.policies import POLICIES, BuildContext, PolicyError, PolicySpec, build_agent, entry, resolve
from rlsched.core.policies.registry import rule_setup, static_key
from rlsched.core.policies.spec import _format_value
from rlsched.sim.engine import DEFAULT_OVERRUN, Overrun, Schedule
from rlsched.sim.policies import workload_vos
from rlsched.sim.workload import Workload
from rlsched.workflow.pieces import PieceStore, fingerprint
from rlsched.workflow.split import Deployment, simulate_in

OUTCOMES = ("beats", "ties", "loses")


def schedule_score(objective: Objective, schedule: Schedule) -> float:
    """The objective of one simulated schedule."""
    return objective.score(schedule.run, schedule.wait, schedule.workload.job_class)


def candidate_rules(vos: Sequence[str], deployment: Deployment) -> tuple[list[PolicySpec], list[str]]:
    """Every registry rule the daemon could run in ``deployment``'s mode, and why the others are left out.

    Each rule with its default parameters, plus one variant per other runtime model it accepts
    that a live system has (``oracle`` is simulator-only: building it live fails, so it drops out).
    """
    specs: list[PolicySpec] = []
    skipped: list[str] = []
    for e in POLICIES.values():
        if e.family != "rule":
            continue
        variants = [resolve(e.name)]
        runtime = next((p for p in e.params if p.name == "runtime_model"), None)
        if runtime is not None and runtime.choices is not None:
            variants += [resolve(e.name, runtime_model=c) for c in runtime.choices if c != runtime.default]
        for spec in variants:
            try:
                build_agent(spec.bound(tuple(vos), None), BuildContext(mode=deployment.mode, live=True))
            except (PolicyError, ValueError) as exc:
                skipped.append(f"{spec_text(spec)}: {' '.join(str(exc).split())}")
                continue
            specs.append(spec)
    return specs, skipped


def spec_text(spec: PolicySpec) -> str:
    """A rule with its non-default parameters (``edf:runtime_model=requested``)."""
    e = entry(spec.name)
    named = {k: v for k, v in spec.params.items() if e.param(k).default != v}
    return spec.name + (":" + ",".join(f"{k}={_format_value(v)}" for k, v in sorted(named.items())) if named else "")


def config_line(spec: PolicySpec) -> str:
    """How a daemon config chooses this rule: ``[agent] kind = "edf", runtime_model = "requested"``."""
    e = entry(spec.name)
    parts = [f'kind = "{spec.name}"']
    for k, v in sorted(spec.params.items()):
        if e.param(k).default != v:
            parts.append(f"{k} = " + (f'"{v}"' if isinstance(v, str) else _format_value(v)))
    return "[agent] " + ", ".join(parts)


@dataclass
class RuleScores:
    """Every candidate rule's score on the validation window."""

    scores: dict[str, float] = field(default_factory=dict)
    specs: dict[str, PolicySpec] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def best(self, objective: Objective) -> str | None:
        real = [(label, s) for label, s in self.scores.items() if math.isfinite(s)]
        if not real:
            return None
        return (max if objective.higher_is_better else min)(real, key=lambda item: item[1])[0]


def score_rules(
    validation: Workload,
    deployment: Deployment,
    objective: Objective,
    *,
    cores: int | None = None,
    overrun: Overrun = DEFAULT_OVERRUN,
    progress: Callable[[int], None] | None = None,
    workers: int = 1,
    store: PieceStore | None = None,
) -> RuleScores:
    """Replay ``validation`` under every candidate rule in ``deployment``'s mode, on ``workers`` processes.

    In boost mode the batch system backfills, so rules that differ only in their own ``backfill`` (``sjf`` and
    ``easy-sjf``, ``fcfs`` and ``easy``) replay alike: each such group is replayed once (:func:`boost_twin`).
    ``store``: each replay's score is kept there as it finishes, and read back instead of replayed again.
    """
    t0 = time.perf_counter()
    specs, skipped = candidate_rules(workload_vos(validation), deployment)
    out = RuleScores(skipped=skipped)
    twins = [boost_twin(spec) if deployment.mode == "boost" else spec.label() for spec in specs]
    first: dict[Any, PolicySpec] = {}
    for twin, spec in zip(twins, specs, strict=True):
        first.setdefault(twin, spec)
    jobs: dict[Any, _Replay] = {
        twin: (validation, deployment, objective, spec, cores, overrun) for twin, spec in first.items()
    }
    results: dict[Any, tuple[float, str | None]] = {}
    keys: dict[Any, str] = {}
    if store is not None:
        window = fingerprint(validation)  # digested once for all the rules
        keys = {twin: fingerprint("rule replay", window, job[1:]) for twin, job in jobs.items()}
        for twin, key in keys.items():
            kept = store.get(key)
            if kept is not None:
                results[twin] = kept
    done = sum(twins.count(twin) for twin in results)
    if progress is not None and done:
        progress(done)
    todo = [twin for twin in first if twin not in results]
    replayed = _replays([jobs[twin] for twin in todo], workers)
    for twin, result in zip(todo, replayed, strict=True):
        results[twin] = result
        if store is not None:
            store.put(keys[twin], result)
        done += twins.count(twin)  # the rules this replay scores
        if progress is not None:
            progress(done)
    for twin, spec in zip(twins, specs, strict=True):  # in the candidates' order: ties go to the first
        label = spec_text(spec)
        score, error = results[twin]
        if error is not None:
            out.skipped.append(f"{label}: {error}")
            continue
        out.scores[label] = score
        out.specs[label] = spec
    out.seconds = time.perf_counter() - t0
    return out


def boost_twin(spec: PolicySpec) -> tuple[Any, ...]:
    """What a rule's replay in boost mode depends on: its ranking (its static key, or its formula and the
    parameters but ``backfill``) — the batch system, not the rule, decides backfilling there."""
    setup = rule_setup(spec)
    if setup is not None:
        return ("formula", setup)
    key = static_key(spec)
    return ("key", key) if key is not None else ("spec", spec.label())


_Replay = tuple[Workload, Deployment, Objective, PolicySpec, "int | None", Overrun]


def _replay_score(job: _Replay) -> tuple[float, str | None]:
    """One rule's score on a window (a :func:`score_rules` task), or the one-line reason it cannot run there."""
    window, deployment, objective, spec, cores, overrun = job
    try:
        ran = simulate_in(deployment, window, spec, cores, overrun=overrun, name=spec_text(spec))
    except PolicyError as exc:
        return math.nan, " ".join(str(exc).split())
    return schedule_score(objective, ran.schedule), None


def _replays(jobs: Sequence[_Replay], workers: int) -> Iterator[tuple[float, str | None]]:
    """:func:`_replay_score` of every job, in order, as each is known: here or on a process pool of ``workers``."""
    if workers <= 1 or len(jobs) <= 1:
        yield from map(_replay_score, jobs)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=min(workers, len(jobs))) as pool:
        yield from pool.map(_replay_score, jobs)


@dataclass(frozen=True)
class Verdict:
    """The selected model against the best rule on the validation window (see the module docstring)."""

    outcome: str
    objective: Objective
    deployment: Deployment
    model_score: float
    spread: float
    seeds: int
    rule: str
    rule_score: float
    rule_config: str
    #: (rule − model) / |rule| when lower is better, (model − rule) / |rule| otherwise: > 0, the model is better.
    gain: float
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: The rule to deploy instead of a losing model (:func:`rule_over_windows`; "": ``rule``) and its config line.
    deploy_rule: str = ""
    deploy_config: str = ""
    #: How many windows chose ``deploy_rule`` (1: the validation window alone).
    deploy_windows: int = 1
    #: Where a :class:`RulePrior` chose ``deploy_rule`` ("": the site's own windows did).
    deploy_prior: str = ""

    @property
    def replacement(self) -> tuple[str, str]:
        """(rule, config line) to deploy when the model loses."""
        return (self.deploy_rule, self.deploy_config) if self.deploy_rule else (self.rule, self.rule_config)

    @property
    def loses(self) -> bool:
        return self.outcome == "loses"

    def line(self) -> str:
        """The one line ``rlsched train`` prints."""
        where = f"on validation {self.objective.label()}"
        spread = f"spread over {self.seeds} seeds ±{_num(self.spread)}" if self.seeds > 1 else "one seed: no spread"
        model, rule = _two_nums(self.model_score, self.rule_score)
        scores = f"model {model}, {self.rule} {rule}, {spread}, {self.deployment.mode} mode"
        pct = _percent(self.gain)
        if self.outcome == "beats":
            return f"model beats {self.rule} by {pct} {where} ({scores})"
        if self.outcome == "loses":
            rule, config = self.replacement
            why = (
                f", the rule {self.deploy_prior} picks"
                if self.deploy_prior
                else f", the best rule over {self.deploy_windows} windows"
                if self.deploy_windows > 1
                else ""
            )
            return f"model loses to {self.rule} by {pct} {where}: deploy {rule} (`{config}`{why}) ({scores})"
        why = (
            "the scores are equal"
            if self.model_score == self.rule_score
            else f"the {pct} difference is within the spread over seeds"
        )
        return f"model ties with {self.rule} {where}: {why}; {self.rule} (`{self.rule_config}`) does as well ({scores})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "objective": self.objective.to_dict(),
            "mode": self.deployment.to_dict(),
            "window": "validation",
            "model_score": self.model_score,
            "spread": self.spread,
            "seeds": self.seeds,
            "rule": self.rule,
            "rule_score": self.rule_score,
            "rule_config": self.rule_config,
            "gain": self.gain,
            "deploy_rule": self.replacement[0],
            "deploy_config": self.replacement[1],
            "deploy_windows": self.deploy_windows,
            "deploy_prior": self.deploy_prior,
            "line": self.line(),
            **dict(self.extra),
        }


def _num(v: float) -> str:
    if not math.isfinite(v):
        return str(v)
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}"


def _two_nums(a: float, b: float) -> tuple[str, str]:
    """``a`` and ``b`` as :func:`_num` prints them, with six significant digits where that would print two
    different scores alike (a loss of 0.03 % must not read "model 1.1, rule 1.1")."""
    short = _num(a), _num(b)
    if a == b or short[0] != short[1]:
        return short
    return f"{a:.6g}", f"{b:.6g}"


def _percent(gain: float) -> str:
    """``|gain|`` in percent: whole percents, or two significant digits below a half percent (never "0 %" for a
    difference that decided a loss)."""
    pct = 100 * abs(gain)
    return f"{pct:.0f} %" if pct >= 0.5 or pct == 0 else f"{pct:.2g} %"


def rule_over_windows(objective: Objective, windows: Mapping[str, RuleScores]) -> tuple[str, dict[str, float]]:
    """The rule with the best geometric mean, over ``windows``, of its score relative to each window's best rule
    (≥ 1, 1 where it was the best), and every rule's geometric mean; only rules scored in every window count,
    and compete (a window's best is the best of them).

    Ties go to the rule first in label order, so the choice is deterministic.
    """
    per_window = [w for w in windows.values() if w.best(objective) is not None]
    if not per_window:
        raise ValueError("no rule could be replayed on any window: no rule to choose")
    labels = sorted(
        set.intersection(*({label for label, s in w.scores.items() if math.isfinite(s) and s > 0} for w in per_window))
    )
    if not labels:
        raise ValueError("no rule was scored in every window: no rule to choose")
    pick = max if objective.higher_is_better else min
    means: dict[str, float] = {}
    for label in labels:
        logs = []
        for w in per_window:
            best = pick(w.scores[other] for other in labels)  # the best of the rules that compete
            score = w.scores[label]
            logs.append(math.log(best / score if objective.higher_is_better else score / best))
        means[label] = math.exp(sum(logs) / len(logs))
    chosen = min(labels, key=lambda label: (means[label], label))
    return chosen, means


@dataclass(frozen=True)
class Carryover:
    """How the best rule of one window ranked in the next one: ``rule``, the best on ``earlier`` (with ``tied``
    other rules of the same score), came ``rank``-th of the ``rules`` scored on both in ``later`` (1: the best there
    too; rules with equal scores share a rank; None where ``earlier`` scores every rule alike and has no best).
    ``correlation``: Spearman's rank correlation of all those rules' scores on the two windows (None where one
    window scores them all alike)."""

    earlier: str
    later: str
    rule: str
    tied: int
    rank: int | None
    rules: int
    correlation: float | None


def rank_carryover(objective: Objective, windows: Sequence[tuple[str, Mapping[str, float]]]) -> list[Carryover]:
    """:class:`Carryover` for each pair of consecutive ``windows`` (label, every rule's score), in their order.

    Why: a rule chosen on one window is deployed on the next.  Where the best rule of one window ranks far down the
    next one, the margin between the rules at the top of one window says little about the next, however large
    it is (issue 23: docs/results/learning*/report.md).  Only rules with a finite score on both windows count;
    of rules tied for the best, the first label in sorted order is named, so the result is deterministic."""
    sign = -1.0 if objective.higher_is_better else 1.0
    out = []
    for (earlier, before), (later, after) in itertools.pairwise(windows):
        labels = sorted(
            label for label in set(before) & set(after) if math.isfinite(before[label]) and math.isfinite(after[label])
        )
        if not labels:
            continue
        x = np.array([sign * before[label] for label in labels])
        y = np.array([sign * after[label] for label in labels])
        best = int(np.argmin(x))  # argmin keeps the first of equal scores: the first label
        tied = int(np.sum(x == x[best])) - 1
        rank = None if tied == len(labels) - 1 else 1 + int(np.sum(y < y[best]))
        out.append(Carryover(earlier, later, labels[best], tied, rank, len(labels), _spearman(x, y)))
    return out


def verdict_windows(verdict: Mapping[str, Any]) -> list[tuple[str, Mapping[str, float]]]:
    """The windows a verdict (:meth:`Verdict.to_dict`, a model file's) scored every rule on, in time order: the
    training window's parts (``--rule-windows``), then validation."""
    parts = verdict.get("rule_windows") or {}
    return [*parts.items(), ("validation", verdict["rules"])]


def _spearman(x: np.ndarray, y: np.ndarray) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None where either side is constant."""
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def carryover_line(carried: Sequence[Carryover]) -> str:
    """One line for the user on how far their windows' best rules carried over (empty: no pair of windows)."""
    if not carried:
        return ""
    pairs = "; ".join(_carried_text(c) for c in carried)
    return (
        f"rules window to window: {pairs}. A rule best by a small margin on one window is not thereby the best on "
        "the next."
    )


def _carried_text(c: Carryover) -> str:
    if c.rank is None:
        return f"every rule scored alike on {c.earlier}"
    tied = f" and {c.tied} tied with it" if c.tied else ""
    rho = "" if c.correlation is None else f" (rank correlation {c.correlation:.2f})"
    return f"the best on {c.earlier} ({c.rule}{tied}) ranked {_ordinal(c.rank)} of {c.rules} on {c.later}{rho}"


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


#: ``--rule-prior``'s name for the prior shipped with rlsched (:meth:`RulePrior.public`), and its file in this package.
PUBLIC_PRIOR = "public"
PUBLIC_PRIOR_FILE = "rule_prior_bsld.json"


def prior_projection(results: Mapping[str, Any], source: str) -> dict[str, Any]:
    """What a rule prior reads of a learning run's results.json (``source``): the objective, each trace's rules'
    validation scores, and the command that made them — the file :data:`PUBLIC_PRIOR_FILE` is."""
    return {
        "from": source,
        "command": results.get("command", ""),
        "settings": {"objective": results["settings"]["objective"]},
        "traces": [
            {
                "trace": row["trace"],
                "rules": {label: {"validation": v["validation"]} for label, v in row["rules"].items()},
            }
            for row in results["traces"]
        ],
    }


@dataclass(frozen=True)
class RulePrior:
    """Other sites' evidence for the rule to deploy: every rule's score on the validation window of each trace
    of a learning run (``rlsched learning``'s results.json), measured for one objective.

    :meth:`pick` is :func:`rule_over_windows` over those windows, a site's own trace left out (:meth:`without`):
    the rule good on every other log rather than best on the site's last window.
    """

    source: str
    objective: Objective
    #: trace name → rule label → its validation score there.
    windows: Mapping[str, Mapping[str, float]]

    @classmethod
    def from_results(cls, path: Path) -> RulePrior:
        """The prior a learning run's results.json holds; a ValueError naming the file and what is wrong."""
        try:
            data = json.loads(path.read_text())
            objective = Objective.from_dict(data["settings"]["objective"])
            windows = {
                str(row["trace"]): {str(label): float(v["validation"]) for label, v in row["rules"].items()}
                for row in data["traces"]
            }
        except OSError as exc:
            raise ValueError(f"{path}: cannot read the rule prior: {exc.strerror or exc}") from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{path}: not a JSON file (a learning run's results.json): {exc}") from exc
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(
                f"{path}: not a learning run's results.json (settings.objective and traces[].rules[].validation "
                f"expected; {type(exc).__name__}: {exc})"
            ) from exc
        if not windows:
            raise ValueError(f"{path}: the learning run holds no trace: no rule prior")
        return cls(str(path), objective, windows)

    @classmethod
    def public(cls) -> RulePrior:
        """The prior shipped with rlsched (``--rule-prior public``): the nine public logs' validation windows of the
        12,000-job learning table (docs/results/learning-12k), by bounded slowdown; :data:`PUBLIC_PRIOR_FILE`,
        regenerated by ``python scripts/export_rule_prior.py``."""
        with as_file(files("rlsched.workflow") / PUBLIC_PRIOR_FILE) as path:
            prior = cls.from_results(path)
        return replace(prior, source=f"{PUBLIC_PRIOR}: docs/results/learning-12k")

    def without(self, trace: str) -> RulePrior:
        """The prior without ``trace``'s own window (a site training on a trace of the run gets no say from it)."""
        return replace(self, windows={name: w for name, w in self.windows.items() if name != trace})

    def check(self, objective: Objective) -> None:
        """A ValueError naming the source unless the prior has a window and was measured for ``objective``."""
        if not self.windows:
            raise ValueError(f"{self.source}: no trace but the one trained on: no rule prior")
        if objective.to_dict() != self.objective.to_dict():
            raise ValueError(
                f"{self.source}: the rule prior was measured for {self.objective.label()}; this run judges by "
                f"{objective.label()} (--objective, [agent] objective)"
            )

    def pick(self, objective: Objective, candidates: Collection[str]) -> str:
        """Among ``candidates`` (the rules replayed on the site's validation window), the one with the best
        geometric mean of its ratio to each window's best (:func:`rule_over_windows`)."""
        self.check(objective)
        keep = set(candidates)
        chosen, _ = rule_over_windows(
            objective,
            {
                name: RuleScores(scores={label: s for label, s in w.items() if label in keep})
                for name, w in self.windows.items()
            },
        )
        return chosen

    def describe(self) -> str:
        """Where the pick comes from, for the verdict line."""
        return f"the validation windows of {len(self.windows)} other traces ({self.source})"


def outcome_of(objective: Objective, model_score: float, rule_score: float, spread: float) -> str:
    """One of :data:`OUTCOMES`: a model scoring ``model_score`` against a rule scoring ``rule_score``, where a
    difference within ``spread`` (over the seeds; with one seed 0, so only an exact one) is a tie."""
    diff = (model_score - rule_score) if objective.higher_is_better else (rule_score - model_score)
    return "ties" if diff == 0 or abs(diff) <= spread else "beats" if diff > 0 else "loses"


def judge(
    objective: Objective,
    deployment: Deployment,
    model_score: float,
    seed_scores: Sequence[float],
    rules: RuleScores,
    extra: Mapping[str, Any] | None = None,
    *,
    deploy: tuple[str, int] | None = None,
    prior: RulePrior | None = None,
) -> Verdict:
    """The verdict of a model scoring ``model_score`` (its seeds ``seed_scores``) against the best rule;
    ``deploy``: (the rule to deploy if it loses, how many windows chose it; default the best rule), or ``prior``
    chooses it (:meth:`RulePrior.pick` among the rules replayed here)."""
    best = rules.best(objective)
    if best is None:
        raise ValueError("no rule could be replayed on the validation window: nothing to judge the model against")
    rule_score = rules.scores[best]
    real = [s for s in seed_scores if math.isfinite(s)]
    spread = float(np.std(real)) if len(real) > 1 else 0.0
    diff = (model_score - rule_score) if objective.higher_is_better else (rule_score - model_score)
    gain = diff / abs(rule_score) if rule_score else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    outcome = outcome_of(objective, model_score, rule_score, spread)
    deploy_rule, deploy_windows = deploy if deploy is not None else (best, 1)
    if prior is not None:
        deploy_rule, deploy_windows = prior.pick(objective, rules.specs), len(prior.windows)
    if deploy_rule not in rules.specs:
        raise ValueError(f"rule {deploy_rule!r} to deploy was not replayed on the validation window")
    return Verdict(
        outcome,
        objective,
        deployment,
        float(model_score),
        spread,
        len(seed_scores),
        best,
        float(rule_score),
        config_line(rules.specs[best]),
        float(gain),
        dict(extra or {}),
        deploy_rule=deploy_rule,
        deploy_config=config_line(rules.specs[deploy_rule]),
        deploy_windows=deploy_windows,
        deploy_prior=prior.describe() if prior is not None else "",
    )
