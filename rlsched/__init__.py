"""rlsched: a learning scheduler for Slurm/PBS, with a trace-driven simulator."""

from rlsched._blas_kernels import pin_blas_kernels

__version__ = "0.1.0"

# Before NumPy loads anywhere in the process: a learned result is then the same on every machine that runs the
# pinned kernel set (rlsched/_blas_kernels.py).
pin_blas_kernels()
