"""How well can a live scheduler tell, at submit, that a job will end within a minute?  Simple causal detectors.

Each trace is walked as it was recorded, the way :mod:`rlsched.sim.prediction_errors` scores the predictors
(:func:`rlsched.sim.prediction_errors.recorded_events`: a job is submitted at its submit time and ends at submit +
recorded wait + runtime, ends before submits at the same instant, runtimes capped at the request).  At each submit
a detector sees only what a scheduler knows then (:func:`causal_facts`): the user's jobs that have *ended* by then
(their runtimes, requests, cores, submit times), the time since the user's previous submit, the job's own request,
cores and submit time.  The detectors (:func:`detectors`; "short" is under
:data:`rlsched.sim.prediction_errors.SHORT_JOB_S`, 60 s):

- ``last``: the user's last finished job ran short;
- ``last+same``: ``last``, and this job repeats its request and cores and is submitted within
  :data:`BURST_S` (10 min) of its submit;
- ``last+same+burst``: ``last``, same request and cores, and within :data:`BURST_S` of the user's previous submit
  (whatever that job was);
- ``last2`` / ``last3``: the user's last two / three finished jobs ran short;
- ``script`` / ``script2``: the user's last one / two finished jobs *of the same request and cores* ran short;
- ``exe`` / ``exe2``: the user's last one / two finished jobs *of the same executable* ran short (the SWF's
  executable id, field 14: what a live scheduler knows as the job's name or script; recorded by CTC-SP2, SDSC-DS,
  LANL-CM5 and LLNL-Thunder, unknown in the other logs, where these never flag);
- ``req<=T``: the request is at most T seconds (T = 60, 300);
- ``user-last2<60`` and ``learned<60``: :mod:`rlsched.core.prediction`'s predictors predicting under a minute
  (:func:`rlsched.sim.prediction_errors.short_job_hits`).

Per trace and detector it prints recall (of the short jobs, the share flagged), precision (of the flagged, the
share short), the false-positive rate (of the other jobs, the share flagged), and the same detector *on top of*
``learned``: ``learned<60 or detector``'s recall and precision, and the two numbers
``benchmarks/diag_prediction_noise.py --base learned`` simulates: R, the recall on the short jobs ``learned``
misses, and Q, the false-positive rate on the long jobs ``learned`` does not already predict short.

These are the recorded schedule's numbers: in a replay on fewer cores than the trace recorded (the learning
tables replay LPC-EGEE on 16 of its 140 cores) a user's previous jobs are often still waiting at a submit, and
a detector reading finished jobs finds far fewer; ``benchmarks/diag_prediction_noise.py --base learned --causal
NAME`` measures these detectors (:class:`CausalShort`) inside the table's replays.

With ``--window-of TABLE`` only the jobs of each trace's test window in a committed learning table are scored
(each still detected from the whole trace before it), the jobs ``benchmarks/diag_prediction_noise.py`` replays.

A diagnostic, fast (no replay).  Run: ``RLSCHED_TRACE_DIR=… python -m benchmarks.diag_short_jobs
[--trace KTH-SP2-1996-2.1-cln …] [--window-of docs/results/learning-12k]``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from benchmarks.learning_table import CommittedTable, read_table, table_windows  # noqa: E402
from rlsched.core.prediction import PredictorName, RuntimePredictor, learn_history  # noqa: E402
from rlsched.core.view import UNKNOWN_EXECUTABLE  # noqa: E402
from rlsched.sim.prediction_errors import SHORT_JOB_S, recorded_events, recorded_predictions  # noqa: E402
from rlsched.sim.traces.sidecar import read_trace  # noqa: E402
from rlsched.sim.traces.swf import resolve_trace  # noqa: E402
from rlsched.sim.workload import Workload  # noqa: E402
from rlsched.workflow.learning import TRACES  # noqa: E402

#: ``last+same``: "submitted soon after" is within this.
BURST_S = 600.0
#: ``req<=T``'s thresholds.
REQUEST_THRESHOLDS_S = (60.0, 300.0)
#: :func:`detectors`' names.
DETECTORS = (
    "last",
    "last+same",
    "last+same+burst",
    "last2",
    "last3",
    "script",
    "script2",
    "exe",
    "exe2",
    *(f"req<={t:g}" for t in REQUEST_THRESHOLDS_S),
)


@dataclass(frozen=True)
class CausalFacts:
    """Per job (the workload's rows), what a scheduler knew of its user at its submit (NaN: nothing yet)."""

    run: np.ndarray  # the job's own runtime, capped at its request (what is to be detected)
    request: np.ndarray  # its usable request
    last_runs: np.ndarray  # (n, 3): the user's last three finished runtimes, newest first
    last_request: np.ndarray  # the request of the user's last finished job
    last_cores: np.ndarray  # … its cores
    last_submit: np.ndarray  # … its submit time
    since_submit: np.ndarray  # seconds since the user's previous submit (finished or not)
    script_runs: np.ndarray  # (n, 2): the last two finished runtimes of the user's jobs of this request and cores
    exe_runs: np.ndarray  # (n, 2): … of the user's jobs of this executable (NaN where it is unknown)


#: :meth:`UserMemory.seen`'s facts, in order (the :class:`CausalFacts` fields after ``run`` and ``request``; then
#: the two ``script_runs`` and the two ``exe_runs``).
FACTS = ("last_run", "run_before", "run_before_that", "last_request", "last_cores", "last_submit", "since_submit")


class UserMemory:
    """What a live scheduler knows of each user at a submit, fed as a runtime predictor is fed: each job when it is
    first seen (:meth:`seen`, which answers the job's facts), each end in completion order (:meth:`ended`)."""

    def __init__(self) -> None:
        self._jobs: dict[int, tuple[int, float, int, float, int]] = {}  # job → user, request, cores, submit, executable
        self._finished: dict[int, list[float]] = {}  # user → finished runtimes, newest first (at most 3)
        self._last: dict[int, tuple[float, int, float]] = {}  # user → request, cores, submit of the last finished
        self._script: dict[tuple[int, float, int], list[float]] = {}  # (user, request, cores) → last two runtimes
        self._exe: dict[tuple[int, int], list[float]] = {}  # (user, executable) → last two runtimes
        self._submit: dict[int, float] = {}  # user → the last submit seen

    def seen(
        self, job: int, user: int, request_s: float, cores: int, submit_s: float, executable: int = -1
    ) -> list[float]:
        """The facts of :data:`FACTS`, the two ``script_runs`` and the two ``exe_runs`` of a job first seen now
        (NaN: none yet; ``executable`` -1: unknown)."""
        self._jobs[job] = (user, request_s, cores, submit_s, executable)
        runs = self._finished.get(user, [])
        last = self._last.get(user, (math.nan, math.nan, math.nan))
        previous = self._submit.get(user, math.nan)
        self._submit[user] = submit_s if math.isnan(previous) else max(previous, submit_s)
        script = self._script.get((user, request_s, cores), [])
        exe = self._exe.get((user, executable), []) if executable >= 0 else []
        return [
            *(runs + [math.nan] * 3)[:3],
            last[0],
            float(last[1]),
            last[2],
            submit_s - previous,
            *(script + [math.nan] * 2)[:2],
            *(exe + [math.nan] * 2)[:2],
        ]

    def ended(self, job: int, run_s: float) -> bool:
        """Learn a job's runtime; False when it was never seen."""
        facts = self._jobs.pop(job, None)
        if facts is None:
            return False
        user, request, cores, submit, executable = facts
        self._finished[user] = [run_s, *self._finished.get(user, [])][:3]
        self._last[user] = (request, cores, submit)
        key = (user, request, cores)
        self._script[key] = [run_s, *self._script.get(key, [])][:2]
        if executable >= 0:
            pair = (user, executable)
            self._exe[pair] = [run_s, *self._exe.get(pair, [])][:2]
        return True


def causal_facts(workload: Workload) -> CausalFacts:
    """What each job's user had shown by the job's submit (:class:`UserMemory`): only jobs that had *ended* by
    then (recorded end = submit + recorded wait + runtime; an end at the submit's instant counts, as in the
    simulator; a job that ends the instant it is submitted ends right after it)."""
    run, request, events = recorded_events(workload)
    users, cores, executables = workload.user.tolist(), workload.procs.tolist(), workload.executable.tolist()
    submit, req, runs = workload.submit.astype(np.float64).tolist(), request.tolist(), run.tolist()
    memory = UserMemory()
    rows = np.full((len(workload), len(FACTS) + 4), np.nan)
    early: set[int] = set()
    for e in events.tolist():
        if e < 0:
            if not memory.ended(~e, runs[~e]):
                early.add(~e)
            continue
        rows[e] = memory.seen(e, users[e], req[e], cores[e], submit[e], executables[e])
        if e in early:
            memory.ended(e, runs[e])
    return facts_of(rows, run, request)


def facts_of(rows: np.ndarray, run: np.ndarray, request: np.ndarray) -> CausalFacts:
    """:class:`CausalFacts` of :meth:`UserMemory.seen`'s rows."""
    return CausalFacts(
        run, request, rows[:, :3], rows[:, 3], rows[:, 4], rows[:, 5], rows[:, 6], rows[:, 7:9], rows[:, 9:11]
    )


class FlaggedPredictor:
    """A runtime predictor with a detector of the short jobs on top: ``inner`` predicts and learns as it would
    alone; a job :meth:`flag` answers for gets that prediction instead.  A job's prediction is made once, at
    first sight (as ``inner``'s is).  Kept per job: ``made`` (the prediction handed out) and ``flagged``."""

    name: PredictorName = "learned"

    def __init__(self, inner: RuntimePredictor) -> None:
        self.inner = inner
        self.made: dict[int, float] = {}
        self.flagged: set[int] = set()

    def flag(
        self, job_id: int, prediction: float, user: int, cores: int, request_s: float, submit_s: float
    ) -> float | None:
        """The prediction of a flagged job (given ``inner``'s), None for a job not flagged."""
        raise NotImplementedError

    @property
    def unseen_finished(self) -> int:
        return self.inner.unseen_finished

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
        known = self.made.get(job_id)
        if known is not None:
            return known
        prediction = self.inner.predict(job_id, user, vo, cores, request_s, submit_s, executable)
        flagged = self.flag(job_id, prediction, user, cores, request_s, submit_s)
        if flagged is not None:
            prediction = flagged
            self.flagged.add(job_id)
        self.made[job_id] = prediction
        return prediction

    def finished(self, job_id: int, run_s: float) -> bool:
        return self.inner.finished(job_id, run_s)

    def state(self, keep: Collection[int] | None = None) -> dict[str, Any]:
        return self.inner.state(keep)


class CausalShort(FlaggedPredictor):
    """A :class:`FlaggedPredictor` whose detector is causal: ``detector`` (a name of :func:`detectors`) reads
    what :class:`UserMemory` knows when a job is first predicted, and a flagged job is predicted
    min(``inner``'s prediction, ``flag_s``).  ``executable_of``: a job id's executable (-1: unknown)."""

    def __init__(
        self, inner: RuntimePredictor, detector: str, flag_s: float, executable_of: Callable[[int], int]
    ) -> None:
        super().__init__(inner)
        self.detector = detector
        self.flag_s = flag_s
        self.memory = UserMemory()
        self.executable_of = executable_of

    def flag(
        self, job_id: int, prediction: float, user: int, cores: int, request_s: float, submit_s: float
    ) -> float | None:
        row = np.array([self.memory.seen(job_id, user, request_s, cores, submit_s, self.executable_of(job_id))])
        one = np.array([request_s])
        if detectors(facts_of(row, one, one), np.array([submit_s]), np.array([float(cores)]))[self.detector][0]:
            return min(prediction, self.flag_s)
        return None

    def finished(self, job_id: int, run_s: float) -> bool:
        self.memory.ended(job_id, run_s)
        return self.inner.finished(job_id, run_s)


class _MemoryFeed:
    """A :class:`UserMemory` fed as a runtime predictor is (for :func:`rlsched.core.prediction.learn_history`)."""

    name: PredictorName = "learned"
    unseen_finished = 0

    def __init__(self, memory: UserMemory, executable_of: Callable[[int], int]) -> None:
        self.memory = memory
        self.executable_of = executable_of

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
        self.memory.seen(job_id, user, request_s, cores, submit_s, self.executable_of(job_id))
        return request_s

    def finished(self, job_id: int, run_s: float) -> bool:
        return self.memory.ended(job_id, run_s)

    def state(self, keep: Collection[int] | None = None) -> dict[str, Any]:
        return {}


def causal_short(
    inner: RuntimePredictor,
    window: Workload,
    detector: str,
    flag_s: float,
    ids: Sequence[int] | None = None,
    past_executable: np.ndarray | None = None,
) -> CausalShort:
    """A :class:`CausalShort` on ``inner`` (already warmed) whose memory is taught ``window``'s past as
    :func:`rlsched.sim.rules.warmed_predictor` teaches the predictor (:func:`learn_history` until its first
    submit).  ``ids``: the ids the replay predicts the window's rows by (default: the rows); ``past_executable``:
    the executable of each row of the window's past, which :func:`learn_history` calls -1 - row (default:
    unknown)."""
    if detector not in DETECTORS:
        raise ValueError(f"unknown detector {detector!r}; expected one of {', '.join(DETECTORS)}")
    own = dict(zip(range(len(window)) if ids is None else ids, window.executable.tolist(), strict=True))
    past = [] if past_executable is None else past_executable.tolist()

    def executable_of(job: int) -> int:
        if job >= 0:
            return int(own.get(job, -1))
        return int(past[-1 - job]) if -1 - job < len(past) else -1

    out = CausalShort(inner, detector, flag_s, executable_of)
    if window.past is not None and len(window.past) and len(window):
        learn_history(_MemoryFeed(out.memory, executable_of), window.past, float(window.submit.min()))
    return out


def detectors(facts: CausalFacts, submit: np.ndarray, cores: np.ndarray) -> dict[str, np.ndarray]:
    """Each simple detector's flags (module docstring), by row.  NaN compares False: no history, no flag."""
    short = SHORT_JOB_S
    with np.errstate(invalid="ignore"):
        last = facts.last_runs[:, 0] < short
        same = (facts.last_request == facts.request) & (facts.last_cores == cores)
        out = {
            "last": last,
            "last+same": last & same & (submit - facts.last_submit <= BURST_S),
            "last+same+burst": last & same & (facts.since_submit <= BURST_S),
            "last2": last & (facts.last_runs[:, 1] < short),
            "last3": np.all(facts.last_runs < short, axis=1),
            "script": facts.script_runs[:, 0] < short,
            "script2": np.all(facts.script_runs < short, axis=1),
            "exe": facts.exe_runs[:, 0] < short,
            "exe2": np.all(facts.exe_runs < short, axis=1),
        }
    for limit in REQUEST_THRESHOLDS_S:
        out[f"req<={limit:g}"] = facts.request <= limit
    return out


@dataclass(frozen=True)
class DetectorScore:
    """One detector on one trace (module docstring); NaN where undefined."""

    recall: float
    precision: float
    false_positive_rate: float
    with_learned: tuple[float, float]  # (recall, precision) of learned<60 or the detector
    simulated: tuple[float, float]  # (R, Q): recall on the short jobs learned misses, FP rate on its other jobs


def score(flags: np.ndarray, short: np.ndarray, learned_short: np.ndarray) -> DetectorScore:
    """How ``flags`` detects ``short``, alone and on top of ``learned_short`` (both boolean, by row)."""
    recall, precision = hits(flags, short)
    either = flags | learned_short
    return DetectorScore(
        recall,
        precision,
        _share(flags & ~short, ~short),
        hits(either, short),
        (
            _share(flags & short & ~learned_short, short & ~learned_short),
            _share(flags & ~short & ~learned_short, ~short & ~learned_short),
        ),
    )


def _share(part: np.ndarray, whole: np.ndarray) -> float:
    return float(part.sum()) / float(whole.sum()) if whole.any() else math.nan


def hits(said: np.ndarray, short: np.ndarray) -> tuple[float, float]:
    return _share(said & short, short), _share(said & short, said)


def trace_scores(workload: Workload, scored: np.ndarray | None = None) -> tuple[float, dict[str, DetectorScore]]:
    """(the share of short jobs, every detector's :class:`DetectorScore`) on ``workload``'s rows ``scored`` (a
    boolean mask; None: all), each detected from the whole trace before it."""
    facts = causal_facts(workload)
    keep = np.ones(len(workload), dtype=bool) if scored is None else scored
    short = (facts.run < SHORT_JOB_S)[keep]
    predicted = {m: recorded_predictions(workload, m) for m in ("user-last2", "learned")}
    learned_short = (predicted["learned"] < SHORT_JOB_S)[keep]
    flags = detectors(facts, workload.submit.astype(np.float64), workload.procs.astype(np.float64))
    flags |= {f"{m}<60": v < SHORT_JOB_S for m, v in predicted.items()}
    return float(short.mean()), {name: score(f[keep], short, learned_short) for name, f in flags.items()}


def window_rows(workload: Workload, table: CommittedTable, name: str) -> np.ndarray | None:
    """The rows of ``workload`` (a whole trace) in ``table``'s test window of it, by job id (None: no row)."""
    rows = table.chosen(name)
    if not rows:
        return None
    test = table_windows(rows[0], table.settings)["test"]
    return np.isin(workload.job_id, test.job_id)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", nargs="*", default=list(TRACES))
    parser.add_argument(
        "--window-of",
        type=Path,
        metavar="TABLE",
        help="score only the jobs of each trace's test window in this committed learning table (e.g. "
        "docs/results/learning-12k), each detected from the whole trace before it; a trace without a row is skipped",
    )
    args = parser.parse_args()
    print(
        "| trace | short jobs | detector | recall | precision | false-positive rate "
        "| or learned<60: recall / precision | simulated R / Q |"
    )
    print("|---|---|---|---|---|---|---|---|")
    summary: dict[str, list[str]] = {}
    table = None if args.window_of is None else read_table(args.window_of)
    for name in args.trace:
        t0 = time.perf_counter()
        workload = read_trace(resolve_trace(name))
        scored = None if table is None else window_rows(workload, table, name)
        if table is not None and scored is None:
            continue
        share, scores = trace_scores(workload, scored)
        for detector, s in scores.items():
            print(
                f"| {name} | {share:.1%} | {detector} | {_pct(s.recall)} | {_pct(s.precision)} "
                f"| {_pct(s.false_positive_rate, 1)} | {_pct(s.with_learned[0])} / {_pct(s.with_learned[1])} "
                f"| {_pct(s.simulated[0])} / {_pct(s.simulated[1], 1)} |",
                flush=True,
            )
            summary.setdefault(detector, []).append(f"{_pct(s.recall)} / {_pct(s.precision)}")
        jobs = len(workload) if scored is None else int(scored.sum())
        print(f"<!-- {name}: {jobs:,} jobs scored, {time.perf_counter() - t0:.0f} s -->", flush=True)
    print()
    print("Recall / precision per trace:")
    print()
    print(f"| detector | {' | '.join(args.trace)} |")
    print(f"|---|{'---|' * len(args.trace)}")
    for detector, cells in summary.items():
        print(f"| {detector} | {' | '.join(cells)} |")


def _pct(value: float, digits: int = 0) -> str:
    return f"{100 * value:.{digits}f} %" if math.isfinite(value) else "-"


if __name__ == "__main__":
    main()
