"""The Slurm leasing hooks (plugins/slurm/rlsched-resume, rlsched-suspend) and the local cloud provider
(scripts/local-cloud-provider) of issue 6.

The hooks run as subprocesses, as slurmctld runs them, against temporary state folders, with a fake provider
*script* that records the argv it gets (the provider is the site's tooling; the hooks' only Slurm call is
hostname expansion, which these tests leave to the hooks' own expander by pointing ``[backend] bin_dir`` at
an empty folder).  The provider tests start real (``sleep``) instances and check their processes.  The tests
marked ``slurm`` run both against the real local cluster of scripts/slurm-up.sh: a cloud node really comes up
through ResumeProgram → hook → provider → slurmd, runs a job, and is released through SuspendProgram.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.slurm_cluster")

from tests.scripts import load_script  # noqa: E402
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESUME = ROOT / "plugins" / "slurm" / "rlsched-resume"
SUSPEND = ROOT / "plugins" / "slurm" / "rlsched-suspend"
PROVIDER = ROOT / "scripts" / "local-cloud-provider"

# A provider that appends its argv (as JSON) to $CALLS and exits with the status in $STATUS_FILE (default 0).
FAKE_PROVIDER = f"""#!{sys.executable}
import json, os, sys
with open(os.environ["CALLS"], "a") as fh:
    fh.write(json.dumps(sys.argv[1:]) + "\\n")
print("fake provider got", *sys.argv[1:])
status = os.environ.get("STATUS_FILE")
sys.exit(int(open(status).read()) if status and os.path.exists(status) else 0)
"""


def load_hook_module() -> ModuleType:
    """rlsched-resume as a module, for its pure functions (it has no .py suffix)."""
    return load_script(RESUME, "rlsched_resume_under_test")


class HookSite:
    """A temporary 'site': state folder, config, fake provider and the record of its calls."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "state"
        self.state.mkdir()
        (root / "no-slurm-bin").mkdir()
        self.provider = root / "provider with space"
        self.provider.write_text(FAKE_PROVIDER)
        self.provider.chmod(0o755)
        self.calls_file = root / "calls.jsonl"
        self.status_file = root / "status"
        self.config = root / "rlsched.toml"
        self.write_config()

    def write_config(self, leasing: str = "enabled = true", extra: str = "", provider: list[str] | None = None) -> None:
        command = provider if provider is not None else [str(self.provider), "--region", "a b; touch PWNED", "$HOME"]
        self.config.write_text(
            f'[state]\ndir = "{self.state}"\n'
            f'[backend]\nbin_dir = "{self.root / "no-slurm-bin"}"\n'
            f"[leasing]\n{leasing}\nprovider_command = {json.dumps(command)}\n{extra}\n"
        )

    def heartbeat(self, age_s: float = 0.0, **fields: Any) -> None:
        data = {
            "pid": 1,
            "host": "h",
            "time": time.time() - age_s,
            "mode": "shadow",
            "stale_after_s": 120,
            "stopped": False,
            **fields,
        }
        (self.state / "heartbeat.json").write_text(json.dumps(data))

    def permit(self, allowed: list[str], enforce: bool = True, age_s: float = 0.0, **fields: Any) -> None:
        data = {
            "version": 1,
            "time": time.time() - age_s,
            "enforce": enforce,
            "allowed": allowed,
            "cap": len(allowed),
            "reason": "test",
            **fields,
        }
        (self.state / "lease-permit.json").write_text(json.dumps(data))

    def run(self, hook: Path, *hostlists: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "RLSCHED_CONFIG": str(self.config),
            "CALLS": str(self.calls_file),
            "STATUS_FILE": str(self.status_file),
        }
        # The test's interpreter rather than the shebang's python3: a pyenv shim costs ~0.4 s a start here.
        # The shebangs themselves run in the live tests (slurmctld executes the hooks).
        return subprocess.run(
            [sys.executable, str(hook), *hostlists],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
            cwd=self.root,
        )

    def calls(self) -> list[list[str]]:
        if not self.calls_file.exists():
            return []
        return [json.loads(line) for line in self.calls_file.read_text().splitlines()]

    def hook_log(self) -> str:
        path = self.state / "leasing-hooks.log"
        return path.read_text() if path.exists() else ""


