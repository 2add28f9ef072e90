"""The heterogeneous-units engine and the baselines on hand-worked examples (Tong §2, §3.2)."""

import numpy as np
import pytest

from rlsched.sim.dispatch.model import Flow, SchedulerCost, Units, UnitsState, simulate
from rlsched.sim.dispatch.policies import ECT, BatchHeuristic, ProbabilisticDispatch, map_batch


class Fixed:
    """Send task k to units[k]."""

    name = "fixed"

    def __init__(self, units):
        self.units = units

    def assign(self, task, task_type, now_h, state):
        return self.units[task]

    def completed(self, task, response_h):
        pass

    def pairs_per_decision(self, n_units):
        return 1


# Tong Table 1: execution times (h) of t1 and t2 on P1..P3; tasks t1, t2, t2, t2 at 0, 1, 2, 5 h.
TABLE1_TIMES = np.array([[6.0, 9.0, 9.0], [3.0, 5.0, 6.0]])
TABLE1_FLOW = Flow(np.array([0.0, 1.0, 2.0, 5.0]), np.array([0, 1, 1, 1]), np.ones(4))
TABLE1_UNITS = Units(1.0 / TABLE1_TIMES)


@pytest.mark.parametrize(("mapping", "mean"), [([0, 2, 1, 0], 5.25), ([2, 0, 1, 0], 5.0)])
def test_engine_reproduces_fig1_schedules(mapping, mean):
    """Tong §3.2, Fig. 1: schedule (a) averages 5.25 h, schedule (b) 5 h."""
    result = simulate(TABLE1_FLOW, TABLE1_UNITS, Fixed(mapping))
    assert result.mean_response_h() == pytest.approx(mean)
    assert np.all(result.scheduling_delay_h == 0)


def test_ect_on_table1():
    # t1 at 0 -> P1 (6); t2 at 1: P1 ready 6 -> 9, P2 -> 6, P3 -> 7: P2; t2 at 2: P1 9, P2 11, P3 8: P3;
    # t2 at 5: P1 9, P2 11, P3 14: P1 (starts at 6, ends 9).
    result = simulate(TABLE1_FLOW, TABLE1_UNITS, ECT())
    assert result.unit.tolist() == [0, 1, 2, 0]
    assert result.response_h.tolist() == pytest.approx([6.0, 5.0, 6.0, 4.0])


# A batch of three tasks on two idle units (ready at 0), all arrived at 0:
#   task a: 1 on P1, 2 on P2;  task b: 4 on P1, 5 on P2;  task c: 3 on P1, 9 on P2.
READY = np.zeros(2)
EXEC = np.array([[1.0, 2.0], [4.0, 5.0], [3.0, 9.0]])
ARRIVED = np.zeros(3)


def test_min_min_by_hand():
    # Min PTs: a 1 (P1), b 4 (P1), c 3 (P1) -> a on P1 (P1 ready 1).
    # Then b: 5 (P1) / 5 (P2) -> 5 at P1 (tie, lower index); c: 4 (P1) -> c on P1 (ready 4).
    # Then b: 8 (P1) / 5 (P2) -> P2.
    order, units = map_batch("min-min", READY, EXEC, ARRIVED)
    assert order.tolist() == [0, 2, 1]
    assert units.tolist() == [0, 0, 1]


def test_max_min_by_hand():
    # Min PTs: a 1, b 4, c 3 -> b on P1 (ready 4).  Then a: 5 / 2 -> 2 (P2); c: 7 / 9 -> 7 (P1):
    # c on P1 (ready 7).  Then a: 8 / 2 -> P2.
    order, units = map_batch("max-min", READY, EXEC, ARRIVED)
    assert order.tolist() == [1, 2, 0]
    assert units.tolist() == [0, 0, 1]


def test_suffrage_by_hand():
    # Suffrages: a 2-1=1, b 5-4=1, c 9-3=6 -> c on P1 (ready 3).
    # Then a: 4 / 2 -> suffrage 2; b: 7 / 5 -> 2: tie, lower index: a on P2 (ready 2).
    # Then b: 7 (P1) / 7 (P2) -> P1.
    order, units = map_batch("suffrage", READY, EXEC, ARRIVED)
    assert order.tolist() == [2, 0, 1]
    assert units.tolist() == [0, 1, 0]


def test_processing_time_counts_the_arrival_queue():
    # Same tasks, but a arrived 10 h before the others: its PT is larger, so Min-Min maps it last
    # and Max-Min first (Tong §6.3: processing time replaces completion time).
    arrived = np.array([-10.0, 0.0, 0.0])
    assert map_batch("min-min", READY, EXEC, arrived)[0][-1] == 0
    assert map_batch("max-min", READY, EXEC, arrived)[0][0] == 0


def test_batch_waits_for_the_batch_to_fill():
    flow = Flow(np.array([0.0, 1.0, 2.0, 3.0, 4.0]), np.zeros(5, dtype=np.int64), np.ones(5))
    units = Units(np.array([[1.0, 1.0, 1.0]]))
    result = simulate(flow, units, BatchHeuristic("min-min", batch_size=2))
    # Batches {0,1} at t=1, {2,3} at t=3, the last partial batch {4} when it arrives.
    assert result.dispatch_h.tolist() == [1.0, 1.0, 3.0, 3.0, 4.0]
    assert result.scheduling_delay_h.tolist() == [1.0, 0.0, 1.0, 0.0, 0.0]
    assert np.all(result.response_h >= 1.0)


