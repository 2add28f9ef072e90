"""The registry of policies: one entry per name, for the simulator, the experiments and the daemon.

Families:

- ``rule``: a fixed ranking rule, among them the field's (``sjf``, ``saf``, ``ljf``, ``smallest``, ``wfp3``,
  ``unicep``, ``f1``…``f4``: :mod:`rlsched.core.policies.rules`, docs/rules.md), each with ``backfill=`` and
  ``runtime_model=`` (the request, a prediction, or the oracle in a simulator).  A rule whose order is a
  static key of what is known at submit (class, requested time, cores, submit time) exposes that key
  (:attr:`PolicyEntry.static_key`): the simulator runs it on its native scheduler (a priority per job plus
  a backfill flag, its fast path) and the live ranking agent sorts the pending jobs by the very same function, ties
  broken by submit time, then job id (:func:`order_by_key`).
- ``learned``: the RL schedulers of P-grid (SARSA) and P-fqi (fitted Q) with an ESN, a
  feed-forward net or a table Q-function (:class:`rlsched.core.agents.SchedulingAgent`, or
  :class:`rlsched.core.agents.ElasticSchedulingAgent` with ``elastic=true``).
- ``replay``: ``native`` (alias ``recorded``), the schedule a trace recorded; simulator only.
- ``scored``: ``scored``, a weighted sum of job features (:mod:`rlsched.core.scoring`) whose weights a
  direct policy search found (:mod:`rlsched.sim.search`); a static key like the rules, and a saved
  model is its spec (:func:`rlsched.core.policies.io.load_model`).

A second small table names the leasing policies (FH §4: ``constant``, ``random``,
``qlearning``, ``daily``, ``state-aware-daily``, ``state-aware``; see :data:`LEASE_POLICIES`).

Everything here is pure: building an agent needs a :class:`BuildContext` (the mode, the VO
shares, the pool) that the simulator or the daemon fills in.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from rlsched.core.agents import (
    DEFAULT_EDF_W_TARGET,
    EDFAgent,
    ElasticSchedulingAgent,
    FCFSAgent,
    FixedRankAgent,
    Mode,
    SchedulingAgent,
    edf_deadline,
    tie_break_keys,
)
from rlsched.core.approximators import EchoStateQ, FeedForwardQ, TableQ
from rlsched.core.approximators.base import QFunction
from rlsched.core.explain import RankKey
from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.learners import BatchLearner, FittedQLearner, SarsaLearner
from rlsched.core.multifactor import DAY_S, MultifactorAgent, params_from_policy
from rlsched.core.objective import OBJECTIVES, Objective, ObjectiveError, parse_class_weights
from rlsched.core.plugins import PluginGroup
from rlsched.core.policies.columns import JobColumns, KeyFunction
from rlsched.core.policies.rules import (
    CLOCK_RULES,
    RULE_RUNTIME_MODELS,
    RUNTIME_FREE_RULES,
    WAIT_RULES,
    RuleAgent,
    static_rule_key,
)
from rlsched.core.policies.spec import PolicyError, PolicySpec, _format_value, split_policy
from rlsched.core.runtime import RUNTIME_MODELS, make_runtime_model, usable_requested
from rlsched.core.scoring import (
    FEATURES,
    LOG_FAMILY,
    ORIGIN_DEPENDENT,
    ScoredRankAgent,
    ScoringFunction,
    format_weights,
    parse_features,
    parse_weights,
)
from rlsched.core.view import Agent, ClusterView, IntArray, JobClass, PendingJobs

Family = Literal["rule", "learned", "scored", "replay"]

#: P-grid §4.1: the elastic pool never drops below 30 cores and changes at most every 15 minutes.
ELASTIC_MIN_CORES = 30
ELASTIC_HOLD_S = 900.0
ELASTIC_STEP_CORES = 10
#: Idle cores the ``-keepidle`` policies keep back by default (tuned on seeds ≥ 1000; docs/perez.md,
#: "Keeping cores idle").
KEEP_IDLE_CORES = 2


def order_by_key(key: KeyFunction, jobs: JobColumns) -> IntArray:
    """Indices of ``jobs`` in the order of ``key``, ties by submit time, then job id."""
    primary = key(jobs)
    return np.lexsort((jobs.job_id, jobs.submit_s, *reversed(primary))).astype(np.int64)


@dataclass(frozen=True)
class Param:
    """One parameter of a policy: its type, default and check (a message when bad, else None)."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    check: Callable[[Any], str | None] | None = None

    def coerce(self, policy: str, value: Any) -> Any:
        """``value`` (a string from a command line, or a TOML value) as this parameter's type."""
        where = f"policy {policy!r}: parameter {self.name!r}"
        if isinstance(value, str) and self.type is not str:
            text = value.strip().lower()
            try:
                if self.type is bool:
                    if text not in ("true", "false", "1", "0", "yes", "no"):
                        raise ValueError(text)
                    value = text in ("true", "1", "yes")
                elif self.type is int:
                    value = int(text)
                else:
                    value = float(text)
            except ValueError:
                raise PolicyError(f"{where}: expected {self.type.__name__}, got {value!r}") from None
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if (isinstance(value, bool) and self.type is not bool) or not isinstance(value, self.type):
            raise PolicyError(f"{where}: expected {self.type.__name__}, got {value!r}")
        if self.choices is not None and value not in self.choices:
            raise PolicyError(f"{where}: expected one of {', '.join(map(str, self.choices))}, got {value!r}")
        problem = self.check(value) if self.check is not None else None
        if problem:
            raise PolicyError(f"{where}: {problem}")
        return value


