"""The alert rules of etc/prometheus/rlsched-alerts.yml: ``promtool check rules`` and ``promtool test rules``
(each alert fired on synthetic series, tests/data/prometheus/rlsched-alerts.test.yml), and every metric they
name is one the exporter serves.

Marked ``promtool``: it needs Debian's prometheus package, which CI installs with
``scripts/prometheus-up.sh --install-only`` (the test does so itself when it runs as root)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rlsched.exporter import METRIC_NAMES

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "etc" / "prometheus" / "rlsched-alerts.yml"
RULE_TESTS = ROOT / "tests" / "data" / "prometheus" / "rlsched-alerts.test.yml"
ALERTS = (
    "RlschedExporterDown",
    "RlschedBackendDown",
    "RlschedCycleFailures",
    "RlschedNoSuccessfulCycle",
    "RlschedCheckpointStale",
    "RlschedLeaseBudgetExhausted",
    "RlschedGatedJobHeldTooLong",
)


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    if found is None and os.geteuid() == 0:
        subprocess.run(["bash", str(ROOT / "scripts" / "prometheus-up.sh"), "--install-only"], check=True, timeout=900)
        found = shutil.which("promtool")
    if found is None:
        pytest.fail(
            "promtool is missing: run scripts/prometheus-up.sh --install-only as root (or deselect: -m 'not promtool')"
        )
    return found


def run(promtool: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool, *map(str, args)], capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.promtool
def test_promtool_check_rules(promtool: str) -> None:
    done = run(promtool, "check", "rules", RULES)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(ALERTS)} rules found" in done.stdout


@pytest.mark.promtool
def test_promtool_unit_tests_fire_every_alert(promtool: str) -> None:
    done = run(promtool, "test", "rules", RULE_TESTS)
    assert done.returncode == 0, done.stdout + done.stderr
    tested = set(re.findall(r"alertname: (\w+)", RULE_TESTS.read_text()))
    assert tested == set(ALERTS)
    assert set(re.findall(r"- alert: (\w+)", RULES.read_text())) == set(ALERTS)


@pytest.mark.promtool
def test_the_unit_tests_catch_a_wrong_threshold(promtool: str, tmp_path: Path) -> None:
    # The unit tests have teeth: the same tests against rules with a threshold ten times too high fail.
    (tmp_path / "etc" / "prometheus").mkdir(parents=True)
    rules = RULES.read_text()
    assert "rlsched_last_successful_cycle_timestamp_seconds > 600" in rules
    (tmp_path / "etc" / "prometheus" / RULES.name).write_text(
        rules.replace(
            "rlsched_last_successful_cycle_timestamp_seconds > 600",
            "rlsched_last_successful_cycle_timestamp_seconds > 6000",
        )
    )
    copy = tmp_path / "tests" / "data" / "prometheus" / RULE_TESTS.name
    copy.parent.mkdir(parents=True)
    copy.write_text(RULE_TESTS.read_text())
    done = run(promtool, "test", "rules", copy)
    assert done.returncode != 0 and "RlschedNoSuccessfulCycle" in done.stdout + done.stderr


def test_every_metric_the_rules_name_is_exported() -> None:
    named = set(
        re.findall(
            r"\b(rlsched_[a-z_]+)",
            "\n".join(
                line for line in RULES.read_text().splitlines() if line.strip().startswith(("expr", "rlsched_", "and"))
            ),
        )
    )
    assert named and named <= METRIC_NAMES, sorted(named - METRIC_NAMES)


@pytest.mark.promtool
def test_the_example_prometheus_config_loads_the_rules(promtool: str, tmp_path: Path) -> None:
    shutil.copy(ROOT / "etc" / "prometheus.yml", tmp_path / "prometheus.yml")
    shutil.copy(RULES, tmp_path / RULES.name)
    done = run(promtool, "check", "config", tmp_path / "prometheus.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 1 rule files found" in done.stdout and f"SUCCESS: {len(ALERTS)} rules found" in done.stdout
