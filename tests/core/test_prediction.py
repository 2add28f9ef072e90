"""Runtime predictors (rlsched.core.prediction) and their runtime model (rlsched.core.runtime.PredictedRuntime)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from rlsched.core.prediction import (
    JobHistory,
    OnlineRegression,
    RuntimePredictor,
    UserLastTwo,
    learn_history,
    make_predictor,
    predictor_from_state,
    raise_outlived,
)
from rlsched.core.runtime import PredictedRuntime, make_runtime_model
from rlsched.core.view import UNKNOWN_EXECUTABLE, ClusterView, FinishedJobs, PendingJobs, RunningJobs


def test_user_last2_is_the_request_until_the_user_has_two_finished_jobs() -> None:
    p = UserLastTwo()
    assert p.predict(1, 7, 0, 1, 1000.0, 0.0) == 1000.0
    assert p.finished(1, 100.0)
    assert p.predict(2, 7, 0, 1, 1000.0, 10.0) == 1000.0  # one finished job is not enough (pyss)
    assert p.finished(2, 300.0)
    assert p.predict(3, 7, 0, 1, 1000.0, 20.0) == 200.0  # mean of 100 and 300
    assert p.predict(4, 8, 0, 1, 1000.0, 20.0) == 1000.0  # another user has no history
    assert p.predict(5, 7, 0, 1, 150.0, 20.0) == 150.0  # never above the request


def test_user_last2_keeps_the_last_two_in_completion_order_and_the_first_prediction() -> None:
    p = UserLastTwo()
    for job in (1, 2, 3):
        p.predict(job, 7, 0, 1, 1000.0, 0.0)
    p.predict(9, 7, 0, 1, 1000.0, 0.0)  # predicted now: the request
    for job, run in ((1, 10.0), (2, 20.0), (3, 60.0)):
        p.finished(job, run)
    assert p.predict(9, 7, 0, 1, 1000.0, 0.0) == 1000.0  # made once, at first sight (EASY++: at submit)
    assert p.predict(10, 7, 0, 1, 1000.0, 0.0) == 40.0  # (60 + 20) / 2: the oldest dropped
    assert not p.finished(99, 5.0)  # never predicted: not learned
    assert p.unseen_finished == 1


def _history(rows: Sequence[tuple[int, float, float, float]], request_s: float = 1000.0) -> JobHistory:
    """(user, submit, end, run) rows as a history of one-core jobs of VO 0."""
    user, submit, end, run = (np.array(column) for column in zip(*rows, strict=True))
    n = len(rows)
    return JobHistory(
        user=user.astype(np.int64),
        vo=np.zeros(n, dtype=np.int64),
        cores=np.ones(n, dtype=np.int64),
        request_s=np.full(n, request_s),
        submit_s=submit.astype(np.float64),
        run_s=run.astype(np.float64),
        end_s=end.astype(np.float64),
    )


def test_a_history_teaches_what_the_jobs_finished_by_then_taught_in_completion_order() -> None:
    # User 7: a job ending at 500 (run 100), one ending at 200 (run 300), one still running at 1,000.
    history = _history([(7, 0.0, 500.0, 100.0), (7, 10.0, 200.0, 300.0), (7, 20.0, 5000.0, 4000.0)])
    p = UserLastTwo()
    assert learn_history(p, history, until_s=1000.0) == 2
    assert p.predict(1, 7, 0, 1, 1000.0, 1000.0) == 200.0  # mean of the two that had finished
    assert p.unseen_finished == 0 and p.state()["remembered"] == [[1, 200.0, 7]]  # none of the history's
    everything = UserLastTwo()
    assert learn_history(everything, history) == 3
    assert everything.predict(1, 7, 0, 1, 5000.0, 6000.0) == 2050.0  # the last two to end: 100 and 4,000


def test_a_history_predicts_each_job_from_the_jobs_finished_before_its_submit() -> None:
    # The learned model's features are those of the moment of submit: replayed by hand, job by job, the same.
    rows = [
        (u, float(10 * k), float(10 * k + 5 + 40 * (k % 3)), float(5 + 40 * (k % 3))) for k, u in enumerate([1, 2] * 15)
    ]
    taught = OnlineRegression()
    learn_history(taught, _history(rows, request_s=600.0))
    by_hand = OnlineRegression()
    events = sorted(
        [(end, 0, k) for k, (_, _, end, _) in enumerate(rows)] + [(sub, 1, k) for k, (_, sub, _, _) in enumerate(rows)]
    )
    for _, is_submit, k in events:
        if is_submit:
            by_hand.predict(-1 - k, rows[k][0], 0, 1, 600.0, rows[k][1])
        else:
            by_hand.finished(-1 - k, rows[k][3])
    assert taught.updates == 30
    np.testing.assert_array_equal(taught.theta, by_hand.theta)
    assert taught.predict(1, 1, 0, 1, 600.0, 400.0) == by_hand.predict(1, 1, 0, 1, 600.0, 400.0)


def test_a_job_that_ends_when_it_is_submitted_is_learned() -> None:
    p = UserLastTwo()
    assert learn_history(p, _history([(7, 0.0, 0.0, 0.0), (7, 0.0, 0.0, 0.0)])) == 2
    assert p.unseen_finished == 0


def test_outlived_predictions_rise_by_tsafrirs_steps_never_past_the_request() -> None:
    pred = np.array([100.0, 100.0, 100.0, 100.0, 100.0])
    elapsed = np.array([50.0, 100.0, 170.0, 1000.0, 5000.0])
    request = np.array([10_000.0, 10_000.0, 10_000.0, 10_000.0, 1500.0])
    out = raise_outlived(pred, elapsed, request)
    # 50 s: still short of it; 100 s: reached, +1 min; 170 s: +5 min; 1000 s: +15 min; capped at the request.
    assert out.tolist() == [100.0, 160.0, 400.0, 1900.0, 1500.0]


def test_the_untrained_regression_predicts_the_request() -> None:
    p = OnlineRegression()
    assert p.predict(1, 3, 0, 4, 3600.0, 0.0) == pytest.approx(3600.0)


def _stream(seed: int, n: int = 3000) -> list[tuple[int, int, float, float]]:
    """(job, user, request, runtime): each user runs a fixed fraction of its request, with noise."""
    rng = np.random.default_rng(seed)
    fraction = {u: f for u, f in enumerate(rng.uniform(0.02, 0.9, 20))}
    jobs = []
    for j in range(n):
        u = int(rng.integers(20))
        req = float(rng.choice([600.0, 3600.0, 14400.0, 86400.0]))
        run = min(req, req * fraction[u] * float(rng.lognormal(0.0, 0.3)))
        jobs.append((j, u, req, run))
    return jobs


def _replay(p: OnlineRegression | UserLastTwo, jobs: list[tuple[int, int, float, float]]) -> np.ndarray:
    """Predict each job, then learn it (one job at a time): the predictions in order."""
    out = []
    for j, u, req, run in jobs:
        out.append(p.predict(j, u, 0, 1, req, float(j)))
        p.finished(j, run)
    return np.array(out)


def test_the_regression_learns_users_ratios_and_beats_the_request() -> None:
    jobs = _stream(1)
    run = np.array([r for *_, r in jobs])
    req = np.array([q for _, _, q, _ in jobs])
    learned = _replay(OnlineRegression(), jobs)
    assert np.all((learned >= 1.0) & (learned <= req))
    tail = slice(1000, None)  # once it has seen a thousand jobs
    assert np.mean(np.abs(learned[tail] - run[tail])) < 0.5 * np.mean(np.abs(req[tail] - run[tail]))


def test_the_learned_predictor_hands_a_regular_user_to_easy_plus_plus() -> None:
    # A regression that cannot move (an enormous ridge) keeps predicting the request; user 5 always runs 100 s
    # of 1000: once EASY++'s mean of two has been closer on the user's jobs, the user gets it.
    p = OnlineRegression(ridge=1e9)
    for job in range(1, 5):
        p.predict(job, 5, 0, 1, 1000.0, 0.0)
        p.finished(job, 100.0)
    assert p.predict(5, 5, 0, 1, 1000.0, 0.0) == pytest.approx(100.0)
    assert p.predict(6, 6, 0, 1, 1000.0, 0.0) == pytest.approx(1000.0)  # no history: the model's


def test_weighing_under_predictions_more_predicts_fewer_too_short() -> None:
    jobs = _stream(2)
    run = np.array([r for *_, r in jobs])
    plain = _replay(OnlineRegression(under_weight=1.0), jobs)
    cautious = _replay(OnlineRegression(under_weight=8.0), jobs)
    assert np.mean(cautious < run) < np.mean(plain < run) - 0.1


def _programs_stream(seed: int, n: int = 3000) -> list[tuple[int, int, int, float, float]]:
    """(job, user, program, request, runtime): each user alternates at random between two programs of one request,
    a short one (2 % of it) and a long one (60 %): the user's own history mixes them, the program's does not."""
    rng = np.random.default_rng(seed)
    jobs = []
    for j in range(n):
        u = int(rng.integers(20))
        program = 2 * u + int(rng.integers(2))
        run = 3600.0 * (0.02 if program % 2 == 0 else 0.6) * float(rng.lognormal(0.0, 0.1))
        jobs.append((j, u, program, 3600.0, min(run, 3600.0)))
    return jobs


def _replay_programs(p: OnlineRegression, jobs: list[tuple[int, int, int, float, float]], known: bool) -> np.ndarray:
    out = []
    for j, u, program, req, run in jobs:
        out.append(p.predict(j, u, 0, 1, req, float(j), program if known else UNKNOWN_EXECUTABLE))
        p.finished(j, run)
    return np.array(out)


def test_a_users_runs_of_each_program_predict_that_program_where_the_users_history_mixes_them() -> None:
    jobs = _programs_stream(4)
    run = np.array([r for *_, r in jobs])
    tail = slice(1000, None)
    by_program = OnlineRegression()
    with_programs = _replay_programs(by_program, jobs, known=True)
    by_user = OnlineRegression()
    without = _replay_programs(by_user, jobs, known=False)
    assert by_program.reads_programs and not by_user.reads_programs
    error_with, error_without = (np.mean(np.abs(p[tail] - run[tail])) for p in (with_programs, without))
    assert error_with < 0.25 * error_without
    short = np.array([program % 2 == 0 for _, _, program, _, _ in jobs])
    # The short program's jobs come out short: an order a rule on the predictions can use.
    assert np.median(with_programs[tail][short[tail]]) < 0.1 * np.median(with_programs[tail][~short[tail]])


def test_without_programs_the_model_keeps_its_19_features_and_widens_at_the_first_known_one() -> None:
    unknown = OnlineRegression()
    _replay(unknown, _stream(5, 400))  # jobs of no known program: the model is the 19-feature one
    assert len(unknown.theta) == 19 and not unknown.reads_programs and unknown.state()["programs"] == []
    # A job predicted before the first known program finishes after it: learned with its features as they were.
    unknown.predict(10_000, 1, 0, 1, 1000.0, 0.0)
    unknown.predict(10_001, 1, 0, 1, 1000.0, 0.0, 42)
    assert unknown.reads_programs and len(unknown.theta) == 23 and len(unknown.cov) == 23
    assert unknown.finished(10_000, 50.0) and unknown.finished(10_001, 60.0)
    assert unknown.state()["programs"] == [[1, 42, [pytest.approx(np.log(60.0))]]]


def test_the_program_histories_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import rlsched.core.prediction as prediction

    monkeypatch.setattr(prediction, "MAX_PROGRAMS", 3)
    p = OnlineRegression()
    for program in range(5):  # job names with a run number: a new pair per job
        p.predict(program, 1, 0, 1, 1000.0, 0.0, program)
        p.finished(program, 10.0)
    assert [row[1] for row in p.state()["programs"]] == [2, 3, 4]  # the least recently finished forgotten


def test_user_last2_stays_per_user_whatever_the_program() -> None:
    p = UserLastTwo()
    for job, program, run in ((1, 7, 100.0), (2, 8, 300.0)):
        p.predict(job, 5, 0, 1, 1000.0, 0.0, program)
        p.finished(job, run)
    assert p.predict(3, 5, 0, 1, 1000.0, 0.0, 7) == 200.0  # Tsafrir et al.'s mean of the user's last two


def test_a_version_1_state_loads_as_a_model_that_has_met_no_program() -> None:
    p = OnlineRegression()
    for job, u, req, run in _stream(6, 200):
        p.predict(job, u, 0, 1, req, float(job))
        if job % 5:
            p.finished(job, run)
    state = p.state()
    old = {**state, "version": 1, "remembered": [row[:-1] for row in state["remembered"]]}
    del old["programs"]  # what a daemon wrote before the program features
    restored = predictor_from_state(json.loads(json.dumps(old)))
    assert isinstance(restored, OnlineRegression) and not restored.reads_programs
    assert restored.state() == state
    assert restored.predict(10_000, 3, 0, 1, 3600.0, 0.0) == p.predict(10_000, 3, 0, 1, 3600.0, 0.0)


def test_predictions_are_deterministic() -> None:
    jobs = _stream(3, 500)
    assert np.array_equal(_replay(OnlineRegression(), jobs), _replay(OnlineRegression(), jobs))


def test_unknown_predictor_is_one_line() -> None:
    with pytest.raises(ValueError, match="unknown runtime predictor 'psychic'"):
        make_predictor("psychic")


def _view(
    now: float,
    pending: Sequence[tuple[int, int, float]],
    running: Sequence[tuple[int, int, float, float]] = (),
    finished: Sequence[tuple[int, float, float]] = (),
) -> ClusterView:
    """pending (id, user, request), running (id, user, request, start), finished (id, start, end)."""
    pend = PendingJobs(
        job_id=np.array([p[0] for p in pending], dtype=np.int64),
        vo=np.zeros(len(pending), dtype=np.int64),
        job_class=np.zeros(len(pending), dtype=np.int64),
        cores=np.ones(len(pending), dtype=np.int64),
        req_time_s=np.array([p[2] for p in pending], dtype=np.float64),
        submit_s=np.zeros(len(pending)),
        oracle_run_s=np.full(len(pending), np.nan),
        held=np.zeros(len(pending), dtype=bool),
        user=np.array([p[1] for p in pending], dtype=np.int64),
    )
    run = RunningJobs(
        job_id=np.array([r[0] for r in running], dtype=np.int64),
        vo=np.zeros(len(running), dtype=np.int64),
        job_class=np.zeros(len(running), dtype=np.int64),
        cores=np.ones(len(running), dtype=np.int64),
        req_time_s=np.array([r[2] for r in running], dtype=np.float64),
        submit_s=np.zeros(len(running)),
        start_s=np.array([r[3] for r in running], dtype=np.float64),
        user=np.array([r[1] for r in running], dtype=np.int64),
    )
    done = FinishedJobs(
        job_id=np.array([f[0] for f in finished], dtype=np.int64),
        vo=np.zeros(len(finished), dtype=np.int64),
        job_class=np.zeros(len(finished), dtype=np.int64),
        cores=np.ones(len(finished), dtype=np.int64),
        submit_s=np.zeros(len(finished)),
        start_s=np.array([f[1] for f in finished], dtype=np.float64),
        end_s=np.array([f[2] for f in finished], dtype=np.float64),
    )
    return ClusterView(time_s=now, total_cores=8, idle_cores=0, pending=pend, running=run, finished=done)


def test_the_runtime_model_learns_from_the_completion_feed_and_raises_outlived_running_jobs() -> None:
    model = make_runtime_model("user-last2")
    assert isinstance(model, PredictedRuntime) and model.name == "user-last2"
    model.observe(_view(0.0, [(1, 5, 1000.0), (2, 5, 1000.0)]))
    model.observe(_view(500.0, [], finished=[(1, 0.0, 100.0), (2, 0.0, 300.0)]))
    model.observe(_view(600.0, [(3, 5, 1000.0)]))
    assert model.pending(_view(600.0, [(3, 5, 1000.0)]).pending).tolist() == [200.0]
    # Job 3 started at 600 and has run 250 s at 850 s: past its 200-s prediction, raised by 1 min.
    model.observe(_view(850.0, [], running=[(3, 5, 1000.0, 600.0)]))
    assert model.running(_view(850.0, [], running=[(3, 5, 1000.0, 600.0)]).running).tolist() == [260.0]


class _Counting(UserLastTwo):
    """user-last2 that counts the jobs it is asked about."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[int] = []

    def predict(
        self,
        job_id: int,
        user: int,
        vo: int,
        cores: int,
        request_s: float,
        submit_s: float,
        executable: int = UNKNOWN_EXECUTABLE,
    ) -> float:
        self.asked.append(job_id)
        return super().predict(job_id, user, vo, cores, request_s, submit_s, executable)


