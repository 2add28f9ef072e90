"""What the FH run (:mod:`rlsched.sim.experiments.fh`) and its report (:mod:`.fh_report`) both read.

FH's published numbers (Tables 2–4) are ``rlsched.sim.hybrid_cloud.setups.FH_PUBLISHED``, beside the
setups they were measured on (the leasing evaluation reads them too).
"""

from __future__ import annotations

#: Random-V runs per trace (FH §3: 1000), split into tasks of this many runs each.
RANDOM_RUNS = 1000
RANDOM_CHUNK = 250
#: θ values the state-aware rules are tuned over (leave one trace out).
THRESHOLDS = (0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
#: The daily learner's hyper-parameter grid (horizon H days, bins per feature, prior days, continuation, transfer days),
#: tuned leave one trace out; the quick mode runs the first one only.
#: The last field is the prior's weight in days (0: cold start; > 0: a prior from the *other* FH traces'
#: daily clones, :class:`rlsched.core.leasing.DailyPrior`).
DailySetting = tuple[int, int, float, str, float]
DAILY_GRID: tuple[DailySetting, ...] = (
    (7, 3, 3.0, "held", 0.0),
    (7, 3, 10.0, "held", 0.0),
    (7, 3, 3.0, "followed", 0.0),
    (14, 3, 10.0, "followed", 0.0),
    (7, 3, 3.0, "held", 30.0),
    (7, 1, 3.0, "held", 30.0),
    (14, 1, 3.0, "held", 30.0),
    (7, 3, 10.0, "held", 30.0),
)
#: Jittered replays the daily learner and the constant V are compared on besides the recorded trace.
JITTER_SEEDS = (1, 2, 3, 4)
#: The fractions of M a held-out constant V is chosen among (``fh._constant_held_out``).
CONSTANT_FRACTIONS = tuple(i / 100 for i in range(101))
QUICK_SETUPS = ("kth-quick",)
QUICK_RANDOM_RUNS = 40
#: The whole files, each on its own header's machine size.
FILE_SETUPS = ("ctc-file", "sdsc-file")
#: Where the gap of the daily learner to the best constant V is split (its first month is learning).
GAP_SPLIT_DAYS = 30
#: The report's rows of the state-aware rules, by sweep policy: held for a day, or at every pass.
OURS_ROWS = (("ours-daily", "per-pass-held-daily"), ("ours", "per-pass-rule"))
#: Figure labels of the policies.
CURVE_LABELS = {
    "qlearning": "FH Q-learning",
    "daily": "daily learned",
    "ours-daily": "per-pass rule held a day",
    "ours": "per-pass rule",
}
