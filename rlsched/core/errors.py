"""The root of every exception rlsched raises on purpose: :class:`RlschedError`.

It lives in the core because the core may import nothing else of rlsched and its own errors
(:class:`~rlsched.core.policies.spec.PolicyError`, …) derive from it too; the rest of the package names it
through :mod:`rlsched.errors`.
"""

from __future__ import annotations


class RlschedError(Exception):
    """A failure rlsched foresaw and words in one line (bad input, a refused config, a batch-system command
    that failed).  The CLI prints it as ``Error: <message>`` with no traceback; anything else is a bug."""