def test_the_runtime_model_asks_its_predictor_only_about_jobs_it_has_not_seen() -> None:
    counting = _Counting()
    model = PredictedRuntime(counting)
    model.observe(_view(0.0, [(1, 5, 1000.0), (2, 5, 1000.0), (3, 5, 800.0)]))
    assert counting.asked == [1, 2, 3]
    # Jobs 1 and 2 end: job 3 keeps the prediction made when it was first seen (the request), job 4 is new and
    # gets the mean of the user's last two runtimes; the running job 3 is not asked about again.
    later = _view(500.0, [(4, 5, 1000.0)], running=[(3, 5, 800.0, 450.0)], finished=[(1, 0.0, 100.0), (2, 0.0, 300.0)])
    model.observe(later)
    assert counting.asked == [1, 2, 3, 4]
    assert model.pending(later.pending).tolist() == [200.0]
    assert model.running(later.running).tolist() == [800.0]
    # A table of other objects with the same jobs (the next view's) is answered from the seen ones, in its order.
    assert model.pending(_view(510.0, [(4, 5, 1000.0)]).pending).tolist() == [200.0]
    assert counting.asked == [1, 2, 3, 4]
    # Another predictor (warmed on a window's past, restored) predicts every job anew.
    fresh = _Counting()
    model.predictor = fresh
    assert model.pending(_view(520.0, [(4, 5, 1000.0)]).pending).tolist() == [1000.0]
    assert fresh.asked == [4]


