"""How a live job gets its class and its VO: the class rule and the account → VO mapping.

Not Slurm-specific: a Slurm job has a QOS, a partition, an account and a time limit; a PBS job has a
queue, a project (or group) and a walltime.  Every live backend uses these two to fill the ``job_class``
and ``vo`` columns of its :class:`~rlsched.core.view.ClusterView`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rlsched.core.view import INTERACTIVE_THRESHOLD_S, JobClass


@dataclass(frozen=True)
class ClassRule:
    """Which live jobs are *interactive* (P-grid §3.2 distinguishes interactive and batch jobs).

    A job is interactive when its QOS is in ``interactive_qos``, or its partition (a PBS backend: its
    queue) is in ``interactive_partitions``, or its time limit is at most ``interactive_max_time_s``.  The default
    threshold is P-grid §4.2's 900 s, applied to the requested limit since the runtime is not known yet;
    ``None`` turns the time-limit test off.
    """

    interactive_qos: frozenset[str] = frozenset()
    interactive_partitions: frozenset[str] = frozenset()
    interactive_max_time_s: float | None = INTERACTIVE_THRESHOLD_S

    def classify(self, qos: str, partition: str, time_limit_s: float) -> JobClass:
        if qos and qos in self.interactive_qos:
            return JobClass.INTERACTIVE
        # A pending job may name several partitions ("debug,short"): any interactive one makes it so.
        if not self.interactive_partitions.isdisjoint(partition.split(",")):
            return JobClass.INTERACTIVE
        if self.interactive_max_time_s is not None and time_limit_s <= self.interactive_max_time_s:
            return JobClass.INTERACTIVE
        return JobClass.BATCH

    def classify_columns(self, qos: Sequence[str], partitions: Sequence[str], time_limit_s: np.ndarray) -> np.ndarray:
        """:meth:`classify` of many jobs at once (int64 ``JobClass`` values): the QOS and partition tests once
        per distinct name, the time test on the array (a live view has 50,000 jobs and a handful of names)."""
        interactive = np.zeros(len(qos), dtype=np.bool_)
        if self.interactive_qos:
            by_qos = {q: bool(q) and q in self.interactive_qos for q in set(qos)}
            interactive |= np.fromiter((by_qos[q] for q in qos), np.bool_, len(qos))
        if self.interactive_partitions:
            by_partition = {p: not self.interactive_partitions.isdisjoint(p.split(",")) for p in set(partitions)}
            interactive |= np.fromiter((by_partition[p] for p in partitions), np.bool_, len(partitions))
        if self.interactive_max_time_s is not None:
            interactive |= np.asarray(time_limit_s, dtype=np.float64) <= self.interactive_max_time_s
        return np.where(interactive, int(JobClass.INTERACTIVE), int(JobClass.BATCH)).astype(np.int64)

    def to_dict(self) -> dict[str, Any]:
        """The rule as a saved model records it (sorted lists: equal rules give equal dicts)."""
        return {
            "interactive_qos": sorted(self.interactive_qos),
            "interactive_partitions": sorted(self.interactive_partitions),
            "interactive_max_time_s": self.interactive_max_time_s,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClassRule:
        """The rule :meth:`to_dict` recorded (other keys ignored); ValueError naming the key when malformed."""

        def names(key: str) -> frozenset[str]:
            value = data.get(key, [])
            if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                raise ValueError(f"class rule: {key} must be a list of names, got {value!r}"[:200])
            return frozenset(value)

        limit = data.get("interactive_max_time_s", INTERACTIVE_THRESHOLD_S)
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int | float)):
            raise ValueError(f"class rule: interactive_max_time_s must be a number or null, got {limit!r}"[:200])
        return cls(names("interactive_qos"), names("interactive_partitions"), None if limit is None else float(limit))


class VOMapping:
    """Accounts → VO indices (the VO of P-grid's state and reward is the job's account: Slurm's
    account, a PBS project).

    With ``vos`` given, the VO list is fixed (the agent's one-hot width does not change): an account maps
    to ``accounts[account]`` if listed, else to a VO of its own name if that is in ``vos``, else to
    ``default_vo``.  With ``vos`` empty, every new account becomes a new VO, in order of appearance.
    """

    def __init__(
        self,
        vos: tuple[str, ...] = (),
        shares: tuple[float, ...] | None = None,
        accounts: Mapping[str, str] | None = None,
        default_vo: str | None = None,
    ) -> None:
        self.accounts = dict(accounts or {})
        self.fixed = bool(vos)
        if len(set(vos)) != len(vos):
            raise ValueError(f"vos has duplicates: {vos}")
        if shares is not None:
            if len(shares) != len(vos):
                raise ValueError(f"vo_shares has {len(shares)} entries for {len(vos)} vos")
            if any(s < 0 or not math.isfinite(s) for s in shares):
                raise ValueError(f"vo_shares must be finite and >= 0: {shares}")
        if self.fixed:
            if default_vo is None:
                raise ValueError("default_vo is required when vos is given (the VO of unlisted accounts)")
            if default_vo not in vos:
                raise ValueError(f"default_vo {default_vo!r} is not one of vos {vos}")
            unknown = sorted(set(self.accounts.values()) - set(vos))
            if unknown:
                raise ValueError(f"vo_accounts maps to VOs not in vos: {unknown}")
        self.shares = shares
        self.default_vo = default_vo
        self._names: list[str] = list(vos)
        self._index = {name: i for i, name in enumerate(vos)}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._names)

    def index(self, account: str) -> int:
        name = self.accounts.get(account, account)
        found = self._index.get(name)
        if found is not None:
            return found
        if self.fixed:
            assert self.default_vo is not None
            return self._index[self.default_vo]
        self._index[name] = len(self._names)
        self._names.append(name)
        return self._index[name]
