"""``rlsched train``: a learned policy trained on a trace, saved as a model the daemon loads.

- :func:`train_plan` binds the policy to the workload (its VO list; with a daemon config the
  site's class rule and VOs, :mod:`rlsched.workflow.site`) and makes one :class:`TrainTask`
  per seed.
- :func:`train_one` runs a task: one simulation of the whole trace with the agent learning
  (gate mode, as ``rlsched sim run`` does), or, with ``checkpoint_every = N``, consecutive
  chunks of N jobs continuing the same agent.  After each chunk the agent is written
  atomically to the task's checkpoint with the chunk index and the fingerprint of the training
  arguments, and the next chunk starts from that file — so a run that is killed and rerun with
  the same arguments resumes after the last finished chunk and ends with the very same model
  as an uninterrupted run.  A checkpoint written for other arguments is refused (one line; the
  caller may ask to start afresh).
- :func:`run_tasks` runs the tasks here, on a local process pool, or on a Dask cluster (an
  existing scheduler, or ``dask_jobqueue.SLURMCluster`` submitting the workers to the site's
  Slurm).  A task returns its model as bytes, so remote workers need no shared file system for
  the models (the checkpoints, written by the worker, do).

Chunked vs single-run training: each chunk is simulated from an empty machine and runs until
its last job ends, so the jobs of two consecutive chunks never queue together; the agent,
its experience, its runtime estimates and its fairness service carry over.  With chunks of a
few thousand jobs the boundaries are a small fraction of the decisions; the learned models
differ from a single run's (tests check that both learn and that resume equals uninterrupted).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from rlsched.core.agents import SchedulingAgent
from rlsched.core.policies import PolicyError, PolicySpec, entry, load_policy, read_policy_spec, resolve
from rlsched.sim.engine import DEFAULT_OVERRUN, Overrun
from rlsched.sim.policies import simulate_policy, workload_vos
from rlsched.sim.workload import Workload, with_class_rule
from rlsched.workflow.site import Site, site_view, trace_class_rule

#: Key of the training progress inside a checkpoint's policy metadata.
TRAINING_KEY = "training"


class TrainError(ValueError):
    """A problem with the training arguments or a checkpoint (one line for the user)."""


@dataclass(frozen=True)
class TrainTask:
    """One model to train: the workload (already seen through the site), the bound spec, where to checkpoint."""

    workload: Workload
    spec: PolicySpec
    model_path: Path
    checkpoint_path: Path | None = None
    checkpoint_every: int = 0
    cores: int | None = None
    overrun: Overrun = DEFAULT_OVERRUN
    fresh: bool = False
    #: Tests only: stop after this many chunks (a killed run), leaving the checkpoint behind.
    stop_after_chunks: int | None = None

    @property
    def seed(self) -> int:
        return int(self.spec.params.get("seed", 0))

    def fingerprint(self) -> str:
        """What the result depends on: the jobs, the policy, the chunking, the pool, the overrun rule."""
        w = self.workload
        digest = hashlib.sha256()
        for column in (w.submit, w.run, w.req_time, w.procs, w.job_class, w.vo):
            digest.update(np.ascontiguousarray(column).tobytes())
        spec = self.spec.to_dict()
        spec.pop("source", None)
        digest.update(json.dumps({"spec": spec, "every": self.checkpoint_every, "cores": self.cores,
                                  "overrun": self.overrun, "max_procs": w.max_procs, "jobs": len(w)},
                                 sort_keys=True, default=str).encode())
        return digest.hexdigest()[:16]


@dataclass
class TrainResult:
    """A trained model (its file's bytes) and what the training did."""

    seed: int
    model_path: Path
    model: bytes
    label: str
    jobs: int
    decisions: int
    chunks: int
    resumed_after_chunk: int | None
    seconds: float
    mean_w: float | None = None
    notes: list[str] = field(default_factory=list)


def seeded_path(path: Path, seed: int, n_seeds: int) -> Path:
    """``model.npz`` for one seed; ``model.seed3.npz`` … for several."""
    if n_seeds == 1:
        return path
    return path.with_name(f"{path.stem}.seed{seed}{path.suffix or '.npz'}")


def checkpoint_path_for(model_path: Path) -> Path:
    """``model.npz`` → ``model.ckpt.npz``."""
    return model_path.with_name(f"{model_path.stem}.ckpt{model_path.suffix or '.npz'}")


def train_plan(workload: Workload, policy: str | PolicySpec, out: Path, *, seeds: Sequence[int] = (0,),
               site: Site | None = None, checkpoint_every: int = 0, cores: int | None = None,
               overrun: Overrun = DEFAULT_OVERRUN, fresh: bool = False) -> list[TrainTask]:
    """One :class:`TrainTask` per seed (see the module docstring); one-line errors for bad arguments."""
    spec = resolve(policy)
    if entry(spec.name).family != "learned":
        raise TrainError(f"policy {spec.name!r} is a {entry(spec.name).family}, not a learned policy: nothing to "
                         "train (learned: " + ", ".join(n for n in _learned_names()) + ")")
    if checkpoint_every < 0:
        raise TrainError(f"--checkpoint-every must be >= 0, got {checkpoint_every}")
    if not seeds:
        raise TrainError("no seed to train")
    # Jobs are classed as the daemon will class them: by a class rule on what is known at submit,
    # the site's (--config) or the default one (time limit <= 900 s), never by the runtime.
    rule = site.class_rule if site is not None else trace_class_rule(workload)
    workload = site_view(workload, site) if site is not None else with_class_rule(workload, rule)
    spec = spec.with_class_rule(rule.to_dict())
    spec = spec.bound(workload_vos(workload), spec.features)
    tasks = []
    for seed in seeds:
        path = seeded_path(out, seed, len(seeds))
        tasks.append(TrainTask(workload, spec.with_params(seed=int(seed)), path,
                               checkpoint_path_for(path) if checkpoint_every else None, checkpoint_every,
                               cores, overrun, fresh))
    return tasks


def _learned_names() -> list[str]:
    from rlsched.core.policies import POLICIES

    return [e.name for e in POLICIES.values() if e.family == "learned"]


def _pool(task: TrainTask) -> int:
    return task.cores if task.cores is not None else int(task.workload.max_procs)


def _write_checkpoint(agent: SchedulingAgent, task: TrainTask, chunk: int, path: Path) -> None:
    # save_policy's binding, plus the training progress inside the same (atomically written) file.
    features = agent.encoder.config.to_dict()
    agent.policy = {**task.spec.bound(task.spec.vos, features).to_dict(),
                    TRAINING_KEY: {"fingerprint": task.fingerprint(), "chunk": chunk,
                                   "checkpoint_every": task.checkpoint_every}}
    agent.save(path)


def read_progress(path: Path) -> dict[str, Any] | None:
    """The training progress a checkpoint records (fingerprint, last finished chunk), None when absent."""
    if not path.is_file():
        return None
    try:
        _, meta = read_policy_spec(path)
    except PolicyError as exc:
        raise TrainError(f"checkpoint {path}: {exc}") from None
    progress = meta.get("policy", {}).get(TRAINING_KEY)
    return progress if isinstance(progress, dict) else None


def _load(path: Path, task: TrainTask) -> SchedulingAgent:
    agent, _ = load_policy(path, expect_vos=task.spec.vos, mode="gate", total_cores=_pool(task),
                           start_s=float(task.workload.submit[0]) if len(task.workload) else 0.0)
    agent.learn = True
    return agent


def _chunks(n: int, every: int) -> Iterator[tuple[int, int]]:
    for start in range(0, n, every):
        yield start, min(start + every, n)


def train_one(task: TrainTask, progress: Callable[[int], None] | None = None) -> TrainResult:
    """Train ``task`` (see the module docstring); ``progress(jobs done)`` while it runs."""
    t0 = time.perf_counter()
    w = task.workload
    if len(w) == 0:
        raise TrainError(f"workload {w.name!r} has no job to train on")
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="rlsched-train-") as tmp:
        final = Path(tmp) / "model.npz"
        resumed: int | None = None
        if not task.checkpoint_every:
            ran = simulate_policy(w, task.spec, task.cores, overrun=task.overrun, progress=progress)
            agent = ran.agent
            assert isinstance(agent, SchedulingAgent)
            waits, runs = ran.schedule.wait, ran.schedule.run
            chunks = 1
        else:
            ckpt = task.checkpoint_path
            assert ckpt is not None
            done = -1
            recorded = read_progress(ckpt)
            if recorded is not None:
                if recorded.get("fingerprint") != task.fingerprint():
                    if not task.fresh:
                        raise TrainError(f"checkpoint {ckpt} was written by a training with other arguments "
                                         f"(fingerprint {recorded.get('fingerprint')}, these give "
                                         f"{task.fingerprint()}): remove it, or pass --fresh to start afresh")
                    notes.append(f"checkpoint {ckpt} was for other arguments: started afresh")
                else:
                    done = int(recorded["chunk"])
                    resumed = done
                    notes.append(f"resumed from {ckpt} after chunk {done + 1}")
            bounds = list(_chunks(len(w), task.checkpoint_every))
            chunks = len(bounds)
            wait_parts: list[np.ndarray] = []
            run_parts: list[np.ndarray] = []
            agent_now: SchedulingAgent | None = None
            for k, (lo, hi) in enumerate(bounds):
                if k <= done:
                    continue
                if task.stop_after_chunks is not None and k >= task.stop_after_chunks:
                    raise TrainError(f"stopped after {k} chunks (test hook)")
                part = w.select(np.arange(lo, hi))
                # Every chunk after the first starts from the checkpoint file, also in an uninterrupted
                # run: a resumed run then continues from exactly the state an uninterrupted one does.
                start_agent = None if k == 0 else _load(ckpt, task)

                def chunk_progress(n: int, lo: int = lo) -> None:
                    if progress is not None:
                        progress(lo + n)
                ran = simulate_policy(part, task.spec, task.cores, overrun=task.overrun, agent=start_agent,
                                      progress=chunk_progress)
                agent_now = ran.agent  # type: ignore[assignment]
                assert isinstance(agent_now, SchedulingAgent)
                wait_parts.append(ran.schedule.wait)
                run_parts.append(ran.schedule.run)
                _write_checkpoint(agent_now, task, k, ckpt)
            if agent_now is None:  # every chunk was done before: the checkpoint holds the final model
                agent_now = _load(ckpt, task)
            agent = agent_now
            waits = np.concatenate(wait_parts) if wait_parts else np.zeros(0)
            runs = np.concatenate(run_parts) if run_parts else np.zeros(0)
        from rlsched.core.policies import save_policy

        save_policy(agent, task.spec, final)
        model = final.read_bytes()
    from rlsched.core.measures import responsiveness

    mean_w = float(responsiveness(runs, waits).mean()) if len(waits) else None
    return TrainResult(task.seed, task.model_path, model, task.spec.label(), len(w), int(agent.decisions), chunks,
                       resumed, time.perf_counter() - t0, mean_w, notes)