def test_a_view_without_users_predicts_the_request_for_everyone() -> None:
    model = make_runtime_model("user-last2")
    view = _view(0.0, [(1, 5, 700.0)])
    bare = PendingJobs(
        job_id=view.pending.job_id,
        vo=view.pending.vo,
        job_class=view.pending.job_class,
        cores=view.pending.cores,
        req_time_s=view.pending.req_time_s,
        submit_s=view.pending.submit_s,
        oracle_run_s=view.pending.oracle_run_s,
        held=view.pending.held,
    )
    assert model.pending(bare).tolist() == [700.0]


def test_the_runtime_model_hands_the_views_programs_to_its_predictor() -> None:
    """Live, a job's program is its job name's id (the backends' executable column): user 5 runs a 100 s program
    and a 900 s one; the model learns each from the completion feed and predicts the next run of each apart."""
    model = make_runtime_model("learned")
    assert isinstance(model, PredictedRuntime)
    predictor = model.predictor
    assert isinstance(predictor, OnlineRegression)
    t = 0.0
    for k in range(12):  # two runs of each program at a time, predicted when first seen, finished in the next view
        jobs = [(100 + 2 * k, 5, 1000.0), (101 + 2 * k, 5, 1000.0)]
        view = _view(t, jobs, finished=[(98 + 2 * k, t - 100.0, t), (99 + 2 * k, t - 900.0, t)] if k else [])
        model.observe(replace(view, pending=replace(view.pending, executable=np.array([11, 22]))))
        t += 1000.0
    assert predictor.reads_programs
    last = _view(t, [(500, 5, 1000.0), (501, 5, 1000.0)])
    predicted = model.pending(replace(last.pending, executable=np.array([11, 22])))
    assert predicted[0] == pytest.approx(100.0, rel=0.05) and predicted[1] == pytest.approx(900.0, rel=0.05)
    # The same view without programs: the user's own history, which mixes the two.
    mixed = make_runtime_model("learned")
    for k in range(12):
        jobs = [(100 + 2 * k, 5, 1000.0), (101 + 2 * k, 5, 1000.0)]
        mixed.observe(
            _view(1000.0 * k, jobs, finished=[(98 + 2 * k, 0.0, 100.0), (99 + 2 * k, 0.0, 900.0)] if k else [])
        )
    both = mixed.pending(_view(12000.0, [(500, 5, 1000.0), (501, 5, 1000.0)]).pending)
    assert both[0] == both[1]  # two jobs alike but for their program: one guess for both
    assert all(abs(b - run) > 0.2 * run for b, run in zip(both, (100.0, 900.0), strict=True))  # near neither


