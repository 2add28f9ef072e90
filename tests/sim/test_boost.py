"""Boost mode in the simulator (rlsched/sim/boost.py): hand-worked workloads, every policy, the learners.

The agents here rank by a fixed order of job ids (:class:`FixedOrderAgent`), so that each expected
schedule can be worked out by hand: who is boosted at which poll, what the base order does with the
rest, and what EASY's reservation (from the requested time) allows.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from rlsched.backends.slurm import SlurmBackendConfig
from rlsched.core.agents import FixedRankAgent
from rlsched.core.policies import POLICIES, PolicyError, resolve
from rlsched.core.view import ClusterView, IntArray
from rlsched.sim.boost import DEFAULT_MAX_BOOSTED, BoostPriority, BoostSettings, nice_step
from rlsched.sim.engine import QuietPolls, Schedule, Simulator
from rlsched.sim.policies import simulate_policy
from rlsched.sim.workload import Workload, make_workload


class FixedOrderAgent(FixedRankAgent):
    """Boost mode: ranks the pending jobs by their place in ``order`` (job ids; the others last, FCFS);
    records the time of every view it is shown."""

    def __init__(self, order: Sequence[int]) -> None:
        super().__init__("boost")
        self.place = {int(job): k for k, job in enumerate(order)}
        self.calls: list[float] = []

    def rank(self, view: ClusterView) -> IntArray:
        self.calls.append(view.time_s)
        ids = view.pending.job_id.tolist()
        keys = [self.place.get(job, len(self.place) + k) for k, job in enumerate(ids)]
        return np.argsort(np.array(keys, dtype=np.int64), kind="stable").astype(np.int64)


def starts(schedule: Schedule) -> dict[int, float]:
    return dict(zip(schedule.workload.job_id.tolist(), schedule.start.tolist(), strict=True))


def run_boost(
    workload: Workload, agent: FixedOrderAgent, *, poll_s: float, max_boosted: int, quiet_polls: QuietPolls = "defer"
) -> tuple[Simulator, Schedule]:
    sim = Simulator(
        workload,
        dynamic=BoostPriority(len(workload), None, max_boosted=max_boosted, bound=0.0),
        agent=agent,
        tick_s=poll_s,
        every_event=False,
        quiet_polls=quiet_polls,
    )
    sim.reservation_log = []
    return sim, sim.run()


def test_the_default_max_boosted_is_the_slurm_backends() -> None:
    assert DEFAULT_MAX_BOOSTED == SlurmBackendConfig().max_boosted == BoostSettings().max_boosted


def test_the_ladder_step_is_a_power_of_ten_above_the_base_priorities() -> None:
    assert nice_step(0.0) == 1
    assert nice_step(12_000.0) == 100_000  # the backend's nice_step for these weights
    assert nice_step(99_999.0) == 100_000 and nice_step(100_000.0) == 1_000_000


# 4 cores, every job takes all of them for 100 s: jobs run one at a time, in priority order.  The agent
# puts the highest job id first; J4 arrives at 195, just before J3 ends at 200.
SERIAL = make_workload(submit=[0, 1, 2, 3, 195], run=[100] * 5, procs=[4] * 5, max_procs=4)


@pytest.mark.parametrize("quiet_polls", ["all", "defer", "skip"])
def test_the_ranking_is_refreshed_only_at_polls(quiet_polls: QuietPolls) -> None:
    agent = FixedOrderAgent([5, 4, 3, 2, 1])
    _, schedule = run_boost(SERIAL, agent, poll_s=20.0, max_boosted=2, quiet_polls=quiet_polls)
    # Poll 20 boosts J4 > J3 (ids 4, 3); J3 starts at 100.  J4 (id 5) arrives at 195 but is only ranked by the
    # poll at 200, which comes after that instant's scheduling pass: J2 (boosted at 100) starts at 200, J4 next.
    assert starts(schedule) == {1: 0.0, 4: 100.0, 3: 200.0, 5: 300.0, 2: 400.0}
    assert all(t % 20.0 == 0.0 for t in agent.calls)  # never at a submit or a finish between polls
    if quiet_polls == "all":
        assert agent.calls == [20.0 * k for k in range(1, 20)]  # every poll with a job waiting
    elif quiet_polls == "defer":
        # The polls at which nothing had happened and nothing could start are deferred: only the last of them
        # before an event is made (with the view of its own instant), then the poll after the event.
        assert agent.calls == [20.0, 80.0, 100.0, 180.0, 200.0, 280.0, 300.0, 380.0]
    else:
        assert agent.calls == [20.0, 100.0, 200.0, 300.0]  # only the polls with something new
    assert schedule.mode == ""  # a bare engine run names no mode


def random_workload(
    seed: int, n: int, *, gap_s: float, run_s: float, req_s: float, req_floor_s: float, users: int = 0
) -> Workload:
    """``n`` jobs of 1–8 cores on 16, exponential gaps, runtimes and requests (+ a floor); ``users`` > 0: that
    many users drawn at random (the runtime predictors' history), else every job the same user."""
    rng = np.random.default_rng(seed)
    w = make_workload(
        submit=np.cumsum(rng.exponential(gap_s, n)),
        run=rng.exponential(run_s, n),
        procs=rng.integers(1, 9, n),
        req_time=rng.exponential(req_s, n) + req_floor_s,
        max_procs=16,
    )
    return replace(w, user=rng.integers(0, users, n)) if users else w


def test_deferring_quiet_polls_changes_no_fixed_agents_schedule() -> None:
    # A learned model that no longer learns ranks by Q, which moves with the jobs' ages between events; the
    # deferred polls must still give the schedule of every poll.
    w = random_workload(5, 600, gap_s=100, run_s=600, req_s=900, req_floor_s=300)
    model = simulate_policy(w, "sarsa-esn:pretrain_decisions=100").agent
    model.mode, model.learn = "boost", False  # type: ignore[union-attr]
    schedules = []
    for quiet_polls in (False, True):
        fixed = copy.deepcopy(model)  # a run moves its runtime model and fairness service on
        run = simulate_policy(
            w,
            "sarsa-esn",
            mode="boost",
            agent=fixed,
            boost=BoostSettings(poll_interval_s=10.0, max_boosted=4, quiet_polls=quiet_polls),
        )
        schedules.append(run.schedule.start)
    np.testing.assert_array_equal(schedules[0], schedules[1])
    easy = simulate_policy(w, "easy").schedule.start
    assert not np.array_equal(schedules[0], easy)  # the model's ranking moved jobs


@pytest.mark.parametrize(
    "policy",
    [
        "sjf:runtime_model=learned",
        "f4:runtime_model=user-last2",
        "saf:runtime_model=learned",
        "scored:features=log_req/log_cores/submit_h/log_pred,weights=0.5/0.3/0.2/1.0,runtime_model=learned",
    ],
)
def test_skipping_quiet_polls_changes_no_schedule_of_a_rule_on_predictions(policy: str) -> None:
    # A prediction is made at a job's first sighting and the predictor learns only from finishes, so these
    # rules rank by the queue alone: the replay skips their quiet polls, and must give every poll's schedule.
    w = random_workload(11, 500, gap_s=60, run_s=900, req_s=1800, req_floor_s=600, users=12)
    runs = [
        simulate_policy(
            w, policy, mode="boost", boost=BoostSettings(poll_interval_s=10.0, max_boosted=4, quiet_polls=every)
        )
        for every in (True, False)
    ]
    assert bool(getattr(runs[1].agent, "ranks_by_queue", False))
    np.testing.assert_array_equal(runs[0].schedule.start, runs[1].schedule.start)
    assert not np.array_equal(runs[0].schedule.start, simulate_policy(w, "easy", mode="boost").schedule.start)


def test_only_the_top_max_boosted_jobs_move() -> None:
    # 4 cores: J1 fills them until 100; J2..J7 (1 core each) wait.  The agent wants the reverse of FIFO.
    w = make_workload(submit=[0, 1, 2, 3, 4, 5, 6], run=[100] * 7, procs=[4, 1, 1, 1, 1, 1, 1], max_procs=4)
    agent = FixedOrderAgent([7, 6, 5, 4, 3, 2])
    _, two = run_boost(w, agent, poll_s=10.0, max_boosted=2)
    # At 100: the two boosted (J7, J6), then the base order (FIFO) fills the rest: J2, J3.
    assert {j for j, t in starts(two).items() if t == 100.0} == {7, 6, 2, 3}
    _, four = run_boost(w, FixedOrderAgent([7, 6, 5, 4, 3, 2]), poll_s=10.0, max_boosted=4)
    assert {j for j, t in starts(four).items() if t == 100.0} == {7, 6, 5, 4}


def test_reservations_come_from_the_requested_time_not_the_ranking() -> None:
    # 10 cores: J1 (6 cores, requests 100) and J2 (4 cores, ends at 50) fill the machine.  J3 (4 cores, asks
    # 30 s), J4 (4 cores, runs 10 s but asks 500) and J5 (8 cores) queue in that order.  The agent ranks J5,
    # then J4 (as if it knew J4 is short), then J3: J5 and J4 are boosted ahead of J3.
    w = make_workload(
        submit=[0, 0, 1, 2, 3],
        run=[100, 50, 10, 10, 10],
        req_time=[100, 100, 30, 500, 10],
        procs=[6, 4, 4, 4, 8],
        max_procs=10,
    )
    sim, schedule = run_boost(w, FixedOrderAgent([5, 4, 3]), poll_s=5.0, max_boosted=2)
    # At 50 the head J5 gets its reservation at J1's requested end (100), 2 extra cores.  J4 is second in the
    # ranking, but by its request it would hold 4 cores past 100: refused.  J3 ends by its request at 80:
    # backfilled although the ranking put it last.  J5 starts at 100, J4 after it.
    assert starts(schedule) == {1: 0.0, 2: 0.0, 3: 50.0, 5: 100.0, 4: 110.0}
    assert sim.reservation_log is not None and (4, 100.0) in sim.reservation_log  # row 4 is J5


def test_the_base_order_is_fifo_or_multifactor() -> None:
    # 10 cores: J1 (6 cores) until 100, J2 (4 cores) much longer.  J3..J6 (1, 2, 3, 4 cores) wait; the agent
    # boosts only J3 (max_boosted 1).  At 100 six cores free: J3 takes one, the base order the other five.
    w = make_workload(
        submit=[0, 0, 1, 2, 3, 4], run=[100, 1000, 100, 100, 100, 100], procs=[6, 4, 1, 2, 3, 4], max_procs=10
    )
    order = [3, 6, 5, 4]

    def at_100(base: str) -> set[int]:
        agent = FixedOrderAgent(order)
        run = simulate_policy(
            w, "fcfs", mode="boost", agent=agent, boost=BoostSettings(poll_interval_s=10.0, max_boosted=1, base=base)
        )
        assert run.mode == "boost" and run.schedule.mode == "boost"
        return {j for j, t in starts(run.schedule).items() if t == 100.0}

    assert at_100("fifo") == {3, 4, 5}  # oldest first: 1 + 2 + 3 cores
    # Multifactor with the job size factor alone (bigger first): J6 (4 cores) goes before J4 and J5.
    assert at_100("multifactor:weight_age=0,weight_fairshare=0,weight_job_size=1000") == {3, 6}


def test_a_boost_over_multifactor_recomputes_only_the_reniced_jobs() -> None:
    w = make_workload(submit=[0, 10, 20], run=[100] * 3, procs=[1] * 3, max_procs=1)
    from rlsched.core.multifactor import params_from_policy
    from rlsched.sim.multifactor import MultifactorPriority

    params = params_from_policy(
        resolve("multifactor", weight_fairshare=0.0, weight_job_size=0.0, max_age_s=100.0).params
    )
    base = MultifactorPriority(w, params, 1)
    overlay = BoostPriority(len(w), base, max_boosted=2, bound=1000.0)
    assert overlay.step == 10_000
    for row in range(3):
        overlay.submit_priority(row, float(w.submit[row]))
    changed = overlay.boost([2], 50.0)
    # Row 2 is re-niced at 50: its age (30 s of 100) is re-computed, then the ladder's one step on top.
    assert changed == {2: 10_000.0 + 300.0}
    assert overlay.boost([2], 60.0) == {}  # the same ranking changes nothing
    # Row 1 goes on top at 70; row 2 keeps its offset (one step: it is still last of the ladder), so it is not
    # re-niced and keeps the priority of 50, as Slurm sends no update for an unchanged Nice.
    assert overlay.boost([1, 2], 70.0) == {1: 20_000.0 + 600.0}
    assert overlay.priorities(np.array([2]), 70.0).tolist() == [10_000.0 + 500.0]  # a base pass: age now
    assert overlay.boost([], 80.0) == {1: 700.0, 2: 600.0}


def test_a_fifo_ranking_over_fifo_is_easy() -> None:
    rng = np.random.default_rng(3)
    n = 400
    w = make_workload(
        submit=np.cumsum(rng.exponential(200, n)),
        run=rng.exponential(600, n),
        procs=rng.integers(1, 9, n),
        req_time=rng.exponential(600, n) + 600,
        max_procs=16,
    )
    easy = simulate_policy(w, "easy").schedule
    boosted = simulate_policy(w, "easy", mode="boost").schedule
    np.testing.assert_array_equal(boosted.start, easy.start)
    assert easy.mode == "gate" and boosted.mode == "boost"
    # SJF ranked into a FIFO base differs from both (the ranking does move jobs) …
    sjf = simulate_policy(w, "easy-sjf", mode="boost").schedule
    assert not np.array_equal(sjf.start, easy.start)
    # … and a static key ranks a queue the same way whenever it is the same: skipping the quiet polls is exact.
    every_poll = simulate_policy(w, "easy-sjf", mode="boost", boost=BoostSettings(quiet_polls=True)).schedule
    np.testing.assert_array_equal(sjf.start, every_poll.start)


def _small_workload() -> Workload:
    rng = np.random.default_rng(1)
    n = 250
    return make_workload(
        submit=np.cumsum(rng.exponential(150, n)),
        run=rng.exponential(500, n),
        procs=rng.integers(1, 5, n),
        vo=rng.integers(0, 2, n),
        vo_names=("a", "b"),
        max_procs=8,
    )


LEARNED_NAMES = [name for name, e in POLICIES.items() if e.family == "learned"]
# Every rule and learned policy but the ones that hold jobs to keep cores idle: they need gate mode.
BOOST_POLICIES = [name for name, e in POLICIES.items() if e.family in ("rule", "learned") and "keepidle" not in name]


@pytest.mark.parametrize("name", BOOST_POLICIES)
def test_every_rule_and_learned_policy_runs_in_boost_mode(name: str) -> None:
    w = _small_workload()
    spec = f"{name}:pretrain_decisions=50" if name in LEARNED_NAMES else name
    run = simulate_policy(w, spec, mode="boost", boost=BoostSettings(poll_interval_s=30.0, max_boosted=4))
    assert run.mode == "boost"
    assert np.isfinite(run.schedule.start).all()
    assert (run.schedule.start >= w.submit).all()


@pytest.mark.parametrize("name", ["sarsa-esn", "fqi-esn"])
def test_the_learners_keep_learning_in_boost_mode(name: str) -> None:
    w = _small_workload()
    run = simulate_policy(
        w, f"{name}:pretrain_decisions=50", mode="boost", boost=BoostSettings(poll_interval_s=30.0, max_boosted=4)
    )
    agent = run.agent
    memory = agent.learner.memory  # type: ignore[union-attr]
    # Every start of a ranked job is a decision with its reward; jobs that started before any poll saw them
    # (an idle machine) are not the agent's.
    assert 50 < agent.decisions <= len(w)  # type: ignore[union-attr]
    assert memory.size == agent.decisions  # type: ignore[union-attr]
    # Every decision got its reward (the last view shows the last finishes), and each but the last has the
    # decision that follows it (what makes a transition ready).
    assert np.isfinite(memory.rewards).all()
    assert int(memory.ready().sum()) == agent.decisions - 1  # type: ignore[union-attr]
    assert agent.learner.refits > 1 and not agent.pretraining  # type: ignore[union-attr]


def test_a_model_built_for_gate_mode_is_refused_in_boost_mode() -> None:
    w = _small_workload()
    gate = simulate_policy(w, "sarsa-esn:pretrain_decisions=50")
    with pytest.raises(PolicyError, match="built for 'gate' mode"):
        simulate_policy(w, "sarsa-esn", mode="boost", agent=gate.agent)
    with pytest.raises(PolicyError, match="gate mode only"):
        simulate_policy(w, "sarsa-esn:elastic=true,pool_min_cores=2,pool_step_cores=2", mode="boost")
    with pytest.raises(PolicyError, match="mode must be"):
        simulate_policy(w, "easy", mode="shadow")  # type: ignore[arg-type]


def test_boost_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="poll_interval_s"):
        BoostSettings(poll_interval_s=0.0)
    with pytest.raises(ValueError, match="max_boosted"):
        BoostSettings(max_boosted=0)
    with pytest.raises(ValueError, match="base"):
        BoostSettings(base="sjf")


