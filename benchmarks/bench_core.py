"""Decision-core benchmark (docs/design.md, Performance): is deciding cheaper than asking?

Times, on this machine:

1. ranking 50,000 pending jobs: runtime estimates, state and action features, ESN scores
   for every candidate, and the sort (a boost-mode ``SchedulingAgent.decide``);
2. a gate-mode decision releasing 8 jobs out of the same queue (8 sequential picks, each
   re-scoring the remaining candidates with the updated state and reservoir memory);
3. one ESN read-out re-fit on 100,000 transitions (SARSA targets over all stored rows,
   then the ridge normal equations with the cached Gram matrix), plus the one-off cost
   of building that Gram matrix and of a fitted-Q iteration with 16 candidates each;
4. ``json.loads`` of an equally large ``squeue --json`` document shaped like Slurm 22.05's
   openapi/v0.0.38 output (the document the live backend would have to parse first).

It prints each time and the ranking / parse ratio (the target is well under 0.1).

Run: ``python -m benchmarks.bench_core`` or ``python benchmarks/bench_core.py``
(``--jobs``, ``--transitions``, ``--repeat`` to change the sizes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The products here are skinny (n × ~20 times ~20 × 15): BLAS threads do not help them, and on
# a loaded 2-core machine a descheduled BLAS thread costs a whole scheduler quantum (~16 ms per
# call, measured).  One thread, unless the caller chose otherwise; must precede the numpy import.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from rlsched.core.agents import SchedulingAgent  # noqa: E402
from rlsched.core.approximators import EchoStateQ  # noqa: E402
from rlsched.core.features import FeatureConfig, FeatureEncoder  # noqa: E402
from rlsched.core.learners import FittedQLearner, ReplayMemory, SarsaLearner  # noqa: E402
from rlsched.core.runtime import EstimatedRuntime, OracleRuntime  # noqa: E402
from rlsched.core.view import ClusterView, FinishedJobs, JobClass, PendingJobs, RunningJobs  # noqa: E402

VOS = ("atlas", "biomed", "cms", "lhcb", "dteam", "alice", "other")
SHARES = (0.53, 0.02, 0.17, 0.08, 0.01, 0.16, 0.03)  # P-grid §4.2
CORES = 81  # the LAL site, P-grid §4.2


def timed(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def big_view(n_jobs: int, rng: np.random.Generator, idle: int = 0) -> ClusterView:
    """A queue of ``n_jobs`` LAL-like serial jobs behind a full 81-core pool."""
    interactive = rng.random(n_jobs) < 0.47
    run = np.where(interactive, rng.uniform(10, 899, n_jobs), rng.lognormal(9.7, 1.3, n_jobs))
    now = 4.0e6
    pending = PendingJobs(
        job_id=np.arange(1, n_jobs + 1, dtype=np.int64),
        vo=rng.choice(len(VOS), size=n_jobs, p=SHARES).astype(np.int64),
        job_class=np.where(interactive, int(JobClass.INTERACTIVE), int(JobClass.BATCH)).astype(np.int64),
        cores=np.ones(n_jobs, dtype=np.int64),
        req_time_s=np.where(interactive, 3600.0, 259200.0),
        submit_s=np.sort(now - rng.uniform(0, 86400, n_jobs)),
        oracle_run_s=run,
        held=np.ones(n_jobs, dtype=bool),
    )
    busy = CORES - idle
    running = RunningJobs(
        job_id=np.arange(n_jobs + 1, n_jobs + 1 + busy, dtype=np.int64),
        vo=rng.integers(0, len(VOS), busy).astype(np.int64),
        job_class=np.zeros(busy, dtype=np.int64),
        cores=np.ones(busy, dtype=np.int64),
        req_time_s=np.full(busy, 259200.0),
        submit_s=np.full(busy, now - 90000.0),
        start_s=now - rng.uniform(0, 80000, busy),
    )
    finished = FinishedJobs(
        job_id=np.arange(-200, 0, dtype=np.int64),
        vo=rng.integers(0, len(VOS), 200).astype(np.int64),
        job_class=(np.arange(200) % 2).astype(np.int64),
        cores=np.ones(200, dtype=np.int64),
        submit_s=np.full(200, now - 5000.0),
        start_s=np.full(200, now - 4000.0),
        end_s=now - 4000.0 + np.where(np.arange(200) % 2 == 1, 200.0, 20000.0),
    )
    return ClusterView(
        time_s=now,
        total_cores=CORES,
        idle_cores=idle,
        pending=pending,
        running=running,
        finished=finished,
        vos=VOS,
        vo_shares=SHARES,
    )


def trained_esn(encoder: FeatureEncoder, rng: np.random.Generator) -> EchoStateQ:
    esn = EchoStateQ(encoder.state_dim, encoder.action_dim, seed=1)
    rows = np.vstack(
        [esn.encode(rng.random(encoder.state_dim), rng.random((1, encoder.action_dim))) for _ in range(500)]
    )
    esn.fit(rows, rng.random(500))
    return esn


def ranking_agent(encoder: FeatureEncoder, esn: EchoStateQ, runtime_model: str, mode: str) -> SchedulingAgent:
    runtime = OracleRuntime() if runtime_model == "oracle" else EstimatedRuntime()
    return SchedulingAgent(
        SarsaLearner(esn, epsilon=0.0),
        encoder,
        runtime,
        SHARES,
        mode=mode,  # type: ignore[arg-type]
        pretrain_decisions=0,
        learn=False,
    )


def squeue_job(job_id: int, rng: np.random.Generator, submit: int) -> dict[str, Any]:
    """One pending job as Slurm 22.05.8 ``squeue --json`` (openapi/v0.0.38) prints it."""
    user = f"user{int(rng.integers(0, 400)):03d}"
    account = VOS[int(rng.integers(0, len(VOS)))]
    limit = int(rng.choice([60, 240, 1440, 4320]))
    return {
        "account": account,
        "accrue_time": submit,
        "admin_comment": "",
        "array_job_id": 0,
        "array_task_id": None,
        "array_max_tasks": 0,
        "array_task_string": "",
        "association_id": 0,
        "batch_features": "",
        "batch_flag": True,
        "batch_host": "",
        "flags": ["CRON_JOB_NOT_SET", "JOB_WAS_RUNNING"],
        "burst_buffer": "",
        "burst_buffer_state": "",
        "cluster": "lal",
        "cluster_features": "",
        "command": f"/home/{user}/jobs/analysis_{job_id}.sh",
        "comment": "",
        "contiguous": False,
        "core_spec": None,
        "thread_spec": None,
        "cores_per_socket": None,
        "billable_tres": 1.0,
        "cpus_per_task": None,
        "cpu_frequency_minimum": None,
        "cpu_frequency_maximum": None,
        "cpu_frequency_governor": None,
        "cpus_per_tres": "",
        "deadline": 0,
        "delay_boot": 0,
        "dependency": "",
        "derived_exit_code": 0,
        "eligible_time": submit,
        "end_time": submit + limit * 60,
        "excluded_nodes": "",
        "exit_code": 0,
        "features": "",
        "federation_origin": "",
        "federation_siblings_active": "",
        "federation_siblings_viable": "",
        "gres_detail": [],
        "group_id": 1000 + VOS.index(account),
        "job_id": job_id,
        "job_resources": {},
        "job_state": "PENDING",
        "last_sched_evaluation": submit + 30,
        "licenses": "",
        "max_cpus": 0,
        "max_nodes": 0,
        "mcs_label": "",
        "memory_per_tres": "",
        "name": f"analysis_{job_id}",
        "nodes": "",
        "nice": None,
        "tasks_per_core": None,
        "tasks_per_node": 0,
        "tasks_per_socket": None,
        "tasks_per_board": 0,
        "cpus": 1,
        "node_count": 1,
        "tasks": 1,
        "het_job_id": 0,
        "het_job_id_set": "",
        "het_job_offset": 0,
        "partition": "grid",
        "memory_per_node": None,
        "memory_per_cpu": 2000,
        "minimum_cpus_per_node": 1,
        "minimum_tmp_disk_per_node": 0,
        "preempt_time": 0,
        "pre_sus_time": 0,
        "priority": int(rng.integers(1000, 100000)),
        "profile": None,
        "qos": "normal",
        "reboot": False,
        "required_nodes": "",
        "requeue": True,
        "resize_time": 0,
        "restart_cnt": 0,
        "resv_name": "",
        "shared": None,
        "show_flags": ["SHOW_ALL", "SHOW_DETAIL", "SHOW_LOCAL"],
        "sockets_per_board": 0,
        "sockets_per_node": None,
        "start_time": 0,
        "state_description": "",
        "state_reason": "Priority",
        "standard_error": f"/home/{user}/jobs/slurm-{job_id}.out",
        "standard_input": "/dev/null",
        "standard_output": f"/home/{user}/jobs/slurm-{job_id}.out",
        "submit_time": submit,
        "suspend_time": 0,
        "system_comment": "",
        "time_limit": limit,
        "time_minimum": 0,
        "threads_per_core": None,
        "tres_bind": "",
        "tres_freq": "",
        "tres_per_job": "",
        "tres_per_node": "",
        "tres_per_socket": "",
        "tres_per_task": "",
        "tres_req_str": "cpu=1,mem=2000M,node=1,billing=1",
        "tres_alloc_str": "",
        "user_id": 10000,
        "user_name": user,
        "wckey": "",
        "current_working_directory": f"/home/{user}/jobs",
    }


def squeue_document(n_jobs: int, rng: np.random.Generator) -> str:
    jobs = [squeue_job(1_000_000 + i, rng, 1_700_000_000 + i) for i in range(n_jobs)]
    doc = {
        "meta": {
            "plugin": {"type": "openapi/v0.0.38", "name": "Slurm OpenAPI v0.0.38"},
            "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"},
        },
        "errors": [],
        "jobs": jobs,
    }
    # Slurm pretty-prints; the compact form parses a little faster, so the ratio below is
    # conservative (and the C encoder builds it in seconds, not minutes).
    return json.dumps(doc, separators=(",", ":"))


def refit_benchmark(
    n_transitions: int, encoder: FeatureEncoder, rng: np.random.Generator, repeat: int
) -> dict[str, float]:
    """Fill a learner with ``n_transitions`` decisions driven through the reservoir, then time re-fits."""
    esn = EchoStateQ(encoder.state_dim, encoder.action_dim, seed=2)
    learner = SarsaLearner(esn, seed=3)
    states = rng.random((n_transitions, encoder.state_dim))
    actions = rng.random((n_transitions, encoder.action_dim))
    start = time.perf_counter()
    for i in range(n_transitions):
        learner.record(states[i], actions[i : i + 1], 0)
    fill_s = time.perf_counter() - start
    for decision_id, reward in enumerate(rng.random(n_transitions).tolist()):
        learner.reward(decision_id, reward)
    start = time.perf_counter()
    learner.memory.sync_gram()
    gram_s = time.perf_counter() - start
    refit_s = timed(learner.refit, repeat)

    # Fitted Q: the same transitions, each with 16 stored next-state candidates.
    fqi = FittedQLearner(esn, n_candidates=16, iterations=1, seed=4)
    meta, arrays = learner.memory.to_arrays()
    arrays["candidates"] = rng.random((n_transitions, 16, esn.design_dim)).astype(np.float32)
    arrays["candidate_counts"] = np.full(n_transitions, 16, dtype=np.int64)
    fqi.memory = ReplayMemory.from_arrays({**meta, "n_candidates": 16}, arrays)
    fqi_s = timed(fqi.refit, max(1, repeat // 2))
    return {"fill_s": fill_s, "gram_s": gram_s, "refit_s": refit_s, "fqi_iteration_s": fqi_s}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=50_000, help="pending jobs to rank (default 50000)")
    parser.add_argument("--transitions", type=int, default=100_000, help="transitions to re-fit on")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions (median reported)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    encoder = FeatureEncoder(FeatureConfig(n_vos=len(VOS)))
    esn = trained_esn(encoder, rng)

    print(
        f"decision core benchmark: {args.jobs} pending jobs, {args.transitions} transitions, "
        f"median of {args.repeat}; BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    view = big_view(args.jobs, rng)
    rank = {}
    for model in ("estimated", "oracle"):
        agent = ranking_agent(encoder, esn, model, "boost")
        decisions = agent.decide(view)
        assert decisions.boost is not None and len(decisions.boost) == args.jobs
        rank[model] = timed(lambda agent=agent: agent.decide(view), args.repeat)  # type: ignore[misc]
        print(f"  rank {args.jobs} jobs ({model:9s} runtimes, features + ESN + sort): {rank[model] * 1e3:8.1f} ms")
    gate_view = big_view(args.jobs, rng, idle=8)
    gate_agent = ranking_agent(encoder, esn, "estimated", "gate")
    gate_s = timed(lambda: gate_agent.decide(gate_view), args.repeat)
    print(f"  gate decision releasing 8 of {args.jobs} jobs (8 sequential picks):     {gate_s * 1e3:8.1f} ms")

    refit = refit_benchmark(args.transitions, encoder, rng, args.repeat)
    print(
        f"  ESN read-out re-fit on {args.transitions} transitions (SARSA targets + solve): "
        f"{refit['refit_s'] * 1e3:8.1f} ms"
    )
    print(
        f"    one-off Gram matrix build: {refit['gram_s'] * 1e3:.1f} ms; "
        f"one fitted-Q iteration (16 candidates each): {refit['fqi_iteration_s'] * 1e3:.1f} ms; "
        f"recording the transitions: {refit['fill_s']:.2f} s"
    )

    start = time.perf_counter()
    document = squeue_document(args.jobs, rng)
    build_s = time.perf_counter() - start
    parse_s = timed(lambda: json.loads(document), max(1, args.repeat // 2))
    print(
        f"  json.loads of squeue --json ({len(document) / 1e6:.0f} MB, {args.jobs} jobs, v0.0.38): "
        f"{parse_s * 1e3:8.1f} ms   (document built in {build_s:.1f} s)"
    )
    for model, seconds in rank.items():
        print(f"  ratio rank/parse ({model}): {seconds / parse_s:.3f}   (target < 0.1)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