@pytest.fixture
def site(tmp_path: Path) -> HookSite:
    return HookSite(tmp_path)


PROVIDER_PREFIX = ["--region", "a b; touch PWNED", "$HOME"]


# ------------------------------------------------------------------------------------------ resume: allowed
def test_fresh_heartbeat_passes_the_nodes_to_the_provider_as_argv_without_a_shell(site: HookSite) -> None:
    site.heartbeat()
    done = site.run(RESUME, "cloud1", "cloud2")
    assert done.returncode == 0, done.stderr
    # Each argument arrives as it was written: no word splitting, no `;`, no `$HOME` expansion.
    assert site.calls() == [[*PROVIDER_PREFIX, "resume", "cloud1", "cloud2"]]
    assert not (site.root / "PWNED").exists()
    log = site.hook_log()
    assert "provider: fake provider got" in log and "resume cloud1 cloud2: provider exited 0" in log
    # Every log line is timestamped and names the hook.
    assert all(" rlsched-resume[" in line and line[:4].isdigit() for line in log.splitlines())


def test_a_slurm_hostlist_is_expanded_by_the_fallback_when_scontrol_is_unavailable(site: HookSite) -> None:
    site.heartbeat()
    done = site.run(RESUME, "cloud[1-2,4]")
    assert done.returncode == 0, done.stderr
    assert site.calls() == [[*PROVIDER_PREFIX, "resume", "cloud1", "cloud2", "cloud4"]]
    assert "expanding it here" in site.hook_log()


def test_the_heartbeat_limit_comes_from_the_config_before_the_heartbeat(site: HookSite) -> None:
    site.write_config(extra="[gate]\nstale_after_s = 30")
    site.heartbeat(age_s=50, stale_after_s=120)  # fresh by its own limit, stale by the config's
    done = site.run(RESUME, "cloud1")
    assert done.returncode == 1 and site.calls() == []
    assert "limit 30 s" in site.hook_log()


def test_heartbeat_file_and_hook_log_paths_from_the_config(site: HookSite) -> None:
    heartbeat = site.root / "elsewhere.json"
    hook_log = site.root / "hooks.log"
    site.write_config(
        leasing=f'enabled = true\nhook_log = "{hook_log}"', extra=f'[gate]\nheartbeat_file = "{heartbeat}"'
    )
    heartbeat.write_text(json.dumps({"time": time.time(), "stopped": False}))
    done = site.run(RESUME, "cloud3")
    assert done.returncode == 0, done.stderr
    assert "resume cloud3: provider exited 0" in hook_log.read_text()
    assert site.hook_log() == ""


def test_the_hook_log_is_never_opened_through_a_symbolic_link(site: HookSite) -> None:
    victim = site.root / "victim"
    victim.write_text("precious\n")
    hook_log = site.root / "hooks.log"
    hook_log.symlink_to(victim)  # planted where the hook (maybe root) appends
    site.write_config(leasing=f'enabled = true\nhook_log = "{hook_log}"')
    site.heartbeat()
    done = site.run(RESUME, "cloud3")
    assert done.returncode == 0, done.stderr  # the lease goes on; only the log line is lost
    assert victim.read_text() == "precious\n"
    assert f"cannot append to hook log {hook_log}: a symbolic link" in done.stderr


def test_a_refused_node_is_marked_down_and_a_failing_scontrol_is_logged(site: HookSite) -> None:
    # bin_dir has no scontrol here: the refusal stands, and the failed DOWN is said (the live test marks it).
    site.heartbeat(age_s=500)
    done = site.run(RESUME, "cloud3")
    assert done.returncode == 1 and site.calls() == []
    assert "refused resume cloud3" in site.hook_log() and "cannot mark cloud3 DOWN" in site.hook_log()


# ------------------------------------------------------------------------------------------ resume: refused
@pytest.mark.parametrize(
    ("heartbeat", "reason"),
    [
        (None, "no daemon heartbeat"),
        ({"age_s": 500}, "s old (limit 120 s"),
        ({"stopped": True}, "the daemon stopped"),
        ({"time": "yesterday"}, "no valid 'time'"),
    ],
)
def test_a_missing_stale_or_stopped_heartbeat_refuses_every_node(
    site: HookSite, heartbeat: dict[str, Any] | None, reason: str
) -> None:
    if heartbeat is not None:
        site.heartbeat(**heartbeat)
    site.permit(["cloud1", "cloud2"])  # even a permit cannot stand in for a live daemon
    done = site.run(RESUME, "cloud1", "cloud2")
    assert done.returncode == 1
    assert site.calls() == []
    refused = [line for line in site.hook_log().splitlines() if "refused" in line]
    assert len(refused) == 1 and "cloud1 cloud2" in refused[0] and reason in refused[0]
    assert reason in done.stderr


