"""Boost mode's cost: the same policies replayed in gate and in boost mode on the first jobs of CTC-SP2.

Run:  RLSCHED_TRACE_DIR=/path/to/traces .venv/bin/python benchmarks/bench_boost.py [--jobs 20000]

Prints, per policy and mode: wall time of the replay, mean bounded slowdown, mean W and mean wait, so
the speed cost of boost mode (:mod:`rlsched.sim.boost`) is measured with the result it gives.
``--quiet-polls`` also runs boost mode with every poll made (``BoostSettings.quiet_polls``), the reference
the skipped and deferred polls must agree with.  ``--ticks`` also runs boost mode stepping through every tick
after a quiet poll (``engine.JUMP_QUIET_TICKS = False``) instead of jumping to the next event: the ratio is
its time over the default boost run's (measured in the same run), and the starts must be the same.
``--candidates KTH-SP2-1996-2.1-cln,…`` instead replays every candidate rule (what ``rlsched train``'s verdict
scores) in boost mode on the test window of the first 4000 jobs of each trace, jumping and every tick.
``--rekey LPC-EGEE-2004-1.2-cln --cores 63 --jobs 40000 --policies f2,saf`` replays the policies in boost mode on
the trace's last ``--jobs`` jobs (on ``--cores`` cores) as the engine re-keys a boosted job (in place) and as it
did before (each changed job dequeued and enqueued again, which also rebuilt its place in the size index: the
baseline, patched in here), each twice, and prints the faster time of each, their ratio and whether the starts
are the same.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence

import numpy as np

from rlsched.sim import engine
from rlsched.sim.boost import BoostSettings
from rlsched.sim.policies import simulate_policy
from rlsched.sim.summary import summarize
from rlsched.sim.traces.swf import read_swf, resolve_trace

TRACE = "CTC-SP2-1996-3.1-cln"


def candidates(traces: list[str]) -> None:
    """Every candidate rule in boost mode on each trace's test window, with jumps and every tick: total times."""
    from rlsched.cli.learning import load_workload
    from rlsched.workflow import verdict
    from rlsched.workflow.learning import LearningSettings
    from rlsched.workflow.split import simulate_in

    settings = LearningSettings(max_jobs=4000)
    for trace in traces:
        workload = load_workload(trace, max_procs=None)
        test = settings.split.window(workload.select(slice(0, 4000), name=workload.name), "test")
        specs, _ = verdict.candidate_rules(verdict.workload_vos(test), settings.deployment)
        walls, starts = [], []
        for jump in (True, False):
            engine.JUMP_QUIET_TICKS = jump
            try:
                t0 = time.perf_counter()
                starts.append([simulate_in(settings.deployment, test, spec).schedule.start for spec in specs])
                walls.append(time.perf_counter() - t0)
            finally:
                engine.JUMP_QUIET_TICKS = True
        same = all(np.array_equal(a, b) for a, b in zip(*starts, strict=True))
        print(
            f"{trace}: {len(specs)} rules, boost mode on the test window ({len(test)} jobs): jumping "
            f"{walls[0]:.1f} s, every tick {walls[1]:.1f} s, ratio {walls[1] / walls[0]:.2f}, "
            f"{'same starts' if same else 'STARTS DIFFER'}",
            flush=True,
        )


def _boost_dynamic_requeue(self: engine.Simulator, ranked_job_ids: Sequence[int]) -> None:
    """The re-key before it was made in place: the baseline of ``--rekey`` (the same schedule, more work)."""
    dyn = self._boostable
    assert dyn is not None
    rows = self._queued_rows(ranked_job_ids, dyn.max_boosted)
    self.actions["boost"] += len(rows)
    changed = dyn.boost(rows, self.now)
    for j, priority in changed.items():
        if self._qprocs_by_row[j] == math.inf:
            continue
        self._dequeue_job(j)
        self._rank_arr[j] = self._dynamic_key(priority, j)
        self._enqueue(j)
    self._boosted = rows[: dyn.max_boosted]
    self._reordered = self._reordered or bool(changed)