# ------------------------------------------------------------------------------------------ learned state
def _events(seed: int, n: int = 1500, programs: bool = False) -> list[tuple[str, int, tuple[Any, ...]]]:
    """A live-like stream: jobs predicted at submit, finished later and out of order (some never: cancelled
    while pending; some finish unseen), so that at any moment many predicted jobs have not finished.
    ``programs``: each job runs one of four programs (known from the 100th job on), each with its runtime."""
    rng = np.random.default_rng(seed)
    fraction = rng.uniform(0.02, 0.9, 15)
    events: list[tuple[str, int, tuple[Any, ...]]] = []
    outstanding: list[tuple[int, float]] = []
    for j in range(n):
        u = int(rng.integers(15))
        req = float(rng.choice([600.0, 3600.0, 14400.0, 86400.0]))
        cores = int(rng.choice([1, 2, 8, 64]))
        program = int(rng.integers(4))
        known = (program if j >= 100 else UNKNOWN_EXECUTABLE,) if programs else ()
        events.append(("predict", j, (u, u % 3, cores, req, 1.7e9 + 37.0 * j, *known)))
        share = float(fraction[u]) * (0.1 + 0.3 * program if programs else 1.0)
        if rng.random() < 0.9:  # the rest are cancelled while pending: remembered, never finished
            outstanding.append((j, min(req, req * share * float(rng.lognormal(0.0, 0.4)))))
        while outstanding and rng.random() < 0.4:
            job, run = outstanding.pop(int(rng.integers(len(outstanding))))
            events.append(("finished", job, (run,)))
        if rng.random() < 0.02:
            events.append(("finished", 10**9 + j, (5.0,)))  # submitted, run and ended between two polls
    return events