# The scenario of the live comparison (tests/backends/slurm/test_boost_live.py), worked by hand.  16 cores;
# R1 (12 cores, asks 600 s, runs 30) and R2 (4 cores, runs 10) fill them; then A..G queue.  The agent ranks
# C, B, E, F, G, D, A; two are boosted at a time; the base order is multifactor (bigger jobs first here).
#: name → (cores, requested minutes, runtime s); R1 and R2 are submitted at 0, the others at 1, 2, … in order.
LIVE_JOBS: dict[str, tuple[int, int, float]] = {
    "R1": (12, 10, 30.0),
    "R2": (4, 10, 10.0),
    "A": (2, 30, 60.0),
    "B": (4, 2, 10.0),
    "C": (16, 5, 10.0),
    "D": (4, 30, 60.0),
    "E": (4, 1, 20.0),
    "F": (8, 30, 60.0),
    "G": (4, 30, 60.0),
}
LIVE_RANKING = ("C", "B", "E", "F", "G", "D", "A")


def live_scenario_workload() -> Workload:
    names = list(LIVE_JOBS)
    submit = [0.0, 0.0, *range(1, len(names) - 1)]
    return make_workload(
        submit=submit,
        run=[LIVE_JOBS[n][2] for n in names],
        req_time=[60.0 * LIVE_JOBS[n][1] for n in names],
        procs=[LIVE_JOBS[n][0] for n in names],
        max_procs=16,
        name="boost-live",
    )


