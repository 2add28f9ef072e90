"""benchmarks/diag_scored_ensemble.py: the seeds' scoring functions averaged as unit vectors, and the summary's
ratios and misses."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from benchmarks.diag_scored_ensemble import averaged_spec, summary, verdict_outcome
from benchmarks.learning_table import CommittedTable
from rlsched.core.policies.spec import split_policy

FEATURES = "log_req/log_cores/log_pred"


def scored(*weights: float) -> str:
    return f"scored:backfill=true,features={FEATURES},runtime_model=learned,weights={'/'.join(map(str, weights))}"


def weights_of(spec: str) -> np.ndarray:
    name, params = split_policy(spec)
    assert name == "scored" and params["features"] == FEATURES and params["runtime_model"] == "learned"
    return np.array([float(w) for w in params["weights"].split("/")])


def test_the_average_is_the_mean_of_unit_vectors_at_unit_length() -> None:
    # The second seed's weights are 10 times longer: as unit vectors both count alike.
    got = weights_of(averaged_spec([scored(1.0, 0.0, 0.0), scored(0.0, 10.0, 0.0)]))
    assert got == pytest.approx([2**-0.5, 2**-0.5, 0.0])
    same = weights_of(averaged_spec([scored(0.6, 0.8, 0.0)] * 3))
    assert same == pytest.approx([0.6, 0.8, 0.0])


def test_seeds_of_other_features_or_cancelling_weights_are_refused() -> None:
    other = scored(1.0, 0.0, 0.0).replace(FEATURES, "log_req/log_cores/submit_h")
    with pytest.raises(ValueError, match="same features"):
        averaged_spec([scored(1.0, 0.0, 0.0), other])
    with pytest.raises(ValueError, match="cancel"):
        averaged_spec([scored(1.0, 0.0, 0.0), scored(-1.0, 0.0, 0.0)])


def test_the_summary_counts_a_miss_only_beyond_the_larger_spread() -> None:
    table = CommittedTable(settings={"objective": {"name": "bsld", "class_weights": {}}}, rows=[])

    def stats(what: str, mean: float, spread: float) -> dict[str, Any]:
        return {"what": what, "mean": mean, "spread": spread}

    rule = stats("f1", 12.0, 2.5)  # worse than the best, but within the larger spread: a tie
    picks = {
        "seed": stats("seed 1", 13.0, 1.0),  # worse beyond the spread: a miss
        "average": stats("average", 9.0, 0.5),  # better
        "seed_if_beats": rule,
        "average_if_beats": stats("average", 9.0, 0.5),
        "seed_unless_loses": rule,
        "average_unless_loses": stats("average", 10.5, 1.0),  # worse within the spread: a tie
    }
    result = {
        "trace": "t",
        "best": stats("f2", 10.0, 1.0),
        "picks": picks,
        "outcomes": {"seed": "loses", "average": "beats"},
    }
    lines = summary(table, [result])
    assert lines[1].split()[2:8] == ["1.300*", "0.900", "1.200", "0.900", "1.200", "1.050"]
    assert lines[-1].split()[-6:] == ["1", "0", "0", "0", "0", "0"]


def test_the_verdict_is_trains_the_spread_makes_a_tie() -> None:
    table = CommittedTable(settings={"objective": {"name": "bsld", "class_weights": {}}}, rows=[])
    verdict = {"rule_score": 10.0, "spread": 0.5}
    assert verdict_outcome(table, verdict, 9.0) == "beats"
    assert verdict_outcome(table, verdict, 9.6) == "ties"
    assert verdict_outcome(table, verdict, 10.4) == "ties"
    assert verdict_outcome(table, verdict, 11.0) == "loses"
