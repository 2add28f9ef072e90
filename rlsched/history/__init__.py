"""``rlsched history import``: a site's own records (sacct, sacct --json, the jobcomp file) turned into a
trace the simulator replays — SWF plus a sidecar of what SWF has no field for (docs/history.md).

- :mod:`rlsched.history.records` — one job of any source, and the drop rules shared by all sources;
- :mod:`rlsched.history.sacct` — ``sacct --parsable2`` text, ``sacct --json``, and ``sacct`` run live;
- :mod:`rlsched.history.jobcomp` — the ``jobcomp/filetxt`` file, read so that no job name forges a record;
- :mod:`rlsched.history.trace` — classes and VOs by the daemon config, SWF + ``.jobs.csv`` + ``.meta.json``;
- :mod:`rlsched.history.sources` — the ``--from`` registry (the extension point for PBS accounting logs),
  the site settings from a daemon config, :func:`import_history`.
- :mod:`rlsched.history.warmup` — ``rlsched history predictor``: the deployed policy's runtime predictor taught
  an imported trace, keyed as the live view keys jobs (not imported here: it builds the daemon's agent).

The simulator reads the result back with :func:`rlsched.sim.traces.sidecar.read_trace`.
"""

from rlsched.history.records import DROP_REASONS, DropLog, HistoryFormatError, HistoryJob, drop_reason
from rlsched.history.sources import (
    SOURCES,
    HistorySource,
    ImportRequest,
    SiteSettings,
    import_history,
    register_source,
    site_settings,
)
from rlsched.history.trace import SIDECAR_COLUMNS, HistoryTrace, build_trace, sidecar_paths, write_trace

__all__ = [
    "DROP_REASONS",
    "SIDECAR_COLUMNS",
    "SOURCES",
    "DropLog",
    "HistoryFormatError",
    "HistoryJob",
    "HistorySource",
    "HistoryTrace",
    "ImportRequest",
    "SiteSettings",
    "build_trace",
    "drop_reason",
    "import_history",
    "register_source",
    "sidecar_paths",
    "site_settings",
    "write_trace",
]
