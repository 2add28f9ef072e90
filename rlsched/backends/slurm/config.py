"""Configuration of the Slurm backend: commands, timeouts, levers, scope, and its class rule and VO mapping
(:mod:`rlsched.core.classify`).

The daemon reads these from its TOML file (``[backend]`` table, see ``docs/slurm.md``) through
:meth:`SlurmBackendConfig.from_table`, which rejects bad keys with a one-line error naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlsched.backends.common.config import RETRY_KEYS, build_config, read_number_key, read_typed_key
from rlsched.backends.common.runner import RetryPolicy
from rlsched.core.classify import ClassRule, VOMapping

COMPLETION_SOURCES = ("auto", "sacct", "jobcomp", "squeue")
#: The most jobs boost mode may renice: each costs an ``scontrol`` call whenever its rank changes, so a
#: thousand already means up to a thousand commands in one cycle.
MAX_BOOSTED_LIMIT = 1000


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
    #: The registry name (``[backend] kind``; see :mod:`rlsched.backends`).
    kind: str = field(default="slurm", init=False, repr=False)

    def __post_init__(self) -> None:
        if self.completion_source not in COMPLETION_SOURCES:
            raise ValueError(f"completion_source must be one of {COMPLETION_SOURCES}, "
                             f"got {self.completion_source!r}")
        if not 1 <= self.max_boosted <= MAX_BOOSTED_LIMIT:
            raise ValueError(f"key 'max_boosted': must lie in [1, {MAX_BOOSTED_LIMIT}], got {self.max_boosted}")
        if self.timeout_s <= 0 or self.unlimited_time_s <= 0:
            raise ValueError("timeout_s and unlimited_time_s must be > 0")
        self.vo_mapping()       # validates vos / vo_shares / vo_accounts / default_vo

    def gate_problem(self) -> tuple[str, str] | None:
        """Gate mode needs the gated partitions: in them a held job waits for rlsched."""
        if not self.partitions:
            return "partitions", ("gate mode needs the gated partitions: in them a held job waits for rlsched "
                                  "(see docs/daemon.md)")
        return None

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
        ignored = {"kind", "mode", "poll_interval_s"}
        known = set(simple) | lists | rule_keys | set(RETRY_KEYS) | ignored | {"vo_accounts"}
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
            elif key == "interactive_max_time_s" or key in RETRY_KEYS:
                read_number_key(key, value, bad, rule, retry)
            else:
                read_typed_key(key, value, simple[key], bad, kwargs)
        return build_config(cls, kwargs, rule, retry, source)
