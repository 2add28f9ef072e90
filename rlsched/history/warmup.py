"""``rlsched history predictor``: the deployed policy's runtime predictor taught a site's imported history, so that
the daemon's first start goes on from what ``rlsched train`` judged the policy on, not from a cold predictor
(docs/daemon.md, "What survives a restart").

A trace of ``rlsched history import`` numbers its users 1, 2, … (SWF ids, names in the meta file), its VOs by
the import's VO list and its submit times from ``UnixStartTime``.  The live view keys them otherwise, and the
predictor finds a user's history only under the live key: :func:`live_history` gives the history the live
keys — users by :func:`rlsched.core.view.user_id` of the recorded name (as the Slurm and PBS backends do), VOs
by the config's account → VO mapping and named in the state (:meth:`PredictedRuntime.key_vos`: the daemon finds
a VO by name, whatever number its view gives it), times in epoch seconds (the live submit clock, which the ``learned``
predictor's time of day reads).  A history without user names is refused: what a predictor learns is mostly per
user, and none of it could be matched to a live user.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from rlsched.core.classify import VOMapping
from rlsched.core.prediction import JobHistory, learn_history
from rlsched.core.runtime import PredictedRuntime
from rlsched.core.view import UNKNOWN_USER, user_id
from rlsched.daemon.config import DaemonConfig
from rlsched.errors import RlschedError
from rlsched.sim.workload import Workload


class WarmUpError(RlschedError, ValueError):
    """The predictor cannot be warmed (no predictor in the policy, a history without names, a file in the way)."""


@dataclass(frozen=True)
class LiveHistory:
    """A history keyed as the live view keys jobs, and how many of its users have no name to key them by."""

    jobs: JobHistory
    users: int
    unnamed_users: int
    #: The VO names behind the jobs' VO indices (the config's mapping after the history's names went through it).
    vo_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class WarmUp:
    """What :func:`warm_predictor` did: jobs learned, the predictor, the policy it belongs to, the users."""

    learned: int
    predictor: str
    policy: str
    users: int
    unnamed_users: int


def unnamed_user(swf_id: int) -> int:
    """The key of an SWF user the history names not: ≤ -2, which no live user has (a CRC-32 is ≥ 0), so its
    history is learned (the regression's weights use it) but never mistaken for a live user's; -1 stays
    :data:`~rlsched.core.view.UNKNOWN_USER`."""
    return UNKNOWN_USER - 1 - swf_id


def live_history(workload: Workload, vo_mapping: VOMapping) -> LiveHistory:
    """All of ``workload`` as finished jobs with the live view's keys (module docstring); ``vo_mapping``: the
    config's account → VO mapping (:meth:`DaemonConfig.vo_mapping`).  :class:`WarmUpError` when the workload
    names no user or has no ``UnixStartTime`` (not a trace of ``rlsched history import``)."""
    names = workload.id_names.get("user", {})
    where = f"history {workload.name!r}"
    if not names:
        raise WarmUpError(
            f"{where} names no user (no NAME.meta.json beside it, as `rlsched history import` writes): a "
            "predictor learns per user, and the daemon keys users by name, so none of it would be found; "
            "import the site's records with `rlsched history import`"
        )
    if workload.unix_start_time is None:
        raise WarmUpError(
            f"{where} has no UnixStartTime header: its submit times cannot be put on the daemon's clock "
            "(epoch seconds); import the site's records with `rlsched history import`"
        )
    jobs = workload.jobs_before(len(workload))
    swf_users = np.unique(jobs.user).tolist()
    key = {u: user_id(names[u]) if u in names else unnamed_user(u) for u in swf_users}
    vo_names = workload.vo_names or tuple(str(k) for k in range(int(jobs.vo.max()) + 1 if len(jobs) else 0))
    # Like `rlsched train --config` (rlsched.workflow.site.site_view): the trace's VO names through the
    # config's mapping, which gives the VO of a name in its list and maps an account name as the daemon does.
    vo_live = np.array([vo_mapping.index(name) for name in vo_names] or [0], dtype=np.int64)
    epoch = float(workload.unix_start_time)
    live = replace(
        jobs,
        user=np.array([key[u] for u in jobs.user.tolist()], dtype=np.int64),
        vo=vo_live[jobs.vo] if len(jobs) else jobs.vo,
        submit_s=jobs.submit_s + epoch,
        end_s=jobs.end_s + epoch,
    )
    return LiveHistory(live, len(swf_users), sum(1 for u in swf_users if u not in names), vo_mapping.names)


def configured_runtime(config: DaemonConfig) -> tuple[PredictedRuntime, str]:
    """The runtime predictor of the policy ``config`` deploys, built as the daemon builds it at start (read-only),
    and the policy's label; :class:`WarmUpError` when that policy reads no runtime predictor."""
    from rlsched.daemon.agents import AgentStartError, start_configured_agent

    try:
        handle = start_configured_agent(config)
    except AgentStartError as exc:
        raise WarmUpError(str(exc)) from None
    policy = handle.spec.label() if handle.spec is not None else config.agent.label
    if not isinstance(handle.runtime, PredictedRuntime):
        raise WarmUpError(
            f"{config.source}: policy {policy} reads no runtime predictor (its runtime model is "
            f"{handle.runtime.name!r}): only runtime_model=user-last2 or learned has one (a rule such as "
            "f3:runtime_model=user-last2, a scored policy reading log_pred, a learned agent on a predicted "
            "runtime); nothing to warm"
        )
    return handle.runtime, policy


def refuse_overwrite(path: Path, force: bool) -> None:
    """:class:`WarmUpError` when ``path`` exists and not ``force``: it holds what a daemon learned live."""
    if path.exists() and not force:
        raise WarmUpError(
            f"{path} exists: it holds what the daemon's runtime predictor learned, which would be lost; "
            "--force replaces it (stop the daemon first: it rewrites the file at each checkpoint)"
        )


def warm_predictor(runtime: PredictedRuntime, history: LiveHistory, policy: str) -> WarmUp:
    """Teach ``runtime``'s predictor the whole ``history`` in time order (:func:`learn_history`), its VOs keyed by
    the history's VO names (the daemon finds a VO's history by name, whatever index its view gives the VO)."""
    runtime.key_vos(history.vo_names)
    learned = learn_history(runtime.predictor, history.jobs)
    return WarmUp(learned, runtime.name, policy, history.users, history.unnamed_users)
