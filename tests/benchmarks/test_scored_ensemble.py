"""benchmarks/diag_scored_ensemble.py: the seeds' scoring functions averaged as unit vectors, and the summary's
ratios and misses."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.diag_scored_ensemble import averaged_spec, summary
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

    def stats(mean: float, spread: float) -> dict[str, float]:
        return {"mean": mean, "spread": spread}

    result = {
        "trace": "t",
        "best": stats(10.0, 1.0),
        "selected": {"what": "seed 1", **stats(13.0, 1.0)},  # worse beyond the spread: a miss
        "runs": {"average": {"test": stats(10.5, 1.0)}},  # worse within it: a tie
        "deployed_scored": {"what": "f1", **stats(12.0, 2.5)},  # worse within the larger spread
        "average_deployed": {"what": "average", **stats(9.0, 0.5)},  # better
        "average_verdict": "beats",
    }
    lines = summary(table, [result])
    assert lines[1].split()[2:6] == ["1.300*", "1.050", "1.200", "0.900"]
    assert lines[-1].split()[-4:] == ["1", "0", "0", "0"]
