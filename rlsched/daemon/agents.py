"""The daemon's agents: building one from ``[agent]``, and what the daemon reads from any agent.

The daemon drives any :class:`rlsched.core.view.Agent` (``decide(view) -> Decisions``).  Around it,
:class:`AgentHandle` adds what the daemon needs beyond the protocol: the state vector of P-grid §3.2
(for metrics and ``rlsched status``), the pending jobs in the agent's order with their scores, the
Q-value of chosen jobs, rewards received, and checkpoints (model and experience).

The policy comes from the registry (:mod:`rlsched.core.policies`): ``[agent] kind`` names it, or
``[agent] model`` names a saved model (:func:`start_agent`).  Scores: for the learned policies
(``sarsa-esn``, ``fqi-esn``, …) a job's score is its Q-value Q(s, a) under the current model; for
the rules (``interactive-first-sjf``, ``fcfs``, ``edf``, …) it is the rank turned around (the first
of n jobs scores n, the last 1): they have no value function.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from rlsched.core.agents import FixedRankAgent, SchedulingAgent, fcfs_order
from rlsched.core.explain import Explanation, RankKey, explain_rank
from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.policies import (
    BuildContext,
    PolicyError,
    PolicySpec,
    entry,
    file_sha256,
    format_policy,
    load_model,
    load_policy,
    read_policy_spec,
    read_verdict,
    save_policy,
)
from rlsched.core.policies import build_agent as build_policy
from rlsched.core.runtime import RequestedRuntime, RuntimeModel
from rlsched.core.scoring import ScoredRankAgent
from rlsched.core.view import Agent, ClusterView, Decisions, FloatArray, IntArray, PendingJobs, ScoringAgent
from rlsched.daemon.config import AgentConfig, DaemonConfig, Mode
from rlsched.errors import RlschedError


@runtime_checkable
class RankingAgent(Protocol):
    """An agent with a fixed ranking rule (``rank``: indices of ``view.pending``, best first)."""

    def rank(self, view: ClusterView) -> IntArray: ...


class AgentStartError(RlschedError, ValueError):
    """The configured policy or model cannot start (one line for the user)."""


def model_verdict(config: AgentConfig, mode: Mode) -> tuple[dict[str, Any] | None, str | None]:
    """The verdict ``[agent] model`` records (``rlsched train``) and a warning to log, if any.

    A model that loses to a rule on its validation window is refused in ``boost`` and ``gate`` mode
    (:class:`AgentStartError`, naming the rule to deploy instead) unless ``[agent] allow_losing_model =
    true``; ``shadow`` mode, which changes nothing in the batch system, runs it with a warning (watching a
    model decide is how a site checks it).  A model without a verdict (trained before models carried one)
    starts with a warning.  (None, None) without a model.
    """
    if config.model is None or not Path(config.model).is_file():
        return None, None  # no model, or a missing one: load_policy says so in its own words
    try:
        verdict = read_verdict(config.model)
    except PolicyError as exc:
        raise AgentStartError(str(exc)) from None
    if verdict is None:
        return None, (
            f"model {config.model} records no verdict (trained before `rlsched train` measured models "
            "against the rules): nothing shows it beats them; retrain it to get one"
        )
    if verdict.get("outcome") != "loses":
        return verdict, _still_pretraining(config.model, verdict)
    line = " ".join(str(verdict.get("line") or f"model loses to {verdict.get('rule')}").split())
    if mode == "shadow" and not config.allow_losing_model:
        return verdict, (
            f"model {config.model}: {line}; shadow mode only watches it (boost and gate refuse it "
            "unless [agent] allow_losing_model = true)"
        )
    if not config.allow_losing_model:
        raise AgentStartError(f"model {config.model}: {line}; set [agent] allow_losing_model = true to run it anyway")
    return verdict, f"model {config.model}: {line}; running it anyway ([agent] allow_losing_model = true)"


def _still_pretraining(model: str | Path, verdict: Mapping[str, Any]) -> str | None:
    """A warning for a model whose selected pass still followed its pretraining rule (``rlsched train`` records
    it): what was judged is that rule, and a daemon that goes on learning leaves it for an unjudged Q-function."""
    selected = verdict.get("selected")
    if not isinstance(selected, Mapping) or not selected.get("pretraining"):
        return None
    rule = str(verdict.get("pretrain_rule", "edf"))
    return (
        f"model {model}: its selected pass ended still following its pretraining rule {rule} "
        f"({selected.get('decisions')} decisions, fewer than pretrain_decisions): the verdict judged {rule}'s "
        "ranking, and a daemon that goes on learning ranks by a Q-function no validation judged once enough jobs "
        f'have started from its ranking; deploy [agent] kind = "{rule}" for the rule itself, or retrain on a window '
        "where more jobs queue"
    )


def agent_mode(mode: Mode) -> Literal["gate", "boost"]:
    """The core agents act by release (gate) or by ranking (boost); shadow mode ranks and acts never."""
    return "gate" if mode == "gate" else "boost"


def live_features(vos: Sequence[str]) -> FeatureConfig:
    """The feature layout of a live configuration (the default layout over its VOs)."""
    return FeatureConfig(n_vos=max(len(vos), 1))


def build_agent(config: AgentConfig, mode: Mode, vos: Sequence[str], vo_shares: Sequence[float] | None) -> Agent:
    """The agent of ``[agent] kind`` (a fresh one; :func:`start_agent` also loads models and checkpoints)."""
    spec = config.spec.bound(tuple(vos), live_features(vos).to_dict())
    try:
        return build_policy(spec, BuildContext(mode=agent_mode(mode), shares=vo_shares, live=True))
    except PolicyError as exc:
        raise AgentStartError(f"{config.label}: {exc}") from None


def _checkpoint_spec(path: Path) -> PolicySpec | None:
    """The spec of the daemon's own checkpoint, None when there is none."""
    if not path.exists():
        return None
    spec, _ = read_policy_spec(path)
    return spec


