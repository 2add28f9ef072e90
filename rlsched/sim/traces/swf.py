"""Reader for the Standard Workload Format (SWF) of the Parallel Workloads Archive.

SWF (Chapin et al., "Benchmarks and Standards for the Evaluation of Parallel Job
Schedulers", JSSPP 1999; https://www.cs.huji.ac.il/labs/parallel/workload/swf.html)
is a text file, plain or gzip, of header comments (``; Key: value``) followed by one
line of 18 whitespace-separated numbers per job (-1 = unknown):

====  =====================  ====  =====================
  1   job number               10   requested memory
  2   submit time (s)          11   status
  3   wait time (s)            12   user id
  4   run time (s)             13   group id
  5   allocated processors     14   executable id
  6   average CPU time used    15   queue id
  7   used memory              16   partition id
  8   requested processors     17   preceding job
  9   requested time (s)       18   think time
====  =====================  ====  =====================

:func:`read_swf` turns a file into a :class:`~rlsched.sim.workload.Workload`.  Jobs
whose fields cannot be simulated follow the written rules of ``docs/traces.md``
(drop or fix); every application is counted by reason in ``Workload.dropped`` and
``Workload.fixed``, nothing is changed silently.  A malformed line raises
:class:`SwfFormatError` naming the file and the 1-based line number.

Speed: the numbers are parsed by one call of NumPy's C tokenizer (``np.loadtxt``);
measured on CTC-SP2 (77k jobs) that is ~4x faster than ``np.array(text.split())``
and ~2x faster than ``np.fromstring``.  Only when that call (or the vectorised
checks after it) fails does a line-by-line pass run, to find and name the bad line.
"""

from __future__ import annotations

import gzip
import logging
import os
import re
import warnings
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from rlsched.core.view import INTERACTIVE_THRESHOLD_S
from rlsched.errors import RlschedError
from rlsched.sim.traces import alea
from rlsched.sim.traces.fetch import CATALOGUE, cache_dir, lookup_catalogue
from rlsched.sim.workload import Workload, classify_by_runtime

log = logging.getLogger(__name__)

