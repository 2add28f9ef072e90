"""``rlsched train``: train a learned policy on a trace and save the model the daemon loads."""

from __future__ import annotations

from pathlib import Path

import click

from rlsched.cli.sim import check_output_file, load_workload, progress_bar

#: What ``--window I/K`` (the former way to hold data out) became.
WINDOW_RETIRED = ("--window is replaced by --split TRAIN/VALIDATION/TEST (default 50/25/25): train learns on the train "
                  "window, selects and judges on the validation window, and evaluate reports the test window "
                  "(docs/workflow.md)")


def seed_list(seed: int, seeds: int) -> list[int]:
    return list(range(seed, seed + seeds))


@click.command("train")
@click.option("--workload", "workload_spec", required=True,
              help="The trace: an SWF path, a trace name (docs/traces.md) or 'lal' (the synthetic LAL-like one).")
@click.option("--policy", required=True, metavar="NAME[:k=v,...]",
              help="A learned registry policy with parameters (see `rlsched sim policies`).")
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="The model file (.npz): the seed and pass that score best on validation, with its verdict.")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="A daemon config: the jobs are classed by its class rule and mapped to its VO list, and the "
                   "model records both (the daemon refuses a model that does not match its config).")
@click.option("--split", "split_text", default="50/25/25", show_default=True, metavar="TRAIN/VALIDATION/TEST",
              help="Percentages of the jobs, in submit order: learn on the first, select the model and judge it "
                   "against every rule on the second; the third is left for `rlsched evaluate` (same --split).")
@click.option("--epochs", type=click.IntRange(min=1), default=3, show_default=True,
              help="Passes over the train window, the agent continuing; the best pass on validation is kept.")
@click.option("--mode", type=click.Choice(["gate", "boost"]), default=None,
              help="The mode to train and judge in (default: the config's [backend] mode; boost without one, "
                   "or for shadow).")
@click.option("--boost-base", default=None, metavar="fifo|multifactor[:k=v,...]",
              help="Boost mode: Slurm's own order under the boosted jobs (default fifo; e.g. "
                   "multifactor:slurm_conf=/etc/slurm/slurm.conf).")
@click.option("--objective", type=click.Choice(["bsld", "wait", "W"]), default=None,
              help="What selects the model and judges it (default: the config's [agent] objective, else bsld).")
@click.option("--class-weight", "class_weights", multiple=True, metavar="CLASS=W",
              help="Weigh a class's jobs W times in the objective (repeat; e.g. interactive=3).")
@click.option("--window", "window", default=None, hidden=True)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="The first seed.")
@click.option("--seeds", type=click.IntRange(min=1), default=1, show_default=True,
              help="Train this many seeds (SEED … SEED+N-1) and keep the best on validation.")
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
def train(workload_spec: str, policy: str, out: Path, config_path: Path | None, split_text: str, epochs: int,
          mode: str | None, boost_base: str | None, objective: str | None, class_weights: tuple[str, ...],
          window: str | None, seed: int,
          seeds: int,
          checkpoint_every: int, fresh: bool, cores: int | None, workers: int, dask_address: str | None,
          dask_slurm: bool, slurm_cores: int, slurm_memory: str, slurm_walltime: str, slurm_partition: str | None,
          slurm_account: str | None, slurm_jobs: int | None, dask_host: str | None, quiet: bool) -> None:
    """Train a learned policy on a trace, select it on validation, judge it against every rule and save it
    with its verdict (`[agent] model` in the daemon config)."""
    from rlsched.core.objective import parse_class_weights
    from rlsched.sim.policies import workload_vos
    from rlsched.workflow.site import load_site
    from rlsched.workflow.split import TimeSplit, site_choices
    from rlsched.workflow.train import DaskSlurm, judge_and_write, run_tasks, train_plan
    from rlsched.workflow.verdict import candidate_rules

    if window is not None:
        raise click.UsageError(WINDOW_RETIRED)
    check_output_file(out, "--out")          # before hours of training, not after
    try:
        split = TimeSplit.parse(split_text)
        choices = site_choices(config_path, mode, objective, parse_class_weights(class_weights), boost_base)
        site = load_site(config_path) if config_path is not None else None
        whole = load_workload(workload_spec, max_procs=cores)
        workload = split.window(whole, "train")
        tasks = train_plan(workload, policy, out, seeds=seed_list(seed, seeds), site=site,
                           checkpoint_every=checkpoint_every, cores=cores, fresh=fresh,
                           validation=split.window(whole, "validation"), epochs=epochs,
                           deployment=choices.deployment, objective=choices.objective)
        slurm = (DaskSlurm(cores=slurm_cores, memory=slurm_memory, walltime=slurm_walltime, queue=slurm_partition,
                           account=slurm_account, jobs=slurm_jobs or min(len(tasks), workers if workers > 1
                                                                         else len(tasks)), host=dask_host)
                 if dask_slurm else None)
        single = len(tasks) == 1 and dask_address is None and slurm is None
        total = len(workload) * epochs if single else len(tasks)
        label = f"{workload.name} {tasks[0].spec.name}" + ("" if single else f" ({len(tasks)} seeds)")
        with progress_bar(total, label, quiet) as progress:
            results = run_tasks(tasks, workers=workers, dask_address=dask_address, dask_slurm=slurm,
                                progress=progress)
        bounds = split.windows(whole)
        about = {"workload": whole.name, "jobs": len(whole), "split": split.to_dict(), "windows": bounds}
        validation = tasks[0].validation
        assert validation is not None
        rules, _ = candidate_rules(workload_vos(validation), choices.deployment)
        with progress_bar(len(rules), f"{workload.name} rules on validation", quiet) as progress:
            verdict = judge_and_write(results, tasks, out, about=about, progress=progress)
    except (ValueError, FileNotFoundError, OSError) as exc:
        raise click.ClickException(" ".join(str(exc).split())) from exc
    if site is not None:
        click.echo(f"classes by the rule of {site.source}; VOs ({', '.join(site.vos)})")
    click.echo(f"split {split.text()} of {len(whole)} jobs: "
               + ", ".join(f"{name} jobs {lo}–{hi - 1}" for name, (lo, hi) in
                           ((n, b["jobs"]) for n, b in bounds.items()) if hi > lo)
               + f"; mode {choices.deployment.label()}; objective {choices.objective.label()}")
    selected = verdict.extra["selected"]
    for r in results:
        for note in r.notes:
            click.echo(note)
        mean_w = f"{r.mean_w:.3f}" if r.mean_w is not None else "-"
        per_epoch = " ".join(f"{v:.4g}" for v in r.validation_scores)
        mark = "  <- selected" if r.seed == selected["seed"] else ""
        click.echo(f"seed {r.seed}: {r.label}  jobs {r.jobs} x {r.epochs} passes  chunks {r.chunks}  "
                   f"decisions {r.decisions}  "
                   f"training mean W {mean_w}  validation {choices.objective.name} by pass [{per_epoch}], best "
                   f"pass {r.best_epoch + 1}  {r.seconds:.1f} s{mark}")
    click.echo(f"{out}: the model of seed {selected['seed']}, pass {selected['epoch'] + 1}")
    click.echo(verdict.line())
