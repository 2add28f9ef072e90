"""Running any registry policy (:mod:`rlsched.core.policies`) in the simulator.

:func:`simulate_policy` picks the way a policy runs:

- a rule with a static key (``fcfs``, ``easy``, ``sjf``, ``easy-sjf``, ``interactive-first``,
  ``interactive-first-sjf``, ``edf`` with ``runtime_model=requested``): the simulator's
  native scheduler with that key as the priority (ties by row, which is submit order — the
  same order the live ranking agent gets from :func:`rlsched.core.policies.order_by_key`)
  and the rule's backfill flag — the fast path;
- any other rule and every learned policy: its core agent in gate mode, every job held on
  submit and released by the agent (``Simulator(agent=…, hold_on_submit=True)``); the
  elastic variant (``elastic=true``) on :class:`rlsched.sim.elastic.ElasticSimulator`;
- ``native``: the schedule the trace recorded;
- a field rule that reads the wait (``wfp3``, ``unicep``) or orders by a predicted runtime
  (``runtime_model=user-last2|learned|oracle``): the engine's dynamic priority
  (:class:`rlsched.sim.rules.RulePriority`), with the rule's backfill flag;
- ``scored`` with a predicted runtime (``log_pred``): the engine's dynamic priority
  (:class:`rlsched.sim.scored.ScoredPriority`; without one it is a static key);
- ``multifactor``: Slurm's priority/multifactor as the engine's dynamic priority
  (:class:`rlsched.sim.multifactor.MultifactorPriority`: re-prioritised every PriorityCalcPeriod,
  EASY backfilling), its ``slurm_conf=``/``sshare=`` files read by :func:`expand_site_files`.

That is ``mode="gate"`` (the default).  ``mode="boost"`` runs every rule and learned policy as the daemon's
boost mode deploys it (:mod:`rlsched.sim.boost`): its core agent ranks the queue every
``BoostSettings.poll_interval_s``, the top ``max_boosted`` go first, the rest keep the site's base order
(``fifo`` or ``multifactor``), with EASY backfilling.  The schedule records the mode it ran in.

The result carries the agent, so a learned policy can be saved afterwards
(:func:`rlsched.core.policies.save_policy`); a model loaded with
:func:`rlsched.core.policies.load_policy` runs through the same function (``agent=``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np

from rlsched.core.agents import ElasticSchedulingAgent
from rlsched.core.multifactor import MultifactorParams, params_from_policy, parse_slurm_conf, parse_sshare
from rlsched.core.policies import (
    BuildContext,
    JobColumns,
    KeyFunction,
    PolicyError,
    PolicySpec,
    backfill,
    build_agent,
    entry,
    resolve,
    static_key,
)
from rlsched.core.policies.registry import rule_setup, scoring_function
from rlsched.core.runtime import PredictedRuntime
from rlsched.core.view import Agent, FloatArray, IntArray
from rlsched.sim.boost import BoostSettings, simulate_boost
from rlsched.sim.elastic import ElasticSimulator, PoolHistory
from rlsched.sim.engine import DEFAULT_OVERRUN, Overrun, Schedule, Simulator
from rlsched.sim.multifactor import MultifactorPriority
from rlsched.sim.rules import RulePriority, warmed_predictor
from rlsched.sim.schedulers import replay_native
from rlsched.sim.scored import ScoredPriority
from rlsched.sim.workload import Workload

Mode = Literal["gate", "boost"]


@dataclass
class PolicyRun:
    """A simulated policy: its schedule, the agent that decided (None on the native path), its spec and the
    mode it ran in (``schedule.mode`` too)."""

    schedule: Schedule
    spec: PolicySpec
    agent: Agent | None = None
    pool_history: PoolHistory | None = None

    @property
    def mode(self) -> str:
        return self.schedule.mode


def workload_vos(workload: Workload) -> tuple[str, ...]:
    """The VO names a policy trained on ``workload`` is built for (``vo0`` … when the trace names none)."""
    if workload.vo_names:
        return tuple(workload.vo_names)
    n = int(workload.vo.max()) + 1 if len(workload) else 1
    return tuple(f"vo{k}" for k in range(n))


def workload_shares(workload: Workload) -> tuple[float, ...]:
    """The VO target shares of the fairness term: the workload's, or equal shares."""
    if workload.vo_shares is not None:
        return tuple(workload.vo_shares)
    n = len(workload_vos(workload))
    return tuple([1.0 / n] * n)


