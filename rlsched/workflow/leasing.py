"""``rlsched evaluate --leasing --cloud-nodes N``: the leasing policies on a site's own trace.

The hybrid model of Fölling & Hofmann (:mod:`rlsched.sim.leasing.hybrid`: local EASY on the
trace's M cores plus capped transfer to cloud nodes) replays the trace under

- every constant cap V = 0 … N (FH §3's sweep; N the site's cloud nodes),
- the state-aware policy (:func:`rlsched.sim.leasing.runs.state_aware`, the live controller's
  ``state-aware``) at each threshold θ of a grid, its cap never above N,
- FH's Q-learning over V ∈ 0 … N (:func:`rlsched.sim.leasing.runs.fh_qlearning`), unless skipped.

Each is scored by FH's balance (twt improvement % − cost %, FH §2.4) against the two references
of the same trace: V = 0 (``twt_ref``, no cloud) and V → ∞ (``c_ref``).  The exchange rate
κ = twt_ref / c_ref — the seconds of wait one cloud core-second is worth at this site — and the
best θ are what the daemon's ``[leasing]`` table takes (``exchange_rate``, ``threshold``).  The
best θ is chosen on the same trace it is reported on (in-sample; docs/leasing.md chooses it
leave-one-trace-out across traces).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rlsched.core.leasing import StateAwareParams, balance, cost_pct, twt_improvement_pct
from rlsched.sim.leasing.hybrid import HybridModel, day_edges
from rlsched.sim.leasing.runs import constant_sweep, fh_qlearning, state_aware, unbounded_run
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

    def best(self, policy: str) -> LeasingRow | None:
        rows = [r for r in self.rows if r.policy == policy]
        return max(rows, key=lambda r: r.balance) if rows else None


def evaluate_leasing(workload: Workload, cloud_nodes: int, *, cores: int | None = None,
                     thetas: tuple[float, ...] = THETAS, qlearning: bool = True) -> LeasingEvaluation:
    """Run the leasing policies on ``workload`` with ``cloud_nodes`` cloud nodes (see the module docstring)."""
    if cloud_nodes < 1:
        raise ValueError(f"--cloud-nodes must be >= 1, got {cloud_nodes}")
    model = HybridModel(workload, cores)
    edges = day_edges(model)
    t0 = time.perf_counter()
    ref_inf = unbounded_run(model, edges)
    constant = constant_sweep(model, edges, np.arange(cloud_nodes + 1))
    twt_ref = float(constant.total_twt[0])
    c_ref = float(ref_inf.total_cost[0])
    sweep_s = time.perf_counter() - t0
    ev = LeasingEvaluation(workload.name, model.cores, cloud_nodes, twt_ref, c_ref)

    def row(policy: str, setting: str, twt: float, cost: float, seconds: float) -> LeasingRow:
        return LeasingRow(policy, setting, twt, cost, float(twt_improvement_pct(twt, twt_ref)),
                          float(cost_pct(cost, c_ref)), float(balance(twt, cost, twt_ref, c_ref)), seconds)

    for v in range(cloud_nodes + 1):
        r = row("constant", f"V={v}", float(constant.total_twt[v]), float(constant.total_cost[v]),
                sweep_s / (cloud_nodes + 1))
        ev.rows.append(r)
        ev.constant_balance.append(r.balance)
    for theta in thetas:
        t = time.perf_counter()
        traj = state_aware(model, edges, StateAwareParams(threshold=theta), max_cap=cloud_nodes)
        ev.rows.append(row("state-aware", f"θ={theta:g}", float(traj.twt.sum()), float(traj.cost.sum()),
                           time.perf_counter() - t))
    if qlearning:
        t = time.perf_counter()
        traj = fh_qlearning(model, edges, max_cap=cloud_nodes)
        ev.rows.append(row("qlearning", f"V∈0..{cloud_nodes}", float(traj.twt.sum()), float(traj.cost.sum()),
                           time.perf_counter() - t))
    return ev


def leasing_table(ev: LeasingEvaluation) -> str:
    """The best constant V, every state-aware θ, Q-learning; then the daemon's settings."""
    best_constant = ev.best("constant")
    shown = [r for r in ev.rows if r.policy != "constant"]
    if best_constant is not None:
        shown = [best_constant, *shown]
    lines = [f"leasing on {ev.workload}: M = {ev.cores} local cores, up to {ev.cloud_nodes} cloud nodes; "
             f"twt_ref (V=0) {ev.twt_ref:,.0f} s, c_ref (V→∞) {ev.c_ref:,.0f} core-s",
             f"{'policy':<18}{'setting':<12}{'twt_imp %':>10}{'cost %':>9}{'balance':>9}{'time s':>8}"]
    for r in shown:
        label = r.policy + (" (best)" if r is best_constant else "")
        lines.append(f"{label:<18}{r.setting:<12}{r.twt_imp_pct:>10.2f}{r.cost_pct:>9.2f}{r.balance:>9.2f}"
                     f"{r.seconds:>8.1f}")
    lines += ["", *daemon_settings(ev)]
    return "\n".join(lines)


def daemon_settings(ev: LeasingEvaluation) -> list[str]:
    best_theta = ev.best("state-aware")
    out = ["for the daemon config (docs/leasing-live.md):", "[leasing]", 'policy = "state-aware"',
           f"exchange_rate = {ev.exchange_rate:.6g}   # κ = twt_ref / c_ref: seconds of wait per cloud core-second"]
    if best_theta is not None:
        out.append(f"threshold = {best_theta.setting.split('=')[1]}   # the best θ on this trace (in-sample)")
    return out


def leasing_json(ev: LeasingEvaluation) -> dict[str, Any]:
    return {"workload": ev.workload, "cores": ev.cores, "cloud_nodes": ev.cloud_nodes, "twt_ref": ev.twt_ref,
            "c_ref": ev.c_ref, "exchange_rate": ev.exchange_rate,
            "rows": [r.__dict__ for r in ev.rows]}


def save_leasing_figure(ev: LeasingEvaluation, out: Path) -> str:
    """Balance against V for the constant caps, with the state-aware θ and Q-learning as lines."""
    from rlsched.sim.experiments.harness import pyplot, save_figure

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.plot(range(len(ev.constant_balance)), ev.constant_balance, label="constant V", color="black")
    for k, r in enumerate(r for r in ev.rows if r.policy != "constant"):
        ax.axhline(r.balance, color=plt.get_cmap("tab10")(k % 10), linestyle="--", label=f"{r.policy} {r.setting}")
    ax.set_xlabel("cap V (cloud nodes)")
    ax.set_ylabel("balance (twt_imp % − cost %)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return save_figure(fig, out / "leasing_balance.png")


def write_leasing(ev: LeasingEvaluation, out: Path, *, figures: bool = True) -> dict[str, Any]:
    """``leasing.json``, ``leasing.md`` (and ``leasing_balance.png``) in ``out``, atomically; returns the JSON."""
    import json

    from rlsched.core.atomic import atomic_write

    out.mkdir(parents=True, exist_ok=True)
    data = leasing_json(ev)
    text = json.dumps(data, indent=2) + "\n"
    atomic_write(out / "leasing.json", lambda fh: fh.write(text.encode()))
    figure = save_leasing_figure(ev, out) if figures else None
    report = "\n".join([f"# Leasing on {ev.workload}", "", "```", leasing_table(ev), "```", ""]
                       + ([f"![balance]({figure})", ""] if figure else []))
    atomic_write(out / "leasing.md", lambda fh: fh.write(report.encode()))
    return data
