"""A trace from ``rlsched history import`` seen by train and evaluate: its QOS and partition names reach the
class rule, and without a config the rule its import recorded is the one applied (not the default)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from rlsched.cli import main
from rlsched.core.view import JobClass
from rlsched.sim.traces.sidecar import read_trace
from rlsched.sim.workload import with_class_rule
from rlsched.workflow.site import load_site, site_view, trace_class_rule

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "history" / "sacct-parsable2.txt"

#: Every job with a time limit over 900 s, so only the partition rule can make one interactive.
CONFIG = """
[backend]
kind = "slurm"
vos = ["atlas", "cms", "other"]
default_vo = "other"
interactive_max_time_s = 60
interactive_partitions = ["short"]
"""


def imported(tmp_path: Path) -> Path:
    config = tmp_path / "rlsched.toml"
    config.write_text(CONFIG)
    out = tmp_path / "site.swf"
    result = CliRunner().invoke(
        main,
        [
            "history",
            "import",
            "--from",
            "sacct-file",
            "--input",
            str(SAMPLE),
            "--config",
            str(config),
            "--out",
            str(out),
            "--cores",
            "64",
        ],
    )
    assert result.exit_code == 0, result.output
    return out


def test_the_sidecar_names_reach_the_rule_with_and_without_a_config(tmp_path: Path) -> None:
    trace = read_trace(imported(tmp_path))
    short = [p == "short" for p in trace.names_of("partition")]
    assert any(short) and not all(short)
    expected = [int(JobClass.INTERACTIVE) if s else int(JobClass.BATCH) for s in short]
    assert trace.job_class.tolist() == expected  # as the import classed them
    rule = trace_class_rule(trace)
    assert rule.interactive_partitions == frozenset({"short"}) and rule.interactive_max_time_s == 60
    # No config: the recorded rule, applied to the recorded names, gives the import's classes back.
    assert with_class_rule(trace, rule).job_class.tolist() == expected
    # The daemon config: the same classes, and the VOs in the config's order.
    seen = site_view(trace, load_site(tmp_path / "rlsched.toml"))
    assert seen.job_class.tolist() == expected
    assert seen.vo_names == ("atlas", "cms", "other")
    accounts_vo = [seen.vo_names[v] for v in seen.vo.tolist()]
    assert set(accounts_vo) <= {"atlas", "cms", "other"} and "other" in accounts_vo  # lhcb, ops → default


def test_a_window_keeps_the_names(tmp_path: Path) -> None:
    trace = read_trace(imported(tmp_path))
    part = trace.select(trace.job_class == int(JobClass.INTERACTIVE))
    assert set(part.names_of("partition")) == {"short"}
