"""Where ``rlsched install`` puts the site files, and doing it (``rlsched install --prefix / [--dry-run]``).

The wheel carries the repository's ``etc/``, ``plugins/`` and top-level ``docs/*.md`` as package data under
``rlsched/_dist/`` (``setup.py`` copies them at build time); a source checkout (editable install) reads them
from the checkout.  The layout is a Debian package's, with the units an administrator adds:

==========================================  =====================================================  ======
``/usr/bin/rlsched``                        a two-line wrapper that runs this Python's rlsched      0755
``/usr/lib/rlsched/rlsched-*``              the Slurm hooks and the gate watchdog (stdlib only)     0755
``/etc/systemd/system/rlsched*``            the daemon unit, the gate watchdog service and timer    0644
``/etc/rlsched/rlsched.toml``               the example config, only if there is none               0640
``/usr/share/doc/rlsched/``                 the docs the units' ``Documentation=`` name, examples   0644
``/usr/share/rlsched/{prometheus,grafana}`` scrape config, alert rules (when shipped), dashboard      0644
==========================================  =====================================================  ======

The config is 0640 and group-owned by the Slurm user's group (``slurm`` when it exists): the leasing hooks run
as SlurmUser and read it; nothing in it is a secret, but it is nobody else's to read or write.  ``--prefix``
is a staging root (like ``DESTDIR``): files go under it, and their contents name the final paths.
"""

from __future__ import annotations

import grp
import os
import shlex
import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rlsched.errors import RlschedError

#: The first line after the shebang of the wrapper :func:`plan` writes; an existing ``rlsched`` without it is
#: not ours (a distribution's package, a pip console script) and is left alone.
WRAPPER_MARK = "# rlsched console wrapper written by `rlsched install`"

#: The paths the systemd units name (kept in step with etc/systemd/*; tests/test_install.py checks them).
BIN = "/usr/bin/rlsched"
LIBEXEC = "/usr/lib/rlsched"
UNITS = "/etc/systemd/system"
CONFIG = "/etc/rlsched/rlsched.toml"
DOC = "/usr/share/doc/rlsched"
SHARE = "/usr/share/rlsched"

#: The hooks installed into LIBEXEC, by where they are shipped (below the checkout or the wheel's ``_dist``).
HOOKS: dict[str, str] = {
    "rlsched-gate-watchdog": "plugins/rlsched-gate-watchdog",
    "rlsched-resume": "plugins/slurm/rlsched-resume",
    "rlsched-suspend": "plugins/slurm/rlsched-suspend",
}


class InstallError(RlschedError):
    """A file cannot be laid out (the message names it)."""


@dataclass(frozen=True)
class Entry:
    """One file to lay out: its final path, where its bytes come from, its mode."""

    target: str  # absolute final path (under ``/``; the prefix is added on writing)
    mode: int
    source: Path | None = None  # a shipped file, or
    content: str | None = None  # generated text (the wrapper)
    keep_existing: bool = False  # the config: never overwritten
    group: str | None = None  # group owner (chown only when running as root)

    def data(self) -> bytes:
        if self.content is not None:
            return self.content.encode()
        assert self.source is not None
        return self.source.read_bytes()


def shipped_root() -> Path:
    """The folder holding ``etc/``, ``plugins/`` and ``docs/``: the wheel's package data, else the checkout."""
    packaged = Path(str(resources.files("rlsched"))) / "_dist"
    if (packaged / "etc").is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent
    if (checkout / "etc" / "systemd").is_dir() and (checkout / "plugins").is_dir():
        return checkout
    raise InstallError(
        "this rlsched carries no site files (etc/, plugins/): reinstall it from a wheel built by "
        "`pip wheel .` or from a source checkout"
    )


def wrapper_script(python: str) -> str:
    """``/usr/bin/rlsched``: ``exec`` keeps the PID, so systemd's ``NotifyAccess=main`` accepts the daemon's
    notifications."""
    return (
        f"#!/bin/sh\n{WRAPPER_MARK} (runs the rlsched of {shlex.quote(python)})\n"
        f'exec {shlex.quote(python)} -m rlsched "$@"\n'
    )


def config_group() -> str | None:
    """The group that may read the config besides root: ``slurm`` (Debian's SlurmUser) when it exists."""
    try:
        grp.getgrnam("slurm")
    except KeyError:
        return None
    return "slurm"


