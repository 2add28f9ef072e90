"""The field's rules on a predicted runtime or reading the wait: the engine's dynamic priority (docs/rules.md).

A rule whose order is not a static key — WFP3 and UNICEP read the current wait; any rule on ``user-last2`` or
``learned`` runtimes depends on which jobs had finished when it was submitted — plugs into the engine as
``multifactor`` does (:class:`rlsched.sim.engine.DynamicPriority`).  A job gets its priority when it is
queued; its runtime prediction is made then, from the jobs that had ended before (the engine ends jobs before
it queues the submits of the same instant, as a live view lists the finished jobs before the pending ones);
ends feed the predictor in completion order.  WFP3 and UNICEP re-prioritise the whole queue every ``pass_s``
(on a grid from the first submit); the other rules never change a queued job's priority.  Priorities are
:func:`rlsched.core.policies.rules.rule_priority` of the same score :class:`~rlsched.core.policies.rules.RuleAgent`
computes live, so the replay's queue order is the live agent's order for the same jobs at a pass.
"""

from __future__ import annotations

import copy
import math
from collections import OrderedDict

import numpy as np

from rlsched.core.policies.registry import RuleSetup
from rlsched.core.policies.rules import WAIT_RULES, rule_priority, rule_score, submit_clock
from rlsched.core.prediction import JobHistory, RuntimePredictor, learn_history, make_predictor
from rlsched.core.runtime import usable_requested
from rlsched.core.view import FloatArray, IntArray
from rlsched.sim.engine import Overrun, effective_runtimes
from rlsched.sim.workload import Workload

#: Predictors taught a window's past, by (id of the past, until, predictor): every rule replayed on a window (and
#: on its jittered copies, which share the past) starts from a copy of the same one.  The entry holds the past
#: itself, so its id is not reused while the entry lives.
_WARMED: OrderedDict[tuple[int, float, str], tuple[JobHistory, RuntimePredictor]] = OrderedDict()
_WARMED_MAX = 32


def warmed_predictor(name: str, workload: Workload) -> RuntimePredictor:
    """The runtime predictor ``name`` as it stands when ``workload`` starts: taught the jobs of its
    :attr:`~rlsched.sim.workload.Workload.past` that finished by its first submit (untrained without a past)."""
    past = workload.past
    if past is None or not len(past) or not len(workload):
        return make_predictor(name)
    until = float(workload.submit.min())
    key = (id(past), until, name)
    hit = _WARMED.get(key)
    if hit is not None:
        _WARMED.move_to_end(key)  # least recently used goes first: the windows a table replays again stay
    else:
        predictor = make_predictor(name)
        learn_history(predictor, past, until)
        hit = _WARMED[key] = (past, predictor)
        if len(_WARMED) > _WARMED_MAX:
            _WARMED.popitem(last=False)
    return copy.deepcopy(hit[1])


class ReplayedRuntimes:
    """Each job's runtime as a replayed policy believes it: the request, the oracle's, or a predictor's.

    A predictor (``user-last2``, ``learned``) starts from the window's past (:func:`warmed_predictor`), predicts
    a job when it is queued (:meth:`predict_at_submit`) from the jobs that had ended before, and learns each
    job's runtime when it ends (:meth:`started`, :meth:`ended`): the same feed the live agents get from the
    view.  Shared by the field's rules and the scored policies.
    """

    def __init__(self, workload: Workload, runtime_model: str, overrun: Overrun, request: FloatArray) -> None:
        self.predictor: RuntimePredictor | None = None
        if runtime_model == "requested":
            self.runtime: FloatArray = request.copy()
        elif runtime_model == "oracle":
            self.runtime = effective_runtimes(workload, overrun)[0].astype(np.float64)
        else:
            self.predictor = warmed_predictor(runtime_model, workload)
            self.runtime = np.full(len(workload), np.nan)
        self._user: list[int] = workload.user.tolist()
        self._vo: list[int] = workload.vo.tolist()
        self._cores: list[int] = workload.procs.tolist()
        self._request: list[float] = request.tolist()
        self._submit: list[float] = workload.submit.astype(np.float64).tolist()
        self._executable: list[int] = workload.known_executables.tolist()
        self._started: dict[int, float] = {}

    def predict_at_submit(self, row: int) -> None:
        if self.predictor is not None:
            self.runtime[row] = self.predictor.predict(
                row,
                self._user[row],
                self._vo[row],
                self._cores[row],
                self._request[row],
                self._submit[row],
                self._executable[row],
            )

    def started(self, row: int, now: float) -> None:
        if self.predictor is not None:
            self._started[row] = now

    def ended(self, row: int, now: float) -> None:
        if self.predictor is not None:
            self.predictor.finished(row, now - self._started.pop(row))


class RulePriority:
    """The :class:`rlsched.sim.engine.DynamicPriority` of a field rule (module docstring)."""

    def __init__(self, workload: Workload, setup: RuleSetup, overrun: Overrun) -> None:
        self.setup = setup
        self.rule = setup.formula
        self.request: FloatArray = usable_requested(workload.req_time.astype(np.float64), workload.job_class)
        self.cores: FloatArray = workload.procs.astype(np.float64)
        self.submit: FloatArray = workload.submit.astype(np.float64)
        self.clock: FloatArray = submit_clock(self.submit, setup.origin_s)
        self.runtimes = ReplayedRuntimes(workload, setup.runtime_model, overrun, self.request)
        self.runtime = self.runtimes.runtime
        self.reads_wait = self.rule in WAIT_RULES
        self.origin = float(self.submit[0]) if len(workload) else 0.0
        self.passes = 0

    def _score(self, rows: IntArray, now: float) -> FloatArray:
        return rule_priority(
            rule_score(self.rule, self.runtime[rows], self.cores[rows], self.clock[rows], now - self.submit[rows])
        )

    # ------------------------------------------------------------------ DynamicPriority
    def submit_priority(self, row: int, now: float) -> float:
        self.runtimes.predict_at_submit(row)
        return float(self._score(np.array([row], dtype=np.int64), now)[0])

    def priorities(self, rows: IntArray, now: float) -> FloatArray:
        self.passes += 1
        return self._score(rows, now)

    def started(self, row: int, now: float) -> None:
        self.runtimes.started(row, now)

    def ended(self, row: int, now: float) -> None:
        self.runtimes.ended(row, now)

    def next_pass(self, now: float) -> float:
        if not self.reads_wait:
            return math.inf
        period = self.setup.pass_s
        following = self.origin + (math.floor((now - self.origin) / period) + 1) * period
        # At a pass instant (now − origin)/period can round to just below its integer: the formula then gives
        # now again, and the replay would pass at the same instant for ever.
        return following if following > now else following + period