@dataclass(frozen=True)
class BuildContext:
    """What building an agent needs beyond its spec.

    ``mode``: gate or boost (:mod:`rlsched.core.agents`).  ``shares``: the VO target shares
    of the fairness part of the reward (None: no fairness term).  ``total_cores`` and
    ``start_s``: the rigid pool and the start of time (the elastic agent starts from them).
    ``live``: built for a live system (refuses what only a simulator knows, the oracle runtime).
    """

    mode: Mode = "gate"
    shares: Sequence[float] | None = None
    total_cores: int | None = None
    start_s: float = 0.0
    live: bool = False


@dataclass(frozen=True)
class PolicyEntry:
    """One registry name (see the module docstring)."""

    name: str
    family: Family
    description: str
    params: tuple[Param, ...] = ()
    build: Callable[[PolicySpec, BuildContext], Agent] | None = None
    #: The static key for the given parameters, None when the policy needs an agent.
    static: Callable[[Mapping[str, Any]], KeyFunction | None] | None = None
    #: Native path: EASY backfilling behind the queue head (for the given parameters).
    backfill: Callable[[Mapping[str, Any]], bool] = field(default=lambda params: False)

    @property
    def live(self) -> bool:
        """Can the daemon run it?"""
        return self.family != "replay"

    def static_key(self, params: Mapping[str, Any]) -> KeyFunction | None:
        return self.static(params) if self.static is not None else None

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise PolicyError(
            f"policy {self.name!r}: unknown parameter {name!r} "
            f"(known: {', '.join(p.name for p in self.params) or 'none'})"
        )


# ------------------------------------------------------------------------------ rules
def _no_key(jobs: JobColumns) -> tuple[np.ndarray, ...]:
    return ()


def _batch_last(jobs: JobColumns) -> np.ndarray:
    return (jobs.job_class != int(JobClass.INTERACTIVE)).astype(np.int64)


def _sjf_key(jobs: JobColumns) -> tuple[np.ndarray, ...]:
    return (jobs.req_time_s,)


def _interactive_first_key(jobs: JobColumns) -> tuple[np.ndarray, ...]:
    return (_batch_last(jobs),)


def _interactive_first_sjf_key(jobs: JobColumns) -> tuple[np.ndarray, ...]:
    return (_batch_last(jobs), jobs.req_time_s)


def edf_requested_key(w_target: float) -> KeyFunction:
    """EDF under the ``requested`` runtime model: :func:`rlsched.core.agents.edf_deadline`, a static key."""

    def key(jobs: JobColumns) -> tuple[np.ndarray, ...]:
        pend = PendingJobs(
            job_id=jobs.job_id,
            job_class=jobs.job_class,
            submit_s=jobs.submit_s,
            req_time_s=jobs.req_time_s,
            vo=np.zeros(jobs.job_id.size, dtype=np.int64),
            cores=jobs.cores,
            oracle_run_s=np.full(jobs.job_id.size, np.nan),
            held=np.zeros(jobs.job_id.size, dtype=bool),
        )
        return (edf_deadline(pend, usable_requested(jobs.req_time_s, jobs.job_class), w_target),)

    return key


#: What each field of the static keys is (``rlsched explain``): its name, unit and value labels.
KEY_FIELDS: dict[KeyFunction, tuple[tuple[str, str, tuple[str, ...] | None], ...]] = {
    _no_key: (),
    _sjf_key: (("requested time", " s", None),),
    _interactive_first_key: (("class", "", ("interactive", "batch")),),
    _interactive_first_sjf_key: (("class", "", ("interactive", "batch")), ("requested time", " s", None)),
}


class StaticKeyAgent(FixedRankAgent):
    """A rule that ranks pending jobs by a static key (:func:`order_by_key`); gate or boost mode."""

    def __init__(self, key: KeyFunction, mode: Mode = "gate") -> None:
        super().__init__(mode)
        self.key = key

    def rank(self, view: ClusterView) -> IntArray:
        return order_by_key(self.key, JobColumns.of(view.pending))

    def rank_keys(self, view: ClusterView) -> list[RankKey] | None:
        fields = KEY_FIELDS.get(self.key)
        if fields is None:
            return None
        values = self.key(JobColumns.of(view.pending))
        return [
            *(
                RankKey(name, np.asarray(v, dtype=np.float64), unit=unit, labels=labels)
                for (name, unit, labels), v in zip(fields, values, strict=True)
            ),
            *tie_break_keys(view.pending),
        ]


def _static_rule(
    name: str, description: str, key: KeyFunction, backfill: bool, agent: Callable[[BuildContext], Agent] | None = None
) -> PolicyEntry:
    def build(spec: PolicySpec, ctx: BuildContext) -> Agent:
        return agent(ctx) if agent is not None else StaticKeyAgent(key, ctx.mode)

    return PolicyEntry(name, "rule", description, (), build, lambda params: key, lambda params: backfill)


def _w_target_check(value: float) -> str | None:
    return None if 0.0 < value < 1.0 else f"must lie in (0, 1), got {value:g}"


def _non_negative(value: int) -> str | None:
    return None if value >= 0 else f"must be ≥ 0, got {value}"


def _positive(value: float) -> str | None:
    return None if value > 0 else f"must be > 0, got {value:g}"


def _unit_interval(value: float) -> str | None:
    return None if 0.0 <= value <= 1.0 else f"must lie in [0, 1], got {value:g}"


def _build_edf(spec: PolicySpec, ctx: BuildContext) -> Agent:
    runtime = _runtime(spec, ctx)
    return EDFAgent(runtime, ctx.mode, w_target=spec.params["w_target"])


def _runtime(spec: PolicySpec, ctx: BuildContext) -> Any:
    name = spec.params["runtime_model"]
    if ctx.live and name == "oracle":
        raise PolicyError(
            f"policy {spec.name!r}: runtime_model 'oracle' needs the actual runtimes, which only a "
            "simulator knows; use 'requested', 'user-last2' or 'learned'"
        )
    return make_runtime_model(name)


