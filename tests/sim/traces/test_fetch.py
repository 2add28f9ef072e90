"""`rlsched trace fetch` against a real HTTP server on 127.0.0.1, and `rlsched trace info`."""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from rlsched.cli.trace import trace
from rlsched.sim.traces.fetch import CATALOGUE, FetchError, fetch_trace, lookup_catalogue, sha256_of
from rlsched.sim.traces.swf import read_swf, resolve_trace

SMALL_SWF = (
    "; Version: 2.2\n; MaxProcs: 8\n; UnixStartTime: 1000\n"
    "1 0 5 100 2 -1 -1 2 200 -1 1 1 1 -1 1 1 -1 -1\n"
    "2 10 -1 -1 2 -1 -1 2 200 -1 5 1 2 -1 1 1 -1 -1\n"
    "3 20 0 50 16 -1 -1 16 60 -1 1 2 1 -1 1 1 -1 -1\n"
)
SMALL_GZ = gzip.compress(SMALL_SWF.encode(), mtime=0)
SMALL_SHA = hashlib.sha256(SMALL_GZ).hexdigest()


@dataclass
class Archive:
    root: Path
    url: str
    requests: list[str]

    def put(self, folder: str, name: str, data: bytes) -> Path:
        (self.root / folder).mkdir(parents=True, exist_ok=True)
        path = self.root / folder / name
        path.write_bytes(data)
        return path


@pytest.fixture
def archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Archive]:
    """A Parallel Workloads Archive look-alike served by http.server on an ephemeral port."""
    root = tmp_path / "archive"
    root.mkdir()
    requests: list[str] = []

    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            if self.path.startswith("/slow/"):
                time.sleep(1.0)  # longer than the client's timeout in the timeout test
            if self.path.startswith("/short/"):  # promises more bytes than it sends
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                self.wfile.write(SMALL_GZ)
                return
            super().do_GET()

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    # Isolate every test from the user's cache and environment.
    monkeypatch.setenv("RLSCHED_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RLSCHED_TRACE_DIR", raising=False)
    monkeypatch.delenv("RLSCHED_PWA_URL", raising=False)
    try:
        yield Archive(root, f"http://127.0.0.1:{server.server_address[1]}/", requests)
    finally:
        server.shutdown()
        server.server_close()


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# ---------------------------------------------------------------------------- with a shared trace


def test_catalogue_hashes_match_the_shared_traces(trace_dir: Path) -> None:
    for short in ("kth", "ctc", "sdsc", "lpc"):
        entry = lookup_catalogue(short)
        assert entry is not None
        assert sha256_of(trace_dir / entry.file_name) == entry.sha256


def test_fetch_shared_trace_verifies_caches_and_resolves(archive: Archive, trace_path, tmp_path: Path) -> None:
    source = trace_path("kth")
    (archive.root / "l_kth_sp2").mkdir()
    shutil.copy(source, archive.root / "l_kth_sp2" / source.name)  # laid out like the archive
    path = fetch_trace("kth", base=archive.url)
    assert path == tmp_path / "cache" / "KTH-SP2-1996-2.1-cln.swf.gz"
    assert path.read_bytes() == source.read_bytes()
    assert archive.requests == ["/l_kth_sp2/KTH-SP2-1996-2.1-cln.swf.gz"]
    assert _leftovers(path.parent) == [path.name]  # no temp file left behind
    # the fetched file is now found by name (cache dir), and loads
    assert resolve_trace("kth") == path
    assert resolve_trace("KTH-SP2-1996-2.1-cln") == path
    assert len(read_swf(resolve_trace("kth"))) == 28475
    # a verified copy is not downloaded again; --force does
    assert fetch_trace("KTH-SP2-1996-2.1-cln", base=archive.url) == path
    assert len(archive.requests) == 1
    fetch_trace("kth", base=archive.url, force=True)
    assert len(archive.requests) == 2


# ---------------------------------------------------------------------------- with a small file


def test_fetch_unknown_log_by_folder_with_sha(archive: Archive, tmp_path: Path) -> None:
    archive.put("l_test", "Small-1.swf.gz", SMALL_GZ)
    dest = tmp_path / "dest"
    path = fetch_trace("l_test/Small-1", base=archive.url, dest=dest, sha256=SMALL_SHA.upper())
    assert path == dest / "Small-1.swf.gz" and path.read_bytes() == SMALL_GZ
    w = read_swf(path)
    assert w.job_id.tolist() == [1]
    assert w.dropped == {"runtime_missing": 1, "procs_exceed_machine": 1}