def test_leasing_disabled_refuses_every_node(site: HookSite) -> None:
    site.write_config(leasing="enabled = false")
    site.heartbeat()
    done = site.run(RESUME, "cloud1")
    assert done.returncode == 1 and site.calls() == []
    assert "leasing is disabled" in site.hook_log()


def test_an_enforcing_permit_passes_only_the_allowed_nodes(site: HookSite) -> None:
    site.heartbeat()
    site.permit(["cloud2", "cloud9"])
    done = site.run(RESUME, "cloud1", "cloud2", "cloud3")
    assert done.returncode == 0, done.stderr
    assert site.calls() == [[*PROVIDER_PREFIX, "resume", "cloud2"]]
    refused = [line for line in site.hook_log().splitlines() if "refused" in line]
    assert len(refused) == 1 and refused[0].endswith("cloud1 cloud3")


def test_an_enforcing_permit_that_allows_none_of_the_nodes_refuses_them_all(site: HookSite) -> None:
    site.heartbeat()
    site.permit([])
    done = site.run(RESUME, "cloud1")
    assert done.returncode == 1 and site.calls() == []
    assert "refused resume of every node" in site.hook_log()


def test_a_stale_enforcing_permit_refuses_every_node(site: HookSite) -> None:
    site.heartbeat()
    site.permit(["cloud1", "cloud2"], age_s=300)
    done = site.run(RESUME, "cloud1", "cloud2")
    assert done.returncode == 1 and site.calls() == []
    # The hook computes the age when it runs: on a loaded machine a second or more after the permit was written.
    age = re.search(r"lease permit is (\d+) s old \(limit 120 s", site.hook_log())
    assert age and 300 <= int(age[1]) < 360, site.hook_log()


@pytest.mark.parametrize(
    ("permit_text", "reason"),
    [
        ("{not json", "unreadable"),
        (json.dumps({"version": 2, "time": 0, "enforce": True, "allowed": []}), "version 2"),
        (json.dumps({"version": 1, "time": 0, "enforce": "yes", "allowed": []}), "'enforce' must be"),
    ],
)
def test_an_untrustworthy_permit_refuses_every_node(site: HookSite, permit_text: str, reason: str) -> None:
    site.heartbeat()
    (site.state / "lease-permit.json").write_text(permit_text)
    done = site.run(RESUME, "cloud1")
    assert done.returncode == 1 and site.calls() == []
    assert reason in site.hook_log()


def test_a_shadow_permit_or_no_permit_does_not_enforce_the_cap(site: HookSite) -> None:
    site.heartbeat()
    assert site.run(RESUME, "cloud1", "cloud2").returncode == 0  # no permit file
    site.permit([], enforce=False, age_s=10_000)  # shadow: not enforced, age irrelevant
    assert site.run(RESUME, "cloud3").returncode == 0
    assert site.calls() == [[*PROVIDER_PREFIX, "resume", "cloud1", "cloud2"], [*PROVIDER_PREFIX, "resume", "cloud3"]]


# ------------------------------------------------------------------------------------------ suspend
def test_suspend_never_refuses(site: HookSite) -> None:
    site.write_config(leasing="enabled = false")  # disabled, no heartbeat, a permit allowing nothing
    site.permit([])
    done = site.run(SUSPEND, "cloud[1-2]", "cloud4")
    assert done.returncode == 0, done.stderr
    assert site.calls() == [[*PROVIDER_PREFIX, "suspend", "cloud1", "cloud2", "cloud4"]]
    assert "rlsched-suspend[" in site.hook_log()


# ------------------------------------------------------------------------------------------ provider outcomes
def test_the_provider_exit_status_becomes_the_hook_exit_status(site: HookSite) -> None:
    site.heartbeat()
    site.status_file.write_text("3")
    assert site.run(RESUME, "cloud1").returncode == 1
    assert site.run(SUSPEND, "cloud1").returncode == 1
    assert "provider exited 3" in site.hook_log()


