"""sd_notify over a real datagram socket (path and abstract), and the daemon loop's use of it."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from rlsched.daemon.notify import Notifier, socket_address, watchdog_interval_s
from tests.fakes.slurm import SyntheticSlurm, make_daemon, synthetic_squeue_json


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(2.0)
    try:
        yield sock, str(path)
    finally:
        sock.close()


def received(sock: socket.socket) -> list[dict[str, str]]:
    """Every datagram waiting on ``sock``, each as its KEY=VALUE assignments."""
    out: list[dict[str, str]] = []
    sock.settimeout(0.2)
    while True:
        try:
            data = sock.recv(4096)
        except TimeoutError:
            return out
        out.append(dict(line.split("=", 1) for line in data.decode().split("\n")))


def test_socket_address_kinds() -> None:
    assert socket_address("/run/systemd/notify") == "/run/systemd/notify"
    assert socket_address("@abstract/name") == b"\0abstract/name"
    assert socket_address(None) is None
    assert socket_address("") is None
    assert socket_address("vsock:2:1234") is None  # not spoken: ignored, not an error


def test_watchdog_interval_only_for_this_process() -> None:
    me = str(os.getpid())
    assert watchdog_interval_s({"WATCHDOG_USEC": "300000000", "WATCHDOG_PID": me}) == 300.0
    assert watchdog_interval_s({"WATCHDOG_USEC": "300000000", "WATCHDOG_PID": "1"}) is None
    assert watchdog_interval_s({"WATCHDOG_USEC": "junk"}) is None
    assert watchdog_interval_s({}) is None


def test_ready_once_then_watchdog_only_after_working_cycles(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    notifier = Notifier(path)
    notifier.cycle_done(["view"], None)  # a failed view: no READY, no WATCHDOG
    first = received(sock)
    assert len(first) == 1 and "READY" not in first[0] and "WATCHDOG" not in first[0]
    assert "view" in first[0]["STATUS"]
    notifier.cycle_done([], 12)
    notifier.cycle_done(["checkpoint"], 11)  # not a working phase: still a watchdog ping
    second = received(sock)
    assert second[0]["READY"] == "1" and second[0]["WATCHDOG"] == "1" and "12 pending" in second[0]["STATUS"]
    assert "READY" not in second[1] and second[1]["WATCHDOG"] == "1"
    notifier.stopping()
    assert received(sock)[0]["STOPPING"] == "1"


def test_a_newline_in_a_value_cannot_forge_an_assignment(listener: tuple[socket.socket, str]) -> None:
    sock, path = listener
    Notifier(path).send(STATUS="x\nREADY=1")
    (message,) = received(sock)
    assert list(message) == ["STATUS"]


def test_abstract_socket() -> None:
    name = f"rlsched-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(b"\0" + name.encode())
        assert Notifier(socket_address("@" + name)).send(READY=1)
        sock.settimeout(2.0)
        assert sock.recv(100) == b"READY=1"


def test_a_missing_socket_is_not_an_error(tmp_path: Path) -> None:
    notifier = Notifier(str(tmp_path / "absent.sock"))
    assert not notifier.send(READY=1)
    notifier.cycle_done([], 0)  # still nothing raised
    assert not notifier.ready


def test_daemon_loop_notifies_systemd(
    listener: tuple[socket.socket, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, path = listener
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    daemon = make_daemon(SyntheticSlurm(synthetic_squeue_json(5)), str(tmp_path / "state"), "shadow")
    assert daemon.run(once=True, serve_metrics=False) == 0
    messages = received(sock)
    assert messages[0]["READY"] == "1" and messages[0]["WATCHDOG"] == "1"
    assert "5 pending" in messages[0]["STATUS"]
    assert messages[-1]["STOPPING"] == "1"
