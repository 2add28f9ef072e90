"""``perez-fqi``: P-fqi Tables 2–3 — ESN fitted-Q iteration against a feed-forward net, oracle vs estimated.

P-fqi §4.3 runs the Echo State Network fitted-Q iteration (Alg. 1, policy ``fqi-esn``) and
the same iteration with a feed-forward network Q-function (``fqi-ffnn``, the paper's
"RL-NN"), each under the ``oracle`` and ``estimated`` runtime models, with λ_s = 0.5, on
the LAL trace, against the native EGEE schedule.  Here, on the LAL-like workload (81
cores) and on the LPC-EGEE window of :mod:`rlsched.sim.experiments.perez_common`:

- ``fqi-esn``, ``fqi-ffnn`` × {oracle, estimated} × λ ∈ {0.5, 1} (λ = 1 is ours: the issue
  asks for both, P-fqi reports 0.5 only);
- ``fcfs``, ``easy``, ``easy-sjf``, the class-reading rules ``interactive-first`` and
  ``interactive-first-sjf``, Slurm's ``multifactor`` with fair-share on the VO target shares, and
  ``native`` on LPC-EGEE (its recorded schedule);
- on LPC-EGEE, both information protocols (:data:`rlsched.sim.experiments.perez_common.PROTOCOLS`): the
  class from the actual runtime (the papers'), and the class a live scheduler knows (requested time);
  under the second, estimated runtimes only.

Outputs as every Perez experiment: ``results.json`` (one row per workload × policy ×
setting × class, pooled over the reporting seeds), ``report.md`` (P-fqi Tables 2–3
published beside ours) and the figures of :mod:`rlsched.sim.experiments.perez_report`
(inverse CDF of W, CDF of the interactive wait, fairness difference over time —
P-fqi Figs. 2–4).

Cost (2 cores): a full run is 8 learned settings × 3 seeds on about 9,500 LAL-like jobs
and about 12,000 LPC-EGEE jobs; docs/perez.md gives the measured wall times.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlsched.sim.experiments import Experiment, perez_report
from rlsched.sim.experiments.perez import plan, reported_seeds, resolve_lpc, run_experiment
from rlsched.sim.experiments.perez_common import CLASSIC_POLICIES, PROTOCOLS, SAME_INFO_RULES

#: P-fqi §4.3: the two Q-function approximators under fitted-Q iteration.
FQI_POLICIES = ("fqi-esn", "fqi-ffnn")


def run_fqi(
    out_dir: Path,
    *,
    quick: bool = False,
    seed: int = 0,
    n_seeds: int | None = None,
    lpc: bool | None = None,
    workers: int | None = None,
    scale: float | None = None,
    lpc_window_days: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """P-fqi Tables 2–3; writes results.json, report.md and figures into ``out_dir``.

    ``lpc=None`` runs LPC-EGEE in full mode (error when the trace is missing) and in quick
    mode when the trace is found; ``scale`` overrides the LAL-like scale and
    ``lpc_window_days`` the LPC-EGEE window (tests use less than quick mode);
    ``n_seeds`` defaults to 3 (1 in quick mode); ``workers`` to 2 processes.
    """
    seeds = reported_seeds(seed, n_seeds, quick)
    use_lpc, why = resolve_lpc(lpc, quick)
    specs = plan(
        quick=quick,
        seeds=seeds,
        lpc=use_lpc,
        learned=FQI_POLICIES,
        scale=scale,
        classic=(*CLASSIC_POLICIES, *SAME_INFO_RULES),
        lpc_window_days=lpc_window_days,
        protocols=PROTOCOLS,
    )
    return run_experiment(
        "perez-fqi", out_dir, specs, quick=quick, seeds=seeds, workers=workers, notes=[why] if why else []
    )


EXPERIMENTS = {
    "perez-fqi": Experiment(
        "perez-fqi",
        "Perez et al. P-fqi Tables 2-3: ESN vs FFNN fitted-Q iteration (oracle/estimated, λ=0.5/1) "
        "vs FCFS, EASY, EASY-SJF (and the recorded native schedule on LPC-EGEE)",
        run_fqi,
        perez_report.report_markdown,
    ),
}
