"""``rlsched evaluate --leasing --cloud-nodes N``: the leasing policies on a site's own trace.

The hybrid model of Fölling & Hofmann (:mod:`rlsched.sim.hybrid_cloud.hybrid`: local EASY on the
trace's M cores plus capped transfer to cloud nodes) replays the trace under

- every constant cap V = 0 … N (FH §3's sweep; N the site's cloud nodes),
- random V (FH §3: V uniform in 0 … N each day; mean and best of ``random_runs`` runs),
- FH's Q-learning over V ∈ 0 … N (:func:`rlsched.sim.hybrid_cloud.runs.fh_qlearning`), unless skipped,
- the daily learned cap (:func:`rlsched.sim.hybrid_cloud.daily.daily_learned`) with the hyper-parameters
  chosen on the FH traces (:data:`rlsched.core.leasing.DailyLearnerParams` defaults), never on this one;
  with ``--daily-prior-from kth,ctc,sdsc`` it starts from those traces' daily clones
  (:func:`daily_prior_from_setups`),
- the state-aware rule evaluated at each day's start and held for the day, at each θ of a grid,
- the state-aware rule at every scheduling pass (:func:`rlsched.sim.hybrid_cloud.runs.state_aware`, the
  live controller's ``state-aware``) at each θ — a per-pass transfer rule, not a daily cap —
  its cap never above N.

Each is scored by FH's balance (twt improvement % − cost %, FH §2.4) against the two references
of the same trace: V = 0 (``twt_ref``, no cloud) and V → ∞ (``c_ref``).  The exchange rate
κ = twt_ref / c_ref — the seconds of wait one cloud core-second is worth at this site — and the
best θ are what the daemon's ``[leasing]`` table takes (``exchange_rate``, ``threshold``).  The
best θ is chosen on the same trace it is reported on (in-sample; docs/leasing.md chooses it
leave-one-trace-out across traces).
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.leasing import (
    DailyLearnerParams,
    DailyPrior,
    StateAwareParams,
    balance,
    cost_pct,
    twt_improvement_pct,
)
from rlsched.core.view import FloatArray
from rlsched.sim.hybrid_cloud.daily import daily_learned, state_aware_daily
from rlsched.sim.hybrid_cloud.hybrid import HybridModel, day_edges
from rlsched.sim.hybrid_cloud.runs import (
    Trajectory,
    constant_sweep,
    fh_qlearning,
    grouped_runs,
    random_caps,
    state_aware,
    unbounded_run,
)
from rlsched.sim.workload import Workload

#: The θ grid of docs/leasing.md.
THETAS: tuple[float, ...] = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)


@dataclass
class LeasingRow:
    policy: str
    setting: str
    twt_s: float
    cost_core_s: float
    twt_imp_pct: float
    cost_pct: float
    balance: float
    seconds: float


@dataclass
class LeasingEvaluation:
    workload: str
    cores: int
    cloud_nodes: int
    twt_ref: float
    c_ref: float
    rows: list[LeasingRow] = field(default_factory=list)
    constant_balance: list[float] = field(default_factory=list)

    @property
    def exchange_rate(self) -> float:
        """κ = twt_ref / c_ref (0 when the trace never needs the cloud)."""
        return self.twt_ref / self.c_ref if self.c_ref > 0 else 0.0

    def row(self, policy: str, setting: str, twt: float, cost: float, seconds: float) -> LeasingRow:
        """A row scored against this trace's references."""
        return LeasingRow(
            policy,
            setting,
            twt,
            cost,
            float(twt_improvement_pct(twt, self.twt_ref)),
            float(cost_pct(cost, self.c_ref)),
            float(balance(twt, cost, self.twt_ref, self.c_ref)),
            seconds,
        )

    def best(self, policy: str) -> LeasingRow | None:
        rows = [r for r in self.rows if r.policy == policy]
        return max(rows, key=lambda r: r.balance) if rows else None


#: Random-V runs by default (FH: 1000; their mean settles well before).
RANDOM_RUNS = 100