def _build_keepidle(spec: PolicySpec, ctx: BuildContext) -> Agent:
    if ctx.mode != "gate":
        raise PolicyError(f"policy {spec.name!r} keeps cores idle by holding jobs: it needs gate mode")
    return FCFSAgent(class_first=JobClass.INTERACTIVE, keep_idle_cores=spec.params["keep_idle_cores"])


_RUNTIME_PARAM_DOC = (
    "what the policy believes a job's runtime to be (P-grid §3.2): estimated, requested, oracle, "
    "user-last2 (EASY++) or learned (rlsched.core.prediction)"
)

# ------------------------------------------------------------------------------ the field's rules
#: How often the simulator re-prioritises the queue under a wait-reading rule (wfp3, unicep), Slurm's default
#: PriorityCalcPeriod (60 s costs 5x the time: 24 s for KTH-SP2's 28k jobs); live, the
#: daemon re-ranks at every poll.
DEFAULT_RULE_PASS_S = 300.0
#: The formula (rlsched.core.policies.rules) behind each field-rule name.
FIELD_RULES: dict[str, str] = {}


@dataclass(frozen=True)
class RuleSetup:
    """What the simulator's rule priority (rlsched.sim.rules) needs of a field rule's resolved spec."""

    formula: str
    runtime_model: str
    origin_s: float
    pass_s: float


def rule_setup(spec: PolicySpec) -> RuleSetup | None:
    """The field rule behind a resolved spec, None for any other policy."""
    formula = FIELD_RULES.get(spec.name)
    if formula is None:
        return None
    p = spec.params
    return RuleSetup(
        formula,
        str(p.get("runtime_model", "requested")),
        float(p.get("origin_s", 0.0)),
        float(p.get("pass_s", DEFAULT_RULE_PASS_S)),
    )


def _field_static(formula: str) -> Callable[[Mapping[str, Any]], KeyFunction | None]:
    def static(params: Mapping[str, Any]) -> KeyFunction | None:
        if formula in WAIT_RULES or params.get("runtime_model", "requested") != "requested":
            return None
        if formula == "sjf":
            return _sjf_key  # the request as given: sjf and easy-sjf order exactly as before
        key = static_rule_key(formula, float(params.get("origin_s", 0.0)))
        KEY_FIELDS.setdefault(key, ((f"{formula} score", "", None),))  # what `rlsched explain` shows
        return key

    return static


def _field_rule(name: str, formula: str, description: str, backfill_default: bool) -> PolicyEntry:
    """A field rule (rlsched.core.policies.rules): static key on the request, else a :class:`RuleAgent`."""
    params: list[Param] = []
    if formula not in RUNTIME_FREE_RULES:
        params.append(
            Param(
                "runtime_model",
                str,
                "requested",
                "the runtime r the rule orders by: requested, "
                "user-last2 (EASY++), learned (rlsched.core.prediction) or oracle (simulator only)",
                RULE_RUNTIME_MODELS,
            )
        )
    params.append(
        Param(
            "backfill",
            bool,
            backfill_default,
            "EASY backfilling behind the queue head (live: the batch system's own backfill does it)",
        )
    )
    if formula in CLOCK_RULES:
        params.append(
            Param(
                "origin_s",
                float,
                0.0,
                "the instant s counts from, on the submit clock (a trace's "
                "clock starts at 0; live, epoch seconds: set it to when the site's accounting began)",
            )
        )
    if formula in WAIT_RULES:
        params.append(
            Param(
                "pass_s",
                float,
                DEFAULT_RULE_PASS_S,
                "simulator: seconds between re-prioritisations of the queue",
                check=_positive,
            )
        )
    static = _field_static(formula)

    def build(spec: PolicySpec, ctx: BuildContext) -> Agent:
        key = static(spec.params)
        if key is not None:
            return StaticKeyAgent(key, ctx.mode)
        return RuleAgent(formula, _runtime(spec, ctx), ctx.mode, float(spec.params.get("origin_s", 0.0)))

    FIELD_RULES[name] = formula
    return PolicyEntry(name, "rule", description, tuple(params), build, static, lambda params: bool(params["backfill"]))


_FIELD_RULE_DOCS: tuple[tuple[str, str], ...] = (
    ("saf", "smallest area first (r·n)"),
    ("ljf", "longest job first (−r), for contrast"),
    ("smallest", "fewest cores first (n; RLScheduler's 'smallest')"),
    ("wfp3", "WFP3: highest (w/r)³·n first (w the current wait; a dynamic priority)"),
    ("unicep", "UNICEP: highest w/(log₂(n)·r) first (w the current wait; a dynamic priority)"),
    ("f1", "F1 (Carastan-Santos & de Camargo SC'17): log₁₀(r)·n + 870·log₁₀(s)"),
    ("f2", "F2 (SC'17): √r·n + 25600·log₁₀(s)"),
    ("f3", "F3 (SC'17): r·n + 6,860,000·log₁₀(s)"),
    ("f4", "F4 (SC'17): r·√n + 530,000·log₁₀(s)"),
)

