"""SWF + sidecar: fields, ids, classes by the config's rule (never the runtime), VOs by its mapping, drops,
atomic files, and the round trip import → read_trace → simulate."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.classify import ClassRule, VOMapping
from rlsched.core.view import UNKNOWN_EXECUTABLE, JobClass, executable_id
from rlsched.history import ImportRequest, SiteSettings, import_history, site_settings, write_trace
from rlsched.history.records import DropLog, HistoryFormatError, HistoryJob
from rlsched.history.trace import build_trace, peak_allocation
from rlsched.sim.policies import simulate_policy
from rlsched.sim.traces.sidecar import read_trace, sidecar_paths
from rlsched.sim.traces.swf import SwfFormatError, read_swf
from tests.history.conftest import HISTORY

T0 = 1_795_000_000.0


def job(
    raw_id: int,
    submit: float,
    start: float,
    end: float,
    cpus: int = 1,
    *,
    account: str = "atlas",
    qos: str = "normal",
    partition: str = "batch",
    limit: float = 3600.0,
    state: str = "COMPLETED",
    user: str = "u",
) -> HistoryJob:
    return HistoryJob(
        job_id=str(raw_id),
        raw_id=raw_id,
        user=user,
        group="g",
        account=account,
        partition=partition,
        qos=qos,
        state=state,
        submit_s=T0 + submit,
        eligible_s=T0 + submit,
        start_s=T0 + start,
        end_s=T0 + end,
        time_limit_s=limit,
        cpus=cpus,
        nodes=1,
    )


def import_sample(
    tmp_path: Path,
    source: str = "sacct-file",
    name: str = "sacct-parsable2.txt",
    settings: SiteSettings | None = None,
    **kwargs: object,
) -> tuple[Path, dict]:
    request = ImportRequest(source=source, input=HISTORY / name, **kwargs)  # type: ignore[arg-type]
    settings = settings or SiteSettings()
    trace = import_history(request, settings)
    out = tmp_path / "site.swf"
    write_trace(trace, out, meta=trace.meta, unlimited_time_s=settings.unlimited_time_s)
    return out, json.loads(sidecar_paths(out)[1].read_text())


def test_swf_fields_times_and_ids(tmp_path: Path) -> None:
    out, meta = import_sample(tmp_path)
    w = read_swf(out)
    assert w.unix_start_time == meta["unix_start_time"] == 1795161600  # 2026-11-20T08:00:00Z
    assert w.header["MaxProcs"] == str(meta["max_procs"]) == "40"  # 32 + 8 overlap at 09:20
    table = np.loadtxt(out, comments=";", ndmin=2)
    assert table.shape == (9, 18)
    first = table[0]
    # job 100: submit 08:00:00, start +5 s, ran 3600 s on 16 CPUs, limit 2 h, completed.
    assert list(first[:5]) == [1, 0, 5, 3600, 16] and first[8] == 7200 and first[10] == 1
    unlimited = table[6]  # job 130
    assert unlimited[8] == 7 * 86400 and unlimited[4] == 32
    assert table[7][10] == 5 and table[2][10] == 0  # cancelled, timeout
    rows = list(csv.DictReader(sidecar_paths(out)[0].open()))
    assert [r["slurm_job_id"] for r in rows] == ["100", "101", "102", "103", "110_1", "110_2", "130", "131", "140"]
    assert rows[6]["time_limit_s"] == "inf" and rows[6]["nodes"] == "2"
    ids = meta["swf_ids"]
    for row, line in zip(rows, table, strict=True):
        assert ids["user"][row["user"]] == line[11] and ids["queue (QOS)"][row["qos"]] == line[14]
        assert ids["partition"][row["partition"]] == line[15]
        assert meta["vos"][int(line[12]) - 1] == row["vo"]  # group = VO index + 1
        assert float(row["start_epoch"]) - float(row["submit_epoch"]) == line[2]


def test_field_14_is_the_job_names_executable_id_and_reads_back(tmp_path: Path) -> None:
    out, _ = import_sample(tmp_path)
    names = ["sim-a", "short run", "pipe|name", "line one\nline two", "arr", "arr", "unlimited", "stopped", "late"]
    table = np.loadtxt(out, comments=";", ndmin=2)
    assert table[:, 13].astype(np.int64).tolist() == [executable_id(name) for name in names]
    assert table[4, 13] == table[5, 13] != table[0, 13]  # the two "arr" elements: one program
    text = out.read_text()
    assert "sim-a" not in text and "short run" not in text  # ids only: no name is written to the SWF
    for workload in (read_swf(out), read_trace(out)):  # what the simulator and the warm-up read
        assert workload.executable.tolist() == [executable_id(name) for name in names]


def test_field_14_is_minus_one_for_a_file_without_job_names(tmp_path: Path) -> None:
    columns = "JobIDRaw,JobID,User,Group,Account,Partition,QOS,State,Submit,Eligible,Start,End,TimelimitRaw,AllocCPUS"
    columns += ",ReqCPUS,NNodes"
    out, _ = import_sample(tmp_path, name="sacct-noheader-epoch.txt", columns=tuple(columns.split(",")))
    table = np.loadtxt(out, comments=";", ndmin=2)
    assert table.shape == (2, 18) and table[:, 13].tolist() == [UNKNOWN_EXECUTABLE] * 2
    assert read_swf(out).executable.tolist() == [UNKNOWN_EXECUTABLE] * 2
    # The other fields stay where they were: group (13th) and queue (15th) around it.
    assert table[:, 12].tolist() == [1, 2] and table[:, 14].tolist() == [1, 2]


def test_field_14_from_the_jobcomp_name_and_the_pbs_jobname(tmp_path: Path) -> None:
    jobcomp = tmp_path / "jobcomp"
    jobcomp.mkdir()
    out, _ = import_sample(jobcomp, source="jobcomp", name="../slurm/jobcomp.txt")
    rows = list(csv.DictReader(sidecar_paths(out)[0].open()))
    names = {"10": 'weird | name "x" JobState=FAILED Partition=x'}
    expected = [executable_id(names.get(r["slurm_job_id"], "wrap")) for r in rows]
    assert read_swf(out).executable.tolist() == expected and len(set(expected)) == 2
    pbs = tmp_path / "pbs"
    pbs.mkdir()
    out, _ = import_sample(pbs, source="pbs-accounting", name="../pbs/accounting-20261123")
    rows = list(csv.DictReader(sidecar_paths(out)[0].open()))
    names = {"0": "STDIN", "1": "blocker", "6": "nowall"}
    assert read_swf(out).executable.tolist() == [executable_id(names.get(r["slurm_job_id"], "arr")) for r in rows]


def test_meta_records_source_drops_rule_and_version(tmp_path: Path) -> None:
    _, meta = import_sample(tmp_path)
    assert meta["format"] == "rlsched-history-trace/1" and meta["source"] == "sacct-file"
    assert meta["input"].endswith("sacct-parsable2.txt") and meta["rlsched_version"]
    assert meta["dropped"] == {
        "job_step": 3,
        "array_placeholder": 1,
        "cancelled_before_start": 1,
        "not_started": 1,
        "not_ended": 1,
        "malformed": 1,
    }
    assert meta["malformed_examples"][0].endswith(":18: 1 fields, the header has 19: 'garbage'")
    assert meta["class_rule"]["interactive_max_time_s"] == 900 and meta["vos"] == ["atlas", "cms", "lhcb", "ops"]


def test_class_comes_from_the_rule_on_the_limit_never_the_runtime() -> None:
    # Job 1 ran 60 s under a 2 h limit: batch (a runtime rule would say interactive).  Job 2 ran 9 min under
    # a 10 min limit: interactive.  Job 3 ran almost 3 h with no short limit, but its QOS is interactive.
    jobs = [job(1, 0, 0, 60, limit=7200), job(2, 1, 1, 541, limit=600), job(3, 2, 2, 10000, qos="express")]
    rule = ClassRule(interactive_qos=frozenset({"express"}))
    trace = build_trace(jobs, DropLog(), class_rule=rule)
    assert trace.job_class == [JobClass.BATCH, JobClass.INTERACTIVE, JobClass.INTERACTIVE]
    by_partition = build_trace(
        jobs, DropLog(), class_rule=ClassRule(interactive_partitions=frozenset({"batch"}), interactive_max_time_s=None)
    )
    assert set(by_partition.job_class) == {JobClass.INTERACTIVE}


def test_vo_by_the_config_mapping(tmp_path: Path) -> None:
    config = tmp_path / "rlsched.toml"
    config.write_text(
        '[backend]\nvos = ["lhc", "other"]\ndefault_vo = "other"\nvo_shares = [0.7, 0.3]\n'
        'vo_accounts = { atlas = "lhc", cms = "lhc" }\ninteractive_qos = ["express"]\n'
        "interactive_max_time_s = 60\nunlimited_time_s = 86400\n"
    )
    settings = site_settings(config)
    out, meta = import_sample(tmp_path, settings=settings)
    w = read_trace(out)
    assert w.vo_names == ("lhc", "other") and w.vo_shares == (0.7, 0.3)
    rows = list(csv.DictReader(sidecar_paths(out)[0].open()))
    assert [r["vo"] for r in rows] == ["lhc", "lhc", "other", "other", "lhc", "lhc", "lhc", "lhc", "other"]
    # Only job 101 (QOS express) is interactive: the 15-min job 140 is not under a 60 s limit rule.
    assert [r["slurm_job_id"] for r in rows if r["job_class"] == "interactive"] == ["101"]
    assert np.array_equal(
        w.job_class, [JobClass.INTERACTIVE if r["qos"] == "express" else JobClass.BATCH for r in rows]
    )
    assert meta["config"] == str(config) and meta["vo_mapping"]["vo_accounts"] == {"atlas": "lhc", "cms": "lhc"}
    assert np.loadtxt(out, comments=";", ndmin=2)[6][8] == 86400  # the config's unlimited_time_s


def test_a_bad_config_is_one_line_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[backend]\nvos = ["a"]\n')
    with pytest.raises(ValueError, match=r"bad.toml.*default_vo") as info:
        site_settings(config)
    assert "\n" not in str(info.value)


def test_drops_window_duplicates_and_absurd_times() -> None:
    jobs = [
        job(1, 0, 10, 20),
        job(1, 0, 10, 20),
        job(2, 100, 90, 200),
        job(3, 100, 200, 150),
        job(4, 200, 300, 300 + 400 * 86400),
        job(5, 5000, 5000, 5100),
        job(6, -10, 0, 5),
        job(7, 50, 60, 70, cpus=0),
        job(8, 60, math.nan, math.nan, state="PENDING"),
        job(9, 60, 70, math.nan, state="RUNNING"),
        job(10, 60, math.nan, 80, state="CANCELLED"),
        HistoryJob("11", 11, "u", "g", "a", "p", "q", "COMPLETED", math.nan, math.nan, T0, T0 + 1, 60, 1, 1),
    ]
    log = DropLog()
    trace = build_trace(jobs, log, window=(T0 - 5, T0 + 4000))
    assert [j.raw_id for j in trace.jobs] == [1]
    assert log.as_dict() == {
        "cancelled_before_start": 1,
        "not_started": 1,
        "not_ended": 1,
        "zero_cpus": 1,
        "bad_times": 4,
        "outside_window": 2,
        "duplicate": 1,
    }


def test_machine_size_is_the_peak_allocation_or_given() -> None:
    jobs = [job(1, 0, 0, 100, cpus=4), job(2, 0, 50, 150, cpus=8), job(3, 0, 100, 200, cpus=16)]
    assert peak_allocation(jobs) == 24  # 2 and 3 overlap; 1 ends as 3 starts
    assert build_trace(jobs, DropLog(), cores=64).max_procs == 64


def test_read_trace_without_a_sidecar_is_read_swf(tmp_path: Path) -> None:
    out, _ = import_sample(tmp_path)
    for path in sidecar_paths(out):
        path.unlink()
    w = read_trace(out)
    assert w.vo_names == read_swf(out).vo_names and w.vo_names[0].startswith("g")


def test_read_trace_refuses_a_sidecar_of_another_trace(tmp_path: Path) -> None:
    out, _ = import_sample(tmp_path)
    jobs_csv = sidecar_paths(out)[0]
    lines = jobs_csv.read_text().splitlines()
    jobs_csv.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(SwfFormatError, match=r"site.jobs.csv: no row for SWF job 9"):
        read_trace(out)
    jobs_csv.write_text("\n".join([*lines[:2], lines[2].replace(",interactive,", ",urgent,")]) + "\n")
    with pytest.raises(SwfFormatError, match=r"site.jobs.csv:3: job_class must be interactive or batch"):
        read_trace(out)


@pytest.mark.parametrize("source,name", [("sacct-file", "sacct-parsable2.txt"), ("sacct-json", "sacct-22.05.json")])
def test_round_trip_import_read_trace_simulate(tmp_path: Path, source: str, name: str) -> None:
    out, meta = import_sample(tmp_path, source=source, name=name)
    w = read_trace(out)
    assert len(w) == meta["jobs"] and w.max_procs == meta["max_procs"] and w.dropped == {}
    rows = list(csv.DictReader(sidecar_paths(out)[0].open()))
    submit = np.array([float(r["submit_epoch"]) for r in rows]) - meta["unix_start_time"]
    run = np.array([float(r["end_epoch"]) - float(r["start_epoch"]) for r in rows])
    assert np.array_equal(w.submit, submit) and np.array_equal(w.run, run)
    assert np.array_equal(w.recorded_wait, [float(r["start_epoch"]) - float(r["submit_epoch"]) for r in rows])
    assert w.vo_names == tuple(meta["vos"])
    ran = simulate_policy(w, "easy")
    assert len(ran.schedule.start) == len(w) and np.all(ran.schedule.start >= w.submit)


def test_the_window_of_a_file_import(tmp_path: Path) -> None:
    _, meta = import_sample(tmp_path, start="2026-11-20T08:02:00", end="2026-11-20T09:30:00")
    assert meta["jobs"] == 5 and meta["dropped"]["outside_window"] == 4
    with pytest.raises(HistoryFormatError, match="--start 2026-11-21 is not before --end 2026-11-20"):
        import_sample(tmp_path, start="2026-11-21", end="2026-11-20")


def test_outputs_are_written_atomically_and_replace_the_old_trace(tmp_path: Path) -> None:
    out, _ = import_sample(tmp_path)
    out.write_text("old")
    out, _ = import_sample(tmp_path)
    assert out.read_text().startswith("; Version: 2.2") and not list(tmp_path.glob(".*.tmp"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site.jobs.csv", "site.meta.json", "site.swf"]


def test_vo_mapping_without_config_is_one_vo_per_account_in_submit_order() -> None:
    jobs = [job(1, 10, 10, 20, account="b"), job(2, 0, 0, 5, account="a"), job(3, 20, 20, 30, account="b")]
    trace = build_trace(jobs, DropLog(), vo_mapping=VOMapping())
    assert trace.vo_names == ("a", "b") and trace.vo == [0, 1, 1]
