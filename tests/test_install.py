"""`rlsched install`: the wheel carries the site files, the layout and modes, and the systemd units (verify,
security score), checked with the real systemd-analyze."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from rlsched.cli import main
from rlsched.install import BIN, CONFIG, HOOKS, LIBEXEC, UNITS, install, plan, shipped_root

REPO = Path(__file__).resolve().parent.parent
UNIT_FILES = ("rlsched.service", "rlsched-gate-watchdog.service", "rlsched-gate-watchdog.timer")
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="no systemd-analyze: apt-get install systemd (scripts/install.sh does as root)"
)


def test_install_lays_out_every_file_with_its_mode_and_keeps_an_existing_config(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["install", "--prefix", str(tmp_path), "--config-group", "root"])
    assert result.exit_code == 0, result.output
    mode = lambda p: (tmp_path / p.lstrip("/")).stat().st_mode & 0o7777  # noqa: E731
    assert mode(BIN) == 0o755
    for hook, shipped in HOOKS.items():
        assert mode(f"{LIBEXEC}/{hook}") == 0o755
        assert (tmp_path / LIBEXEC.lstrip("/") / hook).read_bytes() == (REPO / shipped).read_bytes()
    for unit in UNIT_FILES:
        assert mode(f"{UNITS}/{unit}") == 0o644
    assert mode(CONFIG) == 0o640
    assert mode("/usr/share/doc/rlsched/daemon.md") == 0o644
    # SlurmUser must reach the hooks whatever the umask.
    assert mode(LIBEXEC) == 0o755 and mode("/etc/rlsched") == 0o755
    # The wrapper runs this very Python's rlsched.
    out = subprocess.run([str(tmp_path / "usr/bin/rlsched"), "--version"], capture_output=True, text=True, check=True)
    assert "rlsched, version" in out.stdout

    config = tmp_path / "etc/rlsched/rlsched.toml"
    config.write_text("# the site's own\n")
    again = CliRunner().invoke(main, ["install", "--prefix", str(tmp_path), "--config-group", "root"])
    assert again.exit_code == 0
    assert config.read_text() == "# the site's own\n"
    assert "keep existing" in again.output and "unchanged" in again.output


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["install", "--prefix", str(tmp_path / "root"), "--dry-run"])
    assert result.exit_code == 0
    assert "would install" in result.output
    assert not (tmp_path / "root").exists()


def test_an_rlsched_that_is_not_our_wrapper_is_left_alone(tmp_path: Path) -> None:
    foreign = tmp_path / BIN.lstrip("/")
    foreign.parent.mkdir(parents=True)
    foreign.write_text("#!/bin/sh\necho distribution package\n")
    done = dict((e.target, what) for what, e in install(tmp_path, plan(group=None), dry_run=False))
    assert done[BIN] == "keep"
    assert "distribution package" in foreign.read_text()


def test_the_units_name_exactly_the_paths_install_creates(tmp_path: Path) -> None:
    install(tmp_path, plan(group=None), dry_run=False)
    for unit in UNIT_FILES:
        text = (tmp_path / UNITS.lstrip("/") / unit).read_text()
        for command in re.findall(r"^Exec\w+=(\S+)", text, flags=re.M):
            assert command == "/bin/kill" or (tmp_path / command.lstrip("/")).is_file(), (unit, command)
        assert "--config /etc/rlsched/rlsched.toml" in text or "rlsched.service" not in unit


def test_wheel_carries_the_site_files_and_installs_from_them(tmp_path: Path) -> None:
    """Build the wheel, unpack it, and run `rlsched install` from it (not from this checkout)."""
    # setuptools builds in the source tree (build/, *.egg-info): build from a copy so the checkout stays clean.
    source = tmp_path / "source"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"),
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(source),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "dist"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("rlsched-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in (
        "etc/systemd/rlsched.service",
        "etc/rlsched.toml",
        "plugins/slurm/rlsched-resume",
        "plugins/rlsched-gate-watchdog",
        "docs/daemon.md",
    ):
        assert f"rlsched/_dist/{shipped}" in names
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "from rlsched.install import shipped_root; print(shipped_root())"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip() == str(site / "rlsched" / "_dist")
    root = tmp_path / "root"
    dry = subprocess.run(
        [sys.executable, "-m", "rlsched", "install", "--prefix", str(root), "--dry-run"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "rlsched-gate-watchdog.service" in dry.stdout and not root.exists()
    subprocess.run(
        [sys.executable, "-m", "rlsched", "install", "--prefix", str(root), "--config-group", "root"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert (root / "usr/lib/rlsched/rlsched-resume").stat().st_mode & 0o777 == 0o755


def test_checkout_is_the_source_of_an_editable_install() -> None:
    root = shipped_root()
    assert (root / "etc" / "systemd" / "rlsched.service").is_file()


def _units_at(tmp_path: Path) -> list[Path]:
    """The installed units, their commands pointed into the staging root (systemd-analyze verify checks that
    every command exists and is executable)."""
    prefix = tmp_path / "root"
    install(prefix, plan(group=None), dry_run=False)
    out = []
    for unit in UNIT_FILES:
        text = (prefix / UNITS.lstrip("/") / unit).read_text()
        text = text.replace(BIN, f"{prefix}{BIN}").replace(f"{LIBEXEC}/", f"{prefix}{LIBEXEC}/")
        path = tmp_path / unit
        path.write_text(text)
        out.append(path)
    return out


@needs_systemd_analyze
def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    assert SYSTEMD_ANALYZE is not None
    units = _units_at(tmp_path)
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", *map(str, units)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert result.returncode == 0 and not result.stderr.strip(), result.stderr
    # And it does fail on a broken unit (so the check above means something).
    broken = tmp_path / "broken.service"
    broken.write_text(units[0].read_text().replace(f"{tmp_path}/root{BIN}", "/nonexistent/rlsched"))
    bad = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", str(broken)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert bad.returncode != 0


@needs_systemd_analyze
@pytest.mark.parametrize("unit", ["rlsched.service", "rlsched-gate-watchdog.service"])
def test_units_score_under_5_in_systemd_analyze_security(unit: str) -> None:
    assert SYSTEMD_ANALYZE is not None
    result = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=true", "--no-pager", str(REPO / "etc" / "systemd" / unit)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", result.stdout)
    assert match, result.stdout + result.stderr
    assert float(match.group(1)) < 5.0, result.stdout
