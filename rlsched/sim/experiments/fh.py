"""FH reproduction: references (FH Tables 2–3, Fig. 5), Q-learning (Table 4, Fig. 6) and our policy.

``rlsched sim experiment fh-references|fh-qlearning|fh-ours --out DIR`` writes
``results.json`` (list ``rows``: trace, policy, V, twt_imp_pct, cost_pct, balance, wall_s),
``report.md`` (FH's tables beside ours) and PNG figures.  This module plans and runs the
simulations and aggregates the rows; :mod:`rlsched.sim.experiments.fh_report` writes the
figures and the markdown.  The work runs on the experiments' process pool
(:func:`rlsched.sim.experiments.harness.run_in_pool`, through :func:`rlsched.sim.sweep.execute`;
2 workers by default; the results do not depend on it).

Protocol for our policy (never tuned on what is reported): its one parameter θ is
chosen, for each FH trace, as the θ with the best mean balance on the *other* FH
traces (leave one trace out); the reported row is the held-out trace at that θ.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.sim.experiments import Experiment
from rlsched.sim.experiments import fh_report as report
from rlsched.sim.experiments.harness import ExperimentOptions, write_results
from rlsched.sim.leasing.setups import FH_SETUPS, SETUPS, load_model, load_workload
from rlsched.sim.sweep import Task, execute

#: Random-V runs per trace (FH §3: 1000), split into tasks of this many runs each.
RANDOM_RUNS = 1000
RANDOM_CHUNK = 250
#: θ values our policy is tuned over (leave one trace out).
THRESHOLDS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
QUICK_SETUPS = ("kth-quick",)
QUICK_RANDOM_RUNS = 40
#: The whole files, each on its own header's machine size.
FILE_SETUPS = ("ctc-file", "sdsc-file")


def _tasks(setups: tuple[str, ...], parts: set[str], random_runs: int, seed: int,
           thresholds: tuple[float, ...]) -> list[Task]:
    tasks: list[Task] = []
    for name in setups:
        model, _ = load_model(name)
        tasks.append(Task(name, "constant", caps=tuple(range(model.cores + 1)), per_day=True))
        chunk = min(RANDOM_CHUNK, random_runs)
        for k, start in enumerate(range(0, random_runs, chunk)):
            tasks.append(Task(name, "random", seed=seed * 1000 + k, runs=min(chunk, random_runs - start),
                              per_day=True))
        if "qlearning" in parts:
            tasks.append(Task(name, "qlearning", per_day=True))
            tasks.append(Task(name, "qlearning", day_wait="accrued", per_day=True))
        if "ours" in parts:
            tasks.extend(Task(name, "ours", threshold=th, per_day=True) for th in thresholds)
    # Longest first: the pool then ends together.
    weight = {"constant": 3, "random": 2, "qlearning": 1, "ours": 0}
    return sorted(tasks, key=lambda t: -weight[t.policy] * SETUPS[t.setup].cores)


def _merge(results: list[dict[str, Any]], name: str, policy: str, **match: Any) -> dict[str, Any]:
    """All results of one setup and policy, runs concatenated in task order."""
    picked = [r for r in results if r["task"]["setup"] == name and r["task"]["policy"] == policy
              and all(r["task"][k] == v for k, v in match.items())]
    merged: dict[str, Any] = {"wall_s": sum(r["wall_s"] for r in picked),
                              "simulations": sum(r["simulations"] for r in picked)}
    for key in ("V", "twt", "cost", "twt_imp_pct", "cost_pct", "balance", "day_twt", "day_cost", "day_caps"):
        merged[key] = [x for r in picked for x in r.get(key, [])]
    for key in ("twt_ref", "c_ref", "ref_day_twt", "ref_day_cost"):
        merged[key] = picked[0][key]
    return merged


def run_fh(out_dir: str | Path, parts: set[str], *, quick: bool = False, seed: int = 0,
           setups: tuple[str, ...] | None = None, workers: int = 2, random_runs: int | None = None,
           thresholds: tuple[float, ...] = THRESHOLDS) -> dict[str, Any]:
    out = ExperimentOptions(Path(out_dir), quick=quick, seed=seed, workers=workers).output()
    t_start = time.perf_counter()
    names = setups or (QUICK_SETUPS if quick else FH_SETUPS)
    n_random = random_runs or (QUICK_RANDOM_RUNS if quick else RANDOM_RUNS)
    tasks = _tasks(names, parts, n_random, seed, thresholds)
    if quick:
        workers = 1  # seconds of work: a pool would cost more than it saves
    results = execute(tasks, executor="serial" if workers <= 1 else "process", workers=workers)
    rows: list[dict[str, Any]] = []
    figures: list[str] = []
    timing: dict[str, dict[str, float]] = {}
    ours_by_theta: dict[str, dict[float, float]] = {}
    if "ours" in parts:
        for name in names:
            ours_by_theta[name] = {th: _merge(results, name, "ours", threshold=th)["balance"][0]
                                   for th in thresholds}
    for name in names:
        by: dict[str, dict[str, Any]] = {"constant": _merge(results, name, "constant"),
                                          "random": _merge(results, name, "random")}
        const, rnd = by["constant"], by["random"]
        best = int(np.argmax(const["balance"]))
        rows.append({"trace": name, "policy": "constant-best", "V": const["V"][best],
                     "twt_imp_pct": const["twt_imp_pct"][best], "cost_pct": const["cost_pct"][best],
                     "balance": const["balance"][best], "wall_s": const["wall_s"]})
        rb = np.asarray(rnd["balance"])
        ib = int(np.argmax(rb))
        rows.append({"trace": name, "policy": "random-mean", "V": None,
                     "twt_imp_pct": float(np.mean(rnd["twt_imp_pct"])),
                     "cost_pct": float(np.mean(rnd["cost_pct"])),
                     "balance": float(rb.mean()), "wall_s": rnd["wall_s"], "runs": len(rb)})
        rows.append({"trace": name, "policy": "random-best", "V": None, "twt_imp_pct": rnd["twt_imp_pct"][ib],
                     "cost_pct": rnd["cost_pct"][ib], "balance": float(rb[ib]), "wall_s": rnd["wall_s"]})
        model, edges = load_model(name)
        days = len(edges) - 1
        timing[name] = {"days": days, "M": model.cores, "jobs": model.n,
                        "constant_sweep_s": const["wall_s"], "constant_simulations": const["simulations"],
                        "random_s": rnd["wall_s"], "random_simulations": rnd["simulations"]}
        if "qlearning" in parts:
            for policy, wait in (("qlearning", "started"), ("qlearning-accrued", "accrued")):
                q = _merge(results, name, "qlearning", day_wait=wait)
                rows.append({"trace": name, "policy": policy, "V": None, "twt_imp_pct": q["twt_imp_pct"][0],
                             "cost_pct": q["cost_pct"][0], "balance": q["balance"][0], "wall_s": q["wall_s"]})
                if wait == "started":
                    by["qlearning"] = q
                    timing[name].update({
                        "qlearning_s": q["wall_s"], "qlearning_simulations": q["simulations"],
                        "per_day_ms": 1000.0 * q["wall_s"] / days,
                        "per_evaluated_V_us": 1e6 * q["wall_s"] / (days * (model.cores + 1))})
        if "ours" in parts:
            theta = _held_out_theta(name, ours_by_theta, names, thresholds)
            o = _merge(results, name, "ours", threshold=theta)
            by["ours"] = o
            rows.append({"trace": name, "policy": "ours", "V": None, "twt_imp_pct": o["twt_imp_pct"][0],
                         "cost_pct": o["cost_pct"][0], "balance": o["balance"][0], "wall_s": o["wall_s"],
                         "threshold": theta, "balance_by_threshold": ours_by_theta[name]})
        figures += report.figures(out, name, by)
    wall = time.perf_counter() - t_start
    payload = {"rows": rows, "timing": timing, "wall_s": wall, "workers": workers, "quick": quick,
               "setups": {n: SETUPS[n].note for n in names},
               "jobs": {n: len(load_workload(n)) for n in names}, "figures": figures}
    write_results(out, payload, report.report_markdown(payload, names), indent=2)
    return payload


def _held_out_theta(name: str, by_theta: dict[str, dict[float, float]], names: tuple[str, ...],
                    thresholds: tuple[float, ...]) -> float:
    """θ with the best mean balance on the other setups (all computed up front); itself if alone."""
    others = [n for n in names if n != name]
    if not others:
        return 1.0  # a single setup (quick mode): the untuned default, nothing to tune on
    means = [float(np.mean([by_theta[n][th] for n in others])) for th in thresholds]
    return float(thresholds[int(np.argmax(means))])


def _experiment(parts: set[str], setups: tuple[str, ...] | None = None) -> Any:
    def run(out_dir: str | Path, *, quick: bool = False, seed: int = 0, **options: Any) -> dict[str, Any]:
        options.setdefault("setups", None if quick else setups)
        return run_fh(out_dir, parts, quick=quick, seed=seed, **options)
    return run


EXPERIMENTS = {
    "fh-references": Experiment("fh-references", "FH Tables 2-3 and Fig. 5: best constant V and random V "
                                "(1000 runs) on KTH, CTC, SDSC", _experiment({"references"})),
    "fh-qlearning": Experiment("fh-qlearning", "FH Table 4 and Fig. 6: the Q-learning leasing policy beside "
                               "the references", _experiment({"references", "qlearning"})),
    "fh-ours": Experiment("fh-ours", "our state-aware leasing policy beside FH's references and Q-learning",
                          _experiment({"references", "qlearning", "ours"})),
    "fh-ours-file": Experiment("fh-ours-file", "everything of fh-ours on CTC with the file's M=338 and on "
                               "SDSC-DS over all 13 months",
                               _experiment({"references", "qlearning", "ours"}, FILE_SETUPS)),
}