def test_a_hung_provider_is_killed_at_its_timeout(site: HookSite) -> None:
    hung = site.root / "hung"
    hung.write_text("#!/bin/sh\nsleep 30\n")
    hung.chmod(0o755)
    site.write_config(leasing="enabled = true\nprovider_timeout_s = 0.5", provider=[str(hung)])
    site.heartbeat()
    t0 = time.monotonic()
    done = site.run(RESUME, "cloud1")
    assert done.returncode == 1 and time.monotonic() - t0 < 10
    assert "provider killed after 0.5 s (timeout)" in site.hook_log()


def test_a_provider_leaving_a_background_process_does_not_block_the_hook(site: HookSite) -> None:
    # Like a provider starting an instance that inherits its stdout: the hook must return when the provider does.
    detaching = site.root / "detaching"
    background_pid = site.root / "background.pid"
    detaching.write_text(f"#!/bin/sh\nsleep 30 &\necho $! > '{background_pid}'\necho launched\nexit 0\n")
    detaching.chmod(0o755)
    site.write_config(provider=[str(detaching)])
    site.heartbeat()
    t0 = time.monotonic()
    done = site.run(RESUME, "cloud1")
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - t0 < 10
    assert "provider: launched" in site.hook_log()
    os.kill(int(background_pid.read_text()), 9)


def test_a_missing_provider_is_a_logged_failure(site: HookSite) -> None:
    site.write_config(provider=[str(site.root / "no-such-provider")])
    site.heartbeat()
    done = site.run(RESUME, "cloud1")
    assert done.returncode == 1
    assert "cannot run provider" in site.hook_log()


# ------------------------------------------------------------------------------------------ bad input
def test_bad_toml_is_one_line_naming_the_file(site: HookSite) -> None:
    site.config.write_text("[leasing\nenabled = true\n")
    done = site.run(RESUME, "cloud1")
    assert done.returncode == 2 and site.calls() == []
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(site.config) in lines[0] and "invalid TOML" in lines[0]


@pytest.mark.parametrize(
    ("leasing", "key"),
    [
        ('enabled = true\nprovider_command = "/bin/provider resume"', "leasing.provider_command"),
        ("enabled = true\nprovider_command = []", "leasing.provider_command"),
        ('enabled = "yes"\nprovider_command = ["/bin/true"]', "leasing.enabled"),
        ('enabled = true\nprovider_command = ["/bin/true"]\nprovider_timeout_s = -1', "leasing.provider_timeout_s"),
        # the daemon's schema applies in the hooks too (issue 25): what `config check` refuses, they refuse
        ('enabled = true\nprovider_command = ["/bin/true"]\npolicy = "greedy"', "leasing.policy"),
        ('enabled = true\nprovider_command = ["/bin/true"]\ncolour = 1', "leasing.colour"),
        ('enabled = true\nprovider_command = ["/bin/true"]\nhook_log = "/etc/hooks.log"', "leasing.hook_log"),
        ('enabled = true\nprovider_command = ["/bin/true"]\nprovider_timeout_s = true', "leasing.provider_timeout_s"),
        ('provider_command = ["/bin/true"]\n[gate]\nstale_after_s = nan', "gate.stale_after_s"),
        ('provider_command = ["/bin/true"]\n[backend]\nslurm_conf = "slurm.conf"', "backend.slurm_conf"),
    ],
)
def test_a_bad_key_is_one_line_naming_the_file_and_the_key(site: HookSite, leasing: str, key: str) -> None:
    site.config.write_text(f'[state]\ndir = "{site.state}"\n[leasing]\n{leasing}\n')
    site.heartbeat()
    for hook in (RESUME, SUSPEND):
        done = site.run(hook, "cloud1")
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1
        assert str(site.config) in lines[0] and f"key '{key}'" in lines[0]


