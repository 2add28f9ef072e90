"""Slurm's priority/multifactor formulas (rlsched.core.multifactor), on examples worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rlsched.core.multifactor import (
    Assoc,
    AssocTree,
    MultifactorParams,
    UsageLedger,
    age_factor,
    classic_factors,
    combine,
    fair_tree_factors,
    fair_tree_walk,
    job_factors,
    job_size_factor,
    params_from_policy,
    parse_slurm_conf,
    parse_sshare,
    queue_order,
    slurm_duration_s,
    tree_from_sshare,
)
from rlsched.core.policies import BuildContext, PolicyError, build_agent, parse_policy, resolve
from rlsched.core.view import ClusterView, FinishedJobs, PendingJobs, RunningJobs


def _tree(spec: dict[str, tuple[float, dict[str, float]]], root_users: dict[str, float] | None = None) -> AssocTree:
    """root → root-level users, then accounts {name: (shares, {user: shares})}."""
    root = Assoc("root")
    for user, shares in (root_users or {}).items():
        root.children.append(Assoc("root", user, shares))
    for account, (shares, users) in spec.items():
        acct = Assoc(account, None, shares)
        acct.children = [Assoc(account, u, s) for u, s in users.items()]
        root.children.append(acct)
    return AssocTree(root)


def _usage(tree: AssocTree, by_key: dict[str, float]) -> np.ndarray:
    return np.array([by_key.get(AssocTree.key(u.account, u.user), 0.0) for u in tree.users])


def _factor(tree: AssocTree, factors: np.ndarray, account: str, user: str) -> float:
    return float(factors[tree.index[AssocTree.key(account, user)]])


# ------------------------------------------------------------------------------ Fair Tree
def test_fair_tree_ranks_accounts_by_shares_over_usage() -> None:
    # S = 0.5, 0.3, 0.2; U = 0.5, 0.5, 0  →  LF = 1.0, 0.6, ∞  →  order C, A, B: ranks 3, 2, 1 of 3 users.
    tree = _tree({"A": (50, {"a": 1}), "B": (30, {"b": 1}), "C": (20, {"c": 1})})
    f = fair_tree_factors(tree, _usage(tree, {"A/a": 100, "B/b": 100}))
    assert _factor(tree, f, "C", "c") == 1.0
    assert _factor(tree, f, "A", "a") == pytest.approx(2 / 3)
    assert _factor(tree, f, "B", "b") == pytest.approx(1 / 3)


def test_fair_tree_tied_users_share_a_rank_and_the_next_rank_skips() -> None:
    # A unused (LF ∞): u1, u2 tied at rank 3; v in B next at rank 1 (rank, no ties, went 3 → 2 → 1).
    tree = _tree({"A": (1, {"u1": 1, "u2": 1}), "B": (1, {"v": 1})})
    f = fair_tree_factors(tree, _usage(tree, {"B/v": 10}))
    assert [_factor(tree, f, "A", "u1"), _factor(tree, f, "A", "u2")] == [1.0, 1.0]
    assert _factor(tree, f, "B", "v") == pytest.approx(1 / 3)


def test_fair_tree_merges_tied_accounts_before_ranking_their_users() -> None:
    # A and B both use half with half the shares (LF 1): their users are ranked together:
    # u1 LF 0.5/0.25 = 2, v1 = v2 = 0.5/0.5 = 1, u2 = 0.5/0.75 ≈ 0.67  →  ranks 4, 3, 3 (tie), 1.
    tree = _tree({"A": (1, {"u1": 1, "u2": 1}), "B": (1, {"v1": 1, "v2": 1})})
    f = fair_tree_factors(tree, _usage(tree, {"A/u1": 10, "A/u2": 30, "B/v1": 20, "B/v2": 20}))
    assert _factor(tree, f, "A", "u1") == 1.0
    assert _factor(tree, f, "B", "v1") == _factor(tree, f, "B", "v2") == 0.75
    assert _factor(tree, f, "A", "u2") == 0.25


def test_fair_tree_user_under_root_ties_with_an_unused_account() -> None:
    # Slurm's default root/root association: with no usage anywhere every user ranks first (sshare shows 1.0).
    tree = _tree({"alpha": (50, {"root": 1, "nobody": 1}), "beta": (30, {"root": 1})}, root_users={"root": 1})
    f = fair_tree_factors(tree, np.zeros(tree.n_users))
    assert f.tolist() == [1.0] * 4
    # Once beta runs, its user drops to the last rank; the rest stay tied first.
    f = fair_tree_factors(tree, _usage(tree, {"beta/root": 5}))
    assert _factor(tree, f, "beta", "root") == 0.25
    assert _factor(tree, f, "root", "root") == _factor(tree, f, "alpha", "nobody") == 1.0


def test_fair_tree_zero_shares_rank_last() -> None:
    tree = _tree({"A": (0, {"a": 1}), "B": (1, {"b": 1})})
    f = fair_tree_factors(tree, _usage(tree, {"B/b": 100}))
    assert _factor(tree, f, "B", "b") == 1.0 and _factor(tree, f, "A", "a") == 0.5


def test_the_vectorised_flat_fair_tree_equals_the_walk() -> None:
    rng = np.random.default_rng(7)
    for trial in range(200):
        n_acct = int(rng.integers(1, 6))
        spec = {
            f"A{a}": (
                float(rng.integers(0, 4)),
                {f"u{k}": float(rng.integers(0, 3)) for k in range(int(rng.integers(1, 4)))},
            )
            for a in range(n_acct)
        }
        tree = _tree(spec)
        assert tree.is_flat
        # Small integers make ties (equal LF) frequent, zeros make ∞ and 0 LFs.
        usage = rng.integers(0, 3, tree.n_users).astype(float) * (trial % 3 != 0)
        assert fair_tree_factors(tree, usage).tolist() == fair_tree_walk(tree, usage).tolist(), (spec, usage)


# ------------------------------------------------------------------------------ classic
def test_classic_factor_is_two_to_the_minus_usage_over_shares() -> None:
    # S_A = 1/4, S_B = 3/4; U_A = 0.3, U_B = 0.7; a single user inherits its account's effective usage.
    tree = _tree({"A": (1, {"a": 1}), "B": (3, {"b": 1})})
    usage = _usage(tree, {"A/a": 30, "B/b": 70})
    f = classic_factors(tree, usage)
    assert _factor(tree, f, "A", "a") == pytest.approx(2 ** (-0.3 / 0.25))
    assert _factor(tree, f, "B", "b") == pytest.approx(2 ** (-0.7 / 0.75))
    damped = classic_factors(tree, usage, damp_factor=2.0)
    assert _factor(tree, damped, "A", "a") == pytest.approx(2 ** (-0.3 / 0.25 / 2))


def test_classic_effective_usage_of_a_user_blends_in_its_account() -> None:
    # Account A (S 1/2) holds u (usage 10) and w (usage 30); root usage 40 + B's 0.
    # U_E(A) = 1.0; for u: U_N = 0.25, U_E = 0.25 + (1.0 − 0.25)·(1/2) = 0.625, S = 1/2·1/2 → 2^(−2.5).
    tree = _tree({"A": (1, {"u": 1, "w": 1}), "B": (1, {"b": 1})})
    f = classic_factors(tree, _usage(tree, {"A/u": 10, "A/w": 30}))
    assert _factor(tree, f, "A", "u") == pytest.approx(2**-2.5)
    assert _factor(tree, f, "B", "b") == 1.0


# ------------------------------------------------------------------------------ usage and decay
def test_ledger_charges_running_jobs_at_each_pass_and_decays_by_half_each_half_life() -> None:
    p = MultifactorParams(half_life_s=3600, calc_period_s=60)
    d = 1 - 0.693 / 3600
    led = UsageLedger(1, p, origin_s=0.0)
    led.start(7, 0, 4, 20.0)
    led.advance(59.0)
    assert led.usage[0] == 0.0  # nothing until the pass
    led.advance(60.0)
    assert led.usage[0] == pytest.approx(4 * 40 * d**40)  # 40 s since the start, decayed over 40 s
    led.advance(120.0)
    assert led.usage[0] == pytest.approx(4 * 40 * d**40 * d**60 + 4 * 60 * d**60)
    led.end(7, 150.0)  # charged at once: 30 s since the pass
    assert led.usage[0] == pytest.approx((4 * 40 * d**40 * d**60 + 4 * 60 * d**60) + 4 * 30 * d**30)
    before = led.usage[0]
    led.advance(150.0 + 3600.0)
    assert led.usage[0] / before == pytest.approx(0.5, abs=2e-3)  # Slurm's 0.693 ≈ ln 2, whole passes


def test_ledger_without_charge_at_end_drops_the_last_part() -> None:
    # Slurm 22.05 without AccountingStorageEnforce=limits: a job ending between passes adds nothing more.
    led = UsageLedger(1, MultifactorParams(half_life_s=0, calc_period_s=60, charge_at_end=False), origin_s=0.0)
    led.start(1, 0, 2, 10.0)
    led.end(1, 130.0)  # passes at 60 (50 s) and 120 (60 s); 120–130 is lost
    led.start(2, 0, 8, 200.0)
    led.end(2, 230.0)  # between two passes: never charged
    led.advance(1000.0)
    assert led.usage[0] == pytest.approx(2 * 110.0)


def test_ledger_closed_form_equals_every_pass() -> None:
    p = MultifactorParams(half_life_s=1800, calc_period_s=60)
    jump = UsageLedger(2, p, origin_s=5.0)
    step = UsageLedger(2, p, origin_s=5.0)
    for led in (jump, step):
        led.start(1, 0, 3, 17.0)
        led.start(2, 1, 1, 30.0)
    jump.advance(5000.0)
    for grid in np.arange(65.0, 5000.0, 60.0):
        step.advance(float(grid))
    assert np.allclose(jump.usage, step.usage, rtol=1e-12)
    assert jump.pass_time == step.pass_time == 4985.0


# ------------------------------------------------------------------------------ the other factors
def test_age_grows_linearly_to_one_at_max_age() -> None:
    assert age_factor(700.0, np.array([700.0, 400.0, 0.0, 800.0]), 600.0).tolist() == [0.0, 0.5, 1.0, 0.0]


def test_job_size_favours_large_or_small() -> None:
    # 5 nodes, 48 CPUs (the test cluster): a 16-CPU one-node job → (1/5 + 16/48)/2 = 0.26667 (as sprio shows).
    assert job_size_factor(np.array([16]), np.array([1]), 48, 5, False)[0] == pytest.approx(0.2666667)
    assert job_size_factor(np.array([16]), np.array([1]), 48, 5, True)[0] == pytest.approx((4 / 5 + 32 / 48) / 2)


def test_priority_is_the_truncated_weighted_sum_and_ties_go_by_job_id() -> None:
    p = MultifactorParams(weight_age=1000, weight_fairshare=10000, weight_job_size=1000, weight_partition=1000)
    one = np.ones(3)
    f = combine(p, np.array([0.5, 0.2, 0.0]), np.array([1 / 3, 1.0, 0.0]), np.array([0.1, 0.0, 0.0]), one, np.zeros(3))
    assert f.priority.tolist() == [math.floor(500 + 10000 / 3 + 100 + 1000), 11200.0, 1000.0]
    assert queue_order(np.array([5.0, 7.0, 5.0]), np.array([30, 20, 10])).tolist() == [1, 2, 0]


def test_job_factors_of_unknown_association_get_no_fairshare() -> None:
    tree = _tree({"A": (1, {"a": 1})})
    p = MultifactorParams(partition_job_factor={"debug": 1, "short": 2}, qos_priority={"normal": 0, "high": 10})
    f = job_factors(
        p,
        tree,
        np.zeros(1),
        100.0,
        eligible_s=np.array([40.0, 100.0]),
        cpus=np.array([1, 2]),
        nodes=np.array([1, 1]),
        assoc=["A/a", "B/b"],
        partitions=["debug", "short"],
        qos=["normal", "high"],
        cluster_cpus=16,
        cluster_nodes=1,
    )
    assert f.fairshare.tolist() == [1.0, 0.0]
    assert f.partition.tolist() == [0.5, 1.0] and f.qos.tolist() == [0.0, 1.0]
    assert f.age[0] == pytest.approx(60 / p.max_age_s)


# ------------------------------------------------------------------------------ a site's settings
CONF = """\
ClusterName=x   # a comment
PriorityType=priority/multifactor
PriorityWeightAge=1000
PriorityWeightFairshare=10000
priorityweightjobsize=500
PriorityMaxAge=0-0:10:00
PriorityDecayHalfLife=1-0
PriorityCalcPeriod=2
PriorityFlags=NO_FAIR_TREE,ACCRUE_ALWAYS
PriorityFavorSmall=YES
PriorityWeightTRES=CPU=1000
PartitionName=debug Nodes=node1 Default=YES
PartitionName=short Nodes=node1 PriorityJobFactor=4
"""


def test_slurm_conf_priority_keys() -> None:
    site = parse_slurm_conf(CONF, "s.conf")
    assert site.params == {
        "weight_age": 1000.0,
        "weight_fairshare": 10000.0,
        "weight_job_size": 500.0,
        "max_age_s": 600.0,
        "half_life_s": 86400.0,
        "calc_period_s": 120.0,
        "fair_tree": False,
        "favor_small": True,
        "charge_at_end": False,
    }
    assert site.partition_job_factor == {"debug": 1.0, "short": 4.0}
    assert site.not_modelled == ("PriorityFlags=ACCRUE_ALWAYS", "PriorityWeightTRES=CPU=1000")
    assert site.priority_type == "priority/multifactor"
    params = params_from_policy(site.params, site.partition_job_factor)
    assert not params.fair_tree and params.max_age_s == 600.0 and not params.charge_at_end
    enforcing = parse_slurm_conf(CONF + "AccountingStorageEnforce=associations,limits,qos\n")
    assert enforcing.params["charge_at_end"] is True


def test_slurm_conf_bad_value_names_file_and_line() -> None:
    with pytest.raises(ValueError, match=r"^s.conf:2: bad value in 'PriorityMaxAge=soon'$"):
        parse_slurm_conf("PriorityType=priority/multifactor\nPriorityMaxAge=soon\n", "s.conf")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("7-0", 7 * 86400.0), ("10", 600.0), ("1:30", 90.0), ("2:00:00", 7200.0), ("1-2:03", 86400 + 7200 + 180.0)],
)
def test_slurm_durations(text: str, seconds: float) -> None:
    assert slurm_duration_s(text) == seconds


SSHARE = """\
Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|LevelFS|GrpTRESMins|TRESRunMins
root|||0.000000|900||1.000000||||cpu=0
 root|root|1|0.009901|0|0.000000|0.000000|1.000000|inf||cpu=0
 alpha||50|0.495050|600|0.666667|0.666667||0.742575||cpu=0
  alpha|nobody|1|0.500000|0|0.000000|0.000000|0.750000|inf||cpu=0
  alpha|root|1|0.500000|600|0.666667|1.000000|0.250000|0.500000||cpu=0
 beta||30|0.297030|300|0.333333|0.333333||0.891089||cpu=0
  beta|root|1|1.000000|300|0.333333|1.000000|0.500000|1.000000||cpu=0
