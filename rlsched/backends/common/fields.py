"""Typed access to a batch system's JSON output: every bad field is a one-line parse error naming the
command and the path in the document (``squeue --json: bad output at jobs[3].cpus: expected an integer``).

Shared by the backends' parsers; each passes its own parse-error class (``SlurmParseError``, ``PBSParseError``)
so that callers can tell the batch systems apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from rlsched.backends.common.runner import BackendParseError

#: Builds a backend's parse error from (command, where, message): its :class:`BackendParseError` subclass.
ParseErrorClass = Callable[[str, str, str], BackendParseError]

_INT_LIMIT = 2**63
_DECIMAL = re.compile(r"-?\d{1,18}")


def load_json_object(text: str | bytes, command: str, error: ParseErrorClass) -> dict[str, Any]:
    """The JSON object a command printed; anything else (not JSON, another top-level type) is ``error``."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise error(command, "", f"not JSON ({str(exc)[:120]})") from None
    if not isinstance(doc, dict):
        raise error(command, "", f"top level is {type(doc).__name__}, expected an object")
    return doc


class JsonFields:
    """Typed access to one JSON object, with errors (of the class ``error``) naming the command and the path.

    ``lenient``: take a number where a string is expected and a decimal string where an integer is (PBS's
    ``qstat -F json`` prints some values either way); otherwise the JSON types must be the expected ones.
    """

    def __init__(self, obj: object, command: str, where: str, error: ParseErrorClass, lenient: bool = False) -> None:
        if not isinstance(obj, dict):
            raise error(command, where, f"expected an object, got {type(obj).__name__}")
        self.obj: Mapping[str, Any] = obj
        self.command = command
        self.where = where
        self.error_class = error
        self.lenient = lenient

    def error(self, key: str, message: str) -> BackendParseError:
        return self.error_class(self.command, f"{self.where}.{key}", message)

    def sub(self, key: str) -> JsonFields:
        """The object under ``key`` (an absent or null one: empty)."""
        value = self.obj.get(key)
        return JsonFields(
            {} if value is None else value, self.command, f"{self.where}.{key}", self.error_class, self.lenient
        )

    def text(self, key: str, default: str | None = None) -> str:
        """A string; ``default`` None: the key must be there (and not null)."""
        if default is None and key not in self.obj:
            raise self.error(key, "missing")
        value = self.obj.get(key)
        if value is None and default is not None:
            return default
        if isinstance(value, str):
            return value
        if self.lenient and isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise self.error(key, f"expected a string, got {value!r:.60}")

    def opt_int(self, key: str, default: int | None = None) -> int | None:
        """An integer, or ``default`` when the key is absent, None when it is null."""
        value = self.obj.get(key, default)
        if value is None:
            return None
        if self.lenient and isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
            return int(value)
        # bool is an int subclass in Python; a JSON true is not a number here.
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"expected an integer or null, got {value!r:.60}")
        if not -_INT_LIMIT < value < _INT_LIMIT:
            raise self.error(key, f"integer out of range: {value}")
        return value

    def req_int(self, key: str) -> int:
        value = self.opt_int(key) if key in self.obj else None
        if value is None:
            raise self.error(key, "missing or null, expected an integer")
        return value

    def text_list(self, key: str) -> tuple[str, ...]:
        """A list of strings (absent or null: empty)."""
        value = self.obj.get(key, [])
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.error(key, f"expected a list of strings, got {value!r:.60}")
        return tuple(value)