def test_installed_beside_the_schema_file_the_hooks_need_no_rlsched(site: HookSite, tmp_path: Path) -> None:
    """As ``rlsched install`` lays them out: the hooks and rlsched_config_schema.py in one folder, run by a
    python that cannot import rlsched (-S -E: no site-packages, no PYTHONPATH; cwd elsewhere)."""
    libexec = tmp_path / "usr-lib-rlsched"
    libexec.mkdir()
    for hook in (RESUME, SUSPEND):
        (libexec / hook.name).write_bytes(hook.read_bytes())
    (libexec / "rlsched_config_schema.py").write_bytes((ROOT / "rlsched" / "config_schema.py").read_bytes())
    site.write_config(leasing="enabled = false")
    env = {"RLSCHED_CONFIG": str(site.config), "CALLS": str(site.calls_file), "PATH": os.environ["PATH"]}
    done = subprocess.run(
        [sys.executable, "-S", "-E", str(libexec / "rlsched-suspend"), "cloud1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert site.calls() == [[*PROVIDER_PREFIX, "suspend", "cloud1"]]
    (libexec / "rlsched_config_schema.py").unlink()
    done = subprocess.run(
        [sys.executable, "-S", "-E", str(libexec / "rlsched-suspend"), "cloud1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "config schema" in done.stderr, done.stderr


def test_a_missing_config_and_a_missing_provider_command_are_named(site: HookSite) -> None:
    site.config.unlink()
    done = site.run(SUSPEND, "cloud1")
    assert done.returncode == 2 and str(site.config) in done.stderr and "cannot read config" in done.stderr
    site.config.write_text(f'[state]\ndir = "{site.state}"\n')
    done = site.run(SUSPEND, "cloud1")
    assert done.returncode == 2 and "key 'leasing.provider_command' is missing" in done.stderr


def test_no_hostlist_is_a_usage_error(site: HookSite) -> None:
    done = site.run(RESUME)
    assert done.returncode == 2 and "usage" in done.stderr


@pytest.mark.parametrize(
    ("hostlist", "names"),
    [
        ("cloud1", ["cloud1"]),
        ("cloud[1-3]", ["cloud1", "cloud2", "cloud3"]),
        ("cloud[1-2,7],gpu3", ["cloud1", "cloud2", "cloud7", "gpu3"]),
        ("n[08-10]", ["n08", "n09", "n10"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("a[1]-ib", ["a1-ib"]),
    ],
)
def test_fallback_hostlist_expansion(hostlist: str, names: list[str]) -> None:
    assert load_hook_module().expand_hostlist_fallback(hostlist) == names


@pytest.mark.parametrize("hostlist", ["cloud[1-", "cloud[3-1]", "cloud[a-b]", "cloud]1[", "cl oud1", "x[[1]]"])
def test_fallback_hostlist_expansion_rejects_what_it_cannot_read(hostlist: str) -> None:
    hooks = load_hook_module()
    with pytest.raises(hooks.HookError, match="cannot expand hostlist"):
        hooks.expand_hostlist_fallback(hostlist)


# ------------------------------------------------------------------------------------------ local provider
def provider(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PROVIDER_DIR"}
    return subprocess.run(
        [sys.executable, str(PROVIDER), "--dir", str(folder), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )


def pid_alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_local_provider_fail_boot_orphan_list_and_suspend_with_real_processes(tmp_path: Path) -> None:
    (tmp_path / "fail-boot-cloud1").touch()
    assert provider(tmp_path, "resume", "cloud1").returncode == 0
    assert provider(tmp_path, "start-orphan", "cloud3").returncode == 0
    assert provider(tmp_path, "list").stdout.splitlines() == ["cloud1 booting", "cloud3 running"]
    pids = {node: int((tmp_path / "instances" / node).read_text().split()[0]) for node in ("cloud1", "cloud3")}
    assert all(pid_alive(pid) for pid in pids.values())
    # resume of an existing instance does not start a second one
    assert provider(tmp_path, "resume", "cloud1").returncode == 0
    assert int((tmp_path / "instances" / "cloud1").read_text().split()[0]) == pids["cloud1"]
    # suspend is idempotent: cloud2 never existed
    done = provider(tmp_path, "suspend", "cloud1", "cloud2", "cloud3")
    assert done.returncode == 0, done.stderr
    assert provider(tmp_path, "list").stdout == ""
    assert not any(pid_alive(pid) for pid in pids.values())
    assert not list((tmp_path / "instances").iterdir())


def test_local_provider_fail_launch_exits_1_for_that_node_only(tmp_path: Path) -> None:
    (tmp_path / "fail-launch-cloud2").touch()
    (tmp_path / "fail-boot-cloud1").touch()
    done = provider(tmp_path, "resume", "cloud1", "cloud2")
    assert done.returncode == 1 and "cloud2: launch failed" in done.stderr
    assert provider(tmp_path, "list").stdout.splitlines() == ["cloud1 booting"]
    assert provider(tmp_path, "suspend", "cloud1").returncode == 0


def test_local_provider_forgets_an_instance_whose_process_died(tmp_path: Path) -> None:
    assert provider(tmp_path, "start-orphan", "cloud4").returncode == 0
    pid = int((tmp_path / "instances" / "cloud4").read_text().split()[0])
    os.kill(pid, 9)
    wait_for(lambda: not pid_alive(pid), 5, "the killed instance to exit")
    assert provider(tmp_path, "list").stdout == ""
    # A record whose PID now belongs to another process (other start time) is never killed.
    (tmp_path / "instances" / "cloud4").write_text(f"{os.getpid()} running 1\n")
    assert provider(tmp_path, "suspend", "cloud4").returncode == 0
    assert pid_alive(os.getpid())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["resume"], "no node given"),
        (["resume", "cloud[1-2]"], "not a node name"),
        (["start-orphan", "a", "b"], "exactly one node"),
    ],
)
def test_local_provider_bad_use_exits_2(tmp_path: Path, args: list[str], message: str) -> None:
    done = provider(tmp_path, *args)
    assert done.returncode == 2 and message in done.stderr


def test_local_provider_needs_a_state_folder() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PROVIDER_DIR"}
    done = subprocess.run([str(PROVIDER), "list"], capture_output=True, text=True, env=env, timeout=30, check=False)
    assert done.returncode == 2 and "PROVIDER_DIR" in done.stderr


# ------------------------------------------------------------------------------------------ live Slurm
CLOUD_NODES = ("cloud1", "cloud2", "cloud3", "cloud4")


def node_state(slurm: SlurmTestCluster, node: str) -> str:
    # -p: a cloud node is also in partition burst, and sinfo prints one line per partition.
    return slurm.run("sinfo", "-h", "-N", "-n", node, "-p", "cloud", "-o", "%T").stdout.strip()


def live_instances(slurm: SlurmTestCluster) -> list[str]:
    return provider(slurm.base / "provider", "list").stdout.splitlines()


@pytest.fixture
def cloud(slurm: SlurmTestCluster, tmp_path: Path) -> Iterator[SlurmTestCluster]:
    """The live cluster, left as found: no rlsched.toml, no injected failure, no instance, cloud nodes
    powered down (other tests count powered cloud nodes)."""
    folder = slurm.base / "provider"
    yield slurm
    (slurm.base / "etc" / "rlsched.toml").unlink(missing_ok=True)
    for injected in [*folder.glob("fail-boot-*"), *folder.glob("fail-launch-*")]:
        injected.unlink()
    slurm.cancel_all()
    for node in CLOUD_NODES:
        if not node_state(slurm, node).endswith("~"):
            slurm.run("scontrol", "update", f"NodeName={node}", "State=POWER_DOWN_FORCE", check=False)
    wait_for(
        lambda: all(node_state(slurm, n).endswith("~") for n in CLOUD_NODES), 60, "cloud nodes powered down", every_s=1
    )
    # A node the resume hook refused is DOWN (reason rlsched_resume_refused): back in service for later tests.
    down = [n for n in CLOUD_NODES if node_state(slurm, n).startswith("down")]
    if down:
        slurm.run("scontrol", "update", f"NodeName={','.join(down)}", "State=RESUME", check=False)
    leftover = [line.split()[0] for line in live_instances(slurm)]
    if leftover:
        provider(folder, "suspend", *leftover)
    assert not leftover, f"instances left running after Slurm powered their nodes down: {leftover}"


def write_live_config(slurm: SlurmTestCluster, state_dir: Path) -> Path:
    """The hooks' config; they run as SlurmUser=slurm: the state dir and the log must be theirs to read/write.
    Returns the hook log."""
    log = slurm.hook_log(state_dir.name)
    log.unlink(missing_ok=True)
    (slurm.base / "etc" / "rlsched.toml").write_text(
        f'[state]\ndir = "{state_dir}"\n[backend]\nslurm_conf = "{slurm.conf}"\n[leasing]\nenabled = true\n'
        f'provider_command = {json.dumps(slurm.provider_command)}\nhook_log = "{log}"\n'
    )
    return log


def hooks_state(slurm: SlurmTestCluster, tmp_path: Path) -> Path:
    return slurm.shared_dir(f"hooks-{tmp_path.name}")


@pytest.mark.slurm
@pytest.mark.timeout(150)
def test_live_hooks_and_local_provider_lease_a_cloud_node_run_a_job_and_release_it(
    cloud: SlurmTestCluster, tmp_path: Path
) -> None:
    state = hooks_state(cloud, tmp_path)
    hook_log = write_live_config(cloud, state)
    (state / "heartbeat.json").write_text(json.dumps({"time": time.time(), "stopped": False}))
    t0 = time.monotonic()
    job = cloud.sbatch("-p", "cloud", sleep_s=300)
    wait_for(lambda: cloud.state(job) == "RUNNING", 60, f"job {job} running on a cloud node", every_s=0.5)
    up_s = time.monotonic() - t0
    node = cloud.run("squeue", "-h", "-j", str(job), "-o", "%N").stdout.strip()
    assert node in CLOUD_NODES
    assert f"{node} running" in live_instances(cloud)  # (an earlier test may have left another node up)
    assert f"resume {node}: provider exited 0" in hook_log.read_text()
    assert hook_log.stat().st_uid != 0  # written by the hook as SlurmUser, not root
    print(f"cloud node {node}: job running {up_s:.1f} s after submit")

    cloud.run("scancel", str(job))
    wait_for(lambda: cloud.state(job) != "RUNNING", 30, f"job {job} cancelled")
    cloud.run("scontrol", "update", f"NodeName={node}", "State=POWER_DOWN")
    wait_for(
        lambda: not any(line.split()[0] == node for line in live_instances(cloud)),
        30,
        f"the instance of {node} ended by the suspend hook",
    )
    wait_for(lambda: node_state(cloud, node).endswith("~"), 60, f"{node} powered down", every_s=1)
    assert f"suspend {node}: provider exited 0" in hook_log.read_text()


@pytest.mark.slurm
@pytest.mark.timeout(150)
def test_live_fail_boot_leaves_the_node_powering_up(cloud: SlurmTestCluster) -> None:
    # No rlsched.toml: resume.sh calls the local provider directly (the default path of slurm-up.sh).
    (cloud.base / "provider" / "fail-boot-cloud2").touch()
    cloud.run("scontrol", "update", "NodeName=cloud2", "State=POWER_UP")
    wait_for(lambda: "cloud2 booting" in live_instances(cloud), 20, "a booting instance of cloud2")
    time.sleep(5)  # it would have registered by now (~1 s for a real slurmd)
    assert node_state(cloud, "cloud2") == "idle#"  # '#': powering up
    assert "cloud2 booting" in live_instances(cloud)


@pytest.mark.slurm
@pytest.mark.timeout(150)
def test_live_a_stale_heartbeat_refuses_the_lease_and_no_instance_starts(
    cloud: SlurmTestCluster, tmp_path: Path
) -> None:
    state = hooks_state(cloud, tmp_path)
    log = write_live_config(cloud, state)
    (state / "heartbeat.json").write_text(json.dumps({"time": time.time() - 600, "stopped": False}))
    cloud.run("scontrol", "update", "NodeName=cloud3", "State=POWER_UP")
    wait_for(lambda: log.exists() and "refused resume cloud3" in log.read_text(), 20, "the hook to refuse cloud3")
    assert "s old (limit 120 s" in log.read_text()
    assert not any(line.split()[0] == "cloud3" for line in live_instances(cloud))
    # Marked DOWN at once with the reason (not left powering up until ResumeTimeout, 60 s here), by the hook
    # running as SlurmUser (slurm, an operator of Slurm).
    wait_for(lambda: node_state(cloud, "cloud3").startswith("down"), 10, "cloud3 DOWN")
    reason = cloud.run("sinfo", "-h", "-n", "cloud3", "-p", "cloud", "-o", "%E").stdout.strip()
    assert reason.startswith("rlsched_resume_refused: daemon heartbeat is"), reason
    assert "marked cloud3 DOWN (rlsched_resume_refused)" in log.read_text()
