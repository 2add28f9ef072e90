"""The site's objective: bsld / wait / W by hand, class weights, one-line errors."""

from __future__ import annotations

import numpy as np
import pytest

from rlsched.core.objective import Objective, ObjectiveError, parse_class_weights
from rlsched.core.view import JobClass

RUN = np.array([5.0, 100.0, 1000.0])
WAIT = np.array([15.0, 100.0, 0.0])
CLS = np.array([int(JobClass.INTERACTIVE), int(JobClass.BATCH), int(JobClass.BATCH)])


def test_each_objective_by_hand() -> None:
    # bsld: max((wait + run) / max(run, 10), 1): 20/10 = 2, 200/100 = 2, 1000/1000 = 1.
    assert Objective("bsld").score(RUN, WAIT, CLS) == pytest.approx((2 + 2 + 1) / 3)
    assert Objective("wait").score(RUN, WAIT, CLS) == pytest.approx(115 / 3)
    assert Objective("W").score(RUN, WAIT, CLS) == pytest.approx((5 / 20 + 0.5 + 1) / 3)
    assert not Objective("bsld").higher_is_better and Objective("W").higher_is_better
    assert Objective("W").better(0.9, 0.8) and Objective("bsld").better(1.5, 2.0)


def test_class_weights_count_a_class_more() -> None:
    weighted = Objective("wait", {"interactive": 3})
    assert weighted.score(RUN, WAIT, CLS) == pytest.approx((3 * 15 + 100 + 0) / 5)
    assert weighted.label() == "wait (interactive ×3)"
    assert Objective.from_dict(weighted.to_dict()) == weighted


@pytest.mark.parametrize(
    ("build", "fragment"),
    [
        (lambda: Objective("slowdown"), "expected one of bsld, wait, W"),
        (lambda: Objective("W", {"gpu": 2}), "class weight 'gpu'"),
        (lambda: Objective("W", {"interactive": 0}), "> 0"),
        (lambda: parse_class_weights(["interactive"]), "CLASS=NUMBER"),
        (lambda: parse_class_weights(["interactive=x"]), "CLASS=NUMBER"),
    ],
)
def test_bad_objectives_are_one_line_errors(build: object, fragment: str) -> None:
    with pytest.raises(ObjectiveError, match=fragment) as info:
        build()  # type: ignore[operator]
    assert "\n" not in str(info.value)