"""


def test_sshare_tree_and_usage() -> None:
    rows = parse_sshare(SSHARE, "sshare")
    tree, usage = tree_from_sshare(rows)
    assert [(u.account, u.user) for u in tree.users] == [
        ("root", "root"),
        ("alpha", "nobody"),
        ("alpha", "root"),
        ("beta", "root"),
    ]
    assert usage.tolist() == [0.0, 0.0, 600.0, 300.0]
    # beta LF 0.297/0.333 = 0.891 > alpha 0.495/0.667 = 0.743; root/root (∞) and alpha/nobody rank by the walk.
    f = fair_tree_factors(tree, usage)
    assert f.tolist() == [1.0, 0.5, 0.25, 0.75]


def test_sshare_bad_line_is_named() -> None:
    with pytest.raises(ValueError, match=r"^sshare: line 3: 3 fields, header has 11$"):
        parse_sshare(SSHARE.splitlines()[0] + "\nroot|||0|0||1||||\n a|b|c\n", "sshare")


# ------------------------------------------------------------------------------ the registry's live agent
def _view(t: float, running_vo: list[int], pending_vo: list[int]) -> ClusterView:
    n, m = len(running_vo), len(pending_vo)
    running = RunningJobs(
        job_id=np.arange(100, 100 + n),
        vo=np.array(running_vo, dtype=np.int64),
        job_class=np.ones(n, dtype=np.int64),
        cores=np.full(n, 4),
        req_time_s=np.full(n, 1e4),
        submit_s=np.zeros(n),
        start_s=np.zeros(n),
        oracle_run_s=np.full(n, np.nan),
    )
    pending = PendingJobs(
        job_id=np.arange(1, m + 1),
        vo=np.array(pending_vo, dtype=np.int64),
        job_class=np.ones(m, dtype=np.int64),
        cores=np.ones(m, dtype=np.int64),
        req_time_s=np.full(m, 600.0),
        submit_s=np.zeros(m),
        oracle_run_s=np.full(m, np.nan),
        held=np.zeros(m, dtype=bool),
    )
    return ClusterView(
        time_s=t,
        total_cores=8,
        idle_cores=8 - 4 * n,
        pending=pending,
        running=running,
        finished=FinishedJobs(),
        vos=("a", "b"),
    )


def test_the_registry_agent_boosts_the_account_with_less_usage() -> None:
    spec = resolve(parse_policy("multifactor:weight_age=0,weight_job_size=0,calc_period_s=60")).bound(("a", "b"), None)
    agent = build_agent(spec, BuildContext(mode="boost", live=True))
    agent.decide(_view(0.0, [0], [0, 1]))  # a runs 4 cores from t = 0
    decisions = agent.decide(_view(130.0, [0], [0, 1]))  # two passes later a has usage, b none
    assert decisions.boost == (2, 1)  # b's job (id 2) first
    with pytest.raises(PolicyError, match="slurm_conf= and sshare= name files"):
        build_agent(resolve(parse_policy("multifactor:slurm_conf=/etc/slurm.conf")), BuildContext(live=True))
