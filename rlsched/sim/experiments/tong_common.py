"""What the Tong run (:mod:`rlsched.sim.experiments.tong`) and its report (:mod:`.tong_report`) both read.

Measurement (Tong §6.3): "the average response time is measured over 100 tasks after
learning converges", and the spread is taken over 50 flows with the same statistics.  We
use flows of 1000 tasks (§6.1: "learns the flow of 1000 tasks") and report, per flow,
the mean response of tasks 500–599 (the *paper window*: convergence is reached after
about 500 updates, Fig. 3) and of tasks 500–999 (the *long window*, less noisy).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from rlsched.sim.dispatch.workloads import LpcSetting, burst_time_fraction

TRACE_FILE = "LPC-EGEE-2004-1.2-cln.swf.gz"
#: The four learners (see ``rlsched.sim.dispatch.compare.LEARNERS``): reward 1/response or
#: −response, learning when a task is placed (the reading of Alg. 1) or when it completes.
LEARNER_VARIANTS = ("qlearning", "qlearning-neg", "qlearning-delayed", "qlearning-neg-delayed")
#: §6.1: "learns the flow of 1000 tasks".
TASKS_PER_FLOW = 1000
#: Fig. 3: convergence after about 500 updates; the windows start there.
WARMUP_TASKS = 500
#: §6.3: "measured over 100 tasks after learning converges".
PAPER_WINDOW = 100
H = 3600.0

#: Tong Figs. 4–5: the learner's mean response (h) at λ = 80 under each arrival law.
LEARNER_LAMBDA80_BY_LAW_H: dict[str, float] = {
    "exponential": 0.0481,
    "constant": 0.0518,
    "uniform": 0.0478,
    "chisquare": 0.0472,
}
#: Tong Table 4: average response time (h) and convergence iteration by exploration probability p_e
#: (the paper gives no iteration count for 0.4).
TABLE4_ART_H: dict[float, float] = {0.1: 0.0562, 0.15: 0.0483, 0.2: 0.0419, 0.25: 0.0451, 0.3: 0.0507, 0.4: 0.0726}
TABLE4_CI: dict[float, int | None] = {0.1: 425, 0.15: 482, 0.2: 547, 0.25: 677, 0.3: 829, 0.4: None}
#: What Tong et al. publish (§6), for the report and results.json.  LPC (§6.3.2): on 15 CPUs the learner
#: reaches about 2.2 h, about 1 h better than the others; the ideal is 52 % short tasks of 0.1 h and
#: 48 % long ones of 1.5 h.
PUBLISHED: dict[str, Any] = {
    "convergence_updates": 500,
    "learner_lambda80_by_law_h": LEARNER_LAMBDA80_BY_LAW_H,
    "table4_art_h": TABLE4_ART_H,
    "table4_ci": TABLE4_CI,
    "lpc15_learner_h": 2.2,
    "lpc15_margin_h": 1.0,
    "lpc_ideal_h": 0.52 * 0.1 + 0.48 * 1.5,
}

LPC_POLICIES = (
    "qlearning",
    "qlearning-neg",
    "ect",
    "min-min",
    "max-min",
    "suffrage",
    "random",
    "qlearning-delayed",
    "qlearning-neg-delayed",
)
#: §6.3.2 read literally: "one third tasks arrive ... at the rate of 66/h" (12.6/h on average).
TASK_SHARE_BURST_FRACTION = burst_time_fraction(1.0 / 3.0, LpcSetting.burst_rate_per_h, LpcSetting.base_rate_per_h)


@dataclass(frozen=True)
class Sizes:
    """How much Tong §6 to run: the full sizes take minutes on 2 cores, the quick ones seconds."""

    flows: int
    rates: tuple[float, ...]
    lpc_days: float
    lpc_flows: int
    gammas: tuple[float, ...]
    epsilons: tuple[float, ...]
    replay_days: float | None
    workers: int

    @staticmethod
    def make(quick: bool) -> Sizes:
        if quick:
            return Sizes(
                flows=3,
                rates=(40.0, 80.0),
                lpc_days=4.0,
                lpc_flows=1,
                gammas=(0.0, 0.9),
                epsilons=(0.1, 0.2),
                replay_days=4.0,
                workers=1,
            )
        return Sizes(
            flows=50,
            rates=(20.0, 40.0, 60.0, 80.0, 100.0),
            lpc_days=163.0,
            lpc_flows=3,
            gammas=(0.0, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99),
            epsilons=(0.1, 0.15, 0.2, 0.25, 0.3, 0.4),
            replay_days=163.0,
            workers=min(2, os.cpu_count() or 1),
        )
