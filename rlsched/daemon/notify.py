"""systemd's service notification protocol (``sd_notify``), without a dependency.

With ``Type=notify`` and ``WatchdogSec=`` (``etc/systemd/rlsched.service``) systemd hands the daemon a datagram
socket in ``$NOTIFY_SOCKET``; the daemon writes newline-separated ``KEY=VALUE`` assignments to it:

- ``READY=1`` once the first cycle succeeded (the unit turns "active" only when rlsched really works),
- ``WATCHDOG=1`` after every successful cycle (no ping for ``WatchdogSec`` — a hung loop or a lasting view
  failure — and systemd restarts the service; in gate mode the gate watchdog releases the held jobs),
- ``STOPPING=1`` when it leaves the loop, ``STATUS=...`` a one-line summary ``systemctl status`` shows.

Outside systemd (no ``$NOTIFY_SOCKET``) every call does nothing.  A failing socket is logged once and never
raised: the protocol is advisory and must not stop scheduling.  The format is systemd's sd_notify(3).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping, Sequence

log = logging.getLogger(__name__)

#: The cycle phases that must succeed for a cycle to count as working (a failed checkpoint or metrics export
#: is counted and logged but does not stop scheduling, so it does not starve the watchdog).
WORKING_PHASES = frozenset({"view", "decide", "act"})


def socket_address(value: str | None) -> str | bytes | None:
    """The address ``$NOTIFY_SOCKET`` names: a filesystem path, or an abstract socket (``@name``, sent as
    ``\\0name``); None when unset or of a kind this module does not speak (e.g. ``vsock:``)."""
    if not value:
        return None
    if value.startswith("@"):
        return b"\0" + value[1:].encode()
    if value.startswith("/"):
        return value
    return None


def watchdog_interval_s(env: Mapping[str, str] | None = None) -> float | None:
    """``WatchdogSec=`` as systemd passed it (``$WATCHDOG_USEC``, for this process only), in seconds."""
    env = os.environ if env is None else env
    usec, pid = env.get("WATCHDOG_USEC"), env.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        value = int(usec)
    except ValueError:
        return None
    return value / 1e6 if value > 0 else None


class Notifier:
    """The daemon's side of the protocol.  ``address`` defaults to ``$NOTIFY_SOCKET``."""

    def __init__(self, address: str | bytes | None = None) -> None:
        self.address = socket_address(os.environ.get("NOTIFY_SOCKET")) if address is None else address
        self.ready = False
        self._failing = False

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, **fields: str | int) -> bool:
        """Send ``KEY=value`` lines (e.g. ``send(READY=1, STATUS="...")``); whether systemd got them."""
        if self.address is None:
            return False
        # One line per assignment: a newline inside a value would start a forged assignment.
        message = "\n".join(f"{key}={str(value).replace(chr(10), ' ')}" for key, value in fields.items())
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.connect(self.address)
                sock.sendall(message.encode())
        except OSError as exc:
            if not self._failing:
                log.warning("sd_notify: cannot write to NOTIFY_SOCKET %r: %s", self.address, exc)
            self._failing = True
            return False
        self._failing = False
        return True

    def cycle_done(self, failed: Sequence[str], pending: int | None) -> None:
        """After each cycle (``failed``: the phases that failed): when view, decide and act worked, READY=1
        (the first time) and WATCHDOG=1; always a status line."""
        if self.address is None:
            return
        if WORKING_PHASES & set(failed):
            self.send(STATUS=f"last cycle failed in {', '.join(failed)}")
            return
        status = f"last cycle ok, {pending} pending" + (f" (failed: {', '.join(failed)})" if failed else "")
        if self.ready:
            self.send(WATCHDOG=1, STATUS=status)
        else:
            self.ready = self.send(READY=1, WATCHDOG=1, STATUS=status)

    def stopping(self) -> None:
        self.send(STOPPING=1, STATUS="stopping: releasing, undoing, checkpointing")
