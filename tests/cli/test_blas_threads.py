"""The CLI pins BLAS threads before NumPy loads: a learned run gives the same numbers whatever the cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: Keys of ``sim run --json`` that measure the machine, not the schedule.
TIMING_KEYS = {"sim_seconds", "wall_s", "decision_us", "seconds"}


def _env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "OPENBLAS_NUM_THREADS",
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "RLSCHED_BLAS_THREADS",
            "OPENBLAS_CORETYPE",
        )
    }
    env.update(extra)
    return env


def _blas_vars(env: dict[str, str]) -> list[str]:
    code = (
        "import rlsched.cli, os, numpy; "
        "print(*(os.environ[k] for k in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS')))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_the_cli_pins_one_blas_thread_unless_told() -> None:
    assert _blas_vars(_env(OPENBLAS_NUM_THREADS="4", OMP_NUM_THREADS="4")) == ["1", "1", "1"]
    assert _blas_vars(_env(RLSCHED_BLAS_THREADS="3")) == ["3", "3", "3"]


def _learned_run(tmp_path: Path, name: str, **env: str) -> dict[str, object]:
    out = tmp_path / f"{name}.json"
    rlsched = [sys.executable, "-m", "rlsched.cli"]
    subprocess.run(
        [
            *rlsched,
            "sim",
            "run",
            "--workload",
            "lal",
            "--scale",
            "0.05",
            "--seed",
            "3",
            "--policy",
            "sarsa-esn",
            "--json",
            str(out),
        ],
        env=_env(**env),
        check=True,
        capture_output=True,
    )
    summary = json.loads(out.read_text())
    return {k: v for k, v in summary.items() if k not in TIMING_KEYS}


def test_a_learned_run_is_the_same_for_a_seed_across_thread_settings(tmp_path: Path) -> None:
    one = _learned_run(tmp_path, "one", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    many = _learned_run(tmp_path, "many", OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
    assert one["jobs"] == 475 and one["scheduler"] == "sarsa-esn"
    assert one == many


def _kernels(env: dict[str, str], first: str = "rlsched.cli") -> tuple[str, list[str]]:
    """The OPENBLAS_CORETYPE left by importing ``first`` and then rlsched, and the kernel set each loaded OpenBLAS
    runs."""
    code = (
        f"import {first}, rlsched, os; from rlsched.core.blas import blas_libraries; "
        "print(os.environ.get('OPENBLAS_CORETYPE', '-'), *(lib.split()[-1] for lib in blas_libraries()))"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    first, *rest = out.stdout.split()
    return first, rest


def test_rlsched_pins_one_blas_kernel_set_where_the_cpu_runs_it_and_keeps_an_explicit_one() -> None:
    from rlsched._blas_kernels import runs_haswell_kernels

    assert runs_haswell_kernels("processor : 0\nflags : fpu sse2 avx fma avx2 bmi2\n")
    assert not runs_haswell_kernels("processor : 0\nflags : fpu sse2 avx\n")  # an older x86-64
    assert not runs_haswell_kernels("processor : 0\nFeatures : fp asimd\n")  # an ARM machine: no flags line
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        here = runs_haswell_kernels(f.read())
    pinned, kernels = _kernels(_env())
    if here:
        assert pinned == "Haswell" and kernels and set(kernels) == {"Haswell"}
    else:
        assert pinned == "-"
    assert _kernels(_env(OPENBLAS_CORETYPE="Sandybridge")) == ("Sandybridge", ["Sandybridge"] * len(kernels))
    # A library caller that imports rlsched before NumPy is pinned as the command is; one that loaded NumPy
    # first keeps what OpenBLAS chose (too late to change), and rlsched does not pretend otherwise.
    assert _kernels(_env(), first="rlsched.workflow") == (pinned, kernels)
    assert _kernels(_env(), first="numpy")[0] == "-"