def rekey(trace: str, cores: int | None, jobs: int, policies: list[str]) -> None:
    """Boost mode with the in-place re-key against the dequeue-and-enqueue baseline (see the module docstring)."""
    workload = read_swf(resolve_trace(trace))
    workload = workload.select(slice(max(0, len(workload) - jobs), len(workload)), name=f"{trace}[-{jobs}:]")
    if cores is not None:
        workload = workload.with_max_procs(cores)
    print(f"{workload.name}: {len(workload)} jobs on {workload.max_procs} cores, boost mode")
    in_place = engine.Simulator._boost_dynamic
    for policy in policies:
        # Each way twice, alternating, the faster of the two kept: a first replay pays for caches the next reuses.
        walls, starts = [math.inf, math.inf], [np.empty(0), np.empty(0)]
        for k in (1, 0, 1, 0):
            engine.Simulator._boost_dynamic = (in_place, _boost_dynamic_requeue)[k]  # type: ignore[method-assign]
            try:
                t0 = time.perf_counter()
                run = simulate_policy(workload, policy, mode="boost", boost=BoostSettings())
                walls[k] = min(walls[k], time.perf_counter() - t0)
                starts[k] = run.schedule.start
            finally:
                engine.Simulator._boost_dynamic = in_place  # type: ignore[method-assign]
        same = np.array_equal(starts[0], starts[1], equal_nan=True)
        print(
            f"{policy:12s} in place {walls[0]:7.2f} s   dequeue+enqueue {walls[1]:7.2f} s   ratio "
            f"{walls[1] / walls[0]:5.2f}   {'same starts' if same else 'STARTS DIFFER'}",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--policies", default="easy-sjf,sarsa-esn")
    parser.add_argument("--quiet-polls", action="store_true")
    parser.add_argument("--ticks", action="store_true", help="also step through the quiet ticks (the reference)")
    parser.add_argument("--candidates", default="", help="traces: time every candidate rule (see above)")
    parser.add_argument("--rekey", default="", metavar="TRACE", help="time the re-key against its baseline (see above)")
    parser.add_argument("--cores", type=int, default=None, help="--rekey: replay on this many cores")
    args = parser.parse_args()
    if args.rekey:
        rekey(args.rekey, args.cores, args.jobs, args.policies.split(","))
        return
    if args.candidates:
        candidates(args.candidates.split(","))
        return
    workload = read_swf(resolve_trace(TRACE))
    workload = workload.select(slice(0, args.jobs), name=f"{TRACE}[:{args.jobs}]")
    span_days = (float(workload.submit[-1]) - float(workload.submit[0])) / 86400.0
    print(f"{workload.name}: {len(workload)} jobs over {span_days:.0f} days, {workload.max_procs} cores")
    runs: list[tuple[str, str, BoostSettings | None]] = [("gate", "", None), ("boost", "", BoostSettings())]
    if args.quiet_polls:
        runs.append(("boost", " (every poll)", BoostSettings(quiet_polls=True)))
    if args.ticks:
        runs.append(("boost", " (every tick)", BoostSettings()))
    for policy in args.policies.split(","):
        jumped: tuple[float, np.ndarray] | None = None
        for mode, note, settings in runs:
            engine.JUMP_QUIET_TICKS = note != " (every tick)"
            try:
                t0 = time.perf_counter()
                run = simulate_policy(workload, policy, mode="boost" if mode == "boost" else "gate", boost=settings)
                wall = time.perf_counter() - t0
            finally:
                engine.JUMP_QUIET_TICKS = True
            summary = summarize(run.schedule)
            line = (
                f"{policy:12s} {mode + note:20s} {wall:7.2f} s   bsld {summary['mean_bounded_slowdown']:8.2f}   "
                f"W {summary['mean_responsiveness']:.3f}   mean wait {summary['mean_wait_s']:8.0f} s"
            )
            if mode == "boost" and not note:
                jumped = (wall, run.schedule.start)
            elif note == " (every tick)" and jumped is not None:
                same = np.array_equal(jumped[1], run.schedule.start)
                line += f"   ratio {wall / jumped[0]:5.2f}   {'same starts' if same else 'STARTS DIFFER'}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
