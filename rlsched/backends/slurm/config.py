"""Configuration of the Slurm backend: the class rule, the VO mapping, commands, timeouts, levers.

The daemon reads these from its TOML file (``[backend]`` table, see ``docs/slurm.md``) through
:meth:`SlurmBackendConfig.from_table`, which rejects bad keys with a one-line error naming the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlsched.backends.slurm.runner import RetryPolicy
from rlsched.core.view import INTERACTIVE_THRESHOLD_S, JobClass

COMPLETION_SOURCES = ("auto", "sacct", "jobcomp", "squeue")


@dataclass(frozen=True)
class ClassRule:
    """Which live jobs are *interactive* (P-grid §3.2 distinguishes interactive and batch jobs).

    A job is interactive when its QOS is in ``interactive_qos``, or its partition is in
    ``interactive_partitions``, or its time limit is at most ``interactive_max_time_s``.  The default
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


class VOMapping:
    """Accounts → VO indices (the VO of P-grid's state and reward is the Slurm account here).

    With ``vos`` given, the VO list is fixed (the agent's one-hot width does not change): an account maps
    to ``accounts[account]`` if listed, else to a VO of its own name if that is in ``vos``, else to
    ``default_vo``.  With ``vos`` empty, every new account becomes a new VO, in order of appearance.
    """

    def __init__(self, vos: tuple[str, ...] = (), shares: tuple[float, ...] | None = None,
                 accounts: Mapping[str, str] | None = None, default_vo: str | None = None) -> None:
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


@dataclass(frozen=True)
class SlurmBackendConfig:
    """Everything the Slurm backend needs to know about the site.

    - ``slurm_conf``: passed to the commands as ``SLURM_CONF`` (None: inherit the environment).
    - ``bin_dir``: where squeue, sinfo, scontrol and sacct are (None: PATH).
    - ``partitions``: the partitions rlsched schedules (empty: all).
    - ``completion_source``: ``auto`` (sacct when accounting storage is configured, else the
      ``jobcomp/filetxt`` file, else squeue within MinJobAge), or one of them by name.
    - ``max_boosted``: how many top-ranked jobs get a Nice offset (each one costs an ``scontrol`` call
      whenever its rank changes).
    - ``unlimited_time_s``: the requested time given to jobs without a time limit.
    - ``state_file``: where the record of what rlsched changed in Slurm is kept (Nice values, holds,
      drained cloud nodes, the completion feed's position), so that a restarted daemon can undo it.
    """

    slurm_conf: str | None = None
    bin_dir: str | None = None
    timeout_s: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    partitions: frozenset[str] = frozenset()
    class_rule: ClassRule = field(default_factory=ClassRule)
    vos: tuple[str, ...] = ()
    vo_shares: tuple[float, ...] | None = None
    vo_accounts: Mapping[str, str] = field(default_factory=dict)
    default_vo: str | None = None
    completion_source: str = "auto"
    jobcomp_path: str | None = None
    max_boosted: int = 32
    unlimited_time_s: float = 7 * 86400.0
    state_file: str | None = None
    cloud_feature: str = "cloud"

    def __post_init__(self) -> None:
        if self.completion_source not in COMPLETION_SOURCES:
            raise ValueError(f"completion_source must be one of {COMPLETION_SOURCES}, "
                             f"got {self.completion_source!r}")
        if self.max_boosted < 1:
            raise ValueError(f"max_boosted must be >= 1, got {self.max_boosted}")
        if self.timeout_s <= 0 or self.unlimited_time_s <= 0:
            raise ValueError("timeout_s and unlimited_time_s must be > 0")
        self.vo_mapping()       # validates vos / vo_shares / vo_accounts / default_vo

    def vo_mapping(self) -> VOMapping:
        return VOMapping(self.vos, self.vo_shares, self.vo_accounts, self.default_vo)

    @classmethod
    def from_table(cls, table: Mapping[str, Any], source: str = "config") -> SlurmBackendConfig:
        """Build from a TOML table; unknown keys and wrong types are one-line errors naming the key.

        Besides the field names, accepts ``interactive_qos``, ``interactive_partitions``,
        ``interactive_max_time_s`` (the class rule) and ``retry_attempts``, ``retry_base_delay_s``,
        ``retry_max_delay_s``; keys the daemon owns (``kind``, ``mode``, ``poll_interval_s``) are ignored.
        """
        simple: dict[str, type | tuple[type, ...]] = {
            "slurm_conf": str, "bin_dir": str, "timeout_s": (int, float), "completion_source": str,
            "jobcomp_path": str, "max_boosted": int, "unlimited_time_s": (int, float), "state_file": str,
            "default_vo": str, "cloud_feature": str}
        lists = {"partitions", "vos", "vo_shares", "interactive_qos", "interactive_partitions"}
        rule_keys = {"interactive_qos", "interactive_partitions", "interactive_max_time_s"}
        retry_keys = {"retry_attempts": "attempts", "retry_base_delay_s": "base_delay_s",
                      "retry_max_delay_s": "max_delay_s"}
        ignored = {"kind", "mode", "poll_interval_s"}
        known = set(simple) | lists | rule_keys | set(retry_keys) | ignored | {"vo_accounts"}
        kwargs: dict[str, Any] = {}
        rule: dict[str, Any] = {}
        retry: dict[str, Any] = {}

        def bad(key: str, message: str) -> ValueError:
            return ValueError(f"{source}: key {key!r}: {message}")

        for key, value in table.items():
            if key not in known:
                raise bad(key, f"unknown key (known: {', '.join(sorted(known - ignored))})")
            if key in ignored:
                continue
            if key in lists:
                item_type: type | tuple[type, ...] = (int, float) if key == "vo_shares" else str
                if not isinstance(value, list) or not all(
                        isinstance(v, item_type) and not isinstance(v, bool) for v in value):
                    raise bad(key, f"expected a list of {'numbers' if key == 'vo_shares' else 'strings'}")
                converted: Any = (tuple(float(v) for v in value) if key == "vo_shares"
                                  else frozenset(value) if key != "vos" else tuple(value))
                (rule if key in rule_keys else kwargs)[key] = converted
            elif key == "vo_accounts":
                if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
                    raise bad(key, "expected a table of account = \"VO\"")
                kwargs[key] = dict(value)
            elif key == "interactive_max_time_s" or key in retry_keys:
                if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                    raise bad(key, f"expected a number >= 0, got {value!r}")
                if key in retry_keys:
                    retry[retry_keys[key]] = int(value) if key == "retry_attempts" else float(value)
                else:
                    rule[key] = float(value)
            else:
                if isinstance(value, bool) or not isinstance(value, simple[key]):
                    raise bad(key, f"wrong type {type(value).__name__}")
                kwargs[key] = value
                if key in ("timeout_s", "unlimited_time_s"):
                    kwargs[key] = float(table[key])
        try:
            if rule:
                kwargs["class_rule"] = ClassRule(**rule)
            if retry:
                kwargs["retry"] = RetryPolicy(**retry)
            return cls(**kwargs)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
