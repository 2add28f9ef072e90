"""The shared command runner decodes the batch system's output with replacement, and counts it (issue 16)."""

from __future__ import annotations

import sys

from rlsched.backends.common.runner import CommandExecutor, SubprocessRunner, decode_output


def test_decode_output_replaces_and_counts_invalid_utf8_only() -> None:
    assert decode_output("né \ufffd".encode()) == ("né \ufffd", 0)      # a real U+FFFD is no replacement
    text, bad = decode_output(b'{"name": "\xff"} \xc3')
    assert text == '{"name": "\ufffd"} \ufffd' and bad == 2


def test_a_real_command_printing_invalid_utf8_is_read_and_counted() -> None:
    executor = CommandExecutor(SubprocessRunner())
    code = "import sys; sys.stdout.buffer.write(b'job \\xff ok\\n'); sys.stderr.buffer.write(b'\\xfe')"
    out = executor.run([sys.executable, "-c", code], lambda r: r.stdout)
    assert out == "job \ufffd ok\n"
    assert executor.errors["decode_replacement"] == 2
