"""Utilities and rewards of Perez et al. (P-grid §3.2 "Rewards"; P-fqi §3.3).

- Responsiveness ``W_j = run_j / (run_j + wait_j)`` (P-grid Eq. 1).
- Fairness ``F_j = 1 − D_j / M`` with the deficit distance ``D_j = max_k (w_k − S_kj)_+``
  and ``M = max_k w_k`` (P-grid Eq. 2), ``w`` the VO target shares and ``S_kj`` the
  fraction of the total service received by VO ``k`` up to the election of job ``j``.
- Utilization ``U_n = f_n / Σ_{k<n} P_k (T_{k+1} − T_k)`` (P-grid Eq. 3).
- ``R_s = λ_s W + (1 − λ_s) F`` (scheduling MDP) and ``R_e = λ_e W + (1 − λ_e) U``
  (elastic provisioning MDP).

All of them lie in [0, 1] (P-grid: "all the rewards are in the [0, 1] range, thus on
the same scale").

Two readings had to be chosen where the paper is terse:

- *Service* is core-seconds delivered: finished jobs count in full, running jobs for the
  time they have run so far.  ``S_kj`` counts job ``j``'s own service in its VO, so the
  fairness part of a decision's reward depends on which job was elected (electing a job
  of a VO below its share raises F); without it F would be the same for every candidate
  of one decision and could not steer the choice.
- ``f_n`` is the work (core-seconds) of the jobs completed *by* ``T_n``: the ratio is then
  the fraction of the provisioned core-seconds used so far, in [0, 1] as the paper states,
  and reaches "nearly 100 %" when the pool is shrunk to the load (P-grid Fig. 9).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from rlsched.core.measures import (
    deficit_distance,
    fairness_of_service,
    fairness_utility,
    normalised_shares,
    responsiveness,
)
from rlsched.core.view import ClusterView, FloatArray, IntArray

#: The utilities are defined once, in :mod:`rlsched.core.measures`; re-exported for the reward's readers.
__all__ = [
    "FairnessTracker",
    "UtilizationTracker",
    "deficit_distance",
    "elastic_reward",
    "fairness_utility",
    "normalised_shares",
    "responsiveness",
    "scheduling_reward",
]


def scheduling_reward(w: FloatArray | float, f: FloatArray | float, lam: float) -> FloatArray:
    """``R_s = λ_s W + (1 − λ_s) F`` (P-grid §3.2)."""
    _check_lambda(lam)
    return lam * np.asarray(w, dtype=np.float64) + (1.0 - lam) * np.asarray(f, dtype=np.float64)


def elastic_reward(w: FloatArray | float, u: FloatArray | float, lam: float) -> FloatArray:
    """``R_e = λ_e W + (1 − λ_e) U`` (P-grid §3.2)."""
    _check_lambda(lam)
    return lam * np.asarray(w, dtype=np.float64) + (1.0 - lam) * np.asarray(u, dtype=np.float64)


def _check_lambda(lam: float) -> None:
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"reward weight λ must lie in [0, 1], got {lam}")


class FairnessTracker:
    """Service received by each VO, and the fairness utility of an election (P-grid Eq. 2).

    Feed it every view (:meth:`observe`); ask :meth:`service_now` at an election and
    :meth:`election_fairness` when the elected job's reward is computed.
    """

    def __init__(self, shares: Sequence[float]) -> None:
        self.shares = normalised_shares(shares)
        self.finished_service = np.zeros(self.shares.size, dtype=np.float64)

    @property
    def n_vos(self) -> int:
        return int(self.shares.size)

    def _per_vo(self, vo: IntArray, amount: FloatArray) -> FloatArray:
        valid = (vo >= 0) & (vo < self.n_vos)
        return np.bincount(vo[valid], weights=amount[valid], minlength=self.n_vos).astype(np.float64)

    def observe(self, view: ClusterView) -> None:
        """Add the service of the jobs finished since the previous view."""
        fin = view.finished
        if len(fin):
            self.finished_service += self._per_vo(fin.vo, np.maximum(fin.run_s, 0.0) * fin.cores)

    def service_now(self, view: ClusterView) -> FloatArray:
        """Core-seconds per VO delivered by ``view.time_s``: finished jobs plus running time so far."""
        run = view.running
        elapsed = np.maximum(view.time_s - run.start_s, 0.0) * run.cores.astype(np.float64)
        return self.finished_service + self._per_vo(run.vo, elapsed)

    def election_fairness(self, service_before: FloatArray, vo: IntArray | int, work: FloatArray | float) -> FloatArray:
        """F of electing jobs of VO ``vo`` bringing ``work`` core-seconds, given the service before.

        Vectorised over jobs: ``service_before`` is one vector (n_vos,) or one row per job.
        """
        vo_arr = np.atleast_1d(np.asarray(vo, dtype=np.int64))
        work_arr = np.broadcast_to(np.asarray(work, dtype=np.float64), vo_arr.shape)
        service = np.array(np.broadcast_to(service_before, (vo_arr.size, self.n_vos)), dtype=np.float64)
        valid = (vo_arr >= 0) & (vo_arr < self.n_vos)
        rows = np.nonzero(valid)[0]
        service[rows, vo_arr[valid]] += work_arr[valid]
        return fairness_of_service(service, self.shares)

    def fairness_now(self, view: ClusterView) -> float:
        """The fairness utility of the service delivered so far (P-grid Fig. 6 plots its difference)."""
        return float(fairness_of_service(self.service_now(view), self.shares))


class UtilizationTracker:
    """P-grid Eq. 3: used core-seconds of completed jobs over provisioned core-seconds.

    The pool size ``P_k`` holds on ``[T_k, T_{k+1})``; call :meth:`set_pool` whenever it
    changes and :meth:`add_completed` with each finished job's core-seconds.
    """

    def __init__(self, start_s: float, pool_cores: int) -> None:
        self._last_change_s = start_s
        self._pool = pool_cores
        self._provisioned = 0.0
        self._completed = 0.0

    @property
    def pool_cores(self) -> int:
        return self._pool

    def set_pool(self, time_s: float, pool_cores: int) -> None:
        if time_s < self._last_change_s:
            raise ValueError(f"utilization tracker: time went back from {self._last_change_s} to {time_s}")
        self._provisioned += self._pool * (time_s - self._last_change_s)
        self._last_change_s = time_s
        self._pool = pool_cores

    def add_completed(self, core_seconds: FloatArray | float) -> None:
        self._completed += float(np.sum(core_seconds))

    def utilization(self, time_s: float) -> float:
        """``U_n`` at ``time_s``: 1 before any core-second was provisioned."""
        provisioned = self._provisioned + self._pool * max(time_s - self._last_change_s, 0.0)
        if provisioned <= 0:
            return 1.0
        return min(self._completed / provisioned, 1.0)
