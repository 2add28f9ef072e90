"""``rlsched train`` and ``rlsched evaluate`` on CTC-SP2 (77,222 jobs), against a baseline of the same run.

Targets (issue 13, on 2 cores): train SARSA-ESN on all of CTC-SP2 in under 60 s; evaluate six rule
policies on CTC-SP2 in under 30 s.  Issue 23, on 2 cores: ``rlsched train``'s whole protocol on CTC-SP2 in under
15 minutes (``--protocol``).  The baseline, measured in the same run, is one EASY replay of the
trace on the simulator's native path (what every ratio is relative to), so a loaded machine shows in
both numbers.

1. ``train``: :func:`rlsched.workflow.train.train_one` of ``sarsa-esn`` (one run, no checkpoint),
   model bytes included; then the same with ``--checkpoint-every 20000`` (the cost of the chunks'
   checkpoints and reloads).
2. ``evaluate``: :func:`rlsched.workflow.evaluate.evaluate` of fcfs, easy, sjf, easy-sjf,
   interactive-first, interactive-first-sjf (one window), then its outputs (report, JSON, three PNGs).
3. ``--protocol``: what ``rlsched train --workload CTC-SP2 --policy sarsa-esn --seeds 2 --workers 2`` does with its
   defaults — the 50/25/25 split, 3 epochs over the train window each scored on validation in boost mode, the two
   seeds on two processes, the selection, and the verdict (every rule on validation, on the two processes too,
   :func:`rlsched.workflow.train.judge_and_write`); each step timed.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.bench_workflow`` (``--skip-train`` for the fast part,
``--profile`` to print the top of a cProfile of each step, ``--protocol`` for issue 23's protocol alone,
``--policy SPEC`` for another learned spec than ``sarsa-esn``, e.g. to time today's code on an older commit's
defaults).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rlsched.sim.policies import simulate_policy  # noqa: E402
from rlsched.sim.traces.swf import read_swf, resolve_trace  # noqa: E402
from rlsched.workflow.evaluate import evaluate, parse_contender, write_outputs  # noqa: E402
from rlsched.workflow.split import Deployment, TimeSplit  # noqa: E402
from rlsched.workflow.train import judge_and_write, run_tasks, train_one, train_plan  # noqa: E402

TRACE = "CTC-SP2-1996-3.1-cln"
RULES = ("fcfs", "easy", "sjf", "easy-sjf", "interactive-first", "interactive-first-sjf")
TRAIN_TARGET_S = 60.0
EVALUATE_TARGET_S = 30.0
PROTOCOL_TARGET_S = 15 * 60.0


def timed(fn: Callable[[], Any], profile: bool = False) -> tuple[float, Any]:
    if profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        t0 = time.perf_counter()
        out = prof.runcall(fn)
        elapsed = time.perf_counter() - t0
        pstats.Stats(prof).sort_stats("cumulative").print_stats(15)
        return elapsed, out
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-train", action="store_true")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--protocol", action="store_true", help="issue 23's train protocol alone")
    parser.add_argument(
        "--policy",
        default="sarsa-esn",
        help="the learned policy spec ``train`` times (e.g. sarsa-esn:runtime_model=estimated, the default of older "
        "commits, to compare with them)",
    )
    args = parser.parse_args()
    workload = read_swf(resolve_trace(TRACE))
    base_s, _ = timed(lambda: simulate_policy(workload, "easy"))
    print(f"{TRACE}: {len(workload)} jobs; baseline one EASY replay {base_s:.2f} s")
    print(f"{'case':<44}{'s':>9}{'x EASY':>9}{'target s':>10}{'ok':>5}")

    def row(name: str, seconds: float, target: float | None) -> None:
        ok = "" if target is None else ("yes" if seconds < target else "NO")
        print(f"{name:<44}{seconds:>9.2f}{seconds / base_s:>9.1f}{target or float('nan'):>10.0f}{ok:>5}")

    if args.protocol:
        protocol(workload, row)
        return
    contenders = [parse_contender(r) for r in RULES]
    ev_s, ev = timed(lambda: evaluate(workload, contenders), args.profile)
    row("evaluate 6 rules (tables)", ev_s, None)
    with tempfile.TemporaryDirectory() as tmp:
        out_s, _ = timed(lambda: write_outputs(ev, Path(tmp)), args.profile)
    row("evaluate outputs (report, JSON, 3 PNG)", out_s, None)
    row("evaluate 6 rules, total", ev_s + out_s, EVALUATE_TARGET_S)
    if args.skip_train:
        return
    with tempfile.TemporaryDirectory() as tmp:
        (task,) = train_plan(workload, args.policy, Path(tmp) / "m.npz")
        train_s, result = timed(lambda: train_one(task), args.profile)
        row(f"train {args.policy} ({result.decisions} decisions)", train_s, TRAIN_TARGET_S)
        print(f"{'':<4}model {len(result.model) / 2**20:.0f} MiB (weights and the replay memory)")
        (chunked,) = train_plan(workload, args.policy, Path(tmp) / "c.npz", checkpoint_every=20000)
        chunk_s, _ = timed(lambda: train_one(chunked))
        row(f"train {args.policy}, checkpoint every 20000", chunk_s, None)


def protocol(workload: Any, row: Callable[[str, float, float | None], None]) -> None:
    """``rlsched train``'s protocol with its defaults, two seeds on two processes (see the module docstring)."""
    split = TimeSplit()
    train, validation = split.window(workload, "train"), split.window(workload, "validation")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "m.npz"
        tasks = train_plan(
            train, "sarsa-esn", out, seeds=(0, 1), validation=validation, epochs=3, deployment=Deployment("boost")
        )
        fit_s, results = timed(lambda: run_tasks(tasks, workers=2))
        row(f"train 2 seeds x 3 epochs on 2 processes ({len(train)} jobs)", fit_s, None)
        about = {
            "workload": workload.name,
            "jobs": len(workload),
            "split": split.to_dict(),
            "windows": split.windows(workload),
        }
        judge_s, verdict = timed(lambda: judge_and_write(results, tasks, out, about=about, workers=2))
        row("verdict: every rule on validation, 2 processes", judge_s, None)
        row("train protocol, total", fit_s + judge_s, PROTOCOL_TARGET_S)
        print(f"{'':<4}{verdict.line()}")


if __name__ == "__main__":
    main()