def plan(root: Path | None = None, python: str | None = None, group: str | None = None) -> list[Entry]:
    """Every file ``rlsched install`` lays out, in order."""
    root = shipped_root() if root is None else root
    entries = [Entry(BIN, 0o755, content=wrapper_script(python or sys.executable))]
    for hook, shipped in HOOKS.items():
        entries.append(Entry(f"{LIBEXEC}/{hook}", 0o755, source=root / shipped))
    # The leasing hooks read the config through rlsched's schema, loaded from beside them (issue 25).
    entries.append(
        Entry(f"{LIBEXEC}/rlsched_config_schema.py", 0o644, source=Path(__file__).with_name("config_schema.py"))
    )
    for unit in sorted((root / "etc" / "systemd").iterdir()):
        entries.append(Entry(f"{UNITS}/{unit.name}", 0o644, source=unit))
    entries.append(Entry(CONFIG, 0o640, source=root / "etc" / "rlsched.toml", keep_existing=True, group=group))
    for doc in sorted((root / "docs").glob("*.md")):
        entries.append(Entry(f"{DOC}/{doc.name}", 0o644, source=doc))
    entries.append(Entry(f"{DOC}/examples/rlsched.toml", 0o644, source=root / "etc" / "rlsched.toml"))
    share = [root / "etc" / "prometheus.yml", *sorted((root / "etc" / "prometheus").glob("*.yml"))]
    for path in share:
        if path.is_file():
            entries.append(Entry(f"{SHARE}/prometheus/{path.name}", 0o644, source=path))
    for path in sorted((root / "etc" / "grafana").glob("*.json")):
        entries.append(Entry(f"{SHARE}/grafana/{path.name}", 0o644, source=path))
    missing = [str(e.source) for e in entries if e.source is not None and not e.source.is_file()]
    if missing:
        raise InstallError(f"shipped files missing: {', '.join(missing)}")
    return entries


def destination(prefix: Path, target: str) -> Path:
    return prefix / target.lstrip("/")


def action(entry: Entry, prefix: Path) -> str:
    """What installing ``entry`` under ``prefix`` does: ``write``, ``keep`` (the config exists, or an
    ``rlsched`` that is not our wrapper) or ``same`` (already identical, mode included)."""
    dest = destination(prefix, entry.target)
    if not dest.exists() and not dest.is_symlink():
        return "write"
    if entry.keep_existing:
        return "keep"
    if entry.target == BIN and WRAPPER_MARK.encode() not in _head(dest):
        return "keep"
    if (
        dest.is_file()
        and not dest.is_symlink()
        and dest.read_bytes() == entry.data()
        and (dest.stat().st_mode & 0o7777) == entry.mode
    ):
        return "same"
    return "write"


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            return fh.read(512)
    except OSError:
        return b""


def write(entry: Entry, prefix: Path) -> None:
    """Write one file atomically (temporary file in the same folder, mode set before the rename, no link
    followed), creating its folders 0755."""
    dest = destination(prefix, entry.target)
    try:
        _make_dirs(dest.parent)
        tmp = dest.with_name(f".{dest.name}.rlsched-install")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, entry.data())
            os.fchmod(fd, entry.mode)
            if entry.group is not None and os.geteuid() == 0:
                os.fchown(fd, 0, grp.getgrnam(entry.group).gr_gid)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, dest)
    except OSError as exc:
        raise InstallError(f"cannot install {dest}: {exc.strerror or exc}") from exc


def _make_dirs(path: Path) -> None:
    """Create ``path`` and its missing parents 0755 whatever the umask (SlurmUser must reach the hooks)."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir()
        folder.chmod(0o755)


#: Folders the hardened unit hides from the daemon (ProtectHome=yes, PrivateTmp=yes).
HIDDEN_FROM_UNIT = ("/home", "/root", "/run/user", "/tmp", "/var/tmp")


def hidden_python(python: str) -> str | None:
    """The folder of ``HIDDEN_FROM_UNIT`` holding ``python`` (the unit could not run it), or None."""
    for folder in HIDDEN_FROM_UNIT:
        if python == folder or python.startswith(folder + "/"):
            return folder
    return None


def install(prefix: Path, entries: list[Entry], dry_run: bool) -> list[tuple[str, Entry]]:
    """Lay out ``entries`` under ``prefix`` (nothing written with ``dry_run``); what was done to each."""
    done = []
    for entry in entries:
        what = action(entry, prefix)
        if what == "write" and not dry_run:
            write(entry, prefix)
        done.append((what, entry))
    return done
