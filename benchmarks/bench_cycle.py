"""rlsched's own share of one daemon cycle at 50,000 pending jobs: parse + view + rank + act (issue 16).

Targets: under 0.5 s and under 250 MB.  Each variant runs in its own process (so that peak memory is its
own), over the same synthetic ``squeue --json`` document (tests/fakes/slurm.py: real Slurm 22.05 job records,
about 2.4 kB a job, 114 MB at 50,000 jobs), written once to a file and read back as the command's output
(bytes, handed over as the subprocess runner hands them: :class:`CommandResult` keeps ASCII output as bytes
and decodes the rest; only the pipe and slurmctld's own time are left out):

- ``typed``: what the daemon runs (msgspec typed decoding, rlsched/backends/slurm/parsers.py);
- ``reference``: the same cycle with ``json.loads`` and per-field checks (``parse_squeue_json_reference``,
  the parser before issue 16), measured in the same run, as the baseline of the ratios printed.

``json.loads`` of the document alone is printed too: the floor of any reader built on it.  Peak memory is
tracemalloc's peak over one cycle (what rlsched allocates; the 120 MB document is the command's output and
is not counted) and the process's max RSS (everything, the document and the interpreter included).  The
machine's load matters (2 shared cores here): compare the ratios, not the seconds, across machines.

    .venv/bin/python -m benchmarks.bench_cycle [--pending 50000] [--repeat 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TARGET_S = 0.5
TARGET_MB = 250.0
VARIANTS = ("typed", "reference")
SHARE = ("view", "decide", "act")  # parse (inside view) + view + rank + act


def worker(doc_path: str, variant: str, repeat: int, agent: str) -> dict[str, Any]:
    """One variant: a warm-up cycle, ``repeat`` timed cycles, one cycle under tracemalloc."""
    from rlsched.backends.common.runner import CommandResult
    from rlsched.backends.slurm import backend as slurm_backend
    from rlsched.backends.slurm import parsers
    from rlsched.core.view import apply
    from tests.fakes.slurm import SyntheticSlurm, make_daemon

    class DecodingSlurm(SyntheticSlurm):
        """Answers squeue with the document's bytes, as :class:`SubprocessRunner` does: whatever
        :class:`CommandResult` does with them (an ASCII check, a decode when needed) is rlsched's work too."""

        squeue_bytes = b""

        def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
            result = super().__call__(argv, timeout_s)
            if Path(argv[0]).name != "squeue":
                return result
            return CommandResult(result.argv, 0, self.squeue_bytes, "")

    if variant == "reference":
        slurm_backend.parse_squeue_json = parsers.parse_squeue_json_reference
    documents = [Path(doc_path).read_bytes(), Path(doc_path + ".1").read_bytes()]
    runner = DecodingSlurm("")
    runner.squeue_bytes = documents[0]
    share: list[float] = []
    share_cpu: list[float] = []
    phases: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        daemon = make_daemon(runner, tmp, "boost", agent)
        daemon.cycle()
        for k in range(repeat):
            # Alternate two queues so that the act phase really re-sends Nice offsets.
            runner.squeue_bytes = documents[(k + 1) % 2]
            report = daemon.cycle()
            if report.failed:
                raise RuntimeError(f"cycle failed in {report.failed}")
            share.append(sum(report.seconds[p] for p in SHARE))
            for name, seconds in report.seconds.items():
                phases.setdefault(name, []).append(seconds)
            # The same share in CPU seconds (on a loaded machine wall time also counts waiting for a core).
            runner.squeue_bytes = documents[k % 2]
            cpu0 = time.process_time()
            view = daemon.backend.view()
            apply(daemon._scoped(daemon.agent.decide(view)), daemon.backend)
            share_cpu.append(time.process_time() - cpu0)
        runner.squeue_bytes = documents[repeat % 2]
        tracemalloc.start()
        daemon.cycle()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        pending = len(daemon.backend.view().pending)
    return {
        "variant": variant,
        "pending": pending,
        "share_s": statistics.median(share),
        "share_cpu_s": statistics.median(share_cpu),
        "phases_s": {name: statistics.median(v) for name, v in phases.items()},
        "peak_traced_mb": peak / 2**20,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def json_loads_s(doc_path: str, repeat: int) -> tuple[float, float]:
    """``json.loads`` of the document: wall and CPU seconds (medians)."""
    text = Path(doc_path).read_text()
    wall, cpu = [], []
    for _ in range(max(1, repeat // 2)):
        t0, c0 = time.perf_counter(), time.process_time()
        json.loads(text)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def measure(n_pending: int, repeat: int, agent: str, variants: Sequence[str] = VARIANTS) -> dict[str, Any]:
    from tests.fakes.slurm import synthetic_squeue_json

    with tempfile.TemporaryDirectory() as tmp:
        doc_path = os.path.join(tmp, "squeue.json")
        Path(doc_path).write_text(synthetic_squeue_json(n_pending))
        Path(doc_path + ".1").write_text(synthetic_squeue_json(n_pending, seed=1))
        size_mb = os.path.getsize(doc_path) / 2**20
        results = {}
        for variant in variants:
            out = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "benchmarks.bench_cycle",
                    "--worker",
                    doc_path,
                    "--variant",
                    variant,
                    "--repeat",
                    str(repeat),
                    "--agent",
                    agent,
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            results[variant] = json.loads(out.stdout)
        loads_s, loads_cpu_s = json_loads_s(doc_path, repeat)
    typed = results["typed"]
    ref = results.get("reference", typed)  # --variants typed: e.g. an older checkout, no reference reader
    return {
        "pending": n_pending,
        "document_mb": size_mb,
        "agent": agent,
        "repeat": repeat,
        "json_loads_s": loads_s,
        "json_loads_cpu_s": loads_cpu_s,
        "variants": results,
        "ratio_share_typed_over_reference": typed["share_s"] / ref["share_s"],
        "ratio_share_typed_over_json_loads": typed["share_s"] / loads_s,
        "ratio_peak_typed_over_reference": typed["peak_traced_mb"] / ref["peak_traced_mb"],
        "ratio_share_cpu_typed_over_reference": typed["share_cpu_s"] / ref["share_cpu_s"],
        "meets_time_target": typed["share_s"] < TARGET_S,
        "meets_time_target_cpu": typed["share_cpu_s"] < TARGET_S,
        "meets_memory_target": typed["peak_traced_mb"] < TARGET_MB,
        "load_average": os.getloadavg()[0],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pending", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--agent", default="interactive-first-sjf")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--variant", choices=VARIANTS, default="typed", help=argparse.SUPPRESS)
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="which readers to run (typed: the installed code; reference: json.loads)",
    )
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.variant, args.repeat, args.agent)))
        return 0
    result = measure(args.pending, args.repeat, args.agent, args.variants.split(","))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(
        f"one daemon cycle, {result['pending']} pending jobs ({result['document_mb']:.0f} MB of squeue --json), "
        f"agent {result['agent']}, median of {result['repeat']}, load average {result['load_average']:.1f}:"
    )
    print(
        f"  {'':<10} {'parse+view':>10} {'rank':>8} {'act':>8} {'share':>8} {'CPU':>8} {'whole':>8} {'peak':>9} "
        f"{'max RSS':>9}"
    )
    for name, r in result["variants"].items():
        p = r["phases_s"]
        print(
            f"  {name:<10} {1000 * p['view']:8.0f}ms {1000 * p['decide']:6.0f}ms {1000 * p['act']:6.0f}ms "
            f"{1000 * r['share_s']:6.0f}ms {1000 * r['share_cpu_s']:6.0f}ms {1000 * sum(p.values()):6.0f}ms "
            f"{r['peak_traced_mb']:6.0f} MB "
            f"{r['max_rss_mb']:6.0f} MB"
        )
    print(
        f"  json.loads of the document alone: {1000 * result['json_loads_s']:.0f} ms "
        f"({1000 * result['json_loads_cpu_s']:.0f} ms CPU)"
    )
    print(
        f"  ratios: share typed/reference {result['ratio_share_typed_over_reference']:.2f} "
        f"(CPU {result['ratio_share_cpu_typed_over_reference']:.2f}), "
        f"typed/json.loads {result['ratio_share_typed_over_json_loads']:.2f}; "
        f"peak typed/reference {result['ratio_peak_typed_over_reference']:.2f}"
    )
    print(
        f"  targets (share < {TARGET_S} s, peak < {TARGET_MB:.0f} MB): "
        f"time {'met' if result['meets_time_target'] else 'NOT met'} "
        f"(CPU time {'met' if result['meets_time_target_cpu'] else 'NOT met'}), "
        f"memory {'met' if result['meets_memory_target'] else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
