"""What the learning-table diagnostics share: a committed table's windows, cut as the table cut them."""

from __future__ import annotations

from typing import Any

import numpy as np

from rlsched.cli._common import load_workload
from rlsched.sim.workload import Workload, with_class_rule
from rlsched.workflow.learning import TRACES
from rlsched.workflow.site import trace_class_rule
from rlsched.workflow.split import TimeSplit


def table_windows(row: dict[str, Any], settings: dict[str, Any]) -> dict[str, Workload]:
    """A trace's train, validation and test windows as the table replayed them (the same jobs and cores; the
    validation and test windows classed by the train window's rule, as train classes them)."""
    name = next(n for n in TRACES if n.endswith(row["trace"]))
    whole = load_workload(name, max_procs=row["cores"] if row["core_fraction"] < 1 else None)
    if settings.get("max_jobs"):
        whole = whole.select(np.arange(min(len(whole), settings["max_jobs"])), name=whole.name)
    split = TimeSplit.from_dict(settings["split"])
    train = split.window(whole, "train")
    rule = trace_class_rule(train)
    return {
        "train": train,
        "validation": with_class_rule(split.window(whole, "validation"), rule),
        "test": with_class_rule(split.window(whole, "test"), rule),
    }
