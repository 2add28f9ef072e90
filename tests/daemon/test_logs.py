"""``[log]``: level and JSON lines (rlsched.daemon.logs)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from rlsched.daemon.config import LogConfig
from rlsched.daemon.logs import JsonFormatter, configure_logging


@pytest.fixture
def root() -> Iterator[logging.Logger]:
    logger = logging.getLogger()
    handlers, level = list(logger.handlers), logger.level
    stream = logging.StreamHandler(io.StringIO())
    logger.handlers = [stream]
    logger.setLevel(logging.WARNING)
    yield logger
    logger.handlers, logger.level = handlers, level


def test_json_lines_carry_level_logger_message_and_exception(root: logging.Logger) -> None:
    assert configure_logging(LogConfig(level="info", format="json")) == logging.INFO
    stream = root.handlers[0].stream  # type: ignore[attr-defined]
    log = logging.getLogger("rlsched.test")
    log.debug("hidden")
    log.info("cycle %d: %s", 3, "quote \" and\nnewline")
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2                                   # one line each, the newline escaped, no debug
    first, second = (json.loads(line) for line in lines)
    assert first["level"] == "info" and first["logger"] == "rlsched.test"
    assert first["message"] == "cycle 3: quote \" and\nnewline" and first["time"].endswith("Z")
    assert second["level"] == "error" and "ValueError: boom" in second["exception"]


def test_the_config_level_and_a_verbose_command_line(root: logging.Logger) -> None:
    assert configure_logging(LogConfig(level="warning")) == logging.WARNING
    root.setLevel(logging.DEBUG)                             # rlsched -vv: more verbose than the config
    assert configure_logging(LogConfig(level="error")) == logging.DEBUG
    assert not isinstance(root.handlers[0].formatter, JsonFormatter)
