"""Agents: a :class:`ClusterView` in, :class:`Decisions` out, for any backend.

Two ways of acting, chosen per agent (``mode``):

- ``gate`` (P-grid §3.2's greedy allocation): the backend holds every job on submit and
  the agent releases held jobs, one decision per job, while cores are idle — never idle
  while a job that fits waits.  The release budget is the idle cores minus the cores of
  pending jobs that are not held (released earlier but not started yet), so releases
  never exceed idle cores even when the backend is slow to start released jobs.
  Output: ``Decisions(release=(ids in decision order))``.
- ``boost``: the agent ranks every pending job and the backend makes them start in that
  order.  Output: ``Decisions(boost=(ranked ids))``.  Learning agents rank with their
  current Q-function (EDF while pretraining, the top job ε-greedy) and learn from what
  started: at the next view, each job of the last ranking that has started since is one
  decision (the state of that view, the jobs it ranked still waiting as the candidates),
  recorded in start order as gate mode records its releases (:class:`SchedulingAgent`).

Agents here:

- :class:`FCFSAgent`: first come, first served; with ``class_first`` a fixed-priority
  variant (one class always ahead, FCFS inside).
- :class:`EDFAgent`: earliest deadline first, the pretraining policy of P-grid §3.3.
- :class:`SchedulingAgent`: the RL scheduler of P-grid (SARSA) or P-fqi (fitted Q), with
  EDF pretraining, delayed rewards ``R_s = λ_s W + (1 − λ_s) F``.
- :class:`ElasticSchedulingAgent`: the elastic provisioning MDP of P-grid §3.2/§4.1; the
  action also sets the pool size for the next period, returned as
  ``Decisions.lease_cap`` = the number of cores of the pool (every core of the elastic
  pool is leased), reward ``R_e = λ_e W + (1 − λ_e) U``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from rlsched.core.blas import single_blas_thread
from rlsched.core.explain import RankKey
from rlsched.core.features import FeatureConfig, FeatureEncoder, StateAggregates
from rlsched.core.learners.base import BatchLearner
from rlsched.core.objective import Objective
from rlsched.core.rewards import (
    FairnessTracker,
    UtilizationTracker,
    elastic_reward,
    responsiveness,
    scheduling_reward,
)
from rlsched.core.runtime import EstimatedRuntime, RuntimeModel
from rlsched.core.view import ClusterView, Decisions, FloatArray, IntArray, JobClass, PendingJobs

Mode = Literal["gate", "boost"]
#: How the responsiveness part of a decision's reward is credited (see :class:`SchedulingAgent`).
Credit = Literal["incurred", "election"]
CREDITS: tuple[Credit, ...] = ("incurred", "election")

#: What the learner is rewarded for by default: P-grid's λ·W + (1 − λ)·F (the ``W`` objective).
PGRID_REWARD = Objective("W")
#: A decision's reward under the ``wait`` objective is in job-hours (a scale near the other objectives').
WAIT_REWARD_SCALE_S = 3600.0

#: EDF deadline target: P-grid §5.2 counts a job as served well when W > 0.9 ("off the
#: optimum by 10 % or less").
DEFAULT_EDF_W_TARGET = 0.9


def fcfs_order(jobs: PendingJobs) -> IntArray:
    """Indices of ``jobs`` by submit time, then job id (a total, deterministic order)."""
    return np.lexsort((jobs.job_id, jobs.submit_s)).astype(np.int64)


def tie_break_keys(jobs: PendingJobs) -> list[RankKey]:
    """The tie-breaks of every rule: first come (submit time), then the lower job id."""
    return [RankKey("submit time", jobs.submit_s, epoch=True), RankKey("job id", jobs.job_id.astype(np.float64))]


def release_budget(view: ClusterView, total_cores: int | None = None) -> int:
    """Cores a gate-mode agent may still fill: idle cores minus released-but-not-started jobs.

    ``total_cores`` overrides the pool size (elastic agents resize it this very decision).
    """
    pend = view.pending
    in_flight = int(pend.cores[~pend.held].sum())
    busy = view.total_cores - view.idle_cores
    pool = view.total_cores if total_cores is None else total_cores
    return max(pool - busy - in_flight, 0)


def greedy_fill(order: IntArray, cores: IntArray, budget: int) -> IntArray:
    """Walk ``order`` and keep each job whose cores still fit in ``budget`` (never idle while one fits)."""
    if budget <= 0 or order.size == 0:
        return np.zeros(0, dtype=np.int64)
    need = cores[order]
    if np.all(need == need[0]):  # same-size jobs (e.g. serial grid jobs): a prefix
        return order[: budget // max(int(need[0]), 1)]
    taken: list[int] = []
    smallest = int(need.min())
    for idx, c in zip(order.tolist(), need.tolist(), strict=True):
        if budget < smallest:
            break
        if c <= budget:
            taken.append(idx)
            budget -= c
    return np.asarray(taken, dtype=np.int64)


def edf_deadline(jobs: PendingJobs, run_s: FloatArray, w_target: float = DEFAULT_EDF_W_TARGET) -> FloatArray:
    """Deadline of each job: the latest start that still gives ``W ≥ w_target``.

    From P-grid Eq. 1, ``W = run / (run + wait) ≥ w*`` ⇔ ``wait ≤ run (1/w* − 1)``, so the
    deadline is ``submit + run (1/w* − 1)``: short (interactive) jobs get early deadlines,
    which is what the responsiveness utility rewards.  P-grid §3.3 pretrains with "an
    early deadline first policy" without defining the deadline; this is our definition.
    """
    if not 0.0 < w_target < 1.0:
        raise ValueError(f"EDF: w_target must lie in (0, 1), got {w_target}")
    return jobs.submit_s + run_s * (1.0 / w_target - 1.0)


class FixedRankAgent:
    """Agents with a fixed ranking rule; gate or boost mode."""

    def __init__(self, mode: Mode = "gate") -> None:
        if mode not in ("gate", "boost"):
            raise ValueError(f"agent mode must be 'gate' or 'boost', got {mode!r}")
        self.mode: Mode = mode

    @property
    def ranks_by_queue(self) -> bool:
        """Whether the ranking at an instant depends only on the jobs submitted, started and finished so far,
        never on the clock itself (no wait term): then a poll with no such event since the previous one ranks
        as that one did, and a replay may skip it (:func:`rlsched.sim.boost.simulate_boost`)."""
        return False

    def rank(self, view: ClusterView) -> IntArray:
        """Indices of ``view.pending``, best first."""
        raise NotImplementedError

    def rank_keys(self, view: ClusterView) -> list[RankKey] | None:
        """The fields :meth:`rank` sorts by, most significant first, tie-breaks included (``rlsched explain``);
        None when the rule cannot say."""
        return None

    def observe(self, view: ClusterView) -> None:
        """Feed the rule what :meth:`decide` feeds it from every view, whatever is pending (a runtime model's
        finished jobs); a learned agent pretraining on this rule calls it at every view, then :meth:`rank`."""

    def pending_scores(self, view: ClusterView) -> FloatArray:
        """The rank turned around (the first of n jobs scores n, the last 1): a rule has no value function."""
        order = self.rank(view)
        scores = np.empty(order.size, dtype=np.float64)
        scores[order] = np.arange(order.size, 0, -1, dtype=np.float64)
        return scores

    def decide(self, view: ClusterView) -> Decisions:
        pend = view.pending
        if len(pend) == 0:
            return Decisions()
        order = self.rank(view)
        if self.mode == "boost":
            return Decisions(boost=tuple(pend.job_id[order].tolist()))
        held = order[pend.held[order]]
        picks = greedy_fill(held, pend.cores, release_budget(view))
        return Decisions(release=tuple(pend.job_id[picks].tolist()))


class FCFSAgent(FixedRankAgent):
    """First come, first served; ``class_first`` puts one class ahead (fixed priority).

    ``keep_idle_cores`` (gate mode, with ``class_first``): jobs of the other class never
    take the last ``keep_idle_cores`` idle cores (except that one starts when nothing would
    run otherwise), so that jobs of the first class arriving later start at once — the
    rule :class:`SchedulingAgent`'s "no job" action can learn, as a fixed baseline.
    """

    def __init__(self, mode: Mode = "gate", class_first: JobClass | None = None, keep_idle_cores: int = 0) -> None:
        super().__init__(mode)
        if keep_idle_cores < 0 or (keep_idle_cores and (class_first is None or mode != "gate")):
            raise ValueError("FCFS agent: keep_idle_cores needs gate mode and class_first, and must be ≥ 0")
        self.class_first = class_first
        self.keep_idle_cores = keep_idle_cores

    def decide(self, view: ClusterView) -> Decisions:
        if not self.keep_idle_cores or len(view.pending) == 0:
            return super().decide(view)
        pend = view.pending
        order = self.rank(view)
        held = order[pend.held[order]]
        first = pend.job_class[held] == int(self.class_first)  # type: ignore[arg-type]
        budget = release_budget(view)
        picks_first = greedy_fill(held[first], pend.cores, budget)
        budget -= int(pend.cores[picks_first].sum())
        rest = held[~first]
        rest_budget = budget - self.keep_idle_cores
        if view.total_cores - budget == 0 and rest.size:  # nothing would run: one job starts anyway
            rest_budget = max(rest_budget, int(pend.cores[rest].min()))
        picks_rest = greedy_fill(rest, pend.cores, rest_budget)
        return Decisions(release=tuple(pend.job_id[np.concatenate([picks_first, picks_rest])].tolist()))

    def rank_keys(self, view: ClusterView) -> list[RankKey] | None:
        pend = view.pending
        keys = tie_break_keys(pend)
        if self.class_first is None:
            return keys
        first = int(self.class_first)
        behind = (pend.job_class != first).astype(np.float64)
        other = "batch" if self.class_first == JobClass.INTERACTIVE else "interactive"
        return [RankKey("class", behind, labels=(self.class_first.name.lower(), other)), *keys]

    def rank(self, view: ClusterView) -> IntArray:
        pend = view.pending
        if self.class_first is None:
            return fcfs_order(pend)
        behind = (pend.job_class != int(self.class_first)).astype(np.int64)
        return np.lexsort((pend.job_id, pend.submit_s, behind)).astype(np.int64)


class EDFAgent(FixedRankAgent):
    """Earliest deadline first (:func:`edf_deadline`), the pretraining policy of P-grid §3.3."""

    def __init__(
        self, runtime: RuntimeModel | None = None, mode: Mode = "gate", w_target: float = DEFAULT_EDF_W_TARGET
    ) -> None:
        super().__init__(mode)
        self.runtime: RuntimeModel = runtime if runtime is not None else EstimatedRuntime()
        self.w_target = w_target

    def rank_keys(self, view: ClusterView) -> list[RankKey] | None:
        pend = view.pending
        deadline = edf_deadline(pend, self.runtime.pending(pend), self.w_target)
        return [RankKey("deadline", deadline, epoch=True), *tie_break_keys(pend)]

    def rank(self, view: ClusterView) -> IntArray:
        pend = view.pending
        deadline = edf_deadline(pend, self.runtime.pending(pend), self.w_target)
        return np.lexsort((pend.job_id, pend.submit_s, deadline)).astype(np.int64)

    def observe(self, view: ClusterView) -> None:
        self.runtime.observe(view)

    def decide(self, view: ClusterView) -> Decisions:
        self.observe(view)
        return super().decide(view)


@dataclass
class _OpenDecision:
    """A decision whose reward is not complete yet.

    The reward ``λ·w_part + (1 − λ)·other_part`` is handed to the learner once both parts
    are known: ``other_part`` (F, or U in the elastic MDP) when the job finishes, ``w_part``
    when the job finishes (``election`` credit) or when the next decision closes this
    decision's interval (``incurred`` credit).
    """

    decision_id: int
    service_before: FloatArray | None
    w_part: float | None = None
    other_part: float | None = None


@dataclass
class _Ranking:
    """What boost mode needs of its last ranking to learn from the starts that follow it: the view's
    aggregates and each ranked job's action row, cores, belief of runtime, VO, class and rank."""

    job_id: IntArray
    actions: FloatArray
    agg: StateAggregates
    cores: IntArray
    run_s: FloatArray
    vo: IntArray
    job_class: IntArray
    rank: IntArray
    service: FloatArray | None


