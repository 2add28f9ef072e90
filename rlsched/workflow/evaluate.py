"""``rlsched evaluate``: replay one trace under several policies and judge them on the same jobs.

What each policy sees (the same for all, what a live scheduler knows at submit): the jobs'
submit times, cores and requested times, their VO, and their class by a class rule on the time
limit (the daemon config's with ``--config``, else the default: interactive iff the time limit
is at most 900 s) — never the runtime.  The schedule is simulated (rules through the
simulator's native path, learned agents and saved models through their core agent,
:func:`rlsched.sim.policies.simulate_policy`), except ``recorded``: the start times the trace
recorded (when ``recorded`` is asked for, every policy runs on the jobs that have one).

The window (issue 23): with a split (:class:`rlsched.workflow.split.TimeSplit`, what ``rlsched
evaluate`` always passes) only the test window is replayed — never the jobs a model was trained
or selected on; a saved model that records its windows (``rlsched train``) is refused when the test
window overlaps them, and every row says which windows trained and selected it.  Every policy runs
in one mode (:class:`~rlsched.workflow.split.Deployment`: ``boost`` or ``gate``, what the daemon
will run), and the policies are ranked first by the site's objective (:mod:`rlsched.core.objective`).

Replicates: ``windows`` consecutive windows of equal job counts (each simulated from an empty
machine), and ``seeds`` seeds for the policies that draw random numbers (learned policies by
name, which learn online as they run; saved models run greedy and are deterministic).  With
``jitter`` N > 0 every window is also replayed N more times with its submits jittered
(:meth:`Workload.jittered` with seeds 1..N and ``jitter_s``), under every simulated policy alike: a
deterministic policy on one window then has a spread too (how much its score owes to the exact
second each job arrived).  ``recorded`` cannot be jittered (its start times are the trace's): it keeps
its recorded replays only.  A *replay* is one window with one jitter seed (0: as recorded); every
quantity is reported as its mean over the replicates (replays × seeds) with its standard deviation
and min–max.

Quantities (all from :mod:`rlsched.core.measures`): per group (all jobs, each class, each VO)
the job count, mean W, mean / median / p95 wait, mean bounded slowdown; per run the VO
fairness F (P-grid Eq. 2) of the cumulative delivered service, averaged over a uniform time
grid of the run (the final F is nearly the same for every policy: all jobs run in the end), the
utilization (P-grid Eq. 3 over the run), and each VO's share of the delivered core-seconds.
The target shares of F are the config's ``vo_shares``, else each VO's share of the work.

Judging: for each measure and group the best policy, the runner-up and the difference.  With
two replays or more (windows × (1 + jitter)), differences are paired by replay — the same window
with the same jitter seed, so the same jobs arriving at the same seconds: a tie when the replays do
not all have the same winner and the mean difference is within one standard deviation of the
per-replay differences.  With one replay, a tie when the difference is within the sum of the two
policies' seed standard deviations (two deterministic policies on one window tie only when equal).
With ``jitter``, ``recorded`` is judged against a policy on the replays both have (each window as
recorded), as without ``jitter``, and a win is never claimed for the row that those replays rank
behind (it is called a tie).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.agents import SchedulingAgent
from rlsched.core.classify import ClassRule
from rlsched.core.measures import (
    bounded_slowdown,
    core_seconds,
    fairness_of_service,
    group_stats,
    normalised_shares,
    responsiveness,
    service_by_vo,
    service_fraction,
    utilization,
)
from rlsched.core.objective import Objective
from rlsched.core.policies import PolicyError, PolicySpec, entry, load_model, read_policy_spec, read_verdict, resolve
from rlsched.core.view import JobClass
from rlsched.sim.engine import DEFAULT_OVERRUN, Overrun, Schedule
from rlsched.sim.policies import PolicyRun, simulate_policy, workload_vos
from rlsched.sim.schedulers import with_recorded_waits
from rlsched.sim.workload import Workload, with_class_rule
from rlsched.workflow.site import Site, site_view, trace_class_rule
from rlsched.workflow.split import Deployment, SplitError, TimeSplit, describe_window, simulate_in

#: Measures of a group: key, title, True when higher is better.
GROUP_MEASURES: tuple[tuple[str, str, bool], ...] = (
    ("mean_w", "mean W", True),
    ("mean_wait_s", "mean wait s", False),
    ("median_wait_s", "median wait s", False),
    ("p95_wait_s", "p95 wait s", False),
    ("mean_bsld", "bounded slowdown", False),
)
#: Measures of a whole run (reported on the ``all`` group).
RUN_MEASURES: tuple[tuple[str, str, bool], ...] = (
    ("fairness", "VO fairness F", True),
    ("utilization", "utilization", True),
)
#: Time-grid points of the fairness and share series.
GRID_POINTS = 200
RECORDED = "recorded"
#: ``--jitter-s``'s default: every submit moved by up to ±300 s (what rlsched/workflow/learning.py replays).
JITTER_S = 300.0
#: VOs shown one by one in report.md and the VO figure (the largest target shares); the rest are folded
#: into one "other" group (a supercomputer log's SWF group field gives 158 VOs).  results.json keeps them all.
SHOWN_VOS = 12
#: The group of the folded VOs (parentheses: no VO name from a trace or a config looks like it).
OTHER_VOS = "vo:(other VOs)"


@dataclass(frozen=True)
class Contender:
    """One ``--policy``: a registry policy by name, a saved model by path, or the recorded schedule."""

    label: str
    spec: PolicySpec | None
    model_path: Path | None = None
    #: Which windows of which trace trained and selected a saved model (set by :func:`evaluate`).
    provenance: str | None = None
    #: The mode the row ran in (set by :func:`evaluate`; None: the simulator's default, gate).
    mode: str | None = None

    @property
    def recorded(self) -> bool:
        return self.spec is not None and entry(self.spec.name).family == "replay"

    @property
    def seeded(self) -> bool:
        """Does it draw random numbers (a learned policy by name, learning online)?"""
        return self.model_path is None and self.spec is not None and entry(self.spec.name).family == "learned"

    def information(self, rule_text: str) -> str:
        """Which information this row uses (the report's promise that every policy sees the same)."""
        if self.recorded:
            return "the trace's recorded start times (what the site's scheduler did)"
        what = f"submit time, cores, requested time, VO, class by {rule_text}; simulated schedule"
        if self.mode is not None:
            what += f" in {self.mode} mode"
        if self.model_path is not None:
            return (
                what
                + f"; saved model {self.model_path} (greedy, not learning)"
                + (f"; {self.provenance}" if self.provenance else "")
            )
        if self.seeded:
            return what + "; learns online from the replay (EDF pretraining)"
        return what


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except OSError:  # a policy spec longer than a file name can be
        return False


def parse_contender(text: str) -> Contender:
    """``easy``, ``edf:w_target=0.5``, ``recorded`` or ``path/model.npz``; one-line errors."""
    if text.endswith(".npz") or _is_file(text):
        path = Path(text)
        if not path.is_file():
            raise PolicyError(f"model {text}: no such file")
        return Contender(path.stem, None, path)
    spec = resolve(text)
    label = RECORDED if entry(spec.name).family == "replay" else text
    return Contender(label, spec)


@dataclass
class Run:
    """One replicate of one contender: its schedule on one window (and seed, and jitter seed)."""

    contender: str
    window: int
    seed: int | None
    schedule: Schedule
    seconds: float
    #: The jitter seed of the window's submits (0: as recorded; see :func:`evaluate`'s ``jitter``).
    jitter: int = 0


@dataclass
class Evaluation:
    """Everything ``rlsched evaluate`` writes (see :func:`evaluate`)."""

    workload: str
    jobs: int
    cores: int
    windows: int
    seeds: int
    class_rule: str
    vos: tuple[str, ...]
    shares: tuple[float, ...]
    contenders: list[Contender]
    runs: list[Run] = field(default_factory=list)
    #: contender → group → measure → {mean, std, min, max, n, values}
    table: dict[str, dict[str, dict[str, dict[str, Any]]]] = field(default_factory=dict)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    fixed: dict[str, int] = field(default_factory=dict)
    #: The split and the window replayed (None: the whole workload given).
    split: TimeSplit | None = None
    window: dict[str, Any] | None = None
    deployment: Deployment | None = None
    objective: Objective = field(default_factory=Objective)
    #: Jittered replays of each window (seeds 1..jitter) and their spread in seconds (0: none, as recorded).
    jitter: int = 0
    jitter_s: float = JITTER_S

    @property
    def replays(self) -> int:
        """Replays of each simulated policy (and seed): each window as recorded and ``jitter`` times jittered."""
        return self.windows * (self.jitter + 1)

    def replay(self, run: Run) -> int:
        """The index of ``run``'s replay, the same for every policy (window-major: window × (jitter + 1) +
        jitter seed) — what the tie rule pairs on."""
        return run.window * (self.jitter + 1) + run.jitter


def rule_text(rule: ClassRule) -> str:
    parts = []
    if rule.interactive_max_time_s is not None:
        parts.append(f"time limit <= {rule.interactive_max_time_s:g} s")
    if rule.interactive_qos:
        parts.append("QOS in " + "/".join(sorted(rule.interactive_qos)))
    if rule.interactive_partitions:
        parts.append("partition in " + "/".join(sorted(rule.interactive_partitions)))
    return "the class rule (interactive iff " + (" or ".join(parts) or "never") + ")"


def split_windows(workload: Workload, k: int) -> list[Workload]:
    """``k`` consecutive windows of (nearly) equal job counts."""
    if k < 1:
        raise ValueError(f"--windows must be >= 1, got {k}")
    if len(workload) < k:
        raise ValueError(f"workload {workload.name!r} has {len(workload)} jobs, fewer than {k} windows")
    bounds = np.linspace(0, len(workload), k + 1).round().astype(int)
    return [workload.window(bounds[i], bounds[i + 1], name=f"{workload.name}[w{i}]") for i in range(k)]


def target_shares(workload: Workload) -> tuple[float, ...]:
    """The config's VO shares, else each VO's share of the work."""
    n = len(workload_vos(workload))
    if workload.vo_shares is not None and len(workload.vo_shares) == n:
        return tuple(float(x) for x in normalised_shares(workload.vo_shares))
    work = np.bincount(workload.vo, weights=core_seconds(workload.run, workload.procs), minlength=n)
    if work.sum() <= 0:
        return tuple([1.0 / n] * n)
    return tuple(float(x) for x in work / work.sum())


def folded_vos(shares: Sequence[float]) -> tuple[list[int], list[int]]:
    """The VOs shown one by one (the :data:`SHOWN_VOS` largest target shares, largest first) and those folded
    into :data:`OTHER_VOS` (none when there are at most :data:`SHOWN_VOS` + 1: folding one VO hides nothing;
    then every VO is shown, in VO order)."""
    n = len(shares)
    if n <= SHOWN_VOS + 1:
        return list(range(n)), []
    by_share = sorted(range(n), key=lambda k: (-shares[k], k))
    return by_share[:SHOWN_VOS], sorted(by_share[SHOWN_VOS:])


def run_measures(
    schedule: Schedule, shares: Sequence[float], vos: Sequence[str], objective: Objective | None = None
) -> dict[str, dict[str, Any]]:
    """The measures of one schedule: group → measure → value (see the module docstring); with an
    ``objective``, its value on the whole run as ``all``'s ``objective``."""
    w = schedule.workload
    wait, run = schedule.wait, schedule.run
    resp = responsiveness(run, wait)
    bsld = bounded_slowdown(run, wait)
    groups: dict[str, np.ndarray] = {
        "all": np.ones(len(w), dtype=bool),
        "interactive": w.job_class == int(JobClass.INTERACTIVE),
        "batch": w.job_class == int(JobClass.BATCH),
    }
    for k, name in enumerate(vos):
        groups[f"vo:{name}"] = w.vo == k
    folded = folded_vos(shares)[1]
    if folded:
        groups[OTHER_VOS] = np.isin(w.vo, folded)
    work = core_seconds(run, w.procs)
    out: dict[str, dict[str, Any]] = {}
    for name, mask in groups.items():
        g = group_stats(resp[mask], wait[mask], bsld[mask])
        out[name] = {
            "jobs": g.jobs,
            "mean_w": g.mean_w,
            "mean_wait_s": g.mean_wait_s,
            "median_wait_s": g.median_wait_s,
            "p95_wait_s": g.p95_wait_s,
            "mean_bsld": g.mean_bounded_slowdown,
        }
        if name.startswith("vo:"):
            total = float(work.sum())
            out[name]["cpu_share"] = float(work[mask].sum() / total) if total > 0 else None
    t0 = float(w.submit.min()) if len(w) else 0.0
    t1 = float(schedule.end.max()) if len(w) else 0.0
    out["all"]["utilization"] = utilization(float(work.sum()), schedule.cores, t1 - t0)
    grid = fairness_grid(schedule)
    service = service_by_vo(grid, schedule.start, schedule.end, w.procs, w.vo, len(vos))
    fair = fairness_of_service(service, np.asarray(shares, dtype=np.float64))
    delivered = service.sum(axis=1) > 0
    out["all"]["fairness"] = float(fair[delivered].mean()) if delivered.any() else None
    if objective is not None:
        value = objective.score(run, wait, w.job_class)
        out["all"]["objective"] = value if math.isfinite(value) else None
    return out


def fairness_grid(schedule: Schedule) -> np.ndarray:
    w = schedule.workload
    if not len(w):
        return np.zeros(0)
    return np.linspace(float(w.submit.min()), float(schedule.end.max()), GRID_POINTS)


def _spread(values: list[float | None]) -> dict[str, Any]:
    real = [v for v in values if v is not None and math.isfinite(v)]
    if not real:
        return {"mean": None, "std": None, "min": None, "max": None, "n": 0, "values": values}
    arr = np.asarray(real)
    return {
        "mean": float(arr.mean()),
        "std": float(arr.std()),
        "min": float(arr.min()),
        "max": float(arr.max()),
        "n": len(real),
        "values": values,
    }


def prepare(workload: Workload, contenders: Sequence[Contender], site: Site | None) -> tuple[Workload, ClassRule]:
    """The workload every contender sees: classed by the rule, VOs by the site, recorded waits if needed."""
    rule = site.class_rule if site is not None else trace_class_rule(workload)
    seen = site_view(workload, site) if site is not None else with_class_rule(workload, rule)
    if any(c.recorded for c in contenders):
        if not seen.has_recorded_waits:
            raise ValueError(f"policy {RECORDED!r}: workload {workload.name!r} records no start times")
        seen = with_recorded_waits(seen)
    return seen, rule


def _names(names: Sequence[str], most: int = SHOWN_VOS) -> str:
    """``(a, b, c)``, or the first ``most`` and the count when there are more (one line, still readable)."""
    if len(names) <= most:
        return "(" + ", ".join(names) + ")"
    return "(" + ", ".join(names[:most]) + f", … {len(names)} VOs)"


def check_model(path: Path, vos: Sequence[str], rule: ClassRule | None, site: Site | None, workload: str) -> None:
    """Refuse a saved model built for other VOs (a learned one) or another class rule, before any replay: one
    line naming both sides — the daemon config's with ``--config``, else the trace's own (there is no config to
    blame)."""
    spec, _ = read_policy_spec(path)
    if site is not None:
        has, fix = f"the config {site.source} has", ""
    else:
        has, fix = f"the trace {workload} has", " (no --config: give the daemon config the model was trained with)"
    # A scored model (direct policy search) reads no VO column: only a learned model is bound to the VOs.
    if entry(spec.name).family == "learned" and tuple(spec.vos) != tuple(vos):
        raise PolicyError(f"model {path} was built for VOs {_names(spec.vos)}; {has} {_names(vos)}{fix}")
    if rule is not None and spec.class_rule is not None and dict(spec.class_rule) != rule.to_dict():
        built = rule_text(ClassRule.from_dict(spec.class_rule))
        raise PolicyError(f"model {path} was built for {built}; {has} {rule_text(rule)}{fix}")


def evaluate(
    workload: Workload,
    contenders: Sequence[Contender],
    *,
    site: Site | None = None,
    windows: int = 1,
    seeds: int = 1,
    seed: int = 0,
    cores: int | None = None,
    overrun: Overrun = DEFAULT_OVERRUN,
    progress: Callable[[int, int], None] | None = None,
    split: TimeSplit | None = None,
    deployment: Deployment | None = None,
    objective: Objective | None = None,
    jitter: int = 0,
    jitter_s: float = JITTER_S,
) -> Evaluation:
    """Replay ``workload`` (its test window with a ``split``) under each contender on every window (and seed);
    tables and verdicts.  ``deployment``: the mode every policy runs in (None: the simulator's, gate).
    ``jitter``: each window also replayed that many times with its submits moved by up to ±``jitter_s``
    (:meth:`Workload.jittered`, seeds 1..jitter) under every simulated contender (not ``recorded``).

    ``progress(jobs_done, jobs_total)``: jobs replayed so far over all runs (a run's jobs as it goes)."""
    if not contenders:
        raise ValueError("no policy to evaluate: give --policy at least once")
    labels = [c.label for c in contenders]
    if len(set(labels)) != len(labels):
        raise ValueError(f"a policy is given twice: {', '.join(labels)}")
    if seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {seeds}")
    if jitter < 0:
        raise ValueError(f"--jitter must be >= 0, got {jitter}")
    if not jitter_s >= 0:  # also refuses NaN
        raise ValueError(f"--jitter-s must be >= 0, got {jitter_s:g}")
    window: dict[str, Any] | None = None
    trace = workload.name  # what the one-line errors name (the window's name is trace[test])
    if split is not None:
        window = {"name": "test", **split.windows(workload)["test"], "of_jobs": len(workload)}
        contenders = [
            replace(c, provenance=model_provenance(c.model_path, workload, split)) if c.model_path is not None else c
            for c in contenders
        ]
        workload = split.window(workload, "test")
    mode = deployment.mode if deployment is not None else None
    contenders = [c if c.recorded else replace(c, mode=mode) for c in contenders]
    seen, rule = prepare(workload, contenders, site)
    vos = workload_vos(seen)
    for c in contenders:
        if c.model_path is not None:
            check_model(c.model_path, vos, rule, site, trace)
    shares = target_shares(seen)
    parts = split_windows(seen, windows)
    ev = Evaluation(
        workload.name,
        len(seen),
        cores or seen.max_procs,
        windows,
        seeds,
        rule_text(rule),
        vos,
        shares,
        list(contenders),
        dropped=dict(seen.dropped),
        fixed=dict(seen.fixed),
        split=split,
        window=window,
        deployment=deployment,
        objective=objective or Objective(),
        jitter=jitter,
        jitter_s=jitter_s,
    )
    _replay_all(ev, parts, seed, rule, cores, overrun, progress)
    tabulate(ev)
    return ev


def replays_per_window(c: Contender, seeds: int, jitter: int) -> int:
    """How many times ``c`` replays each window: its seeds (a learned policy by name) times the window as
    recorded and its ``jitter`` jittered replays (``recorded`` only as recorded: it cannot be jittered)."""
    return (seeds if c.seeded else 1) * (1 if c.recorded else jitter + 1)


def _replay_all(
    ev: Evaluation,
    parts: Sequence[Workload],
    seed: int,
    rule: ClassRule,
    cores: int | None,
    overrun: Overrun,
    progress: Callable[[int, int], None] | None,
) -> None:
    """Every contender on every window (as recorded, then each jitter seed) and seed: ``ev.runs``."""
    done = 0
    # The jobs every run replays (runs of the same window replay the same jobs, jittered or not): the progress's
    # total.
    per_window = sum(replays_per_window(c, ev.seeds, ev.jitter) for c in ev.contenders)
    jobs_total = sum(len(part) for part in parts) * per_window

    def run_progress(before: int) -> Callable[[int], None] | None:
        return None if progress is None else lambda jobs: progress(before + jobs, jobs_total)

    for c in ev.contenders:
        for k, part in enumerate(parts):
            for j in range(1 if c.recorded else ev.jitter + 1):
                # Jitter seed j >= 1: the same jobs, each submit moved by up to ±jitter_s (the same seed for every
                # contender, so replay (k, j) is the same arrivals for all of them: what the tie rule pairs).
                view = part if j == 0 else part.jittered(j, ev.jitter_s, name=f"{part.name}[jitter {j}]")
                for s in range(seed, seed + ev.seeds) if c.seeded else [None]:
                    t = time.perf_counter()
                    ran = _run_contender(c, view, s, ev.vos, rule, cores, overrun, ev.deployment, run_progress(done))
                    ev.runs.append(Run(c.label, k, s, ran.schedule, time.perf_counter() - t, jitter=j))
                    done += len(view)
                    if progress is not None:
                        progress(done, jobs_total)


def _run_contender(
    c: Contender,
    part: Workload,
    s: int | None,
    vos: tuple[str, ...],
    rule: ClassRule,
    cores: int | None,
    overrun: Overrun,
    deployment: Deployment | None,
    progress: Callable[[int], None] | None,
) -> PolicyRun:
    """One replicate: a saved model (a fresh greedy copy), a policy by name, or the recorded schedule."""
    if c.model_path is not None:
        # A fresh copy per window: a saved model is evaluated as saved, greedy.  A scored model (direct policy
        # search, rlsched.sim.search) runs from its spec alone, as `sim run` runs it.
        loaded, spec = load_model(
            c.model_path,
            expect_vos=vos,
            expect_class_rule=rule.to_dict(),
            mode=deployment.mode if deployment is not None else "gate",
            total_cores=cores or part.max_procs,
            start_s=float(part.submit[0]) if len(part) else 0.0,
        )
        agent = None
        if isinstance(loaded, SchedulingAgent):
            loaded.learn = False
            agent = loaded
    else:
        assert c.spec is not None
        spec, agent = (c.spec.with_params(seed=s) if s is not None else c.spec), None
    if deployment is None or c.recorded:
        return simulate_policy(part, spec, cores, overrun=overrun, agent=agent, name=c.label, progress=progress)
    return simulate_in(deployment, part, spec, cores, overrun=overrun, agent=agent, name=c.label, progress=progress)


def recorded_split(contenders: Sequence[Contender]) -> TimeSplit:
    """The split the saved models among ``contenders`` were trained with (the default when none records one);
    a one-line error when two record different ones."""
    found: dict[str, TimeSplit] = {}
    for c in contenders:
        if c.model_path is None:
            continue
        verdict = read_verdict(c.model_path)
        if verdict is not None and isinstance(verdict.get("split"), dict):
            found[str(c.model_path)] = TimeSplit.from_dict(verdict["split"])
    splits = set(found.values())
    if len(splits) > 1:
        raise SplitError(
            "the models were trained with different splits ("
            + ", ".join(f"{path}: {split.text()}" for path, split in found.items())
            + "): evaluate them separately"
        )
    return splits.pop() if splits else TimeSplit()


def model_provenance(path: Path, workload: Workload, split: TimeSplit) -> str:
    """Which windows trained and selected the model at ``path``; a one-line error when the test window of
    ``split`` overlaps them (the same trace: same name and job count)."""
    verdict = read_verdict(path)
    if verdict is None or "windows" not in verdict:
        return (
            "trained on unrecorded windows (a model saved before models recorded them): nothing shows the "
            "test window is out of sample"
        )
    trained = verdict["windows"]
    where = (
        f"trained on {describe_window(trained, 'train')}, selected on {describe_window(trained, 'validation')}"
        f" of {verdict.get('workload')} ({verdict.get('jobs')} jobs, split "
        f"{TimeSplit.from_dict(verdict['split']).text() if 'split' in verdict else '?'})"
    )
    if verdict.get("workload") != workload.name or verdict.get("jobs") != len(workload):
        return where + f": another trace than {workload.name} ({len(workload)} jobs)"
    lo, hi = split.bounds(len(workload))["test"]
    for name in ("train", "validation"):
        used_lo, used_hi = trained[name]["jobs"]
        if lo < used_hi and used_lo < hi:
            raise SplitError(
                f"model {path} was {'trained' if name == 'train' else 'selected'} on jobs "
                f"{used_lo}–{used_hi - 1} of {workload.name}, which the test window of --split "
                f"{split.text()} (jobs {lo}–{hi - 1}) overlaps: evaluate it with the split it was "
                "trained with (leave --split out)"
            )
    return where


def parts_of(ev: Evaluation, label: str) -> list[Run]:
    return [r for r in ev.runs if r.contender == label]


def first_seed(runs: list[Run]) -> list[Run]:
    """The runs of the first seed (all runs of an unseeded policy) on the windows as recorded (not the jittered
    replays): one series per window for the figures."""
    seeds = [r.seed for r in runs if r.seed is not None]
    return [r for r in runs if (r.seed is None or r.seed == min(seeds)) and r.jitter == 0]


def tabulate(ev: Evaluation) -> None:
    """Fill ``ev.table`` (means and spreads over replicates) and ``ev.verdicts``."""
    # Each run keyed by its replay (window and jitter seed: the same for every policy), what the tie rule pairs on.
    per_run: dict[str, list[tuple[int, dict[str, dict[str, Any]]]]] = {}
    for r in ev.runs:
        per_run.setdefault(r.contender, []).append(
            (ev.replay(r), run_measures(r.schedule, ev.shares, ev.vos, ev.objective))
        )
    ev.table = {}
    for label, runs in per_run.items():
        groups = runs[0][1].keys()
        ev.table[label] = {
            g: {m: _spread([measures[g].get(m) for _, measures in runs]) for m in runs[0][1][g]} for g in groups
        }
        # Runs per window (seeds × jittered replays, which keep every job): the jobs counted once per window.
        per_window = len(runs) // max(len({r.window for r in ev.runs if r.contender == label}), 1)
        for g in groups:
            ev.table[label][g]["jobs"]["total"] = sum(int(m[g]["jobs"]) for _, m in runs) // max(per_window, 1)

    # Ranked by the site's objective first: the table lists the best policy first, its verdict comes first.
    def rank(label: str) -> float:
        mean = ev.table[label]["all"].get("objective", {}).get("mean")
        if mean is None:
            return math.inf
        return -mean if ev.objective.higher_is_better else mean

    ev.table = {label: ev.table[label] for label in sorted(ev.table, key=rank)}
    ev.verdicts = []
    objective_verdict = judge(ev, per_run, "all", "objective", ev.objective.higher_is_better)
    if objective_verdict is not None:
        ev.verdicts.append(
            {"group": "all", "measure": "objective", "title": f"objective {ev.objective.label()}", **objective_verdict}
        )
    for group in ("all", "interactive", "batch"):
        for key, title, higher in GROUP_MEASURES + (RUN_MEASURES if group == "all" else ()):
            verdict = judge(ev, per_run, group, key, higher)
            if verdict is not None:
                ev.verdicts.append({"group": group, "measure": key, "title": title, **verdict})


def _replay_values(runs: list[tuple[int, dict[str, dict[str, Any]]]], group: str, key: str) -> dict[int, list[float]]:
    """Each replay's finite values (one per seed)."""
    by_replay: dict[int, list[float]] = {}
    for replay, measures in runs:
        v = measures.get(group, {}).get(key)
        if v is not None and math.isfinite(v):
            by_replay.setdefault(replay, []).append(float(v))
    return by_replay


def _replay_means(runs: list[tuple[int, dict[str, dict[str, Any]]]], group: str, key: str) -> dict[int, float]:
    """Each replay's mean over the seeds (a replay: a window, with ``jitter`` a window and a jitter seed)."""
    return {w: float(np.mean(v)) for w, v in _replay_values(runs, group, key).items()}


def judge(
    ev: Evaluation, per_run: dict[str, list[tuple[int, dict[str, dict[str, Any]]]]], group: str, key: str, higher: bool
) -> dict[str, Any] | None:
    """Best and runner-up on one measure, their difference, and whether it is inside the spread."""
    scored = [
        (label, ev.table[label][group][key])
        for label in ev.table
        if group in ev.table[label] and ev.table[label][group][key]["mean"] is not None
    ]
    if len(scored) < 1:
        return None
    scored.sort(key=lambda item: item[1]["mean"], reverse=higher)
    best, best_s = scored[0]
    if len(scored) == 1:
        return {
            "best": best,
            "value": best_s["mean"],
            "runner_up": None,
            "diff": None,
            "rel": None,
            "tie": False,
            "tied_with": [],
        }
    tied_with = []
    for other, other_s in scored[1:]:
        if _inside_spread(ev, per_run, group, key, best, other, best_s, other_s, higher):
            tied_with.append(other)
    second, second_s = scored[1]
    diff = abs(best_s["mean"] - second_s["mean"])
    rel = diff / abs(second_s["mean"]) if second_s["mean"] else None
    return {
        "best": best,
        "value": best_s["mean"],
        "runner_up": second,
        "runner_up_value": second_s["mean"],
        "diff": diff,
        "rel": rel,
        "tie": second in tied_with,
        "tied_with": tied_with,
    }


def _inside_spread(
    ev: Evaluation,
    per_run: dict[str, list[tuple[int, dict[str, dict[str, Any]]]]],
    group: str,
    key: str,
    a: str,
    b: str,
    sa: dict[str, Any],
    sb: dict[str, Any],
    higher: bool,
) -> bool:
    """Is ``a`` (ranked first) ahead of ``b`` only within the spread?  Paired by replay (same window, same jitter
    seed) with two replays or more; with one, within the sum of the seed standard deviations."""
    wa, wb = _replay_means(per_run[a], group, key), _replay_means(per_run[b], group, key)
    if ev.jitter > 0 and set(wa) != set(wb):
        # One side has replays the other lacks (`recorded`: never jittered): like for like on the ones both have.
        return _inside_on_common(per_run[a], per_run[b], group, key, higher)
    if ev.replays >= 2:
        common = sorted(set(wa) & set(wb))
        if len(common) >= 2:
            return _paired_tie(np.array([wa[w] - wb[w] for w in common]))
    return bool(abs(sa["mean"] - sb["mean"]) <= (sa["std"] or 0.0) + (sb["std"] or 0.0))


def _paired_tie(d: np.ndarray) -> bool:
    """A tie on paired per-replay differences: not every replay has the same winner and the mean difference is
    within their standard deviation."""
    if np.all(d > 0) or np.all(d < 0):
        return False  # every replay has the same winner: a real difference, however small
    return bool(abs(d.mean()) <= d.std())


def _inside_on_common(
    runs_a: list[tuple[int, dict[str, dict[str, Any]]]],
    runs_b: list[tuple[int, dict[str, dict[str, Any]]]],
    group: str,
    key: str,
    higher: bool,
) -> bool:
    """``a`` (ranked first on its mean over all its replays) against ``b`` on only the replays both have — with
    ``jitter``, ``recorded`` against a simulated policy on the windows as recorded, exactly as without ``jitter``
    (``recorded`` has no jittered spread to lend).  A tie, too, when those replays do not put ``a`` ahead: the
    ranking then rests on replays the other side does not have."""
    va, vb = _replay_values(runs_a, group, key), _replay_values(runs_b, group, key)
    common = sorted(set(va) & set(vb))
    if not common:
        return True  # nothing like for like: no win can be claimed
    d = np.array([np.mean(va[r]) - np.mean(vb[r]) for r in common]) * (1.0 if higher else -1.0)
    if d.mean() <= 0:
        return True
    if len(common) >= 2:
        return _paired_tie(d)
    (r,) = common
    return bool(d[0] <= np.std(va[r]) + np.std(vb[r]))


# ------------------------------------------------------------------------------ output
def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.3f}"


