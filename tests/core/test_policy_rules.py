"""The field's rules (rlsched.core.policies.rules) through the registry: each one's order on a hand-made queue."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.policies import BuildContext, PolicyError, backfill, build_agent, parse_policy, static_key
from rlsched.core.policies.rules import RuleAgent, rule_priority
from rlsched.core.view import ClusterView, FinishedJobs, PendingJobs, RunningJobs

#: (job id, requested time, cores, submit time); the queue is looked at at t = 1000 s.
QUEUE = ((1, 100.0, 8, 100.0), (2, 1000.0, 16, 200.0), (3, 400.0, 4, 300.0), (4, 50.0, 32, 400.0))
#: The same jobs (job 4 asking 60 s) all submitted at once: F1–F4 then order by their size term alone.
SAME_SUBMIT = ((1, 100.0, 8, 100.0), (2, 1000.0, 16, 100.0), (3, 400.0, 4, 100.0), (4, 60.0, 32, 100.0))


def _view(queue: tuple[tuple[int, float, int, float], ...], now: float = 1000.0) -> ClusterView:
    n = len(queue)
    pend = PendingJobs(
        job_id=np.array([q[0] for q in queue], dtype=np.int64),
        vo=np.zeros(n, dtype=np.int64),
        job_class=np.zeros(n, dtype=np.int64),
        cores=np.array([q[2] for q in queue], dtype=np.int64),
        req_time_s=np.array([q[1] for q in queue]),
        submit_s=np.array([q[3] for q in queue]),
        oracle_run_s=np.full(n, np.nan),
        held=np.zeros(n, dtype=bool),
    )
    return ClusterView(
        time_s=now, total_cores=64, idle_cores=0, pending=pend, running=RunningJobs(), finished=FinishedJobs()
    )


def _order(spec: str, view: ClusterView) -> list[int]:
    agent = build_agent(parse_policy(spec), BuildContext(mode="boost", live=True))
    decisions = agent.decide(view)
    assert decisions.boost is not None
    return list(decisions.boost)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("sjf", [4, 1, 3, 2]),  # r: 50, 100, 400, 1000
        ("easy-sjf", [4, 1, 3, 2]),
        ("saf", [1, 3, 4, 2]),  # r·n: 800, 1600 (job 3, earlier), 1600, 16000
        ("ljf", [2, 3, 1, 4]),
        ("smallest", [3, 1, 2, 4]),  # n: 4, 8, 16, 32
        ("wfp3", [4, 1, 3, 2]),  # (w/r)³·n: job 4 (600/50)³·32 = 55296, 1: 5832, 3: 21.4, 2: 8.2
        ("unicep", [1, 4, 3, 2]),  # w/(log₂n·r): 1: 900/300 = 3, 4: 600/250 = 2.4, 3: 0.875, 2: 0.2
        ("f1", [1, 2, 3, 4]),  # 870·log₁₀(s) dominates a queue this small: oldest first
    ],
)
def test_each_rule_orders_the_hand_made_queue(spec: str, expected: list[int]) -> None:
    assert _order(spec, _view(QUEUE)) == expected


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("f1", [3, 1, 2, 4]),  # log₁₀(r)·n: 10.4, 16, 48, 56.9
        ("f2", [1, 3, 4, 2]),  # √r·n: 80, 80 (tie: job id), 247.9, 506
        ("f3", [1, 3, 4, 2]),  # r·n: 800, 1600, 1920, 16000
        ("f4", [1, 4, 3, 2]),  # r·√n: 282.8, 339.4, 800, 4000
    ],
)
def test_the_scoring_functions_order_by_size_when_submitted_together(spec: str, expected: list[int]) -> None:
    assert _order(spec, _view(SAME_SUBMIT)) == expected


def test_wfp3_reorders_as_jobs_wait() -> None:
    # At t = 401 job 4 has waited 1 s: (1/50)³·32 is tiny, job 1 (301 s over 100 s) leads.
    assert _order("wfp3", _view(QUEUE, now=401.0))[0] == 1
    assert _order("wfp3", _view(QUEUE, now=1000.0))[0] == 4


def test_f_rules_count_s_from_origin() -> None:
    # With the origin at 99 s, job 1's s is 1 s (log 0) and the others' about 100–300 s: still oldest first,
    # but the spec carries the origin to the key.
    spec = parse_policy("f1:origin_s=99")
    assert spec.params["origin_s"] == 99.0
    assert _order("f1:origin_s=99", _view(QUEUE)) == [1, 2, 3, 4]


def test_backfill_and_the_old_names_keep_their_meaning() -> None:
    assert not backfill(parse_policy("sjf")) and backfill(parse_policy("easy-sjf"))
    assert backfill(parse_policy("saf:backfill=true")) and not backfill(parse_policy("wfp3"))
    for name in ("sjf", "easy-sjf", "saf", "ljf", "smallest", "f1", "f2", "f3", "f4"):
        assert static_key(parse_policy(name)) is not None, name  # the native fast path
    for name in ("wfp3", "unicep", "sjf:runtime_model=user-last2", "f3:runtime_model=learned"):
        assert static_key(parse_policy(name)) is None, name
        assert isinstance(build_agent(parse_policy(name), BuildContext(live=True)), RuleAgent)


def test_the_oracle_is_refused_live_and_estimated_is_not_a_rule_runtime() -> None:
    with pytest.raises(PolicyError, match="only a simulator knows"):
        build_agent(parse_policy("saf:runtime_model=oracle"), BuildContext(live=True))
    with pytest.raises(PolicyError, match="runtime_model"):
        parse_policy("saf:runtime_model=estimated")
    with pytest.raises(PolicyError, match="unknown parameter 'runtime_model'"):
        parse_policy("smallest:runtime_model=learned")


def test_sjf_on_user_last2_puts_the_users_short_history_first() -> None:
    agent = build_agent(parse_policy("sjf:runtime_model=user-last2"), BuildContext(mode="boost", live=True))
    base = _view(QUEUE)
    users = np.array([5, 6, 6, 6], dtype=np.int64)
    # User 5 ran two jobs of 10 s and 30 s: job 1 (100 s asked) is predicted 20 s; the others, without history,
    # keep their requests; job 4 (50 s) now comes second.
    history = PendingJobs(
        job_id=np.array([90, 91]),
        vo=np.zeros(2, dtype=np.int64),
        job_class=np.zeros(2, dtype=np.int64),
        cores=np.ones(2, dtype=np.int64),
        req_time_s=np.array([100.0, 100.0]),
        submit_s=np.zeros(2),
        oracle_run_s=np.full(2, np.nan),
        held=np.zeros(2, dtype=bool),
        user=np.array([5, 5]),
    )
    agent.decide(
        ClusterView(
            time_s=0.0, total_cores=64, idle_cores=0, pending=history, running=RunningJobs(), finished=FinishedJobs()
        )
    )
    done = FinishedJobs(
        job_id=np.array([90, 91]),
        vo=np.zeros(2, dtype=np.int64),
        job_class=np.zeros(2, dtype=np.int64),
        cores=np.ones(2, dtype=np.int64),
        submit_s=np.zeros(2),
        start_s=np.zeros(2),
        end_s=np.array([10.0, 30.0]),
    )
    p = base.pending
    pend = PendingJobs(
        job_id=p.job_id,
        vo=p.vo,
        job_class=p.job_class,
        cores=p.cores,
        req_time_s=p.req_time_s,
        submit_s=p.submit_s,
        oracle_run_s=p.oracle_run_s,
        held=p.held,
        user=users,
    )
    decisions = agent.decide(
        ClusterView(time_s=1000.0, total_cores=64, idle_cores=0, pending=pend, running=RunningJobs(), finished=done)
    )
    assert decisions.boost == (1, 4, 3, 2)


def test_rule_priority_keeps_the_order_of_distinct_scores() -> None:
    rng = np.random.default_rng(0)
    score = np.concatenate([-rng.lognormal(5, 4, 500), rng.lognormal(5, 4, 500), [0.0, -np.inf, np.inf]])
    priority = rule_priority(score)
    assert np.all((priority >= 1) & (priority < 2**32 - 1)) and np.all(priority == np.floor(priority))
    assert np.array_equal(np.argsort(-priority, kind="stable"), np.argsort(score, kind="stable"))


def test_zero_scores_of_either_sign_tie() -> None:
    # WFP3 and UNICEP score −0.0 for a job that has not waited: it must tie with 0.0 (then submit order decides).
    assert rule_priority(np.array([0.0]))[0] == rule_priority(np.array([-0.0]))[0]
