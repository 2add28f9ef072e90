"""The site's provider command (its cloud CLI or OpenStack script), called with argument lists.

Contract (docs/leasing-live.md; the Slurm hooks in ``plugins/slurm/`` use the same one):

- ``CMD list``: the instances that exist now, one per line, ``NODE [STATE…]`` (only the name is used);
- ``CMD resume NODE…``: start instances for these Slurm node names (the hooks call it);
- ``CMD suspend NODE…``: end these instances; ending an absent one is success.

Calls are retried with backoff and their failures counted by kind (``rlsched_lease_provider_errors_total``)
through the same executor the Slurm backend uses.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from rlsched.backends.common.runner import CommandExecutor, RetryPolicy, SubprocessRunner


def parse_instance_list(text: str) -> list[str]:
    """Node names of ``CMD list`` (first word of each non-empty, non-comment line)."""
    names: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            names.append(line.split()[0])
    return names


class ProviderClient:
    """``list`` and ``suspend`` through the configured argv (never a shell string)."""

    def __init__(
        self,
        argv: Sequence[str],
        timeout_s: float = 60.0,
        env: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not argv:
            raise ValueError("provider command is empty")
        self.argv = list(argv)
        self.executor = CommandExecutor(SubprocessRunner(env), timeout_s, retry or RetryPolicy(attempts=2))

    @property
    def errors(self) -> Counter[str]:
        return self.executor.errors

    def list_instances(self) -> list[str]:
        return self.executor.run([*self.argv, "list"], lambda r: parse_instance_list(r.stdout))

    def suspend(self, names: Sequence[str]) -> None:
        if names:
            self.executor.run([*self.argv, "suspend", *names], lambda r: None)