def job_columns(workload: Workload) -> JobColumns:
    """The columns a static key reads, with the row index as the job id (the simulator's tie-break)."""
    n = len(workload)
    return JobColumns(
        np.arange(n, dtype=np.int64),
        workload.job_class,
        workload.submit.astype(np.float64),
        workload.req_time.astype(np.float64),
        workload.procs.astype(np.int64),
    )


def static_priority(key: KeyFunction, workload: Workload) -> FloatArray | None:
    """The simulator's priority (lower starts first) for a static key; None for submit order.

    The rank of each job under :func:`rlsched.core.policies.order_by_key`; rows are in
    submit order, so ties by row are ties by submit time, then job.
    """
    cols = job_columns(workload)
    primary = key(cols)
    if not primary:
        return None
    order = np.lexsort((cols.job_id, *reversed(primary)))
    rank: IntArray = np.empty(len(workload), dtype=np.int64)
    rank[order] = np.arange(len(workload), dtype=np.int64)
    return rank.astype(np.float64)


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise PolicyError(f"policy 'multifactor': {what} {path}: {exc.strerror or exc}") from None


def expand_site_files(spec: PolicySpec) -> PolicySpec:
    """``multifactor`` with its ``slurm_conf=`` and ``sshare=`` files read into explicit parameters.

    The file's Priority* keys replace the registry defaults; a parameter the spec names wins over
    the file, even where its value equals the default (``PolicySpec.explicit``).  Account shares
    come from the sshare file's account rows (``shares=`` entries win).  A file whose PriorityType
    is not priority/multifactor is refused.
    """
    p = dict(spec.params)
    conf_path, sshare_path = str(p.get("slurm_conf") or ""), str(p.get("sshare") or "")
    if not conf_path and not sshare_path:
        return spec
    named = spec.explicit if spec.explicit is not None else frozenset(spec.params)
    if conf_path:
        conf_text = _read(conf_path, "slurm_conf")
        try:
            site = parse_slurm_conf(conf_text, conf_path)
        except ValueError as exc:
            raise PolicyError(f"policy 'multifactor': {exc}") from None
        if site.priority_type != "priority/multifactor":
            raise PolicyError(
                f"policy 'multifactor': {conf_path}: PriorityType={site.priority_type}, not priority/multifactor"
            )
        for key, value in site.params.items():
            if key not in named:
                p[key] = value
    if sshare_path:
        sshare_text = _read(sshare_path, "sshare")
        try:
            rows = parse_sshare(sshare_text, sshare_path)
        except ValueError as exc:
            raise PolicyError(f"policy 'multifactor': {exc}") from None
        given = {item.rpartition(":")[0] for item in str(p.get("shares") or "").split("/") if item}
        extra = [
            f"{r.account}:{r.shares:g}"
            for r in rows
            if r.user is None and r.account != "root" and r.account not in given
        ]
        p["shares"] = "/".join(filter(None, [str(p.get("shares") or ""), *extra]))
    p["slurm_conf"] = ""
    p["sshare"] = ""
    return replace(spec, params=p)


def bind(spec: PolicySpec | str, workload: Workload) -> PolicySpec:
    """``spec`` resolved and bound to the workload's VO names (learned policies need the width)."""
    resolved = resolve(spec)
    if resolved.vos:
        return resolved
    return resolved.bound(workload_vos(workload), resolved.features)


