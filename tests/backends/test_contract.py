"""The LiveBackend contract (:func:`rlsched.core.checker.check_live_backend`) on every backend rlsched has.

The simulator is checked always; the real Slurm backend against the local test cluster (marked ``slurm``),
the PBS backend against the local OpenPBS (marked ``pbs``); the example plugin's ``toyq`` backend
(``examples/rlsched-example-backend``, installed with pip, found through its entry point) against a scripted
``toyq``.  A new batch system adds its own case here, against a real cluster of its kind.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

pytest.register_assert_rewrite("tests.slurm_cluster", "tests.pbs_cluster")

from rlsched.backends import backend_config_from_table, build_backend  # noqa: E402
from rlsched.backends.slurm import SlurmBackend  # noqa: E402
from rlsched.core.checker import BackendCheckError, LiveCheckReport, check_live_backend  # noqa: E402
from rlsched.core.live import LiveBackend, NodeControl  # noqa: E402
from rlsched.core.view import ClusterView, Decisions  # noqa: E402
from rlsched.sim.engine import Simulator  # noqa: E402
from rlsched.sim.workload import Workload, make_workload  # noqa: E402
from tests.pbs_cluster import PBSTestServer  # noqa: E402
from tests.plugin_packages import ScriptedToyq, installed, pip_install_example  # noqa: E402
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

ALL_STEPS = ["interface", "view", "boost", "hold/release", "undo", "release_gated", "vanished job"]


# ------------------------------------------------------------------------------------------- simulator
def blocked_workload() -> Workload:
    """Job 1 (8 cores) runs long, job 2 (8 cores) ends at t=5, jobs 3-6 (16 cores each) wait behind job 1."""
    return make_workload(
        submit=[0.0, 0.0, 10.0, 11.0, 12.0, 13.0],
        run=[1000.0, 5.0, 50.0, 60.0, 70.0, 80.0],
        procs=[8, 8, 16, 16, 16, 16],
        max_procs=16,
        vo=[0, 1, 0, 1, 0, 1],
        vo_names=("atlas", "cms"),
        name="blocked",
    )


class AtFourWaiting:
    """Calls ``probe(sim)`` once, as soon as four jobs wait (t=13); otherwise decides nothing."""

    def __init__(self, probe: Callable[[Simulator], object]) -> None:
        self.probe = probe
        self.sim: Simulator | None = None
        self.called = False

    def decide(self, view: ClusterView) -> Decisions:
        if not self.called and len(view.pending) == 4:
            assert self.sim is not None
            self.called = True
            self.probe(self.sim)
        return Decisions()


def simulate_with(probe: Callable[[Simulator], object], cls: type[Simulator] = Simulator) -> Simulator:
    agent = AtFourWaiting(probe)
    sim = cls(blocked_workload(), agent=agent, name="sim")
    agent.sim = sim
    sim.run()
    assert agent.called
    return sim


def test_the_simulator_keeps_the_live_backend_contract_and_the_check_changes_no_schedule() -> None:
    reports: list[LiveCheckReport] = []
    agent = AtFourWaiting(lambda sim: reports.append(check_live_backend(sim, ended_job_id=2, gate_covers_pending=True)))
    sim = Simulator(blocked_workload(), agent=agent, name="sim")
    agent.sim = sim
    assert isinstance(sim, LiveBackend) and not isinstance(sim, NodeControl)
    checked = sim.run()
    assert reports[0].steps == ALL_STEPS and reports[0].boosted == (4, 3) and reports[0].held == 3
    assert sim.errors["vanished_job"] >= 4 and sim.actions["hold"] == 3 and sim.actions["release"] == 3
    # Undo left nothing behind: the schedule is the one of a simulation nobody acted on.
    plain = Simulator(blocked_workload(), name="sim").run()
    assert checked.start.tolist() == plain.start.tolist() and checked.end.tolist() == plain.end.tolist()


def test_the_simulator_answers_the_daemons_questions() -> None:
    def probe(sim: Simulator) -> None:
        sim.hold(3)
        counts = sim.queue_counts()
        assert counts == {
            ("sim", "atlas", "batch", "running"): 1,
            ("sim", "atlas", "interactive", "held"): 1,
            ("sim", "cms", "interactive", "pending"): 2,
            ("sim", "atlas", "interactive", "pending"): 1,
        }
        assert sim.job_labels()[4] == ("sim", "cms") and 2 not in sim.job_labels()  # job 2 has ended
        assert sim.changes() == {"boosted": 0, "held": 1, "drained": 0}
        assert sim.release_gated() == 1 and sim.changes()["held"] == 0
        assert json.dumps(sim.heartbeat_fields()) == "{}" and "simulator" in sim.describe()

    simulate_with(probe)


class KeepsItsHolds(Simulator):
    """A broken backend: its undo forgets the jobs it held."""

    def undo(self) -> int:
        undone = len(self._boosted)
        self.boost([])
        return undone + len(self._held_by_agent)


class RaisesOnVanished(Simulator):
    """A broken backend: acting on an unknown job raises instead of counting ``vanished_job``."""

    def hold(self, job_id: int) -> None:
        if int(job_id) not in set(self.workload.job_id.tolist()):
            raise KeyError(job_id)
        super().hold(job_id)


@pytest.mark.parametrize(("cls", "step"), [(KeepsItsHolds, "undo"), (RaisesOnVanished, "vanished job")])
def test_the_checker_catches_a_backend_that_breaks_the_contract(cls: type[Simulator], step: str) -> None:
    with pytest.raises(BackendCheckError, match=f"{cls.__name__}: {step}: "):
        simulate_with(check_live_backend, cls)


def test_the_checker_needs_two_waiting_jobs() -> None:
    sim = Simulator(blocked_workload())
    with pytest.raises(BackendCheckError, match="setup: needs two pending, unheld jobs"):
        check_live_backend(sim)


# ------------------------------------------------------------------------------------------- Slurm
@pytest.mark.slurm
@pytest.mark.timeout(180)
def test_the_slurm_backend_keeps_the_live_backend_contract(slurm: SlurmTestCluster, tmp_path: Path) -> None:
    ended = slurm.sbatch("-c", "1", sleep_s=0)
    wait_for(lambda: slurm.state(ended) == "COMPLETED", 30, "the short job to end")
    blocker = slurm.sbatch("-c", "16", sleep_s=120)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    waiting = [slurm.sbatch("-c", "16", "-A", account) for account in ("atlas", "cms", "atlas")]
    config = backend_config_from_table(
        {
            "kind": "slurm",
            "slurm_conf": slurm.conf,
            "partitions": ["debug"],
            "vos": ["atlas", "cms", "other"],
            "default_vo": "other",
        },
        "contract",
    )
    backend = build_backend(config, tmp_path)
    assert isinstance(backend, SlurmBackend) and isinstance(backend, NodeControl)
    report = check_live_backend(backend, ended_job_id=ended, gate_covers_pending=True)
    assert report.steps == ALL_STEPS and set(report.boosted) <= set(waiting)
    assert backend.errors["vanished_job"] >= 4
    # Nothing left behind, as Slurm itself tells: no waiting job held or with a Nice offset, the record empty.
    fields = slurm.squeue("%i %T %y %r")
    for job_id in waiting:
        state, nice, reason = fields[job_id]
        assert state == "PENDING" and nice == "0" and "Held" not in reason, fields[job_id]
    record = json.loads((tmp_path / "slurm-record.json").read_text())
    assert record["original_nice"] == {} and record["held_by_rlsched"] == []
    assert np.isin(waiting, backend.view().pending.job_id).all()


# ------------------------------------------------------------------------------------------- PBS
@pytest.mark.pbs
@pytest.mark.timeout(240, func_only=True)  # the session fixture may build OpenPBS first (minutes)
def test_the_pbs_backend_keeps_the_live_backend_contract(pbs: PBSTestServer, tmp_path: Path) -> None:
    from rlsched.backends.pbs import PBSBackend
    from rlsched.backends.pbs.parsers import parse_job_id

    ended = pbs.qsub(ncpus=1, sleep_s=0)
    wait_for(lambda: pbs.state(ended) == "F", 60, "the short job to end")
    blocker = pbs.qsub(sleep_s=120)
    wait_for(lambda: pbs.state(blocker) == "R", 30, "the blocker to run")
    waiting = [pbs.qsub("-A", account) for account in ("atlas", "cms", "atlas")]
    config = backend_config_from_table(
        {
            "kind": "pbs",
            "command_prefix": pbs.command_prefix,
            "bin_dir": pbs.bin_dir,
            "sched_config": pbs.sched_config,
            "queues": ["workq"],
            "vo_from": "account",
            "vos": ["atlas", "cms", "other"],
            "default_vo": "other",
        },
        "contract",
    )
    backend = build_backend(config, tmp_path)
    assert isinstance(backend, PBSBackend) and not isinstance(backend, NodeControl)
    ended_id = parse_job_id(ended)[0]
    report = check_live_backend(backend, ended_job_id=ended_id, gate_covers_pending=True)
    waiting_ids = [parse_job_id(j)[0] for j in waiting]
    assert report.steps == ALL_STEPS and set(report.boosted) <= set(waiting_ids)
    assert backend.errors["vanished_job"] >= 4
    # Nothing left behind, as PBS itself tells: no waiting job held or with a priority, the record empty.
    for job_id in waiting:
        job = pbs.job(job_id)
        assert job["job_state"] == "Q" and int(job.get("Priority", 0)) == 0 and job["Hold_Types"] == "n", job
    record = json.loads((tmp_path / "pbs-record.json").read_text())
    assert record["original_priority"] == {} and record["held_by_rlsched"] == []
    assert np.isin(waiting_ids, backend.view().pending.job_id).all()


# ------------------------------------------------------------------------------------------- a plugin
@pytest.fixture(scope="module")
def example_plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The example package, pip-installed (offline) into a folder put on ``sys.path`` for these tests."""
    with installed(pip_install_example(tmp_path_factory.mktemp("site"))):
        yield


