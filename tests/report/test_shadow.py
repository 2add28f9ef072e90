"""The shadow-report metric on constructed decision logs and start times (rlsched.report.shadow)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from rlsched.report.shadow import (
    Cycle,
    ShadowLogError,
    analyse,
    chance_topk,
    cycle_from_record,
    default_window_s,
    summarise_beyond,
)


def cycle(
    t: float,
    ids: list[int],
    cores: list[int] | None = None,
    vo: list[int] | None = None,
    cls: list[int] | None = None,
    pending: int | None = None,
) -> Cycle:
    n = len(ids)
    return Cycle(
        time_s=t,
        job_id=np.array(ids, dtype=np.int64),
        cores=np.array(cores or [1] * n, dtype=np.int64),
        vo=np.array(vo or [0] * n, dtype=np.int64),
        job_class=np.array(cls or [0] * n, dtype=np.int64),
        pending=n if pending is None else pending,
        vos=("atlas", "cms"),
    )


def test_agreement_chance_and_the_throughput_matched_replay_on_a_hand_worked_log() -> None:
    cycles = [cycle(0, [1, 2, 3]), cycle(10, [1, 3]), cycle(20, [1, 3]), cycle(30, [3])]
    starts = {2: 5.0, 1: 25.0, 3: 100.0}
    a = analyse(cycles, starts, top_k=2)
    # t=0: Slurm started job 2 (rlsched's 2nd) first; t=10 and t=30 saw no start before the next cycle;
    # t=20: job 1, rlsched's first.
    assert (a.cycles, a.decisive, a.quiet, a.trivial, a.contested) == (4, 2, 2, 0, 2)
    assert (a.top1_hits, a.topk_hits) == (1, 2) and a.slurm_pick_ranks == [2, 1]
    assert a.rate(a.top1_hits) == 0.5 and a.rate(a.topk_hits) == 1.0
    assert a.top1_chance == pytest.approx((1 / 3 + 1 / 2) / 2)
    assert a.topk_chance == pytest.approx((2 / 3 + 1.0) / 2)
    # Replay: at t=0 rlsched fills Slurm's one core with job 1; at t=20 (job 1 already "started") with job 3.
    by_id = {o.job_id: o for o in a.outcomes}
    assert by_id[1].rlsched_start_s == 0 and by_id[1].beyond_s == 25
    assert by_id[3].rlsched_start_s == 20 and by_id[3].beyond_s == 80
    assert by_id[2].rlsched_start_s is None and by_id[2].beyond_s is None
    assert (len(a.earlier), a.slurm_first, a.jobs_seen, a.jobs_started, a.jobs_unmatched) == (2, 1, 3, 3, 0)


def test_jobs_started_in_one_scheduling_pass_all_count_as_slurms_next_start() -> None:
    cycles = [cycle(0, [7, 8, 9]), cycle(10, [9])]
    a = analyse(cycles, {8: 4.0, 7: 4.5, 9: 50.0}, top_k=1)
    assert a.top1_hits == 1 and a.slurm_pick_ranks == [1]  # 7 started 0.5 s after 8: the same pass
    a = analyse(cycles, {8: 4.0, 7: 6.0, 9: 50.0}, top_k=1)
    assert a.top1_hits == 0 and a.slurm_pick_ranks == [2]  # 7 started 2 s later: a later pass


def test_single_job_cycles_are_trivial_and_not_in_the_rates() -> None:
    a = analyse([cycle(0, [1]), cycle(10, [2, 3])], {1: 3.0, 3: 12.0})
    assert (a.decisive, a.trivial, a.contested, a.top1_hits) == (2, 1, 1, 0)
    assert a.rate(a.top1_hits) == 0.0
    # A truncated log line (pending > listed rows) is not trivial: there was a choice.
    a = analyse([cycle(0, [1], pending=40), cycle(10, [2])], {1: 3.0})
    assert (a.trivial, a.contested, a.top1_hits) == (0, 1, 1)
    assert a.top1_chance == pytest.approx(1 / 40)


def test_unmatched_and_inconsistent_jobs_are_counted_not_compared() -> None:
    # Job 4 never started (still pending or cancelled); job 5 "started" before the cycle that saw it pending.
    a = analyse([cycle(100, [4, 5, 6]), cycle(110, [4])], {5: 50.0, 6: 104.0})
    assert (a.jobs_seen, a.jobs_unmatched, a.inconsistent, a.jobs_started) == (3, 1, 1, 1)
    assert a.slurm_pick_ranks == [3] and a.top1_hits == 0
    assert [o.job_id for o in a.outcomes] == [6]


def test_a_job_that_started_while_the_daemon_read_the_queue_is_compared_not_left_out() -> None:
    # The daemon began reading the queue at 100 and had read it at 104 (squeue, then sinfo, on a busy
    # controller).  Job 5 started at 102 (Slurm's whole second: 102): pending when squeue ran, so it counts.
    read_slowly = replace(cycle(104, [4, 5]), polled_s=100.0)
    a = analyse([read_slowly, cycle(110, [4])], {5: 102.0, 4: 115.0})
    assert (a.inconsistent, a.jobs_started, a.jobs_unmatched) == (0, 2, 0)
    assert a.decisive == 2 and a.slurm_pick_ranks == [2]  # job 5 was rlsched's second at t=104
    # Without the poll's start (a log written before it was recorded), the same start is before the cycle.
    old = analyse([cycle(104, [4, 5]), cycle(110, [4])], {5: 102.0, 4: 115.0})
    assert (old.inconsistent, old.jobs_started) == (1, 1)
    # A start before the reads began is still inconsistent.
    early = analyse([read_slowly], {5: 98.5})
    assert (early.inconsistent, early.jobs_started) == (1, 0)


def test_a_gap_in_the_log_does_not_stretch_a_window_over_it() -> None:
    cycles = [cycle(0, [1, 2]), cycle(10, [1, 2]), cycle(20, [1, 2]), cycle(2000, [2])]
    a = analyse(cycles, {1: 500.0, 2: 2005.0})
    assert default_window_s([c.time_s for c in cycles]) == 30.0
    assert a.window_s == 30.0 and a.decisive == 1 and a.quiet == 3  # only t=2000 saw a start in its window
    assert analyse(cycles, {1: 500.0, 2: 2005.0}, max_window_s=math.inf).decisive == 2


def test_the_replay_fills_slurms_cores_greedily_in_rlscheds_order() -> None:
    # Slurm started a 4-core job; rlsched's first job needs 8, so its 2-core second and third take the cores.
    c = cycle(0, [10, 11, 12, 13], cores=[8, 2, 2, 4], cls=[0, 1, 1, 0])
    a = analyse([c, cycle(10, [10])], {13: 3.0, 11: 60.0, 12: 61.0, 10: 200.0})
    by_id = {o.job_id: o for o in a.outcomes}
    assert by_id[11].beyond_s == 60 and by_id[12].beyond_s == 61
    assert by_id[10].rlsched_start_s is None and by_id[13].rlsched_start_s is None
    rows = {r.group: r for r in summarise_beyond(a.outcomes, "class")}
    assert rows["interactive"].earlier == 2 and rows["interactive"].median_s == 60.5
    assert rows["batch"].jobs == 2 and rows["batch"].earlier == 0 and math.isnan(rows["batch"].mean_s)
    vo = summarise_beyond(a.outcomes, "vo")
    assert [r.group for r in vo] == ["atlas"] and vo[0].jobs == 4


def test_chance_of_a_random_order() -> None:
    assert chance_topk(4, 1, 1) == pytest.approx(0.25)
    assert chance_topk(10, 2, 3) == pytest.approx(1 - (8 * 7 * 6) / (10 * 9 * 8))
    assert chance_topk(3, 1, 5) == 1.0 and chance_topk(0, 0, 1) == 0.0
    rng = np.random.default_rng(0)  # against a direct count
    hits = sum(bool(set(rng.permutation(12)[:4]) & {0, 1, 2}) for _ in range(20000))
    assert hits / 20000 == pytest.approx(chance_topk(12, 3, 4), abs=0.01)


def test_records_become_cycles_and_bad_ones_say_which() -> None:
    rec = {
        "v": 1,
        "time": 5.0,
        "mode": "shadow",
        "vos": ["a"],
        "pending": 2,
        "ranked": [[3, 0.5, 4, 0, 1], [9, None, 1, 0, 0]],
    }
    c = cycle_from_record(rec)
    assert c.job_id.tolist() == [3, 9] and c.cores.tolist() == [4, 1] and c.job_class.tolist() == [1, 0]
    assert c.polled_s is None and c.seen_s == 5.0
    assert cycle_from_record({**rec, "polled": 3.5}).seen_s == 3.5
    with pytest.raises(ShadowLogError, match="log:7: malformed"):
        cycle_from_record({**rec, "ranked": [[3]]}, "log:7")
    assert len(cycle_from_record({**rec, "ranked": []})) == 0
