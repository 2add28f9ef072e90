"""Pure leasing decisions (rlsched/core/leasing.py): balance, FH Q-learning step, our cap rule."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.leasing import (
    DAILY_CAP_FRACTIONS,
    DailyCapLearner,
    DailyLearnerParams,
    DailyPrior,
    FHQLearner,
    StateAwareParams,
    balance,
    cap_fraction_index,
    daily_cap_set,
    rescale_rewards,
    state_aware_cap,
)


def test_balance_formula() -> None:
    # FH §2.4: (100 − 100·twt/twt_ref) − 100·c/c_ref
    assert float(balance(50.0, 30.0, 200.0, 120.0)) == pytest.approx(75.0 - 25.0)
    assert float(balance(0.0, 0.0, 0.0, 0.0)) == 0.0


def test_rescale_rewards() -> None:
    np.testing.assert_allclose(rescale_rewards(np.array([0.0, 10.0, 5.0])), [0.0, 1.0, 0.5])
    np.testing.assert_array_equal(rescale_rewards(np.array([3.0, 3.0])), [0.0, 0.0])


def test_q_update_hand_computed() -> None:
    learner = FHQLearner(2)
    assert learner.choose() == 0  # all zero: ties go to the smallest V
    assert learner.step(np.array([0.0, 10.0, 5.0])) == 1
    np.testing.assert_allclose(learner.q, [0.0, 0.1, 0.05])
    # rewards [0, 0, 1]; max Q = 0.1: Q += 0.1·(r + 0.1·0.1 − Q)
    assert learner.step(np.array([4.0, 4.0, 8.0])) == 2
    np.testing.assert_allclose(learner.q, [0.001, 0.091, 0.146])


def test_q_ties_go_to_smallest() -> None:
    learner = FHQLearner(3, q=np.array([0.0, 0.5, 0.5, 0.2]))
    assert learner.choose() == 1


def test_state_aware_cap_sends_only_worthwhile_jobs() -> None:
    cores = np.array([1, 8, 2], dtype=np.int64)
    run = np.array([100.0, 100_000.0, 100.0])
    cap = state_aware_cap(
        cores=10,
        cloud_used=3,
        queue_cores=cores,
        queue_expected_run_s=run,
        run_remaining_work=10_000.0,
        arrival_rate_per_s=0.0,
        exchange_rate=1.0,
        params=StateAwareParams(threshold=1.0),
    )
    # Waits: 1000, 1010, 81010 s; the 8-core long job is not worth 800,000 core-s; job 3 is, but
    # the cap must stay below what would let the scan send job 2: 3 + min(1 + 2, 1 + 8 − 1) = 6.
    assert cap == 6
    none = state_aware_cap(
        cores=10,
        cloud_used=3,
        queue_cores=cores,
        queue_expected_run_s=run,
        run_remaining_work=0.0,
        arrival_rate_per_s=0.0,
        exchange_rate=0.0,
        params=StateAwareParams(),
    )
    assert none == 3


def test_cap_from_a_cluster_view() -> None:
    from rlsched.core.leasing import state_aware_cap_from_view
    from rlsched.core.view import CloudState, ClusterView, FinishedJobs, PendingJobs, RunningJobs

    def ints(*v: int) -> np.ndarray:
        return np.array(v, dtype=np.int64)

    pending = PendingJobs(
        job_id=ints(1, 2, 3, 4),
        vo=ints(0, 0, 0, 0),
        job_class=ints(0, 0, 0, 0),
        cores=ints(1, 8, 2, 4),
        req_time_s=np.array([100.0, 100_000.0, 100.0, 50.0]),
        submit_s=np.zeros(4),
        oracle_run_s=np.full(4, np.nan),
        held=np.array([False, False, False, True]),
    )
    running = RunningJobs(
        job_id=ints(9),
        vo=ints(0),
        job_class=ints(0),
        cores=ints(10),
        req_time_s=np.array([2000.0]),
        submit_s=np.zeros(1),
        start_s=np.array([0.0]),
    )
    view = ClusterView(
        time_s=1000.0,
        total_cores=10,
        idle_cores=0,
        pending=pending,
        running=running,
        finished=FinishedJobs(),
        cloud=CloudState(cap=5, nodes_total=10, nodes_powered=3, nodes_busy=3),
    )
    # The same situation as test_state_aware_cap_sends_only_worthwhile_jobs (running work 10 × 1000 s);
    # the held job is left out.
    cap = state_aware_cap_from_view(
        view, exchange_rate=1.0, runtime_ratio=1.0, arrival_rate_per_s=0.0, params=StateAwareParams(threshold=1.0)
    )
    assert cap == 6


# ------------------------------------------------------------------------------ the daily learned cap
def test_daily_cap_set_rounds_fractions_and_respects_the_cloud_nodes() -> None:
    assert daily_cap_set(100) == tuple(sorted({round(f * 100) for f in DAILY_CAP_FRACTIONS}))
    assert daily_cap_set(100)[0] == 0 and daily_cap_set(100)[-1] == 100
    assert max(daily_cap_set(100, max_cap=7)) == 7


def test_daily_learner_starts_at_the_smallest_cap_and_then_minimises_wait_plus_kappa_cost() -> None:
    learner = DailyCapLearner((0, 5, 10), 1, DailyLearnerParams(bins=1, prior_days=0.0))
    ctx = learner.observe(np.array([1.0]))
    assert learner.choose(ctx, 1.0) == 0  # nothing learned yet
    # Wait falls with the cap, cost rises: κ decides.
    learner.update(ctx, waits=np.array([100.0, 40.0, 30.0]), cloud=np.array([0.0, 20.0, 60.0]))
    assert learner.choose(ctx, 1.0) == 5  # 100, 60, 90
    assert learner.choose(ctx, 0.1) == 10  # 100, 42, 36
    assert learner.choose(ctx, 10.0) == 0  # 100, 240, 630
    np.testing.assert_allclose(learner.estimates(ctx, 1.0), [100.0, 60.0, 90.0])


def test_daily_learner_context_bins_are_quantiles_of_the_past_and_shrink_to_the_pool() -> None:
    learner = DailyCapLearner((0, 1), 1, DailyLearnerParams(bins=2, prior_days=1.0))
    # The first day has no history (bin 0); then a value is high when above half of the past values.
    bins = [learner.observe(np.array([x])) for x in (5.0, 1.0, 9.0, 0.5, 3.0)]
    assert bins == [0, 0, 1, 0, 1]
    learner.update(1, waits=np.array([10.0, 0.0]), cloud=np.array([0.0, 4.0]))  # busy days: cap 1 pays
    learner.update(0, waits=np.array([0.0, 0.0]), cloud=np.array([0.0, 4.0]))  # quiet days: it does not
    learner.update(0, waits=np.array([0.0, 0.0]), cloud=np.array([0.0, 4.0]))
    assert learner.choose(1, 1.0) == 1 and learner.choose(0, 1.0) == 0
    # Shrinkage: bin 1 = (its day + 1 × the pooled mean) / 2.
    pooled = np.array([10.0 / 3, 4.0])
    np.testing.assert_allclose(learner.estimates(1, 1.0), ((np.array([10.0, 4.0]) + pooled) / 2.0))


def test_cap_fraction_index_maps_each_cap_to_its_first_fraction() -> None:
    caps = daily_cap_set(100)
    index = cap_fraction_index(caps, 100)
    assert [round(DAILY_CAP_FRACTIONS[i] * 100) for i in index] == list(caps)
    # On a small machine fractions merge: 0.01…0.04 of 20 cores round to 0 or 1 node.
    small = daily_cap_set(20)
    assert [DAILY_CAP_FRACTIONS[i] for i in cap_fraction_index(small, 20)][:3] == [0.0, 0.03, 0.08]
    with pytest.raises(ValueError, match="not round"):
        cap_fraction_index((0, 7), 100)


def test_a_prior_decides_before_any_own_day_and_fades_with_own_days() -> None:
    fractions = (0.0, 0.5, 1.0)
    prior = DailyPrior(bins=1, features=1, fractions=fractions)
    # Other traces: the middle cap is best in their units (w + c): 1.0 + 0.2 against 2.0 and 1.5.
    for _ in range(3):
        prior.add(0, waits=np.array([2.0, 1.0, 0.5]), cloud=np.array([0.0, 0.2, 1.0]), fraction_index=np.arange(3))
    caps = (0, 5, 10)
    params = DailyLearnerParams(bins=1, prior_days=0.0, transfer_days=2.0)
    learner = DailyCapLearner(caps, 1, params, prior=prior, fraction_index=np.arange(3))
    ctx = learner.observe(np.array([1.0]))
    assert learner.choose(ctx, 0.0) == 5  # a cold learner would take 0
    np.testing.assert_allclose(learner.estimates(ctx, 0.0), [2.0, 1.2, 1.5])
    # Own days, here in seconds: wait per day 100, cost per day 10 → the prior counts as 2 days of
    # (200, 100, 50) wait and (0, 2, 10) cost; own days say cap 10 is free.
    learner.update(ctx, waits=np.array([300.0, 300.0, 0.0]), cloud=np.array([0.0, 0.0, 0.0]))
    kappa = 10.0  # λ = 1: κ = wait per day / cost per day
    expected_wait = (np.array([300.0, 300.0, 0.0]) + 2 * np.array([200.0, 100.0, 50.0])) / 3
    expected_cost = (2 * np.array([0.0, 2.0, 10.0])) / 3
    np.testing.assert_allclose(learner.estimates(ctx, kappa, 100.0, 10.0), expected_wait + kappa * expected_cost)
    assert learner.choose(ctx, kappa, 100.0, 10.0) == 10
    # Without the prior's weight the learner is the cold one.
    cold = DailyCapLearner(
        caps, 1, DailyLearnerParams(bins=1, prior_days=0.0), prior=prior, fraction_index=np.arange(3)
    )
    assert cold.choose(cold.observe(np.array([1.0])), 0.0) == 0


def test_a_prior_fills_merged_fractions_and_refuses_other_shapes() -> None:
    prior = DailyPrior(bins=1, features=1, fractions=(0.0, 0.5, 1.0))
    # A source whose 0.5 and 1.0 round to one cap: the missing fraction takes the cap below's value.
    prior.add(0, waits=np.array([3.0, 1.0]), cloud=np.array([0.0, 2.0]), fraction_index=np.array([0, 1]))
    per_bin, counts, pooled, total = prior.means(np.arange(3))
    np.testing.assert_allclose(pooled, [[3.0, 1.0, 1.0], [0.0, 2.0, 2.0]])
    assert total == 1.0 and counts.tolist() == [1.0]
    np.testing.assert_allclose(per_bin[0], pooled)
    with pytest.raises(ValueError, match="bins"):
        DailyCapLearner(
            (0, 1, 2), 1, DailyLearnerParams(bins=2, transfer_days=1.0), prior=prior, fraction_index=np.arange(3)
        )
    with pytest.raises(ValueError, match="fraction index"):
        DailyCapLearner((0, 1, 2), 1, DailyLearnerParams(bins=1, transfer_days=1.0), prior=prior)
    with pytest.raises(ValueError, match="transfer_days"):
        DailyLearnerParams(transfer_days=-1.0)


def test_daily_learner_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="distinct and increasing"):
        DailyCapLearner((5, 0), 1, DailyLearnerParams())
    with pytest.raises(ValueError, match="continuation"):
        DailyLearnerParams(continuation="future")
    learner = DailyCapLearner((0, 1), 2, DailyLearnerParams())
    with pytest.raises(ValueError, match="expected 2 features"):
        learner.observe(np.array([1.0]))
    with pytest.raises(ValueError, match="one wait and one cost per cap"):
        learner.update(0, np.zeros(3), np.zeros(3))
