"""Config validation of issue 16: finite numbers, integers, written paths outside the system directories,
bounds, the heartbeat limit against retried calls, a loopback metrics address, and ``[log]``; of issue 24: a
file that is empty, binary, nested too deeply or has no explicit mode, and a reload that drops a key."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from rlsched.daemon import ConfigError, config_from_dict, load_config
from rlsched.daemon.config import SYSTEM_DIRS, is_loopback, reload_problem, system_dir_of, worst_call_s


def _error(data: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        config_from_dict(data, "site.toml")
    message = str(info.value)
    assert message.startswith("site.toml: ") and "\n" not in message
    return message


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"backend": {"poll_interval_s": float("inf")}}, "backend.poll_interval_s"),
        ({"backend": {"poll_interval_s": float("nan")}}, "backend.poll_interval_s"),
        ({"backend": {"timeout_s": float("nan")}}, "backend.timeout_s"),
        ({"backend": {"vo_shares": [0.5, float("nan")], "vos": ["a", "b"], "default_vo": "a"}}, "backend.vo_shares[1]"),
        ({"state": {"checkpoint_every_s": float("nan")}}, "state.checkpoint_every_s"),
        ({"gate": {"stale_after_s": float("inf")}}, "gate.stale_after_s"),
        ({"leasing": {"budget_node_hours_per_day": float("inf")}}, "leasing.budget_node_hours_per_day"),
        ({"leasing": {"budget_cost_per_day": float("nan")}}, "leasing.budget_cost_per_day"),
        (
            {"agent": {"kind": "sarsa-esn", "lam": float("nan")}, "backend": {"vos": ["a"], "default_vo": "a"}},
            "agent.lam",
        ),
    ],
)
def test_non_finite_numbers_are_refused_naming_the_key(data: dict[str, Any], key: str) -> None:
    message = _error(data)
    assert f"key {key!r}" in message and "finite" in message


def test_retry_attempts_must_be_an_integer_not_truncated() -> None:
    message = _error({"backend": {"retry_attempts": 2.5}})
    assert "retry_attempts" in message and "integer" in message
    assert config_from_dict({"backend": {"retry_attempts": 2}}).backend.retry.attempts == 2  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", [0.5, 1e-9, 3601])
def test_poll_interval_out_of_bounds(value: float) -> None:
    assert "backend.poll_interval_s" in _error({"backend": {"poll_interval_s": value}})


@pytest.mark.parametrize("value", [0, 1001, 10**12])
def test_max_boosted_bounds(value: int) -> None:
    assert "max_boosted" in _error({"backend": {"max_boosted": value}})


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"state": {"dir": "/etc"}}, "state.dir"),
        ({"state": {"dir": "/"}}, "state.dir"),
        ({"state": {"dir": "/usr/local/rlsched"}}, "state.dir"),
        ({"state": {"dir": "/var/lib/dpkg/x"}}, "state.dir"),
        ({"state": {"dir": "relative/state"}}, "state.dir"),
        ({"gate": {"heartbeat_file": "/etc/passwd"}}, "gate.heartbeat_file"),
        ({"gate": {"heartbeat_file": "/proc/self/mem"}}, "gate.heartbeat_file"),
        ({"leasing": {"hook_log": "/etc/passwd"}}, "leasing.hook_log"),
        ({"leasing": {"hook_log": "hooks.log"}}, "leasing.hook_log"),
        ({"shadow": {"decision_log": "/boot/decisions.jsonl"}}, "shadow.decision_log"),
        ({"backend": {"state_file": "/sys/x.json"}}, "backend.state_file"),
        ({"backend": {"bin_dir": "slurm/bin"}}, "backend.bin_dir"),
    ],
)
def test_paths_the_daemon_writes_are_absolute_and_outside_system_dirs(data: dict[str, Any], key: str) -> None:
    assert f"key {key!r}" in _error(data)


def test_a_symlink_into_a_system_dir_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "state"
    link.symlink_to("/etc")
    assert "state.dir" in _error({"state": {"dir": str(link)}})
    assert system_dir_of(link / "x") == "/etc"


def test_ordinary_paths_pass(tmp_path: Path) -> None:
    config = config_from_dict(
        {
            "state": {"dir": str(tmp_path / "state")},
            "gate": {"heartbeat_file": str(tmp_path / "hb.json")},
            "leasing": {"hook_log": "/var/log/rlsched/hooks.log"},
            "shadow": {"decision_log": "/var/lib/rlsched/d.jsonl"},
            "backend": {"bin_dir": "/usr/bin"},
        }
    )
    assert config.state_dir == str(tmp_path / "state") and config.heartbeat_file == tmp_path / "hb.json"
    assert all(d.startswith("/") for d in SYSTEM_DIRS)


def test_stale_after_must_outlast_one_call_retried_to_its_end() -> None:
    # poll 10 + 3 attempts x 30 s + pauses 0.5 + 1 = 101.5 s: 100 is too short in every mode.
    backend = {"timeout_s": 30, "retry_attempts": 3}
    message = _error({"backend": backend, "gate": {"stale_after_s": 100}})
    assert "gate.stale_after_s" in message and "101.5" in message
    config = config_from_dict({"backend": backend, "gate": {"stale_after_s": 102}})
    assert worst_call_s(config.backend) == pytest.approx(91.5)
    # The case: 5 s while one call could take 2 x 3 s + 0.5 s.
    assert "gate.stale_after_s" in _error(
        {"backend": {"timeout_s": 3, "retry_attempts": 2, "poll_interval_s": 1}, "gate": {"stale_after_s": 5}}
    )


@pytest.mark.parametrize("listen", ["0.0.0.0:9400", "[::]:9400", "10.1.2.3:9400", "head.example.org:9400"])
def test_a_non_loopback_metrics_address_needs_allow_remote(listen: str) -> None:
    message = _error({"metrics": {"listen": listen}})
    assert "metrics.listen" in message and "allow_remote" in message
    config = config_from_dict({"metrics": {"listen": listen, "allow_remote": True}})
    assert config.metrics_remote and config.metrics_allow_remote


@pytest.mark.parametrize("listen", ["127.0.0.1:9400", "127.8.9.10:1", "[::1]:9400", "localhost:9400", "off"])
def test_loopback_addresses_pass(listen: str) -> None:
    assert not config_from_dict({"metrics": {"listen": listen}}).metrics_remote


def test_is_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("LOCALHOST")
    assert not is_loopback("0.0.0.0") and not is_loopback("::") and not is_loopback("localhost.evil")


def test_log_section() -> None:
    config = config_from_dict({"log": {"level": "DEBUG", "format": "json"}})
    assert (config.log.level, config.log.format) == ("debug", "json")
    assert "log.level" in _error({"log": {"level": "loud"}})
    assert "log.format" in _error({"log": {"format": "xml"}})
    assert "log.colour" in _error({"log": {"colour": "red"}})


def test_the_example_config_passes_every_check() -> None:
    root = Path(__file__).resolve().parents[2]
    config = load_config(root / "etc" / "rlsched.toml")
    assert not config.metrics_remote and config.log.level == "info"
    logging.getLogger(__name__).debug("example config: %s", config.source)


def _file_error(path: Path, require_mode: bool = True) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, require_mode=require_mode)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message, message
    return message


@pytest.mark.parametrize("require_mode", [True, False])
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "empty"),
        (b"\n# only a comment\n  \n", "empty"),
        (b"\x89PNG\r\n\x1a\n\xff\xfe[backend]\n", "not UTF-8"),
        (b'[backend]\nmode = "gate"\n# caf\xe9 in Latin-1\n', "not UTF-8"),
        (b"[backend]\nvos = " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
        (b'[backend]\nmode = "gate', "not valid TOML"),
    ],
)
def test_an_unreadable_file_is_one_line_naming_it(
    tmp_path: Path, content: bytes, expected: str, require_mode: bool
) -> None:
    path = tmp_path / "rlsched.toml"
    path.write_bytes(content)
    assert expected in _file_error(path, require_mode)


@pytest.mark.parametrize(
    "content",
    ["[backend]\n", '[backend]\nkind = "slurm"\n[state]\ndir = "/srv/rlsched"\n', '[state]\ndir = "/srv/rlsched"\n'],
)
def test_a_daemon_config_names_its_mode_explicitly(tmp_path: Path, content: str) -> None:
    path = tmp_path / "rlsched.toml"
    path.write_text(content)
    message = _file_error(path)
    assert "key 'backend.mode'" in message and "explicitly" in message
    if content != "[backend]\n":
        assert load_config(path).mode == "shadow"  # a reader of the site settings only needs no mode
    path.write_text('[backend]\nmode = "shadow"\n' + content.replace("[backend]\n", ""))
    assert load_config(path, require_mode=True).mode == "shadow"


def test_a_reload_must_not_drop_a_table_nor_a_key_of_the_table_it_ends_with(tmp_path: Path) -> None:
    path = tmp_path / "rlsched.toml"
    whole = (
        '[backend]\nmode = "boost"\nmax_boosted = 8\nvos = ["a"]\ndefault_vo = "a"\n[state]\n'
        'dir = "/srv/rlsched"\n[metrics]\n[agent]\nkind = "sarsa-esn"\nlam = 0.3\n[gate]\nstale_after_s = 200\n'
    )

    def problem(text: str) -> str | None:
        path.write_text(text)
        return reload_problem(running, load_config(path, require_mode=True))

    path.write_text(whole)
    running = load_config(path, require_mode=True)
    assert running.keys[:2] == ("backend", "backend.mode") and running.keys[-2:] == ("gate", "gate.stale_after_s")
    assert problem(whole) is None
    # A file cut short: the tables after the cut, and the keys at the end of the table it ends in.
    for dropped, text in {
        "'agent', 'gate'": whole.split("[agent]")[0],
        "'gate.stale_after_s'": whole.removesuffix("stale_after_s = 200\n"),
        "'metrics'": whole.replace("[metrics]\n", ""),
    }.items():  # an empty table too
        found = problem(text)
        assert found is not None and dropped in found and "\n" not in found, (dropped, found)
    # A key dropped from a table the file does not end with is an edit: its default applies.
    assert problem(whole.replace("max_boosted = 8\n", "")) is None
    # The file ending with [agent]: another policy takes the old one's parameters with it.
    agent_last = whole.replace("[gate]\nstale_after_s = 200\n", "").replace(
        "[metrics]\n", "[metrics]\n[gate]\nstale_after_s = 200\n"
    )
    path.write_text(agent_last)
    running = load_config(path, require_mode=True)
    assert problem(agent_last.replace("lam = 0.3\n", "")) is not None
    assert problem(agent_last.replace('kind = "sarsa-esn"\nlam = 0.3', 'kind = "fcfs"')) is None
