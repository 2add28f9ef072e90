"""FH reproduction: references (FH Tables 2–3, Fig. 5), Q-learning (Table 4, Fig. 6) and our policies.

``rlsched sim experiment fh-references|fh-qlearning|fh-ours --out DIR`` writes
``results.json`` (list ``rows``: trace, policy, V, twt_imp_pct, cost_pct, balance, wall_s),
``report.md`` (FH's tables beside ours) and PNG figures.  This module plans and runs the
simulations (:class:`FhExperiment`, on the experiment template: one sweep task
:class:`rlsched.sim.sweep.Task` at a time through :func:`rlsched.sim.sweep.run_task`) and aggregates
the rows; :mod:`rlsched.sim.experiments.fh_report` writes the figures and the markdown and
:mod:`rlsched.sim.experiments.fh_common` holds the constants both read.  The work runs on the
experiments' process pool (:func:`rlsched.sim.experiments.harness.run_in_pool`; 2 workers by default;
the results do not depend on it).

Our policies, in two kinds:

* daily caps, like FH's (V fixed for each day): ``daily-learned`` (a contextual learner trained
  online with FH's daily clones, :func:`rlsched.sim.hybrid_cloud.daily.daily_learned`) and
  ``per-pass-held-daily`` (the state-aware rule evaluated at the day's start, held for the day);
* ``per-pass-rule``: the state-aware rule at every scheduling pass — a per-pass transfer rule,
  reported apart because it decides with information no daily cap has.

Protocol (never tuned on what is reported): every hyper-parameter (the daily learner's
horizon, bins, shrinkage and prior from other traces; the rules' θ; the fraction of M of
``constant-held-out``) is chosen, for each FH trace, as the setting with the best mean balance on
the *other* FH traces (leave one trace out); the reported row is the held-out trace at that
setting, and the report prints the choice and every setting's balance.  Beside them, two upper
references that know the whole trace: FH's ``constant-best`` and ``daily-hindsight`` (the daily
learner whose estimates come from its own trace's clones from day one).  Because one run of a
trace cannot tell a small difference from chance, the daily learner and the constant V are also
run on jittered replays of each trace (:func:`_spread`), and compared per replay.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.sim.experiments import Experiment
from rlsched.sim.experiments import fh_report as report
from rlsched.sim.experiments.fh_common import (
    CONSTANT_FRACTIONS,
    DAILY_GRID,
    FILE_SETUPS,
    GAP_SPLIT_DAYS,
    JITTER_SEEDS,
    OURS_ROWS,
    QUICK_RANDOM_RUNS,
    QUICK_SETUPS,
    RANDOM_CHUNK,
    RANDOM_RUNS,
    THRESHOLDS,
    DailySetting,
)
from rlsched.sim.experiments.harness import ExperimentRun, PaperExperiment
from rlsched.sim.hybrid_cloud.setups import FH_SETUPS, JITTER_S, SETUPS, load_model, load_workload
from rlsched.sim.sweep import Task, run_task

Results = list[dict[str, Any]]
#: Balance of every tuned setting on every trace, by policy then trace (the leave-one-trace-out choices).
Tuned = dict[str, dict[str, dict[Any, float]]]
#: Relative cost of a task per core of its setup: the longest go first so the pool ends together.
TASK_WEIGHT = {"daily": 4, "constant": 3, "random": 2, "qlearning": 1, "ours-daily": 0, "ours": 0}


def _tasks(
    setups: tuple[str, ...],
    parts: frozenset[str],
    random_runs: int,
    seed: int,
    thresholds: tuple[float, ...],
    daily_grid: tuple[DailySetting, ...],
) -> list[Task]:
    tasks: list[Task] = []
    for name in setups:
        model, _ = load_model(name)
        tasks.append(Task(name, "constant", caps=tuple(range(model.cores + 1)), per_day=True))
        chunk = min(RANDOM_CHUNK, random_runs)
        for k, start in enumerate(range(0, random_runs, chunk)):
            tasks.append(Task(name, "random", seed=seed * 1000 + k, runs=min(chunk, random_runs - start), per_day=True))
        if "qlearning" in parts:
            tasks.append(Task(name, "qlearning", per_day=True))
            tasks.append(Task(name, "qlearning", day_wait="accrued", per_day=True))
        if "daily" in parts:
            others = _others(name, setups)
            tasks.extend(
                Task(name, "daily", per_day=True, **_daily_fields(g, others)) for g in daily_grid if g[4] == 0 or others
            )
        if "ours" in parts:
            tasks.extend(Task(name, "ours-daily", threshold=th, per_day=True) for th in thresholds)
            tasks.extend(Task(name, "ours", threshold=th, per_day=True) for th in thresholds)
    return sorted(tasks, key=lambda t: -TASK_WEIGHT[t.policy] * SETUPS[t.setup].cores)


def _merge(results: Results, name: str, policy: str, **match: Any) -> dict[str, Any]:
    """All results of one setup and policy, runs concatenated in task order."""
    picked = [
        r
        for r in results
        if r["task"]["setup"] == name
        and r["task"]["policy"] == policy
        and all(r["task"][k] == v for k, v in match.items())
    ]
    merged: dict[str, Any] = {
        "wall_s": sum(r["wall_s"] for r in picked),
        "simulations": sum(r["simulations"] for r in picked),
    }
    for key in ("V", "twt", "cost", "twt_imp_pct", "cost_pct", "balance", "day_twt", "day_cost", "day_caps"):
        merged[key] = [x for r in picked for x in r.get(key, [])]
    for key in ("twt_ref", "c_ref", "ref_day_twt", "ref_day_cost"):
        merged[key] = picked[0][key]
    return merged


def _row(name: str, policy: str, merged: dict[str, Any], i: int = 0, **extra: Any) -> dict[str, Any]:
    """A results.json row from run ``i`` of a merged result."""
    return {
        "trace": name,
        "policy": policy,
        "V": None,
        "twt_imp_pct": merged["twt_imp_pct"][i],
        "cost_pct": merged["cost_pct"][i],
        "balance": merged["balance"][i],
        "wall_s": merged["wall_s"],
        **extra,
    }


@dataclass(frozen=True)
class FhExperiment(PaperExperiment[Task, dict[str, Any]]):
    """FH's references, Q-learning and our policies (``parts``) on ``names``, on the experiment template."""

    parts: frozenset[str]
    quick: bool
    seed: int
    names: tuple[str, ...]
    random_runs: int
    thresholds: tuple[float, ...]
    grid: tuple[DailySetting, ...]
    jitter_seeds: tuple[int, ...]
    json_indent = 2

    def plan(self) -> list[Task]:
        return _tasks(self.names, self.parts, self.random_runs, self.seed, self.thresholds, self.grid)

    def run_one(self, task: Task) -> dict[str, Any]:
        return run_task(task)

    def aggregate(self, results: Results, run: ExperimentRun) -> dict[str, Any]:
        tuned = self._tuned(results)
        rows: list[dict[str, Any]] = []
        figures: list[str] = []
        timing: dict[str, dict[str, float]] = {}
        chosen: dict[str, DailySetting] = {}  # the daily learner's held-out setting per trace
        for name in self.names:
            by = self._trace(results, name, tuned, rows, timing, chosen)
            figures += report.figures(run.out, name, by)
        spread = (
            _spread(self.names, rows, chosen, run, self.jitter_seeds)
            if "spread" in self.parts and chosen and len(self.names) > 1 and self.jitter_seeds
            else {}
        )
        if "spread" in self.parts and chosen:
            for extra in _hindsight_rows(self.names, chosen, run):
                at = next(
                    i for i, r in enumerate(rows) if (r["trace"], r["policy"]) == (extra["trace"], "daily-learned")
                )
                rows.insert(at + 1, extra)
        return {
            "rows": rows,
            "timing": timing,
            "wall_s": run.wall_s(),
            "workers": run.workers,
            "quick": self.quick,
            "setups": {n: SETUPS[n].note for n in self.names},
            "jobs": {n: len(load_workload(n)) for n in self.names},
            "figures": figures,
            "spread": spread,
        }

    def render(self, results: dict[str, Any]) -> str:
        return render_report(results)

    def _tuned(self, results: Results) -> Tuned:
        """Balance of every tuned setting on every trace, for the leave-one-trace-out choices."""
        tuned: Tuned = {"ours": {}, "ours-daily": {}, "daily": {}}
        for name in self.names:
            if "ours" in self.parts:
                for policy in ("ours", "ours-daily"):
                    tuned[policy][name] = {
                        th: _merge(results, name, policy, threshold=th)["balance"][0] for th in self.thresholds
                    }
            if "daily" in self.parts:
                others = _others(name, self.names)
                tuned["daily"][name] = {
                    g: _merge(results, name, "daily", **_daily_fields(g, others))["balance"][0]
                    for g in self.grid
                    if g[4] == 0 or others
                }
        return tuned

    def _trace(
        self,
        results: Results,
        name: str,
        tuned: Tuned,
        rows: list[dict[str, Any]],
        timing: dict[str, dict[str, float]],
        chosen: dict[str, DailySetting],
    ) -> dict[str, dict[str, Any]]:
        """Append the rows and timing of trace ``name``; returns its merged results by policy (for the figures)."""
        by: dict[str, dict[str, Any]] = {
            "constant": _merge(results, name, "constant"),
            "random": _merge(results, name, "random"),
        }
        rows += _reference_rows(results, name, self.names, by["constant"], by["random"])
        timing[name] = _timing(name, by["constant"], by["random"])
        if "qlearning" in self.parts:
            rows += _qlearning_rows(results, name, by, timing[name])
        if "daily" in self.parts:
            g, chosen_on = _held_out(name, tuned["daily"], self.names, self.grid)
            chosen[name] = g
            rows.append(_daily_row(results, name, self.names, g, chosen_on, tuned["daily"][name], by))
        if "ours" in self.parts:
            for policy, label in OURS_ROWS:
                theta, chosen_on = _held_out(name, tuned[policy], self.names, self.thresholds, default=1.0)
                by[policy] = _merge(results, name, policy, threshold=theta)
                rows.append(
                    _row(
                        name,
                        label,
                        by[policy],
                        threshold=theta,
                        chosen_on=chosen_on,
                        balance_by_threshold=tuned[policy][name],
                    )
                )
        return by