RULES: tuple[PolicyEntry, ...] = (
    _static_rule("fcfs", "first come, first served, no backfilling", _no_key, False, lambda ctx: FCFSAgent(ctx.mode)),
    _static_rule(
        "easy",
        "FCFS order with EASY backfilling (Mu'alem & Feitelson 2001); live, the batch "
        "system's backfill does the backfilling",
        _no_key,
        True,
        lambda ctx: FCFSAgent(ctx.mode),
    ),
    _field_rule("sjf", "sjf", "shortest job first (r), no backfilling unless backfill=true", False),
    _field_rule("easy-sjf", "sjf", "shortest job first (r) with EASY backfilling", True),
    _static_rule(
        "interactive-first",
        "interactive jobs first, FCFS inside a class, EASY backfilling (the "
        "achievable anchor of the LAL-like workload, docs/workloads.md)",
        _interactive_first_key,
        True,
        lambda ctx: FCFSAgent(ctx.mode, class_first=JobClass.INTERACTIVE),
    ),
    _static_rule(
        "interactive-first-sjf",
        "interactive jobs first, then shortest requested time, then FCFS, "
        "EASY backfilling (the daemon's former 'fixed')",
        _interactive_first_sjf_key,
        True,
    ),
    PolicyEntry(
        "interactive-first-keepidle",
        "rule",
        "interactive first, FCFS inside a class; batch jobs never take the last keep_idle_cores idle cores "
        "(gate mode; the rule the -keepidle learners can learn)",
        (
            Param(
                "keep_idle_cores",
                int,
                KEEP_IDLE_CORES,
                "idle cores kept back for interactive arrivals",
                check=lambda v: None if v >= 1 else f"must be ≥ 1, got {v}",
            ),
        ),
        _build_keepidle,
    ),
    PolicyEntry(
        "edf",
        "rule",
        "earliest deadline first, deadline submit + run·(1/w_target − 1) (P-grid §3.3's pretraining policy); "
        "static (native fast path) with runtime_model=requested",
        (
            Param(
                "w_target",
                float,
                DEFAULT_EDF_W_TARGET,
                "the W a job meeting its deadline reaches (P-grid §5.2)",
                check=_w_target_check,
            ),
            Param("runtime_model", str, "estimated", _RUNTIME_PARAM_DOC, RUNTIME_MODELS),
            Param("backfill", bool, False, "native path only: EASY backfilling behind the queue head"),
        ),
        _build_edf,
        lambda params: edf_requested_key(params["w_target"]) if params["runtime_model"] == "requested" else None,
        lambda params: bool(params["backfill"]),
    ),
    *(
        _field_rule(name, name, f"{doc}; no backfilling unless backfill=true (docs/rules.md)", False)
        for name, doc in _FIELD_RULE_DOCS
    ),
)


# ------------------------------------------------------------------------------ learned
def make_q(kind: str, state_dim: int, action_dim: int, seed: int) -> QFunction:
    """The Q-function approximator ``kind`` (esn: P-grid §3.3; ffnn: P-fqi's "RL-NN"; table)."""
    if kind == "esn":
        return EchoStateQ(state_dim, action_dim, seed=seed)
    if kind == "ffnn":
        return FeedForwardQ(state_dim, action_dim, seed=seed)
    if kind == "table":
        # One split per input column at its middle (the features are scaled to [0, 1]).
        return TableQ(state_dim, action_dim, edges=[[0.5]] * (state_dim + action_dim))
    raise PolicyError(f"unknown Q-function {kind!r}")


def make_learner(learner: str, q: QFunction, seed: int, memory: int = 0) -> BatchLearner:
    """SARSA (P-grid §3.3) or fitted Q iteration (P-fqi Alg. 1) with the core's defaults.

    ``memory``: the most recent transitions the replay memory keeps (0: all of them).
    """
    bound = memory or None
    if learner == "sarsa":
        return SarsaLearner(q, seed=seed, max_transitions=bound)
    if learner == "fqi":
        return FittedQLearner(q, seed=seed, max_transitions=bound)
    raise PolicyError(f"unknown learner {learner!r}")


def feature_config(spec: PolicySpec) -> FeatureConfig:
    """The feature layout of a bound spec (the default layout for its VO count when none is recorded)."""
    if spec.features is not None:
        try:
            return FeatureConfig.from_dict(dict(spec.features))
        except (TypeError, ValueError) as exc:
            raise PolicyError(f"policy {spec.name!r}: bad feature layout ({exc})") from None
    return FeatureConfig(n_vos=max(len(spec.vos), 1))


#: ``pretrain_rule``'s default: P-grid §3.3's EDF on the learned agent's own runtime belief (not the ``edf`` rule
#: of the registry, which reads its own ``runtime_model``), so that models trained before the parameter are unchanged.
PRETRAIN_EDF = "edf"
#: Inside ``pretrain_rule`` a rule's own parameters are separated by ``;`` (``,`` separates the learned policy's).
PRETRAIN_PARAM_SEPARATOR = ";"


def pretrain_rule_spec(text: str) -> PolicySpec:
    """The rule spec a ``pretrain_rule`` value names (``sjf``, ``f4``, ``saf:runtime_model=learned``, parameters
    separated by ``;``); a one-line :class:`PolicyError` for anything but a ``rule``-family entry."""
    spec = parse_policy(text.replace(PRETRAIN_PARAM_SEPARATOR, ","))
    family = entry(spec.name).family
    if family != "rule":
        raise PolicyError(
            f"pretrain_rule {text!r}: {spec.name!r} is a {family} policy; pretraining follows a rule "
            f"({', '.join(e.name for e in POLICIES.values() if e.family == 'rule')})"
        )
    return spec


def pretrain_rule_text(spec: PolicySpec) -> str:
    """The ``pretrain_rule`` value naming ``spec``: its non-default parameters joined by ``;``."""
    e = entry(spec.name)
    named = sorted((k, v) for k, v in spec.params.items() if e.param(k).default != v)
    return spec.name + (
        ":" + PRETRAIN_PARAM_SEPARATOR.join(f"{k}={_format_value(v)}" for k, v in named) if named else ""
    )


def _check_pretrain_rule(text: str) -> str | None:
    if text == PRETRAIN_EDF:
        return None
    try:
        pretrain_rule_spec(text)
    except PolicyError as exc:
        return str(exc)
    return None


def _pretrain_ranker(spec: PolicySpec, ctx: BuildContext) -> FixedRankAgent | None:
    """The rule agent a learned spec pretrains on, built through the registry in the agent's mode (None: EDF)."""
    text = spec.params["pretrain_rule"]
    if text == PRETRAIN_EDF:
        return None
    rule = pretrain_rule_spec(text).bound(spec.vos, None)
    agent = build_agent(rule, ctx)
    if not isinstance(agent, FixedRankAgent):
        raise PolicyError(f"policy {spec.name!r}: pretrain_rule {text!r} does not rank jobs")
    return agent


