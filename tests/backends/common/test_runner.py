"""The shared command runner decodes the batch system's output with replacement, and counts it (issue 16);
it logs invalid UTF-8 that every answer repeats once, not every cycle (issue 24)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import pytest

from rlsched.backends.common.runner import CommandExecutor, CommandResult, SubprocessRunner, decode_output


def test_decode_output_replaces_and_counts_invalid_utf8_only() -> None:
    assert decode_output("né \ufffd".encode()) == ("né \ufffd", 0)  # a real U+FFFD is no replacement
    text, bad = decode_output(b'{"name": "\xff"} \xc3')
    assert text == '{"name": "\ufffd"} \ufffd' and bad == 2


def test_a_real_command_printing_invalid_utf8_is_read_and_counted() -> None:
    executor = CommandExecutor(SubprocessRunner())
    code = "import sys; sys.stdout.buffer.write(b'job \\xff ok\\n'); sys.stderr.buffer.write(b'\\xfe')"
    out = executor.run([sys.executable, "-c", code], lambda r: r.stdout)
    assert out == "job \ufffd ok\n"
    assert executor.errors["decode_replacement"] == 2


def test_command_output_reaches_the_json_readers_as_the_bytes_it_came_as() -> None:
    ascii_doc = b'{"jobs": []}'
    result = CommandResult(("squeue",), 0, ascii_doc, "")
    assert result.stdout_bytes is ascii_doc  # no str copy on the common path
    assert result.stdout == '{"jobs": []}' and result.decode_replacements == 0
    utf8_doc = '{"name": "né"}'.encode()
    result = CommandResult(("squeue",), 0, utf8_doc, "")
    assert result.stdout_bytes is utf8_doc and result.stdout == '{"name": "né"}'
    assert result.decode_replacements == 0
    bad = CommandResult(("squeue",), 0, b'{"name": "\xff"}', "", 2)
    assert bad.decode_replacements == 3  # its own one, added to what the caller counted
    assert bad.stdout_bytes == '{"name": "\ufffd"}'.encode()
    moved = bad.with_argv(["qstat"])
    assert moved.argv == ("qstat",) and moved == CommandResult(("qstat",), 0, '{"name": "\ufffd"}', "", 3)


def test_invalid_utf8_in_every_answer_is_logged_once_then_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    bad = b'{"jobs": [{"name": "\xff"}]}'
    answers = [bad] * 20 + [b'{"jobs": []}']

    def runner(argv: Sequence[str], timeout_s: float) -> CommandResult:
        return CommandResult(tuple(argv), 0, answers.pop(0), "")

    executor = CommandExecutor(runner)
    with caplog.at_level(logging.WARNING):
        for _ in range(21):  # a queued job's bad name, cycle after cycle, then gone
            executor.run(["squeue", "--json"], lambda r: r.stdout)
    assert executor.errors["decode_replacement"] == 20  # every one counted
    assert [m for m in caplog.messages if "UTF-8" in m] == [
        "squeue: 1 invalid UTF-8 sequence(s) in its output, replaced",
        "squeue: its output is valid UTF-8 again (after 0 s)",
    ]