#: The 18 SWF fields, in file order (0-based column = position in this tuple).
SWF_FIELDS = (
    "job",
    "submit",
    "wait",
    "run",
    "alloc_procs",
    "avg_cpu",
    "used_mem",
    "req_procs",
    "req_time",
    "req_mem",
    "status",
    "user",
    "group",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
N_FIELDS = len(SWF_FIELDS)
_COL = {name: i for i, name in enumerate(SWF_FIELDS)}

#: Fields that are identifiers or counts: they must hold integers (the others may be fractional,
#: e.g. average CPU time in CTC-SP2).
INTEGER_FIELDS = (
    "job",
    "alloc_procs",
    "req_procs",
    "status",
    "user",
    "group",
    "executable",
    "queue",
    "partition",
    "preceding_job",
)
_INT_COLS = np.array([_COL[name] for name in INTEGER_FIELDS])
#: Integers beyond 2**53 are not exact in a float64 and overflow nothing useful: reject them.
_MAX_EXACT_INT = 2.0**53

#: Drop reasons, in the order they are tested: a job that fails several rules is counted once,
#: under the first (so ``sum(dropped.values())`` is the number of dropped job lines).
DROP_REASONS = ("submit_missing", "runtime_missing", "procs_missing", "procs_exceed_machine")
#: Field repairs (each counted once per repaired job).
FIX_REASONS = ("procs_from_request", "req_time_from_runtime", "wait_missing")

_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
# A header key is one word right after ';' (LPC-EGEE right-aligns its keys, so leading spaces are
# allowed).  "http://..." on a continuation line is not a key, hence the (?!//).
_HEADER_KEY_RE = re.compile(r"^;\s*([A-Za-z][A-Za-z0-9_]*)\s*:(?!//)\s?(.*)$")
_GZIP_MAGIC = b"\x1f\x8b"
_FIRST_INT_RE = re.compile(r"[+-]?\d+")


class SwfFormatError(RlschedError, ValueError):
    """A trace file that is not valid SWF; the message names the file and, if known, the line."""


# --------------------------------------------------------------------------------------------
# Header
# --------------------------------------------------------------------------------------------


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text`` (split at ``\n`` only, without it), one at a time.  Not ``io.StringIO``: it holds
    a copy of the text at 4 bytes a character (80 MB for a 230,000-job trace, issue 16)."""
    start, end_of_text = 0, len(text)
    while start < end_of_text:
        end = text.find("\n", start)
        if end < 0:
            end = end_of_text
        yield text[start:end]
        start = end + 1


def _header_lines(text: str) -> Iterator[str]:
    """The leading comment block (comment and blank lines before the first job line)."""
    for line in _lines(text):
        stripped = line.strip()
        if stripped and not stripped.startswith(";"):
            return
        if stripped:
            yield stripped


def parse_header(text: str) -> dict[str, str]:
    """``; Key: value`` comments of the leading block as a dict.

    Repeated keys (``Queue:``, ``Note:``) and key-less continuation lines (``;   http://...``)
    are joined to the current key's value with newlines.  Values are kept verbatim (stripped);
    :func:`header_int` reads numbers out of them.
    """
    header: dict[str, str] = {}
    current: str | None = None
    for line in _header_lines(text):
        match = _HEADER_KEY_RE.match(line)
        if match:
            current, value = match.group(1), match.group(2).strip()
            header[current] = f"{header[current]}\n{value}" if current in header else value
        elif current is not None:
            continuation = line[1:].strip()
            if continuation:
                header[current] = f"{header[current]}\n{continuation}"
    return header


def header_int(header: dict[str, str], key: str) -> int | None:
    """The first integer of a header value (``"1664 (72, 1368, 224)"`` -> 1664), or None."""
    value = header.get(key)
    if value is None:
        return None
    match = _FIRST_INT_RE.search(value)
    return int(match.group(0)) if match else None


# --------------------------------------------------------------------------------------------
# Numbers
# --------------------------------------------------------------------------------------------


def _read_text(path: Path) -> str:
    """The whole file as text: gzip detected by its magic bytes, not by the file name."""
    raw = path.read_bytes()  # a missing/unreadable file is an OSError that already names the path
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise SwfFormatError(f"{path}: corrupt gzip data: {exc}") from exc
    # latin-1 maps every byte to a character, so decoding never fails; headers of some logs
    # carry non-ASCII names, and a stray byte in a job line is reported by the number check.
    return raw.decode("latin-1")


def _line_problem(tokens: list[str]) -> str | None:
    """What is wrong with one job line's fields, or None if it is a valid SWF job line."""
    if len(tokens) != N_FIELDS:
        return f"expected {N_FIELDS} fields, found {len(tokens)}"
    for column, token in enumerate(tokens):
        field_name = SWF_FIELDS[column]
        if not _NUMBER_RE.fullmatch(token):
            return f"field {column + 1} ({field_name}) is not a number: {token[:40]!r}"
        value = float(token)
        if not np.isfinite(value):
            return f"field {column + 1} ({field_name}) is not a finite number: {token[:40]!r}"
        if field_name in INTEGER_FIELDS and (value != int(value) or abs(value) > _MAX_EXACT_INT):
            return f"field {column + 1} ({field_name}) must be an integer below 2**53: {token[:40]!r}"
    return None


def _find_bad_line(text: str, display: str, fast_path_error: str) -> SwfFormatError:
    """Line-by-line pass run only after the fast path failed: name the first bad line."""
    for number, line in enumerate(text.split("\n"), start=1):
        content, comment_mark, _ = line.partition(";")  # ';' starts a comment, as in the fast path
        # A CR ending a CRLF line is fine; any other CR before the comment is a line break that
        # the fast path refuses (old Mac line ends, or a stray byte).
        if "\r" in (content if comment_mark else content.removesuffix("\r")):
            return SwfFormatError(f"{display}:{number}: carriage return inside the line (old Mac line ends?)")
        tokens = content.split()
        if not tokens:
            continue
        problem = _line_problem(tokens)
        if problem:
            return SwfFormatError(f"{display}:{number}: {problem}")
    # The fast path saw something this pass does not (a lone '\r' line break, for instance).
    return SwfFormatError(f"{display}: not valid SWF: {fast_path_error}")


def _parse_numbers(text: str, display: str) -> NDArray[np.float64]:
    """All job lines as an (n, 18) float array; SwfFormatError naming the line on bad input."""
    try:
        with warnings.catch_warnings():
            # An empty body is a legal (if useless) trace: loadtxt warns, we return 0 rows.
            warnings.simplefilter("ignore", UserWarning)
            table = np.loadtxt(_lines(text), dtype=np.float64, comments=";", ndmin=2)
    except ValueError as exc:
        raise _find_bad_line(text, display, str(exc).splitlines()[0]) from None
    if table.size == 0:
        return np.zeros((0, N_FIELDS))
    if table.shape[1] != N_FIELDS:
        raise _find_bad_line(text, display, f"{table.shape[1]} fields per line")
    if not np.isfinite(table).all():
        raise _find_bad_line(text, display, "a non-finite number")
    ints = table[:, _INT_COLS]
    if (ints != np.trunc(ints)).any() or (np.abs(ints) > _MAX_EXACT_INT).any():
        raise _find_bad_line(text, display, "a fractional value in an integer field")
    return table


# --------------------------------------------------------------------------------------------
# Rules and the Workload
# --------------------------------------------------------------------------------------------


def _vo_from_groups(group: NDArray[np.int64]) -> tuple[NDArray[np.int64], tuple[str, ...]]:
    """VO index per job from the SWF group id (P-grid §4.1: a grid site's group is its VO).

    ``vo_names`` are ``"g<id>"`` ordered by job count, descending (ties: smaller id first), so
    VO 0 is the busiest group.
    """
    if len(group) == 0:
        return np.zeros(0, dtype=np.int64), ()
    ids, inverse, counts = np.unique(group, return_inverse=True, return_counts=True)
    order = np.argsort(-counts, kind="stable")  # np.unique sorts ids, so ties keep the smaller id
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank[inverse].astype(np.int64), tuple(f"g{int(ids[i])}" for i in order)


def read_swf(
    path: str | os.PathLike[str],
    *,
    name: str | None = None,
    max_procs: int | None = None,
    interactive_threshold_s: float = INTERACTIVE_THRESHOLD_S,
) -> Workload:
    """Read an SWF trace (plain or gzip) into a :class:`Workload`.

    ``max_procs`` overrides the header's ``MaxProcs`` (jobs larger than the machine are dropped
    and counted as ``procs_exceed_machine``); without either, the largest job sets the machine
    size.  ``interactive_threshold_s`` is the class rule of P-grid §4.2 (runtime < 15 min is
    interactive).  Unusable fields follow the rules in docs/traces.md.
    """
    file_path = Path(path)
    display = file_path.name
    if max_procs is not None and max_procs < 1:
        raise ValueError(f"{display}: max_procs must be >= 1, got {max_procs}")
    text = _read_text(file_path)
    header = parse_header(text)
    id_names: dict[str, dict[int, str]] = {}
    if alea.is_alea(text):  # Alea's extended SWF (MetaCentrum): rlsched/sim/traces/alea.py says what it keeps
        table, id_names["queue"], header = _read_alea(text, file_path, header)
    else:
        table = _parse_numbers(text, display)
    machine = max_procs if max_procs is not None else header_int(header, "MaxProcs")
    if machine is not None and machine < 1:
        machine = None  # "-1" (unknown) in the header
    rows, procs, dropped, fixed = _usable_jobs(table, machine)
    if machine is None:
        machine = int(procs.max()) if len(procs) else 1
        log.info("%s: no MaxProcs in the header; machine size taken from the largest job: %d", display, machine)
    return _workload(
        rows,
        procs,
        fixed,
        name=name or _trace_name(file_path),
        machine=int(machine),
        dropped=dropped,
        header=header,
        id_names=id_names,
        interactive_threshold_s=interactive_threshold_s,
    )


def _usable_jobs(
    table: NDArray[np.float64], machine: int | None
) -> tuple[NDArray[np.float64], NDArray[np.int64], dict[str, int], dict[str, int]]:
    """The rows kept (docs/traces.md's rules), their cores, and the counts of rows dropped and of cores fixed."""
    submit = table[:, _COL["submit"]]
    run = table[:, _COL["run"]]
    alloc = table[:, _COL["alloc_procs"]]
    requested_procs = table[:, _COL["req_procs"]]
    procs_fixable = (alloc < 1) & (requested_procs >= 1)
    procs = np.where(procs_fixable, requested_procs, alloc)

    dropped: dict[str, int] = {}
    keep = np.ones(len(table), dtype=bool)
    rules = [("submit_missing", submit < 0), ("runtime_missing", run < 0), ("procs_missing", procs < 1)]
    if machine is not None:
        rules.append(("procs_exceed_machine", procs > machine))
    for reason, bad in rules:
        hit = keep & bad
        if hit.any():
            dropped[reason] = int(hit.sum())
            keep &= ~bad

    fixed: dict[str, int] = {}
    if procs_fixable[keep].any():
        fixed["procs_from_request"] = int(procs_fixable[keep].sum())
    return table[keep], procs[keep].astype(np.int64), dropped, fixed


def _workload(
    rows: NDArray[np.float64],
    procs: NDArray[np.int64],
    fixed: dict[str, int],
    *,
    name: str,
    machine: int,
    dropped: dict[str, int],
    header: dict[str, str],
    id_names: dict[str, dict[int, str]],
    interactive_threshold_s: float,
) -> Workload:
    """The kept rows as a :class:`Workload` in submit order, a missing request or wait repaired (counted in
    ``fixed``)."""
    run = rows[:, _COL["run"]]
    # A missing (-1) or zero request for a job that ran: assume the user asked exactly its runtime.
    req_time = rows[:, _COL["req_time"]]
    req_missing = (req_time < 0) | ((req_time == 0) & (run > 0))
    if req_missing.any():
        fixed["req_time_from_runtime"] = int(req_missing.sum())
        req_time = np.where(req_missing, run, req_time)

    wait = rows[:, _COL["wait"]]
    wait_missing = wait < 0
    if wait_missing.any():
        fixed["wait_missing"] = int(wait_missing.sum())
    recorded_wait = np.where(wait_missing, np.nan, wait)

    order = np.argsort(rows[:, _COL["submit"]], kind="stable")
    group = rows[order, _COL["group"]].astype(np.int64)
    vo, vo_names = _vo_from_groups(group)
    run_sorted = np.ascontiguousarray(run[order])
    return Workload(
        name=name,
        max_procs=machine,
        job_id=rows[order, _COL["job"]].astype(np.int64),
        submit=np.ascontiguousarray(rows[order, _COL["submit"]]),
        run=run_sorted,
        req_time=np.ascontiguousarray(req_time[order]),
        procs=procs[order],
        user=rows[order, _COL["user"]].astype(np.int64),
        group=group,
        queue=rows[order, _COL["queue"]].astype(np.int64),
        partition=rows[order, _COL["partition"]].astype(np.int64),
        executable=rows[order, _COL["executable"]].astype(np.int64),
        recorded_wait=np.ascontiguousarray(recorded_wait[order]),
        vo=vo,
        job_class=classify_by_runtime(run_sorted, interactive_threshold_s),
        vo_names=vo_names,
        vo_shares=None,
        dropped=dropped,
        fixed=fixed,
        header=header,
        unix_start_time=header_int(header, "UnixStartTime"),
        id_names=id_names,
    )


def _read_alea(
    text: str, path: Path, header: dict[str, str]
) -> tuple[NDArray[np.float64], dict[int, str], dict[str, str]]:
    """An extended SWF file's table (submit times from the first job), queue names and a header saying so."""
    try:
        table, queues = alea.parse_alea(text, path.name, N_FIELDS)
        cores = alea.machine_cores(path)
    except alea.AleaFormatError as exc:
        raise SwfFormatError(str(exc)) from None
    header = {**header, "Format": "Alea extended SWF", "Dropped": alea.DROPPED_FIELDS}
    submitted = table[:, _COL["submit"]]
    if len(table) and (submitted >= 0).any():
        epoch = int(submitted[submitted >= 0].min())
        table[:, _COL["submit"]] = np.where(submitted >= 0, submitted - epoch, submitted)
        header.setdefault("UnixStartTime", str(epoch))
    if cores is not None:
        header.setdefault("MaxProcs", str(cores))
    return table, queues, header


# --------------------------------------------------------------------------------------------
# Finding a trace by name
# --------------------------------------------------------------------------------------------

_SUFFIXES = (".swf.gz", ".swf")


def _trace_name(path: Path) -> str:
    """``KTH-SP2-1996-2.1-cln.swf.gz`` -> ``KTH-SP2-1996-2.1-cln``."""
    for suffix in (*_SUFFIXES, ".gz"):
        if path.name.endswith(suffix):
            return path.name[: -len(suffix)]
    return path.name


def trace_search_dirs() -> list[Path]:
    """Where named traces are looked up: ``$RLSCHED_TRACE_DIR`` (if set), then the fetch cache."""
    dirs = []
    env = os.environ.get("RLSCHED_TRACE_DIR")
    if env:
        dirs.append(Path(env).expanduser())
    dirs.append(cache_dir())
    return dirs


def resolve_trace(name_or_path: str) -> Path:
    """An existing file path, or a trace name/alias (``kth``, ``KTH-SP2-1996-2.1-cln``,
    ``metacentrum/wagap-2013``) found in :func:`trace_search_dirs` as ``<NAME>.swf.gz`` or ``<NAME>.swf``.

    Raises FileNotFoundError with one line listing every place it looked.
    """
    direct = Path(name_or_path).expanduser()
    if direct.is_file():
        return direct
    entry = lookup_catalogue(name_or_path)
    # A name may keep its sub-folder of the trace directory (``metacentrum/wagap-2013``).
    stem = entry.name if entry else str(Path(name_or_path).parent / _trace_name(Path(name_or_path)))
    tried: list[str] = [str(direct)]
    for folder in trace_search_dirs():
        for suffix in _SUFFIXES:
            candidate = folder / f"{stem}{suffix}"
            if candidate.is_file():
                return candidate
            tried.append(str(candidate))
    hint = (
        f"; fetch it with: rlsched trace fetch {entry.name} (or set RLSCHED_TRACE_DIR)"
        if entry
        else f" (known names: {', '.join(sorted(CATALOGUE))})"
    )
    raise FileNotFoundError(f"trace {name_or_path!r} not found; looked at: {', '.join(tried)}{hint}")
