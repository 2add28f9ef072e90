"""Runtime prediction: what a job will really run, guessed at submit from what a live scheduler knows.

Two predictors share one interface (:class:`RuntimePredictor`), the same code in the simulator
(:mod:`rlsched.sim.rules` feeds it the replay's submits and ends) and live (the daemon's completion feed
reaches it through :class:`rlsched.core.runtime.PredictedRuntime`, as ``EstimatedRuntime`` gets it):

- ``user-last2`` (:class:`UserLastTwo`): Tsafrir, Etsion & Feitelson (TPDS 2007, "EASY++"): the mean of the
  user's last two finished runtimes, never above the request; the request while the user has fewer than two
  finished jobs (as their simulator, pyss, does).
- ``learned`` (:class:`OnlineRegression`): an online regression in the spirit of Gaussier, Glesser, Reis &
  Trystram (SC'15): features of the job and of its user's recent history, a loss that weighs
  under-prediction more than over-prediction, learned job by job from finished jobs.  Here the target is
  ``log(runtime / request)`` and the learner is weighted recursive least squares (exact online least squares,
  a few 19×19 products a job), so the untrained model predicts the request itself and needs no step size.
  Per user it hands over to EASY++'s guess while that has been the closer one on the user's recent jobs.
  Where the jobs' program is known (the executable id: SWF field 14 in a trace, the job name live), it also
  keeps each user's last runtimes of each program: the same user running the same program again.

A prediction is made once per job, the first time the job is seen (at submit in the simulator, at the first
poll after submit live), and kept: EASY++ predicts at submit.  A running job that outlives its prediction gets
it raised (:func:`raise_outlived`, Tsafrir's gradual steps), never past the request.  Everything here is pure
and deterministic: the same jobs in the same order give the same predictions (no random numbers at all).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from rlsched.core.view import UNKNOWN_EXECUTABLE, FloatArray, IntArray

PredictorName = Literal["user-last2", "learned"]
PREDICTORS: tuple[PredictorName, ...] = ("user-last2", "learned")

#: No prediction is shorter than a second (a zero-length prediction would divide WFP3's and UNICEP's w/r).
MIN_PREDICTION_S = 1.0
#: Tsafrir et al.'s correction: a job that reaches its prediction gets it raised to the first of
#: prediction + 1 min, 5 min, 15 min, 30 min, 1 h, 2 h, 5 h, 10 h, 20 h, 50 h, 100 h it has not reached yet,
#: never past the request (the kill time stays the request).
CORRECTION_STEPS_S: tuple[float, ...] = (
    60.0,
    300.0,
    900.0,
    1800.0,
    3600.0,
    7200.0,
    18000.0,
    36000.0,
    72000.0,
    180000.0,
    360000.0,
)
_STEPS_S = np.array(CORRECTION_STEPS_S)
#: Jobs whose prediction is remembered until they finish (the oldest are forgotten beyond it: jobs cancelled
#: while pending never finish, and a daemon runs for months).
MAX_REMEMBERED_JOBS = 500_000


def raise_outlived(prediction: FloatArray, elapsed_s: FloatArray, request_s: FloatArray) -> FloatArray:
    """The predictions of running jobs, raised by Tsafrir's steps where a job has run as long as its prediction.

    A job still short of its prediction keeps it; one that reached it gets prediction + the first step it has
    not reached yet; past the last step (or past the request) it gets the request.
    """
    pred = np.asarray(prediction, dtype=np.float64)
    elapsed = np.asarray(elapsed_s, dtype=np.float64)
    outlived = np.flatnonzero(elapsed >= pred)
    if not len(outlived):
        return pred.copy()
    request = np.asarray(request_s, dtype=np.float64)
    if elapsed.shape != pred.shape or request.shape != pred.shape:
        elapsed, request = np.broadcast_to(elapsed, pred.shape), np.broadcast_to(request, pred.shape)
    # Every step for the outlived jobs at once (a row each); the smallest beyond the elapsed time wins.
    raised = pred[outlived, None] + _STEPS_S
    later = raised > elapsed[outlived, None]
    first = later.argmax(axis=1)
    rows = np.arange(len(outlived))
    out = pred.copy()
    out[outlived] = np.minimum(np.where(later[rows, first], raised[rows, first], np.inf), request[outlived])
    return out


class RuntimePredictor(Protocol):
    """A runtime predictor fed job by job (see the module docstring)."""

    name: PredictorName

    @property
    def unseen_finished(self) -> int:
        """Finished jobs it was told of but never predicted (live: submitted, run and ended between two polls)."""
        ...

    def predict(
        self,
        job_id: int,
        user: int,
        vo: int,
        cores: int,
        request_s: float,
        submit_s: float,
        executable: int = UNKNOWN_EXECUTABLE,
    ) -> float:
        """The job's predicted runtime (seconds, in [1, request]); made once, the same on every later call.

        ``request_s`` must be usable (finite, > 0: :func:`rlsched.core.runtime.usable_requested`).
        ``executable``: the job's program id (:func:`rlsched.core.view.executable_id`), -1 where unknown; a
        predictor may ignore it (``user-last2`` does: EASY++ is per user).
        """
        ...

    def finished(self, job_id: int, run_s: float) -> bool:
        """Learn from a finished job (in completion order); False when the job was never predicted."""
        ...

    def state(self, keep: Collection[int] | None = None) -> dict[str, Any]:
        """Everything learned, as a JSON-able dict (:func:`predictor_from_state` rebuilds the predictor).

        ``keep``: the remembered (predicted, not yet finished) jobs to keep; None keeps them all.
        """
        ...


class _Remembered:
    """Predictions of jobs that have not finished, the oldest forgotten beyond :data:`MAX_REMEMBERED_JOBS`."""

    def __init__(self, limit: int = MAX_REMEMBERED_JOBS) -> None:
        self._jobs: OrderedDict[int, tuple[float, object]] = OrderedDict()
        self.limit = limit
        #: Finished jobs never predicted (live: submitted, run and ended between two polls).
        self.unseen_finished = 0

    def get(self, job_id: int) -> float | None:
        hit = self._jobs.get(job_id)
        return hit[0] if hit is not None else None

    def put(self, job_id: int, prediction: float, facts: object) -> None:
        self._jobs[job_id] = (prediction, facts)
        if len(self._jobs) > self.limit:
            self._jobs.popitem(last=False)

    def pop(self, job_id: int) -> object | None:
        hit = self._jobs.pop(job_id, None)
        if hit is None:
            self.unseen_finished += 1
            return None
        return hit[1]

    def __len__(self) -> int:
        return len(self._jobs)

    def items(self, keep: Collection[int] | None) -> list[tuple[int, float, object]]:
        """(job, prediction, facts), oldest first (the order in which they are forgotten), those in ``keep``."""
        return [(j, pred, facts) for j, (pred, facts) in self._jobs.items() if keep is None or j in keep]


def _clamp(prediction: float, request_s: float) -> float:
    return min(max(prediction, MIN_PREDICTION_S), max(request_s, MIN_PREDICTION_S))


class UserLastTwo:
    """EASY++'s predictor: the mean of the user's last two finished runtimes, never above the request."""

    name: PredictorName = "user-last2"

    def __init__(self) -> None:
        self._remembered = _Remembered()
        self._last: dict[int, tuple[float, float]] = {}  # user → (last runtime, the one before; NaN: none)

    @property
    def unseen_finished(self) -> int:
        return self._remembered.unseen_finished

    def predict(
        self,
        job_id: int,
        user: int,
        vo: int,
        cores: int,
        request_s: float,
        submit_s: float,
        executable: int = UNKNOWN_EXECUTABLE,
    ) -> float:
        known = self._remembered.get(job_id)
        if known is not None:
            return known
        history = self._last.get(user)
        if history is None or math.isnan(history[1]):
            prediction = _clamp(request_s, request_s)
        else:
            prediction = _clamp((history[0] + history[1]) / 2.0, request_s)
        self._remembered.put(job_id, prediction, user)
        return prediction

    def finished(self, job_id: int, run_s: float) -> bool:
        user = self._remembered.pop(job_id)
        if user is None or not math.isfinite(run_s):
            return False
        assert isinstance(user, int)
        last = self._last.get(user)
        self._last[user] = (run_s, last[0] if last is not None else math.nan)
        return True

    def state(self, keep: Collection[int] | None = None) -> dict[str, Any]:
        """The users' last two runtimes and the remembered jobs (:meth:`RuntimePredictor.state`)."""
        return {
            **_state_header(self.name, self._remembered),
            # Lists of rows, not objects keyed by user: JSON keys are strings, and the order is kept.
            "last": [[user, last, _nan_to_none(before)] for user, (last, before) in self._last.items()],
            "remembered": [[job, prediction, user] for job, prediction, user in self._remembered.items(keep)],
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> UserLastTwo:
        """The predictor :meth:`state` describes (ValueError naming the bad key)."""
        out = cls()
        for i, row in enumerate(_rows(data, "last", 3)):
            where = f"last[{i}]"
            out._last[_int(row[0], where)] = (_num(row[1], where), _num_or_nan(row[2], where))
        _load_remembered(out._remembered, data, 3, lambda row, where: _int(row[2], where))
        return out


@dataclass
class _UserHistory:
    """What the regression remembers of one user: log runtime/request ratios, newest first."""

    ratios: list[float]  # log(run / request) of the last three finished jobs, newest first
    runs: list[float]  # log runtime of the same jobs
    last_request_s: float = math.nan
    last_cores: int = -1
    mean_ratio: float = 0.0  # exponentially weighted mean of the log ratios
    error_model: float = 0.0  # exponentially weighted absolute error (s) of the regression on this user
    error_last2: float = 0.0  # … and of EASY++'s mean of the last two
    count: int = 0


@dataclass(frozen=True)
class _Facts:
    """A predicted job's features and what its finish needs (the learned model's memory per job)."""

    user: int
    vo: int
    cores: int
    request_s: float
    x: FloatArray  # without the program features while the model had none (read as zeros)
    model_s: float  # the regression's prediction
    last2_s: float  # EASY++'s (of the user's runs of this program where there are two)
    executable: int = UNKNOWN_EXECUTABLE


#: How much more an under-prediction (the job runs longer than predicted) costs than an over-prediction of the
#: same size, in the regression's loss: an under-predicted job delays the jobs it was ordered before.
#: Chosen on CTC-SP2 and KTH-SP2 (1, 2, 4, 6, 10 tried; 4 had the lowest mean absolute error on CTC-SP2);
#: re-checked with the per-user choice on six traces (1, 2, 4, 8): 4 is the lowest on CTC-SP2 and SDSC-DS,
#: 2 on LPC-EGEE, 8 on KTH-SP2, LANL-CM5 and LLNL-Thunder, and at most 1.22x the best (LLNL-Thunder's
#: 335 s against 274 s at 8; KTH-SP2's 4,488 s against 4,172 s).  Judged by the rules on it instead
#: (benchmarks/diag_under_weight.py, docs/rules.md), 2 and 1 do no better than 4 against the rules on user-last2.
UNDER_PREDICTION_WEIGHT = 4.0
#: The ridge prior of the least squares (the initial inverse covariance is I / RIDGE).
RIDGE = 0.01
#: Forgetting factor: old jobs count for less, so the model follows a site's drift (bounded: see _update).
FORGETTING = 0.9999
#: Weight of the newest job in a user's (and a VO's) running mean of log ratios.
RATIO_EWMA = 0.3
#: Weight of the newest job in a user's running absolute errors of the two predictions (the per-user choice).
ERROR_EWMA = 0.3
N_FEATURES = 19
#: The program features (the user's last runtimes of the job's executable: :meth:`OnlineRegression.features`),
#: appended to the :data:`N_FEATURES` the first time the predictor meets a job whose executable is known.  Until
#: then the model is the 19-feature one, bit for bit: a trace or a site without program ids loses nothing.
N_PROGRAM_FEATURES = 4
#: (user, program) pairs whose runtimes are kept, the least recently finished forgotten beyond it: job names
#: that embed a date or a run number make a new pair per job, and a daemon runs for months.
MAX_PROGRAMS = 200_000
_LOG_SCALE = 10.0  # log-seconds divided by this are about 1
_DAY_S = 86400.0


class OnlineRegression:
    """The ``learned`` predictor (module docstring): weighted recursive least squares on log(runtime/request).

    Features (:meth:`features`): the request and the cores (log); the user's last three finished runtimes
    relative to this request, their mean of two (EASY++'s guess, in log), whether the user has one/two finished
    jobs and how many; the user's and the VO's running mean of log(runtime/request); whether the request and
    the cores repeat the user's last job's (the same script again), and the last runtimes weighed by that; the
    last job's own ratio; the time of day (the submit clock: epoch seconds live, the trace's clock in a replay).
    The loss weighs under-predictions :data:`UNDER_PREDICTION_WEIGHT` times more: each update weighs the job by
    the sign of its residual (an online expectile regression).

    Where a job's executable (program) is known, four more features (:data:`N_PROGRAM_FEATURES`, added the
    first time one is): the user's last runtime of this program and the mean of the last two relative to this
    request, and whether there are one and two; EASY++'s guess is then the mean of the user's last two runs of
    the program where there are two (Tsafrir et al.'s per-user history, narrowed to the program).

    Per user, the prediction is the regression's or EASY++'s (the mean of the last two), whichever has had the
    lower absolute error on that user's recent jobs (exponentially weighted, :data:`ERROR_EWMA`): an online
    choice of model per user.  Some users repeat one job (EASY++ is then hard to beat), others drift.
    """

    name: PredictorName = "learned"

    def __init__(
        self, under_weight: float = UNDER_PREDICTION_WEIGHT, ridge: float = RIDGE, forgetting: float = FORGETTING
    ) -> None:
        if under_weight <= 0 or ridge <= 0 or not 0 < forgetting <= 1:
            raise ValueError("learned runtime predictor: under_weight and ridge must be > 0, forgetting in (0, 1]")
        self.under_weight = under_weight
        self.forgetting = forgetting
        self.theta: FloatArray = np.zeros(N_FEATURES)
        self.cov: FloatArray = np.eye(N_FEATURES) / ridge
        self._cov_trace_max = float(np.trace(self.cov))
        self._remembered = _Remembered()
        self._users: dict[int, _UserHistory] = {}
        self._vo_ratio: dict[int, float] = {}
        #: (user, executable) → the log runtimes of the user's last two runs of that program, newest first.
        self._programs: OrderedDict[tuple[int, int], list[float]] = OrderedDict()
        self.updates = 0

    @property
    def reads_programs(self) -> bool:
        """Whether the model has the program features (it met a job whose executable is known)."""
        return len(self.theta) > N_FEATURES

    def _add_program_features(self) -> None:
        """Widen the model by the program features, with the prior the others started from (their weights 0)."""
        prior = self._cov_trace_max / len(self.theta)  # 1 / ridge
        k = N_PROGRAM_FEATURES
        self.theta = np.concatenate([self.theta, np.zeros(k)])
        cov = np.zeros((len(self.theta), len(self.theta)))
        cov[:-k, :-k] = self.cov
        cov[-k:, -k:] = np.eye(k) * prior
        self.cov = cov
        self._cov_trace_max += k * prior

    @property
    def unseen_finished(self) -> int:
        return self._remembered.unseen_finished

    def state(self, keep: Collection[int] | None = None) -> dict[str, Any]:
        """The regression's weights and covariance, the users' and VOs' histories and the remembered jobs with
        the features they were predicted from (:meth:`RuntimePredictor.state`)."""
        return {
            **_state_header(self.name, self._remembered),
            "under_weight": self.under_weight,
            "forgetting": self.forgetting,
            "cov_trace_max": self._cov_trace_max,  # the ridge prior's size, where forgetting stops
            "updates": self.updates,
            "theta": self.theta.tolist(),
            "cov": self.cov.tolist(),
            "users": [
                {
                    "user": user,
                    "ratios": list(h.ratios),
                    "runs": list(h.runs),
                    "last_request_s": _nan_to_none(h.last_request_s),
                    "last_cores": h.last_cores,
                    "mean_ratio": h.mean_ratio,
                    "error_model": h.error_model,
                    "error_last2": h.error_last2,
                    "count": h.count,
                }
                for user, h in self._users.items()
            ],
            "vo_ratio": [[vo, ratio] for vo, ratio in self._vo_ratio.items()],
            "programs": [[user, executable, list(runs)] for (user, executable), runs in self._programs.items()],
            # Each row: job, prediction, then the job's _Facts (see _FACTS_FIELDS).
            "remembered": [
                [job, prediction, *_facts_row(facts)] for job, prediction, facts in self._remembered.items(keep)
            ],
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> OnlineRegression:
        """The predictor :meth:`state` describes (ValueError naming the bad key)."""
        under_weight = _num(_get(data, "under_weight"), "under_weight")
        forgetting = _num(_get(data, "forgetting"), "forgetting")
        trace_max = _num(_get(data, "cov_trace_max"), "cov_trace_max")
        if not under_weight > 0:
            raise _bad("under_weight", f"must be > 0, got {under_weight}")
        if not 0 < forgetting <= 1:
            raise _bad("forgetting", f"must lie in (0, 1], got {forgetting}")
        if not trace_max > 0:
            raise _bad("cov_trace_max", f"must be > 0, got {trace_max}")
        out = cls(under_weight=under_weight, forgetting=forgetting)
        out._cov_trace_max = trace_max
        out.updates = _count(_get(data, "updates"), "updates")
        theta = _get(data, "theta")
        n = N_FEATURES + N_PROGRAM_FEATURES if isinstance(theta, list) and len(theta) > N_FEATURES else N_FEATURES
        out.theta = _vector(theta, "theta", n)
        cov = _get(data, "cov")
        if not isinstance(cov, list) or len(cov) != n:
            raise _bad("cov", f"expected {n} rows of {n} numbers")
        out.cov = np.array([_vector(row, f"cov[{i}]", n) for i, row in enumerate(cov)])
        users = _get(data, "users")
        if not isinstance(users, list):
            raise _bad("users", "expected a list")
        for i, item in enumerate(users):
            user, history = _user_history(item, f"users[{i}]")
            out._users[user] = history
        for i, row in enumerate(_rows(data, "vo_ratio", 2)):
            out._vo_ratio[_int(row[0], f"vo_ratio[{i}]")] = _num(row[1], f"vo_ratio[{i}]")
        version = data.get("version")
        if version != 1:  # a version 1 state knows no programs
            for i, row in enumerate(_rows(data, "programs", 3)):
                where = f"programs[{i}]"
                runs = _vector(row[2], where).tolist()
                if not 1 <= len(runs) <= 2:
                    raise _bad(where, "expected one or two runtimes")
                out._programs[(_int(row[0], where), _int(row[1], where))] = runs
        fields = len(_FACTS_FIELDS) - (1 if version == 1 else 0)
        _load_remembered(out._remembered, data, 2 + fields, lambda row, where: _facts_of_row(row, where, n))
        return out

    def features(
        self, user: int, vo: int, cores: int, request_s: float, submit_s: float, executable: int = UNKNOWN_EXECUTABLE
    ) -> FloatArray:
        """The job's feature vector from the current history (see the class docstring); the program features
        only once the model has them (:attr:`reads_programs`)."""
        base = self._base_features(user, vo, cores, request_s, submit_s)
        if not self.reads_programs:
            return base
        log_req = math.log(max(request_s, MIN_PREDICTION_S))
        runs = self._programs.get((user, executable), []) if executable != UNKNOWN_EXECUTABLE else []
        last = min(runs[0] - log_req, 0.0) if runs else 0.0
        mean_two = min(_log_mean_two(runs) - log_req, 0.0) if len(runs) >= 2 else 0.0
        program = [last / _LOG_SCALE, mean_two / _LOG_SCALE, 1.0 if runs else 0.0, 1.0 if len(runs) >= 2 else 0.0]
        return np.concatenate([base, program])

    def _base_features(self, user: int, vo: int, cores: int, request_s: float, submit_s: float) -> FloatArray:
        log_req = math.log(max(request_s, MIN_PREDICTION_S))
        h = self._users.get(user)
        rel = [0.0, 0.0, 0.0]  # the user's last runtimes relative to this request (0: the request)
        mean_two = 0.0
        last_ratio = 0.0
        same_request = 0.0
        same_cores = 0.0
        count = 0
        user_ratio = 0.0
        if h is not None:
            count = h.count
            for k, run_log in enumerate(h.runs):
                rel[k] = min(run_log - log_req, 0.0)
            if len(h.runs) >= 2:
                mean_two = min(_log_mean_two(h.runs) - log_req, 0.0)
            last_ratio = h.ratios[0] if h.ratios else 0.0
            same_request = 1.0 if h.last_request_s == request_s else 0.0
            same_cores = 1.0 if h.last_cores == cores else 0.0
            user_ratio = h.mean_ratio
        phase = 2.0 * math.pi * (submit_s % _DAY_S) / _DAY_S
        return np.array(
            [
                1.0,
                log_req / _LOG_SCALE,
                math.log(max(cores, 1)) / _LOG_SCALE,
                rel[0] / _LOG_SCALE,
                rel[1] / _LOG_SCALE,
                rel[2] / _LOG_SCALE,
                mean_two / _LOG_SCALE,
                1.0 if count >= 1 else 0.0,
                1.0 if count >= 2 else 0.0,
                math.log1p(count) / _LOG_SCALE,
                user_ratio / _LOG_SCALE,
                self._vo_ratio.get(vo, 0.0) / _LOG_SCALE,
                same_request,
                last_ratio / _LOG_SCALE,
                math.sin(phase),
                math.cos(phase),
                # The same script again (same request, same cores): the last runtime says more.
                same_cores,
                same_request * rel[0] / _LOG_SCALE,
                same_request * same_cores * mean_two / _LOG_SCALE,
            ]
        )

    def predict(
        self,
        job_id: int,
        user: int,
        vo: int,
        cores: int,
        request_s: float,
        submit_s: float,
        executable: int = UNKNOWN_EXECUTABLE,
    ) -> float:
        known = self._remembered.get(job_id)
        if known is not None:
            return known
        if executable != UNKNOWN_EXECUTABLE and not self.reads_programs:
            self._add_program_features()
        x = self.features(user, vo, cores, request_s, submit_s, executable)
        log_ratio = min(float(self.theta @ x) * _LOG_SCALE, 0.0)
        model = _clamp(request_s * math.exp(log_ratio), request_s)
        h = self._users.get(user)
        last2 = request_s
        program = self._programs.get((user, executable)) if executable != UNKNOWN_EXECUTABLE else None
        if program is not None and len(program) >= 2:
            last2 = _mean_two(program)
        elif h is not None and len(h.runs) >= 2:
            last2 = _mean_two(h.runs)
        last2 = _clamp(last2, request_s)
        # Per user, whichever of the two has been closer on the user's recent jobs.
        prediction = last2 if h is not None and h.error_last2 < h.error_model else model
        self._remembered.put(job_id, prediction, _Facts(user, vo, cores, request_s, x, model, last2, executable))
        return prediction

    def finished(self, job_id: int, run_s: float) -> bool:
        facts = self._remembered.pop(job_id)
        if facts is None or not math.isfinite(run_s):
            return False
        assert isinstance(facts, _Facts)
        run = min(max(run_s, MIN_PREDICTION_S), max(facts.request_s, MIN_PREDICTION_S))
        ratio = math.log(run / max(facts.request_s, MIN_PREDICTION_S))
        x = facts.x
        if len(x) < len(self.theta):  # predicted before the model had the program features: they were none
            x = np.concatenate([x, np.zeros(len(self.theta) - len(x))])
        self._update(x, ratio / _LOG_SCALE)
        h = self._users.get(facts.user)
        if h is None:
            h = self._users[facts.user] = _UserHistory([], [])
            h.mean_ratio = ratio
        else:
            h.mean_ratio += RATIO_EWMA * (ratio - h.mean_ratio)
        h.error_model += ERROR_EWMA * (abs(facts.model_s - run) - h.error_model)
        h.error_last2 += ERROR_EWMA * (abs(facts.last2_s - run) - h.error_last2)
        h.ratios.insert(0, ratio)
        h.runs.insert(0, math.log(run))
        del h.ratios[3:], h.runs[3:]
        h.last_request_s = facts.request_s
        h.last_cores = facts.cores
        h.count += 1
        vo_ratio = self._vo_ratio.get(facts.vo)
        self._vo_ratio[facts.vo] = ratio if vo_ratio is None else vo_ratio + RATIO_EWMA * (ratio - vo_ratio)
        if facts.executable != UNKNOWN_EXECUTABLE:
            key = (facts.user, facts.executable)
            runs = self._programs.pop(key, [])
            self._programs[key] = [math.log(run), *runs[:1]]  # newest first; the pair is now the most recent
            if len(self._programs) > MAX_PROGRAMS:
                self._programs.popitem(last=False)
        return True

    def _update(self, x: FloatArray, target: float) -> None:
        """One weighted recursive-least-squares step (under-predictions weigh ``under_weight``)."""
        residual = target - float(self.theta @ x)
        weight = self.under_weight if residual > 0 else 1.0
        cov_x = self.cov @ x
        gain = cov_x / (1.0 / weight + float(x @ cov_x))
        self.theta = self.theta + gain * residual
        self.cov = self.cov - np.outer(gain, cov_x)
        # Forgetting inflates the covariance along directions no job excites (a constant column): it stops
        # at the prior's size, so the model stays bounded on a trace where, say, every job is serial.
        if self.forgetting < 1.0 and float(np.trace(self.cov)) < self._cov_trace_max:
            self.cov /= self.forgetting
        self.updates += 1


def _mean_two(log_runs: list[float]) -> float:
    """The mean of the two newest runtimes of ``log_runs`` (log seconds, newest first): EASY++'s guess."""
    return (math.exp(log_runs[0]) + math.exp(log_runs[1])) / 2.0


def _log_mean_two(log_runs: list[float]) -> float:
    return math.log(_mean_two(log_runs))


def make_predictor(name: str) -> RuntimePredictor:
    """The predictor ``name`` (``user-last2`` or ``learned``), untrained."""
    if name == "user-last2":
        return UserLastTwo()
    if name == "learned":
        return OnlineRegression()
    raise ValueError(f"unknown runtime predictor {name!r}; expected one of {', '.join(PREDICTORS)}")


@dataclass(frozen=True)
class JobHistory:
    """Jobs that ran before a predictor starts: a site's accounting history, or a trace's jobs before a replayed
    window.  One entry per job; ``end_s`` is when it finished (submit + wait + run)."""

    user: IntArray
    vo: IntArray
    cores: IntArray
    request_s: FloatArray  # usable (finite, > 0): :func:`rlsched.core.runtime.usable_requested`
    submit_s: FloatArray
    run_s: FloatArray
    end_s: FloatArray
    #: Each job's program id (-1 unknown); empty: unknown for every job.
    executable: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self.user)

    @property
    def executables(self) -> IntArray:
        """One program id per job, -1 where unknown."""
        if len(self.executable) == len(self.user):
            return self.executable
        return np.full(len(self.user), UNKNOWN_EXECUTABLE, dtype=np.int64)

    def __add__(self, later: JobHistory) -> JobHistory:
        """These jobs and ``later``'s, in one history."""
        columns = {
            f: np.concatenate([getattr(self, f), getattr(later, f)])
            for f in JobHistory.__dataclass_fields__
            if f != "executable"
        }
        return JobHistory(**columns, executable=np.concatenate([self.executables, later.executables]))


def learn_history(predictor: RuntimePredictor, jobs: JobHistory, until_s: float = math.inf) -> int:
    """Teach ``predictor`` the jobs of ``jobs`` that finished by ``until_s``, as a predictor running since the
    first of them would have learned them; how many it learned.

    Each job is predicted at its submit from the jobs finished before (the learned model's features are those
    of that moment) and learned at its end, all in time order, ends before the submits of the same instant (as
    the simulator and a live view order them).  A job still running at ``until_s`` is left out: a live
    predictor learns of it only when it ends.  The jobs get ids -1, -2, …, which no batch-system job has, and
    none stays remembered, so the predictor's state holds only what it learned.
    """
    done = np.flatnonzero((jobs.end_s <= until_s) & np.isfinite(jobs.run_s) & np.isfinite(jobs.end_s))
    if not len(done):
        return 0
    end, start = jobs.end_s[done], jobs.submit_s[done]
    times = np.concatenate([np.maximum(end, start), start])
    # By time; at one instant ends (0) before submits (1), but a job that ends when it is submitted after it (2).
    kind = np.concatenate([np.where(end > start, 0, 2), np.ones(len(done), dtype=np.int64)])
    is_submit = kind == 1
    rows = np.concatenate([done, done])
    order = np.lexsort((kind, times))
    user, vo, cores = jobs.user.tolist(), jobs.vo.tolist(), jobs.cores.tolist()
    request, submit, run = jobs.request_s.tolist(), jobs.submit_s.tolist(), jobs.run_s.tolist()
    executable = jobs.executables.tolist()
    learned = 0
    for k in order.tolist():
        row = int(rows[k])
        if is_submit[k]:
            predictor.predict(-1 - row, user[row], vo[row], cores[row], request[row], submit[row], executable[row])
        elif predictor.finished(-1 - row, run[row]):
            learned += 1
    return learned


# ------------------------------------------------------------------------------------------ learned state
#: The version of :meth:`RuntimePredictor.state`'s format (a daemon keeps it across restarts: docs/daemon.md).
STATE_VERSION = 2
#: Versions a predictor still loads: 1, written before the program features (no ``programs``, no executable in
#: a remembered job), loads as a model that has not met a program yet.
_READABLE_VERSIONS = (1, 2)
#: The fields of a remembered job of the ``learned`` predictor, after its id and prediction.
_FACTS_FIELDS = ("user", "vo", "cores", "request_s", "model_s", "last2_s", "x", "executable")
_STATE_LOADERS: dict[str, Callable[[Mapping[str, Any]], RuntimePredictor]] = {
    "user-last2": UserLastTwo.from_state,
    "learned": OnlineRegression.from_state,
}


def predictor_from_state(data: object) -> RuntimePredictor:
    """The predictor :meth:`RuntimePredictor.state` described: it predicts bit-identically and goes on learning
    exactly as the one that wrote it.  A bad state is a ValueError naming the key
    (``runtime predictor state: key 'theta': expected 19 numbers``)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"runtime predictor state: expected an object, got {type(data).__name__}")
    name = _get(data, "predictor")
    loader = _STATE_LOADERS.get(name) if isinstance(name, str) else None
    if loader is None:
        raise _bad("predictor", f"expected one of {', '.join(PREDICTORS)}, got {_short(name)}")
    version = _get(data, "version")
    if version not in _READABLE_VERSIONS or isinstance(version, bool):
        raise _bad("version", f"expected one of {', '.join(map(str, _READABLE_VERSIONS))}, got {_short(version)}")
    return loader(data)


def _state_header(name: PredictorName, remembered: _Remembered) -> dict[str, Any]:
    return {"predictor": name, "version": STATE_VERSION, "unseen_finished": remembered.unseen_finished}


def _facts_row(facts: object) -> list[Any]:
    assert isinstance(facts, _Facts)
    return [
        facts.user,
        facts.vo,
        facts.cores,
        facts.request_s,
        facts.model_s,
        facts.last2_s,
        facts.x.tolist(),
        facts.executable,
    ]


def _facts_of_row(row: list[Any], where: str, dimension: int) -> _Facts:
    """A remembered job's facts (a version 1 row has no executable); its features were the model's then, so
    there are at most ``dimension`` of them."""
    user, vo, cores, request_s, model_s, last2_s, x, *rest = row[2:]
    x_values = _vector(x, where)
    if len(x_values) not in (N_FEATURES, dimension):
        raise _bad(where, f"expected {N_FEATURES} or {dimension} features")
    return _Facts(
        user=_int(user, where),
        vo=_int(vo, where),
        cores=_int(cores, where),
        request_s=_num(request_s, where),
        x=x_values,
        model_s=_num(model_s, where),
        last2_s=_num(last2_s, where),
        executable=_int(rest[0], where) if rest else UNKNOWN_EXECUTABLE,
    )


def _load_remembered(
    remembered: _Remembered, data: Mapping[str, Any], width: int, facts_of: Callable[[list[Any], str], object]
) -> None:
    """Fill ``remembered`` from ``data["remembered"]`` (rows of ``width``: job, prediction, facts…), oldest
    first, and its count of finished jobs never predicted."""
    remembered.unseen_finished = _count(_get(data, "unseen_finished"), "unseen_finished")
    for i, row in enumerate(_rows(data, "remembered", width)):
        where = f"remembered[{i}]"
        remembered.put(_int(row[0], where), _num(row[1], where), facts_of(row, where))


def _user_history(item: object, where: str) -> tuple[int, _UserHistory]:
    if not isinstance(item, Mapping):
        raise _bad(where, "expected an object")

    def field(key: str) -> Any:
        return _get(item, key, f"{where}.")

    ratios = _vector(field("ratios"), f"{where}.ratios").tolist()
    runs = _vector(field("runs"), f"{where}.runs").tolist()
    if len(ratios) != len(runs) or len(runs) > 3:
        raise _bad(f"{where}.runs", "expected as many runs as ratios, at most 3")
    history = _UserHistory(
        ratios=ratios,
        runs=runs,
        last_request_s=_num_or_nan(field("last_request_s"), f"{where}.last_request_s"),
        last_cores=_int(field("last_cores"), f"{where}.last_cores"),
        mean_ratio=_num(field("mean_ratio"), f"{where}.mean_ratio"),
        error_model=_num(field("error_model"), f"{where}.error_model"),
        error_last2=_num(field("error_last2"), f"{where}.error_last2"),
        count=_count(field("count"), f"{where}.count"),
    )
    return _int(field("user"), f"{where}.user"), history


# Readers of a state's values: each names the key it reads when the value is not what the state writes.
def _bad(key: str, problem: str) -> ValueError:
    return ValueError(f"runtime predictor state: key {key!r}: {problem}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _get(data: Mapping[str, Any], key: str, prefix: str = "") -> Any:
    if key not in data:
        raise _bad(prefix + key, "missing")
    return data[key]


def _num(value: object, key: str) -> float:
    # Any float, NaN and infinities included (json writes and reads them): what state() writes must load.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(key, f"expected a number, got {_short(value)}")
    return float(value)


def _num_or_nan(value: object, key: str) -> float:
    return math.nan if value is None else _num(value, key)


def _nan_to_none(value: float) -> float | None:
    return None if math.isnan(value) else value


def _int(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(key, f"expected an integer, got {_short(value)}")
    return value


def _count(value: object, key: str) -> int:
    out = _int(value, key)
    if out < 0:
        raise _bad(key, f"expected a count (>= 0), got {out}")
    return out


def _vector(value: object, key: str, length: int | None = None) -> FloatArray:
    if not isinstance(value, list) or (length is not None and len(value) != length):
        raise _bad(key, f"expected {length if length is not None else 'a list of'} numbers")
    return np.array([_num(v, key) for v in value], dtype=np.float64)


def _rows(data: Mapping[str, Any], key: str, width: int) -> list[list[Any]]:
    rows = _get(data, key)
    if not isinstance(rows, list):
        raise _bad(key, "expected a list")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != width:
            raise _bad(f"{key}[{i}]", f"expected a list of {width} values")
    return rows
