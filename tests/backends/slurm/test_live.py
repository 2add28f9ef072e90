"""Integration tests of the Slurm backend against a real local slurmctld (``scripts/slurm-up.sh``).

Marked ``slurm``; the ``slurm_cluster`` fixture starts the cluster once per session (skips without root
unless ``CI=true``).  node1 has 16 CPUs: a 16-CPU "blocker" job makes every later job wait, so the
order in which waiting jobs start is Slurm's priority order — what the boost lever must control.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.register_assert_rewrite("tests.slurm_cluster")

from rlsched.backends.slurm import SlurmBackend, SlurmBackendConfig  # noqa: E402
from rlsched.core.classify import ClassRule  # noqa: E402
from rlsched.core.policies import BuildContext, build_agent, parse_policy  # noqa: E402
from rlsched.core.view import JobClass, executable_id, user_id  # noqa: E402
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

# The fixtures (the lead also lists this plugin in conftest.py; pytest registers a plugin once).
pytestmark = [pytest.mark.slurm, pytest.mark.timeout(180)]


def backend(cluster: SlurmTestCluster, **kwargs: object) -> SlurmBackend:
    config = SlurmBackendConfig(slurm_conf=cluster.conf, **kwargs)  # type: ignore[arg-type]
    return SlurmBackend(config)


def test_startup_time_is_reported(slurm_cluster: SlurmTestCluster) -> None:
    # The measured bring-up (install excluded when the packages are there) is shown with `pytest -rA -s`.
    print(f"\nslurm-up.sh took {slurm_cluster.startup_s:.1f} s")
    assert slurm_cluster.startup_s < 300
    assert "idle" in slurm_cluster.run("sinfo", "-h", "-n", "node1", "-o", "%T").stdout


def test_view_reports_jobs_nodes_classes_and_vos(slurm: SlurmTestCluster) -> None:
    blocker = slurm.sbatch("-c", "12", "-A", "atlas")
    short = slurm.sbatch("-c", "8", "-A", "cms", "-p", "short", "-t", "5", "-J", "md|run 3")
    held = slurm.sbatch("-c", "2", "-A", "lhcb", "--hold")
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    rule = ClassRule(interactive_partitions=frozenset({"short"}), interactive_max_time_s=None)
    b = backend(slurm, vos=("atlas", "cms", "other"), default_vo="other", class_rule=rule)
    view = b.view()
    # node1 (16) and node2, node3 (4 each, partitions wide and accel): the cloud nodes are powered down.
    assert view.total_cores == 24
    assert view.idle_cores == 4 + 8
    assert view.vos == ("atlas", "cms", "other")
    assert list(view.running.job_id) == [blocker]
    assert view.running.cores[0] == 12 and view.running.vo[0] == 0
    assert math.isclose(view.running.start_s[0], view.time_s, abs_tol=60)
    pending = dict(zip(view.pending.job_id.tolist(), range(len(view.pending)), strict=True))
    assert set(pending) == {short, held}
    i, h = pending[short], pending[held]
    assert view.pending.vo[i] == 1 and view.pending.vo[h] == 2  # lhcb is not listed: "other"
    assert view.pending.job_class[i] == JobClass.INTERACTIVE and view.pending.job_class[h] == JobClass.BATCH
    assert view.pending.req_time_s[i] == 300.0
    assert view.pending.req_time_s[h] == b.config.unlimited_time_s
    assert view.pending.held.tolist()[h] and not view.pending.held.tolist()[i]
    # Each job's program: its job name's id (sbatch --wrap names a job "wrap").
    assert view.pending.executable[i] == executable_id("md|run 3") and view.pending.executable[h] == executable_id(
        "wrap"
    )
    assert view.running.executable.tolist() == [executable_id("wrap")]
    assert view.cloud is not None and view.cloud.nodes_total == 4 and view.cloud.nodes_powered == 0
    assert b.errors.total() == 0


def test_boost_makes_the_top_ranked_job_start_first_and_undo_restores_nice(
    slurm: SlurmTestCluster, tmp_path: Path
) -> None:
    blocker = slurm.sbatch("-c", "16", sleep_s=4)
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    first, second = slurm.sbatch("-c", "16"), slurm.sbatch("-c", "16")
    third = slurm.sbatch("-c", "16", "--nice=50")
    state_file = tmp_path / "slurm-record.json"
    b = backend(slurm, state_file=str(state_file))
    view = b.view()
    assert set(view.pending.job_id.tolist()) == {first, second, third}
    b.boost([third, second])  # against submission order and against third's own nice
    niceness = {job: int(fields[2]) for job, fields in slurm.squeue().items()}
    assert niceness[third] < niceness[second] < 0 and niceness[first] == 0
    assert json.loads(state_file.read_text())["original_nice"] == {str(third): 50, str(second): 0}
    wait_for(lambda: slurm.state(third) == "RUNNING", 30, "the boosted job to start when the blocker ends")
    assert slurm.state(first) == "PENDING" and slurm.state(second) == "PENDING"
    # A restarted daemon finds the record and undoes what the previous one did.
    assert backend(slurm, state_file=str(state_file)).undo() == 2
    niceness = {job: int(fields[2]) for job, fields in slurm.squeue().items()}
    assert niceness[third] == 50 and niceness[second] == 0 and niceness[first] == 0
    assert json.loads(state_file.read_text())["original_nice"] == {}


def test_reboost_restores_jobs_that_left_the_ranking(slurm: SlurmTestCluster) -> None:
    blocker = slurm.sbatch("-c", "16")
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    a, c = slurm.sbatch("-c", "16"), slurm.sbatch("-c", "16")
    b = backend(slurm)
    b.view()
    b.boost([a, c])
    b.boost([c])
    niceness = {job: int(fields[2]) for job, fields in slurm.squeue().items()}
    assert niceness[a] == 0 and niceness[c] < 0
    assert b.undo() == 1 and int(slurm.squeue()[c][2]) == 0


def test_hold_and_release(slurm: SlurmTestCluster) -> None:
    blocker = slurm.sbatch("-c", "16")
    job = slurm.sbatch("-c", "1")
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    b = backend(slurm)
    b.view()
    b.hold(job)
    assert slurm.squeue()[job][3] == "JobHeldAdmin"
    view = b.view()
    assert view.pending.held[view.pending.job_id.tolist().index(job)]
    b.release(job)
    assert slurm.squeue()[job][3] != "JobHeldAdmin"
    b.hold(job)
    assert b.undo() == 1 and slurm.squeue()[job][3] != "JobHeldAdmin"
    assert b.actions["hold"] == 2 and b.actions["release"] == 2


def test_a_job_cancelled_between_view_and_action_is_counted_not_raised(slurm: SlurmTestCluster) -> None:
    blocker = slurm.sbatch("-c", "16")
    job = slurm.sbatch("-c", "16")
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    b = backend(slurm)
    assert job in b.view().pending.job_id
    slurm.run("scancel", str(job))
    wait_for(lambda: slurm.state(job) in ("CANCELLED", "GONE"), 10, "the cancel")
    b.boost([job])
    b.hold(job)
    b.release(job)
    assert b.errors["vanished_job"] == 3
    assert b.record.original_nice == {} and b.held_by_rlsched == set()


@pytest.mark.parametrize("source", ["auto", "jobcomp", "squeue"])
def test_finished_jobs_are_delivered_once(slurm: SlurmTestCluster, source: str) -> None:
    b = backend(slurm, completion_source=source)
    assert len(b.view().finished) == 0
    blocker = slurm.sbatch("-c", "16", "-A", "atlas", sleep_s=1)
    job = slurm.sbatch("-c", "4", "-A", "cms", sleep_s=1)
    wait_for(lambda: slurm.state(job) == "COMPLETED", 30, "the jobs to complete")
    seen: dict[int, tuple[float, float]] = {}
    for _ in range(3):
        finished = b.view().finished
        for k, job_id in enumerate(finished.job_id.tolist()):
            assert job_id not in seen, "a completion was delivered twice"
            seen[job_id] = (float(finished.wait_s[k]), float(finished.run_s[k]))
    # The test cluster has slurmdbd, so "auto" picks sacct (a production site's source).
    assert b._feed is not None and b._feed.source == ("sacct" if source == "auto" else source)
    assert set(seen) == {blocker, job}
    wait_blocker, run_blocker = seen[blocker]
    wait_job, _ = seen[job]
    assert 0 <= wait_blocker <= 3 and 0 <= run_blocker <= 4
    assert wait_job >= run_blocker - 1  # it waited for the blocker's 16 CPUs to free
    assert b.errors.total() == 0


def test_lease_cap_drains_cloud_nodes_above_it_and_undo_resumes_them(slurm: SlurmTestCluster) -> None:
    b = backend(slurm)
    b.view()
    b.set_lease_cap(1)
    drained = [
        line.split() for line in slurm.run("sinfo", "-h", "-N", "-p", "cloud", "-o", "%N %T %E").stdout.splitlines()
    ]
    reasons = {name: reason for name, _, reason in drained}
    assert sorted(b.record.drained_by_rlsched) == ["cloud2", "cloud3", "cloud4"]
    assert all(reasons[n] == "rlsched_lease_cap" for n in ("cloud2", "cloud3", "cloud4"))
    assert b.view().cloud is not None and b.view().cloud.cap == 1  # type: ignore[union-attr]
    b.set_lease_cap(2)
    assert sorted(b.record.drained_by_rlsched) == ["cloud3", "cloud4"]
    assert b.undo() == 2
    states = slurm.run("sinfo", "-h", "-N", "-p", "cloud", "-o", "%T").stdout.split()
    assert not any("drain" in s for s in states), states


def test_a_field_rule_ranks_the_live_queue_with_each_jobs_user(slurm: SlurmTestCluster) -> None:
    # The view names each job's user (squeue's user name, as user_id); a rule on user-last2 predictions runs on
    # it live.  Without finished jobs of the user the prediction is the request: SAF puts 4 × 30 min first.
    blocker = slurm.sbatch("-c", "16")
    wait_for(lambda: slurm.state(blocker) == "RUNNING", 20, "the blocker to run")
    longer = slurm.sbatch("-c", "4", "-t", "60")
    shorter = slurm.sbatch("-c", "4", "-t", "30")
    view = backend(slurm).view()
    users = slurm.squeue("%i %u")
    assert view.pending.user.tolist() == [user_id(users[j][0]) for j in view.pending.job_id.tolist()]
    assert view.running.user.tolist() == [user_id(users[blocker][0])]
    agent = build_agent(parse_policy("saf:runtime_model=user-last2"), BuildContext(mode="boost", live=True))
    assert agent.decide(view).boost == (shorter, longer)