def _apply(p: RuntimePredictor, event: tuple[str, int, tuple[Any, ...]]) -> float | bool:
    kind, job, args = event
    if kind == "predict":
        return p.predict(job, *args)
    return p.finished(job, *args)


@pytest.mark.parametrize(
    ("make", "programs"),
    [
        (UserLastTwo, False),
        (OnlineRegression, False),
        # Not the defaults: the state carries them (a prior 10x smaller: forgetting stops at another size).
        (lambda: OnlineRegression(under_weight=2.0, ridge=0.1, forgetting=0.99), False),
        # Jobs with programs: saved with the program features, and jobs predicted before the model had them.
        (OnlineRegression, True),
    ],
    ids=["user-last2", "learned", "learned-tuned", "learned-programs"],
)
def test_a_restored_predictor_predicts_and_learns_bit_identically(
    make: Callable[[], RuntimePredictor], programs: bool
) -> None:
    events = _events(7, programs=programs)
    half = len(events) // 2
    original = make()
    name = original.name
    for event in events[:half]:
        _apply(original, event)
    saved = original.state()
    assert saved["predictor"] == name and saved["version"] == 2 and len(saved["remembered"]) > 50
    assert saved["unseen_finished"] > 0
    restored = predictor_from_state(json.loads(json.dumps(saved)))  # through JSON, as the daemon writes it
    assert type(restored) is type(original) and restored.state() == saved
    pending_at_save = {row[0] for row in saved["remembered"]}
    trained_after_restore = 0
    for event in events[half:]:
        a, b = _apply(original, event), _apply(restored, event)
        # Bit-identical: the same float, not merely a close one.
        assert type(a) is type(b) and (a == b if isinstance(a, bool) else float(a).hex() == float(b).hex())
        trained_after_restore += bool(event[0] == "finished" and event[1] in pending_at_save and b)
    assert trained_after_restore > 50  # jobs predicted before the save, finished after it, still train it
    assert json.dumps(restored.state()) == json.dumps(original.state())
    if isinstance(original, OnlineRegression):
        assert isinstance(restored, OnlineRegression) and restored.updates == original.updates > 500
        assert restored.theta.tobytes() == original.theta.tobytes()
        assert restored.reads_programs == original.reads_programs == programs
        assert (len(saved["programs"]) > 0) == programs


