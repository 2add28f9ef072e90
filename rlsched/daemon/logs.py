"""The daemon's log output from ``[log]`` (:class:`rlsched.daemon.config.LogConfig`): level and format.

``format = "json"`` writes one JSON object a line (``time`` ISO 8601 UTC, ``level``, ``logger``,
``message``, and ``exception`` with the traceback when there is one), for journald/Loki/Elasticsearch
pipelines that parse fields instead of text.  ``format = "text"`` keeps the plain ``TIME LEVEL LOGGER:
MESSAGE`` lines.  The daemon logs one line per cycle at DEBUG only (8,640 a day at the default poll
interval would drown the rest); what it did is in the metrics and the decision log.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from rlsched.daemon.config import LogConfig

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """One JSON object per record; the message is formatted with its arguments first."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure_logging(config: LogConfig) -> int:
    """Apply ``[log]`` to the root logger and return the level set.

    A ``-v``/``-vv`` given on the command line (the root level already below WARNING) can only make the
    output more verbose than the config says, never less."""
    root = logging.getLogger()
    level = logging.getLevelName(config.level.upper())
    assert isinstance(level, int)
    if root.handlers and root.level < logging.WARNING:
        level = min(level, root.level)
    if not root.handlers:
        root.addHandler(logging.StreamHandler())
    formatter: logging.Formatter = JsonFormatter() if config.format == "json" else logging.Formatter(TEXT_FORMAT)
    for handler in root.handlers:
        handler.setFormatter(formatter)
    root.setLevel(level)
    return level
