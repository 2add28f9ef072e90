"""Entry-point plugins (issue 25): a plugin that cannot be loaded does not stop rlsched or the other plugins;
asking for its name is one line naming the entry point."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsched.backends import UnknownBackendError, backend_kind
from rlsched.core.policies import PolicyError, entry
from tests.plugin_packages import installed, write_dist_info


def test_a_broken_backend_plugin_is_one_line_naming_its_entry_point(tmp_path: Path) -> None:
    site = write_dist_info(
        tmp_path,
        "broken-plugin",
        {"rlsched.backends": {"gone": "no_such_module_for_rlsched:BACKEND", "wrong": "json:dumps"}},
    )
    with installed(site):
        with pytest.raises(UnknownBackendError) as gone:
            backend_kind("gone")
        message = str(gone.value)
        assert "\n" not in message
        assert message.startswith(
            "entry point rlsched.backends:gone = 'no_such_module_for_rlsched:BACKEND' (from broken-plugin 0.1)"
        )
        assert "cannot be loaded: ModuleNotFoundError" in message
        with pytest.raises(UnknownBackendError, match=r"rlsched.backends:wrong .*not a rlsched.backends.BackendKind"):
            backend_kind("wrong")
        assert backend_kind("slurm").name == "slurm"  # the others still load
        with pytest.raises(UnknownBackendError, match="unknown backend kind 'nothing'"):
            backend_kind("nothing")
    with pytest.raises(UnknownBackendError, match="unknown backend kind 'gone'"):
        backend_kind("gone")  # uninstalled: gone again


def test_a_broken_policy_plugin_is_one_line_and_a_builtin_name_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    site = write_dist_info(
        tmp_path,
        "broken-policies",
        {
            "rlsched.policies": {
                "gone": "no_such_module_for_rlsched:POLICY",
                "fcfs": "rlsched.core.policies.registry:RULES",
            }
        },
    )
    with installed(site):
        with pytest.raises(PolicyError) as gone:
            entry("gone")
        assert "\n" not in str(gone.value) and "entry point rlsched.policies:gone" in str(gone.value)
        # A plugin may not replace a built-in policy: refused (logged), the built-in stays.
        assert entry("fcfs").build is not None and entry("easy").name == "easy"
        said = [r.getMessage() for r in caplog.records if "rlsched.policies:fcfs" in r.getMessage()]
        assert len(said) == 1 and said[0].endswith("policy 'fcfs' is built into rlsched")


def test_a_broken_plugin_named_in_a_config_is_one_cli_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from rlsched.cli import main

    site = write_dist_info(
        tmp_path / "site", "broken-plugin", {"rlsched.backends": {"gone": "no_such_module_for_rlsched:BACKEND"}}
    )
    config = tmp_path / "rlsched.toml"
    config.write_text('[backend]\nkind = "gone"\nmode = "shadow"\n')
    with installed(site):
        result = CliRunner().invoke(main, ["config", "check", str(config)])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "entry point rlsched.backends:gone" in lines[0], result.output
