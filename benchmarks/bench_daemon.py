"""One daemon cycle at 10,000 pending jobs, split into poll, parse, decide, act (issue 4; docs/design.md, Performance).

The queue is synthetic: a ``squeue --json`` document of N pending jobs (plus a few running ones) built
from a real job record of Slurm 22.05 (``tests/data/slurm/squeue-mixed.json``) with varied ids, accounts,
partitions, CPUs, time limits, submit times and holds.  ``poll`` is measured with a fake runner that
returns that document from memory — it is *not* the cost of a real ``squeue`` call, which on a busy
controller is dominated by slurmctld (measure that with ``time squeue --json > /dev/null`` on the site);
on the local test cluster an ``squeue --json`` of a handful of jobs takes about 20–40 ms.  ``act`` is one
boost of the top ``max_boosted`` jobs, the ``scontrol`` calls answered by the fake runner; a real
``scontrol update`` costs about 5 ms each (docs/slurm.md), i.e. ~160 ms for 32 boosted jobs.

    .venv/bin/python -m benchmarks.bench_daemon [--pending 10000] [--agent NAME] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from rlsched.backends.slurm.parsers import parse_sinfo_json, parse_squeue_json
from rlsched.core.policies import POLICIES
from tests.fakes.slurm import SyntheticSlurm, make_daemon, synthetic_squeue_json


def measure(n_pending: int, agent: str, repeat: int) -> dict[str, Any]:
    squeue = synthetic_squeue_json(n_pending)
    runner = SyntheticSlurm(squeue)
    parse_s: list[float] = []
    poll_s: list[float] = []
    decide_s: list[float] = []
    act_s: list[float] = []
    cycle_s: list[float] = []
    view_s = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        daemon = make_daemon(runner, tmp, "boost", agent)
        daemon.cycle()  # warm-up: scontrol show config, first boost
        for _ in range(repeat):
            t0 = time.perf_counter()
            runner(["squeue", "--json"], 30.0)
            runner(["sinfo", "--json"], 30.0)
            poll_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            parse_squeue_json(squeue)
            parse_sinfo_json(runner.sinfo)
            parse_s.append(time.perf_counter() - t0)
            # Vary the ranking a little so that the act phase really re-sends Nice offsets.
            runner.squeue = synthetic_squeue_json(n_pending, seed=len(cycle_s) + 1)
            report = daemon.cycle()
            cycle_s.append(sum(report.seconds.values()))
            decide_s.append(report.seconds["decide"])
            act_s.append(report.seconds["act"])
            view_s = report.seconds["view"]
        actions = len(runner.actions())
    med = statistics.median
    return {
        "pending": n_pending,
        "agent": agent,
        "repeat": repeat,
        "poll_s": med(poll_s),
        "parse_s": med(parse_s),
        "decide_s": med(decide_s),
        "act_s": med(act_s),
        "view_s_last": view_s,
        "cycle_s": med(cycle_s),
        "scontrol_actions_total": actions,
        "note": "poll is a fake runner (in memory); add the site's squeue --json time",
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--agent", choices=[n for n, e in POLICIES.items() if e.live], default="interactive-first-sjf")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.pending, args.agent, args.repeat)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"daemon cycle, {result['pending']} pending jobs, agent {result['agent']} (median of {result['repeat']}):"
        )
        for key in ("poll_s", "parse_s", "decide_s", "act_s", "cycle_s"):
            print(f"  {key[:-2]:<7} {1000 * result[key]:9.1f} ms")
        print(f"  ({result['note']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
