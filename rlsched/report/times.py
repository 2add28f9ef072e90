"""Points in time on the command line (``--since``, ``--until``).

Accepted: ``now``; an age back from now (``30m``, ``12h``, ``7d``, ``2w``, also written ``-12h``); epoch
seconds (``@1763900000``); an ISO date or date-time (``2026-11-23``, ``2026-11-23T08:00``, ``… 08:00:00``),
in local time like Slurm's own times unless it names a zone (``Z``, ``+01:00``).
"""

from __future__ import annotations

import datetime as dt
import re

from rlsched.errors import RlschedError

_AGE = re.compile(r"^-?(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


class TimeSpecError(RlschedError, ValueError):
    """A value that is not a point in time (one line saying what is accepted)."""


def parse_when(text: str, now_s: float) -> float:
    """Epoch seconds of ``text`` (see the module docstring); ``now_s`` is "now"."""
    value = text.strip()
    if value == "now":
        return now_s
    age = _AGE.match(value)
    if age:
        return now_s - float(age.group(1)) * _UNIT_S[age.group(2)]
    if value.startswith("@"):
        try:
            return float(value[1:])
        except ValueError:
            pass
    else:
        try:
            when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            return when.timestamp()  # naive: local time
    raise TimeSpecError(
        f"cannot read {text!r} as a time: expected now, an age (30m, 12h, 7d), "
        "@EPOCH_SECONDS or an ISO date/date-time (2026-11-23T08:00)"
    )
