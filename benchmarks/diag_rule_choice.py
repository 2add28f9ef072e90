"""Would the rule deployed instead of a losing model be better chosen on jittered validation replays?

For each trace of a committed ``rlsched learning`` table (its ``results.json``), the validation window is
replayed three more times under every candidate rule with every submit moved by up to ±300 s (seeds 1–3), in
the table's mode and objective; the rule with the best mean over the four replays (as recorded and the three
jittered) is compared, on the test window, with the rule the recorded validation window alone picks.  Prints
each pick's test score over the test window's best rule (hindsight).  docs/workflow.md quotes it
("The rule deployed instead"); the idea was not built because it picked worse rules.

Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_rule_choice [--table docs/results/learning]
[--traces KTH-SP2-1996-2.1-cln,…]`` (default: every trace of the table).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.learning_table import CommittedTable, add_table_options, read_table, replay_cores, table_windows  # noqa: E402
from rlsched.workflow.learning import JITTER_S, JITTER_SEEDS  # noqa: E402
from rlsched.workflow.verdict import score_rules  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_options(parser)
    args = parser.parse_args()
    table = read_table(args.table)
    settings, objective, deployment, sign = table.settings, table.objective, table.deployment, table.sign
    print(f"{'trace':<28}{'validation picks':>40}{'/ best':>8}{'jittered mean picks':>40}{'/ best':>8}")
    for row in table.chosen(args.traces):
        validation = table_windows(row, settings)["validation"]
        cores = replay_cores(row)
        replays = {label: [float(v["validation"])] for label, v in row["rules"].items()}
        for seed in JITTER_SEEDS:
            jittered = score_rules(validation.jittered(seed, JITTER_S), deployment, objective, cores=cores)
            for label, score in jittered.scores.items():
                replays.setdefault(label, []).append(score)
        by_mean = min(row["rules"], key=lambda label: sign * float(np.mean(replays[label])))
        by_recorded = row["validation_pick"]["rule"]
        print(
            f"{row['trace']:<28}{by_recorded:>40}{ratio(table, row, by_recorded):>8.2f}"
            f"{by_mean:>40}{ratio(table, row, by_mean):>8.2f}",
            flush=True,
        )


def ratio(table: CommittedTable, row: dict[str, Any], rule: str) -> float:
    """A rule's test score over the test window's best rule (≥ 1)."""
    return table.over_best(float(row["rules"][rule]["test"]), float(row["best_rule_test"]["test"]))


if __name__ == "__main__":
    main()
