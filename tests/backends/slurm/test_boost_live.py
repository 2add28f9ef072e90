"""Boost mode simulated vs boost mode on a real Slurm: the same ranking gives the same start order.

The scenario of ``tests/sim/test_boost.py`` (``LIVE_JOBS``, ``LIVE_RANKING``): on node1 (16 CPUs, the
``debug`` partition) two jobs fill the machine, seven wait, and a fixed ranking is applied as the daemon
applies it — a view and a boost (``max_boosted = 2``) about every second — while jobs end by themselves
(``sleep``).  The simulator replays the same jobs (runtimes = the sleeps, requests = the time limits) in
boost mode over the cluster's own multifactor settings (its slurm.conf), polling every second.  The jobs
must start in the same waves: which ones start together, in which order the waves come, and which job is
still waiting at the end.  The waves exercise the Nice ladder (only two jobs move), the base order
(multifactor's job size factor), and the backfill with reservations from the time limits.

Times are not compared (Slurm starts a job up to a second or two after the event; the simulator at once):
the events are 10 s apart, so every wave is over and the next poll done before the next event.
"""

from __future__ import annotations

import time

import pytest

pytest.register_assert_rewrite("tests.slurm_cluster")

from rlsched.backends.slurm import SlurmBackend, SlurmBackendConfig  # noqa: E402
from rlsched.core.view import apply  # noqa: E402
from tests.sim.test_boost import (  # noqa: E402
    LIVE_JOBS,
    LIVE_RANKING,
    FixedOrderAgent,
    simulate_live_scenario,
    start_waves,
)
from tests.slurm_cluster import SlurmTestCluster, wait_for  # noqa: E402

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(240)]

#: The simulator's waves end at 50 s and the next event is at 110 s: watch Slurm up to here.
WATCH_S = 80.0
#: Starts this close belong to one wave (Slurm's scheduler latency); waves are 10 s apart.
WAVE_GAP_S = 4.0


def test_simulated_boost_order_equals_slurms(slurm: SlurmTestCluster) -> None:
    names = list(LIVE_JOBS)
    ids: dict[str, int] = {}
    for name in names:
        cpus, limit_min, sleep_s = LIVE_JOBS[name]
        ids[name] = slurm.sbatch("-p", "debug", "-c", str(cpus), "-t", str(limit_min), sleep_s=sleep_s)
        if name == "R2":
            wait_for(lambda: all(slurm.state(ids[r]) == "RUNNING" for r in ("R1", "R2")), 30, "R1 and R2 to fill node1")
    t0 = time.monotonic()
    label = {job: name for name, job in ids.items()}
    backend = SlurmBackend(SlurmBackendConfig(slurm_conf=slurm.conf, max_boosted=2))
    agent = FixedOrderAgent([ids[n] for n in LIVE_RANKING])
    started: dict[str, float] = {}
    while time.monotonic() - t0 < WATCH_S:
        view = backend.view()
        for table in (view.running, view.finished):
            for job, start in zip(table.job_id.tolist(), table.start_s.tolist(), strict=True):
                if job in label:
                    started.setdefault(label[job], start)
        apply(agent.decide(view), backend)  # what the daemon's boost mode does each cycle
        time.sleep(1.0)
    assert backend.errors.total() == 0, dict(backend.errors)
    live = start_waves(list(started), list(started.values()), WAVE_GAP_S)
    live.append({n for n in names if n not in started})  # still waiting
    simulated = simulate_live_scenario(f"multifactor:slurm_conf={slurm.conf}")
    print(f"\nSlurm's waves: {live}\nsimulated:     {simulated}")
    assert live == simulated
    # Not vacuous: over FIFO the simulator would start A where Slurm's multifactor started D.
    assert simulate_live_scenario("fifo") != live
