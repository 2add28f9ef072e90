"""What a site optimises: the objective a policy is judged (and selected, and refused) by.

- ``bsld``: the mean bounded slowdown, max((wait + run) / max(run, τ), 1) with τ = 10 s
  (:func:`rlsched.core.measures.bounded_slowdown`); lower is better.  The default.
- ``wait``: the mean wait in seconds; lower is better.
- ``W``: P-grid's mean responsiveness W = run / (run + wait) (Eq. 1); higher is better.

Optional class weights make one class count more: ``{"interactive": 3}`` weighs each
interactive job three times a batch job in the mean (a class left out weighs 1).

The daemon config names it in ``[agent]`` (``objective = "bsld"``, ``class_weights =
{interactive = 3}``), ``rlsched train``/``evaluate`` take ``--objective`` and ``--class-weight``,
and a trained model records it with its verdict.  Pure: only NumPy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rlsched.core.errors import RlschedError
from rlsched.core.measures import bounded_slowdown, responsiveness
from rlsched.core.view import FloatArray, IntArray, JobClass

#: The objectives, with their titles and whether higher is better.
OBJECTIVES: dict[str, tuple[str, bool]] = {
    "bsld": ("mean bounded slowdown (τ = 10 s)", False),
    "wait": ("mean wait s", False),
    "W": ("mean W", True),
}
DEFAULT_OBJECTIVE = "bsld"
#: The class names a weight may name (``JobClass`` values by name).
CLASS_NAMES: dict[str, int] = {"interactive": int(JobClass.INTERACTIVE), "batch": int(JobClass.BATCH)}


class ObjectiveError(RlschedError, ValueError):
    """A bad objective name or class weight (one line for the user)."""


@dataclass(frozen=True)
class Objective:
    """An objective name with optional class weights (see the module docstring)."""

    name: str = DEFAULT_OBJECTIVE
    class_weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.name not in OBJECTIVES:
            raise ObjectiveError(f"objective {self.name!r}: expected one of {', '.join(OBJECTIVES)}")
        for cls, weight in self.class_weights.items():
            if cls not in CLASS_NAMES:
                raise ObjectiveError(f"class weight {cls!r}: expected a class among {', '.join(CLASS_NAMES)}")
            if (
                isinstance(weight, bool)
                or not isinstance(weight, int | float)
                or not np.isfinite(weight)
                or weight <= 0
            ):
                raise ObjectiveError(f"class weight {cls}={weight!r}: expected a finite number > 0")

    @property
    def higher_is_better(self) -> bool:
        return OBJECTIVES[self.name][1]

    @property
    def title(self) -> str:
        return OBJECTIVES[self.name][0]

    def label(self) -> str:
        """``bsld`` or ``W (interactive ×3)``: how tables and the verdict line name it."""
        weights = {k: float(v) for k, v in self.class_weights.items() if float(v) != 1.0}
        if not weights:
            return self.name
        return f"{self.name} (" + ", ".join(f"{k} ×{v:g}" for k, v in sorted(weights.items())) + ")"

    def values(self, run_s: FloatArray, wait_s: FloatArray) -> FloatArray:
        """Each job's value of the objective (its bounded slowdown, wait or W), unweighted."""
        run = np.asarray(run_s, dtype=np.float64)
        wait = np.maximum(np.asarray(wait_s, dtype=np.float64), 0.0)
        if self.name == "bsld":
            return bounded_slowdown(run, wait)
        if self.name == "wait":
            return wait
        return responsiveness(run, wait)

    def weights(self, job_class: IntArray) -> FloatArray:
        """Each job's weight in the mean: its class's weight, 1 for a class left out."""
        classes = np.asarray(job_class)
        weights = np.ones(classes.size)
        for cls, weight in self.class_weights.items():
            weights[classes == CLASS_NAMES[cls]] = float(weight)
        return weights

    def score(self, run_s: FloatArray, wait_s: FloatArray, job_class: IntArray) -> float:
        """The objective of one schedule: the (class-weighted) mean over its jobs; nan without jobs."""
        if np.asarray(run_s).size == 0:
            return float("nan")
        weights = self.weights(job_class)
        return float(np.sum(weights * self.values(run_s, wait_s)) / np.sum(weights))

    def better(self, a: float, b: float) -> bool:
        """Is score ``a`` strictly better than ``b``?"""
        return a > b if self.higher_is_better else a < b

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "class_weights": {k: float(v) for k, v in sorted(self.class_weights.items())}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Objective:
        weights = data.get("class_weights") or {}
        if not isinstance(weights, Mapping):
            raise ObjectiveError(f"class weights: expected a table, got {weights!r}")
        return cls(str(data.get("name", DEFAULT_OBJECTIVE)), dict(weights))


def parse_class_weights(items: tuple[str, ...] | list[str]) -> dict[str, float]:
    """``("interactive=3",)`` → ``{"interactive": 3.0}``; one-line :class:`ObjectiveError` otherwise."""
    out: dict[str, float] = {}
    for item in items:
        cls, sep, value = item.partition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = float("nan")
        if not sep or not cls.strip() or not np.isfinite(weight):
            raise ObjectiveError(f"class weight {item!r}: expected CLASS=NUMBER (e.g. interactive=3)")
        out[cls.strip()] = weight
    return out