class SchedulingAgent:
    """The RL scheduler: picks which pending job goes next with a learned Q-function.

    Each release in gate mode is one decision (state, job) recorded by the learner; its
    reward ``R_s = λ W + (1 − λ) F`` (P-grid §3.2) arrives when the job finishes.  The
    first ``pretrain_decisions`` decisions follow EDF (P-grid §3.3: "the RL system is
    pre-trained off-line with an early deadline first policy.  After a few learning
    sweeps using the collected rewards, the network can start to take its own
    decisions"); then ``pretrain_sweeps`` re-fits run and ε-greedy control begins.
    Set ``pretrain_decisions=0`` to skip pretraining (for example after loading a model).
    ``pretrain_rule`` generalises EDF to any ranking rule (issue 23: pretrain from the best
    rule on the training window): while pretraining the agent follows that rule's ranking
    (:meth:`FixedRankAgent.observe` at every view, then its ranking) instead of EDF, and records its choices
    exactly as EDF's — gate mode: the first candidate in the rule's order that fits; boost
    mode: the rule's whole ranking.  None (the default) is EDF on the agent's own runtime
    belief, as before.

    In boost mode the agent ranks and the batch system starts; a decision is then a start
    observed at the next view (:meth:`_record_starts`): the state is that of the view that
    ranked (updated job by job as gate mode updates it between releases), the candidates
    are the jobs it ranked that had not started, the choice the job that did — whether the
    ranking, the base order or the backfill started it.  Rewards and credit are gate
    mode's.

    Credit of the responsiveness part (``credit``):

    - ``election`` (P-grid §3.2 read literally): the W part of a decision's reward is W of
      the job it elected, ``run / (run + wait)``.  That W is mostly *sunk* when the job is
      elected (its wait has already happened), while the cost of the decision — the W the
      jobs left in the queue lose while they wait longer — reaches the learner only as other
      decisions' rewards, through states that do not describe the queued jobs.  On the
      LAL-like workload this biases the learned Q toward batch jobs (their W hardly moves
      with the wait): electing an interactive job that has waited 100 s is "worth" 0.65,
      a batch job 0.99.  Measured (``benchmarks/diag_perez_learning.py``, tuning seeds):
      greedy picks between an interactive and a batch job went to the interactive one only
      4–20 % of the time, and interactive W stayed at the FCFS level.
    - ``incurred`` (default): the same total, re-timed.  The W part of decision t is
      ``1 − L_t / m``, where ``L_t`` is the W that the queued jobs lose between this
      decision's view and the next view that elects jobs (job j "loses"
      ``W_j(a) − W_j(b)`` over ``[a, b]``, with ``W_j(t) = r_j / (r_j + t − submit_j)`` and
      ``r_j`` the runtime model's belief), shared by the ``m`` decisions of that view.
      Every job loses ``1 − W_j`` in total while it waits, so over a run
      ``Σ_t (1 − L_t/m) = Σ_j W_j`` (exactly with the oracle model): the objective of
      P-grid is unchanged, only *when* each loss is counted.  This is potential-based
      reward shaping (Ng, Harada & Russell, ICML 1999) with potential
      ``Φ(s) = Σ_{queued j} W_j(now)``, which leaves the optimal policy of the undiscounted
      objective unchanged; it puts the cost of leaving an interactive job in the queue on
      the decision that left it there.  The fairness (or utilization) part is the paper's,
      computed when the job finishes.

    What is rewarded (``reward``, an :class:`rlsched.core.objective.Objective`): ``W`` (the default) is
    P-grid's ``λ W + (1 − λ) F`` as above, its W part weighted by class when the objective has class
    weights.  ``bsld`` and ``wait`` train the learner for the site's objective instead (issue 23: "the learner
    is trained for it"): the same ``incurred`` credit with the potential ``Φ(s) = Σ_{queued j} v_j(now)``,
    ``v_j`` the job's bounded slowdown or its wait, so that decision t is rewarded ``−L_t / m`` (``L_t``: what
    the queued jobs' objective grew by in its interval, class-weighted; the wait in hours).  The slowdown is
    counted on the actual runtime where the view carries it (a simulator replay, i.e. training) and on the
    runtime model's belief live: a reward is a training signal, the Q-function's inputs stay what a live
    scheduler knows (measured, ``benchmarks/diag_learned_reward.py``: on the belief, the class median, every
    short job of a class accrues alike and the reward cannot tell which to start first).  Over a replay the
    rewards then add up to minus the objective's sum over the jobs, less each job's value on arrival (1 for
    bsld, 0 for wait), which no decision can change.  There is no fairness
    part: a machine that runs every job moves F by less than 0.001 (measured on the learning table's
    traces), and the site's objective names what it wants.  These two need the ``incurred`` credit.

    Keeping cores idle (``keep_idle_cores``, 0 = P-grid's greedy allocation): when at most
    that many cores are left to fill and something runs, the candidates of a learned
    decision also hold the "no job" action (:meth:`FeatureEncoder.null_action`, both class
    columns zero) unless an interactive job is among them (a core kept back is for interactive
    jobs still to come; one that waits already is served best by starting it); choosing
    it leaves the remaining cores idle until the next view.  A non-preemptive scheduler
    can only serve an interactive job at once if a core is free when it arrives, and at
    the LAL-like load a busy machine frees one every ~430 s
    (docs/workloads.md): interactive-first tops out near W 0.91, while keeping one core back
    for arrivals reaches 0.97 (``benchmarks/diag_perez_learning.py``, tuning seeds).  The
    choice is learned, not a rule: its W part is the ``incurred`` credit of its interval (an
    interactive job that arrives to a full machine charges its wait to the decision that
    filled the last core), its other part is F (or U) as it stands.  It is never offered
    during EDF pretraining, nor when nothing runs (a later event must bring a new view), and
    it needs the ``incurred`` credit (``election`` has no W to credit a decision that elects
    no job).
    """

    def __init__(
        self,
        learner: BatchLearner,
        encoder: FeatureEncoder,
        runtime: RuntimeModel,
        shares: Sequence[float] | None = None,
        *,
        lam: float = 0.5,
        mode: Mode = "gate",
        pretrain_decisions: int = 500,
        pretrain_sweeps: int = 5,
        edf_w_target: float = DEFAULT_EDF_W_TARGET,
        learn: bool = True,
        credit: Credit = "incurred",
        keep_idle_cores: int = 0,
        pretrain_rule: FixedRankAgent | None = None,
        reward: Objective = PGRID_REWARD,
    ) -> None:
        if mode not in ("gate", "boost"):
            raise ValueError(f"agent mode must be 'gate' or 'boost', got {mode!r}")
        if credit not in CREDITS:
            raise ValueError(f"agent: credit must be one of {CREDITS}, got {credit!r}")
        if not 0.0 <= lam <= 1.0:
            raise ValueError(f"agent: λ must lie in [0, 1], got {lam}")
        if keep_idle_cores < 0:
            raise ValueError(f"agent: keep_idle_cores must be ≥ 0, got {keep_idle_cores}")
        if keep_idle_cores and credit != "incurred":
            # ``election`` credits a decision with W of the job it elects; "no job" elects none.
            raise ValueError("agent: keep_idle_cores needs the 'incurred' credit")
        if reward.name != "W" and credit != "incurred":
            raise ValueError(f"agent: the {reward.name} reward needs the 'incurred' credit")
        expected = encoder.action_dim + self._extra_action_columns()
        if learner.q.state_dim != encoder.state_dim or learner.q.action_dim != expected:
            raise ValueError(
                f"agent: Q-function takes state {learner.q.state_dim} / action "
                f"{learner.q.action_dim}, features give {encoder.state_dim} / {expected}"
            )
        self.learner = learner
        self.encoder = encoder
        #: The policy spec (:meth:`rlsched.core.policies.PolicySpec.to_dict`) saved with the model, if any.
        self.policy: dict[str, Any] | None = None
        self.runtime = runtime
        n_vos = encoder.config.n_vos
        self.fairness = FairnessTracker(shares if shares is not None else [1.0] * n_vos)
        self.use_fairness = shares is not None
        self.lam = lam
        self.mode: Mode = mode
        self.pretrain_decisions = pretrain_decisions
        self.pretrain_sweeps = pretrain_sweeps
        self.edf_w_target = edf_w_target
        #: The rule followed while pretraining (None: EDF on this agent's runtime belief).
        self.pretrain_rule = pretrain_rule
        self.learn = learn
        self.decisions = 0
        self.pretraining = learn and pretrain_decisions > 0
        self.credit: Credit = credit
        #: The objective the rewards follow (see the class docstring).
        self.reward = reward
        self.keep_idle_cores = keep_idle_cores
        self.kept_idle = 0
        self._open: dict[int, _OpenDecision] = {}  # by job id, until the job finishes
        # ``incurred`` credit: the decisions of the last view that elected jobs, the W the
        # queue has lost since that view, and the time up to which the loss is counted.
        self._interval_group: list[_OpenDecision] = []
        self._interval_loss = 0.0
        self._loss_clock_s: float | None = None
        self._ranking: _Ranking | None = None  # boost mode: the last ranking, until the next view

    # -- hooks for the elastic variant ----------------------------------------------------
    def _extra_action_columns(self) -> int:
        return 0

    def _with_pool(self, actions: FloatArray, pool_cores: int) -> FloatArray:
        return actions

    def _other_part(self, view: ClusterView, vo: int, work: float, opened: _OpenDecision) -> float:
        """F of the elected job (P-grid Eq. 2); without target shares there is no deficit and F = 1."""
        if self.use_fairness and opened.service_before is not None:
            return float(self.fairness.election_fairness(opened.service_before, vo, work)[0])
        return 1.0

    def _combine(self, w_part: float, other_part: float) -> float:
        """``R_s = λ W + (1 − λ) F`` (P-grid §3.2); the objective's part alone for ``bsld`` and ``wait``."""
        if self.reward.name != "W":
            return w_part
        return float(scheduling_reward(w_part, other_part, self.lam))

    def _choose_pool(
        self, view: ClusterView, agg: StateAggregates, actions: FloatArray, candidates: IntArray
    ) -> int | None:
        return None

    def _pool_size(self, view: ClusterView) -> int:
        return view.total_cores

    # -- observing ------------------------------------------------------------------------
    @single_blas_thread
    def observe(self, view: ClusterView) -> None:
        """Learn from ``view``: runtimes, fairness accounting, rewards of finished jobs, re-fits."""
        self.runtime.observe(view)
        if self.learn and self.credit == "incurred":
            self._accrue_waiting_loss(view)
            if len(view.pending) == 0:
                # Nothing queued loses W any more: settle now rather than at the next electing view,
                # which on a quiet live system may be hours away (the reward would wait with it).
                self._close_interval()
        if self.mode == "boost":
            self._record_starts(view)  # before the finished jobs: a job may have started and ended since
        fin = view.finished
        if self.learn and len(fin) and self._open:
            w_all = responsiveness(fin.run_s, fin.wait_s) * self.reward.weights(fin.job_class)
            work = np.maximum(fin.run_s, 0.0) * fin.cores
            for i, jid in enumerate(fin.job_id.tolist()):
                opened = self._open.pop(jid, None)
                if opened is None:
                    continue
                opened.other_part = self._other_part(view, int(fin.vo[i]), float(work[i]), opened)
                if self.credit == "election":
                    opened.w_part = float(w_all[i])
                self._deliver(opened)
        self._after_finished(view)
        if not self.learn:
            return
        if self.pretraining and self.decisions >= self.pretrain_decisions:
            self.learner.refit(sweeps=self.pretrain_sweeps)
            self.pretraining = False
        elif not self.pretraining:
            self.learner.maybe_refit()

    def _after_finished(self, view: ClusterView) -> None:
        self.fairness.observe(view)

    def _deliver(self, opened: _OpenDecision) -> None:
        """Hand the reward to the learner once both of its parts are known."""
        if opened.w_part is not None and opened.other_part is not None:
            self.learner.reward(opened.decision_id, self._combine(opened.w_part, opened.other_part))

    def _accrue_waiting_loss(self, view: ClusterView) -> None:
        """Add what the pending jobs lost since the previous view (``incurred`` credit): W, or their bounded
        slowdown's or wait's growth (the ``reward`` objective), class-weighted."""
        now = view.time_s
        since = self._loss_clock_s
        self._loss_clock_s = now
        pend = view.pending
        # Accrued even while no decision is open: that loss is charged to the next electing view's
        # decisions, so that the rewards still add up to Σ W_j.
        if since is None or len(pend) == 0 or now <= since:
            return
        run = self.runtime.pending(pend)
        before = np.maximum(since - pend.submit_s, 0.0)
        after = np.maximum(now - pend.submit_s, 0.0)
        # W by its one definition (1 for a zero-length job that has not waited): an estimated runtime
        # of 0 for a job submitted at ``since`` would otherwise make 0/0 here.
        if self.reward.name != "W" and len(pend.oracle_run_s):
            # A reward is a training signal, not an input: where the view knows the actual runtime (a simulator
            # replay) the slowdown is counted on it, as the objective counts it; live (NaN) the belief stands in.
            run = np.where(np.isfinite(pend.oracle_run_s), pend.oracle_run_s, run)
        grown = self.reward.values(run, after) - self.reward.values(run, before)
        lost = -grown if self.reward.higher_is_better else grown
        self._interval_loss += float(np.sum(self.reward.weights(pend.job_class) * lost))

    def _close_interval(self) -> None:
        """A new view elects jobs: the previous electing view's decisions get their W part."""
        group = self._interval_group
        if not group:
            return  # the loss so far carries over to the next group
        share = self._interval_loss / len(group)
        if self.reward.name == "W":
            w_part = 1.0 - share
        else:
            w_part = -share / (WAIT_REWARD_SCALE_S if self.reward.name == "wait" else 1.0)
        for opened in group:
            opened.w_part = w_part
            self._deliver(opened)
        self._interval_group = []
        self._interval_loss = 0.0

    # -- deciding -------------------------------------------------------------------------
    @single_blas_thread
    def decide(self, view: ClusterView) -> Decisions:
        self.observe(view)
        pend = view.pending
        run_s = self.runtime.pending(pend)
        agg = self.encoder.aggregates(view, self.runtime, run_s)
        order = fcfs_order(pend)
        candidates = order[pend.held[order]] if self.mode == "gate" else order
        base_actions = self.encoder.actions(pend, run_s, view.time_s, view.total_cores)
        # The pretraining rule sees every view while it leads, as its own decide would (its runtime model learns
        # from each), and ranks when something is pending; never after pretraining.
        rule_rank = None
        if self.pretraining and self.pretrain_rule is not None:
            self.pretrain_rule.observe(view)
            if len(pend):
                rule_rank = self.pretrain_rule.rank(view)
        new_pool = self._choose_pool(view, agg, base_actions, candidates)
        pool = self._pool_size(view)
        if self.mode == "boost":
            if len(pend) == 0:
                return Decisions(lease_cap=new_pool)
            ranked = self._rank(view, agg, self._with_pool(base_actions[order], pool), run_s, order, rule_rank)
            return Decisions(boost=tuple(pend.job_id[ranked].tolist()), lease_cap=new_pool)
        released = self._gate(view, agg, base_actions, run_s, candidates, pool, rule_rank)
        return Decisions(release=released, lease_cap=new_pool)

    def _pretrain_keys(self, pend: PendingJobs, run_s: FloatArray, rule_rank: IntArray | None) -> FloatArray:
        """While pretraining, each pending job's place in the leading rule's order, lower first: EDF's
        deadline (:func:`edf_deadline`) without a ``pretrain_rule``, else the job's rank in its ranking."""
        if rule_rank is None:
            return edf_deadline(pend, run_s, self.edf_w_target)
        position = np.empty(len(pend), dtype=np.float64)
        position[rule_rank] = np.arange(rule_rank.size, dtype=np.float64)
        return position

    def _rank(
        self,
        view: ClusterView,
        agg: StateAggregates,
        actions: FloatArray,
        run_s: FloatArray,
        order: IntArray,
        rule_rank: IntArray | None = None,
    ) -> IntArray:
        """Boost mode: indices of ``view.pending``, best first (``actions``: the rows of ``order``).

        While pretraining, EDF's order (P-grid §3.3, as gate mode's first decisions) or the ranking
        ``rule_rank`` of the ``pretrain_rule``; then by Q, with the top
        job ε-greedy when learning (one uniform draw per ranking, as gate mode's ``select``).  The ranking is
        kept for :meth:`_record_starts`.
        """
        pend = view.pending
        if self.pretraining:
            by = np.argsort(self._pretrain_keys(pend, run_s, rule_rank)[order], kind="stable")
        else:
            scores = self.learner.q.scores(self.encoder.state_vector(agg), actions)
            by = np.argsort(-scores, kind="stable")
            rng = self.learner.rng
            if self.learn and rng.random() < self.learner.epsilon:
                pick = int(rng.integers(order.size))
                by = np.concatenate([[pick], by[by != pick]])
        rank = np.empty(order.size, dtype=np.int64)
        rank[by] = np.arange(order.size, dtype=np.int64)
        self._ranking = _Ranking(
            job_id=pend.job_id[order],
            actions=actions,
            agg=agg,
            cores=pend.cores[order],
            run_s=run_s[order],
            vo=pend.vo[order],
            job_class=pend.job_class[order],
            rank=rank,
            service=self.fairness.service_now(view) if self.use_fairness else None,
        )
        ranked: IntArray = order[by]
        return ranked

    def _record_starts(self, view: ClusterView) -> None:
        """Boost mode: the jobs of the last ranking that started since, as decisions in start order (ties
        by rank).  Learning records them (rewards as in gate mode); a fixed model moves its memory."""
        ranking, self._ranking = self._ranking, None
        if ranking is None:
            return
        started_ids = np.concatenate([view.running.job_id, view.finished.job_id])
        started_at = np.concatenate([view.running.start_s, view.finished.start_s])
        hit = np.isin(ranking.job_id, started_ids)
        if not hit.any():
            return
        at = dict(zip(started_ids.tolist(), started_at.tolist(), strict=True))
        picks = np.flatnonzero(hit)
        picks = picks[np.lexsort((ranking.rank[picks], [at[j] for j in ranking.job_id[picks].tolist()]))]
        if self.learn and self.credit == "incurred":
            self._close_interval()
        agg = ranking.agg
        available = np.ones(ranking.job_id.size, dtype=bool)
        for idx in picks.tolist():
            state = self.encoder.state_vector(agg)
            if self.learn:
                sub = np.flatnonzero(available)
                decision_id = self.learner.record(state, ranking.actions[sub], int(np.searchsorted(sub, idx)))
                opened = _OpenDecision(decision_id, ranking.service)
                self._open[int(ranking.job_id[idx])] = opened
                if self.credit == "incurred":
                    self._interval_group.append(opened)
            else:
                self.learner.q.advance(self.learner.q.encode(state, ranking.actions[idx : idx + 1])[0])
            available[idx] = False
            cores = int(ranking.cores[idx])
            agg.idle_cores = max(agg.idle_cores, cores)  # it started: its cores were free (some freed since)
            agg.start(cores, float(ranking.run_s[idx]), int(ranking.vo[idx]), int(ranking.job_class[idx]))
            self.decisions += 1

    @single_blas_thread
    def pending_scores(self, view: ClusterView) -> FloatArray:
        """Q(s, a) of every pending job under the current model, as boost mode ranks them (no learning)."""
        pend = view.pending
        if len(pend) == 0:
            return np.zeros(0, dtype=np.float64)
        run_s = self.runtime.pending(pend)
        agg = self.encoder.aggregates(view, self.runtime, run_s)
        actions = self._with_pool(
            self.encoder.actions(pend, run_s, view.time_s, view.total_cores), self._pool_size(view)
        )
        return np.asarray(self.learner.q.scores(self.encoder.state_vector(agg), actions), dtype=np.float64)

    def _gate(
        self,
        view: ClusterView,
        agg: StateAggregates,
        base_actions: FloatArray,
        run_s: FloatArray,
        candidates: IntArray,
        pool: int,
        rule_rank: IntArray | None = None,
    ) -> tuple[int, ...]:
        pend = view.pending
        budget = release_budget(view, pool)
        if budget <= 0 or candidates.size == 0:
            return ()
        agg.total_cores = pool
        agg.idle_cores = budget
        actions = self._with_pool(base_actions[candidates], pool)
        cand_cores = pend.cores[candidates]
        available = np.ones(candidates.size, dtype=bool)
        # While pretraining: each candidate's place in EDF's or the pretraining rule's order (lower first).
        deadline = self._pretrain_keys(pend, run_s, rule_rank)[candidates] if self.pretraining else None
        service = self.fairness.service_now(view) if self.use_fairness else None
        if self.learn and self.credit == "incurred":
            self._close_interval()
        # "No job" is a candidate only in learned decisions with keep_idle_cores (see the class docstring).
        may_keep_idle = bool(self.keep_idle_cores) and deadline is None
        if may_keep_idle:
            interactive = pend.job_class[candidates] == int(JobClass.INTERACTIVE)
        released: list[int] = []
        while budget > 0:
            sub = np.nonzero(available & (cand_cores <= budget))[0]
            if sub.size == 0:
                break
            state = self.encoder.state_vector(agg)
            rows = actions[sub]
            offers_idle = (
                may_keep_idle and budget <= self.keep_idle_cores and budget < pool and not interactive[sub].any()
            )
            if offers_idle:
                rows = np.vstack([rows, self._with_pool(self.encoder.null_action()[None, :], pool)])
            if deadline is not None:
                pick = int(np.argmin(deadline[sub]))  # candidates are FCFS-ordered: ties go FCFS
                decision_id = self.learner.record(state, rows, pick) if self.learn else -1
            elif self.learn:
                pick, decision_id = self.learner.act(state, rows)
            else:
                pick, decision_id = self.learner.select(state, rows, explore=False), -1
            if offers_idle and pick == sub.size:
                self._keep_idle(view, state, rows[-1:], decision_id, service)
                break
            chosen = int(sub[pick])
            job = int(candidates[chosen])
            jid = int(pend.job_id[job])
            if self.learn:
                opened = _OpenDecision(decision_id, service)
                self._open[jid] = opened
                if self.credit == "incurred":
                    self._interval_group.append(opened)
            else:
                self.learner.q.advance(self.learner.q.encode(state, actions[chosen : chosen + 1])[0])
            available[chosen] = False
            cores = int(cand_cores[chosen])
            budget -= cores
            agg.start(cores, float(run_s[job]), int(pend.vo[job]), int(pend.job_class[job]))
            released.append(jid)
            self.decisions += 1
        return tuple(released)

    def _keep_idle(
        self, view: ClusterView, state: FloatArray, idle_row: FloatArray, decision_id: int, service: FloatArray | None
    ) -> None:
        """The "no job" action was chosen: the remaining cores stay idle until the next view."""
        self.kept_idle += 1
        self.decisions += 1
        if not self.learn:
            self.learner.q.advance(self.learner.q.encode(state, idle_row)[0])
            return
        opened = _OpenDecision(decision_id, service)
        opened.other_part = self._other_part(view, -1, 0.0, opened)  # F (or U) as it stands: no job
        self._interval_group.append(opened)  # its W part: the incurred loss until the next electing view

    # -- persistence ----------------------------------------------------------------------
    def _agent_meta(self) -> dict[str, Any]:
        meta = {
            "features": self.encoder.config.to_dict(),
            "runtime_model": self.runtime.name,
            "lam": self.lam,
            "mode": self.mode,
            "decisions": self.decisions,
            "pretraining": self.pretraining,
            "shares": self.fairness.shares.tolist(),
            "use_fairness": self.use_fairness,
            "credit": self.credit,
            "reward": self.reward.to_dict(),
            "keep_idle_cores": self.keep_idle_cores,
            "kept_idle": self.kept_idle,
        }
        if self.policy is not None:
            meta["policy"] = dict(self.policy)
        return meta

    def save(self, path: str | os.PathLike[str]) -> None:
        """Model, feature normalisation, replay memory and counters in one file, atomically.

        Decisions whose job is still running are not saved: their rewards are lost on reload.
        With :attr:`policy` set (by :func:`rlsched.core.policies.save_policy`) the file also
        carries the policy spec, and :func:`rlsched.core.policies.load_policy` rebuilds the
        agent from the file alone.
        """
        arrays = {"finished_service": self.fairness.finished_service}
        if isinstance(self.runtime, EstimatedRuntime):
            arrays.update({f"runtime_{k}": v for k, v in self.runtime.state_arrays().items()})
        self.learner.save(path, extra_meta=self._agent_meta(), extra_arrays=arrays)

    def load_state(self, path: str | os.PathLike[str]) -> None:
        """Restore a :meth:`save` into this agent; the feature config in the file must match this agent's.

        To rebuild an agent from a file with no agent built first, use
        :func:`rlsched.core.policies.load_policy` (it builds the agent from the file's spec, then calls this).
        """
        meta, arrays = self.learner.load_state(path)
        saved = FeatureConfig.from_dict(meta["features"])
        if saved != self.encoder.config:
            raise ValueError(f"{path}: saved feature config {saved} differs from this agent's {self.encoder.config}")
        self.decisions = int(meta["decisions"])
        self.pretraining = bool(meta["pretraining"])
        self.kept_idle = int(meta.get("kept_idle", 0))
        self.fairness.finished_service = arrays["finished_service"].astype(np.float64)
        if isinstance(self.runtime, EstimatedRuntime) and "runtime_ring" in arrays:
            self.runtime.load_state_arrays({k: arrays[f"runtime_{k}"] for k in ("ring", "count", "median")})
        self._open.clear()
        self._interval_group = []
        self._interval_loss = 0.0
        self._loss_clock_s = None