def _reference_rows(
    results: Results, name: str, names: tuple[str, ...], const: dict[str, Any], rnd: dict[str, Any]
) -> list[dict[str, Any]]:
    """FH's references: the best constant V (hindsight), the held-out constant V, the random runs' mean and best."""
    best = int(np.argmax(const["balance"]))
    rows = [_row(name, "constant-best", const, best) | {"V": const["V"][best]}]
    held = _constant_held_out(name, {n: _merge(results, n, "constant") for n in names}, names)
    if held is not None:
        fraction, chosen_on = held
        v = _cap_at(fraction, name)
        i = const["V"].index(v)
        rows.append(
            {
                "trace": name,
                "policy": "constant-held-out",
                "V": v,
                "fraction": fraction,
                "twt_imp_pct": const["twt_imp_pct"][i],
                "cost_pct": const["cost_pct"][i],
                "balance": const["balance"][i],
                "wall_s": const["wall_s"],
                "chosen_on": chosen_on,
            }
        )
    rb = np.asarray(rnd["balance"])
    ib = int(np.argmax(rb))
    rows.append(
        {
            "trace": name,
            "policy": "random-mean",
            "V": None,
            "twt_imp_pct": float(np.mean(rnd["twt_imp_pct"])),
            "cost_pct": float(np.mean(rnd["cost_pct"])),
            "balance": float(rb.mean()),
            "wall_s": rnd["wall_s"],
            "runs": len(rb),
        }
    )
    rows.append(
        {
            "trace": name,
            "policy": "random-best",
            "V": None,
            "twt_imp_pct": rnd["twt_imp_pct"][ib],
            "cost_pct": rnd["cost_pct"][ib],
            "balance": float(rb[ib]),
            "wall_s": rnd["wall_s"],
        }
    )
    return rows