def _cell(s: dict[str, Any], key: str = "") -> str:
    if key == "jobs":
        # Jobs are counted, not measured: the total over the windows (of one seed).
        return f"{s['total']:,}" if s.get("total") is not None else "-"
    if s["mean"] is None:
        return "-"
    if s["n"] <= 1:
        return _fmt(s["mean"])
    return f"{_fmt(s['mean'])} ± {_fmt(s['std'])}"


TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("jobs", "jobs"),
    ("mean_w", "mean W"),
    ("mean_wait_s", "mean wait s"),
    ("median_wait_s", "median wait s"),
    ("p95_wait_s", "p95 wait s"),
    ("mean_bsld", "bsld"),
    ("fairness", "F"),
    ("utilization", "util"),
    ("cpu_share", "CPU share"),
)


def table_rows(ev: Evaluation, groups: Sequence[str]) -> list[list[str]]:
    rows = []
    for label in ev.table:
        for g in groups:
            if g not in ev.table[label]:
                continue
            stats = ev.table[label][g]
            rows.append([label, g] + [_cell(stats[k], k) if k in stats else "" for k, _ in TABLE_COLUMNS])
    return rows


def text_table(ev: Evaluation, groups: Sequence[str] = ("all", "interactive", "batch")) -> str:
    """The table ``rlsched evaluate`` prints (mean ± std over the replicates)."""
    head = ["policy", "group"] + [title for _, title in TABLE_COLUMNS]
    rows = [head, *table_rows(ev, groups)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) if i < 2 else cell.rjust(widths[i]) for i, cell in enumerate(r)) for r in rows
    )