def _train_quiet(task: TrainTask) -> TrainResult:
    return train_one(task)


@dataclass(frozen=True)
class DaskSlurm:
    """Options of ``dask_jobqueue.SLURMCluster`` (one Slurm job per Dask worker)."""

    cores: int = 1
    memory: str = "2GB"
    walltime: str = "01:00:00"
    queue: str | None = None
    account: str | None = None
    jobs: int = 1
    host: str | None = None
    extra: tuple[str, ...] = ()


def run_tasks(tasks: Sequence[TrainTask], *, workers: int = 1, dask_address: str | None = None,
              dask_slurm: DaskSlurm | None = None,
              progress: Callable[[int], None] | None = None) -> list[TrainResult]:
    """Run ``tasks`` here (one worker: with per-job ``progress``), on a process pool, or on Dask.

    With several tasks ``progress`` counts finished tasks.  Results come back in task order.
    """
    if dask_address is not None and dask_slurm is not None:
        raise TrainError("give --dask or --dask-slurm, not both")
    if dask_address is not None or dask_slurm is not None:
        return _run_dask(tasks, dask_address, dask_slurm, progress)
    if workers <= 1 or len(tasks) == 1:
        results = []
        for i, task in enumerate(tasks):
            one = progress if len(tasks) == 1 else None
            results.append(train_one(task, one))
            if progress is not None and len(tasks) > 1:
                progress(i + 1)
        return results
    from concurrent.futures import ProcessPoolExecutor, as_completed

    out: dict[int, TrainResult] = {}
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks))) as pool:
        futures = {pool.submit(_train_quiet, task): i for i, task in enumerate(tasks)}
        for n, future in enumerate(as_completed(futures), 1):
            out[futures[future]] = future.result()
            if progress is not None:
                progress(n)
    return [out[i] for i in range(len(tasks))]