def _multifactor(spec: PolicySpec, workload: Workload, pool: int) -> tuple[PolicySpec, MultifactorPriority]:
    """A ``multifactor`` spec with its site files read, and its dynamic priority over ``workload``."""
    spec = expand_site_files(spec)
    try:
        params = params_from_policy(spec.params)
    except ValueError as exc:
        raise PolicyError(f"policy 'multifactor': {exc}") from None
    return spec, MultifactorPriority(
        workload, params, pool, users=bool(spec.params["users"]), cores_per_node=int(spec.params["cores_per_node"])
    )


def _weight_sum(params: MultifactorParams) -> float:
    """The largest priority multifactor can give (each factor lies in [0, 1]): what sets the boost step."""
    return (
        params.weight_age
        + params.weight_fairshare
        + params.weight_job_size
        + params.weight_partition
        + params.weight_qos
    )


def _warm_runtime(agent: Agent, workload: Workload) -> None:
    """An agent whose runtime predictor is still as built starts from the window's past, as the rules do
    (:func:`rlsched.sim.rules.warmed_predictor`); one that has learned (a model trained on, restored) goes on."""
    runtime = getattr(agent, "runtime", None)
    if isinstance(runtime, PredictedRuntime) and runtime.fresh and workload.past is not None:
        runtime.predictor = warmed_predictor(runtime.name, workload)


def _simulate_boost(
    workload: Workload,
    bound: PolicySpec,
    cores: int | None,
    settings: BoostSettings,
    agent: Agent | None,
    overrun: Overrun,
    progress: Callable[[int], None] | None,
    label: str,
) -> PolicyRun:
    """Boost mode (:mod:`rlsched.sim.boost`): the policy's agent ranks, the base order and EASY do the rest."""
    pool = cores if cores is not None else int(workload.max_procs)
    # A static key ranks the pending jobs the same way whenever they are the same (quiet polls can be skipped);
    # so does a rule or scoring function whose scores are fixed at each job's first sighting (ranks_by_queue).
    static = agent is None and static_key(bound) is not None
    if agent is None:
        start = float(workload.submit[0]) if len(workload) else 0.0
        agent = build_agent(
            bound, BuildContext(mode="boost", shares=workload_shares(workload), total_cores=pool, start_s=start)
        )
    _warm_runtime(agent, workload)
    ranks_queue_only = static or bool(getattr(agent, "ranks_by_queue", False))
    if isinstance(agent, ElasticSchedulingAgent):
        raise PolicyError(
            f"policy {bound.name!r}: elastic=true resizes the pool by holding jobs; it runs in gate mode only"
        )
    agent_mode = getattr(agent, "mode", "boost")  # the core agents say how they act; others only boost
    if agent_mode != "boost":
        raise PolicyError(
            f"policy {bound.name!r}: the agent was built for {agent_mode!r} mode; load or build it with mode='boost'"
        )
    if settings.base_is_fifo:
        schedule, _ = simulate_boost(
            workload,
            agent,
            settings,
            None,
            0.0,
            cores,
            ranks_queue_only=ranks_queue_only,
            overrun=overrun,
            progress=progress,
            name=label,
        )
    else:
        base_spec, base = _multifactor(resolve(settings.base), workload, pool)
        schedule, _ = simulate_boost(
            workload,
            agent,
            settings,
            base,
            _weight_sum(base.params),
            cores,
            backfill=backfill(base_spec),
            ranks_queue_only=ranks_queue_only,
            overrun=overrun,
            progress=progress,
            name=label,
        )
    return PolicyRun(schedule, bound, agent)