def markdown_table(ev: Evaluation, groups: Sequence[str]) -> str:
    head = ["policy", "group"] + [title for _, title in TABLE_COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in table_rows(ev, groups)]
    return "\n".join(lines)


def verdict_lines(ev: Evaluation) -> list[str]:
    lines = []
    for v in ev.verdicts:
        where = f"{v['title']} ({v['group']})"
        if v["runner_up"] is None:
            lines.append(f"- {where}: only {v['best']} ({_fmt(v['value'])})")
        elif v["tie"]:
            lines.append(
                f"- {where}: tie — {', '.join([v['best'], *v['tied_with']])} within the spread "
                f"(best {v['best']} {_fmt(v['value'])}, {v['runner_up']} {_fmt(v['runner_up_value'])})"
            )
        else:
            rel = f", {100 * v['rel']:.1f} %" if v["rel"] is not None else ""
            lines.append(
                f"- {where}: **{v['best']}** {_fmt(v['value'])}, ahead of {v['runner_up']} "
                f"{_fmt(v['runner_up_value'])} by {_fmt(v['diff'])}{rel}"
            )
    return lines


def window_line(ev: Evaluation) -> str:
    """Which jobs were replayed, in which mode, ranked by what (the first line under every table)."""
    if ev.split is not None and ev.window is not None:
        lo, hi = ev.window["jobs"]
        where = (
            f"test window only: jobs {lo}–{hi - 1} of {ev.window['of_jobs']} (split {ev.split.text()}: "
            "train/validation/test; no saved model was trained or selected on these jobs)"
        )
    else:
        where = "the whole workload given (no train/validation/test split)"
    mode = ev.deployment.label() if ev.deployment is not None else "gate (the simulator's default)"
    line = f"Replayed: {where}. Mode: {mode} for every simulated row. Ranked by the objective {ev.objective.label()}."
    return line + (f" {jitter_text(ev)}." if ev.jitter else "")