def test_a_state_can_keep_only_the_jobs_that_may_still_finish() -> None:
    p = OnlineRegression()
    for job in range(6):
        p.predict(job, 1, 0, 1, 1000.0, 0.0)
    p.finished(0, 100.0)
    state = p.state(keep={2, 4, 99})
    assert [row[0] for row in state["remembered"]] == [2, 4]
    restored = predictor_from_state(state)
    assert restored.predict(4, 1, 0, 1, 1000.0, 0.0) == p.predict(4, 1, 0, 1, 1000.0, 0.0)
    assert restored.finished(4, 200.0) and not restored.finished(3, 200.0)


#: (user, program) pairs the bad-state test's learned predictor has learned.
PROGRAM_ROWS = 3


def _drop(key: str) -> Callable[[dict[str, Any]], None]:
    return lambda s: s.pop(key)


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda s: s.__setitem__(key, value)


@pytest.mark.parametrize(
    ("name", "spoil", "key"),
    [
        ("learned", _drop("theta"), "theta"),
        ("learned", lambda s: s["theta"].pop(), "theta"),
        ("learned", lambda s: s["cov"][3].append(0.0), "cov[3]"),
        ("learned", _set("cov", "eye"), "cov"),
        ("learned", _set("forgetting", 1.5), "forgetting"),
        ("learned", _set("updates", True), "updates"),
        ("learned", lambda s: s["users"][0].__setitem__("runs", "x"), "users[0].runs"),
        ("learned", lambda s: s["users"][0].pop("count"), "users[0].count"),
        ("learned", lambda s: s["remembered"][0].pop(), "remembered[0]"),
        ("learned", lambda s: s["remembered"][1][-2].__setitem__(0, "1"), "remembered[1]"),
        ("learned", lambda s: s["remembered"][1].__setitem__(-1, 1.5), "remembered[1]"),
        ("learned", lambda s: s["programs"].append([1, 2, [3.0, 4.0, 5.0]]), f"programs[{PROGRAM_ROWS}]"),
        ("learned", lambda s: s.__setitem__("theta", s["theta"][:19]), "cov"),  # without the program features
        ("learned", lambda s: s["theta"].extend([0.0] * 4), "theta"),
        ("learned", lambda s: s["vo_ratio"][0].__setitem__(0, 1.5), "vo_ratio[0]"),
        ("learned", _set("version", 3), "version"),
        ("learned", _set("predictor", "psychic"), "predictor"),
        ("user-last2", _drop("predictor"), "predictor"),
        ("user-last2", _set("unseen_finished", -1), "unseen_finished"),
        ("user-last2", lambda s: s["last"][0].__setitem__(0, "alice"), "last[0]"),
        ("user-last2", _set("remembered", {}), "remembered"),
    ],
)
def test_a_bad_state_is_a_value_error_naming_the_key(
    name: str, spoil: Callable[[dict[str, Any]], None], key: str
) -> None:
    p = make_predictor(name)
    for event in _events(3, 60):
        _apply(p, event)
    if isinstance(p, OnlineRegression):  # a few jobs with programs: the state has some
        for job in range(PROGRAM_ROWS):
            p.predict(1000 + job, job, 0, 1, 1000.0, 0.0, 7)
            p.finished(1000 + job, 10.0)
    state = copy.deepcopy(p.state())
    predictor_from_state(copy.deepcopy(state))  # sound before it is spoiled
    spoil(state)
    with pytest.raises(ValueError, match=re.escape(f"runtime predictor state: key {key!r}")) as info:
        predictor_from_state(state)
    assert "\n" not in str(info.value)


