"""The runtime predictors measured on their own (rlsched/sim/prediction_errors.py)."""

from __future__ import annotations

import numpy as np

from rlsched.core.runtime import usable_requested
from rlsched.sim.prediction_errors import mean_log_error, order_agreement, prediction_errors, short_job_hits
from rlsched.sim.workloads.lal import generate_lal


def test_the_request_never_under_predicts_and_its_error_is_the_mean_overestimate() -> None:
    workload = generate_lal(0, scale=0.02)
    scores = {s.model: s for s in prediction_errors(workload)}
    assert set(scores) == {"requested", "user-last2", "learned"}
    request = usable_requested(workload.req_time.astype(np.float64), workload.job_class)
    run = np.minimum(np.maximum(workload.run.astype(np.float64), 0.0), request)
    assert scores["requested"].under_share == 0.0
    assert scores["requested"].mean_abs_error_s == np.mean(request - run)
    assert scores["user-last2"].under_share > 0.0 and scores["user-last2"].jobs == len(workload)
    for score in scores.values():
        assert 0.0 <= score.order_agreement <= 1.0 and score.mean_log_error >= 0.0


def test_order_agreement_counts_the_pairs_submitted_together_whose_runtimes_differ() -> None:
    submit = np.array([0.0, 10.0, 20.0, 30.0, 5000.0])
    run = np.array([100.0, 50.0, 300.0, 105.0, 10.0])
    # Pairs: (0,1), (0,2), (1,2), (1,3), (2,3); (0,3) differ by under 10 %; job 4 came over an hour later.
    right = np.array([100.0, 60.0, 200.0, 101.0, 1.0])
    assert order_agreement(right, run, submit) == 1.0
    one_wrong = np.array([100.0, 150.0, 200.0, 160.0, 1.0])  # (0,1) wrong; (1,3) 150 < 160 as 50 < 105
    assert order_agreement(one_wrong, run, submit) == 4 / 5
    one_tie = np.array([100.0, 100.0, 200.0, 150.0, 1.0])  # (0,1) tied: half
    assert order_agreement(one_tie, run, submit) == 4.5 / 5
    shuffled = np.array([4, 2, 0, 3, 1])  # the rows in any order: pairs are by submit
    assert order_agreement(one_wrong[shuffled], run[shuffled], submit[shuffled]) == 4 / 5
    assert np.isnan(order_agreement(right[[0, 4]], run[[0, 4]], submit[[0, 4]]))


def test_the_runtime_itself_orders_every_pair_and_the_log_error_weighs_short_jobs_alike() -> None:
    workload = generate_lal(0, scale=0.02)
    run = np.maximum(workload.run.astype(np.float64), 0.0)
    assert order_agreement(run, run, workload.submit.astype(np.float64)) == 1.0
    assert mean_log_error(np.array([2.0, 0.5, 2000.0]), np.array([1.0, 1.0, 1000.0])) == 2 * np.log(2.0) / 3


def test_the_short_jobs_are_scored_as_a_detector_recall_and_precision() -> None:
    run = np.array([5.0, 30.0, 59.0, 600.0, 3600.0])
    predicted = np.array([10.0, 900.0, 40.0, 50.0, 3600.0])  # two of the three short ones found, one false alarm
    assert short_job_hits(predicted, run) == (2 / 3, 2 / 3)
    assert np.isnan(short_job_hits(np.array([100.0]), np.array([100.0]))[0])
    assert np.isnan(short_job_hits(np.array([100.0]), np.array([10.0]))[1])


def test_the_learned_predictor_reads_the_programs_only_where_the_workload_lets_it() -> None:
    from dataclasses import replace

    from rlsched.sim.workload import make_workload

    # Ten users, each alternating at random between a 60 s program and a 3,000 s one of the same request.
    rng = np.random.default_rng(3)
    n = 2000
    user = rng.integers(10, size=n)
    program = 2 * user + rng.integers(2, size=n)
    run = np.where(program % 2 == 0, 60.0, 3000.0) * rng.lognormal(0.0, 0.1, n)
    jobs = make_workload(np.arange(n) * 600.0, run=run, procs=[1] * n, max_procs=4, req_time=np.full(n, 3600.0))
    jobs = replace(jobs, user=user.astype(np.int64), executable=program.astype(np.int64))
    plain = {s.model: s for s in prediction_errors(jobs)}
    named = {s.model: s for s in prediction_errors(replace(jobs, programs_known=True))}
    # A public trace's ids are not read unless the workload says so: the predictions without any ids.
    without = {s.model: s for s in prediction_errors(replace(jobs, executable=np.full(n, -1)))}
    assert plain["learned"] == replace(without["learned"], seconds=plain["learned"].seconds)
    assert named["learned"].mean_abs_error_s < 0.3 * plain["learned"].mean_abs_error_s
    assert named["user-last2"] == replace(plain["user-last2"], seconds=named["user-last2"].seconds)  # per user