def _timing(name: str, const: dict[str, Any], rnd: dict[str, Any]) -> dict[str, float]:
    model, edges = load_model(name)
    return {
        "days": len(edges) - 1,
        "M": model.cores,
        "jobs": model.n,
        "constant_sweep_s": const["wall_s"],
        "constant_simulations": const["simulations"],
        "random_s": rnd["wall_s"],
        "random_simulations": rnd["simulations"],
    }


def _qlearning_rows(
    results: Results, name: str, by: dict[str, dict[str, Any]], timing: dict[str, float]
) -> list[dict[str, Any]]:
    """FH's Q-learner under both readings of a clone's day (``started``, ``accrued``); times the first."""
    rows = []
    for policy, wait in (("qlearning", "started"), ("qlearning-accrued", "accrued")):
        q = _merge(results, name, "qlearning", day_wait=wait)
        rows.append(_row(name, policy, q))
        if wait == "started":
            by["qlearning"] = q
            days, cores = timing["days"], timing["M"]
            timing.update(
                {
                    "qlearning_s": q["wall_s"],
                    "qlearning_simulations": q["simulations"],
                    "per_day_ms": 1000.0 * q["wall_s"] / days,
                    "per_evaluated_V_us": 1e6 * q["wall_s"] / (days * (cores + 1)),
                }
            )
    return rows


