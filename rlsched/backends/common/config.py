"""What every backend's ``[backend]`` table shares: the retry keys, the class rule's time limit, the plain
typed keys, and the final build that turns a refused value into one line naming the file.

Each backend (``SlurmBackendConfig.from_table``, ``PBSBackendConfig.from_table``) reads its own keys and
hands these to the helpers below, so that a rule such as "``retry_attempts`` is an integer" holds for all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from rlsched.backends.common.runner import RetryPolicy
from rlsched.core.classify import ClassRule

#: TOML key -> :class:`RetryPolicy` field.
RETRY_KEYS = {"retry_attempts": "attempts", "retry_base_delay_s": "base_delay_s",
              "retry_max_delay_s": "max_delay_s"}
#: Keys read as seconds (a TOML integer becomes a float).
SECONDS_KEYS = ("timeout_s", "unlimited_time_s")

Bad = Callable[[str, str], ValueError]
ConfigT = TypeVar("ConfigT")


def read_number_key(key: str, value: Any, bad: Bad, rule: dict[str, Any], retry: dict[str, Any]) -> None:
    """``interactive_max_time_s`` (into ``rule``) or a retry key (into ``retry``): a number >= 0, and
    ``retry_attempts`` an integer (2.5 attempts is a typo, not 2)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise bad(key, f"expected a number >= 0, got {value!r}")
    if key == "retry_attempts" and not isinstance(value, int):
        raise bad(key, f"expected an integer, got {value!r}")
    if key in RETRY_KEYS:
        retry[RETRY_KEYS[key]] = int(value) if key == "retry_attempts" else float(value)
    else:
        rule[key] = float(value)


def read_typed_key(key: str, value: Any, expected: type | tuple[type, ...], bad: Bad,
                   kwargs: dict[str, Any]) -> None:
    """A plain key of one of the ``expected`` types (a TOML boolean is never a number)."""
    given: Any = value      # isinstance against a runtime tuple narrows to object; the check is below
    if isinstance(value, bool) or not isinstance(value, expected):
        raise bad(key, f"wrong type {type(value).__name__}")
    kwargs[key] = float(given) if key in SECONDS_KEYS else given


def build_config(cls: Callable[..., ConfigT], kwargs: dict[str, Any], rule: dict[str, Any],
                 retry: dict[str, Any], source: str) -> ConfigT:
    """``cls(**kwargs)`` with the class rule and retry policy read; a value they refuse names ``source``."""
    try:
        if rule:
            kwargs["class_rule"] = ClassRule(**rule)
        if retry:
            kwargs["retry"] = RetryPolicy(**retry)
        return cls(**kwargs)
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