def start_agent(
    config: AgentConfig,
    mode: Mode,
    vos: Sequence[str],
    vo_shares: Sequence[float] | None,
    checkpoint: Path,
    class_rule: Mapping[str, Any] | None = None,
) -> tuple[AgentHandle, str]:
    """The agent the daemon starts with, and a line saying where it came from.

    - ``[agent] model``: the saved model, unless ``checkpoint`` (the daemon's own continued
      learning) descends from it — its spec records the model's path and sha256 — in which
      case the daemon resumes from the checkpoint.
    - a learned ``kind``: resumes from ``checkpoint`` when it holds that policy (same name and
      parameters); a fresh agent when there is no checkpoint.
    - a rule: built from the registry (nothing to load).

    ``class_rule``: the backend's class rule (``ClassRule.to_dict()``); a model trained for
    another rule (``rlsched train --config``) is refused.

    Every problem (a model built for other VOs, features or class rule, an old checkpoint, a
    checkpoint of another policy) is a one-line :class:`AgentStartError`.
    """
    how = agent_mode(mode)
    features = live_features(vos)
    try:
        if config.model is not None:
            model = Path(config.model)
            sha = file_sha256(model) if model.is_file() else ""
            source = {"path": str(model), "sha256": sha}
            resumed = _checkpoint_spec(checkpoint)
            start_from = checkpoint if resumed is not None and resumed.source == source else model
            # A learned agent or a scored policy's ranking agent (load_model tells them apart by the file's spec).
            agent, spec = load_model(
                start_from,
                expect_vos=tuple(vos),
                expect_features=features,
                expect_class_rule=class_rule,
                mode=how,
                live=True,
            )
            spec = spec.with_source(str(model), sha)
            if isinstance(agent, SchedulingAgent | ScoredRankAgent):
                agent.policy = spec.to_dict()
            where = (
                f"resumed from {checkpoint} (continued learning of model {model})"
                if start_from == checkpoint
                else f"loaded model {model} (sha256 {sha[:12]})"
            )
            # After the checks of fit (VOs, features, class rule): a model that cannot run here is refused for
            # that first, whatever its verdict.
            verdict, warning = model_verdict(config, mode)
            handle = AgentHandle(agent, len(vos), spec)
            handle.verdict, handle.warnings = verdict, [warning] if warning else []
            return handle, f"policy {spec.name}: {where}"
        spec = config.spec.bound(tuple(vos), features.to_dict())
        if entry(spec.name).family == "learned" and checkpoint.exists():
            saved = _checkpoint_spec(checkpoint)
            assert saved is not None
            if saved.name != spec.name or dict(saved.params) != dict(spec.params) or saved.source is not None:
                raise AgentStartError(
                    f"{checkpoint} holds the model of {saved.label()}"
                    + (f" (from {saved.source['path']})" if saved.source else "")
                    + f"; the config asks for {spec.label()}: move the file away to start afresh, or set "
                    f"[agent] model"
                )
            agent, spec = load_policy(checkpoint, expect_vos=tuple(vos), expect_features=features, mode=how, live=True)
            return AgentHandle(agent, len(vos), spec), f"policy {spec.name}: resumed from {checkpoint}"
        built = build_policy(spec, BuildContext(mode=how, shares=vo_shares, live=True))
        return AgentHandle(built, len(vos), spec), f"policy {config.label}"
    except PolicyError as exc:
        raise AgentStartError(str(exc)) from None


