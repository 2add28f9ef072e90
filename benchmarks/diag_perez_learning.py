"""Why does (or doesn't) the learned Perez scheduler learn?  A reproducible diagnostic (issue 3).

For each policy on LAL-like TUNING seeds (≥ 1000, never the seeds ``perez.py`` reports) it
prints the interactive and batch mean responsiveness W (P-grid Eq. 1, first and last
``trim`` jobs dropped as in P-grid §4.1) and, for the learned agents, what the learner did:

- ``decisions``: gate-mode releases; ``choices``: those with more than one candidate
  (only these can be learned from: a single candidate leaves nothing to choose);
- ``rewards``: decisions whose delayed reward (the job's completion) reached the learner;
- ``refits``: read-out re-fits;
- ``q_spread``: median of max − min Q over the candidates of one greedy choice (0 means
  the Q-function cannot tell the candidates apart);
- ``F``: mean fairness utility (P-grid Eq. 2) over the job starts, see :func:`mean_fairness`;
- ``mixed``: greedy choices where both classes were candidates, and ``inter_pick``: the
  fraction of those where the greedy pick was an interactive job (interactive-first: 1).

Run: ``.venv/bin/python benchmarks/diag_perez_learning.py --seeds 1000 1001 1002``
(``--scale 0.3`` for a faster, smaller workload; ``--policies`` to choose; ``--credit election``
for the reward credit of P-grid read literally, the one that did not learn; ``--keep-idle K``
to let the learner keep the last K idle cores for interactive arrivals, and the K of the
``interactive-first-keepidle`` rule; ``kept_idle`` counts the learner's "no job" choices).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rlsched.core.agents import CREDITS, Credit, FCFSAgent, SchedulingAgent
from rlsched.core.approximators import EchoStateQ
from rlsched.core.features import FeatureConfig, FeatureEncoder
from rlsched.core.learners import FittedQLearner, SarsaLearner
from rlsched.core.learners.base import BatchLearner
from rlsched.core.measures import fairness_utility, responsiveness
from rlsched.core.runtime import make_runtime_model
from rlsched.core.view import FloatArray, JobClass
from rlsched.sim.engine import Schedule, Simulator
from rlsched.sim.policies import simulate_policy
from rlsched.sim.summary import trim_mask
from rlsched.sim.workload import Workload
from rlsched.sim.workloads.lal import generate_lal, interactive_first_priority

LAL_CORES = 81
TRIM_JOBS = 500
TUNING_SEED_BASE = 1000
#: Column of the "class_interactive" one-hot in the action rows (rlsched.core.features).
INTERACTIVE_COLUMN = 1
LEARNED = (
    "sarsa-esn-est-0.5",
    "sarsa-esn-est-1",
    "sarsa-esn-ora-0.5",
    "sarsa-esn-ora-1",
    "fqi-esn-est-0.5",
    "fqi-esn-est-1",
)
DEFAULT_POLICIES = ("fcfs", "interactive-first", "sarsa-esn-est-0.5", "sarsa-esn-est-1")


@dataclass
class ChoiceLog:
    """What the greedy choices of one run looked like."""

    spreads: list[float] = field(default_factory=list)
    mixed: int = 0
    mixed_interactive: int = 0

    def observe(self, scores: FloatArray, actions: FloatArray) -> None:
        if actions.shape[0] < 2:
            return
        self.spreads.append(float(scores.max() - scores.min()))
        inter = actions[:, INTERACTIVE_COLUMN] > 0.5
        if inter.any() and (~inter).any():
            self.mixed += 1
            self.mixed_interactive += int(inter[int(np.argmax(scores))])


def instrument(learner: BatchLearner, log: ChoiceLog) -> None:
    """Wrap ``learner.select`` so every greedy choice is logged (same random stream, same picks)."""
    original = learner.select

    def select(state: FloatArray, actions: FloatArray, explore: bool = True) -> int:
        log.observe(learner.q.scores(state, actions), actions)
        return original(state, actions, explore)

    learner.select = select  # type: ignore[method-assign]


def build_agent(
    policy: str,
    w: Workload,
    seed: int,
    credit: Credit = "incurred",
    esn: dict[str, float] | None = None,
    keep_idle_cores: int = 0,
) -> SchedulingAgent:
    learner_name, _, rm, lam = policy.split("-")
    enc = FeatureEncoder(FeatureConfig(n_vos=len(w.vo_names)))
    q = EchoStateQ(enc.state_dim, enc.action_dim, seed=seed, **(esn or {}))  # type: ignore[arg-type]
    learner: BatchLearner = SarsaLearner(q, seed=seed) if learner_name == "sarsa" else FittedQLearner(q, seed=seed)
    runtime = make_runtime_model({"est": "estimated", "ora": "oracle"}[rm])
    shares = w.vo_shares if w.vo_shares is not None else [1.0] * len(w.vo_names)
    return SchedulingAgent(
        learner, enc, runtime, shares=shares, lam=float(lam), credit=credit, keep_idle_cores=keep_idle_cores
    )


def run_policy(
    policy: str, w: Workload, credit: Credit = "incurred", esn: dict[str, float] | None = None, keep_idle_cores: int = 0
) -> tuple[Schedule, dict[str, float]]:
    if policy == "fcfs":
        return simulate_policy(w, "fcfs", LAL_CORES).schedule, {}
    if policy == "interactive-first":
        sim = Simulator(w, LAL_CORES, priority=interactive_first_priority(w), backfill=True)
        return sim.run(), {}
    if policy == "interactive-first-keepidle":
        rule = FCFSAgent(class_first=JobClass.INTERACTIVE, keep_idle_cores=keep_idle_cores)
        return Simulator(w, LAL_CORES, agent=rule, hold_on_submit=True).run(), {}
    seed = int(w.header.get("seed", "0")) if w.header else 0
    agent = build_agent(policy, w, seed, credit, esn, keep_idle_cores)
    log = ChoiceLog()
    instrument(agent.learner, log)
    schedule = Simulator(w, LAL_CORES, agent=agent, hold_on_submit=True, name=policy).run()
    mem = agent.learner.memory
    stats = {
        "decisions": float(agent.decisions),
        "choices": float(len(log.spreads)),
        "rewards": float(np.isfinite(mem.rewards).sum()),
        "refits": float(agent.learner.refits),
        "q_spread": float(np.median(log.spreads)) if log.spreads else float("nan"),
        "mixed": float(log.mixed),
        "inter_pick": log.mixed_interactive / log.mixed if log.mixed else float("nan"),
        "kept_idle": float(agent.kept_idle),
    }
    return schedule, stats


def mean_fairness(schedule: Schedule, w: Workload, trim: int) -> float:
    """Mean fairness utility F (P-grid Eq. 2) at each job start, service counted as started work.

    ``S_k`` = VO k's share of the core-seconds started so far (a start commits the job's
    whole run), so F measures how closely the order of starts follows the target shares.
    """
    if w.vo_shares is None:
        return float("nan")
    shares = np.asarray(w.vo_shares, dtype=np.float64) / float(np.sum(w.vo_shares))
    order = np.argsort(schedule.start, kind="stable")
    work = (schedule.run * w.procs)[order]
    per_vo = np.zeros((order.size, shares.size))
    per_vo[np.arange(order.size), w.vo[order]] = work
    cum = np.cumsum(per_vo, axis=0)
    frac = cum / np.maximum(cum.sum(axis=1, keepdims=True), 1e-12)
    f = fairness_utility(frac, shares)
    return float(f[trim : order.size - trim].mean())


def class_means(schedule: Schedule, w: Workload, trim: int) -> tuple[float, float]:
    keep = trim_mask(len(w), trim)
    wv = responsiveness(run_s=schedule.run[keep], wait_s=schedule.wait[keep])
    cls = w.job_class[keep]
    return float(wv[cls == int(JobClass.INTERACTIVE)].mean()), float(wv[cls == int(JobClass.BATCH)].mean())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1000, 1001, 1002])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument(
        "--policies",
        nargs="+",
        default=list(DEFAULT_POLICIES),
        choices=["fcfs", "interactive-first", "interactive-first-keepidle", *LEARNED],
    )
    parser.add_argument(
        "--credit",
        choices=CREDITS,
        default="incurred",
        help="credit of the W part of the reward (election: P-grid read literally)",
    )
    parser.add_argument(
        "--keep-idle",
        type=int,
        default=0,
        metavar="K",
        help="offer the learner the 'keep the last K cores idle' action (0: never); "
        "also the K of interactive-first-keepidle",
    )
    parser.add_argument(
        "--esn",
        nargs="*",
        default=[],
        metavar="KEY=VALUE",
        help="EchoStateQ keyword overrides, e.g. ridge_alpha=1 (tuning seeds only)",
    )
    args = parser.parse_args(argv)
    esn = {k: float(v) for k, v in (item.split("=", 1) for item in args.esn)}
    if any(s < TUNING_SEED_BASE for s in args.seeds):
        parser.error(f"diagnose on tuning seeds ≥ {TUNING_SEED_BASE} only (lower seeds are for reported tables)")
    trim = round(TRIM_JOBS * min(args.scale, 1.0))
    keys = ("decisions", "choices", "rewards", "refits", "q_spread", "mixed", "inter_pick", "kept_idle")
    print(
        f"{'policy':22s} {'seed':>5s} {'W_int':>6s} {'W_bat':>6s} {'F':>6s} "
        + " ".join(f"{k:>10s}" for k in keys)
        + f" {'wall_s':>7s}"
    )
    for policy in args.policies:
        rows = []
        for seed in args.seeds:
            w = generate_lal(seed, scale=args.scale)
            started = time.perf_counter()
            schedule, stats = run_policy(policy, w, args.credit, esn, args.keep_idle)
            w_int, w_bat = class_means(schedule, w, trim)
            fair = mean_fairness(schedule, w, trim)
            rows.append((w_int, w_bat, fair))
            print(
                f"{policy:22s} {seed:5d} {w_int:6.3f} {w_bat:6.3f} {fair:6.3f} "
                + " ".join(f"{stats.get(k, float('nan')):10.3g}" for k in keys)
                + f" {time.perf_counter() - started:7.1f}",
                flush=True,
            )
        mean = np.mean(rows, axis=0)
        print(f"{policy:22s} {'mean':>5s} {mean[0]:6.3f} {mean[1]:6.3f} {mean[2]:6.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