def jitter_text(ev: Evaluation) -> str:
    """How many jittered replays each window had, with which spread (``--jitter``), and what ``recorded`` got."""
    seeds = "seed 1" if ev.jitter == 1 else f"seeds 1–{ev.jitter}"
    text = (
        f"Jitter: each window replayed as recorded and {ev.jitter} more time{'s' if ev.jitter > 1 else ''} with "
        f"every submit moved by up to ±{ev.jitter_s:g} s ({seeds}), under every simulated row"
    )
    if _has_recorded(ev):
        text += f"; {RECORDED} cannot be jittered (its start times are the trace's) and has its recorded replays only"
    return text


def _has_recorded(ev: Evaluation) -> bool:
    return any(c.recorded for c in ev.contenders)


def _tie_text(ev: Evaluation) -> str:
    """How report.md calls a tie (the rule of :func:`_inside_spread`)."""
    if not ev.jitter:
        return (
            "A difference within the spread is called a tie: with several windows, when the windows do not all "
            "have the same winner and the mean of the per-window differences is within their standard "
            "deviation; with one window, within the sum of the seed standard deviations."
        )
    text = (
        "A difference within the spread is called a tie. The replays are paired: each window as recorded and "
        "with each jitter seed is the same jobs arriving at the same seconds for every simulated policy; it is "
        "a tie when the replays do not all have the same winner and the mean of the per-replay differences is "
        "within their standard deviation; with one replay, within the sum of the seed standard deviations."
    )
    if _has_recorded(ev):
        text += (
            f" {RECORDED} has no jittered replays: it is compared with a policy only on the windows as recorded "
            "(the replays both have), as without --jitter, and when those rank the two the other way round from "
            "the table's means, neither is called the winner (a tie)."
        )
    return text