def _run_dask(tasks: Sequence[TrainTask], address: str | None, slurm: DaskSlurm | None,
              progress: Callable[[int], None] | None) -> list[TrainResult]:
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise TrainError("Dask is not installed: pip install 'rlsched[dask]'") from None
    cluster: Any = None
    if slurm is not None:
        try:
            from dask_jobqueue import SLURMCluster
        except ImportError:
            raise TrainError("dask-jobqueue is not installed: pip install 'rlsched[dask]'") from None
        import sys

        options: dict[str, Any] = {"cores": slurm.cores, "memory": slurm.memory, "walltime": slurm.walltime,
                                   "processes": 1, "python": sys.executable,
                                   "job_extra_directives": list(slurm.extra)}
        if slurm.queue:
            options["queue"] = slurm.queue
        if slurm.account:
            options["account"] = slurm.account
        if slurm.host:
            options["scheduler_options"] = {"host": slurm.host}
            options["interface"] = None
            options["worker_extra_args"] = ["--host", slurm.host]
        cluster = SLURMCluster(**options)
        cluster.scale(jobs=slurm.jobs)
    try:
        with Client(cluster if cluster is not None else address) as client:
            futures = [client.submit(_train_quiet, task, pure=False) for task in tasks]
            index = {f.key: i for i, f in enumerate(futures)}
            out: dict[int, TrainResult] = {}
            for n, future in enumerate(as_completed(futures), 1):
                out[index[future.key]] = future.result()
                if progress is not None:
                    progress(n)
            return [out[i] for i in range(len(tasks))]
    finally:
        if cluster is not None:
            cluster.close()


def write_models(results: Sequence[TrainResult]) -> None:
    """Write each result's model to its path, atomically."""
    from rlsched.core.atomic import atomic_write

    def writer(data: bytes) -> Callable[[IO[bytes]], object]:
        return lambda fh: fh.write(data)

    for result in results:
        atomic_write(result.model_path, writer(result.model))

