"""The class rule on many jobs at once gives exactly what it gives job by job."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rlsched.core.classify import ClassRule

NAMES = st.sampled_from(["", "normal", "express", "debug", "short", "long", "debug,short", "long,express"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(NAMES, NAMES, st.sampled_from([0.0, 60.0, 899.0, 900.0, 901.0, 3600.0, np.inf])), max_size=30),
    st.frozensets(NAMES),
    st.frozensets(NAMES),
    st.sampled_from([None, 0.0, 900.0, np.inf]),
)
def test_classify_columns_is_classify_job_by_job(
    jobs: list[tuple[str, str, float]], qos: frozenset[str], partitions: frozenset[str], max_time_s: float | None
) -> None:
    rule = ClassRule(qos, partitions, max_time_s)
    expected = [int(rule.classify(q, p, t)) for q, p, t in jobs]
    got = rule.classify_columns(
        [q for q, _, _ in jobs], [p for _, p, _ in jobs], np.array([t for _, _, t in jobs], dtype=np.float64)
    )
    assert got.dtype == np.int64 and got.tolist() == expected
