"""When Slurm actually started jobs: from ``sacct``, the ``jobcomp/filetxt`` file, or ``squeue``.

- ``sacct`` (slurmdbd; the default where accounting storage is configured): every job that started, running
  ones included — ``sacct -X -n -P -a --format=JobIDRaw,Start,State -S SINCE -E now`` with
  ``SLURM_TIME_FORMAT=%s``, through the shared runner (argument lists, timeout, retries).
- ``jobcomp``: the ``jobcomp/filetxt`` file has finished jobs only, so the jobs still running come from
  ``squeue`` (added by :func:`read_starts`).
- ``squeue``: running jobs and those finished less than ``MinJobAge`` ago; older ones are gone.

``auto`` picks like the daemon's completion feed (:func:`rlsched.backends.slurm.completions.detect_source`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rlsched.backends.common.runner import CommandExecutor, SubprocessRunner
from rlsched.backends.slurm.completions import detect_source
from rlsched.backends.slurm.config import SlurmBackendConfig
from rlsched.backends.slurm.errors import SlurmCommandError, SlurmError, SlurmParseError
from rlsched.backends.slurm.parsers import (
    JOBCOMP_FILE,
    SACCT,
    parse_jobcomp_line,
    parse_scontrol_config,
    parse_squeue_json,
)

SOURCES = ("auto", "sacct", "jobcomp", "squeue")
#: The ``--format`` :func:`parse_sacct_starts` reads (no free-text field: ``|`` cannot occur in a value).
SACCT_STARTS_FORMAT = "JobIDRaw,Start,State"


@dataclass
class Starts:
    """Job id → start time (epoch seconds), and where they came from."""

    start_s: dict[int, float] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)


def parse_sacct_starts(text: str) -> dict[int, float]:
    """``sacct -X -n -P --format=JobIDRaw,Start,State`` (``SLURM_TIME_FORMAT=%s``): jobs that started.

    A job that never started has Start ``Unknown`` (or ``None``) and is left out; a bad line is a
    one-line :class:`SlurmParseError` naming it.
    """
    out: dict[int, float] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"line {lineno}"
        fields = line.split("|")
        if len(fields) != 3:
            raise SlurmParseError(SACCT, where, f"{len(fields)} fields, expected 3: {line[:80]!r}")
        raw_id, start, _state = fields
        if not raw_id.isdecimal():
            raise SlurmParseError(SACCT, where, f"bad JobIDRaw {raw_id!r:.40}")
        if start in ("Unknown", "None", ""):
            continue
        try:
            value = float(int(start))
        except ValueError:
            raise SlurmParseError(
                SACCT, where, f"not epoch seconds: {start!r:.40} (is SLURM_TIME_FORMAT=%s set?)"
            ) from None
        if value > 0:
            out[int(raw_id)] = value
    return out


def parse_jobcomp_starts(text: str, path: str) -> dict[int, float]:
    """Start times of the finished jobs of a ``jobcomp/filetxt`` file (errors name the file and line)."""
    out: dict[int, float] = {}
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        job = parse_jobcomp_line(line, f"{path}:{lineno}")
        if job is not None and math.isfinite(job.start_s):
            out[job.job_id] = job.start_s
    return out


def parse_squeue_starts(text: str) -> dict[int, float]:
    """Jobs of ``squeue --json`` that started (running, or finished within MinJobAge)."""
    return {
        job.job_id: job.start_s
        for job in parse_squeue_json(text)
        if not job.pending and job.cpus > 0 and math.isfinite(job.start_s) and job.start_s > 0
    }


class StartsReader:
    """Runs the Slurm commands of a daemon config's ``[backend]`` (same ``SLURM_CONF``, ``bin_dir``, timeout)."""

    def __init__(self, config: SlurmBackendConfig, executor: CommandExecutor | None = None) -> None:
        self.config = config
        if executor is None:
            env = {"SLURM_TIME_FORMAT": "%s"}
            if config.slurm_conf:
                env["SLURM_CONF"] = config.slurm_conf
            executor = CommandExecutor(
                SubprocessRunner(env), config.timeout_s, config.retry, error_class=SlurmCommandError
            )
        self.executor = executor

    def _cmd(self, name: str) -> str:
        return str(Path(self.config.bin_dir) / name) if self.config.bin_dir else name

    def choose(self, source: str, jobcomp_path: str | None) -> tuple[str, str | None]:
        """The source ``auto`` stands for on this cluster, and the jobcomp file's path."""
        path = jobcomp_path or self.config.jobcomp_path
        if source == "auto" and self.config.completion_source != "auto":
            source = self.config.completion_source
        if source == "auto" or (source == "jobcomp" and not path):
            slurm = self.executor.run(
                [self._cmd("scontrol"), "show", "config"], lambda r: parse_scontrol_config(r.stdout)
            )
            path = path or slurm.get("JobCompLoc") or None
            if source == "auto":
                source = detect_source(slurm, path)
        if source == "jobcomp" and not path:
            raise SlurmError("the jobcomp source needs the file: give --jobcomp FILE (JobCompLoc is not set)")
        return source, path

    def sacct(self, since_s: float) -> dict[int, float]:
        since = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(since_s))
        argv = [self._cmd("sacct"), "-X", "-n", "-P", "-a", f"--format={SACCT_STARTS_FORMAT}", "-S", since, "-E", "now"]
        return self.executor.run(argv, lambda r: parse_sacct_starts(r.stdout))

    def squeue(self) -> dict[int, float]:
        return self.executor.run([self._cmd("squeue"), "--json"], lambda r: parse_squeue_starts(r.stdout))

    @staticmethod
    def jobcomp(path: str) -> dict[int, float]:
        try:
            text = Path(path).read_text(errors="replace")
        except OSError as exc:
            raise SlurmError(f"{JOBCOMP_FILE}: cannot read {path}: {exc.strerror or exc}") from None
        return parse_jobcomp_starts(text, path)


def read_starts(
    reader: StartsReader,
    source: str,
    since_s: float,
    jobcomp_path: str | None = None,
    note: Callable[[str], None] | None = None,
) -> Starts:
    """Start times from ``source`` (one of :data:`SOURCES`; jobcomp adds squeue's running jobs)."""
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
    chosen, path = reader.choose(source, jobcomp_path)
    out = Starts()
    if chosen == "sacct":
        out.start_s.update(reader.sacct(since_s))
        out.sources.append("sacct")
    elif chosen == "jobcomp":
        assert path is not None
        out.start_s.update(reader.jobcomp(path))
        out.sources.append(f"jobcomp ({path})")
        try:
            running = reader.squeue()
        except SlurmError as exc:  # the finished jobs are still worth a report
            if note is not None:
                note(f"squeue failed, jobs still running are unmatched: {exc}")
        else:
            for job_id, s in running.items():
                out.start_s.setdefault(job_id, s)
            out.sources.append("squeue (running jobs)")
    else:
        out.start_s.update(reader.squeue())
        out.sources.append("squeue (jobs slurmctld still knows: running, or ended within MinJobAge)")
    return out
