"""``rlsched train``: train a learned policy on a trace and save the model the daemon loads."""

from __future__ import annotations

from pathlib import Path

import click

from rlsched.cli.sim import check_output_file, load_workload, progress_bar
from rlsched.sim.workload import Workload


def one_window(workload: Workload, text: str) -> Workload:
    """Window ``I/K`` of the workload (:func:`rlsched.workflow.evaluate.split_windows`)."""
    from rlsched.workflow.evaluate import split_windows

    index, sep, count = text.partition("/")
    if not sep or not index.strip().isdecimal() or not count.strip().isdecimal():
        raise click.UsageError(f"--window: expected I/K (window I of K, from 0), got {text!r}")
    i, k = int(index), int(count)
    if k == 0:
        raise click.UsageError(f"--window {text}: K, the number of windows, must be at least 1")
    if not 0 <= i < k:
        raise click.UsageError(f"--window {text}: I must lie in 0..{k - 1}")
    return split_windows(workload, k)[i]


def seed_list(seed: int, seeds: int) -> list[int]:
    return list(range(seed, seed + seeds))


@click.command("train")
@click.option("--workload", "workload_spec", required=True,
              help="The trace: an SWF path, a trace name (docs/traces.md) or 'lal' (the synthetic LAL-like one).")
@click.option("--policy", required=True, metavar="NAME[:k=v,...]",
              help="A learned registry policy with parameters (see `rlsched sim policies`).")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The model file (.npz); with several seeds model.seedN.npz beside it.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="A daemon config: the jobs are classed by its class rule and mapped to its VO list, and the "
                   "model records both (the daemon refuses a model that does not match its config).")
@click.option("--window", "window", default=None, metavar="I/K",
              help="Train on window I (from 0) of K consecutive windows of equal job counts — the windows of "
                   "`rlsched evaluate --windows K`, so the other windows are out of sample.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="The first seed.")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Train this many seeds (SEED … SEED+N-1), one model each.")
@click.option("--checkpoint-every", type=click.IntRange(min=0), default=0, show_default=True,
              help="Train on consecutive chunks of N jobs, checkpointing after each (MODEL.ckpt.npz); a rerun "
                   "with the same arguments resumes after the last finished chunk. 0: one run, no checkpoint.")
@click.option("--fresh", is_flag=True, help="Start afresh when the checkpoint was written for other arguments "
                                            "(default: refuse).")
@click.option("--cores", type=click.IntRange(min=1), default=None,
              help="Pool size (default: the trace's machine size).")
@click.option("--workers", "--jobs", "workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Train the seeds on a local pool of K processes.")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS",
              help="Train the seeds on an existing Dask scheduler (tcp://HOST:PORT).")
@click.option("--dask-slurm", is_flag=True,
              help="Train the seeds on Dask workers that dask-jobqueue submits to this site's Slurm.")
@click.option("--slurm-cores", type=click.IntRange(min=1), default=1, show_default=True,
              help="--dask-slurm: cores per worker job.")
@click.option("--slurm-memory", default="2GB", show_default=True, help="--dask-slurm: memory per worker job.")
@click.option("--slurm-walltime", default="01:00:00", show_default=True, help="--dask-slurm: time limit per job.")
@click.option("--slurm-partition", "--slurm-queue", "slurm_partition", default=None,
              help="--dask-slurm: the partition.")
@click.option("--slurm-account", default=None, help="--dask-slurm: the account.")
@click.option("--slurm-jobs", type=click.IntRange(min=1), default=None,
              help="--dask-slurm: worker jobs (default: one per seed, at most --workers when given).")
@click.option("--dask-host", default=None,
              help="--dask-slurm: the address the scheduler and workers listen on (e.g. 127.0.0.1).")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def train(workload_spec: str, policy: str, out: Path, config_path: Path | None, window: str | None, seed: int,
          seeds: int,
          checkpoint_every: int, fresh: bool, cores: int | None, workers: int, dask_address: str | None,
          dask_slurm: bool, slurm_cores: int, slurm_memory: str, slurm_walltime: str, slurm_partition: str | None,
          slurm_account: str | None, slurm_jobs: int | None, dask_host: str | None, quiet: bool) -> None:
    """Train a learned policy on a trace and save the model (`[agent] model` in the daemon config)."""
    from rlsched.workflow.site import load_site
    from rlsched.workflow.train import DaskSlurm, run_tasks, train_plan, write_models

    check_output_file(out, "--out")          # before hours of training, not after
    try:
        site = load_site(config_path) if config_path is not None else None
        workload = load_workload(workload_spec, max_procs=cores)
        if window is not None:
            workload = one_window(workload, window)
        tasks = train_plan(workload, policy, out, seeds=seed_list(seed, seeds), site=site,
                           checkpoint_every=checkpoint_every, cores=cores, fresh=fresh)
        slurm = (DaskSlurm(cores=slurm_cores, memory=slurm_memory, walltime=slurm_walltime, queue=slurm_partition,
                           account=slurm_account, jobs=slurm_jobs or min(len(tasks), workers if workers > 1
                                                                         else len(tasks)), host=dask_host)
                 if dask_slurm else None)
        single = len(tasks) == 1 and dask_address is None and slurm is None
        total = len(workload) if single else len(tasks)
        label = f"{workload.name} {tasks[0].spec.name}" + ("" if single else f" ({len(tasks)} seeds)")
        with progress_bar(total, label, quiet) as progress:
            results = run_tasks(tasks, workers=workers, dask_address=dask_address, dask_slurm=slurm,
                                progress=progress)
        write_models(results)
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise click.ClickException(" ".join(str(exc).split())) from exc
    if site is not None:
        click.echo(f"classes by the rule of {site.source}; VOs ({', '.join(site.vos)})")
    for r in results:
        for note in r.notes:
            click.echo(note)
        mean_w = f"{r.mean_w:.3f}" if r.mean_w is not None else "-"
        click.echo(f"{r.model_path}: {r.label}  jobs {r.jobs}  decisions {r.decisions}  chunks {r.chunks}  "
                   f"training mean W {mean_w}  {r.seconds:.1f} s")
