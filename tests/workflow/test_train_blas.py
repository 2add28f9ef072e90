"""``train`` gives the same model for a seed whatever BLAS thread count its caller set (issue 22).

The caller's limit is set with threadpoolctl inside this one process, after NumPy has loaded: the case
the CLI's early environment pin cannot reach (Python, a notebook, a Dask worker, this test).  Before
the library limited its own threads, two caller threads gave other ESN weights on a 2-core machine
with OpenBLAS's SkylakeX kernels (and on the Haswell machine of the issue) for these very runs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from rlsched.sim.traces.swf import read_swf
from rlsched.workflow.train import run_tasks, train_plan


def _weights(model: bytes, tmp: Path) -> dict[str, np.ndarray]:
    path = tmp / "look.npz"
    path.write_bytes(model)
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files if not k.startswith("meta")}


@pytest.mark.parametrize("policy", ["sarsa-esn:pretrain_decisions=50", "fqi-esn:pretrain_decisions=50"])
def test_one_and_two_blas_threads_train_the_same_model(policy: str, small_swf: Path, tmp_path: Path) -> None:
    models = {}
    for threads in (1, 2):
        with threadpool_limits(limits=threads, user_api="blas"):
            tasks = train_plan(read_swf(small_swf), policy, tmp_path / "m.npz", seeds=[0])
            models[threads] = _weights(run_tasks(tasks)[0].model, tmp_path)
    one, two = models[1], models[2]
    assert one.keys() == two.keys() and len(one) > 0
    assert [k for k in one if not np.array_equal(one[k], two[k])] == []