def report_markdown(ev: Evaluation, figures: Sequence[str]) -> str:
    shown, folded = folded_vos(ev.shares)
    vo_groups = [f"vo:{ev.vos[k]}" for k in shown] + ([OTHER_VOS] if folded else [])
    targets = [f"{ev.vos[k]} {ev.shares[k]:.3f}" for k in shown]
    if folded:
        targets.append(f"{len(folded)} other VOs {sum(ev.shares[k] for k in folded):.3f}")
    spread = (f"{ev.windows} consecutive windows" if ev.windows > 1 else "one window") + (
        f", {ev.seeds} seeds for the learned policies run by name" if ev.seeds > 1 else ""
    )
    if ev.jitter:
        spread += f", each window as recorded and {ev.jitter} times jittered (±{ev.jitter_s:g} s)" + (
            f"; not {RECORDED}" if _has_recorded(ev) else ""
        )
    parts = [
        f"# Evaluation on {ev.workload}",
        "",
        f"{ev.jobs} jobs, {ev.cores} cores, replicates: {spread}. Cells: mean ± standard deviation over the "
        "replicates (a single value: one replicate). W = run / (run + wait); bsld: bounded slowdown (τ = 10 s); "
        "F: VO fairness of the cumulative delivered service, averaged over the run; util: utilization; CPU "
        "share: the VO's share of the delivered core-seconds.",
        "",
        f"Target shares of F: {', '.join(targets)}.",
        "",
        window_line(ev),
        "",
        "## What each policy sees",
        "",
    ]
    parts += [f"- **{c.label}**: {c.information(ev.class_rule)}" for c in ev.contenders]
    if ev.dropped:
        parts += ["", "Jobs left out of the trace: " + ", ".join(f"{k} {v}" for k, v in sorted(ev.dropped.items()))]
    if ev.fixed.get("req_time_from_runtime"):
        parts += [
            "",
            f"{ev.fixed['req_time_from_runtime']} jobs record no requested time: the trace reader gave them "
            "their runtime as the request, so for them every policy (and the class rule) sees the runtime.",
        ]
    parts += [
        "",
        "## Best policy on each measure",
        "",
        _tie_text(ev),
        "",
    ]
    parts += verdict_lines(ev)
    parts += ["", "## By class", "", markdown_table(ev, ("all", "interactive", "batch")), "", "## By VO", ""]
    if folded:
        parts += [
            f"{len(ev.vos)} VOs: the {len(shown)} with the largest target shares, the other {len(folded)} "
            f"together as {OTHER_VOS} (each VO is in results.json).",
            "",
        ]
    parts += [markdown_table(ev, vo_groups), ""]
    if figures:
        parts += ["## Figures", ""] + [f"![{name}]({name})" for name in figures] + [""]
    return "\n".join(parts)


