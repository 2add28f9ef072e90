"""Alea's extended SWF (MetaCentrum): what the reader keeps, what it drops, and its errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rlsched.sim.traces.swf import SwfFormatError, read_swf, resolve_trace

# Three jobs: absolute epoch submit times, two queues, a CPU list and a resource request each.
LINES = [
    "0 1356996147 0 56011 64 1 1024 64 86400 68719476736 1 62 1 1 -1 1 1 1 {1241,1241} q_1d 1:ppn=64:cl_zewura#excl",
    "1 1356996695 71 1164297 12 1 1024 12 1209600 91268055040 1 101 1 1 -1 1 1 1 {1129,1129} q_2w 1:ppn=12",
    "2 1356998549 0 545 4 1 1024 4 7200 68719476736 1 62 1 1 -1 1 1 1 {1240} q_2h 1:ppn=4",
]
MACHINES = "0\tzewura\t20\t80\t1\t529426432\n1\tzegox\t48\t12\t1\t94035968\n"


def write(folder: Path, lines: list[str], machines: str | None = MACHINES) -> Path:
    path = folder / "site.swf"
    path.write_text("\n".join(lines) + "\n")
    if machines is not None:
        (folder / "site.swf.machines").write_text(machines)
    return path


def test_the_extended_fields_are_read_or_dropped_as_documented(tmp_path: Path) -> None:
    w = read_swf(write(tmp_path, LINES))
    assert len(w) == 3 and w.max_procs == 20 * 80 + 48 * 12
    # Submit times from the first submission; the epoch kept as the SWF header keeps it.
    assert w.submit.tolist() == [0.0, 548.0, 2402.0]
    assert w.unix_start_time == 1356996147
    # Queue ids by sorted name, the names kept.
    assert w.id_names["queue"] == {0: "q_1d", 1: "q_2h", 2: "q_2w"}
    assert w.queue.tolist() == [0, 2, 1]
    assert w.header["Format"] == "Alea extended SWF" and "resource request" in w.header["Dropped"]
    np.testing.assert_array_equal(w.req_time, [86400, 1209600, 7200])
    np.testing.assert_array_equal(w.recorded_wait, [0, 71, 0])


def test_without_a_machines_file_the_largest_job_sizes_the_machine(tmp_path: Path) -> None:
    assert read_swf(write(tmp_path, LINES, machines=None)).max_procs == 64


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("3 1356999000 0 10 1 1 1024 1 60 1 1 62 1 1 -1 1 1 1 {1} q_2h", "site.swf:4: expected 21 fields"),
        ("3 1356999000 0 10 1 1 1024 1 60 1 1 62 1 1 -1 1 1 1 1 q_2h 1:ppn=1", "site.swf:4: field 19 is not a {…}"),
        (
            "3 1356999000 0 ten 1 1 1024 1 60 1 1 62 1 1 -1 1 1 1 {1} q_2h 1:ppn=1",
            "site.swf:4: field 4 is not a number",
        ),
    ],
)
def test_a_malformed_line_is_named_by_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    with pytest.raises(SwfFormatError, match=problem):
        read_swf(write(tmp_path, [*LINES, line]))


def test_a_bad_machines_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SwfFormatError, match=r"site.swf.machines:2: expected"):
        read_swf(write(tmp_path, LINES, machines="0 zewura 20 80\n1 zegox many 12\n"))


def test_a_trace_name_may_keep_its_sub_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "metacentrum").mkdir()
    path = write(tmp_path / "metacentrum", LINES)
    monkeypatch.setenv("RLSCHED_TRACE_DIR", str(tmp_path))
    assert resolve_trace("metacentrum/site") == path


def test_the_shared_metacentrum_log(trace_dir: Path) -> None:
    w = read_swf(trace_dir / "metacentrum" / "wagap-2013.swf")
    # 17,900 lines, two without a runtime (dropped and counted); 2,176 CPUs from the .machines file.
    assert len(w) == 17_898 and w.dropped == {"runtime_missing": 2}
    assert w.max_procs == 2176 and w.unix_start_time == 1356996147 and w.submit[0] == 0.0
    assert set(w.id_names["queue"].values()) >= {
        "q_2h",
        "q_4h",
        "q_1d",
        "q_2d",
        "q_4d",
        "q_1w",
        "q_2w",
        "q_2w_plus",
        "backfill",
        "ops",
    }