def start_configured_agent(config: DaemonConfig) -> AgentHandle:
    """The agent ``config`` deploys, built as the daemon builds it at start, read-only (``config check``,
    ``history predictor``); :class:`AgentStartError` in one line naming the config's ``agent`` key."""
    backend = config.backend
    class_rule = getattr(backend, "class_rule", None)
    try:
        handle, _ = start_agent(
            config.agent,
            config.mode,
            backend.vos,
            backend.vo_shares,
            config.model_file,
            class_rule.to_dict() if class_rule is not None else None,
        )
    except AgentStartError as exc:
        raise AgentStartError(f"{config.source}: key 'agent': {' '.join(str(exc).split())}") from None
    except (OSError, ValueError) as exc:
        raise AgentStartError(f"{config.source}: key 'agent': cannot load: {' '.join(str(exc).split())}") from None
    return handle


class AgentHandle:
    """What the daemon reads from an agent besides its decisions (see the module docstring)."""

    def __init__(self, agent: Agent, n_vos: int, spec: PolicySpec | None = None) -> None:
        self.agent = agent
        #: The policy that runs (bound to the config's VOs; with ``source`` when it came from a model file).
        self.spec = spec
        #: A model's verdict (``rlsched train``; None: a rule, or a model without one) and what to warn about.
        self.verdict: dict[str, Any] | None = None
        self.warnings: list[str] = []
        if isinstance(agent, SchedulingAgent):
            self.encoder = agent.encoder
            self.runtime: RuntimeModel = agent.runtime
        else:
            # The state vector is the MDP's (P-grid §3.2), whatever decides: ranking agents get one too.
            self.encoder = FeatureEncoder(FeatureConfig(n_vos=max(n_vos, 1)))
            self.runtime = getattr(agent, "runtime", None) or RequestedRuntime()
        self._rewarded_count, self._rewarded_sum = self._reward_totals()

    @property
    def learning(self) -> bool:
        return isinstance(self.agent, SchedulingAgent)

    @property
    def state_names(self) -> tuple[str, ...]:
        return self.encoder.state_names

    def decide(self, view: ClusterView) -> Decisions:
        return self.agent.decide(view)

    def state(self, view: ClusterView) -> FloatArray:
        return self.encoder.state(view, self.runtime)

    def ranking(self, view: ClusterView) -> tuple[IntArray, FloatArray]:
        """Indices of ``view.pending`` in the agent's order (best first) and each job's score.

        Agents that score jobs (:class:`rlsched.core.view.ScoringAgent`: Q-values of the learned
        policies, the turned-around rank of the rules) are sorted by score; other ranking agents give
        their rank; the rest keep the batch system's order.
        """
        pend = view.pending
        n = len(pend)
        if n == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        if isinstance(self.agent, ScoringAgent):
            scores = np.asarray(self.agent.pending_scores(view), dtype=np.float64)
            # Ties go first come, first served, as in the learned agents' boost mode.
            fcfs = fcfs_order(pend)
            return fcfs[np.argsort(-scores[fcfs], kind="stable")].astype(np.int64), scores
        order = self.agent.rank(view) if isinstance(self.agent, RankingAgent) else np.arange(n, dtype=np.int64)
        scores = np.empty(n)
        scores[order] = np.arange(n, 0, -1, dtype=np.float64)
        return order, scores

    def rank_keys(self, view: ClusterView) -> list[RankKey] | None:
        """A rule's sort key (``rlsched explain``); None for the learned agents (their reason is Q)."""
        if isinstance(self.agent, FixedRankAgent):
            return self.agent.rank_keys(view)
        return None

    def explain(self, view: ClusterView, job_id: int, nearest: int = 3) -> dict[str, Any]:
        """Why pending job ``job_id`` ranks where it does: its features, its score (Q-value, or the rule's key
        fields), its rank and the jobs ahead with what puts them there.  KeyError when it is not pending."""
        pend = view.pending
        rows = np.nonzero(pend.job_id == job_id)[0]
        if rows.size == 0:
            raise KeyError(job_id)
        i = int(rows[0])
        order, scores = self.ranking(view)
        keys = None if self.learning else self.rank_keys(view)
        why: Explanation = explain_rank(i, order, scores, keys, nearest)
        run_s = float(self.runtime.pending(pend)[i])
        vo = int(pend.vo[i])
        features = {
            "class": "interactive" if pend.job_class[i] == 1 else "batch",
            "vo": view.vos[vo] if 0 <= vo < len(view.vos) else str(vo),
            "cores": int(pend.cores[i]),
            "req_time_s": float(pend.req_time_s[i]),
            "est_runtime_s": run_s if np.isfinite(run_s) else None,
            "wait_s": float(view.time_s - pend.submit_s[i]),
            "held": bool(pend.held[i]),
        }
        return {
            "job_id": job_id,
            "policy": policy_label(self.spec, type(self.agent).__name__),
            "score_kind": "Q-value"
            if self.learning
            else "rank score (n for the first of n)"
            if keys is None
            else "rule",
            "features": features,
            "score": float(why.score),
            "rank": why.rank,
            "pending": why.n,
            "key": why.key_values,
            "ahead": [
                {
                    "job_id": int(pend.job_id[a.index]),
                    "rank": a.rank,
                    "reason": a.reason(),
                    "field": a.field,
                    "score_gap": a.score_gap,
                }
                for a in why.ahead
            ],
            "change": why.change,
        }

    def q_values(self, view: ClusterView, rows: IntArray) -> FloatArray:
        """Q(s, a) of the pending jobs ``rows`` (learning agents; NaN for the others)."""
        if not isinstance(self.agent, SchedulingAgent) or rows.size == 0:
            return np.full(rows.size, np.nan)
        agent = self.agent
        pend = view.pending
        run_s = agent.runtime.pending(pend)[rows]
        state = self.state(view)
        actions = agent.encoder.actions(_subset(pend, rows), run_s, view.time_s, view.total_cores)
        return np.asarray(agent.learner.q.scores(state, actions), dtype=np.float64)

    # -- rewards --------------------------------------------------------------------------
    def _reward_totals(self) -> tuple[int, float]:
        if not isinstance(self.agent, SchedulingAgent):
            return 0, 0.0
        rewards = self.agent.learner.memory.rewards
        done = np.isfinite(rewards)
        return int(done.sum()), float(rewards[done].sum())

    def new_rewards(self) -> tuple[int, float]:
        """How many rewards the learner received since the last call, and their sum.

        Read from the replay memory (a reward fills its transition's slot), so it works for any
        learner; when the memory drops its oldest transitions the count can only be undercounted.
        """
        count, total = self._reward_totals()
        new_count, new_sum = max(count - self._rewarded_count, 0), total - self._rewarded_sum
        self._rewarded_count, self._rewarded_sum = count, total
        return new_count, (new_sum if new_count else 0.0)

    # -- checkpoints ----------------------------------------------------------------------
    def save(self, path: Path) -> bool:
        """Write the model, experience and policy spec (atomically, :func:`rlsched.core.policies.save_policy`);
        False for agents with nothing to save."""
        if isinstance(self.agent, SchedulingAgent):
            spec = self.spec if self.spec is not None else PolicySpec.from_dict(self.agent.policy or {"name": "?"})
            save_policy(self.agent, spec, path)
            return True
        return False