def _daily_row(
    results: Results,
    name: str,
    names: tuple[str, ...],
    g: DailySetting,
    chosen_on: list[str],
    balances: dict[Any, float],
    by: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """The daily learned cap at its held-out setting ``g``, with every setting's balance on the trace."""
    others = _others(name, names)
    d = _merge(results, name, "daily", **_daily_fields(g, others))
    by["daily"] = d
    const = by["constant"]
    params = Task(name, "daily", **_daily_fields(g, others)).daily_params()
    return _row(
        name,
        "daily-learned",
        d,
        params=params.label(),
        chosen_on=chosen_on,
        prior_from=list(others) if g[4] > 0 else [],
        gap_by_period=_gap_by_period(d, const, int(np.argmax(const["balance"]))),
        balance_by_params={_daily_label(name, g2, others): b for g2, b in balances.items()},
    )


def run_fh(
    out_dir: str | Path,
    parts: set[str],
    *,
    quick: bool = False,
    seed: int = 0,
    setups: tuple[str, ...] | None = None,
    workers: int = 2,
    random_runs: int | None = None,
    thresholds: tuple[float, ...] = THRESHOLDS,
    daily_grid: tuple[DailySetting, ...] | None = None,
    jitter_seeds: tuple[int, ...] = JITTER_SEEDS,
) -> dict[str, Any]:
    """Run ``parts`` of the FH reproduction; writes results.json, report.md and the figures into ``out_dir``."""
    experiment = FhExperiment(
        frozenset(parts),
        quick,
        seed,
        setups or (QUICK_SETUPS if quick else FH_SETUPS),
        random_runs or (QUICK_RANDOM_RUNS if quick else RANDOM_RUNS),
        thresholds,
        daily_grid or (DAILY_GRID[:1] if quick else DAILY_GRID),
        jitter_seeds,
    )
    # Quick mode is seconds of work: a pool would cost more than it saves.
    return experiment.run(out_dir, 1 if quick else workers)


def _spread(
    names: tuple[str, ...],
    rows: list[dict[str, Any]],
    chosen: dict[str, DailySetting],
    run: ExperimentRun,
    seeds: tuple[int, ...],
) -> dict[str, Any]:
    """The daily learned cap against the constant V on jittered replays of each trace.

    Replay 0 is the trace as recorded (the rows above); replays 1… move every submit by up to
    :data:`JITTER_S` seconds.  On each replay the best constant V is chosen in hindsight again, the
    held-out constant keeps its fraction of M and the learner its held-out setting (both chosen on
    the recorded traces).  A paired difference whose mean lies within one standard deviation of
    zero is a tie.
    """
    tasks: list[Task] = []
    for name in names:
        others = _others(name, names)
        for seed in seeds:
            tasks.append(Task(name, "constant", caps=tuple(range(model_cores(name) + 1)), jitter_seed=seed))
            tasks.append(Task(name, "daily", jitter_seed=seed, **_daily_fields(chosen[name], others)))
    results = run.map(run_task, tasks)
    row = {(r["trace"], r["policy"]): r for r in rows}
    out: dict[str, Any] = {"jitter_s": JITTER_S, "seeds": [0, *seeds], "traces": {}}
    for name in names:
        best = [row[(name, "constant-best")]["balance"]]
        best_v = [row[(name, "constant-best")]["V"]]
        held_row = row.get((name, "constant-held-out"))
        held = [held_row["balance"]] if held_row else []
        learned = [row[(name, "daily-learned")]["balance"]]
        for seed in seeds:
            const = next(
                r
                for r in results
                if r["task"]["setup"] == name and r["task"]["jitter_seed"] == seed and r["task"]["policy"] == "constant"
            )
            i = int(np.argmax(const["balance"]))
            best.append(float(const["balance"][i]))
            best_v.append(int(const["V"][i]))
            if held_row:
                held.append(float(const["balance"][const["V"].index(held_row["V"])]))
            learned.append(
                next(
                    float(r["balance"][0])
                    for r in results
                    if r["task"]["setup"] == name
                    and r["task"]["jitter_seed"] == seed
                    and r["task"]["policy"] == "daily"
                )
            )
        entry: dict[str, Any] = {
            "constant_best": best,
            "constant_best_V": best_v,
            "daily_learned": learned,
            "against_best": _paired(learned, best),
        }
        if held_row:
            entry.update(constant_held_out=held, against_held_out=_paired(learned, held))
        out["traces"][name] = entry
    return out


def _hindsight_rows(
    names: tuple[str, ...], chosen: dict[str, DailySetting], run: ExperimentRun
) -> list[dict[str, Any]]:
    """The daily learner at its held-out setting, its estimates from its own trace's clones from day one:
    what its decision rule could do knowing the whole trace (an upper reference, like the best constant V)."""
    tasks = [Task(name, "daily", hindsight=True, **_daily_fields(_cold(chosen[name]))) for name in names]
    results = run.map(run_task, tasks)
    return [
        {
            "trace": task.setup,
            "policy": "daily-hindsight",
            "V": None,
            "twt_imp_pct": r["twt_imp_pct"][0],
            "cost_pct": r["cost_pct"][0],
            "balance": r["balance"][0],
            "wall_s": r["wall_s"],
            "params": task.daily_params().label() + ", its own trace's clones from day one",
        }
        for task, r in zip(tasks, results, strict=True)
    ]


def _gap_by_period(learned: dict[str, Any], const: dict[str, Any], best: int) -> dict[str, float]:
    """Learned − best constant V in balance points, over the first GAP_SPLIT_DAYS days and the rest (each day's
    wait and cost against the whole-trace references, so the two parts add up to the total gap)."""
    twt = np.asarray(learned["day_twt"][0]) - np.asarray(const["day_twt"][best])
    cost = np.asarray(learned["day_cost"][0]) - np.asarray(const["day_cost"][best])
    day = -100.0 * (twt / learned["twt_ref"] + cost / learned["c_ref"])
    return {
        f"first {GAP_SPLIT_DAYS} days": float(day[:GAP_SPLIT_DAYS].sum()),
        f"day {GAP_SPLIT_DAYS} to the end": float(day[GAP_SPLIT_DAYS:].sum()),
    }


def _cold(setting: DailySetting) -> DailySetting:
    h, b, m, c, _ = setting
    return h, b, m, c, 0.0


def _paired(a: list[float], b: list[float]) -> dict[str, Any]:
    """a − b per replay: mean, sample standard deviation and the verdict (tie within one s.d.)."""
    diff = np.asarray(a) - np.asarray(b)
    mean, sd = float(diff.mean()), float(diff.std(ddof=1)) if len(diff) > 1 else 0.0
    verdict = "tie" if abs(mean) <= sd else ("above" if mean > 0 else "below")
    return {"diff": diff.tolist(), "mean": mean, "sd": sd, "verdict": verdict}


def model_cores(name: str) -> int:
    """M of a setup (the constant sweep covers V = 0 … M)."""
    return SETUPS[name].cores


def _cap_at(fraction: float, name: str) -> int:
    """The constant V a fraction of M stands for on a setup."""
    return min(round(fraction * model_cores(name)), model_cores(name))


def _others(name: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The setups a setting reported on ``name`` is chosen on (leave one trace out)."""
    return tuple(n for n in names if n != name)


def _daily_fields(setting: DailySetting, others: tuple[str, ...] = ()) -> dict[str, Any]:
    """A grid setting as Task fields; a setting with a prior transfers from ``others``."""
    h, b, m, c, t = setting
    return {
        "horizon_days": h,
        "bins": b,
        "prior_days": m,
        "continuation": c,
        "transfer_days": t,
        "transfer_from": others if t > 0 else (),
    }


def _daily_label(name: str, setting: DailySetting, others: tuple[str, ...]) -> str:
    return Task(name, "daily", **_daily_fields(setting, others)).daily_params().label()


def _constant_held_out(
    name: str, constants: dict[str, dict[str, Any]], names: tuple[str, ...]
) -> tuple[float, list[str]] | None:
    """The fraction f of M whose constant V = round(f·M) has the best mean balance on the *other* setups:
    a constant V chosen without the trace it is reported on (None alone, in quick mode)."""
    others = list(_others(name, names))
    if not others:
        return None

    def at(n: str, f: float) -> float:
        const = constants[n]
        return float(const["balance"][const["V"].index(_cap_at(f, n))])

    means = [float(np.mean([at(n, f) for n in others])) for f in CONSTANT_FRACTIONS]
    return CONSTANT_FRACTIONS[int(np.argmax(means))], others


def _held_out(
    name: str,
    balances: dict[str, dict[Any, float]],
    names: tuple[str, ...],
    settings: tuple[Any, ...],
    default: Any = None,
) -> tuple[Any, list[str]]:
    """The setting with the best mean balance on the *other* setups, and those setups.

    Alone (quick mode) there is nothing to tune on: ``default`` (else the first setting), untuned.
    """
    others = list(_others(name, names))
    if not others:
        return (settings[0] if default is None else default), []
    means = [float(np.mean([balances[n][k] for n in others])) for k in settings]
    return settings[int(np.argmax(means))], others


def render_report(payload: dict[str, Any]) -> str:
    """report.md of a results.json (its setups in their order)."""
    return report.report_markdown(payload, tuple(payload["setups"]))


def _experiment(parts: set[str], setups: tuple[str, ...] | None = None) -> Callable[..., dict[str, Any]]:
    def run(out_dir: str | Path, *, quick: bool = False, seed: int = 0, **options: Any) -> dict[str, Any]:
        options.setdefault("setups", None if quick else setups)
        return run_fh(out_dir, parts, quick=quick, seed=seed, **options)

    return run


EXPERIMENTS = {
    "fh-references": Experiment(
        "fh-references",
        "FH Tables 2-3 and Fig. 5: best constant V and random V (1000 runs) on KTH, CTC, SDSC",
        _experiment({"references"}),
        render_report,
    ),
    "fh-qlearning": Experiment(
        "fh-qlearning",
        "FH Table 4 and Fig. 6: the Q-learning leasing policy beside the references",
        _experiment({"references", "qlearning"}),
        render_report,
    ),
    "fh-ours": Experiment(
        "fh-ours",
        "our leasing policies (daily learned cap, state-aware rule held for a day, "
        "per-pass rule) beside FH's references and Q-learning",
        _experiment({"references", "qlearning", "daily", "ours", "spread"}),
        render_report,
    ),
    "fh-daily": Experiment(
        "fh-daily",
        "the daily caps only (constant, random, FH Q-learning, daily learned) on KTH, CTC, SDSC",
        _experiment({"references", "qlearning", "daily", "spread"}),
        render_report,
    ),
    "fh-ours-file": Experiment(
        "fh-ours-file",
        "everything of fh-ours on CTC with the file's M=338 and on SDSC-DS over all 13 months",
        _experiment({"references", "qlearning", "daily", "ours", "spread"}, FILE_SETUPS),
        render_report,
    ),
}
