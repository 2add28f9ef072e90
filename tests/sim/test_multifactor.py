"""The ``multifactor`` policy in the simulator: Slurm's priority/multifactor as a dynamic priority."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsched.core.multifactor import params_from_policy
from rlsched.core.policies import PolicyError, entry, parse_policy
from rlsched.sim.engine import Simulator
from rlsched.sim.multifactor import MultifactorPriority
from rlsched.sim.policies import bind, expand_site_files, simulate_policy
from rlsched.sim.workload import make_workload
from rlsched.sim.workloads.lal import generate_lal


def test_age_alone_is_fcfs_with_easy_backfill() -> None:
    # Priority floor(1000·age) never reorders two jobs (an older job is never younger), ties go by submit
    # order: the schedule is EASY's, start for start.
    w = generate_lal(3, scale=0.05)
    mf = simulate_policy(w, "multifactor:weight_fairshare=0,weight_job_size=0").schedule
    easy = simulate_policy(w, "easy").schedule
    assert np.array_equal(mf.start, easy.start)


def test_fairshare_serves_the_account_that_used_less() -> None:
    # 4 cores.  Account 0 runs alone for 1000 s; then both accounts submit one 4-core job behind a blocker.
    # The first pass after the blocker ends, account 1 (no usage) must start first although it came second.
    w = make_workload(
        submit=[0, 1000, 1010, 1020],
        run=[1000, 400, 100, 100],
        procs=[4, 4, 4, 4],
        max_procs=4,
        vo=[0, 0, 0, 1],
        vo_names=("a", "b"),
    )
    s = simulate_policy(w, "multifactor:calc_period_s=60,weight_age=0,weight_job_size=0").schedule
    assert s.start[3] < s.start[2]  # b's job before a's later-submitted... and earlier one
    fcfs = simulate_policy(w, "easy").schedule
    assert fcfs.start[2] < fcfs.start[3]


def test_shares_break_a_tie_of_usage_in_favour_of_the_larger_share() -> None:
    # a and b ran the same (0–500 s), c blocks the machine; with shares b:3, a:1 the next job of b goes
    # first (Fair Tree LF = S/U), with equal shares a's, submitted first.
    w = make_workload(
        submit=[0, 0, 500, 510, 520],
        run=[500, 500, 100, 100, 100],
        procs=[2, 2, 4, 4, 4],
        max_procs=4,
        vo=[0, 1, 2, 0, 1],
        vo_names=("a", "b", "c"),
    )
    spec = "multifactor:calc_period_s=60,weight_age=0,weight_job_size=0,shares=a:1/b:3"
    s = simulate_policy(w, spec).schedule
    assert s.start[4] < s.start[3]
    equal = simulate_policy(w, "multifactor:calc_period_s=60,weight_age=0,weight_job_size=0").schedule
    assert equal.start[3] < equal.start[4]  # equal shares, equal usage: submit order


@pytest.mark.parametrize(
    "extra",
    [
        "fair_tree=false",
        "fair_tree=false,damp_factor=3",
        "users=true",
        "favor_small=true,weight_job_size=5000",
        "backfill=false",
    ],
)
def test_variants_run_every_job(extra: str) -> None:
    w = generate_lal(4, scale=0.03)
    s = simulate_policy(w, f"multifactor:{extra}").schedule
    assert np.all(np.isfinite(s.start)) and np.all(s.start >= w.submit)


def test_the_queue_is_reprioritised_every_pass() -> None:
    w = generate_lal(3, scale=0.05)
    params = parse_policy("multifactor:calc_period_s=120")
    dyn = MultifactorPriority(w, params_from_policy(params.params), int(w.max_procs))
    Simulator(w, dynamic=dyn).run()
    assert dyn.passes > 10


def test_slurm_conf_and_sshare_files_set_the_parameters(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "PriorityType=priority/multifactor\nPriorityWeightAge=7\nPriorityMaxAge=1-0\nPriorityFlags=NO_FAIR_TREE\n"
    )
    sshare = tmp_path / "sshare.txt"
    sshare.write_text("Account|User|RawShares|NormShares|RawUsage\nroot|||0|0\n a||5|0.5|0\n  a|u|1|1|0\n b||2|0.5|0\n")
    spec = expand_site_files(parse_policy(f"multifactor:slurm_conf={conf},sshare={sshare},weight_qos=9,shares=b:4"))
    p = spec.params
    assert (p["weight_age"], p["max_age_s"], p["fair_tree"], p["weight_qos"]) == (7.0, 86400.0, False, 9.0)
    assert p["shares"] == "b:4/a:5"  # given shares win over the file's
    assert p["slurm_conf"] == p["sshare"] == ""


def test_a_parameter_named_at_its_default_value_still_wins_over_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("PriorityType=priority/multifactor\nPriorityWeightAge=7\nPriorityWeightFairshare=3\n")
    default_age = entry("multifactor").param("weight_age").default
    assert default_age != 7.0
    spec = bind(f"multifactor:slurm_conf={conf},weight_age={default_age:g}", generate_lal(3, scale=0.01))
    expanded = expand_site_files(spec)
    # named on purpose: kept although it is the registry default; the file fills what was not named
    assert (expanded.params["weight_age"], expanded.params["weight_fairshare"]) == (default_age, 3.0)
    # A parameter set later in code counts as named too.
    default_fairshare = entry("multifactor").param("weight_fairshare").default
    again = expand_site_files(spec.with_params(weight_fairshare=default_fairshare))
    assert again.params["weight_fairshare"] == default_fairshare and again.params["weight_age"] == default_age


def test_bad_site_files_are_one_line_errors(tmp_path: Path) -> None:
    w = generate_lal(3, scale=0.01)
    with pytest.raises(PolicyError, match=r"^policy 'multifactor': slurm_conf .*nope.conf: No such file"):
        simulate_policy(w, f"multifactor:slurm_conf={tmp_path / 'nope.conf'}")
    bad = tmp_path / "bad.conf"
    bad.write_text("PriorityType=priority/multifactor\nPriorityWeightAge=lots\n")
    with pytest.raises(PolicyError, match=r"bad.conf:2: bad value in 'PriorityWeightAge=lots'$"):
        simulate_policy(w, f"multifactor:slurm_conf={bad}")
    basic = tmp_path / "basic.conf"
    basic.write_text("PriorityType=priority/basic\n")
    with pytest.raises(PolicyError, match="not priority/multifactor"):
        simulate_policy(w, f"multifactor:slurm_conf={basic}")
    with pytest.raises(PolicyError, match="shares"):
        simulate_policy(w, "multifactor:shares=a-5")
