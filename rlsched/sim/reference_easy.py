"""A deliberately plain, textbook EASY backfilling: the oracle for tests and the baseline for benchmarks.

It shares no code with :mod:`rlsched.sim.engine`: a FIFO list as the queue, the
running jobs re-sorted by expected end at every pass, every queued job scanned.
This is EASY as Mu'alem & Feitelson (IEEE TPDS 12(6), 2001) state it and as a
150-line simulator writes it.  The tests check that the engine's schedules equal
this one's; ``benchmarks/bench_sim.py`` reports the engine's speed as a ratio to it.
"""

from __future__ import annotations

import heapq

import numpy as np

from rlsched.core.view import FloatArray
from rlsched.sim.workload import Workload


def textbook_easy(workload: Workload, cores: int, runtimes: FloatArray) -> FloatArray:
    """Start times of FCFS + EASY backfilling; ``runtimes`` are the lengths the jobs really run."""
    submit = workload.submit.tolist()
    req = workload.req_time.tolist()
    procs = workload.procs.tolist()
    run = runtimes.tolist()
    n = len(submit)
    start = [0.0] * n
    queue: list[int] = []
    running: list[tuple[float, int]] = []  # (expected end, job)
    ends: list[tuple[float, int]] = []  # heap of (actual end, job)
    free = cores
    i = 0
    while i < n or ends:
        now = min(submit[i] if i < n else float("inf"), ends[0][0] if ends else float("inf"))
        while ends and ends[0][0] <= now:
            _, j = heapq.heappop(ends)
            free += procs[j]
            running = [(e, k) for e, k in running if k != j]
        while i < n and submit[i] <= now:
            queue.append(i)
            i += 1
        # start the head of the queue while it fits
        while queue and procs[queue[0]] <= free:
            j = queue.pop(0)
            start[j] = now
            free -= procs[j]
            running.append((now + req[j], j))
            heapq.heappush(ends, (now + run[j], j))
        if not queue:
            continue
        # reservation for the head: when enough cores will be free, by requested times
        need = procs[queue[0]]
        avail = free
        shadow = now
        for expected_end, k in sorted(running):
            if avail >= need and expected_end > shadow:
                break
            avail += procs[k]
            shadow = max(expected_end, now)
        extra = avail - need
        for j in list(queue[1:]):
            fits = procs[j] <= free
            if fits and now + req[j] <= shadow:
                pass
            elif fits and procs[j] <= extra:
                extra -= procs[j]
            else:
                continue
            queue.remove(j)
            start[j] = now
            free -= procs[j]
            running.append((now + req[j], j))
            heapq.heappush(ends, (now + run[j], j))
    return np.array(start, dtype=np.float64)
