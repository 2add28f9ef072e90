"""Where history comes from: the ``--from`` registry, the site settings a daemon config gives, the import.

Each source turns its records into :class:`~rlsched.history.records.HistoryJob`; everything after that
(drops, classes, VOs, SWF and sidecar) is shared.  A new source — PBS accounting logs once the PBS backend
exists — is one :func:`register_source` call (or one entry of :data:`SOURCES`): a reader
``read(request, settings, log) -> Iterable[HistoryJob]``, and nothing else changes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rlsched.backends.common.runner import CommandExecutor, RetryPolicy, SubprocessRunner
from rlsched.core.classify import ClassRule, VOMapping
from rlsched.history.records import DropLog, HistoryFormatError, HistoryJob
from rlsched.history.trace import DEFAULT_UNLIMITED_TIME_S, HistoryTrace, build_trace

#: How long the live ``sacct`` may take (a year of a busy cluster's records is slow to fetch).
DEFAULT_SACCT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class SiteSettings:
    """What the daemon config says about the site: the class rule, the account → VO mapping, and how to
    run Slurm's commands.  Without a config: the default class rule (time limit ≤ 900 s is interactive) and
    VO = account (in order of appearance)."""

    class_rule: ClassRule = field(default_factory=ClassRule)
    vos: tuple[str, ...] = ()
    vo_shares: tuple[float, ...] | None = None
    vo_accounts: dict[str, str] = field(default_factory=dict)
    default_vo: str | None = None
    vo_from: str | None = None
    slurm_conf: str | None = None
    bin_dir: str | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    unlimited_time_s: float = DEFAULT_UNLIMITED_TIME_S
    config: str | None = None

    def vo_mapping(self) -> VOMapping:
        return VOMapping(self.vos, self.vo_shares, self.vo_accounts, self.default_vo)

    def describe(self) -> dict[str, Any]:
        """The class rule and VO mapping as meta.json records them."""
        rule = self.class_rule
        return {
            "config": self.config,
            "class_rule": {**rule.to_dict(), "applied_to": "time limit, QOS and partition (never the runtime)"},
            "vo_mapping": {
                "vos": list(self.vos) or "one VO per account",
                "vo_accounts": dict(self.vo_accounts),
                "default_vo": self.default_vo,
            },
            "vo_shares": list(self.vo_shares) if self.vo_shares is not None else None,
        }


def site_settings(config_path: str | Path | None) -> SiteSettings:
    """The settings of a daemon config file (``rlsched.toml``), checked as the daemon checks it; a bad file
    is a one-line ``ValueError`` naming the file and the key."""
    if config_path is None:
        return SiteSettings()
    from rlsched.daemon.config import load_config

    backend = load_config(config_path).backend
    # The daemon reads these through its backend's config (Slurm's: SlurmBackendConfig); a backend without
    # one of them leaves the default.
    return SiteSettings(
        class_rule=getattr(backend, "class_rule", ClassRule()),
        vos=tuple(backend.vos),
        vo_shares=backend.vo_shares,
        vo_accounts=dict(getattr(backend, "vo_accounts", {}) or {}),
        default_vo=getattr(backend, "default_vo", None),
        vo_from=getattr(backend, "vo_from", None),
        slurm_conf=getattr(backend, "slurm_conf", None),
        bin_dir=getattr(backend, "bin_dir", None),
        retry=getattr(backend, "retry", RetryPolicy()),
        unlimited_time_s=float(getattr(backend, "unlimited_time_s", DEFAULT_UNLIMITED_TIME_S)),
        config=str(config_path),
    )


@dataclass(frozen=True)
class ImportRequest:
    """What ``rlsched history import`` was asked: the source, its input or window, and options."""

    source: str
    input: Path | None = None
    start: str | None = None
    end: str | None = None
    clusters: str | None = None
    columns: tuple[str, ...] | None = None
    timeout_s: float = DEFAULT_SACCT_TIMEOUT_S
    strict: bool = False
    cores: int | None = None


Reader = Callable[[ImportRequest, SiteSettings, DropLog, dict[str, Any]], Iterable[HistoryJob]]


@dataclass(frozen=True)
class HistorySource:
    """One ``--from`` choice: ``needs_input`` (a file) or a command run live (``needs_window``)."""

    name: str
    help: str
    read: Reader
    needs_input: bool = True
    needs_window: bool = False


def parse_time(text: str, option: str) -> float:
    """``--start``/``--end``: ``YYYY-MM-DD[THH:MM[:SS]]`` in local time (as sacct reads it), or ``now``."""
    if text == "now":
        return datetime.now().timestamp()
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise HistoryFormatError(f"{option}: not a time: {text!r} (YYYY-MM-DD[THH:MM[:SS]], or now)") from None


def _lines(path: Path) -> Iterator[str]:
    # Bytes that are not UTF-8 (a job name) are replaced, never fatal: the line is still read.  Lines end at
    # "\n" only: a CR or a form feed inside a job name does not split its record.
    with path.open(encoding="utf-8", errors="replace", newline="\n") as handle:
        yield from handle


def _read_sacct_file(
    request: ImportRequest, settings: SiteSettings, log: DropLog, meta: dict[str, Any]
) -> Iterable[HistoryJob]:
    from rlsched.history.sacct import read_sacct_text

    assert request.input is not None
    meta["input"] = str(request.input)
    return read_sacct_text(_lines(request.input), str(request.input), log, request.columns)


def _read_sacct_json(
    request: ImportRequest, settings: SiteSettings, log: DropLog, meta: dict[str, Any]
) -> Iterable[HistoryJob]:
    from rlsched.history.sacct import read_sacct_json

    assert request.input is not None
    meta["input"] = str(request.input)
    text = request.input.read_text(encoding="utf-8", errors="replace")
    return read_sacct_json(text, str(request.input), log)


def _read_jobcomp(
    request: ImportRequest, settings: SiteSettings, log: DropLog, meta: dict[str, Any]
) -> Iterable[HistoryJob]:
    from rlsched.history.jobcomp import read_jobcomp

    assert request.input is not None
    meta["input"] = str(request.input)
    return read_jobcomp(_lines(request.input), str(request.input), log)


def _read_sacct_live(
    request: ImportRequest, settings: SiteSettings, log: DropLog, meta: dict[str, Any]
) -> Iterable[HistoryJob]:
    from rlsched.backends.slurm.errors import SlurmCommandError
    from rlsched.history.sacct import read_sacct_delimited, record_delimiter, run_sacct, sacct_argv

    assert request.start is not None
    sacct = str(Path(settings.bin_dir) / "sacct") if settings.bin_dir else "sacct"
    # The job name is free text: records are read at a delimiter of this run, which no name can hold.
    delimiter = record_delimiter()
    argv = sacct_argv(request.start, request.end or "now", delimiter=delimiter, sacct=sacct, clusters=request.clusters)
    env = {"SLURM_TIME_FORMAT": "%s"}  # epoch seconds: no time zone to guess
    if settings.slurm_conf:
        env["SLURM_CONF"] = settings.slurm_conf
    executor = CommandExecutor(SubprocessRunner(env), request.timeout_s, settings.retry, error_class=SlurmCommandError)
    meta["command"] = argv
    meta["environment"] = env
    text = run_sacct(executor, argv)
    return read_sacct_delimited(text, delimiter, "sacct output", log)


def _read_pbs_accounting(
    request: ImportRequest, settings: SiteSettings, log: DropLog, meta: dict[str, Any]
) -> Iterable[HistoryJob]:
    from rlsched.history.pbs import accounting_files, read_pbs_accounting

    assert request.input is not None
    files = accounting_files(request.input)
    if not files:
        raise HistoryFormatError(f"{request.input}: no accounting file (YYYYMMDD) in this folder")
    meta["input"] = [str(f) for f in files]
    vo_from = settings.vo_from or "project"
    meta["vo_from"] = vo_from
    return (job for f in files for job in read_pbs_accounting(_lines(f), str(f), log, vo_from))


#: Every ``--from`` choice, by name.
SOURCES: dict[str, HistorySource] = {
    "sacct": HistorySource(
        "sacct", "run sacct now (slurmdbd) for --start/--end", _read_sacct_live, needs_input=False, needs_window=True
    ),
    "sacct-file": HistorySource("sacct-file", "a saved `sacct --parsable2` text file", _read_sacct_file),
    "sacct-json": HistorySource("sacct-json", "a saved `sacct --json` file (Slurm 22.05 layout)", _read_sacct_json),
    "jobcomp": HistorySource("jobcomp", "the jobcomp/filetxt file (JobCompLoc)", _read_jobcomp),
    "pbs-accounting": HistorySource(
        "pbs-accounting", "a PBS accounting log (server_priv/accounting/YYYYMMDD, or that folder)", _read_pbs_accounting
    ),
}


def register_source(source: HistorySource) -> None:
    """Add a ``--from`` choice (PBS accounting logs, a site's own export)."""
    SOURCES[source.name] = source


def import_history(request: ImportRequest, settings: SiteSettings | None = None) -> HistoryTrace:
    """Read the records ``request`` names and screen them into a :class:`HistoryTrace` (not yet written).

    Errors (one line each): :class:`HistoryFormatError` for unreadable input or a malformed line under
    ``strict``; ``OSError`` for a missing file; :class:`~rlsched.backends.common.runner.BackendError` when
    ``sacct`` fails after its retries.
    """
    settings = settings or SiteSettings()
    source = SOURCES.get(request.source)
    if source is None:
        raise HistoryFormatError(f"unknown source {request.source!r} (known: {', '.join(SOURCES)})")
    if source.needs_input and request.input is None:
        raise HistoryFormatError(f"--from {source.name} reads a file: give --input FILE")
    if source.needs_window and request.start is None:
        raise HistoryFormatError(f"--from {source.name} needs --start (and optionally --end, default now)")
    window = None
    if request.start is not None or request.end is not None:
        w0 = parse_time(request.start, "--start") if request.start is not None else -math.inf
        w1 = parse_time(request.end, "--end") if request.end is not None else math.inf
        if not w0 < w1:
            raise HistoryFormatError(f"--start {request.start} is not before --end {request.end}")
        window = (w0, w1)
    log = DropLog(strict=request.strict)
    meta: dict[str, Any] = {"source": source.name}
    records = source.read(request, settings, log, meta)
    trace = build_trace(
        records,
        log,
        class_rule=settings.class_rule,
        vo_mapping=settings.vo_mapping(),
        window=window,
        cores=request.cores,
    )
    trace.meta = {**meta, **settings.describe(), "window_given": {"start": request.start, "end": request.end}}
    return trace
