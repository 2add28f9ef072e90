"""Slurm's priority/multifactor in a replay: the engine's dynamic priority (docs/multifactor.md).

Accounts are the workload's VOs; each account has one user association, or, with
``users=True``, one per SWF user seen in it.  Usage is the CPU-seconds of the jobs
running, decayed (:class:`rlsched.core.multifactor.UsageLedger`), on Slurm's
PriorityCalcPeriod grid from the first submit.  As in Slurm, a job gets a priority when it is
queued (age 0, the fair-share factors of the last pass) and every queued job is
re-prioritised at each pass; the engine's EASY backfill then starts jobs in that order.
"""

from __future__ import annotations

import math

import numpy as np

from rlsched.core.multifactor import (
    AssocTree,
    MultifactorParams,
    UsageLedger,
    fairshare_factors,
    job_size_factor,
    partition_factor,
)
from rlsched.core.view import FloatArray, IntArray
from rlsched.sim.workload import Workload


def workload_accounts(workload: Workload) -> tuple[str, ...]:
    """The account name of every VO index (``vo0`` … when the workload names none)."""
    if workload.vo_names:
        return tuple(workload.vo_names)
    n = int(workload.vo.max()) + 1 if len(workload) else 1
    return tuple(f"vo{k}" for k in range(n))


class MultifactorPriority:
    """The :class:`rlsched.sim.engine.DynamicPriority` of Slurm's priority/multifactor."""

    def __init__(
        self, workload: Workload, params: MultifactorParams, cores: int, *, users: bool = False, cores_per_node: int = 1
    ) -> None:
        self.params = params
        accounts = workload_accounts(workload)
        vo = workload.vo.astype(np.int64)
        if users:
            pairs = sorted({(int(v), int(u)) for v, u in zip(vo.tolist(), workload.user.tolist(), strict=True)})
            self.tree = AssocTree.flat(accounts, [(accounts[v], f"u{u}") for v, u in pairs], params)
            leaf_of = {(v, u): self.tree.index[AssocTree.key(accounts[v], f"u{u}")] for v, u in pairs}
            leaf = np.array(
                [leaf_of[(v, u)] for v, u in zip(vo.tolist(), workload.user.tolist(), strict=True)], dtype=np.int64
            )
        else:
            self.tree = AssocTree.flat(accounts, (), params)
            by_account = np.array([self.tree.index[AssocTree.key(a, a)] for a in accounts], dtype=np.int64)
            leaf = by_account[vo]
        self.leaf: IntArray = leaf
        self._leaf: list[int] = leaf.tolist()
        self._procs: list[int] = workload.procs.tolist()
        self.submit: FloatArray = workload.submit.astype(np.float64)
        per_node = max(int(cores_per_node), 1)
        nodes = np.ceil(workload.procs / per_node)
        js = job_size_factor(workload.procs, nodes, float(cores), max(cores / per_node, 1.0), params.favor_small)
        # One partition and no QOS in a trace: those factors are the same for every job.
        part = partition_factor(params, [""])[0]
        self.static: FloatArray = params.weight_job_size * js + params.weight_partition * part
        self._static: list[float] = self.static.tolist()
        origin = float(workload.submit[0]) if len(workload) else 0.0
        self.ledger = UsageLedger(self.tree.n_users, params, origin_s=origin)
        self._fs: FloatArray = fairshare_factors(self.tree, self.ledger.pass_usage, params)
        self._fs_list: list[float] = self._fs.tolist()
        self._fs_time = origin
        self.passes = 0

    def _factors_now(self, now: float) -> None:
        led = self.ledger
        led.advance(now)
        if led.pass_time > self._fs_time:
            self._fs = fairshare_factors(self.tree, led.pass_usage, self.params)
            self._fs_list = self._fs.tolist()
            self._fs_time = led.pass_time

    # ------------------------------------------------------------------ DynamicPriority
    def submit_priority(self, row: int, now: float) -> float:
        self._factors_now(now)
        raw = self.params.weight_fairshare * self._fs_list[self._leaf[row]] + self._static[row]
        return min(max(math.floor(raw), 1.0), float(0xFFFFFFFF))

    def priorities(self, rows: IntArray, now: float) -> FloatArray:
        self._factors_now(now)
        self.passes += 1
        p = self.params
        age = np.clip(now - self.submit[rows], 0.0, p.max_age_s) / p.max_age_s
        raw = p.weight_age * age + p.weight_fairshare * self._fs[self.leaf[rows]] + self.static[rows]
        out: FloatArray = np.clip(np.floor(raw), 1.0, float(0xFFFFFFFF))
        return out

    def started(self, row: int, now: float) -> None:
        self.ledger.start(row, self._leaf[row], self._procs[row], now)

    def ended(self, row: int, now: float) -> None:
        self.ledger.end(row, now)

    def next_pass(self, now: float) -> float:
        return self.ledger.last_pass(now) + self.params.calc_period_s