def reward_objective(params: Mapping[str, Any]) -> Objective:
    """The objective a learned spec's ``reward`` and ``reward_weights`` name (``interactive=3;batch=1``)."""
    return Objective(params["reward"], parse_class_weights(_weight_items(params["reward_weights"])))


def _weight_items(text: str) -> list[str]:
    return [item for item in (part.strip() for part in text.split(";")) if item]


def _check_reward_weights(text: str) -> str | None:
    try:
        Objective("W", parse_class_weights(_weight_items(text)))
    except ObjectiveError as exc:
        return str(exc)
    return None


def _learned_builder(learner_kind: str, q_kind: str) -> Callable[[PolicySpec, BuildContext], Agent]:
    def build(spec: PolicySpec, ctx: BuildContext) -> Agent:
        p = spec.params
        enc = FeatureEncoder(feature_config(spec))
        runtime = _runtime(spec, ctx)
        pretrain_rule = _pretrain_ranker(spec, ctx)
        reward = reward_objective(p)
        if p["elastic"]:
            if reward != Objective("W"):
                raise PolicyError(
                    f"policy {spec.name!r}: elastic=true is rewarded by P-grid's λ·W + (1 − λ)·U (reward=W, no "
                    "reward_weights)"
                )
            if ctx.live:
                raise PolicyError(
                    f"policy {spec.name!r}: elastic=true resizes the pool, which only the simulator can do"
                )
            if ctx.total_cores is None:
                raise PolicyError(f"policy {spec.name!r}: elastic=true needs the rigid pool size")
            max_cores = p["pool_max_cores"] or 2 * ctx.total_cores
            learner = make_learner(
                learner_kind, make_q(q_kind, enc.state_dim, enc.action_dim + 1, p["seed"]), p["seed"], p["memory"]
            )
            return ElasticSchedulingAgent(
                learner,
                enc,
                runtime,
                pool_options=range(p["pool_min_cores"], max_cores + 1, p["pool_step_cores"]),
                initial_cores=ctx.total_cores,
                start_s=ctx.start_s,
                min_cores=p["pool_min_cores"],
                hold_s=p["pool_hold_s"],
                lam=p["lam"],
                mode=ctx.mode,
                pretrain_decisions=p["pretrain_decisions"],
                keep_idle_cores=p["keep_idle_cores"],
                pretrain_rule=pretrain_rule,
            )
        learner = make_learner(
            learner_kind, make_q(q_kind, enc.state_dim, enc.action_dim, p["seed"]), p["seed"], p["memory"]
        )
        return SchedulingAgent(
            learner,
            enc,
            runtime,
            shares=ctx.shares,
            lam=p["lam"],
            mode=ctx.mode,
            pretrain_decisions=p["pretrain_decisions"],
            keep_idle_cores=p["keep_idle_cores"],
            pretrain_rule=pretrain_rule,
            reward=reward,
        )

    return build


#: The replay memory's default bound.  Above every experiment's decision count (LAL-like 9,500 jobs, the
#: LPC-EGEE windows 12,000, CTC-SP2 77,222), so the papers' runs keep all their experience; what it bounds
#: is a daemon learning for months, whose re-fits (one pass over the memory) and model file would
#: otherwise grow without end (all of LPC-EGEE, 220,695 jobs: 226 MB unbounded).
DEFAULT_MEMORY_TRANSITIONS = 100_000
#: A learned policy's runtime input by default: the online regression of :mod:`rlsched.core.prediction`
#: (issue 23: the learned predictor is the ESN agents' per-job runtime input).  P-grid's own input, the class
#: median over a sliding window, is ``runtime_model=estimated``; the papers' experiments name it.  Measured on
#: the nine whole traces (sarsa-esn, boost mode, bounded slowdown, test window): better beyond the seeds' spread
#: on six, worse on none (docs/workflow.md, after "What the learner is rewarded for").
LEARNED_RUNTIME_DEFAULT = "learned"


def _learned_params(keep_idle_default: int) -> tuple[Param, ...]:
    return (
        Param("runtime_model", str, LEARNED_RUNTIME_DEFAULT, _RUNTIME_PARAM_DOC, RUNTIME_MODELS),
        Param("lam", float, 0.5, "λ of the reward λ·W + (1 − λ)·F (P-grid §3.2)", check=_unit_interval),
        Param(
            "reward",
            str,
            "W",
            "what the learner is rewarded for: W (P-grid's λ·W + (1 − λ)·F), or the objective bsld or wait "
            "(`rlsched train` sets it to its --objective)",
            tuple(OBJECTIVES),
        ),
        Param(
            "reward_weights",
            str,
            "",
            "class weights of the reward, separated by ';' (interactive=3); `rlsched train` sets its --class-weight",
            check=_check_reward_weights,
        ),
        Param(
            "keep_idle_cores",
            int,
            keep_idle_default,
            "gate mode: idle cores the agent may learn to keep for interactive arrivals (0: never)",
            check=_non_negative,
        ),
        Param(
            "pretrain_decisions",
            int,
            500,
            "EDF decisions before the learned policy acts (P-grid §3.3)",
            check=_non_negative,
        ),
        Param(
            "pretrain_rule",
            str,
            PRETRAIN_EDF,
            "the rule followed (and recorded) while pretraining: edf (P-grid §3.3, on the agent's runtime belief) "
            "or any rule spec, its parameters separated by ';' (saf, f4, sjf:runtime_model=learned); "
            "`rlsched train --pretrain-rule best` picks the best rule on the training window",
            check=_check_pretrain_rule,
        ),
        Param("seed", int, 0, "random seed (exploration, ESN reservoir, FFNN weights)"),
        Param(
            "memory",
            int,
            DEFAULT_MEMORY_TRANSITIONS,
            "replay memory: the most recent transitions kept and re-fitted on (0: all; the oldest tenth "
            "goes when it is full)",
            check=lambda v: None if v == 0 or v >= 2 else f"must be 0 or ≥ 2, got {v}",
        ),
        Param("elastic", bool, False, "simulator only: also choose the pool size every period (P-grid §3.2/§4.1)"),
        Param(
            "pool_min_cores",
            int,
            ELASTIC_MIN_CORES,
            "elastic: smallest pool (P-grid §4.1)",
            check=lambda v: None if v >= 1 else f"must be ≥ 1, got {v}",
        ),
        Param("pool_max_cores", int, 0, "elastic: largest pool (0: twice the rigid pool)", check=_non_negative),
        Param(
            "pool_step_cores",
            int,
            ELASTIC_STEP_CORES,
            "elastic: step between pool sizes",
            check=lambda v: None if v >= 1 else f"must be ≥ 1, got {v}",
        ),
        Param(
            "pool_hold_s",
            float,
            ELASTIC_HOLD_S,
            "elastic: least time between pool changes (P-grid §4.1)",
            check=_positive,
        ),
    )


