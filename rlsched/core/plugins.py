"""Code other packages add to rlsched through entry points (``rlsched.backends``, ``rlsched.policies``).

A package declares, in its ``pyproject.toml``::

    [project.entry-points."rlsched.backends"]
    toyq = "rlsched_example_backend:BACKEND"      # a rlsched.backends.BackendKind

    [project.entry-points."rlsched.policies"]
    longest-first = "rlsched_example_backend:POLICY"     # a PolicyEntry (or a tuple of them)

and the registry that owns the group loads them the first time it is consulted (docs/extending.md).  A plugin
that cannot be loaded does not stop the others: its error — one line naming the entry point — is logged once
and raised when its name is asked for.

Reading the installed packages' metadata is the only thing done here (no subprocess, no clock): the core
stays pure, and the policy registry can load its plugins itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from rlsched.core.errors import RlschedError

log = logging.getLogger(__name__)


class PluginError(RlschedError):
    """A plugin's entry point that cannot be loaded or does not give what its group expects."""


@dataclass(frozen=True)
class Loaded:
    """One entry point of a group: what it gave, or the one-line error saying why it gave nothing."""

    name: str
    value: Any = None
    error: PluginError | None = None


def describe(point: EntryPoint) -> str:
    """``group:name = value (from distribution)``: how an error names the entry point."""
    dist = getattr(point, "dist", None)
    source = f" (from {dist.name} {dist.version})" if dist is not None else ""
    return f"entry point {point.group}:{point.name} = {point.value!r}{source}"


def load_group(group: str, check: Callable[[str, Any], str | None]) -> list[Loaded]:
    """Every entry point of ``group``, loaded; ``check(name, value)`` says what is wrong with a value (None:
    nothing).  Errors are logged (one line each) and returned, never raised here."""
    loaded = []
    for point in sorted(entry_points(group=group), key=lambda p: p.name):
        try:
            value = point.load()
        except Exception as exc:  # a plugin's import can fail in any way: it must not stop rlsched
            text = " ".join(str(exc).split()) or "(no message)"
            error = PluginError(f"{describe(point)} cannot be loaded: {type(exc).__name__}: {text}")
        else:
            problem = check(point.name, value)
            if problem is None:
                loaded.append(Loaded(point.name, value))
                continue
            error = PluginError(f"{describe(point)}: {problem}")
        log.error("%s", error)
        loaded.append(Loaded(point.name, error=error))
    return loaded


class PluginGroup:
    """One entry-point group, loaded once per process: ``add(name, value)`` takes what each entry point gives
    (after ``check``), :attr:`broken` keeps the error of each one that gave nothing, by name."""

    def __init__(self, group: str, check: Callable[[str, Any], str | None], add: Callable[[str, Any], None]) -> None:
        self.group = group
        self.check = check
        self.add = add
        self.loaded = False
        self.broken: dict[str, PluginError] = {}

    def load(self, reload: bool = False) -> None:
        """Load the group (once; ``reload``: again, for a package installed since)."""
        if self.loaded and not reload:
            return
        self.loaded = True
        for item in load_group(self.group, self.check):
            if item.error is not None:
                self.broken[item.name] = item.error
            else:
                self.broken.pop(item.name, None)
                self.add(item.name, item.value)
