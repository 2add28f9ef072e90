"""Rules on a predicted runtime: the replay's cost with :class:`PredictedRuntime`'s memo and without it.

A rule on ``runtime_model=user-last2`` or ``learned`` asks its runtime model for the pending jobs' predictions at
every poll, after the model's own ``observe`` predicted them; a replay hands the previous view's job tables over
while no job came or went.  The memo (``PredictedRuntime._memo``) answers the same object once.  This replays
each rule on the test window of the 12,000-job table's split (boost mode, as ``rlsched learning`` runs it) with
the memo and with it emptied before every call (the baseline, measured in the same run), checks that both give
the same start times, and prints the time of each and the ratio.

Run:  RLSCHED_TRACE_DIR=/path/to/traces .venv/bin/python -m benchmarks.bench_predicted_runtime \
          [--traces KTH-SP2-1996-2.1-cln,CTC-SP2-1996-3.1-cln] [--max-jobs 12000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from unittest import mock  # noqa: E402

import numpy as np  # noqa: E402

from rlsched.cli.learning import load_workload  # noqa: E402
from rlsched.core.runtime import PredictedRuntime  # noqa: E402
from rlsched.core.view import FloatArray, PendingJobs, RunningJobs  # noqa: E402
from rlsched.sim.workload import Workload  # noqa: E402
from rlsched.workflow.learning import LearningSettings  # noqa: E402
from rlsched.workflow.split import simulate_in  # noqa: E402

RULES = (
    "sjf:runtime_model=user-last2",
    "saf:runtime_model=learned",
    "f4:runtime_model=learned",
    "wfp3:runtime_model=learned",
    "easy-sjf:runtime_model=learned",
)
_MEMOISED = PredictedRuntime._predicted


def _unmemoised(self: PredictedRuntime, table: str, jobs: PendingJobs | RunningJobs) -> tuple[FloatArray, FloatArray]:
    self._memo.clear()
    return _MEMOISED(self, table, jobs)


def _replays(settings: LearningSettings, test: Workload) -> tuple[float, list[np.ndarray]]:
    t0 = time.perf_counter()
    starts = [simulate_in(settings.deployment, test, rule).schedule.start for rule in RULES]
    return time.perf_counter() - t0, starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", default="KTH-SP2-1996-2.1-cln,CTC-SP2-1996-3.1-cln")
    parser.add_argument("--max-jobs", type=int, default=12000)
    args = parser.parse_args()
    settings = LearningSettings(max_jobs=args.max_jobs)
    total_memo = total_base = 0.0
    for trace in args.traces.split(","):
        workload = load_workload(trace, max_procs=None)
        test = settings.split.window(workload.select(slice(0, args.max_jobs), name=workload.name), "test")
        memo_s, memo_starts = _replays(settings, test)
        with mock.patch.object(PredictedRuntime, "_predicted", _unmemoised):
            base_s, base_starts = _replays(settings, test)
        same = all(np.array_equal(a, b) for a, b in zip(memo_starts, base_starts, strict=True))
        total_memo += memo_s
        total_base += base_s
        print(
            f"{trace}: {len(RULES)} rules on {len(test):,} jobs: memo {memo_s:.1f} s, without {base_s:.1f} s, "
            f"ratio {base_s / memo_s:.2f}, {'same starts' if same else 'STARTS DIFFER'}",
            flush=True,
        )
    print(f"all: memo {total_memo:.1f} s, without {total_base:.1f} s, ratio {total_base / total_memo:.2f}")


if __name__ == "__main__":
    main()