_LEARNED_DOC = {
    "sarsa": "SARSA (P-grid §3.1–3.3)",
    "fqi": "fitted Q iteration (P-fqi Alg. 1)",
    "esn": "an Echo State Network Q-function",
    "ffnn": "a feed-forward net Q-function",
    "table": "a lookup-table Q-function (one split per column)",
}


def _learned(name: str, learner: str, q: str, keep_idle: int = 0, extra: str = "") -> PolicyEntry:
    description = f"{_LEARNED_DOC[learner]} with {_LEARNED_DOC[q]}, EDF pretraining{extra}"
    return PolicyEntry(name, "learned", description, _learned_params(keep_idle), _learned_builder(learner, q))


LEARNED: tuple[PolicyEntry, ...] = (
    _learned("sarsa-esn", "sarsa", "esn"),
    _learned(
        "sarsa-esn-keepidle",
        "sarsa",
        "esn",
        KEEP_IDLE_CORES,
        f"; may keep up to {KEEP_IDLE_CORES} idle cores for interactive arrivals",
    ),
    _learned("sarsa-ffnn", "sarsa", "ffnn"),
    _learned("sarsa-table", "sarsa", "table"),
    _learned("fqi-esn", "fqi", "esn"),
    _learned("fqi-ffnn", "fqi", "ffnn"),
    _learned("fqi-table", "fqi", "table"),
)


# ------------------------------------------------------------------------------ Slurm's own
def _build_multifactor(spec: PolicySpec, ctx: BuildContext) -> Agent:
    p = spec.params
    if p["slurm_conf"] or p["sshare"]:
        raise PolicyError(
            f"policy {spec.name!r}: slurm_conf= and sshare= name files, which the simulator and "
            "the CLI read (rlsched.sim.policies.expand_site_files); give the values here instead"
        )
    try:
        params = params_from_policy(p)
    except ValueError as exc:
        raise PolicyError(f"policy {spec.name!r}: {exc}") from None
    return MultifactorAgent(params, spec.vos, mode=ctx.mode, cores_per_node=p["cores_per_node"])


def _non_negative_float(value: float) -> str | None:
    return None if value >= 0 else f"must be ≥ 0, got {value:g}"


MULTIFACTOR_PARAMS: tuple[Param, ...] = (
    Param("weight_age", float, 1000.0, "PriorityWeightAge", check=_non_negative_float),
    Param("weight_fairshare", float, 10000.0, "PriorityWeightFairshare", check=_non_negative_float),
    Param("weight_job_size", float, 1000.0, "PriorityWeightJobSize", check=_non_negative_float),
    Param("weight_partition", float, 0.0, "PriorityWeightPartition", check=_non_negative_float),
    Param("weight_qos", float, 0.0, "PriorityWeightQOS", check=_non_negative_float),
    Param("max_age_s", float, 7 * DAY_S, "PriorityMaxAge, seconds", check=_positive),
    Param("half_life_s", float, 7 * DAY_S, "PriorityDecayHalfLife, seconds (0: no decay)", check=_non_negative_float),
    Param("calc_period_s", float, 300.0, "PriorityCalcPeriod, seconds", check=_positive),
    Param("fair_tree", bool, True, "Fair Tree (false: the classic formula, PriorityFlags=NO_FAIR_TREE)"),
    Param("favor_small", bool, False, "PriorityFavorSmall"),
    Param(
        "damp_factor",
        float,
        1.0,
        "FairShareDampeningFactor (classic only)",
        check=lambda v: None if v >= 1 else f"must be ≥ 1, got {v:g}",
    ),
    Param(
        "charge_at_end",
        bool,
        True,
        "charge a job's usage since the last pass when it ends (Slurm does only under AccountingStorageEnforce=limits)",
    ),
    Param("shares", str, "", "raw shares per account (VO), ACCOUNT:SHARES/ACCOUNT:SHARES… (1 when absent)"),
    Param("users", bool, False, "simulator: one user association per SWF user in each account (else one per account)"),
    Param(
        "cores_per_node",
        int,
        1,
        "cores of a node, for the job size factor's node term",
        check=lambda v: None if v >= 1 else f"must be ≥ 1, got {v}",
    ),
    Param("backfill", bool, True, "simulator: EASY backfilling behind the queue head (Slurm's sched/backfill)"),
    Param("slurm_conf", str, "", "a slurm.conf whose Priority* keys replace the defaults (explicit parameters win)"),
    Param("sshare", str, "", "a saved `sshare -a -P -l` whose account shares are used"),
)

