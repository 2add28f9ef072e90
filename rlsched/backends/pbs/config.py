"""Configuration of the PBS backend (``[backend] kind = "pbs"``, docs/pbs.md): how to run the commands, the
levers' settings, the scope (queues), the class rule and the VO mapping.

:meth:`PBSBackendConfig.from_table` (:meth:`BackendConfig.from_table` with the schema section
:data:`rlsched.config_schema.PBS`) rejects bad keys with a one-line error naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from rlsched.backends.common.config import BackendConfig
from rlsched.config_schema import PBS, Section


@dataclass(frozen=True)
class PBSBackendConfig(BackendConfig):
    """Everything the PBS backend needs to know about the site, beyond the keys every backend shares
    (:class:`~rlsched.backends.common.config.BackendConfig`).

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

    SECTION: ClassVar[Section] = PBS
    #: A PBS queue is the class rule's partition.
    RULE_KEYS: ClassVar[Mapping[str, str]] = {
        "interactive_queues": "interactive_partitions",
        "interactive_max_time_s": "interactive_max_time_s",
    }

    command_prefix: tuple[str, ...] = ()
    queues: frozenset[str] = frozenset()
    vo_from: str = "project"
    completion_source: str = "history"
    accounting_dir: str = "/var/spool/pbs/server_priv/accounting"
    sched_config: str = "/var/spool/pbs/sched_priv/sched_config"
    priority_sort_check: str = "warn"
    #: The registry name (``[backend] kind``; see :mod:`rlsched.backends`).
    kind: str = field(default="pbs", init=False, repr=False)

    def gate_problem(self) -> tuple[str, str] | None:
        """Gate mode needs the gated queues: in them a held job waits for rlsched."""
        if not self.queues:
            return "queues", "gate mode needs the gated queues: in them a held job waits for rlsched (docs/pbs.md)"
        return None
