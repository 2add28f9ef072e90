"""A Slurm site's priority settings and state, for the multifactor emulation (docs/multifactor.md).

- :func:`read_slurm_conf`: the ``Priority*`` keys, PriorityFlags and the partitions' PriorityJobFactor
  of a slurm.conf file (:func:`rlsched.core.multifactor.parse_slurm_conf`).
- :func:`read_sshare`: ``sshare -a -P -l`` through the shared command runner: the association tree,
  its raw shares and each user association's raw (decayed) usage.
- :func:`read_sprio`: ``sprio`` through the runner: Slurm's own normalised factors and priority per
  pending job, to compare the emulation with.
- :func:`site_params`: the emulation's :class:`rlsched.core.multifactor.MultifactorParams` for the site.

A bad file or output is a one-line ``ValueError`` / backend error naming the file, line or command.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rlsched.backends.common.runner import BackendCommandError, CommandExecutor, CommandResult
from rlsched.core.multifactor import (
    AssocTree,
    MultifactorParams,
    ShareRow,
    SiteConf,
    params_from_policy,
    parse_slurm_conf,
    parse_sshare,
    tree_from_sshare,
)
from rlsched.core.view import FloatArray

#: sprio's fields, in the order :data:`SPRIO_FORMAT` prints them (with ``-n``: the normalised factors).
SPRIO_FORMAT = "%i|%Y|%a|%f|%j|%p|%q|%r|%u"


def read_slurm_conf(path: str | Path) -> SiteConf:
    """The priority settings of a slurm.conf file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ValueError(f"{p}: {exc.strerror or exc}") from None
    return parse_slurm_conf(text, str(p))


def site_params(conf: SiteConf, rows: list[ShareRow] | None = None) -> MultifactorParams:
    """:class:`MultifactorParams` from slurm.conf (weights, times, flags, partition factors) and the
    account shares of ``sshare`` rows (when given)."""
    values = dict(conf.params)
    if rows:
        values["shares"] = "/".join(f"{r.account}:{r.shares:g}" for r in rows if r.user is None and r.account != "root")
    params = params_from_policy(values, conf.partition_job_factor)
    if rows:
        users = {AssocTree.key(r.account, r.user): r.shares for r in rows if r.user is not None}
        params = MultifactorParams(**{**params.__dict__, "user_shares": users})
    return params


def _parse_sshare(result: CommandResult) -> list[ShareRow]:
    try:
        return parse_sshare(result.stdout, " ".join(result.argv))
    except ValueError as exc:
        raise BackendCommandError("parse_error", result.argv, str(exc)) from None


def read_sshare(executor: CommandExecutor, sshare: str = "sshare") -> tuple[list[ShareRow], AssocTree, FloatArray]:
    """``sshare -a -P -l``: its rows, the association tree and the raw usage of each user association."""
    rows = executor.run([sshare, "-a", "-P", "-l"], _parse_sshare)
    tree, usage = tree_from_sshare(rows)
    return rows, tree, usage


@dataclass(frozen=True)
class SprioRow:
    """One pending job as sprio reports it: priority and normalised factors (``sprio -n``)."""

    job_id: int
    priority: float
    age: float
    fairshare: float
    job_size: float
    partition: float
    qos: float
    partition_name: str
    user: str


def parse_sprio(text: str, source: str = "sprio") -> list[SprioRow]:
    """Rows of ``sprio -h -n -o`` :data:`SPRIO_FORMAT` (a job in several partitions gives several rows)."""
    rows: list[SprioRow] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split("|")]
        if len(cells) != 9:
            raise ValueError(f"{source}: line {lineno}: {len(cells)} fields, expected 9 ({SPRIO_FORMAT})")
        try:
            age, fairshare, job_size, partition, qos = (float(c) for c in cells[2:7])
            rows.append(
                SprioRow(int(cells[0]), float(cells[1]), age, fairshare, job_size, partition, qos, cells[7], cells[8])
            )
        except ValueError:
            raise ValueError(f"{source}: line {lineno}: bad number in {line.strip()!r}") from None
    return rows


def read_sprio(executor: CommandExecutor, sprio: str = "sprio") -> list[SprioRow]:
    """Slurm's factors of every pending job (``sprio -h -n``)."""
    argv = [sprio, "-h", "-n", "-o", SPRIO_FORMAT]

    def parse(result: CommandResult) -> list[SprioRow]:
        try:
            return parse_sprio(result.stdout, " ".join(argv))
        except ValueError as exc:
            raise BackendCommandError("parse_error", argv, str(exc)) from None

    return executor.run(argv, parse)


def usage_by_key(tree: AssocTree, usage: FloatArray) -> dict[str, float]:
    """``"account/user"`` → raw usage (for reports)."""
    return {AssocTree.key(u.account, u.user): float(usage[u.leaf]) for u in tree.users}