def policy_label(spec: PolicySpec | None, fallback: str) -> str:
    """The policy that runs: its name with the non-default parameters (``fallback`` without a spec)."""
    if spec is None:
        return fallback
    return format_policy(spec.name, {k: v for k, v in spec.params.items() if entry(spec.name).param(k).default != v})


def _iso(epoch_s: float) -> str:
    return dt.datetime.fromtimestamp(epoch_s, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def policy_info(handle: AgentHandle, config: AgentConfig) -> dict[str, Any]:
    """What runs, for the heartbeat, ``rlsched status`` and the decision log: the policy's name and label,
    the model file it came from, its sha256 and when it was trained.

    "Trained" is the model's own ``trained_at`` (epoch seconds in its agent metadata or its policy spec)
    when the trainer wrote one, else the model file's modification time (``model_trained_from`` says which).
    """
    spec = handle.spec
    info: dict[str, Any] = {
        "policy": spec.name if spec is not None else config.kind,
        "policy_label": policy_label(spec, config.label),
        "model": None,
        "model_sha256": None,
        "model_trained": None,
        "model_trained_from": None,
    }
    if spec is None or not spec.source:
        return info
    path = Path(spec.source["path"])
    info["model"], info["model_sha256"] = str(path), spec.source.get("sha256") or None
    try:
        _, meta = read_policy_spec(path)
        policy_meta = meta.get("policy")
        trained = meta.get("trained_at", policy_meta.get("trained_at") if isinstance(policy_meta, dict) else None)
        if isinstance(trained, int | float) and not isinstance(trained, bool):
            info["model_trained"], info["model_trained_from"] = _iso(float(trained)), "model"
        else:
            info["model_trained"], info["model_trained_from"] = _iso(path.stat().st_mtime), "file mtime"
    except (PolicyError, OSError):
        pass  # the model moved since it was loaded: path and sha256 still say what runs
    return info


def _subset(pend: PendingJobs, rows: IntArray) -> PendingJobs:
    return PendingJobs(
        job_id=pend.job_id[rows],
        vo=pend.vo[rows],
        job_class=pend.job_class[rows],
        cores=pend.cores[rows],
        req_time_s=pend.req_time_s[rows],
        submit_s=pend.submit_s[rows],
        oracle_run_s=pend.oracle_run_s[rows],
        held=pend.held[rows],
        # Optional columns: empty (unknown for every job) stays empty, else one per kept job.
        user=pend.user[rows] if len(pend.user) else pend.user,
        executable=pend.executable[rows] if len(pend.executable) else pend.executable,
    )
