"""The PBS backend's config: from a daemon TOML table, bad keys as one-line errors naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsched.backends import backend_config_from_table, build_backend
from rlsched.backends.pbs import PBSBackend, PBSBackendConfig
from rlsched.core.view import JobClass
from rlsched.daemon.config import ConfigError, config_from_dict


def test_a_full_table_is_read() -> None:
    config = backend_config_from_table(
        {
            "kind": "pbs",
            "mode": "gate",
            "command_prefix": ["ssh", "headnode"],
            "bin_dir": "/opt/pbs/bin",
            "queues": ["workq", "short"],
            "interactive_queues": ["short"],
            "interactive_max_time_s": 600,
            "vo_from": "account",
            "vos": ["atlas", "cms"],
            "default_vo": "cms",
            "vo_accounts": {"atlas-prod": "atlas"},
            "completion_source": "accounting",
            "accounting_dir": "/srv/acct",
            "max_boosted": 8,
            "retry_attempts": 2,
            "timeout_s": 5,
            "priority_sort_check": "refuse",
        },
        "site.toml",
    )
    assert isinstance(config, PBSBackendConfig)
    assert config.command_prefix == ("ssh", "headnode") and config.queues == frozenset({"workq", "short"})
    assert config.class_rule.classify("", "short", 3600) == JobClass.INTERACTIVE
    assert config.class_rule.classify("", "workq", 601) == JobClass.BATCH
    assert config.class_rule.classify("", "workq", 600) == JobClass.INTERACTIVE
    assert config.retry.attempts == 2 and config.timeout_s == 5.0 and config.gate_problem() is None
    assert config.vo_mapping().index("atlas-prod") == 0


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"partitions": ["x"]}, "key 'backend.partitions': unknown key"),
        ({"command_prefix": "ip netns exec ns"}, "key 'backend.command_prefix': expected a list of strings"),
        ({"command_prefix": ["ssh", ""]}, "key 'backend.command_prefix': has an empty argument"),
        ({"vo_from": "user"}, "key 'backend.vo_from': expected one of account, project, group, got 'user'"),
        ({"completion_source": "sacct"}, "key 'backend.completion_source': expected one of history, accounting"),
        ({"max_boosted": 5000}, r"key 'backend.max_boosted': must lie in \[1, 2048\], got 5000"),
        ({"timeout_s": True}, "key 'backend.timeout_s': expected a number, got a boolean"),
        ({"priority_sort_check": "maybe"}, "key 'backend.priority_sort_check': expected one of warn, refuse, off"),
        (
            {"retry_attempts": 2.5},
            "key 'backend.retry_attempts': expected an integer",
        ),  # as on Slurm: one shared reader
        ({"interactive_max_time_s": -1}, "key 'backend.interactive_max_time_s': must be >= 0, got -1"),
    ],
)
def test_bad_keys_are_one_line_errors(table: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        backend_config_from_table({"kind": "pbs", **table}, "site.toml")
    assert "\n" not in str(info.value) and str(info.value).startswith("site.toml")


def test_the_daemon_config_takes_kind_pbs_and_gate_mode_needs_queues() -> None:
    config = config_from_dict({"backend": {"kind": "pbs", "mode": "gate", "queues": ["workq"]}}, "r.toml")
    assert config.backend.kind == "pbs"
    with pytest.raises(ConfigError, match=r"r.toml: key 'backend.queues': gate mode needs the gated queues"):
        config_from_dict({"backend": {"kind": "pbs", "mode": "gate"}}, "r.toml")


def test_the_factory_puts_the_undo_record_in_the_state_dir(tmp_path: Path) -> None:
    backend = build_backend(backend_config_from_table({"kind": "pbs"}), tmp_path)
    assert isinstance(backend, PBSBackend)
    assert backend.config.state_file == str(tmp_path / "pbs-record.json")
    readonly = build_backend(backend_config_from_table({"kind": "pbs"}), None)
    assert isinstance(readonly, PBSBackend) and readonly.config.state_file is None