def test_hash_mismatch_deletes_the_download(archive: Archive, tmp_path: Path) -> None:
    archive.put("l_test", "Small-1.swf.gz", SMALL_GZ)
    wrong = "0" * 64
    with pytest.raises(FetchError) as info:
        fetch_trace("l_test/Small-1", base=archive.url, sha256=wrong)
    message = str(info.value)
    assert "sha256 mismatch" in message and wrong in message and SMALL_SHA in message
    assert "\n" not in message
    assert _leftovers(tmp_path / "cache") == []


def test_catalogue_hash_mismatch(archive: Archive, tmp_path: Path) -> None:
    archive.put("l_ctc_sp2", "CTC-SP2-1996-3.1-cln.swf.gz", SMALL_GZ)  # not the real CTC file
    with pytest.raises(FetchError, match=f"expected {CATALOGUE['CTC-SP2-1996-3.1-cln'].sha256}, got {SMALL_SHA}"):
        fetch_trace("ctc", base=archive.url)
    assert _leftovers(tmp_path / "cache") == []


def test_http_404(archive: Archive, tmp_path: Path) -> None:
    with pytest.raises(FetchError, match=r"HTTP 404 .*l_test/Absent-1.swf.gz"):
        fetch_trace("l_test/Absent-1", base=archive.url, verify=False)
    assert _leftovers(tmp_path / "cache") == []


def test_connection_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSCHED_CACHE_DIR", str(tmp_path / "cache"))
    with socket.socket() as probe:  # a port nobody listens on once the probe closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(FetchError, match="connection refused"):
        fetch_trace("kth", base=f"http://127.0.0.1:{port}/")


def test_timeout(archive: Archive) -> None:
    archive.put("slow/l_test", "Small-1.swf.gz", SMALL_GZ)
    started = time.perf_counter()
    with pytest.raises(FetchError, match=r"timed out after 0.2 s"):
        fetch_trace("l_test/Small-1", base=archive.url + "slow/", verify=False, timeout_s=0.2)
    assert time.perf_counter() - started < 0.9


def test_truncated_download(archive: Archive, tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="Small-1"):
        fetch_trace("l_test/Small-1", base=archive.url + "short/", verify=False, timeout_s=5)
    assert _leftovers(tmp_path / "cache") == []


def test_error_page_is_not_a_trace(archive: Archive) -> None:
    archive.put("l_test", "Page-1.swf.gz", b"<html>moved</html>")
    with pytest.raises(FetchError, match="did not return a gzip file"):
        fetch_trace("l_test/Page-1", base=archive.url, verify=False)


def test_unknown_hash_needs_sha_or_no_verify(archive: Archive) -> None:
    with pytest.raises(FetchError, match=r"--sha256 HEX .* or --no-verify"):
        fetch_trace("hpc2n", base=archive.url)
    with pytest.raises(FetchError, match="64 hex digits"):
        fetch_trace("hpc2n", base=archive.url, sha256="abc")
    with pytest.raises(FetchError, match=r"unknown archive log 'nonsense'.*KTH-SP2-1996-2\.1-cln"):
        fetch_trace("nonsense", base=archive.url)
    assert archive.requests == []  # all refused before any network access


