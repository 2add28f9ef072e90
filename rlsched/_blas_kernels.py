"""One OpenBLAS kernel set wherever the CPU can run it, chosen before NumPy loads (no NumPy import here).

``import rlsched`` (and so the ``rlsched`` command, its spawned workers, a notebook or a Dask worker that imports
rlsched before NumPy) calls :func:`pin_blas_kernels`.  The thread count is pinned elsewhere, at run time
(:mod:`rlsched.core.blas`); the kernel set cannot be changed once OpenBLAS is loaded, hence here.
docs/design.md ("Reproducibility") has the measurements.
"""

from __future__ import annotations

import os
import sys

#: The OpenBLAS kernel set rlsched asks for where the CPU can run it (AVX2 and FMA: any x86-64 CPU since 2015).
PINNED_BLAS_KERNELS = "Haswell"


def runs_haswell_kernels(cpuinfo: str) -> bool:
    """Whether a CPU, by its ``/proc/cpuinfo``, runs OpenBLAS's Haswell kernels (its flags name AVX2 and FMA)."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags = set(value.split())
            return {"avx2", "fma"} <= flags
    return False


def pin_blas_kernels() -> None:
    """``OPENBLAS_CORETYPE=Haswell`` where the CPU runs it and the environment names no set, if NumPy is not
    loaded yet (OpenBLAS reads it once, when it loads; afterwards nothing can change the kernels).

    OpenBLAS picks its kernels by CPU (Haswell, Zen, SkylakeX, …), and two sets may round a product otherwise
    even on one thread, and a learner's greedy choices amplify the last bits: sarsa-esn trained for seed 0 on
    KTH-SP2's first 4,000 jobs scores 61.4 on validation with Haswell's kernels, 60.0 with Sandybridge's, and
    77.4 in the table as first committed, made where OpenBLAS chose others (this project's earlier machines:
    SkylakeX; the table was made again on the pinned kernels).
    One set for every machine that can run it makes a learned result the same on them.  An explicit
    ``OPENBLAS_CORETYPE`` is kept (an empty one lets OpenBLAS choose by CPU)."""
    if "OPENBLAS_CORETYPE" in os.environ or "numpy" in sys.modules:
        return
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            cpuinfo = f.read()
    except OSError:
        return  # not Linux: OpenBLAS chooses
    if runs_haswell_kernels(cpuinfo):
        os.environ["OPENBLAS_CORETYPE"] = PINNED_BLAS_KERNELS
