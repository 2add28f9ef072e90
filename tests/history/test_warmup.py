"""`rlsched history predictor`: the configured policy's runtime predictor taught an imported history, keyed as the
live view keys jobs (users by the CRC-32 of their name, VOs by the config, epoch seconds), so that the daemon
finds it; refusals are one line and write nothing."""

from __future__ import annotations

import calendar
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.cli._common import load_workload
from rlsched.core.runtime import PredictedRuntime
from rlsched.core.view import (
    UNKNOWN_EXECUTABLE,
    ClusterView,
    FinishedJobs,
    JobClass,
    PendingJobs,
    RunningJobs,
    executable_id,
    user_id,
)
from rlsched.daemon.agents import start_agent
from rlsched.daemon.config import load_config
from rlsched.daemon.state import restore_predictor
from rlsched.history.warmup import live_history, unnamed_user

HEADER = (
    "JobID|JobIDRaw|JobName|User|Group|Account|Partition|QOS|State|Submit|Eligible|Start|End|Elapsed|Timelimit|"
    "AllocCPUS|ReqCPUS|NNodes|ExitCode"
)
#: (user, account, submit, end): every job starts at its submit, asks 2 h and 4 cores.  alice runs 1000 s, 2000 s,
#: 4000 s (the predictor's last two: 2000 and 4000, mean 3000 s); bob one job of 600 s (fewer than two: cold).
JOBS = (
    ("alice", "atlas", "2026-11-20T08:00:00", "2026-11-20T08:16:40"),
    ("bob", "cms", "2026-11-20T08:01:00", "2026-11-20T08:11:00"),
    ("alice", "atlas", "2026-11-20T09:00:00", "2026-11-20T09:33:20"),
    ("alice", "atlas", "2026-11-20T10:00:00", "2026-11-20T11:06:40"),
)
REQUEST_S = 7200.0


