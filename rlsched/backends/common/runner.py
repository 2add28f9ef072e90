"""Running a batch system's commands: argument lists (never a shell string), timeouts, retries with
exponential backoff, and failure counters by kind (docs/daemon.md, "Failures").

Shared by every live backend (Slurm's ``squeue``/``scontrol``, a PBS backend's ``qstat``/``qalter``) and by
the leasing provider client.  Failures are :class:`BackendError` exceptions with a ``kind`` (the label of the
error counter); a backend may have the executor raise its own subclass of :class:`BackendCommandError`
(``error_class``) so that its messages and ``except`` clauses keep their names.

The runner is injectable so that tests can play faults that a real cluster will not produce on demand
(a ``squeue`` that hangs, truncated JSON, a controller that refuses three times and then answers).
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from rlsched.errors import RlschedError
from rlsched.faultlog import FaultLog

log = logging.getLogger(__name__)

T = TypeVar("T")


class BackendError(RlschedError):
    """Anything a live backend could not do; ``kind`` is the label of the error counter
    (``rlsched_backend_errors_total{kind}``)."""

    kind: str = "error"


class BackendParseError(BackendError, ValueError):
    """Output of a batch-system command (or a line of a log) that does not have the expected shape.

    ``command`` names the source (``"squeue --json"``, ``"qstat -f -F json"``), ``where`` the place in it
    (``"jobs[3].job_id"``, ``"line 12"``) and the message says what was wrong.  Each backend derives its own
    (``SlurmParseError``, ``PBSParseError``) so that callers can tell them apart.
    """

    kind = "parse_error"

    def __init__(self, command: str, where: str, message: str) -> None:
        self.command = command
        self.where = where
        self.message = message
        location = f" at {where}" if where else ""
        super().__init__(f"{command}: bad output{location}: {message}")


class BackendCommandError(BackendError):
    """A command that failed (after retries when the failure was transient)."""

    def __init__(self, kind: str, argv: Sequence[str], detail: str) -> None:
        self.kind = kind
        self.argv = tuple(argv)
        self.detail = detail
        super().__init__(f"{' '.join(self.argv)}: {kind}: {detail}")


class VanishedJobError(BackendCommandError):
    """The job named in an action is gone (finished, cancelled) or no longer in the state the action needs;
    ``job_id`` is the job as the batch system names it (``"12"``, PBS ``"13[2].host"``)."""

    def __init__(self, argv: Sequence[str], job_id: str, detail: str) -> None:
        self.job_id = job_id
        super().__init__("vanished_job", argv, detail)


class CommandResult:
    """What a finished command left behind.

    ``stdout`` may be given as the command's raw bytes.  Output that is all ASCII (the common case:
    ``squeue --json`` of a whole cluster, 114 MB at 50,000 jobs) is kept as bytes and decoded only if
    someone asks for :attr:`stdout`; the JSON readers take :attr:`stdout_bytes` and never pay for a
    ``str`` copy (issue 16: 0.08 s of a 0.5 s cycle).  Other output is decoded at once, invalid UTF-8
    replaced and counted in :attr:`decode_replacements`.
    """

    __slots__ = ("_data", "_text", "argv", "decode_replacements", "returncode", "stderr")

    def __init__(
        self, argv: Sequence[str], returncode: int, stdout: str | bytes, stderr: str, decode_replacements: int = 0
    ) -> None:
        self.argv: tuple[str, ...] = tuple(argv)
        self.returncode = returncode
        self.stderr = stderr
        self._text: str | None = None
        self._data: bytes | None = None
        if isinstance(stdout, str):
            self._text = stdout
        elif stdout.isascii():
            self._data = stdout
        else:
            self._text, replaced = decode_output(stdout)
            if not replaced:  # valid UTF-8: the readers can still take the bytes as they came
                self._data = stdout
            decode_replacements += replaced
        #: Bytes of the output that were not valid UTF-8 (each became U+FFFD): a job name such as
        #: ``$'\\xff'`` must not make a whole view undecodable (issue 16).
        self.decode_replacements = decode_replacements

    @property
    def stdout(self) -> str:
        """The output as text (invalid UTF-8 already replaced)."""
        if self._text is None:
            self._text = (self._data or b"").decode("ascii")
        return self._text

    @property
    def stdout_bytes(self) -> bytes:
        """The output as valid UTF-8 bytes (what a JSON reader takes without a ``str`` copy)."""
        if self._data is None:
            self._data = (self._text or "").encode("utf-8", "surrogatepass")
        return self._data

    def with_argv(self, argv: Sequence[str]) -> CommandResult:
        """The same result under another command line (a backend that runs commands behind a prefix)."""
        copy = CommandResult(argv, self.returncode, "", self.stderr, self.decode_replacements)
        copy._text, copy._data = self._text, self._data
        return copy

    def __repr__(self) -> str:
        return (
            f"CommandResult(argv={self.argv!r}, returncode={self.returncode}, "
            f"stdout={self.stdout[:80]!r}, stderr={self.stderr[:80]!r}, "
            f"decode_replacements={self.decode_replacements})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CommandResult):
            return NotImplemented
        return (self.argv, self.returncode, self.stdout, self.stderr, self.decode_replacements) == (
            other.argv,
            other.returncode,
            other.stdout,
            other.stderr,
            other.decode_replacements,
        )

    __hash__ = None  # type: ignore[assignment]


def decode_output(data: bytes) -> tuple[str, int]:
    """``data`` as UTF-8 text, invalid bytes replaced by U+FFFD; also how many replacements were made."""
    try:
        return data.decode("utf-8"), 0
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        # U+FFFD already in the output (valid UTF-8) is not a replacement.
        return text, text.count("\ufffd") - data.count("\ufffd".encode())


class CommandTimeout(RlschedError):
    """The command did not finish within its timeout (the runner killed it)."""


class CommandRunner(Protocol):
    """Runs one command; raises :class:`CommandTimeout` or :class:`FileNotFoundError`, else returns."""

    def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult: ...


class SubprocessRunner:
    """The real runner: :func:`subprocess.run` with an argument list and a timeout.

    ``env`` entries are added to the inherited environment (``SLURM_CONF`` to reach a test cluster,
    ``SLURM_TIME_FORMAT=%s`` for epoch timestamps from ``sacct``).
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self.env = {**os.environ, **(env or {})}

    def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
        try:
            done = subprocess.run(
                list(argv), capture_output=True, timeout=timeout_s, env=self.env, check=False, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired as exc:
            raise CommandTimeout(f"no answer in {timeout_s:g} s") from exc
        stderr, err_bad = decode_output(done.stderr)
        return CommandResult(tuple(argv), done.returncode, done.stdout, stderr, err_bad)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: attempt k (0-based) is followed by a pause of ``min(base·2^k, max)``."""

    attempts: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"RetryPolicy.attempts must be >= 1, got {self.attempts}")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("RetryPolicy delays must be >= 0")

    def delay_s(self, attempt: int) -> float:
        return float(min(self.base_delay_s * 2.0**attempt, self.max_delay_s))


class CommandExecutor:
    """Runs commands through a :class:`CommandRunner`, retrying transient failures.

    ``errors`` counts every failure by kind — ``timeout``, ``nonzero_exit``, ``missing_command``,
    ``parse_error``, ``vanished_job``, ``decode_replacement`` (one per invalid UTF-8 byte sequence replaced),
    ``job_skipped`` (one job's fields unreadable, the rest of the view kept) — including the ones a retry
    then cured; the daemon's metrics
    exporter reads it as ``rlsched_backend_errors_total{kind=...}``.
    """

    def __init__(
        self,
        runner: CommandRunner,
        timeout_s: float = 30.0,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        error_class: type[BackendCommandError] = BackendCommandError,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.runner = runner
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.error_class = error_class
        self.errors: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.faults = FaultLog(log)

    def count(self, kind: str, n: int = 1) -> None:
        self.errors[kind] += n

    def run_once(self, argv: Sequence[str]) -> CommandResult:
        """One attempt; a timeout or a missing binary becomes an ``error_class`` error (counted)."""
        self.calls[argv[0]] += 1
        try:
            result = self.runner(argv, self.timeout_s)
        except CommandTimeout as exc:
            self.count("timeout")
            raise self.error_class("timeout", argv, str(exc)) from exc
        except FileNotFoundError as exc:
            self.count("missing_command")
            raise self.error_class("missing_command", argv, f"{argv[0]} not found on PATH") from exc
        except OSError as exc:
            self.count("os_error")
            raise self.error_class("os_error", argv, str(exc)) from exc
        key = f"decode {argv[0]}"
        if result.decode_replacements:
            self.count("decode_replacement", result.decode_replacements)
            # A queued job's bad name is in every squeue answer: logged once, then at a bounded rate.
            self.faults.failed(
                key,
                logging.WARNING,
                "%s: %d invalid UTF-8 sequence(s) in its output, replaced",
                argv[0],
                result.decode_replacements,
            )
        else:
            self.faults.recovered(key, "%s: its output is valid UTF-8 again", argv[0])
        return result

    def run(
        self,
        argv: Sequence[str],
        parse: Callable[[CommandResult], T],
        permanent: Callable[[CommandResult], BackendError | None] | None = None,
    ) -> T:
        """Run ``argv`` and ``parse`` its result, retrying with backoff.

        A nonzero exit is a failure unless ``permanent`` turns it into an error that retrying cannot
        cure (a vanished job); such an error is counted and raised at once.  ``parse`` may raise
        :class:`BackendError` (a truncated document is retried: the next answer is usually whole).
        A missing command is not retried.
        """
        last: BackendError | None = None
        for attempt in range(self.retry.attempts):
            try:
                result = self.run_once(argv)
                if result.returncode != 0:
                    final = permanent(result) if permanent is not None else None
                    if final is not None:
                        self.count(final.kind)
                        raise final
                    self.count("nonzero_exit")
                    raise self.error_class(
                        "nonzero_exit", argv, f"exit {result.returncode}: {_first_line(result.stderr)}"
                    )
                try:
                    return parse(result)
                except BackendError as exc:
                    self.count(exc.kind)
                    raise
            except BackendError as exc:
                if exc.kind not in _TRANSIENT:  # a vanished job or a missing binary stays so
                    raise
                last = exc
                if attempt + 1 < self.retry.attempts:
                    delay = self.retry.delay_s(attempt)
                    log.warning("%s (attempt %d/%d, retrying in %.2g s)", exc, attempt + 1, self.retry.attempts, delay)
                    self.sleep(delay)
        assert last is not None
        log.error("%s (gave up after %d attempts)", last, self.retry.attempts)
        raise last


#: Error kinds that a later attempt may cure.
_TRANSIENT = frozenset({"timeout", "nonzero_exit", "parse_error", "os_error"})


def _first_line(text: str) -> str:
    stripped = text.strip()
    return stripped.splitlines()[0] if stripped else "(no message)"
