"""``[log]``: level and JSON lines (rlsched.daemon.logs)."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

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
    log.info("cycle %d: %s", 3, 'quote " and\nnewline')
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("failed")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2  # one line each, the newline escaped, no debug
    first, second = (json.loads(line) for line in lines)
    assert first["level"] == "info" and first["logger"] == "rlsched.test"
    assert first["message"] == 'cycle 3: quote " and\nnewline' and first["time"].endswith("Z")
    assert second["level"] == "error" and "ValueError: boom" in second["exception"]


def test_the_config_level_and_a_verbose_command_line(root: logging.Logger) -> None:
    assert configure_logging(LogConfig(level="warning")) == logging.WARNING
    root.setLevel(logging.DEBUG)  # rlsched -vv: more verbose than the config
    assert configure_logging(LogConfig(level="error")) == logging.DEBUG
    assert not isinstance(root.handlers[0].formatter, JsonFormatter)


def test_the_daemon_writes_json_lines_from_the_config(tmp_path: Path) -> None:
    # No Slurm commands in bin_dir: the cycle's view fails and is logged; every stderr line is one JSON object.
    (tmp_path / "no-bin").mkdir()
    config = tmp_path / "rlsched.toml"
    config.write_text(
        f'[backend]\nmode = "shadow"\nbin_dir = "{tmp_path / "no-bin"}"\nretry_attempts = 1\n'
        f'[state]\ndir = "{tmp_path / "state"}"\n[metrics]\nlisten = "off"\n'
        '[log]\nlevel = "info"\nformat = "json"\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "rlsched", "daemon", "--once", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    records = [json.loads(line) for line in done.stderr.splitlines()]
    assert records and all({"time", "level", "logger", "message"} <= set(r) for r in records)
    assert any(r["level"] == "warning" and "view failed" in r["message"] for r in records), done.stderr
    assert not any(r["message"].startswith("cycle: ") and r["level"] == "info" for r in records)