def test_a_state_that_is_not_an_object_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="expected an object, got list"):
        predictor_from_state([])


def test_the_runtime_model_keeps_the_jobs_of_the_last_view_and_restores_only_its_own_predictor() -> None:
    model = make_runtime_model("learned")
    assert isinstance(model, PredictedRuntime)
    model.observe(_view(0.0, [(1, 5, 1000.0), (2, 5, 1000.0), (3, 6, 500.0), (4, 6, 500.0)]))
    model.observe(_view(500.0, [(3, 6, 500.0)], running=[(4, 6, 500.0, 400.0)], finished=[(1, 0.0, 100.0)]))
    # Job 2 left the view (cancelled while pending): no longer kept; jobs 3 (pending) and 4 (running) are.
    state = json.loads(json.dumps(model.state()))
    assert [row[0] for row in state["remembered"]] == [3, 4]
    again = make_runtime_model("learned")
    assert isinstance(again, PredictedRuntime)
    again.restore(state)
    later = _view(900.0, [(5, 5, 1000.0)], finished=[(3, 500.0, 800.0), (4, 400.0, 850.0)])
    model.observe(later)
    again.observe(later)
    assert model.pending(later.pending).tobytes() == again.pending(later.pending).tobytes()
    assert json.dumps(model.state()) == json.dumps(again.state())
    other = make_runtime_model("user-last2")
    assert isinstance(other, PredictedRuntime)
    with pytest.raises(ValueError, match="key 'predictor': 'learned', not 'user-last2'"):
        other.restore(state)


def _in_vos(view: ClusterView, vos: tuple[str, ...], vo_of_user: dict[int, str]) -> ClusterView:
    """``view`` with VO names ``vos``, each pending job in its user's VO (by name: the index follows ``vos``)."""
    vo = np.array([vos.index(vo_of_user[u]) for u in view.pending.user.tolist()], dtype=np.int64)
    return replace(view, vos=vos, pending=replace(view.pending, vo=vo))


