"""Every exception rlsched raises on purpose derives from :class:`RlschedError`.

``except RlschedError`` catches a foreseen failure of any layer — a refused config, bad input, a batch-system
command that failed — and the CLI prints it as one line (``Error: <message>``); an exception that is not an
``RlschedError`` is a bug.  Most also derive from the builtin a caller would expect (``ValueError`` for bad
input), so existing ``except ValueError`` clauses keep working.

The main families, each defined beside the code that raises it:

- :class:`rlsched.backends.common.runner.BackendError` — a batch system's command failed or printed what
  cannot be read (``SlurmError``, ``PBSError`` and their parse/command errors below it);
- the config readers' errors (``ConfigError``, ``LeasingConfigError``), ``PolicyError``, ``ObjectiveError``;
- input formats (``HistoryFormatError``, ``SwfFormatError``, ``ShadowLogError``, …).

The root itself is defined in :mod:`rlsched.core.errors`, because the core imports nothing else of rlsched.
"""

from __future__ import annotations

from rlsched.core.errors import RlschedError

__all__ = ["RlschedError"]
