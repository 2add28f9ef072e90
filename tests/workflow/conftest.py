"""A small SWF trace with recorded waits, two groups and both classes (written per test session)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


def write_swf(path: Path, n: int = 400, seed: int = 7, max_procs: int = 16, interarrival_s: float = 120.0) -> Path:
    """``n`` jobs: Poisson arrivals, runtimes from a minute to hours, time limits above the runtime.

    Half the short jobs ask a long time limit: the class rule (time limit) and the runtime disagree
    on them, which the tests use to check that no runtime leaks into the class.
    """
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(interarrival_s, n)).round()
    run = rng.choice([60.0, 300.0, 1800.0, 7200.0], n, p=[0.3, 0.2, 0.3, 0.2])
    limit = np.where(run <= 300, np.where(rng.random(n) < 0.5, 600.0, 3600.0), run * 2)
    procs = rng.integers(1, 9, n)
    wait = rng.exponential(200.0, n).round()
    group = rng.choice([1, 2], n, p=[0.7, 0.3])
    lines = [f"; MaxProcs: {max_procs}", "; UnixStartTime: 1000000000"]
    for i in range(n):
        lines.append(
            f"{i + 1} {int(submit[i])} {int(wait[i])} {int(run[i])} {procs[i]} -1 -1 {procs[i]} "
            f"{int(limit[i])} -1 1 {i % 5 + 1} {group[i]} -1 1 1 -1 -1"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def small_swf(tmp_path: Path) -> Path:
    return write_swf(tmp_path / "small.swf")


CONFIG = """
[backend]
kind = "slurm"
vos = ["physics", "chem", "other"]
vo_shares = [0.6, 0.3, 0.1]
default_vo = "other"
interactive_max_time_s = 900
interactive_partitions = ["short"]
[backend.vo_accounts]
g1 = "physics"
g2 = "chem"

[agent]
kind = "sarsa-esn"
"""


@pytest.fixture
def site_config(tmp_path: Path) -> Path:
    path = tmp_path / "rlsched.toml"
    path.write_text(CONFIG)
    return path
