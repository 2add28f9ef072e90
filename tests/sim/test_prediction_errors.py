"""The runtime predictors measured on their own (rlsched/sim/prediction_errors.py)."""

from __future__ import annotations

import numpy as np

from rlsched.core.runtime import usable_requested
from rlsched.sim.prediction_errors import prediction_errors
from rlsched.sim.workloads.lal import generate_lal


def test_the_request_never_under_predicts_and_its_error_is_the_mean_overestimate() -> None:
    workload = generate_lal(0, scale=0.02)
    scores = {s.model: s for s in prediction_errors(workload)}
    assert set(scores) == {"requested", "user-last2", "learned"}
    request = usable_requested(workload.req_time.astype(np.float64), workload.job_class)
    run = np.minimum(np.maximum(workload.run.astype(np.float64), 0.0), request)
    assert scores["requested"].under_share == 0.0
    assert scores["requested"].mean_abs_error_s == np.mean(request - run)
    assert scores["user-last2"].under_share > 0.0 and scores["user-last2"].jobs == len(workload)