SLURM_RULES: tuple[PolicyEntry, ...] = (
    PolicyEntry(
        "multifactor",
        "rule",
        "Slurm's priority/multifactor (age, Fair Tree or classic fair-share with decayed usage, job size, "
        "partition, QOS) re-computed every PriorityCalcPeriod, with EASY backfilling: what a Slurm site runs "
        "today (docs/multifactor.md)",
        MULTIFACTOR_PARAMS,
        _build_multifactor,
        None,
        lambda params: bool(params["backfill"]),
    ),
)

REPLAY: tuple[PolicyEntry, ...] = (
    PolicyEntry("native", "replay", "the schedule the trace recorded (start = submit + recorded wait); simulator only"),
)
#: Other names of registry entries.
ALIASES: dict[str, str] = {"recorded": "native"}

POLICIES: dict[str, PolicyEntry] = {e.name: e for e in (*RULES, *SLURM_RULES, *LEARNED, *REPLAY)}
#: Which learner and Q-function each learned name stands for (saved models are rebuilt from it).
LEARNED_PARTS: dict[str, tuple[str, str]] = {e.name: (e.name.split("-")[0], e.name.split("-")[1]) for e in LEARNED}


# ------------------------------------------------------------------------------ leasing
#: FH §4's leasing policies and the live controller's: name → description (``rlsched sim policies`` lists them).
LEASE_POLICIES: dict[str, str] = {
    "constant": "simulator: lease up to a fixed V all along (FH §4.1's static baseline)",
    "random": "simulator: V uniform in 0..M each period (FH §4.1)",
    "qlearning": "simulator: tabular Q-learning over V (FH §5)",
    "daily": "simulator: V once a day from the day's start, learned from FH's daily clones (DailyCapLearner)",
    "state-aware-daily": "simulator: the state-aware cap evaluated at the day's start and held for the day",
    "state-aware": "simulator and live: the state-aware cap with threshold θ at every scheduling pass (a per-pass "
    "transfer rule; the same code in both)",
    "fixed": "live: V = max_nodes (Slurm's plain power saving, bounded by the budget)",
}
#: The leasing policies of the simulator's FH sweeps (rlsched.sim.sweep), in table order.
SIM_LEASE_POLICIES: tuple[str, ...] = ("constant", "random", "qlearning", "daily", "state-aware-daily", "state-aware")
#: The simulator's former names of the state-aware policies → their names now.  Deprecated: accepted with a
#: warning (:func:`lease_policy`) for one release, then removed.
DEPRECATED_LEASE_POLICIES: dict[str, str] = {"ours": "state-aware", "ours-daily": "state-aware-daily"}
_warned_lease_names: set[str] = set()
#: The leasing policies of the live controller (``[leasing] policy``, rlsched.leasing.config).
LIVE_LEASE_POLICIES: tuple[str, ...] = ("state-aware", "fixed")

#: Tong §6.3's task-to-machine dispatch policies (rlsched.sim.dispatch), in the order of Tong Figs. 8–11,
#: then the learner variants.  Each policy's random stream is spawned by its position here, so new names
#: go at the end (they leave the streams of the others unchanged).
DISPATCH_POLICIES: tuple[str, ...] = (
    "qlearning",
    "nlp",
    "ect",
    "min-min",
    "max-min",
    "suffrage",
    "random",
    "qlearning-neg",
    "qlearning-delayed",
    "qlearning-neg-delayed",
)


# ------------------------------------------------------------------------------ lookup
def lease_policy(name: str, stacklevel: int = 2) -> str:
    """The leasing policy ``name`` stands for: ``name`` itself, or the name now of a deprecated one
    (:data:`DEPRECATED_LEASE_POLICIES`), with a ``FutureWarning`` the first time each old name is used
    (``stacklevel`` as :func:`warnings.warn`'s, counted from the caller of this function)."""
    new = DEPRECATED_LEASE_POLICIES.get(name)
    if new is None:
        return name
    if name not in _warned_lease_names:
        _warned_lease_names.add(name)
        warnings.warn(
            f"the leasing policy name {name!r} is deprecated: use {new!r} (the old name goes in the next release)",
            FutureWarning,
            stacklevel=stacklevel + 1,
        )
    return new


def entry(name: str) -> PolicyEntry:
    """The registry entry ``name`` (or alias); a one-line :class:`PolicyError` naming the known ones."""
    load_policy_plugins()
    found = POLICIES.get(ALIASES.get(name, name))
    if found is None and name in PLUGINS.broken:
        raise PolicyError(str(PLUGINS.broken[name]))
    if found is None:
        aliases = ", ".join(f"{alias} (= {target})" for alias, target in ALIASES.items())
        raise PolicyError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}; aliases: {aliases}")
    return found


def resolve(spec: PolicySpec | str, **overrides: Any) -> PolicySpec:
    """A spec with every parameter typed, checked and defaulted; ``overrides`` win over the spec's."""
    if isinstance(spec, str):
        spec = parse_policy(spec)
    e = entry(spec.name)
    given = {**spec.params, **overrides}
    params = {p.name: p.default for p in e.params}
    for key, value in given.items():
        params[key] = e.param(key).coerce(e.name, value)
    named = (spec.explicit if spec.explicit is not None else frozenset(spec.params)).union(overrides)
    return PolicySpec(e.name, params, spec.vos, spec.features, spec.source, spec.class_rule, named)


def parse_policy(text: str) -> PolicySpec:
    """``"sarsa-esn:lam=1,keep_idle_cores=2"`` → a resolved :class:`PolicySpec`."""
    name, raw = split_policy(text)
    return resolve(PolicySpec(name, raw))


def static_key(spec: PolicySpec) -> KeyFunction | None:
    """The static key of a resolved spec, or None when it must run as an agent (or is a replay)."""
    return entry(spec.name).static_key(spec.params)


def backfill(spec: PolicySpec) -> bool:
    return entry(spec.name).backfill(spec.params)


