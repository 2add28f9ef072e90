"""``rlsched config check``: OK or one line per problem, exit 1 on any; the model and file modes checked too;
nothing of the cluster touched (the configs point at a bin_dir without Slurm commands)."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.cli.config import check_config
from tests.core.policies.test_io import add_zeros_member

ROOT = Path(__file__).resolve().parents[2]
LAL_VOS = [f"vo{k}" for k in range(1, 8)]


def write(tmp_path: Path, body: str, name: str = "rlsched.toml", mode: int = 0o644) -> Path:
    (tmp_path / "no-bin").mkdir(exist_ok=True)
    path = tmp_path / name
    path.write_text(f'[backend]\nmode = "shadow"\nbin_dir = "{tmp_path / "no-bin"}"\n' + body)
    path.chmod(mode)
    return path


def check(path: Path, *options: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["config", "check", str(path), *options])
    return result.exit_code, result.output


def test_a_good_config_prints_ok(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir(mode=0o755)
    path = write(tmp_path, f'[state]\ndir = "{tmp_path / "state"}"\n[metrics]\nlisten = "off"\n')
    code, output = check(path)
    assert (code, output) == (0, "OK\n")


def test_the_example_config_passes() -> None:
    result = check_config(ROOT / "etc" / "rlsched.toml")
    assert result["ok"], result["problems"]


def test_a_bad_key_is_one_line_and_exit_1(tmp_path: Path) -> None:
    path = write(tmp_path, "poll_interval_s = nan\n")
    code, output = check(path)
    assert code == 1 and output.count("\n") == 1 and "backend.poll_interval_s" in output and str(path) in output
    code, output = check(path, "--json")
    data = json.loads(output)
    assert code == 1 and not data["ok"] and len(data["problems"]) == 1


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    code, output = check(tmp_path / "nothing.toml")
    assert code == 1 and "cannot read" in output and output.count("\n") == 1


def test_the_model_is_loaded_and_checked_against_the_vo_list(lal_model: Path, tmp_path: Path) -> None:
    state = f'[state]\ndir = "{tmp_path / "state"}"\n[metrics]\nlisten = "off"\n'
    good = write(
        tmp_path,
        f'vos = {json.dumps(LAL_VOS)}\ndefault_vo = "vo1"\n[agent]\nmodel = "{lal_model}"\n' + state,
        "good.toml",
    )
    assert check_config(good)["ok"], check_config(good)["problems"]
    other = write(tmp_path, f'vos = ["a", "b"]\ndefault_vo = "a"\n[agent]\nmodel = "{lal_model}"\n' + state, "bad.toml")
    result = check_config(other)
    assert not result["ok"] and len(result["problems"]) == 1
    assert "key 'agent'" in result["problems"][0] and "was built for VOs" in result["problems"][0]
    missing = write(
        tmp_path, f'vos = ["a"]\ndefault_vo = "a"\n[agent]\nmodel = "{tmp_path / "x.npz"}"\n' + state, "missing.toml"
    )
    assert "no such file" in check_config(missing)["problems"][0]


def test_file_modes_for_the_daemon_and_the_leasing_hooks(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o777)
    (state / "heartbeat.json").write_text("{}")
    (state / "heartbeat.json").chmod(0o600)
    body = (
        f'[state]\ndir = "{state}"\n[metrics]\nlisten = "off"\n[leasing]\nenabled = true\n'
        'nodes = "cloud[1-2]"\npolicy = "fixed"\nbudget_node_hours_per_day = 10\n'
    )
    path = write(tmp_path, body, mode=0o660)
    problems = check_config(path)["problems"]
    text = "\n".join(problems)
    assert "writable by group or others" in text  # the config
    assert "not readable by others" in text  # the config, for the hooks (SlurmUser)
    assert f"{state} is writable by others" in text
    assert "heartbeat.json is not readable by others" in text
    code, output = check(path)
    assert code == 1 and len(output.splitlines()) == len(problems) and "OK" not in output
    # Fixed modes: OK.
    path.chmod(0o644)
    state.chmod(0o755)
    (state / "heartbeat.json").chmod(0o644)
    assert check_config(path)["problems"] == []


def test_a_busy_metrics_port_is_a_warning(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        path = write(tmp_path, f'[state]\ndir = "{tmp_path}"\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
        code, output = check(path)
    assert code == 0 and output.splitlines()[-1] == "OK"
    assert "warning:" in output and f"127.0.0.1:{port}" in output


def test_allow_remote_is_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, f'[state]\ndir = "{tmp_path}"\n[metrics]\nlisten = "0.0.0.0:0"\nallow_remote = true\n')
    result = check_config(path)
    assert result["ok"] and any("not loopback" in w for w in result["warnings"])


def test_the_daemon_on_a_busy_metrics_port_is_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        path = write(tmp_path, f'[state]\ndir = "{tmp_path / "state"}"\n[metrics]\nlisten = "127.0.0.1:{port}"\n')
        done = subprocess.run(
            [sys.executable, "-m", "rlsched", "daemon", "--once", "--config", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    errors = [line for line in done.stderr.splitlines() if "Error" in line or "Traceback" in line]
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert errors == [f"Error: key 'metrics.listen': cannot listen on 127.0.0.1:{port}: Address already in use"]


def test_an_empty_file_is_one_line_and_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "rlsched.toml"
    path.write_text("")
    code, output = check(path)
    assert code == 1 and output.count("\n") == 1 and output.startswith(f"{path}: ") and "empty" in output, output
    path.write_text("[backend]\n")  # a file cut right after its first table
    code, output = check(path)
    assert code == 1 and output.count("\n") == 1 and "key 'backend.mode'" in output, output


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\x7fELF\x02\x01\x01\x00\xff\xff\x00[backend]\n", "not UTF-8"),
        (b'[backend]\nmode = "shadow"\nvos = ' + b"[" * 5000 + b"]" * 5000 + b"\n", "nested too deeply"),
        (b'[backend]\nmode = "shadow"\nvos = [' + b"{a = " * 5000 + b"1" + b"}" * 5000 + b"]\n", "nested too deeply"),
    ],
)
def test_a_hostile_file_is_one_line_naming_it(tmp_path: Path, content: bytes, expected: str) -> None:
    path = tmp_path / "rlsched.toml"
    path.write_bytes(content)
    code, output = check(path)
    assert code == 1 and output.count("\n") == 1, output
    assert output.startswith(f"{path}: ") and expected in output and "internal error" not in output, output


def test_a_model_with_a_deflated_bomb_is_refused_in_one_line(lal_model: Path, tmp_path: Path) -> None:
    model = tmp_path / "model.npz"
    shutil.copyfile(lal_model, model)
    add_zeros_member(model, "replay/extra.npy", 256 << 20)  # ~250 KB on disk, 256 MiB inflated
    (tmp_path / "state").mkdir(mode=0o755)
    state = f'[state]\ndir = "{tmp_path / "state"}"\n[metrics]\nlisten = "off"\n'
    path = write(tmp_path, f'vos = {json.dumps(LAL_VOS)}\ndefault_vo = "vo1"\n[agent]\nmodel = "{model}"\n' + state)
    code, output = check(path)
    assert code == 1 and output.count("\n") == 1, output
    assert "key 'agent'" in output and "member 'replay/extra.npy' inflates" in output