def test_scheduler_cost_delays_dispatch_and_queues_decisions():
    flow = Flow(np.array([0.0, 0.0]), np.zeros(2, dtype=np.int64), np.ones(2))
    units = Units(np.array([[1.0, 1.0]]))
    result = simulate(flow, units, ECT(), SchedulerCost(per_decision_h=0.5))
    assert result.dispatch_h.tolist() == [0.5, 1.0]
    assert result.unit.tolist() == [0, 1]


def test_ready_estimate_uses_beliefs_not_realisations():
    units = Units(np.array([[1.0, 1.0]]), mu_est=np.array([[0.5, 0.5]]))  # believes 2 h per task
    state = UnitsState(units)
    state.unfinished[:] = [2, 0]
    state.head_start_h[:] = [0.0, 0.0]
    state.head_est_h[:] = [2.0, 0.0]
    state.backlog_est_h[:] = [4.0, 0.0]
    # Unit 0: running task expected to end at 2, one more queued (2 h): ready at 4; unit 1 idle.
    assert state.ready_est_h(1.0).tolist() == [4.0, 1.0]
    # An overdue running task is expected to end now.
    assert state.ready_est_h(3.0).tolist() == [5.0, 3.0]


def test_probabilistic_dispatch_follows_probabilities():
    policy = ProbabilisticDispatch(np.array([[0.25, 0.75, 0.0]]), np.random.default_rng(0))
    state = UnitsState(Units(np.ones((1, 3))))
    picks = np.array([policy.assign(0, 0, 0.0, state) for _ in range(20000)])
    assert not np.any(picks == 2)
    assert np.mean(picks == 1) == pytest.approx(0.75, abs=0.015)
    with pytest.raises(ValueError):
        ProbabilisticDispatch(np.array([[0.5, 0.6]]), np.random.default_rng(0))


def test_flow_validation():
    with pytest.raises(ValueError, match="not sorted"):
        Flow(np.array([1.0, 0.0]), np.zeros(2, dtype=np.int64), np.ones(2))
    with pytest.raises(ValueError, match="lengths differ"):
        Flow(np.array([0.0]), np.zeros(2, dtype=np.int64), np.ones(2))


# Two identical units; task 0 (expected 1 h, realised 5 h) starts on P1 at 0; task 1 arrives at 2 h,
# when task 0 is overdue: both units are then *estimated* free at 2 h, but only P2 is idle.
OVERDUE_FLOW = Flow(np.array([0.0, 2.0]), np.zeros(2, dtype=np.int64), np.array([5.0, 1.0]))
TWIN_UNITS = Units(np.array([[1.0, 1.0]]))


def test_ect_breaks_ties_towards_the_idle_unit():
    result = simulate(OVERDUE_FLOW, TWIN_UNITS, ECT())
    # A lowest-index tie rule would queue task 1 behind the overdue task (response 4 h).
    assert result.unit.tolist() == [0, 1]
    assert result.response_h.tolist() == pytest.approx([5.0, 1.0])


def test_batch_heuristics_break_ties_towards_the_idle_unit():
    for rule in ("min-min", "max-min", "suffrage"):
        result = simulate(OVERDUE_FLOW, TWIN_UNITS, BatchHeuristic(rule, batch_size=1))
        assert result.unit.tolist() == [0, 1], rule
    # Within a batch, tasks mapped earlier count: two zero-length tasks on idle twins (ready times
    # stay tied) spread out instead of both going to the lower index.
    _, units = map_batch("min-min", np.zeros(2), np.zeros((2, 2)), np.zeros(2), queued=np.zeros(2, dtype=np.int64))
    assert sorted(units.tolist()) == [0, 1]
    with pytest.raises(ValueError, match="queued"):
        map_batch("min-min", np.zeros(2), np.ones((2, 2)), np.zeros(2), queued=np.zeros(3, dtype=np.int64))


class Recorder(Fixed):
    """Fixed mapping that logs assign/completed calls, with a chosen feedback timing."""

    def __init__(self, units, feedback_at):
        super().__init__(units)
        self.feedback_at = feedback_at
        self.log = []

    def assign(self, task, task_type, now_h, state):
        self.log.append(("assign", task))
        return super().assign(task, task_type, now_h, state)

    def completed(self, task, response_h):
        self.log.append(("completed", task, response_h))


def test_feedback_at_dispatch_reports_the_realised_response_before_the_next_decision():
    # Table 1 flow, schedule (a): responses 6, 6, 5, 4 (Fig. 1).
    policy = Recorder([0, 2, 1, 0], "dispatch")
    simulate(TABLE1_FLOW, TABLE1_UNITS, policy)
    assert policy.log == [
        ("assign", 0),
        ("completed", 0, 6.0),
        ("assign", 1),
        ("completed", 1, 6.0),
        ("assign", 2),
        ("completed", 2, 5.0),
        ("assign", 3),
        ("completed", 3, 4.0),
    ]


def test_feedback_at_completion_waits_for_the_completion():
    policy = Recorder([0, 2, 1, 0], "completion")
    simulate(TABLE1_FLOW, TABLE1_UNITS, policy)
    # Nothing completes before the last arrival (t = 5); then completions at 6, 7, 7, 9 h.
    assert [e[0] for e in policy.log[:4]] == ["assign"] * 4
    assert [e[1:] for e in policy.log[4:]] == [(0, 6.0), (1, 6.0), (2, 5.0), (3, 4.0)]
    with pytest.raises(ValueError, match="feedback_at"):
        simulate(TABLE1_FLOW, TABLE1_UNITS, Recorder([0, 0, 0, 0], "later"))
