"""Peak memory of replaying a large trace (issue 16: SDSC-BLUE, 232,000 jobs, under 200 MB).

Each replay runs in its own process, through the same code as ``rlsched sim run --workload NAME --policy
POLICY``; the baseline, measured in the same run, is a process that only imports rlsched (numpy, scipy,
click …), so the ratio says what the replay itself adds.  SDSC-BLUE-2000-4.2-cln is not among the traces of
this environment (``$RLSCHED_TRACE_DIR``) and the archive cannot be reached from it; the benchmark then says
so and replays the largest trace it finds of similar size (LPC-EGEE-2004-1.2-cln: 220,695 jobs after
cleaning, the same order as SDSC-BLUE's 232,000).

    RLSCHED_TRACE_DIR=/work/shared/traces .venv/bin/python -m benchmarks.bench_replay_memory [--trace NAME]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

TARGET_MB = 200.0
PREFERRED = ("SDSC-BLUE-2000-4.2-cln", "LPC-EGEE-2004-1.2-cln", "SDSC-DS-2004-2.1-cln")

_CHILD = """
import json, resource, sys
from click.testing import CliRunner
from rlsched.cli import main
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if sys.argv[1] == "--imports-only":
    print(json.dumps({"max_rss_mb": before}))
    raise SystemExit
result = CliRunner().invoke(main, ["sim", "run", "--workload", sys.argv[1], "--policy", sys.argv[2]])
if result.exit_code != 0:
    raise SystemExit(f"replay failed: {result.output[-400:]}")
jobs = next((line.split("jobs")[1].split()[0] for line in result.output.splitlines() if " jobs " in line), "?")
print(json.dumps({"max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "jobs": jobs}))
"""


def _child(*args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def available(name: str) -> bool:
    from rlsched.sim.traces.swf import resolve_trace

    try:
        resolve_trace(name)
    except (OSError, ValueError, LookupError):
        return False
    return True


def measure(trace: str | None, policy: str) -> dict[str, Any]:
    wanted = [trace] if trace else list(PREFERRED)
    missing = [name for name in wanted if not available(name)]
    chosen = next((name for name in wanted if name not in missing), None)
    if chosen is None:
        raise SystemExit(f"none of {wanted} is available: rlsched trace fetch NAME (needs the network)")
    baseline = _child("--imports-only")["max_rss_mb"]
    replay = _child(chosen, policy)
    return {
        "trace": chosen,
        "not_available": missing,
        "policy": policy,
        "jobs": replay["jobs"],
        "max_rss_mb": replay["max_rss_mb"],
        "imports_only_mb": baseline,
        "replay_adds_mb": replay["max_rss_mb"] - baseline,
        "ratio_to_imports_only": replay["max_rss_mb"] / baseline,
        "meets_target": replay["max_rss_mb"] < TARGET_MB,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", help=f"default: the first available of {', '.join(PREFERRED)}")
    parser.add_argument("--policy", default="easy")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = measure(args.trace, args.policy)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for name in result["not_available"]:
        print(
            f"{name}: not available here (not in $RLSCHED_TRACE_DIR or the fetch cache; the archive is "
            "unreachable offline)"
        )
    print(
        f"replay of {result['trace']} ({result['jobs']} jobs), policy {result['policy']}: max RSS "
        f"{result['max_rss_mb']:.0f} MB; imports only {result['imports_only_mb']:.0f} MB (ratio "
        f"{result['ratio_to_imports_only']:.2f}, the replay adds {result['replay_adds_mb']:.0f} MB); "
        f"target < {TARGET_MB:.0f} MB: {'met' if result['meets_target'] else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