def daily_prior_from_setups(
    names: str, transfer_days: float, params: DailyLearnerParams | None = None
) -> tuple[DailyLearnerParams, DailyPrior]:
    """The daily learner's setting with a prior from the FH setups ``names`` ("kth,ctc,sdsc"): each setup run
    once by the cold learner (:func:`rlsched.sim.hybrid_cloud.daily.daily_prior`).  ``ValueError`` (one line)
    for an unknown setup; a missing trace names ``rlsched trace fetch``."""
    from rlsched.sim.hybrid_cloud.daily import daily_prior
    from rlsched.sim.hybrid_cloud.setups import FH_SETUPS, load_model, setup

    sources = tuple(n.strip() for n in names.split(",") if n.strip())
    if not sources:
        raise ValueError("--daily-prior-from: name at least one setup, e.g. kth,ctc,sdsc")
    for name in sources:
        try:
            setup(name)
        except ValueError:
            known = ", ".join(FH_SETUPS)
            raise ValueError(f"--daily-prior-from: unknown setup {name!r}; choose from {known}") from None
    base = params or DailyLearnerParams()
    with_prior = dataclasses.replace(base, transfer_days=transfer_days)
    return with_prior, daily_prior({name: load_model(name) for name in sources}, with_prior)


def evaluate_leasing(
    workload: Workload,
    cloud_nodes: int,
    *,
    cores: int | None = None,
    thetas: tuple[float, ...] = THETAS,
    qlearning: bool = True,
    random_runs: int = RANDOM_RUNS,
    seed: int = 0,
    daily: bool = True,
    daily_params: DailyLearnerParams | None = None,
    daily_prior: DailyPrior | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> LeasingEvaluation:
    """Run the leasing policies on ``workload`` with ``cloud_nodes`` cloud nodes (see the module docstring).

    ``progress(steps_done, steps_total, running)`` before each step (one step per policy and setting, the
    references with the constant sweep), and once at the end: the whole run takes minutes on a real trace."""
    if cloud_nodes < 1:
        raise ValueError(f"--cloud-nodes must be >= 1, got {cloud_nodes}")
    if random_runs < 0:
        raise ValueError(f"--random-runs must be >= 0, got {random_runs}")
    steps = (
        [f"references and constant V 0..{cloud_nodes}"]
        + ([f"random V ({random_runs} runs)"] if random_runs else [])
        + (["Q-learning"] if qlearning else [])
        + (["daily learned cap"] if daily else [])
        + [f"state-aware held daily θ={theta:g}" for theta in thetas]
        + [f"state-aware per pass θ={theta:g}" for theta in thetas]
    )
    step = iter(range(len(steps) + 1))

    def starting() -> None:
        k = next(step)
        if progress is not None:
            progress(k, len(steps), f"{workload.name} leasing: " + (steps[k] if k < len(steps) else "done"))

    starting()
    model = HybridModel(workload, cores)
    edges = day_edges(model)
    ev = _references_and_constants(workload.name, model, edges, cloud_nodes)
    if random_runs:
        starting()
        _random_rows(ev, model, edges, random_runs, seed)
    if qlearning:
        starting()
        _timed_row(ev, "qlearning", f"V∈0..{cloud_nodes}", lambda: fh_qlearning(model, edges, max_cap=cloud_nodes))
    if daily:
        starting()
        params = daily_params or DailyLearnerParams()
        setting = params.label()
        if daily_prior is not None and params.transfer_days > 0:
            setting += f", prior from {'+'.join(daily_prior.sources)}"
        _timed_row(
            ev,
            "daily-learned",
            setting,
            lambda: daily_learned(model, edges, params, max_cap=cloud_nodes, prior=daily_prior),
        )
    for theta in thetas:
        starting()
        _timed_row(
            ev,
            "per-pass-held-daily",
            f"θ={theta:g}",
            functools.partial(state_aware_daily, model, edges, StateAwareParams(threshold=theta), max_cap=cloud_nodes),
        )
    for theta in thetas:
        starting()
        _timed_row(
            ev,
            "state-aware",
            f"θ={theta:g}",
            functools.partial(state_aware, model, edges, StateAwareParams(threshold=theta), max_cap=cloud_nodes),
        )
    starting()
    return ev


def _references_and_constants(name: str, model: HybridModel, edges: FloatArray, cloud_nodes: int) -> LeasingEvaluation:
    """The evaluation with its references (V = 0's wait, V → ∞'s cost) and a row per constant V in 0..N."""
    t0 = time.perf_counter()
    ref_inf = unbounded_run(model, edges)
    constant = constant_sweep(model, edges, np.arange(cloud_nodes + 1))
    twt_ref = float(constant.total_twt[0])
    c_ref = float(ref_inf.total_cost[0])
    sweep_s = time.perf_counter() - t0
    ev = LeasingEvaluation(name, model.cores, cloud_nodes, twt_ref, c_ref)
    for v in range(cloud_nodes + 1):
        r = ev.row(
            "constant",
            f"V={v}",
            float(constant.total_twt[v]),
            float(constant.total_cost[v]),
            sweep_s / (cloud_nodes + 1),
        )
        ev.rows.append(r)
        ev.constant_balance.append(r.balance)
    return ev


def _random_rows(ev: LeasingEvaluation, model: HybridModel, edges: FloatArray, random_runs: int, seed: int) -> None:
    """The mean and the best of ``random_runs`` runs of a random V each day."""
    t = time.perf_counter()
    rnd = grouped_runs(model, edges, random_caps(ev.cloud_nodes, random_runs, len(edges) - 1, seed))
    seconds = (time.perf_counter() - t) / random_runs
    runs = [
        ev.row("random", f"run {k}", float(rnd.total_twt[k]), float(rnd.total_cost[k]), seconds)
        for k in range(random_runs)
    ]
    mean_twt, mean_cost = float(rnd.total_twt.mean()), float(rnd.total_cost.mean())
    mean = ev.row("random-mean", f"{random_runs} runs", mean_twt, mean_cost, seconds)
    # The mean of the runs' balances (balance is linear in twt and cost, so it is the balance of the means).
    ev.rows.append(mean)
    best = max(runs, key=lambda r: r.balance)
    ev.rows.append(
        LeasingRow(
            "random-best",
            f"seed {seed}, {best.setting}",
            best.twt_s,
            best.cost_core_s,
            best.twt_imp_pct,
            best.cost_pct,
            best.balance,
            seconds,
        )
    )


def _timed_row(ev: LeasingEvaluation, policy: str, setting: str, run: Callable[[], Trajectory]) -> None:
    """A row for one run of a policy (its trajectory's total wait and cloud use), timed."""
    t = time.perf_counter()
    traj = run()
    ev.rows.append(ev.row(policy, setting, float(traj.twt.sum()), float(traj.cost.sum()), time.perf_counter() - t))


def leasing_table(ev: LeasingEvaluation) -> str:
    """The daily caps (best constant V in hindsight, random, Q-learning, daily learned, the rule held for a day),
    then the per-pass rule apart; then the daemon's settings."""
    best_constant = ev.best("constant")
    shown = [r for r in ev.rows if r.policy not in ("constant", "state-aware")]
    if best_constant is not None:
        shown = [best_constant, *shown]
    width = max([12, *(len(r.setting) + 2 for r in ev.rows if r.policy != "random")])
    head = f"{'policy':<26}{'setting':<{width}}{'twt_imp %':>10}{'cost %':>9}{'balance':>9}{'time s':>8}"

    def line(r: LeasingRow, label: str) -> str:
        return (
            f"{label:<26}{r.setting:<{width}}{r.twt_imp_pct:>10.2f}{r.cost_pct:>9.2f}{r.balance:>9.2f}{r.seconds:>8.1f}"
        )

    lines = [
        f"leasing on {ev.workload}: M = {ev.cores} local cores, up to {ev.cloud_nodes} cloud nodes; "
        f"twt_ref (V=0) {ev.twt_ref:,.0f} s, c_ref (V→∞) {ev.c_ref:,.0f} core-s",
        "",
        "daily caps (V fixed for each day; the best constant V is chosen in hindsight on this trace):",
        head,
    ]
    lines += [line(r, r.policy + (" (best)" if r is best_constant else "")) for r in shown]
    per_pass = [r for r in ev.rows if r.policy == "state-aware"]
    if per_pass:
        lines += ["", "per-pass transfer rule (sets V at every scheduling pass: not a daily cap):", head]
        lines += [line(r, "state-aware (per pass)") for r in per_pass]
    lines += ["", *daemon_settings(ev)]
    return "\n".join(lines)


def daemon_settings(ev: LeasingEvaluation) -> list[str]:
    best_theta = ev.best("state-aware")
    out = [
        "for the daemon config (docs/leasing-live.md):",
        "[leasing]",
        'policy = "state-aware"',
        f"exchange_rate = {ev.exchange_rate:.6g}   # κ = twt_ref / c_ref: seconds of wait per cloud core-second",
    ]
    if best_theta is not None:
        out.append(f"threshold = {best_theta.setting.split('=')[1]}   # {theta_note(ev, best_theta)}")
    return out


def theta_note(ev: LeasingEvaluation, best: LeasingRow) -> str:
    """What the best θ is: the grid's best, inside it — or at its edge, where the optimum may lie beyond."""
    thetas = sorted(float(r.setting.split("=")[1]) for r in ev.rows if r.policy == "state-aware")
    theta = float(best.setting.split("=")[1])
    if len(thetas) == 1:
        return "the only θ tried (in-sample): run a grid with --thetas to choose one"
    if theta in (thetas[0], thetas[-1]):
        side, beyond = ("smallest", "below") if theta == thetas[0] else ("largest", "above")
        return (
            f"the best of the θ tried on this trace (in-sample), but the grid's {side}: the optimum may lie "
            f"{beyond} {theta:g}; extend --thetas"
        )
    return "the best θ on this trace (in-sample)"


def leasing_json(ev: LeasingEvaluation) -> dict[str, Any]:
    return {
        "workload": ev.workload,
        "cores": ev.cores,
        "cloud_nodes": ev.cloud_nodes,
        "twt_ref": ev.twt_ref,
        "c_ref": ev.c_ref,
        "exchange_rate": ev.exchange_rate,
        "rows": [r.__dict__ for r in ev.rows],
    }


def leasing_figure(ev: LeasingEvaluation) -> Any:
    """Balance against V for the constant caps (on top), with the other policies as horizontal lines, each its
    own colour; the legend beside the axes: with a θ grid it has 17 entries, which inside hid the curve."""
    from rlsched.sim.experiments.harness import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(11, 4.5))
    ax.plot(
        range(len(ev.constant_balance)), ev.constant_balance, label="constant V", color="black", marker=".", zorder=3
    )
    others = [r for r in ev.rows if r.policy != "constant"]
    palette = plt.get_cmap("tab20" if len(others) > 10 else "tab10")
    for k, r in enumerate(others):
        ax.axhline(
            r.balance, color=palette(k % palette.N), linestyle="--", linewidth=1, label=f"{r.policy} {r.setting}"
        )
    ax.set_xlabel("cap V (cloud nodes)")
    ax.set_ylabel("balance (twt_imp % − cost %)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig


def save_leasing_figure(ev: LeasingEvaluation, out: Path) -> str:
    """:func:`leasing_figure` as ``leasing_balance.png`` in ``out``."""
    from rlsched.sim.experiments.harness import save_figure

    return save_figure(leasing_figure(ev), out / "leasing_balance.png")


def write_leasing(ev: LeasingEvaluation, out: Path, *, figures: bool = True) -> dict[str, Any]:
    """``leasing.json``, ``leasing.md`` (and ``leasing_balance.png``) in ``out``, atomically; returns the JSON."""
    import json

    from rlsched.core.atomic import atomic_write
    from rlsched.workflow.evaluate import umask_mode

    out.mkdir(parents=True, exist_ok=True)
    data = leasing_json(ev)
    text = json.dumps(data, indent=2) + "\n"
    atomic_write(out / "leasing.json", lambda fh: fh.write(text.encode()), umask_mode())
    figure = save_leasing_figure(ev, out) if figures else None
    report = "\n".join(
        [f"# Leasing on {ev.workload}", "", "```", leasing_table(ev), "```", ""]
        + ([f"![balance]({figure})", ""] if figure else [])
    )
    atomic_write(out / "leasing.md", lambda fh: fh.write(report.encode()), umask_mode())
    return data