@pytest.mark.timeout(300)
def test_a_backend_from_an_entry_point_keeps_the_live_backend_contract(example_plugin: None, tmp_path: Path) -> None:
    config = backend_config_from_table(
        {"kind": "toyq", "queues": ["batch"], "vos": ["physics", "biology"], "default_vo": "physics"}, "contract"
    )
    backend = build_backend(config, tmp_path)
    assert type(backend).__module__ == "rlsched_example_backend.backend"
    toyq = ScriptedToyq()
    backend.executor.runner = toyq  # type: ignore[attr-defined]  # the scripted batch system
    report = check_live_backend(backend, ended_job_id=6, gate_covers_pending=True)
    assert report.steps == ALL_STEPS and set(report.boosted) <= {3, 4, 5}
    assert backend.errors["vanished_job"] >= 4
    assert all(job["priority"] == 0 and job["state"] != "held" for job in toyq.jobs.values())
    record = json.loads((tmp_path / "toyq-record.json").read_text())
    assert record["original_priority"] == {} and record["held_by_rlsched"] == []


@pytest.mark.timeout(300)
def test_a_policy_from_an_entry_point_runs_in_the_simulator_and_live(example_plugin: None) -> None:
    from rlsched.core.policies import BuildContext, build_agent, resolve
    from rlsched.core.policies.registry import describe
    from rlsched.sim.policies import simulate_policy

    spec = resolve("largest-first")
    assert ("largest-first", "rule", "the job asking for the most cores first (an example plugin)") in describe()
    # Simulated: one 8-core machine, a long job, then jobs of 2, 8 and 4 cores wait; the widest starts first.
    workload = make_workload(
        submit=[0.0, 1.0, 2.0, 3.0], run=[100.0, 10.0, 10.0, 10.0], procs=[8, 2, 8, 4], max_procs=8, name="widest"
    )
    starts = simulate_policy(workload, spec).schedule.start
    assert starts[2] < min(starts[1], starts[3])  # FCFS would start the 2-core job first
    # Live, through the example backend: the pending jobs boosted widest first.
    backend = build_backend(backend_config_from_table({"kind": "toyq"}, "contract"), None)
    backend.executor.runner = ScriptedToyq()  # type: ignore[attr-defined]
    ranked = build_agent(spec, BuildContext(mode="boost", live=True)).decide(backend.view()).boost
    assert ranked is not None and list(ranked)[:3] == [3, 4, 5]  # 4 cores, 2, 1


def test_a_daemon_config_naming_the_plugins_backend_loads_with_the_daemons_own_keys(
    example_plugin: None, tmp_path: Path
) -> None:
    # The daemon hands the whole [backend] table on; the plugin's kind reads it with rlsched's schema, so the
    # daemon's keys (mode, poll_interval_s) pass and a key of neither is refused in one line naming it.
    from rlsched.daemon.config import ConfigError, load_config

    path = tmp_path / "toyq.toml"
    path.write_text(
        '[backend]\nkind = "toyq"\nmode = "gate"\npoll_interval_s = 5\nqueues = ["batch"]\n'
        'vos = ["physics"]\ndefault_vo = "physics"\n'
    )
    config = load_config(path, require_mode=True)
    assert config.backend.kind == "toyq" and config.backend.queues == frozenset({"batch"})  # type: ignore[attr-defined]
    path.write_text('[backend]\nkind = "toyq"\nmode = "shadow"\nqueus = ["batch"]\n')
    with pytest.raises(ConfigError, match=r"backend\.queus"):
        load_config(path, require_mode=True)
