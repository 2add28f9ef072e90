"""Configuration of the PBS backend (``[backend] kind = "pbs"``, docs/pbs.md): how to run the commands, the
levers' settings, the scope (queues), the class rule and the VO mapping.

:meth:`PBSBackendConfig.from_table` rejects bad keys with a one-line error naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlsched.backends.common.config import RETRY_KEYS, build_config, read_number_key, read_typed_key
from rlsched.backends.common.runner import RetryPolicy
from rlsched.core.classify import ClassRule, VOMapping

COMPLETION_SOURCES = ("history", "accounting")
VO_FROM = ("account", "project", "group")
PRIORITY_SORT_CHECKS = ("warn", "refuse", "off")


@dataclass(frozen=True)
class PBSBackendConfig:
    """Everything the PBS backend needs to know about the site.

    - ``command_prefix``: put before every PBS command, as an argument list (``["ssh", "headnode"]`` where the
      daemon runs off the server host; ``["ip", "netns", "exec", "rlsched-pbs"]`` for the test server).
    - ``bin_dir``: where qstat, qalter, qhold, qrls, pbsnodes are (None: PATH, after the prefix).
    - ``queues``: the queues rlsched schedules (empty: all).  Gate mode needs them.
    - ``vo_from``: which job attribute is the VO's name: ``project`` (default), ``account`` (Account_Name) or
      ``group`` (egroup).
    - ``completion_source``: ``history`` (``qstat -x -f -F json``; needs ``job_history_enable``) or
      ``accounting`` (the server's accounting log, read as a local file under ``accounting_dir``).
    - ``sched_config``: the scheduler's config file, read (through the prefix) to check that it sorts on job
      priority (``qalter -p`` is rlsched's boost); ``priority_sort_check``: ``warn`` (log one line, boost
      anyway), ``refuse`` (log one line, never boost) or ``off``.
    - ``max_boosted``: how many top-ranked jobs get a priority (top: 1023, then 1022, ...).
    - ``state_file``: where the record of what rlsched changed is kept (priorities, holds, the completion
      feed's position), so that a restarted daemon can undo it.
    """

    command_prefix: tuple[str, ...] = ()
    bin_dir: str | None = None
    timeout_s: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    queues: frozenset[str] = frozenset()
    class_rule: ClassRule = field(default_factory=ClassRule)
    vos: tuple[str, ...] = ()
    vo_shares: tuple[float, ...] | None = None
    vo_accounts: Mapping[str, str] = field(default_factory=dict)
    default_vo: str | None = None
    vo_from: str = "project"
    completion_source: str = "history"
    accounting_dir: str = "/var/spool/pbs/server_priv/accounting"
    sched_config: str = "/var/spool/pbs/sched_priv/sched_config"
    priority_sort_check: str = "warn"
    max_boosted: int = 32
    unlimited_time_s: float = 7 * 86400.0
    state_file: str | None = None
    #: The registry name (``[backend] kind``; see :mod:`rlsched.backends`).
    kind: str = field(default="pbs", init=False, repr=False)

    def __post_init__(self) -> None:
        if self.completion_source not in COMPLETION_SOURCES:
            raise ValueError(f"completion_source must be one of {COMPLETION_SOURCES}, got {self.completion_source!r}")
        if self.vo_from not in VO_FROM:
            raise ValueError(f"vo_from must be one of {VO_FROM}, got {self.vo_from!r}")
        if self.priority_sort_check not in PRIORITY_SORT_CHECKS:
            raise ValueError(f"priority_sort_check must be one of {PRIORITY_SORT_CHECKS}, "
                             f"got {self.priority_sort_check!r}")
        if not 1 <= self.max_boosted <= 2048:
            raise ValueError(f"max_boosted must be in 1..2048 (PBS priorities: -1024..1023), got {self.max_boosted}")
        if self.timeout_s <= 0 or self.unlimited_time_s <= 0:
            raise ValueError("timeout_s and unlimited_time_s must be > 0")
        if any(not part for part in self.command_prefix):
            raise ValueError("command_prefix has an empty argument")
        self.vo_mapping()

    def gate_problem(self) -> tuple[str, str] | None:
        """Gate mode needs the gated queues: in them a held job waits for rlsched."""
        if not self.queues:
            return "queues", "gate mode needs the gated queues: in them a held job waits for rlsched (docs/pbs.md)"
        return None

    def vo_mapping(self) -> VOMapping:
        return VOMapping(self.vos, self.vo_shares, self.vo_accounts, self.default_vo)

    @classmethod
    def from_table(cls, table: Mapping[str, Any], source: str = "config") -> PBSBackendConfig:
        """Build from a TOML table; unknown keys and wrong types are one-line errors naming the key.

        Besides the field names, accepts ``interactive_queues`` and ``interactive_max_time_s`` (the class rule:
        a job in one of those queues, or with a walltime at most that long, is interactive) and
        ``retry_attempts``, ``retry_base_delay_s``, ``retry_max_delay_s``; keys the daemon owns (``kind``,
        ``mode``, ``poll_interval_s``) are ignored.
        """
        simple: dict[str, type | tuple[type, ...]] = {
            "bin_dir": str, "timeout_s": (int, float), "completion_source": str, "accounting_dir": str,
            "sched_config": str, "priority_sort_check": str, "max_boosted": int, "unlimited_time_s": (int, float),
            "state_file": str, "default_vo": str, "vo_from": str}
        lists = {"command_prefix", "queues", "vos", "vo_shares", "interactive_queues"}
        ignored = {"kind", "mode", "poll_interval_s"}
        known = set(simple) | lists | set(RETRY_KEYS) | ignored | {"vo_accounts", "interactive_max_time_s"}
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
                numbers = key == "vo_shares"
                item_type: type | tuple[type, ...] = (int, float) if numbers else str
                if not isinstance(value, list) or not all(
                        isinstance(v, item_type) and not isinstance(v, bool) for v in value):
                    raise bad(key, f"expected a list of {'numbers' if numbers else 'strings'}")
                if key == "vo_shares":
                    kwargs[key] = tuple(float(v) for v in value)
                elif key == "interactive_queues":
                    rule["interactive_partitions"] = frozenset(value)
                elif key == "queues":
                    kwargs[key] = frozenset(value)
                else:
                    kwargs[key] = tuple(value)
            elif key == "vo_accounts":
                if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
                    raise bad(key, "expected a table of name = \"VO\"")
                kwargs[key] = dict(value)
            elif key == "interactive_max_time_s" or key in RETRY_KEYS:
                read_number_key(key, value, bad, rule, retry)
            else:
                read_typed_key(key, value, simple[key], bad, kwargs)
        return build_config(cls, kwargs, rule, retry, source)
