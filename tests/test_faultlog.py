"""A persistent fault is logged once, then reminded at a bounded rate, and its end once (issue 24)."""

from __future__ import annotations

import logging

import pytest

from rlsched.faultlog import FaultLog


def test_once_then_a_reminder_per_period_then_the_recovery_once(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    faults = FaultLog(logging.getLogger("t"), remind_every_s=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.INFO):
        logged = []
        for second in range(0, 150, 2):  # a fault every 2 s for 150 s
            now[0] = float(second)
            logged.append(faults.failed("ckpt", logging.ERROR, "checkpoint failed: %s", "disk full"))
        assert sum(logged) == 3  # at 0, 60 and 120 s
        assert faults.recovered("ckpt", "checkpoint works again")
        assert not faults.recovered("ckpt", "checkpoint works again")  # once
    lines = caplog.messages
    assert lines[0] == "checkpoint failed: disk full"
    assert lines[1] == "checkpoint failed: disk full (still so: 30 more times in the last 60 s, first 60 s ago)"
    assert lines[3] == "checkpoint works again (after 148 s)" and len(lines) == 4


def test_a_traceback_goes_with_the_first_line_only(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    faults = FaultLog(logging.getLogger("t"), remind_every_s=1.0, clock=lambda: now[0])
    for t in (0.0, 0.5, 1.0):
        now[0] = t
        try:
            raise OSError("read-only file system")
        except OSError:
            faults.failed("k", logging.ERROR, "failed", exc_info=True)
    assert [r.exc_info is not None and r.exc_info[0] is OSError for r in caplog.records] == [True, False]


def test_keys_are_separate_and_a_fault_unseen_for_a_period_is_new_again(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    faults = FaultLog(logging.getLogger("t"), remind_every_s=10.0, clock=lambda: now[0])
    assert faults.failed("a", logging.WARNING, "a") and faults.failed("b", logging.WARNING, "b")
    assert not faults.failed("a", logging.WARNING, "a")
    now[0] = 25.0  # "a" not seen for more than a period: a new fault
    assert faults.failed("a", logging.WARNING, "a")
    assert caplog.messages == ["a", "b", "a"]
