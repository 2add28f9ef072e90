"""Download Parallel Workloads Archive (PWA) logs by their archive name, with a sha256 check.

The archive (https://www.cs.huji.ac.il/labs/parallel/workload/) keeps each log at
``<base>/l_<folder>/<NAME>.swf.gz``.  :data:`CATALOGUE` knows the folder of the common
logs and, for the four the project was validated on, the sha256 of the archive's gzip
file (from ``traces/README.md``: checked against independent copies).  Other logs need
an explicit ``sha256`` or ``verify=False``; a log missing from the catalogue can be
named as ``l_<folder>/<NAME>``.

Downloads stream to a temporary file in the destination folder, are hashed on the
way, and are renamed into place only when the hash matches (the rename is atomic, so
a reader never sees a half-written trace).  Nothing here imports the SWF reader.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rlsched.errors import RlschedError

if TYPE_CHECKING:
    import http.client

# urllib.request, http.client and tempfile are imported where a download happens: the SWF reader
# imports this module for the catalogue, and every simulation run would otherwise pay ~25 ms for them.

DEFAULT_BASE_URL = "https://www.cs.huji.ac.il/labs/parallel/workload/"
_CHUNK = 1 << 20
log = logging.getLogger(__name__)
_GZIP_MAGIC = b"\x1f\x8b"


class FetchError(RlschedError, RuntimeError):
    """A trace that could not be downloaded or verified; the message is one line."""


@dataclass(frozen=True)
class ArchiveLog:
    """One PWA log: its archive file name (without ``.swf.gz``) and folder, and what we know."""

    name: str
    folder: str
    sha256: str | None = None
    aliases: tuple[str, ...] = ()
    description: str = ""

    @property
    def file_name(self) -> str:
        return f"{self.name}.swf.gz"

    def url(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/{self.folder}/{self.file_name}"


_LOGS = (
    # The four traces of docs/traces.md, with the sha256 of the archive's own .gz files.
    ArchiveLog(
        "KTH-SP2-1996-2.1-cln",
        "l_kth_sp2",
        "3e152f201fd2e96808a735bced6ea6eb0bb07fdc447689cafb0750d87b264c0b",
        ("kth", "kth-sp2"),
        "KTH IBM SP2, 100 procs, 28,476 jobs (FH)",
    ),
    ArchiveLog(
        "CTC-SP2-1996-3.1-cln",
        "l_ctc_sp2",
        "9fa28ac16c4386fb81b72a91d8bd8888281df2948a9d912769d387c5ee285bb4",
        ("ctc", "ctc-sp2"),
        "Cornell Theory Center IBM SP2, 338 procs, 77,222 jobs (FH)",
    ),
    ArchiveLog(
        "SDSC-DS-2004-2.1-cln",
        "l_sdsc_ds",
        "0ddb885a96a7f5ee9009d8a36ef350b1d1c451044c205811938995aac80fcc36",
        ("sdsc", "sdsc-ds", "datastar"),
        "SDSC DataStar, 1664 procs, 96,069 jobs (FH 'SDSC')",
    ),
    ArchiveLog(
        "LPC-EGEE-2004-1.2-cln",
        "l_lpc",
        "2fc37df5cc14c355fc7a88235f72e54fdf5f0d93de09399d015383ee5c35a59d",
        ("lpc", "lpc-egee"),
        "LPC Clermont EGEE grid site, 140 CPUs, serial, 234,889 jobs (Tong)",
    ),
    # Other common logs: folder known, hash not checked here (need --sha256 or --no-verify).
    ArchiveLog("SDSC-SP2-1998-4.2-cln", "l_sdsc_sp2", aliases=("sdsc-sp2",), description="SDSC IBM SP2, 128 procs"),
    ArchiveLog(
        "SDSC-BLUE-2000-4.2-cln",
        "l_sdsc_blue",
        aliases=("sdsc-blue", "blue"),
        description="SDSC Blue Horizon, 1152 procs",
    ),
    ArchiveLog(
        "ANL-Intrepid-2009-1",
        "l_anl_int",
        aliases=("anl", "intrepid", "anl-intrepid"),
        description="Argonne Intrepid Blue Gene/P, 163,840 cores",
    ),
    ArchiveLog("HPC2N-2002-2.2-cln", "l_hpc2n", aliases=("hpc2n",), description="HPC2N Seth Linux cluster, 240 procs"),
    ArchiveLog(
        "LANL-CM5-1994-4.1-cln",
        "l_lanl_cm5",
        aliases=("lanl-cm5", "cm5"),
        description="LANL Thinking Machines CM-5, 1024 procs",
    ),
    ArchiveLog(
        "SDSC-Par-1996-3.1-cln", "l_sdsc_par", aliases=("sdsc-par",), description="SDSC Intel Paragon, 416 procs"
    ),
    ArchiveLog(
        "CEA-Curie-2011-2.1-cln", "l_cea_curie", aliases=("curie", "cea-curie"), description="CEA Curie, 93,312 cores"
    ),
    ArchiveLog("KIT-FH2-2016-1", "l_kit_fh2", aliases=("kit-fh2", "fh2"), description="KIT ForHLR II, 24,048 cores"),
)

#: Archive logs by archive name.
CATALOGUE: dict[str, ArchiveLog] = {log.name: log for log in _LOGS}
_BY_LOWER: dict[str, ArchiveLog] = {}
for _log in _LOGS:
    for _key in (_log.name, *_log.aliases):
        _BY_LOWER[_key.lower()] = _log


def lookup_catalogue(name: str) -> ArchiveLog | None:
    """The catalogue entry for an archive name or alias (case-insensitive; ``.swf.gz`` allowed)."""
    key = name.strip().lower()
    for suffix in (".swf.gz", ".swf"):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    return _BY_LOWER.get(key)


def cache_dir() -> Path:
    """Where fetched traces go: ``$RLSCHED_CACHE_DIR`` or ``~/.cache/rlsched/traces``."""
    env = os.environ.get("RLSCHED_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "rlsched" / "traces"


def base_url() -> str:
    """The archive base URL: ``$RLSCHED_PWA_URL`` or the PWA itself."""
    return os.environ.get("RLSCHED_PWA_URL") or DEFAULT_BASE_URL


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def resolve_log(name: str) -> ArchiveLog:
    """A catalogue entry, or an ad-hoc entry for ``l_<folder>/<NAME>`` (hash unknown)."""
    entry = lookup_catalogue(name)
    if entry:
        return entry
    folder, _, stem = name.strip().strip("/").rpartition("/")
    if folder.startswith("l_") and "/" not in folder and stem:
        for suffix in (".swf.gz", ".swf"):
            stem = stem.removesuffix(suffix)
        return ArchiveLog(stem, folder)
    raise FetchError(
        f"unknown archive log {name!r}: use one of {', '.join(sorted(CATALOGUE))}, "
        f"or name it as l_<folder>/<NAME> (the archive's folder and file name)"
    )


ProgressCallback = Callable[[int, int | None], None]


def fetch_trace(
    name: str,
    *,
    base: str | None = None,
    dest: str | os.PathLike[str] | None = None,
    sha256: str | None = None,
    verify: bool = True,
    force: bool = False,
    timeout_s: float = 60.0,
    progress: ProgressCallback | None = None,
) -> Path:
    """Download the archive log ``name`` into ``dest`` (default :func:`cache_dir`) and return its path.

    ``sha256`` overrides the catalogue's hash; a log whose hash is unknown needs one, or
    ``verify=False``.  An existing file that matches the expected hash (or any existing file
    when ``verify=False``) is returned without downloading, unless ``force``.  ``progress``
    is called with (bytes so far, total or None) after every chunk.
    """
    entry = resolve_log(name)
    expected = (sha256 or entry.sha256 or "").strip().lower() or None
    if expected is not None and (len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected)):
        raise FetchError(f"{entry.name}: --sha256 must be 64 hex digits, got {expected!r}")
    if verify and expected is None:
        raise FetchError(
            f"{entry.name}: no known sha256 for this log; pass --sha256 HEX (from a trusted copy) or --no-verify"
        )
    folder = Path(dest).expanduser() if dest is not None else cache_dir()
    target = folder / entry.file_name
    if target.exists() and not force:
        if not verify:
            return target
        if expected is not None and sha256_of(target) == expected:
            return target
        log.warning("%s: existing %s does not match sha256 %s; downloading again", entry.name, target, expected)
    url = entry.url(base or base_url())
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _download(url, target, expected if verify else None, entry.name, timeout_s, progress)
    except OSError as exc:  # network errors are FetchErrors already; this is the local disk
        raise FetchError(f"{entry.name}: cannot write to {folder}: {exc}") from exc
    return target


def _download(
    url: str, target: Path, expected: str | None, label: str, timeout_s: float, progress: ProgressCallback | None
) -> None:
    """Stream ``url`` to a temp file next to ``target``, check it, then rename it into place."""
    import http.client
    import tempfile

    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest = hashlib.sha256()
        received = 0
        first = b""
        with os.fdopen(fd, "wb") as out, _open_url(url, label, timeout_s) as response:
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdecimal() else None
            while True:
                try:
                    chunk = response.read(_CHUNK)
                except TimeoutError as exc:
                    raise FetchError(f"{label}: read from {url} timed out after {timeout_s:g} s") from exc
                except (OSError, http.client.HTTPException) as exc:
                    raise FetchError(f"{label}: download from {url} failed: {exc}") from exc
                if not chunk:
                    break
                if not first:
                    first = chunk[:2]
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                if progress:
                    progress(received, total)
            out.flush()
            os.fsync(out.fileno())
        if total is not None and received != total:
            raise FetchError(f"{label}: download from {url} truncated: {received} of {total} bytes")
        if target.name.endswith(".gz") and first != _GZIP_MAGIC:
            raise FetchError(f"{label}: {url} did not return a gzip file (an error page?)")
        actual = digest.hexdigest()
        if expected is not None and actual != expected:
            raise FetchError(f"{label}: sha256 mismatch for {url}: expected {expected}, got {actual}")
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def _open_url(url: str, label: str, timeout_s: float) -> http.client.HTTPResponse:
    """``urlopen`` with the failures a user can act on turned into one-line FetchErrors."""
    import http.client
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, headers={"User-Agent": "rlsched-trace-fetch"})
    try:
        response: http.client.HTTPResponse = urllib.request.urlopen(request, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        raise FetchError(f"{label}: HTTP {exc.code} {exc.reason} for {url}") from exc
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, ConnectionRefusedError):
            raise FetchError(f"{label}: connection refused by {url}") from exc
        if isinstance(reason, TimeoutError):
            raise FetchError(f"{label}: connecting to {url} timed out after {timeout_s:g} s") from exc
        raise FetchError(f"{label}: cannot reach {url}: {reason}") from exc
    except TimeoutError as exc:
        raise FetchError(f"{label}: connecting to {url} timed out after {timeout_s:g} s") from exc
    except (OSError, http.client.HTTPException, ValueError) as exc:
        raise FetchError(f"{label}: cannot fetch {url}: {exc}") from exc
    return response
