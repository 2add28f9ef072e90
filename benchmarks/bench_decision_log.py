"""What the decision log adds to a shadow-mode cycle (docs/daemon.md, The decision log).

A shadow-mode daemon over an in-memory Slurm (the synthetic ``squeue --json`` of ``bench_daemon``) runs its
cycle with the decision log on and off, in the same run; printed: the cycle time both ways, their ratio, the
cost of one append (ranking + scores + state + JSON + write + fsync) and the size of one line.

    .venv/bin/python -m benchmarks.bench_decision_log [--pending 10000] [--agent NAME] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tests.fakes.slurm import SyntheticSlurm, make_daemon, synthetic_squeue_json


def measure(n_pending: int, agent: str, repeat: int) -> dict[str, float]:
    runner = SyntheticSlurm(synthetic_squeue_json(n_pending))
    with tempfile.TemporaryDirectory() as tmp:
        daemon = make_daemon(runner, tmp, mode="shadow", agent=agent)
        log = daemon.decision_log
        assert log is not None
        daemon.cycle()  # warm-up (first poll, completion feed)
        on: list[float] = []
        off: list[float] = []
        append: list[float] = []
        for _ in range(repeat):
            daemon.decision_log = None
            t0 = time.perf_counter()
            report = daemon.cycle()
            off.append(time.perf_counter() - t0)
            daemon.decision_log = log
            t0 = time.perf_counter()
            daemon.cycle()
            on.append(time.perf_counter() - t0)
            assert report.view is not None
            t0 = time.perf_counter()
            daemon._log_decisions(report.view, report.decisions)
            append.append(time.perf_counter() - t0)
        lines = Path(log.path).read_bytes().splitlines()
        return {
            "off_s": statistics.median(off),
            "on_s": statistics.median(on),
            "append_s": statistics.median(append),
            "line_bytes": float(len(lines[-1])),
        }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--agent", action="append", default=None)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    for agent in args.agent or ["interactive-first-sjf", "sarsa-esn"]:
        r = measure(args.pending, agent, args.repeat)
        print(
            f"{agent:<22} {args.pending} pending: cycle {r['off_s'] * 1e3:7.1f} ms without the log, "
            f"{r['on_s'] * 1e3:7.1f} ms with it (ratio {r['on_s'] / r['off_s']:.3f}); one append "
            f"{r['append_s'] * 1e3:6.1f} ms, {r['line_bytes'] / 1024:.1f} KiB a line"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