def imported(tmp_path: Path, names: tuple[str, ...] = ("job",) * len(JOBS)) -> Path:
    """The history of :data:`JOBS` through `rlsched history import` (SWF, sidecar and meta file), the jobs named
    ``names``."""
    rows = [
        f"{n}|{n}|{name}|{user}|grp|{account}|debug|normal|COMPLETED|{submit}|{submit}|{submit}|{end}|00:00:00|"
        f"02:00:00|4|4|1|0:0"
        for n, ((user, account, submit, end), name) in enumerate(zip(JOBS, names, strict=True), 1)
    ]
    records = tmp_path / "sacct.txt"
    records.write_text("\n".join([HEADER, *rows]) + "\n")
    out = tmp_path / "site.swf"
    result = CliRunner().invoke(
        main, ["history", "import", "--from", "sacct-file", "--input", str(records), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def config(
    tmp_path: Path,
    agent: str = 'kind = "sjf"\nruntime_model = "user-last2"\n',
    vos: str = 'vos = ["cms", "atlas"]\ndefault_vo = "cms"\n',
) -> Path:
    """A shadow-mode config whose VO list is in another order than the import's (atlas first there)."""
    (tmp_path / "no-bin").mkdir(exist_ok=True)
    path = tmp_path / "rlsched.toml"
    path.write_text(
        f'[backend]\nmode = "shadow"\nbin_dir = "{tmp_path / "no-bin"}"\n{vos}'
        f'[agent]\n{agent}[state]\ndir = "{tmp_path / "state"}"\n[metrics]\nlisten = "off"\n'
    )
    return path


def warm(config_path: Path, history: Path, *options: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["history", "predictor", "--config", str(config_path), *options, str(history)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return result.exit_code, result.output


def restored_runtime(config_path: Path) -> PredictedRuntime:
    """The configured agent's runtime predictor as the daemon restores it at start."""
    cfg = load_config(config_path, require_mode=True)
    handle, _ = start_agent(cfg.agent, cfg.mode, cfg.backend.vos, cfg.backend.vo_shares, cfg.model_file)
    runtime = handle.runtime
    assert isinstance(runtime, PredictedRuntime)
    assert restore_predictor(cfg.predictor_file, runtime) == (True, None)
    return runtime


def pending(users: list[int], first_id: int = 1000) -> PendingJobs:
    """Jobs of ``users`` as a live backend shows them: 2 h asked, 4 cores, just submitted (a job keeps the
    prediction made when it was first seen: new ids for new jobs)."""
    n = len(users)
    return PendingJobs(
        job_id=np.arange(first_id, first_id + n, dtype=np.int64),
        vo=np.zeros(n, dtype=np.int64),
        job_class=np.full(n, int(JobClass.BATCH), dtype=np.int64),
        cores=np.full(n, 4, dtype=np.int64),
        req_time_s=np.full(n, REQUEST_S),
        submit_s=np.full(n, time.time()),
        oracle_run_s=np.full(n, np.nan),
        held=np.zeros(n, dtype=np.bool_),
        user=np.array(users, dtype=np.int64),
    )


def test_a_user_of_the_history_gets_the_mean_of_the_last_two_runtimes_live(tmp_path: Path) -> None:
    history, path = imported(tmp_path), config(tmp_path)
    code, out = warm(path, history)
    assert code == 0, out
    target = tmp_path / "state" / "predictor.json"
    assert out == (
        f"learned 4 jobs of 2 users from {history} into the user-last2 runtime predictor of policy "
        f"sjf:backfill=false,runtime_model=user-last2; wrote {target}\n"
    )
    assert target.stat().st_mode & 0o777 == 0o600
    runtime = restored_runtime(path)
    # alice: (2000 + 4000) / 2; bob has one finished job and a user the history never saw none: the request.
    predicted = runtime.pending(pending([user_id("alice"), user_id("bob"), user_id("zoe")]))
    assert predicted.tolist() == [3000.0, REQUEST_S, REQUEST_S]
    # Keyed by the SWF user id (alice is user 1 of the trace) the live view would find nothing.
    swf_alice = next(i for i, name in load_workload(str(history)).id_names["user"].items() if name == "alice")
    assert runtime.pending(pending([swf_alice], first_id=2000)).tolist() == [REQUEST_S]


def test_users_vos_and_times_are_the_live_views(tmp_path: Path) -> None:
    history, path = imported(tmp_path), config(tmp_path)
    workload = load_workload(str(history))
    assert workload.vo_names[:2] == ("atlas", "cms")  # the import's order, not the config's
    history_jobs = live_history(workload, load_config(path).vo_mapping())
    assert history_jobs.vo_names == ("cms", "atlas")  # the config's list
    live = history_jobs.jobs
    assert live.user.tolist() == [user_id(u) for u, *_ in JOBS]
    assert live.vo.tolist() == [1, 0, 1, 1]  # [backend] vos = ["cms", "atlas"]
    epoch = [calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%S")) for _, _, s, _ in JOBS]
    ends = [calendar.timegm(time.strptime(e, "%Y-%m-%dT%H:%M:%S")) for *_, e in JOBS]
    assert live.submit_s.tolist() == epoch and live.end_s.tolist() == ends  # the live clock: epoch seconds
    assert unnamed_user(-1) == -1 and unnamed_user(0) == -2  # users without a name: keys no live user has


def test_executable_ids_are_the_live_views_as_they_are(tmp_path: Path) -> None:
    # Unlike users (SWF ids re-keyed by name), field 14 already holds the live key: CRC-32 of the job name.
    names = ("sim-a", "", "sim-a", "post")
    history = imported(tmp_path, names)
    live = live_history(load_workload(str(history)), load_config(config(tmp_path)).vo_mapping()).jobs
    assert live.executable.tolist() == [executable_id(name) for name in names]
    assert live.executable.tolist()[1] == UNKNOWN_EXECUTABLE and len(set(live.executable.tolist())) == 3


def test_the_learned_predictor_keeps_users_and_vos_by_their_live_keys(tmp_path: Path) -> None:
    history = imported(tmp_path)
    path = config(tmp_path, 'kind = "f3"\nruntime_model = "learned"\n')
    code, out = warm(path, history)
    assert code == 0 and "learned 4 jobs of 2 users" in out and "learned runtime predictor of policy f3" in out
    state = restored_runtime(path).state()
    assert {u["user"] for u in state["users"]} == {user_id("alice"), user_id("bob")}
    assert {vo for vo, _ in state["vo_ratio"]} == {0, 1} and state["updates"] == 4


def test_an_existing_predictor_is_replaced_only_with_force(tmp_path: Path) -> None:
    history, path = imported(tmp_path), config(tmp_path)
    target = tmp_path / "state" / "predictor.json"
    target.parent.mkdir()
    target.write_text('{"predictor": "user-last2"}')
    code, out = warm(path, history)
    assert code == 1 and out.count("\n") == 1 and f"{target} exists" in out and "--force" in out
    assert target.read_text() == '{"predictor": "user-last2"}'
    code, out = warm(path, history, "--force")
    assert code == 0, out
    assert json.loads(target.read_text())["last"]


def test_a_policy_without_a_runtime_predictor_is_refused(tmp_path: Path) -> None:
    history, path = imported(tmp_path), config(tmp_path, 'kind = "fcfs"\n')
    code, out = warm(path, history)
    assert code == 1 and out.count("\n") == 1
    assert "policy fcfs reads no runtime predictor" in out and "runtime_model=user-last2 or learned" in out
    assert not (tmp_path / "state" / "predictor.json").exists()


def test_a_malformed_history_or_one_without_names_is_one_line(tmp_path: Path) -> None:
    history, path = imported(tmp_path), config(tmp_path)
    lines = history.read_text().splitlines()
    bad = tmp_path / "bad.swf"
    bad.write_text("\n".join([*lines, "5 x 0 10 4 -1 -1 4 7200 -1 1 1 1 -1 1 1 -1 -1"]) + "\n")
    code, out = warm(path, bad)
    assert code == 1 and out.count("\n") == 1 and f"{bad.name}:{len(lines) + 1}: field 2 (submit)" in out
    plain = tmp_path / "plain.swf"  # the SWF alone: no meta file, so no user names
    plain.write_text(history.read_text())
    code, out = warm(path, plain)
    assert code == 1 and out.count("\n") == 1 and "names no user" in out
    assert not (tmp_path / "state" / "predictor.json").exists()


def test_users_the_meta_file_does_not_name_start_cold_with_a_warning(tmp_path: Path) -> None:
    history, path = imported(tmp_path), config(tmp_path)
    meta_path = tmp_path / "site.meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["swf_ids"]["user"]["alice"]
    meta_path.write_text(json.dumps(meta))
    code, out = warm(path, history)
    assert code == 0, out
    assert "warning: 1 of the 2 users of" in out and "cannot be matched to live users" in out
    assert "learned 4 jobs of 2 users" in out
    # alice's jobs were learned under a key no live user has: her live jobs get the request.
    assert restored_runtime(path).pending(pending([user_id("alice")])).tolist() == [REQUEST_S]


def test_without_a_fixed_vo_list_the_daemon_finds_a_vos_history_by_name_whatever_number_it_gives_it(
    tmp_path: Path,
) -> None:
    # The history numbers its VOs in its own order (atlas, cms); a daemon without [backend] vos numbers them as
    # it meets them, here cms first.  The learned predictor keys VOs by name, kept in predictor.json.
    history = imported(tmp_path)
    code, out = warm(config(tmp_path, 'kind = "f3"\nruntime_model = "learned"\n', vos=""), history)
    assert code == 0 and "learned 4 jobs of 2 users" in out and "warning" not in out
    state = json.loads((tmp_path / "state" / "predictor.json").read_text())
    assert state["vo_names"] == ["atlas", "cms"]
    ratios = dict(state["vo_ratio"])
    assert ratios[0] != ratios[1]  # atlas's jobs ran 1000-4000 s of 7200, cms's 600
    runtime = restored_runtime(tmp_path / "rlsched.toml")
    jobs = pending([user_id("zoe"), user_id("zoe")])
    view = ClusterView(
        0.0, 8, 8, replace(jobs, vo=np.array([1, 0])), RunningJobs(), FinishedJobs(), vos=("cms", "atlas")
    )
    runtime.observe(view)
    again = restored_runtime(tmp_path / "rlsched.toml")  # the VOs numbered as the history numbered them
    same = ClusterView(
        0.0, 8, 8, replace(jobs, vo=np.array([0, 1])), RunningJobs(), FinishedJobs(), vos=("atlas", "cms")
    )
    again.observe(same)
    assert runtime.pending(view.pending).tolist() == again.pending(same.pending).tolist()
    assert runtime.state()["vo_names"] == ["atlas", "cms"]
