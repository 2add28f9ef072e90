"""The exporter: what it serves over HTTP, the counters' round trip, and the Grafana dashboard's queries
(every metric a query names must be one the exporter really exports)."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from rlsched.exporter import METRIC_NAMES, Counters
from rlsched.leasing import LeasingConfig
from tests.fakes.slurm import SyntheticSlurm, make_daemon, synthetic_squeue_json

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "etc" / "grafana" / "rlsched-dashboard.json"


def served_samples(tmp_path: Path) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Run two gate-mode cycles of a learning daemon with leasing on and scrape its endpoint on 127.0.0.1."""
    runner = SyntheticSlurm(synthetic_squeue_json(30, n_running=2, held_fraction=1.0))
    leasing = LeasingConfig(
        enabled=True,
        nodes=("cloud1", "cloud2", "cloud3", "cloud4"),
        max_nodes=2,
        policy="fixed",
        budget_node_hours_per_day=10.0,
        price_per_node_hour=0.5,
    )
    daemon = make_daemon(
        runner, str(tmp_path), mode="gate", agent="sarsa-esn", leasing=leasing, partitions=frozenset({"debug", "short"})
    )
    daemon.cycle()
    daemon.cycle()
    port = daemon.exporter.serve("127.0.0.1", 0)
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    finally:
        daemon.exporter.close()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples.setdefault(s.name, []).append((s.labels, s.value))
    return samples


def test_the_exporter_serves_every_documented_metric(tmp_path: Path) -> None:
    samples = served_samples(tmp_path)
    ours = {name for name in samples if name.startswith("rlsched_")}
    assert ours >= METRIC_NAMES, f"documented but not served: {sorted(METRIC_NAMES - ours)}"
    assert samples["rlsched_cycles_total"][0][1] == 2
    features = {labels["feature"] for labels, _ in samples["rlsched_state"]}
    assert {"running_work", "time_to_free", "backlog", "idle_fraction"} <= features
    queue = samples["rlsched_queue_jobs"]
    assert {"partition", "account", "class", "state"} == set(queue[0][0])
    assert sum(v for labels, v in queue if labels["state"] in ("pending", "held")) == 30
    assert sum(v for labels, v in samples["rlsched_decisions_total"] if labels["kind"] == "release") > 0
    modes = {labels["mode"]: v for labels, v in samples["rlsched_mode"]}
    assert modes == {"shadow": 0.0, "boost": 0.0, "gate": 1.0}
    assert samples["rlsched_checkpoint_age_seconds"][0][1] >= 0.0


def test_build_info_last_success_held_age_and_the_budget_in_seconds(tmp_path: Path) -> None:
    import time

    from rlsched import __version__

    before = time.time()
    samples = served_samples(tmp_path)
    assert samples["rlsched_build_info"] == [({"version": __version__}, 1.0)]
    # The synthetic cycles succeed: the timestamp is a real epoch time of this run, not a placeholder.
    assert before <= samples["rlsched_last_successful_cycle_timestamp_seconds"][0][1] <= time.time()
    assert samples["rlsched_held_job_oldest_seconds"][0][1] > 0  # every job is held (gate mode)
    left_s = samples["rlsched_lease_budget_left_seconds"][0][1]
    assert 0 < left_s <= 10 * 3600  # a 10 node-hour budget
    assert samples["rlsched_lease_budget_left_node_hours"][0][1] == pytest.approx(left_s / 3600)


def test_a_failed_cycle_does_not_move_the_last_success(tmp_path: Path) -> None:
    runner = SyntheticSlurm(synthetic_squeue_json(5))
    daemon = make_daemon(runner, str(tmp_path), mode="shadow")
    assert daemon.exporter.last_success._value.get() == 0.0  # none yet
    daemon.cycle()
    first = daemon.exporter.last_success._value.get()
    assert first > 0
    runner.squeue = '{"jobs": [{"job_id": "x"'  # truncated JSON: the view fails
    report = daemon.cycle()
    assert "view" in report.failed and daemon.exporter.last_success._value.get() == first


def dashboard_metric_names() -> set[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    exprs += [v["query"] for v in dashboard["templating"]["list"] if v.get("type") == "query"]
    assert exprs
    return {name for e in exprs for name in re.findall(r"\b(rlsched_[a-z_]+)", e)}


def test_every_dashboard_query_names_an_exported_metric(tmp_path: Path) -> None:
    names = dashboard_metric_names()
    served = set(served_samples(tmp_path))
    assert names and names <= served, f"dashboard names metrics not exported: {sorted(names - served)}"
    assert len(names) >= 12  # it covers the exporter, not one metric


def test_counters_round_trip_and_bad_entries_name_the_key() -> None:
    c = Counters(cycles=3, rewards=2, reward_sum=1.5)
    c.decisions["release"] += 4
    c.responsiveness_sum["batch"] = 0.25
    assert Counters.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    with pytest.raises(ValueError, match="'cycles'"):
        Counters.from_dict({"cycles": "many"}, "daemon.json")
    with pytest.raises(ValueError, match="unknown key 'colour'"):
        Counters.from_dict({"colour": 1})