def to_json(ev: Evaluation) -> dict[str, Any]:
    return {
        "workload": ev.workload,
        "jobs": ev.jobs,
        "cores": ev.cores,
        "windows": ev.windows,
        "seeds": ev.seeds,
        "class_rule": ev.class_rule,
        "vos": list(ev.vos),
        "shares": list(ev.shares),
        "dropped": ev.dropped,
        "fixed": ev.fixed,
        "split": ev.split.to_dict() if ev.split is not None else None,
        "window": ev.window,
        "mode": ev.deployment.to_dict() if ev.deployment is not None else None,
        "objective": ev.objective.to_dict(),
        **(_jitter_json(ev) if ev.jitter else {}),
        "policies": [
            {
                "label": c.label,
                "policy": c.spec.label() if c.spec is not None else None,
                "model": str(c.model_path) if c.model_path is not None else None,
                "mode": c.mode,
                "trained": c.provenance,
                "information": c.information(ev.class_rule),
            }
            for c in ev.contenders
        ],
        "runs": [_run_json(ev, r) for r in ev.runs],
        "table": ev.table,
        "verdicts": ev.verdicts,
    }


def _run_json(ev: Evaluation, r: Run) -> dict[str, Any]:
    """One run in results.json; its jitter seed only with ``--jitter`` (0: the window as recorded)."""
    out: dict[str, Any] = {"policy": r.contender, "window": r.window, "seed": r.seed}
    if ev.jitter:
        out["jitter"] = r.jitter
    out["seconds"] = r.seconds
    return out


