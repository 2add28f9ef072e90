"""History import speed: one million ``sacct --parsable2`` records into SWF + sidecar (target: < 30 s, 2 cores).

Generates a file shaped like ``sacct -a -X -P --format=<SACCT_LIVE_FIELDS>`` output with
``SLURM_TIME_FORMAT=%s`` (a saved file, what ``history import --from sacct-file`` reads; the live import reads
the same fields through its own delimiter): 1,000,000 job records from 40 accounts, 400 users, 4 partitions,
3 QOS, 200 job names, with 3 % cancelled while pending, 1 % still pending, 1 % still running, 2 % array
elements and 0.5 % array placeholders.  Then times, in this process:

1. the baseline: one ``csv.reader`` pass over the same file (``|`` delimiter), rows counted — the least any
   reader of this file does;
2. ``import_history`` (read, parse, screen, classify, map VOs) and ``write_trace`` (SWF, .jobs.csv,
   .meta.json, atomic) — the whole import but the CLI;
3. ``read_trace`` of the result (SWF + sidecar back into a Workload), for the simulator side.

Prints each time, jobs per second, and the import / baseline ratio.  ``--iso`` writes sacct's default
``YYYY-MM-DDTHH:MM:SS`` times instead of epoch seconds (what a file saved by hand usually has).

Run: ``python benchmarks/bench_history.py [--records N] [--iso] [--keep DIR]``
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import numpy as np

from rlsched.history import ImportRequest, SiteSettings, import_history, write_trace
from rlsched.history.sacct import SACCT_LIVE_FIELDS
from rlsched.sim.traces.sidecar import read_trace

T = TypeVar("T")
START = 1_767_225_600  # 2026-01-01T00:00:00Z


def timed(fn: Callable[[], T]) -> tuple[float, T]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def generate(path: Path, n: int, iso: bool, seed: int = 0) -> None:
    """``n`` records of ``sacct -a -X -P`` text (see the module docstring)."""
    rng = np.random.default_rng(seed)
    submit = START + np.sort(rng.integers(0, 365 * 86400, n))
    wait = rng.exponential(600, n).astype(np.int64)
    run = np.minimum(rng.lognormal(7, 1.5, n).astype(np.int64), 7 * 86400)
    limit_min = np.array([5, 15, 60, 240, 1440, 4320])[rng.integers(0, 6, n)]
    run = np.minimum(run, limit_min * 60)
    cpus = 2 ** rng.integers(0, 7, n)
    nodes = np.maximum(1, cpus // 32)
    account = rng.integers(0, 40, n)
    user = account * 10 + rng.integers(0, 10, n)
    partition = rng.integers(0, 4, n)
    qos = rng.integers(0, 3, n)
    kind = rng.random(n)
    program = rng.integers(0, 200, n)  # job names: a few hundred programs, as a site's scripts repeat
    names = [f"run_{k}.sh" for k in range(200)]
    fmt = (lambda t: datetime.fromtimestamp(int(t)).strftime("%Y-%m-%dT%H:%M:%S")) if iso else str
    with path.open("w") as out:
        out.write("|".join(SACCT_LIVE_FIELDS) + "\n")
        for i in range(n):
            job = 1000 + i
            s = int(submit[i])
            start, end, state, alloc = s + int(wait[i]), s + int(wait[i]) + int(run[i]), "COMPLETED", int(cpus[i])
            job_id = str(job)
            if kind[i] < 0.03:
                start_t, end_t, state, alloc = "None", fmt(s + 300), "CANCELLED by 1000", 0
            elif kind[i] < 0.04:
                start_t, end_t, state, alloc = "Unknown", "Unknown", "PENDING", 0
            elif kind[i] < 0.05:
                start_t, end_t, state = fmt(start), "Unknown", "RUNNING"
            else:
                start_t, end_t = fmt(start), fmt(end)
                if kind[i] > 0.99:
                    state = "TIMEOUT"
            if 0.05 <= kind[i] < 0.07:
                job_id = f"{job - 1}_{i % 50}"
            elif 0.07 <= kind[i] < 0.075:
                job_id, state, start_t, end_t, alloc = f"{job}_[1-20]", "PENDING", "Unknown", "Unknown", 0
            nodelist = "None assigned" if alloc == 0 else f"node{i % 64}"
            out.write(
                f"{job}|{job_id}|u{user[i]}|g{account[i] % 7}|acct{account[i]}|part{partition[i]}|"
                f"q{qos[i]}|{state}|{fmt(s)}|{fmt(s)}|{start_t}|{end_t}|{limit_min[i]}|{alloc}|"
                f"{int(cpus[i])}|{int(nodes[i])}|{nodelist}|{names[program[i]]}\n"
            )


def csv_pass(path: Path) -> int:
    with path.open(newline="") as handle:
        return sum(1 for _ in csv.reader(handle, delimiter="|"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--iso", action="store_true", help="sacct's default local times instead of epoch seconds")
    parser.add_argument("--keep", type=Path, default=None, help="keep the generated file and outputs here")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="rlsched-bench-history-"))
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "sacct.txt"
    t_gen, _ = timed(lambda: generate(source, args.records, args.iso))
    size_mb = source.stat().st_size / 2**20
    print(
        f"generated {args.records:,} records ({size_mb:.0f} MiB, {'ISO local' if args.iso else 'epoch'} times) "
        f"in {t_gen:.1f} s: {source}"
    )

    t_base, rows = timed(lambda: csv_pass(source))
    settings = SiteSettings()
    out = folder / "site.swf"

    def run_import() -> int:
        trace = import_history(ImportRequest(source="sacct-file", input=source), settings)
        write_trace(trace, out, meta=trace.meta)
        return len(trace)

    t_import, kept = timed(run_import)
    t_read, workload = timed(lambda: read_trace(out))
    assert len(workload) == kept
    print(f"{'step':<44}{'s':>8}{'records/s':>12}")
    print(
        f"{'baseline: csv.reader pass (' + format(rows - 1, ',') + ' rows)':<44}{t_base:>8.2f}"
        f"{(rows - 1) / t_base:>12,.0f}"
    )
    print(f"{'history import (parse, screen, write 3 files)':<44}{t_import:>8.2f}{args.records / t_import:>12,.0f}")
    print(f"{'read_trace of the result (' + format(kept, ',') + ' jobs)':<44}{t_read:>8.2f}{kept / t_read:>12,.0f}")
    print(
        f"import / baseline ratio: {t_import / t_base:.1f}   target: import < 30 s -> "
        f"{'met' if t_import < 30 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
