"""Third-party packages for the plugin tests: the example package of ``examples/rlsched-example-backend``
installed offline with ``pip install --target`` (a real install, entry points from its pyproject), a
hand-written ``.dist-info`` for a broken plugin, and a scripted ``toyq`` (the example's toy batch system).

``installed(...)`` puts a folder on ``sys.path``, has rlsched's registries load their entry points again, and
afterwards takes everything back (``sys.path``, the modules, the registries), so no other test sees a plugin.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import rlsched.backends as backends
from rlsched.backends.common.runner import CommandResult
from rlsched.core.policies import registry

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rlsched-example-backend"


def pip_install_example(target: Path) -> Path:
    """The example package installed into ``target`` (offline: no index, the venv's setuptools)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(EXAMPLE),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return target


def write_dist_info(folder: Path, name: str, entry_points: dict[str, dict[str, str]]) -> Path:
    """A minimal installed distribution ``name`` (metadata and entry points, no code) in ``folder``."""
    info = folder / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items())
            for group, points in entry_points.items()
        )
    )
    return folder


@contextmanager
def installed(folder: Path, prefix: str = "rlsched_example_backend") -> Iterator[None]:
    """``folder`` on ``sys.path`` with the registries reloaded; everything taken back afterwards."""
    saved_backends, saved_policies = dict(backends.BACKENDS), dict(registry.POLICIES)
    sys.path.insert(0, str(folder))
    importlib.invalidate_caches()
    try:
        backends.load_backend_plugins(reload=True)
        registry.load_policy_plugins(reload=True)
        yield
    finally:
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == prefix or m.startswith(prefix + ".")]:
            del sys.modules[name]
        importlib.invalidate_caches()
        backends.BACKENDS.clear()
        backends.BACKENDS.update(saved_backends)
        registry.POLICIES.clear()
        registry.POLICIES.update(saved_policies)
        backends.PLUGINS.broken.clear()
        registry.PLUGINS.broken.clear()


class ScriptedToyq:
    """The ``toyq`` batch system, in memory: a full machine (two running jobs on its 4 cores), three queued
    jobs that cannot start, one done job.  Answers the commands of the example backend."""

    def __init__(self, now: int = 1_800_000_000) -> None:
        self.now = now
        self.calls: list[tuple[str, ...]] = []

        def job(job_id: int, state: str, cores: int, start: int | None = None, end: int | None = None) -> dict:
            return {
                "id": job_id,
                "state": state,
                "cores": cores,
                "limit_s": 3600,
                "priority": 0,
                "account": "physics" if job_id % 2 else "biology",
                "queue": "batch",
                "user": f"u{job_id}",
                "submit": now - 600 + job_id,
                "start": start,
                "end": end,
            }

        self.jobs = {
            1: job(1, "running", 2, now - 300),
            2: job(2, "running", 2, now - 200),
            3: job(3, "queued", 4),
            4: job(4, "queued", 2),
            5: job(5, "queued", 1),
            6: job(6, "done", 1, now - 500, now - 10),
        }

    def __call__(self, argv: Sequence[str], timeout_s: float) -> CommandResult:
        command = (Path(argv[0]).name, *argv[1:])
        self.calls.append(command)
        verb = command[1] if len(command) > 1 else ""
        if verb == "jobs":
            document = {"time": self.now, "cores": 4, "jobs": list(self.jobs.values())}
            return CommandResult(argv, 0, json.dumps(document), "")
        job = self.jobs.get(int(command[2])) if len(command) > 2 and command[2].isdigit() else None
        if job is None:
            return CommandResult(argv, 1, "", f"toyq: unknown job {command[2] if len(command) > 2 else ''}")
        if job["state"] not in ("queued", "held"):
            return CommandResult(argv, 1, "", f"toyq: job {job['id']} is not pending")
        if verb == "hold":
            job["state"] = "held"
        elif verb == "release":
            job["state"] = "queued"
        elif verb == "priority":
            job["priority"] = int(command[3])
        else:
            return CommandResult(argv, 2, "", f"toyq: no command {verb!r}")
        return CommandResult(argv, 0, "", "")
