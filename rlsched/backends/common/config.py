"""What every backend's ``[backend]`` table shares: :class:`BackendConfig`, the keys of
:data:`rlsched.config_schema.BACKEND_COMMON` (commands, retries, VOs, the class rule's time limit, the undo
record) and the one ``from_table`` every kind uses.

A backend kind's config subclasses it, adds its own fields and names its schema section
(:data:`~rlsched.config_schema.SLURM`, :data:`~rlsched.config_schema.PBS`) and its class-rule keys; reading the
table, folding the retry keys into a :class:`RetryPolicy` and the class rule's keys into a :class:`ClassRule`,
and turning a refused value into one line naming the file are done here, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

from rlsched.backends.common.runner import RetryPolicy
from rlsched.config_schema import BACKEND_COMMON, Section
from rlsched.core.classify import ClassRule, VOMapping

#: TOML key -> :class:`RetryPolicy` field.
RETRY_KEYS = {"retry_attempts": "attempts", "retry_base_delay_s": "base_delay_s", "retry_max_delay_s": "max_delay_s"}


@dataclass(frozen=True)
class BackendConfig:
    """The keys every backend kind shares (their defaults are the schema's; a test checks they agree).

    - ``bin_dir``: where the batch system's commands are (None: PATH).
    - ``timeout_s`` and ``retry``: each command's time limit, and how a failing one is retried.
    - ``vos``, ``vo_shares``, ``vo_accounts``, ``default_vo``: the VO mapping (:class:`VOMapping`).
    - ``class_rule``: which jobs are interactive (:class:`ClassRule`).
    - ``max_boosted``: how many top-ranked jobs boost mode raises.
    - ``unlimited_time_s``: the requested time given to jobs without a time limit.
    - ``state_file``: where the record of what rlsched changed is kept, so that a restarted daemon can undo it.
    """

    #: The kind's schema section, and its class-rule keys (TOML key -> :class:`ClassRule` field).
    SECTION: ClassVar[Section] = BACKEND_COMMON
    RULE_KEYS: ClassVar[Mapping[str, str]] = {"interactive_max_time_s": "interactive_max_time_s"}

    bin_dir: str | None = None
    timeout_s: float = 30.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    class_rule: ClassRule = field(default_factory=ClassRule)
    vos: tuple[str, ...] = ()
    vo_shares: tuple[float, ...] | None = None
    vo_accounts: Mapping[str, str] = field(default_factory=dict)
    default_vo: str | None = None
    max_boosted: int = 32
    unlimited_time_s: float = 7 * 86400.0
    state_file: str | None = None

    def __post_init__(self) -> None:
        # A config built in code gets the checks a file's gets from the reader.
        self.SECTION.check_fields(self)
        self.vo_mapping()  # vos, vo_shares, vo_accounts and default_vo agree

    def vo_mapping(self) -> VOMapping:
        return VOMapping(self.vos, self.vo_shares, self.vo_accounts, self.default_vo)

    @classmethod
    def from_table(cls, table: Mapping[str, Any], source: str = "config") -> Self:
        """Build from a ``[backend]`` table read by :attr:`SECTION`: unknown keys, wrong types and values out
        of range are one ``ValueError`` line naming ``source`` and the key (``backend.KEY``); the daemon's keys
        (``kind``, ``mode``, ``poll_interval_s``) are left to it."""
        values = cls.SECTION.read(table, source, error=ValueError)
        retry = {RETRY_KEYS[key]: values.pop(key) for key in list(values) if key in RETRY_KEYS}
        rule = {cls.RULE_KEYS[key]: values.pop(key) for key in list(values) if key in cls.RULE_KEYS}
        try:
            if rule:
                values["class_rule"] = ClassRule(**rule)
            if retry:
                values["retry"] = RetryPolicy(**retry)
            return cls(**values)
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
