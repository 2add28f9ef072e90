"""Figures and ``report.md`` of the FH experiments (:mod:`rlsched.sim.experiments.fh` runs them).

- ``fig5_<setup>_balance_vs_V.png``: balance of every constant V (FH Fig. 5);
- ``fig6_<setup>_balance_over_time.png``: the balance so far, day by day, of the best constant
  V, Q-learning, our policy and the random runs' mean (FH Fig. 6);
- ``v_over_time_<setup>.png``: the V each policy used;
- ``report.md``: FH's Tables 2–4 beside ours, timing, our policy's θ per trace.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from rlsched.sim.experiments.harness import pyplot, save_figure
from rlsched.sim.leasing.setups import FH_PUBLISHED, SETUPS


def _cumulative_balance(day_twt: np.ndarray, day_cost: np.ndarray, ref_twt: np.ndarray,
                        ref_cost: np.ndarray) -> np.ndarray:
    """Balance of the run so far, day by day (FH Fig. 6), against the references so far."""
    ct, cc = np.cumsum(day_twt, axis=-1), np.cumsum(day_cost, axis=-1)
    rt, rc = np.cumsum(ref_twt), np.cumsum(ref_cost)
    with np.errstate(divide="ignore", invalid="ignore"):
        imp = np.where(rt > 0, 100.0 - 100.0 * ct / np.where(rt > 0, rt, 1.0), 0.0)
        cost = np.where(rc > 0, 100.0 * cc / np.where(rc > 0, rc, 1.0), 0.0)
    return np.asarray(imp - cost)


def figures(out: Path, name: str, by: dict[str, dict[str, Any]]) -> list[str]:
    """FH Figs. 5–6 and V over time for one setup; returns the file names."""
    plt = pyplot()
    files: list[str] = []

    def save(fig: Any, filename: str) -> None:
        files.append(save_figure(fig, out / filename))

    const = by["constant"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(const["V"], const["balance"], lw=1)
    best = int(np.argmax(const["balance"]))
    ax.axvline(const["V"][best], color="grey", ls=":", lw=1)
    ax.set_xlabel("constant V (cloud nodes)")
    ax.set_ylabel("balance")
    ax.set_title(f"{SETUPS[name].label}: balance vs constant V (FH Fig. 5)")
    save(fig, f"fig5_{name}_balance_vs_V.png")

    ref_twt, ref_cost = np.asarray(const["ref_day_twt"]), np.asarray(const["ref_day_cost"])
    days = np.arange(1, len(ref_twt) + 1)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    curves = {f"constant V={const['V'][best]}": (np.asarray(const["day_twt"][best]),
                                                  np.asarray(const["day_cost"][best]))}
    for policy in ("qlearning", "ours"):
        if policy in by:
            curves[policy] = (np.asarray(by[policy]["day_twt"][0]), np.asarray(by[policy]["day_cost"][0]))
    for label, (t, c) in curves.items():
        ax.plot(days, _cumulative_balance(t, c, ref_twt, ref_cost), lw=1, label=label)
    rnd = by["random"]
    rnd_bal = _cumulative_balance(np.asarray(rnd["day_twt"]), np.asarray(rnd["day_cost"]), ref_twt, ref_cost)
    ax.plot(days, rnd_bal.mean(axis=0), lw=1, label="random (mean)")
    ax.set_xlabel("day")
    ax.set_ylabel("balance so far")
    ax.set_ylim(-20, None)
    ax.legend(fontsize=7)
    ax.set_title(f"{SETUPS[name].label}: balance over time (FH Fig. 6)")
    save(fig, f"fig6_{name}_balance_over_time.png")

    if "qlearning" in by or "ours" in by:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot(days, np.full(len(days), const["V"][best]), lw=1, label=f"constant V={const['V'][best]}")
        for policy, label in (("qlearning", "Q-learning V"), ("ours", "ours (peak cloud nodes of the day)")):
            if policy in by:
                ax.step(days, by[policy]["day_caps"][0], lw=1, where="post", label=label)
        ax.set_xlabel("day")
        ax.set_ylabel("V")
        ax.legend(fontsize=7)
        ax.set_title(f"{SETUPS[name].label}: V over time")
        save(fig, f"v_over_time_{name}.png")
    return files


def _fmt(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:.2f}"
    return str(x)


def report_markdown(payload: dict[str, Any], names: tuple[str, ...]) -> str:
    rows = payload["rows"]
    lines = ["# Fölling & Hofmann cloud leasing: reproduction", "",
             f"Wall time {payload['wall_s']:.0f} s on {payload['workers']} worker(s).", "",
             "Setups (see docs/leasing.md for the differences with FH's trace versions):", ""]
    for n in names:
        pub = FH_PUBLISHED.get(n)
        extra = f" — FH: {int(pub['jobs'])} jobs, M={int(pub['M'])}" if pub else ""
        lines.append(f"- `{n}`: {payload['setups'][n]}, {payload['jobs'][n]} jobs{extra}")
    lines += ["", "| trace | policy | V | twt_imp % | cost % | balance "
              "| FH twt_imp % | FH cost % | FH balance |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        pub = FH_PUBLISHED.get(r["trace"], {})
        best = (pub.get("best_twt_imp"), pub.get("best_cost"), pub.get("best_balance"))
        published = {"constant-best": best,
                     "random-mean": (None, None, pub.get("random_mean")),
                     "random-best": (None, None, pub.get("random_best")),
                     "qlearning": (pub.get("q_twt_imp"), pub.get("q_cost"), pub.get("q_balance"))}
        fh = published.get(r["policy"], (None, None, None))
        v = r["V"]
        if r["policy"] == "constant-best" and pub:
            v = f"{v} (FH {int(pub['best_V'])})"
        lines.append(f"| {r['trace']} | {r['policy']} | {_fmt(v)} | {_fmt(r['twt_imp_pct'])} "
                     f"| {_fmt(r['cost_pct'])} "
                     f"| {_fmt(r['balance'])} | {_fmt(fh[0])} | {_fmt(fh[1])} | {_fmt(fh[2])} |")
    lines += ["", "`qlearning` counts a clone's day as FH's event simulator most likely did (the waits of "
              "the jobs started that day, the full cost of the jobs sent that day); `qlearning-accrued` "
              "integrates wait and cloud use within the day instead (carried-over jobs then count in every "
              "clone, which dilutes the "
              "cost term and pushes V up). FH do not say which; both are reported.", "",
              "## Timing", "", "| trace | M | days | jobs | constant sweep s (sims) | random s (sims) | "
              "Q-learning s | per day ms | per evaluated V µs |", "|---|---|---|---|---|---|---|---|---|"]
    for n, t in payload["timing"].items():
        lines.append(f"| {n} | {t['M']} | {t['days']} | {t['jobs']} | {t['constant_sweep_s']:.1f} "
                     f"({t['constant_simulations']}) | {t['random_s']:.1f} ({t['random_simulations']}) | "
                     f"{_fmt(t.get('qlearning_s'))} | {_fmt(t.get('per_day_ms'))} | "
                     f"{_fmt(t.get('per_evaluated_V_us'))} |")
    ours = [r for r in rows if r["policy"] == "ours"]
    if ours:
        lines += ["", "## Our policy", "", "θ per trace chosen on the other traces (leave one trace out); "
                  "balance for every θ:", ""]
        for r in ours:
            by = ", ".join(f"θ={k:g}: {v:.2f}" for k, v in r["balance_by_threshold"].items())
            lines.append(f"- {r['trace']}: reported θ={r['threshold']:g}; {by}")
    lines += ["", "Figures: " + ", ".join(f"`{f}`" for f in payload["figures"]), ""]
    return "\n".join(lines)
