"""Reading a Slurm site's priority settings (rlsched.backends.slurm.priority), without a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsched.backends.common.runner import CommandExecutor, CommandResult, RetryPolicy
from rlsched.backends.slurm.priority import parse_sprio, read_slurm_conf, read_sprio, read_sshare, site_params
from rlsched.core.multifactor import parse_sshare

SSHARE = (
    "Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS\n"
    "root|||0.000000|100||1.000000||\n"
    " alpha||50|0.5|100|1.0|1.0||0.5\n"
    "  alpha|root|1|1.0|100|1.0|1.0|0.5|1.0\n"
    " beta||50|0.5|0|0|0||inf\n"
    "  beta|root|2|1.0|0|0|0|1.0|inf\n"
)


class Canned:
    """A runner that answers one command with fixed output (a fault we cannot cause on a live Slurm)."""

    def __init__(self, stdout: str) -> None:
        self.stdout = stdout

    def __call__(self, argv: object, timeout_s: float) -> CommandResult:
        return CommandResult(tuple(argv), 0, self.stdout, "")  # type: ignore[arg-type]


def test_sprio_rows() -> None:
    rows = parse_sprio("5|11266|0.0000000|1.0000000|0.2666667|1.0000000|0.0000000|debug|root\n")
    assert rows[0].job_id == 5 and rows[0].priority == 11266 and rows[0].job_size == pytest.approx(0.2666667)
    with pytest.raises(ValueError, match=r"^sprio: line 1: 3 fields, expected 9"):
        parse_sprio("1|2|3\n")


def test_bad_sprio_output_is_a_parse_error_naming_the_command() -> None:
    executor = CommandExecutor(Canned("x|y\n"), retry=RetryPolicy(attempts=1))
    with pytest.raises(Exception, match=r"sprio -h -n -o .*: parse_error: .*2 fields"):
        read_sprio(executor)
    assert executor.errors["parse_error"] == 1


def test_site_params_from_conf_and_sshare(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "PriorityType=priority/multifactor\nPriorityWeightFairshare=500\n"
        "AccountingStorageEnforce=limits\nPartitionName=a Nodes=n PriorityJobFactor=3\n"
    )
    rows, tree, usage = read_sshare(CommandExecutor(Canned(SSHARE)))
    params = site_params(read_slurm_conf(conf), rows)
    assert params.weight_fairshare == 500 and params.charge_at_end
    assert dict(params.account_shares) == {"alpha": 50.0, "beta": 50.0}
    assert dict(params.user_shares) == {"alpha/root": 1.0, "beta/root": 2.0}
    assert dict(params.partition_job_factor) == {"a": 3.0}
    assert usage.tolist() == [100.0, 0.0] and tree.n_users == 2 and len(parse_sshare(SSHARE)) == 5


def test_missing_slurm_conf_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"nope.conf: No such file or directory$"):
        read_slurm_conf(tmp_path / "nope.conf")