def simulate_policy(
    workload: Workload,
    spec: PolicySpec | str,
    cores: int | None = None,
    *,
    mode: Mode = "gate",
    boost: BoostSettings | None = None,
    overrun: Overrun = DEFAULT_OVERRUN,
    agent: Agent | None = None,
    progress: Callable[[int], None] | None = None,
    name: str | None = None,
) -> PolicyRun:
    """Replay ``workload`` under ``spec`` (see the module docstring for the path each policy takes).

    ``mode``: ``gate`` (the paths above) or ``boost`` (:mod:`rlsched.sim.boost`, with ``boost``'s settings,
    default :class:`BoostSettings`; gate mode does not read them, so a caller may pass a site's settings
    whatever the mode).  ``agent``: a ready agent for ``spec`` (a loaded model, built for that
    mode); built from the registry otherwise.  ``name`` labels the schedule (default: the policy name).
    """
    if mode not in ("gate", "boost"):
        raise PolicyError(f"mode must be 'gate' or 'boost', got {mode!r}")
    bound = bind(spec, workload)
    label = name if name is not None else bound.name
    family = entry(bound.name).family
    if family == "replay":
        if agent is not None:
            raise PolicyError(f"policy {bound.name!r} replays the recorded schedule; it takes no agent")
        return PolicyRun(replace(replay_native(workload), mode="recorded"), bound)
    if mode == "boost":
        return _simulate_boost(workload, bound, cores, boost or BoostSettings(), agent, overrun, progress, label)
    run = _simulate_gate(workload, bound, cores, overrun, agent, progress, label)
    run.schedule = replace(run.schedule, mode="gate")
    return run


def _simulate_gate(
    workload: Workload,
    bound: PolicySpec,
    cores: int | None,
    overrun: Overrun,
    agent: Agent | None,
    progress: Callable[[int], None] | None,
    label: str,
) -> PolicyRun:
    """Gate mode: the native fast paths, else the agent releasing held jobs (the module docstring)."""
    if bound.name == "multifactor" and agent is None:
        pool = cores if cores is not None else int(workload.max_procs)
        bound, dynamic = _multifactor(bound, workload, pool)
        sim = Simulator(workload, cores, dynamic=dynamic, backfill=backfill(bound), overrun=overrun, name=label)
        return PolicyRun(sim.run(progress=progress), bound)
    key = static_key(bound) if agent is None else None
    setup = rule_setup(bound) if agent is None else None
    if setup is not None and key is None:
        rules = RulePriority(workload, setup, overrun)
        sim = Simulator(workload, cores, dynamic=rules, backfill=backfill(bound), overrun=overrun, name=label)
        return PolicyRun(sim.run(progress=progress), bound)
    if key is None and agent is None and entry(bound.name).family == "scored":
        scored = ScoredPriority(workload, scoring_function(bound.params), str(bound.params["runtime_model"]), overrun)
        sim = Simulator(workload, cores, dynamic=scored, backfill=backfill(bound), overrun=overrun, name=label)
        return PolicyRun(sim.run(progress=progress), bound)
    if key is not None:
        sim = Simulator(
            workload,
            cores,
            priority=static_priority(key, workload),
            backfill=backfill(bound),
            overrun=overrun,
            name=label,
        )
        return PolicyRun(sim.run(progress=progress), bound)
    pool = cores if cores is not None else int(workload.max_procs)
    if agent is None:
        start = float(workload.submit[0]) if len(workload) else 0.0
        agent = build_agent(
            bound, BuildContext(mode="gate", shares=workload_shares(workload), total_cores=pool, start_s=start)
        )
    _warm_runtime(agent, workload)
    if isinstance(agent, ElasticSchedulingAgent):
        # The resource the pool is drawn from: the spec's largest pool (the agent's options may stop below it).
        max_cores = max(int(bound.params.get("pool_max_cores") or 2 * pool), agent.max_cores)
        esim = ElasticSimulator(
            workload,
            pool,
            max_cores=max_cores,
            min_cores=agent.min_cores,
            hold_s=agent.hold_s,
            agent=agent,
            hold_on_submit=True,
            tick_s=agent.hold_s,
            overrun=overrun,
            name=label,
        )
        return PolicyRun(esim.run(progress=progress), bound, agent, esim.pool_history)
    sim = Simulator(workload, cores, agent=agent, hold_on_submit=True, overrun=overrun, name=label)
    return PolicyRun(sim.run(progress=progress), bound, agent)