def _jitter_json(ev: Evaluation) -> dict[str, Any]:
    """results.json's ``jitter`` (only with ``--jitter``: without it results.json is as it always was)."""
    return {
        "jitter": {
            "replays": ev.jitter,
            "spread_s": ev.jitter_s,
            "seeds": list(range(1, ev.jitter + 1)),
            "not_jittered": [c.label for c in ev.contenders if c.recorded],
            "text": jitter_text(ev),
        }
    }


def save_figures(ev: Evaluation, out: Path) -> list[str]:
    """Wait CDF per class, F over time, per-VO share over time (PNG, Agg)."""
    from rlsched.sim.experiments.harness import pyplot, save_figure

    plt = pyplot()
    names = []
    origin = min(float(r.schedule.workload.submit.min()) for r in ev.runs if len(r.schedule.workload))
    labels = [c.label for c in ev.contenders]
    colors = {label: plt.get_cmap("tab10")(i % 10) for i, label in enumerate(labels)}
    # Wait CDF per class, all replicates of a policy pooled.
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, (cls_name, cls) in zip(
        axes, (("interactive", JobClass.INTERACTIVE), ("batch", JobClass.BATCH)), strict=True
    ):
        for label in labels:
            waits = np.concatenate(
                [r.schedule.wait[r.schedule.workload.job_class == int(cls)] for r in parts_of(ev, label)]
            )
            if waits.size:
                x = np.sort(np.maximum(waits, 0.0)) + 1.0
                ax.plot(x, np.arange(1, x.size + 1) / x.size, label=label, color=colors[label])
        ax.set_xscale("log")
        ax.set_xlabel("wait + 1 s")
        ax.set_title(f"{cls_name} jobs")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of jobs")
    axes[0].legend(fontsize=8)
    names.append(save_figure(fig, out / "wait_cdf.png"))
    # F over time: each window's series on the trace's time axis (first seed).
    fig, ax = plt.subplots(figsize=(10, 4))
    shares = np.asarray(ev.shares)
    for label in labels:
        first = True
        for r in first_seed(parts_of(ev, label)):
            grid = fairness_grid(r.schedule)
            w = r.schedule.workload
            service = service_by_vo(grid, r.schedule.start, r.schedule.end, w.procs, w.vo, len(ev.vos))
            # Before anything is delivered F is 0 by definition: not a moment of unfairness, left out.
            fair = np.where(service.sum(axis=1) > 0, fairness_of_service(service, shares), np.nan)
            ax.plot((grid - origin) / 86400, fair, color=colors[label], label=label if first else None)
            first = False
    ax.set_xlabel("days")
    ax.set_ylabel("F (cumulative service)")
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    names.append(save_figure(fig, out / "fairness_over_time.png"))
    names.append(save_figure(vo_share_figure(ev, origin), out / "vo_share_over_time.png"))
    return names