class ElasticSchedulingAgent(SchedulingAgent):
    """Scheduling plus the pool size of the next period (P-grid §3.2 elastic MDP, §4.1).

    The action is a pair (job, pool size).  The pool size is one more action column
    (``cores / max_cores``).  It may change only when ``hold_s`` (15 minutes) has passed
    since the last change; it never drops below ``min_cores`` (30) nor below the cores of
    the running jobs (no preemption) — P-grid §4.1.  When a change is allowed, the agent
    takes the best job under the current pool size, then the pool size maximising
    Q(s, (job, size)) over ``pool_options`` (ε-greedy); with an empty queue it scores the
    sizes with the "no job" action row.  The chosen size is returned as
    ``Decisions.lease_cap`` (only when it changes) and used for this view's releases.
    Reward: ``R_e = λ_e W + (1 − λ_e) U`` with U from :class:`UtilizationTracker` (P-grid
    Eq. 3); fairness is not part of this MDP (P-grid §3.2).
    """

    def __init__(
        self,
        learner: BatchLearner,
        encoder: FeatureEncoder,
        runtime: RuntimeModel,
        *,
        pool_options: Sequence[int],
        initial_cores: int,
        start_s: float = 0.0,
        min_cores: int = 30,
        hold_s: float = 900.0,
        lam: float = 0.5,
        mode: Mode = "gate",
        pretrain_decisions: int = 500,
        pretrain_sweeps: int = 5,
        edf_w_target: float = DEFAULT_EDF_W_TARGET,
        learn: bool = True,
        credit: Credit = "incurred",
        keep_idle_cores: int = 0,
        pretrain_rule: FixedRankAgent | None = None,
    ) -> None:
        options = np.unique(np.asarray(pool_options, dtype=np.int64))
        if options.size == 0 or options[0] < 1:
            raise ValueError(f"elastic agent: pool options must be positive, got {list(pool_options)}")
        self.pool_options = options[options >= min_cores]
        if self.pool_options.size == 0:
            raise ValueError(f"elastic agent: no pool option ≥ min_cores {min_cores}")
        self.max_cores = int(self.pool_options[-1])
        self.min_cores = min_cores
        self.hold_s = hold_s
        super().__init__(
            learner,
            encoder,
            runtime,
            None,
            lam=lam,
            mode=mode,
            pretrain_decisions=pretrain_decisions,
            pretrain_sweeps=pretrain_sweeps,
            edf_w_target=edf_w_target,
            learn=learn,
            credit=credit,
            keep_idle_cores=keep_idle_cores,
            pretrain_rule=pretrain_rule,
        )
        self.pool_cores = initial_cores
        self.last_change_s = start_s
        self.utilization = UtilizationTracker(start_s, initial_cores)

    def _extra_action_columns(self) -> int:
        return 1

    def _with_pool(self, actions: FloatArray, pool_cores: int) -> FloatArray:
        column = np.full((actions.shape[0], 1), pool_cores / self.max_cores)
        return np.hstack([actions, column])

    def _after_finished(self, view: ClusterView) -> None:
        fin = view.finished
        if len(fin):
            self.utilization.add_completed(np.maximum(fin.run_s, 0.0) * fin.cores)

    def _other_part(self, view: ClusterView, vo: int, work: float, opened: _OpenDecision) -> float:
        """U when the job finishes (P-grid Eq. 3)."""
        return self.utilization.utilization(view.time_s)

    def _combine(self, w_part: float, other_part: float) -> float:
        """``R_e = λ W + (1 − λ) U`` (P-grid §3.2)."""
        return float(elastic_reward(w_part, other_part, self.lam))

    def _choose_pool(
        self, view: ClusterView, agg: StateAggregates, actions: FloatArray, candidates: IntArray
    ) -> int | None:
        if view.time_s - self.last_change_s < self.hold_s:
            return None
        busy = view.total_cores - view.idle_cores
        allowed = self.pool_options[self.pool_options >= max(self.min_cores, busy)]
        if allowed.size == 0:  # more running than any option: keep what runs
            allowed = np.array([max(self.min_cores, busy)], dtype=np.int64)
        state = self.encoder.state_vector(agg)
        if candidates.size:
            current = self._with_pool(actions[candidates], self.pool_cores)
            job_row = actions[candidates[int(np.argmax(self.learner.q.scores(state, current)))]]
        else:
            job_row = self.encoder.null_action()
        rows = self._with_pool(np.broadcast_to(job_row, (allowed.size, job_row.size)), 0)
        rows[:, -1] = allowed / self.max_cores
        explore = self.learn and not self.pretraining
        if self.pretraining:
            # EDF pretraining keeps the pool as it is, except to honour the floor.
            size = int(max(self.pool_cores, allowed[0]))
        else:
            size = int(allowed[self.learner.select(state, rows, explore=explore)])
        if size == self.pool_cores:
            return None
        self.utilization.set_pool(view.time_s, size)
        self.pool_cores = size
        self.last_change_s = view.time_s
        return size

    def _pool_size(self, view: ClusterView) -> int:
        return self.pool_cores

    def _agent_meta(self) -> dict[str, Any]:
        return {
            **super()._agent_meta(),
            "pool_cores": self.pool_cores,
            "last_change_s": self.last_change_s,
            "pool_options": self.pool_options.tolist(),
        }