def start_waves(labels: Sequence[str], start_s: Sequence[float], gap_s: float = 0.0) -> list[set[str]]:
    """The jobs by start, grouped into waves: starts at most ``gap_s`` after the previous one join its wave."""
    waves: list[set[str]] = []
    last = -np.inf
    for t, label in sorted(zip(start_s, labels, strict=True)):
        if t - last > gap_s or not waves:
            waves.append(set())
        waves[-1].add(label)
        last = t
    return waves


def simulate_live_scenario(base: str) -> list[set[str]]:
    w = live_scenario_workload()
    names = list(LIVE_JOBS)
    agent = FixedOrderAgent([names.index(n) + 1 for n in LIVE_RANKING])  # make_workload numbers jobs 1..n
    run = simulate_policy(
        w, "fcfs", mode="boost", agent=agent, boost=BoostSettings(poll_interval_s=1.0, max_boosted=2, base=base)
    )
    return start_waves(names, run.schedule.start.tolist())


def test_the_live_scenario_worked_by_hand() -> None:
    waves = simulate_live_scenario("multifactor:weight_age=1000,weight_job_size=1000,max_age_s=600")
    # 10: R2 ends; C (boosted first) needs 16 and gets a reservation at R1's requested end (600): B (boosted
    # second, asks 120 s) backfills.  20: B ends; E (now boosted) asks 60 s: backfills.  30: R1 ends, 12 cores
    # free, but C's reservation is E's requested end (80): F, boosted second, would overrun it and waits.
    # 40: E ends, C starts.  50: C ends; F and G (boosted) start, then the base order: D (4 cores) before the
    # older A (2 cores), since multifactor's job size factor favours bigger jobs; A waits.
    assert waves == [{"R1", "R2"}, {"B"}, {"E"}, {"C"}, {"F", "G", "D"}, {"A"}]
    # Over FIFO the oldest goes first at 50: A (2 cores) takes the place D had.
    assert simulate_live_scenario("fifo")[4] == {"F", "G", "A"}
