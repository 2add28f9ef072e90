"""The view's optional user column (rlsched.core.view): empty means unknown, else one id per job."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.view import UNKNOWN_USER, PendingJobs, RunningJobs, user_id, users_of


def _pending(user: list[int]) -> PendingJobs:
    return PendingJobs(
        job_id=np.array([1, 2]),
        vo=np.zeros(2, dtype=np.int64),
        job_class=np.zeros(2, dtype=np.int64),
        cores=np.ones(2, dtype=np.int64),
        req_time_s=np.ones(2),
        submit_s=np.zeros(2),
        oracle_run_s=np.full(2, np.nan),
        held=np.zeros(2, dtype=bool),
        user=np.array(user, dtype=np.int64),
    )


def test_users_are_read_where_known_and_unknown_otherwise() -> None:
    assert users_of(_pending([7, 8])).tolist() == [7, 8]
    assert users_of(_pending([])).tolist() == [UNKNOWN_USER, UNKNOWN_USER]


def test_a_user_column_of_the_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="PendingJobs: user must be empty"):
        _pending([7])
    with pytest.raises(ValueError, match="RunningJobs: user must be empty"):
        RunningJobs(
            job_id=np.array([1]),
            vo=np.zeros(1, dtype=np.int64),
            job_class=np.zeros(1, dtype=np.int64),
            cores=np.ones(1, dtype=np.int64),
            req_time_s=np.ones(1),
            submit_s=np.zeros(1),
            start_s=np.zeros(1),
            user=np.array([1, 2]),
        )


def test_a_live_user_id_is_stable_and_tells_names_apart() -> None:
    # CRC-32 (IEEE) of the UTF-8 name: the same in every process, so a predictor's history survives a restart.
    assert user_id("alice") == 0x278EBC47
    assert user_id("alice") != user_id("bob")
