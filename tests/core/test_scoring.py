"""The scoring functions (rlsched.core.scoring) and the ``scored`` registry entry: one order live and in the key."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.policies import BuildContext, JobColumns, PolicyError, build_agent, order_by_key, parse_policy
from rlsched.core.policies import static_key as registry_static_key
from rlsched.core.scoring import (
    CARASTAN_SANTOS,
    LOG_FAMILY,
    JobQuantities,
    ScoredRankAgent,
    ScoringFunction,
    feature_matrix,
    format_weights,
    parse_weights,
)
from rlsched.core.view import ClusterView, FinishedJobs, PendingJobs, RunningJobs


def queue() -> PendingJobs:
    """Five jobs: (requested s, cores, submit s) chosen so that each rule below orders them differently."""
    req = np.array([3600.0, 60.0, 600.0, 60.0, 7200.0])
    cores = np.array([1, 64, 4, 1, 2], dtype=np.int64)
    submit = np.array([100.0, 200.0, 300.0, 400.0, 50.0])
    n = req.size
    return PendingJobs(
        job_id=np.arange(10, 10 + n, dtype=np.int64),
        vo=np.zeros(n, dtype=np.int64),
        job_class=np.zeros(n, dtype=np.int64),
        cores=cores,
        req_time_s=req,
        submit_s=submit,
        oracle_run_s=np.full(n, np.nan),
        held=np.zeros(n, dtype=bool),
    )


def view_of(pend: PendingJobs, time_s: float = 1000.0) -> ClusterView:
    return ClusterView(
        time_s=time_s,
        total_cores=64,
        idle_cores=0,
        pending=pend,
        running=RunningJobs(),
        finished=FinishedJobs(),
        vos=("a",),
    )


def test_features_are_the_formulas() -> None:
    q = JobQuantities.of(
        np.array([100.0, 0.0]),
        np.array([4, 0]),
        np.array([7200.0, 3600.0]),
        np.zeros(2, dtype=np.int64),
        origin_s=3600.0,
    )
    x = feature_matrix(("log_req", "log_cores", "log_req_x_log_cores", "submit_h", "area", "log_submit"), q)
    assert x[0].tolist() == pytest.approx([2.0, np.log10(4), 2 * np.log10(4), 2.0, 400.0, np.log10(3600.0)])
    # A missing request takes the class prior (never log 0); no cores counts as one; s is at least 1 s.
    assert np.isfinite(x[1]).all() and x[1, 1] == 0.0 and x[1, 5] == 0.0


def test_hand_made_queue_orders() -> None:
    """SJF, smallest area first (a=b=1 in log space), F4 and a wait-heavy member, checked by hand."""
    pend = queue()
    jobs = JobColumns.of(pend)

    def order(function: ScoringFunction) -> list[int]:
        scores = function.score_jobs(pend.req_time_s, pend.cores, pend.submit_s, pend.job_class)
        return order_by_key(lambda _: (scores,), jobs).tolist()

    # SJF: the two 60 s jobs (submit 200, 400), then 600 s, 3600 s, 7200 s.
    assert order(ScoringFunction(("log_req",), (1.0,))) == [1, 3, 2, 0, 4]
    # Area r·n: 60, 2400, 3600, 3840, 14400.
    assert order(ScoringFunction(("log_req", "log_cores"), (1.0, 1.0))) == [3, 2, 0, 1, 4]
    # F4 = r·√n + 530000·log10(s), s from 0: the age term dominates these small sizes (50, 100, 200, 300, 400 s).
    assert order(CARASTAN_SANTOS["f4"]) == [4, 0, 1, 2, 3]
    # A large weight on the submit time in hours is FCFS.
    assert order(ScoringFunction(("log_req", "submit_h"), (0.001, 1.0))) == [4, 0, 1, 2, 3]


def test_registry_key_and_live_agent_give_one_order() -> None:
    spec = parse_policy("scored:weights=1/0.5/-0.1/0.2")
    pend = queue()
    key = registry_static_key(spec)
    assert key is not None
    agent = build_agent(spec, BuildContext(mode="boost", live=True))
    assert isinstance(agent, ScoredRankAgent)
    view = view_of(pend)
    assert agent.rank(view).tolist() == order_by_key(key, JobColumns.of(pend)).tolist()
    # Higher pending score goes first: the daemon's descending sort gives the same order.
    assert np.argsort(-agent.pending_scores(view), kind="stable").tolist() == agent.rank(view).tolist()
    decisions = agent.decide(view)
    assert decisions.boost is not None and list(decisions.boost) == pend.job_id[agent.rank(view)].tolist()


def test_weights_round_trip_exactly() -> None:
    weights = (0.1 + 0.2, -1e-17, 123456.789, 1 / 3)
    assert parse_weights(format_weights(weights)) == weights
    spec = parse_policy(f"scored:weights={format_weights(weights)}")
    assert parse_policy(spec.label()) == spec


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("scored:weights=1/2", "4 scoring features but 2 weights"),
        ("scored:features=log_req/log_submit,weights=1/1", "where time starts"),
        ("scored:features=log_req/magic,weights=1/1", "unknown feature"),
        ("scored:weights=1/x/0/0", "numbers"),
        ("scored:weights=1/nan/0/0", "finite"),
    ],
)
def test_bad_scored_specs_are_one_line_errors(text: str, fragment: str) -> None:
    with pytest.raises(PolicyError) as info:
        build_agent(parse_policy(text))
    assert fragment in str(info.value) and "\n" not in str(info.value)
    if "features but" in fragment:  # the simulator's static key refuses it the same way
        with pytest.raises(PolicyError, match=fragment):
            registry_static_key(parse_policy(text))
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_default_scored_is_easy_sjf_order() -> None:
    pend = queue()
    spec = parse_policy("scored")
    assert spec.params["features"] == "/".join(LOG_FAMILY) and spec.params["backfill"] is True
    key = registry_static_key(spec)
    sjf = registry_static_key(parse_policy("easy-sjf"))
    assert key is not None and sjf is not None
    assert order_by_key(key, JobColumns.of(pend)).tolist() == order_by_key(sjf, JobColumns.of(pend)).tolist()


def test_a_predicted_runtime_feature_orders_by_the_prediction() -> None:
    """log_pred reads the runtime model (here the oracle, a simulator's): the order is the runtime's, not the
    request's, in the integer form the replay sorts by; no static key."""
    pend = queue()
    pend = PendingJobs(
        job_id=pend.job_id,
        vo=pend.vo,
        job_class=pend.job_class,
        cores=pend.cores,
        req_time_s=pend.req_time_s,
        submit_s=pend.submit_s,
        oracle_run_s=np.array([10.0, 50.0, 40.0, 30.0, 20.0]),
        held=pend.held,
    )
    spec = parse_policy("scored:features=log_pred,weights=1,runtime_model=oracle")
    assert registry_static_key(spec) is None
    agent = build_agent(spec)
    assert isinstance(agent, ScoredRankAgent)
    view = view_of(pend)
    agent.decide(view)
    assert agent.rank(view).tolist() == [0, 4, 3, 2, 1]
    with pytest.raises(PolicyError, match="needs the actual runtimes"):
        build_agent(spec, BuildContext(live=True))


@pytest.mark.parametrize(
    "text",
    ["scored:features=log_req/log_pred,weights=1/1", "scored:features=log_req,weights=1,runtime_model=user-last2"],
)
def test_log_pred_and_runtime_model_go_together(text: str) -> None:
    with pytest.raises(PolicyError, match="log_pred and runtime_model go together"):
        build_agent(parse_policy(text))
