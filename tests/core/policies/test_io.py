"""Loading a model file reads its zip directory first and inflates nothing unbounded (issue 24: a model with
an extra deflated 1 GiB member, 10.7 MB on disk, was loaded whole by ``config check`` and the daemon)."""

from __future__ import annotations

import shutil
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from rlsched.core.policies import PolicyError, load_policy, read_policy_spec
from rlsched.core.policies import io as policy_io

LAL_VOS = tuple(f"vo{k}" for k in range(1, 8))


def add_zeros_member(
    model: Path,
    name: str,
    n_bytes: int,
    compress: int = zipfile.ZIP_DEFLATED,
    claimed_shape: tuple[int, ...] | None = None,
) -> None:
    """Append an array member of ``n_bytes`` zero bytes of data (float64), written in chunks; its header may
    claim another shape than the data it holds."""
    info = zipfile.ZipInfo(name)
    info.compress_type = compress
    with zipfile.ZipFile(model, "a") as archive, archive.open(info, "w", force_zip64=True) as member:
        np.lib.format.write_array_header_1_0(
            member, {"descr": "<f8", "fortran_order": False, "shape": claimed_shape or (n_bytes // 8,)}
        )
        chunk = bytes(1 << 20)
        for _ in range(n_bytes // len(chunk)):
            member.write(chunk)
        member.write(bytes(n_bytes % len(chunk)))


@pytest.fixture
def model(lal_model: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "model.npz"
    shutil.copyfile(lal_model, copy)
    return copy


def test_an_intact_model_loads(model: Path) -> None:
    policy_io.check_model_members(model)
    spec, _ = read_policy_spec(model)
    agent, loaded = load_policy(model, expect_vos=LAL_VOS)
    assert loaded.name == spec.name == "sarsa-esn" and agent.decisions > 0


def test_a_deflated_bomb_is_refused_before_it_is_inflated(model: Path) -> None:
    add_zeros_member(model, "replay/extra.npy", 256 << 20)  # 256 MiB of zeros: about 250 KB deflated
    assert model.stat().st_size < 2 << 20
    tracemalloc.start()
    try:
        with pytest.raises(PolicyError) as info:
            load_policy(model, expect_vos=LAL_VOS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert message.startswith(f"model {model}: member 'replay/extra.npy' inflates") and "\n" not in message
    assert peak < 16 << 20, f"{peak / 2**20:.0f} MiB allocated while refusing"
    with pytest.raises(PolicyError, match=r"replay/extra\.npy"):
        read_policy_spec(model)


def test_a_member_that_is_not_part_of_a_model_is_refused(model: Path) -> None:
    add_zeros_member(model, "junk.npy", 1 << 20)
    with pytest.raises(PolicyError, match=r"member 'junk.npy' is not part of a model"):
        read_policy_spec(model)


def test_a_member_larger_than_the_bound_is_refused(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Stored, not compressed (as rlsched writes them): only the absolute bound applies.
    add_zeros_member(model, "agent/extra.npy", 3 << 20, compress=zipfile.ZIP_STORED)
    monkeypatch.setattr(policy_io, "MAX_MEMBER_BYTES", 2 << 20)
    with pytest.raises(PolicyError, match=r"member 'agent/extra.npy' declares \d+ bytes, more than"):
        read_policy_spec(model)


def test_a_header_claiming_more_than_the_member_holds_is_refused(model: Path) -> None:
    add_zeros_member(model, "q/extra.npy", 1024, compress=zipfile.ZIP_STORED, claimed_shape=(10**12,))
    with pytest.raises(PolicyError, match=r"member 'q/extra.npy': its header describes 8000000000000 bytes"):
        load_policy(model, expect_vos=LAL_VOS)


def test_a_file_that_is_not_a_zip_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "model.npz"
    path.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(PolicyError, match="not a readable model file") as info:
        read_policy_spec(path)
    assert "\n" not in str(info.value)
