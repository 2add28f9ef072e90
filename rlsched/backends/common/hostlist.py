"""Slurm hostlists (``cloud[1-4,7]``, ``gpu[01-02]-a,login1``) expanded in Python.

The daemon's config names its cloud nodes with a hostlist, as slurm.conf does; expanding it needs no
Slurm command (``scontrol show hostnames`` gives the same answer, but the config is checked before any
Slurm call).  Zero padding is kept (``n[01-03]`` → ``n01 n02 n03``), several bracket groups multiply
(``r[1-2]n[1-2]`` → ``r1n1 r1n2 r2n1 r2n2``), as in Slurm's ``hostlist.c``.
"""

from __future__ import annotations

import re

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
#: A hostlist bigger than this is almost surely a typo (``n[1-10000000]``): refused rather than expanded.
MAX_HOSTS = 65_536


def _split_top_level(text: str) -> list[str]:
    """Split on the commas that are not inside brackets."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
            if depth > 1:
                raise ValueError(f"nested brackets in hostlist {text!r}")
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in hostlist {text!r}")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"unbalanced '[' in hostlist {text!r}")
    parts.append(text[start:])
    return parts


def _expand_ranges(body: str, source: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        match = _RANGE.match(item.strip())
        if not match:
            raise ValueError(f"bad range {item!r} in hostlist {source!r}")
        lo_text, hi_text = match[1], match[2] or match[1]
        lo, hi = int(lo_text), int(hi_text)
        if hi < lo:
            raise ValueError(f"range {item!r} runs backwards in hostlist {source!r}")
        if hi - lo + 1 > MAX_HOSTS:
            raise ValueError(f"range {item!r} in hostlist {source!r} has more than {MAX_HOSTS} hosts")
        width = len(lo_text) if lo_text.startswith("0") and len(lo_text) > 1 else 0
        out.extend(str(k).zfill(width) for k in range(lo, hi + 1))
    return out


def _expand_one(name: str, source: str) -> list[str]:
    names = [""]
    rest = name
    while rest:
        open_at = rest.find("[")
        if open_at < 0:
            names = [n + rest for n in names]
            break
        close_at = rest.index("]", open_at)
        prefix, body, rest = rest[:open_at], rest[open_at + 1 : close_at], rest[close_at + 1 :]
        names = [n + prefix + k for n in names for k in _expand_ranges(body, source)]
        if len(names) > MAX_HOSTS:
            raise ValueError(f"hostlist {source!r} has more than {MAX_HOSTS} hosts")
    return names


def expand_hostlist(hostlist: str) -> list[str]:
    """All host names of ``hostlist``, in order, without duplicates; ValueError names the bad part."""
    text = hostlist.strip()
    if not text:
        return []
    if any(ch.isspace() for ch in text):
        raise ValueError(f"spaces in hostlist {hostlist!r}")
    seen: dict[str, None] = {}
    for part in _split_top_level(text):
        if not part:
            raise ValueError(f"empty name in hostlist {hostlist!r}")
        for name in _expand_one(part, hostlist):
            seen.setdefault(name, None)
    return list(seen)
