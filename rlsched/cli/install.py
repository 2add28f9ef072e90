"""``rlsched install``: lay out the console wrapper, systemd units, Slurm hooks, example config and docs."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from rlsched.install import CONFIG, InstallError, config_group, destination, hidden_python, install, plan

_SAID = {"write": "install", "same": "unchanged", "keep": "keep existing"}


@click.command(name="install")
@click.option(
    "--prefix",
    default="/",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Staging root: files go under it, their contents name the final paths (like DESTDIR).",
)
@click.option("--dry-run", is_flag=True, help="Print what would be installed; write nothing.")
@click.option(
    "--config-group",
    "config_group_name",
    default=None,
    help="Group that may read /etc/rlsched/rlsched.toml (the leasing hooks run as SlurmUser). "
    "Default: 'slurm' when that group exists, else root only.",
)
def install_command(prefix: str, dry_run: bool, config_group_name: str | None) -> None:
    """Install rlsched's site files: /usr/bin/rlsched (a wrapper to this Python), the systemd units, the Slurm
    hooks and gate watchdog in /usr/lib/rlsched, /etc/rlsched/rlsched.toml (never overwritten) and the docs.

    Then: systemctl daemon-reload && systemctl enable --now rlsched (and rlsched-gate-watchdog.timer in gate
    mode).  See docs/install.md.
    """
    root = Path(prefix)
    group = config_group_name if config_group_name is not None else config_group()
    try:
        entries = plan(group=group)
        done = install(root, entries, dry_run)
    except InstallError as exc:
        click.echo(f"rlsched install: {exc}", err=True)
        sys.exit(2)
    verb = "would " if dry_run else ""
    for what, entry in done:
        owner = f" root:{entry.group}" if entry.group else ""
        click.echo(f"{verb}{_SAID[what]:<13} {entry.mode:04o}{owner:<13} {destination(root, entry.target)}")
    if any(what == "keep" and e.target == CONFIG for what, e in done):
        click.echo(
            f"kept the existing config; the new example is {destination(root, '/usr/share/doc/rlsched')}"
            "/examples/rlsched.toml"
        )
    hidden = hidden_python(sys.executable)
    if hidden is not None:
        click.echo(
            f"warning: this rlsched runs from {sys.executable}, under {hidden}, which rlsched.service hides "
            "(ProtectHome=, PrivateTmp=): install it in a virtualenv under /opt (e.g. /opt/rlsched) "
            "and run its `rlsched install`",
            err=True,
        )
    if not dry_run and root == Path("/"):
        click.echo(
            "next: systemctl daemon-reload && systemctl enable --now rlsched "
            "(gate mode: also rlsched-gate-watchdog.timer)"
        )