def test_existing_files_and_env_base_url(archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive.put("l_test", "Small-1.swf.gz", SMALL_GZ)
    monkeypatch.setenv("RLSCHED_PWA_URL", archive.url)
    cache = tmp_path / "cache"
    cache.mkdir()
    stale = cache / "Small-1.swf.gz"
    stale.write_bytes(b"stale")
    # unverified: an existing file is kept as it is
    assert fetch_trace("l_test/Small-1", verify=False) == stale
    assert stale.read_bytes() == b"stale" and archive.requests == []
    # verified: a copy that fails the hash is downloaded again
    assert fetch_trace("l_test/Small-1", sha256=SMALL_SHA).read_bytes() == SMALL_GZ
    assert len(archive.requests) == 1
    assert fetch_trace("l_test/Small-1", sha256=SMALL_SHA) == stale
    assert len(archive.requests) == 1


# ---------------------------------------------------------------------------- CLI


def test_cli_fetch_then_info_by_name(archive: Archive, tmp_path: Path) -> None:
    archive.put("l_test", "Small-1.swf.gz", SMALL_GZ)
    runner = CliRunner()
    result = runner.invoke(trace, ["fetch", "l_test/Small-1", "--base-url", archive.url, "--sha256", SMALL_SHA])
    assert result.exit_code == 0, result.output
    assert str(tmp_path / "cache" / "Small-1.swf.gz") in result.output
    assert f"sha256 {SMALL_SHA} ok" in result.output
    info = runner.invoke(trace, ["info", "Small-1"])
    assert info.exit_code == 0, info.output
    out = info.output
    assert "MaxProcs" in out and "UnixStartTime" in out and "1000" in out
    assert "runtime_missing" in out and "procs_exceed_machine" in out
    assert "Dropped (by reason" in out and "Fixed (by reason" in out


def test_cli_fetch_json(archive: Archive, tmp_path: Path) -> None:
    archive.put("l_test", "Small-1.swf.gz", SMALL_GZ)
    result = CliRunner().invoke(
        trace, ["fetch", "l_test/Small-1", "--base-url", archive.url, "--sha256", SMALL_SHA, "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["path"] == str(tmp_path / "cache" / "Small-1.swf.gz") and data["sha256"] == SMALL_SHA
    assert data["verified"] is True and data["bytes"] == len(SMALL_GZ) and data["seconds"] >= 0


def test_cli_fetch_errors_are_one_line(archive: Archive) -> None:
    archive.put("l_test", "Small-1.swf.gz", SMALL_GZ)
    runner = CliRunner()
    bad = runner.invoke(trace, ["fetch", "l_test/Small-1", "--base-url", archive.url, "--sha256", "1" * 64])
    assert bad.exit_code == 1
    assert bad.output.strip().startswith("Error: Small-1: sha256 mismatch")
    assert len(bad.output.strip().splitlines()) == 1
    missing = runner.invoke(trace, ["fetch", "l_test/Gone-1", "--base-url", archive.url, "--no-verify"])
    assert missing.exit_code == 1 and "HTTP 404" in missing.output


def test_cli_info_json_and_max_procs(tmp_path: Path) -> None:
    path = tmp_path / "s.swf"
    path.write_text(SMALL_SWF)
    runner = CliRunner()
    result = runner.invoke(trace, ["info", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["header"]["MaxProcs"] == "8"
    assert data["summary"]["jobs"] == 1 and data["summary"]["max_procs"] == 8
    assert data["summary"]["dropped"] == {"runtime_missing": 1, "procs_exceed_machine": 1}
    bigger = json.loads(runner.invoke(trace, ["info", str(path), "--json", "--max-procs", "16"]).output)
    assert bigger["summary"]["jobs"] == 2 and bigger["summary"]["dropped"] == {"runtime_missing": 1}
    assert runner.invoke(trace, ["info", str(path), "--max-procs", "0"]).exit_code == 2


def test_cli_info_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSCHED_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RLSCHED_TRACE_DIR", raising=False)
    runner = CliRunner()
    absent = runner.invoke(trace, ["info", "nonsense"])
    assert absent.exit_code == 1 and "not found; looked at:" in absent.output
    bad = tmp_path / "bad.swf"
    bad.write_text(SMALL_SWF + "4 30 0 50 1 -1\n")
    broken = runner.invoke(trace, ["info", str(bad)])
    assert broken.exit_code == 1
    assert "Error: bad.swf:7: expected 18 fields, found 6" in broken.output


def test_cli_list() -> None:
    result = CliRunner().invoke(trace, ["list"])
    assert result.exit_code == 0
    assert all(name in result.output for name in CATALOGUE)


def test_cli_info_shared_trace(trace_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RLSCHED_TRACE_DIR", str(trace_dir))
    result = CliRunner().invoke(trace, ["info", "sdsc"])
    assert result.exit_code == 0, result.output
    assert "1664 (72, 1368, 224)" in result.output
    assert "runtime_exceeds_request   10,658" in result.output


def test_unwritable_destination(archive: Archive, tmp_path: Path) -> None:
    archive.put("l_test", "Small-1.swf.gz", SMALL_GZ)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(FetchError, match=r"Small-1: cannot write to .*a-file"):
        fetch_trace("l_test/Small-1", base=archive.url, dest=blocker / "sub", verify=False)