def build_agent(spec: PolicySpec, ctx: BuildContext | None = None) -> Agent:
    """The core agent of a resolved (and, for learned policies, bound) spec."""
    e = entry(spec.name)
    context = ctx or BuildContext()
    if e.build is None:
        raise PolicyError(
            f"policy {e.name!r} replays a trace's recorded schedule; it cannot decide "
            + ("on a live system" if context.live else "as an agent")
        )
    if context.live and e.family == "learned" and spec.params.get("elastic"):
        raise PolicyError(f"policy {spec.name!r}: elastic=true resizes the pool, which only the simulator can do")
    try:
        return e.build(spec, context)
    except PolicyError:
        raise
    except ValueError as exc:
        raise PolicyError(f"policy {spec.label()}: {exc}") from None


def describe() -> list[tuple[str, str, str]]:
    """(name, family, description) of every entry, registry order (``rlsched sim policies``)."""
    load_policy_plugins()
    return [(e.name, e.family, e.description) for e in POLICIES.values()]


# ------------------------------------------------------------------------------ scored (direct policy search)
def scoring_function(params: Mapping[str, Any]) -> ScoringFunction:
    """The scoring function of a resolved ``scored`` spec (its ``features`` and ``weights``); a one-line
    :class:`PolicyError` when they do not match."""
    try:
        function = ScoringFunction(parse_features(params["features"]), parse_weights(params["weights"]))
    except ValueError as exc:
        raise PolicyError(f"policy 'scored': {exc}") from None
    if function.reads_prediction == (params["runtime_model"] == "requested"):
        raise PolicyError(
            "policy 'scored': log_pred and runtime_model go together (runtime_model=user-last2, "
            "learned or oracle with log_pred; requested without: the request is log_req)"
        )
    return function


def _scoring_key(params: Mapping[str, Any]) -> KeyFunction | None:
    function = scoring_function(params)
    if function.reads_prediction:
        return None  # known once the job's runtime is predicted: the simulator's dynamic priority

    def key(jobs: JobColumns) -> tuple[np.ndarray, ...]:
        return (function.score_jobs(jobs.req_time_s, jobs.cores, jobs.submit_s, jobs.job_class),)

    return key


def _check_features(text: str) -> str | None:
    names = parse_features(text)
    unknown = [n for n in names if n not in FEATURES]
    if unknown:
        return f"unknown feature(s) {', '.join(unknown)}; known: {', '.join(FEATURES)}"
    tied = sorted(ORIGIN_DEPENDENT.intersection(names))
    if tied:
        return (
            f"{', '.join(tied)} depends on where time starts, which a live scheduler does not have; the "
            f"wait enters as submit_h"
        )
    return None if names else "must name at least one feature"


def _check_weights(text: str) -> str | None:
    try:
        weights = parse_weights(text)
    except ValueError as exc:
        return str(exc)
    return None if all(np.isfinite(weights)) else "must be finite"


def _build_scored(spec: PolicySpec, ctx: BuildContext) -> Agent:
    function = scoring_function(spec.params)
    return ScoredRankAgent(function, ctx.mode, _runtime(spec, ctx) if function.reads_prediction else None)


SCORED: tuple[PolicyEntry, ...] = (
    PolicyEntry(
        "scored",
        "scored",
        "a scoring function of what is known at submit (log requested time, log cores, their product, the "
        "wait, optionally a predicted runtime), its weights found by direct policy search on the simulated "
        "objective (rlsched.sim.search); lower score first, a static key without prediction (native fast "
        "path), EASY backfilling by default",
        (
            Param(
                "features",
                str,
                "/".join(LOG_FAMILY),
                "the features, '/'-separated (rlsched.core.scoring.FEATURES)",
                check=_check_features,
            ),
            Param(
                "weights",
                str,
                format_weights((1.0, 0.0, 0.0, 0.0)),
                "one weight per feature, '/'-separated (the default ranks as easy-sjf)",
                check=_check_weights,
            ),
            Param(
                "runtime_model",
                str,
                "requested",
                "the runtime behind log_pred: user-last2, learned "
                "(rlsched.core.prediction) or oracle (simulator only); requested when no feature reads one",
                RULE_RUNTIME_MODELS,
            ),
            Param("backfill", bool, True, "EASY backfilling behind the queue head (live: the batch system's own)"),
        ),
        _build_scored,
        _scoring_key,
        lambda params: bool(params["backfill"]),
    ),
)
POLICIES.update({e.name: e for e in SCORED})


# ------------------------------------------------------------------------------ plugins
#: The entry-point group through which other packages add policies: each entry point gives a
#: :class:`PolicyEntry` or a tuple of them (docs/extending.md).
PLUGIN_GROUP = "rlsched.policies"
_BUILT_IN = frozenset(POLICIES) | frozenset(ALIASES)


def _plugin_entries(value: Any) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else (value,)


def _check_plugin(name: str, value: Any) -> str | None:
    entries = _plugin_entries(value)
    wrong = [type(e).__name__ for e in entries if not isinstance(e, PolicyEntry)]
    if wrong or not entries:
        return f"gives {', '.join(wrong) or 'nothing'}, not a PolicyEntry (or a tuple of them)"
    clash = [e.name for e in entries if e.name in _BUILT_IN]
    return f"policy {clash[0]!r} is built into rlsched" if clash else None


#: The policies of the entry points; the name of one that cannot be loaded is its error (by entry-point name).
PLUGINS = PluginGroup(
    PLUGIN_GROUP, _check_plugin, lambda name, value: POLICIES.update({e.name: e for e in _plugin_entries(value)})
)


def load_policy_plugins(reload: bool = False) -> None:
    """Add the policies of the ``rlsched.policies`` entry points to the registry (once per process, the
    first time it is consulted; ``reload``: again, for a package installed since)."""
    PLUGINS.load(reload)
