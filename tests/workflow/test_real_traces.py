"""rlsched evaluate on the real traces: rows (multifactor among them) beside EASY and EASY-SJF, consistent with a
direct replay."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.classify import ClassRule
from rlsched.sim.policies import simulate_policy
from rlsched.sim.traces.swf import read_swf
from rlsched.sim.workload import with_class_rule
from rlsched.workflow.evaluate import evaluate, parse_contender, text_table


@pytest.mark.slow
@pytest.mark.parametrize("trace", ["ctc", "lpc"])
def test_evaluate_prints_rows_beside_easy_and_easy_sjf(trace: str, trace_path: Callable[[str], Path]) -> None:
    w = read_swf(trace_path(trace))
    ev = evaluate(w, [parse_contender(p) for p in ("recorded", "multifactor", "easy", "easy-sjf")])
    table = text_table(ev)
    for label in ("recorded", "multifactor", "easy", "easy-sjf"):
        assert any(line.startswith(label + " ") for line in table.splitlines())
    # The table's EASY is the simulator's EASY on the same (classed) jobs; recorded is the trace's waits.
    seen = with_class_rule(w, ClassRule())
    direct = simulate_policy(seen, "easy").schedule
    assert ev.table["easy"]["all"]["mean_wait_s"]["mean"] == pytest.approx(float(direct.wait.mean()))
    emulated = simulate_policy(seen, "multifactor").schedule
    assert ev.table["multifactor"]["all"]["mean_wait_s"]["mean"] == pytest.approx(float(emulated.wait.mean()))
    known = np.isfinite(w.recorded_wait)
    assert ev.table["recorded"]["all"]["mean_wait_s"]["mean"] == pytest.approx(float(w.recorded_wait[known].mean()))