def vo_share_figure(ev: Evaluation, origin: float) -> Any:
    """Per-VO share of the service delivered in each grid interval, one panel per policy: the
    :data:`SHOWN_VOS` largest target shares one by one, the rest as one grey "other" band, each its own
    colour, the legend beside the panels (not over them)."""
    from rlsched.sim.experiments.harness import pyplot

    plt = pyplot()
    labels = [c.label for c in ev.contenders]
    shown, folded = folded_vos(ev.shares)
    bands = [ev.vos[k] for k in shown] + ([f"{len(folded)} other VOs"] if folded else [])
    colors = [plt.get_cmap("tab20")(k) for k in range(len(shown))] + (["0.6"] if folded else [])
    fig, axes = plt.subplots(len(labels), 1, figsize=(12, 2.2 * len(labels) + 0.6), sharex=True, squeeze=False)
    for ax, label in zip(axes[:, 0], labels, strict=True):
        for r in first_seed(parts_of(ev, label)):
            grid = fairness_grid(r.schedule)
            w = r.schedule.workload
            service = service_by_vo(grid, r.schedule.start, r.schedule.end, w.procs, w.vo, len(ev.vos))
            frac = service_fraction(np.diff(service, axis=0))
            columns = [frac[:, k] for k in shown] + ([frac[:, folded].sum(axis=1)] if folded else [])
            ax.stackplot(
                (grid[1:] - origin) / 86400, np.vstack(columns), labels=bands if r.window == 0 else (), colors=colors
            )
        ax.set_ylabel(label, fontsize=8)
        ax.set_ylim(0, 1)
    axes[0, 0].set_title("each VO's share of the service delivered per interval")
    axes[0, 0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel("days")
    return fig


def umask_mode() -> int:
    """The mode the process's umask gives a new file (0644 under the usual 022): what the figures get.

    Result files are published for a site's users beside the figures; the atomic writes' temporary
    file would otherwise leave them owner-only."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def write_outputs(ev: Evaluation, out: Path, *, figures: bool = True) -> dict[str, Path]:
    """``results.json``, ``table.md``-style ``report.md`` and the figures in ``out`` (atomic writes, the mode
    the umask gives, as the figures)."""
    from rlsched.core.atomic import atomic_write

    out.mkdir(parents=True, exist_ok=True)
    names = save_figures(ev, out) if figures else []
    data = json.dumps(to_json(ev), indent=2, default=float) + "\n"
    atomic_write(out / "results.json", lambda fh: fh.write(data.encode()), umask_mode())
    report = report_markdown(ev, names)
    atomic_write(out / "report.md", lambda fh: fh.write(report.encode()), umask_mode())
    return {"results": out / "results.json", "report": out / "report.md", **{n: out / n for n in names}}