def test_a_vo_keeps_what_the_learned_predictor_learned_of_it_whatever_index_a_later_view_gives_it() -> None:
    # Without a fixed VO list a live view numbers VOs as it meets them: after a restart "atlas" may be VO 1.
    vo_of_user = {u: ("atlas" if u % 2 else "cms") for u in range(1, 121)}
    model = make_runtime_model("learned")
    assert isinstance(model, PredictedRuntime)
    first = ("atlas", "cms")
    for start in (1, 41, 81):  # three rounds of 40 new users: the later ones are predicted from the VOs' ratios
        ids = range(start, start + 40)
        model.observe(_in_vos(_view(10.0 * start, [(job, job, 1000.0) for job in ids]), first, vo_of_user))
        # atlas's jobs run a tenth of their request, cms's nine tenths.
        done = [(job, 0.0, 100.0 if vo_of_user[job] == "atlas" else 900.0) for job in ids]
        model.observe(_in_vos(_view(10.0 * start + 5, [], finished=done), first, vo_of_user))
    state = json.loads(json.dumps(model.state()))
    assert state["vo_names"] == ["atlas", "cms"]
    restarted, old_format = make_runtime_model("learned"), make_runtime_model("learned")
    assert isinstance(restarted, PredictedRuntime) and isinstance(old_format, PredictedRuntime)
    restarted.restore(state)
    old_format.restore({k: v for k, v in state.items() if k != "vo_names"})  # a state from before: by index
    # New users (no history of their own) in each VO: only the VO's running ratio tells them apart.
    vo_of_user.update({301: "atlas", 302: "cms"})
    new = [(401, 301, 1000.0), (402, 302, 1000.0)]
    same = model.pending(_in_vos(_view(2000.0, new), first, vo_of_user).pending)
    swapped = _in_vos(_view(2000.0, new), ("cms", "atlas"), vo_of_user)
    restarted.observe(swapped)
    old_format.observe(swapped)
    assert same[0] < same[1]  # the VO ratio matters: atlas's jobs are predicted shorter
    assert restarted.pending(swapped.pending).tobytes() == same.tobytes()
    assert old_format.pending(swapped.pending).tolist() != same.tolist()  # by index, "atlas" had cms's history
    assert restarted.state()["vo_names"] == ["atlas", "cms"]  # the keys' names, not the view's order


def test_a_new_vo_name_gets_the_next_key_and_bad_vo_names_are_a_value_error() -> None:
    model = make_runtime_model("learned")
    assert isinstance(model, PredictedRuntime)
    model.key_vos(["atlas"])
    view = _view(0.0, [(1, 1, 1000.0), (2, 2, 1000.0)])
    model.observe(_in_vos(view, ("lhcb", "atlas"), {1: "lhcb", 2: "atlas"}))
    assert model.vo_names == ["atlas", "lhcb"]
    state = model.state()
    assert [row[3] for row in state["remembered"]] == [1, 0]  # _FACTS_FIELDS' vo: the keys, lhcb 1 and atlas 0
    for bad in ("atlas", [1], ["atlas", "atlas"]):
        with pytest.raises(ValueError, match="key 'vo_names'"):
            make_runtime_model("learned").restore({**state, "vo_names": bad})  # type: ignore[attr-defined]


def test_a_table_already_predicted_is_answered_again_without_the_predictor() -> None:
    model = make_runtime_model("user-last2")
    assert isinstance(model, PredictedRuntime)
    calls: list[int] = []
    predict = model.predictor.predict

    def counted(job_id: int, *args: Any) -> float:
        calls.append(job_id)
        return predict(job_id, *args)

    model.predictor.predict = counted  # type: ignore[method-assign,assignment]
    view = _view(0.0, [(1, 5, 1000.0), (2, 5, 1000.0)], running=[(3, 5, 1000.0, 0.0)])
    model.observe(view)
    assert calls == [1, 2, 3]
    first = model.pending(view.pending)
    first[0] = -1.0  # the caller's copy: the memo is not changed through it
    assert model.pending(view.pending).tolist() == [1000.0, 1000.0] and calls == [1, 2, 3]
    later = replace(view, time_s=600.0)  # a replay's next view: the same tables while no job came or went
    model.observe(later)
    assert model.running(later.running).tolist() == [1000.0] and calls == [1, 2, 3]
    # Another job finished: the jobs still in the view keep their predictions without asking again.
    done = replace(view, time_s=700.0, finished=_view(0.0, [], finished=[(9, 0.0, 600.0)]).finished)
    model.observe(done)
    assert model.pending(done.pending).tolist() == [1000.0, 1000.0] and calls == [1, 2, 3]
