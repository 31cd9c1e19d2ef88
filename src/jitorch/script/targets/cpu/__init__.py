"""The CPU target: Numba njit(nogil) programs whose entry calls shared, content-hashed kernels.

`program.py` generates a program (the entry and its structural ops), `kernel.py` outlines compute
nodes into kernels, `lower_*.py` are the CPU lowerings (registered with `target="cpu"`), and
`alloc`, `blas`, `conv`, `pool`, `fastmath` are what generated code imports. Light on purpose:
generated modules import this package.

A process that runs CPU programs gets Numba's BLAS helpers' import of SciPy's cython_blas
made light here (cython_blas.py: without it the first matrix product imports all of
scipy.linalg).
"""
from . import cython_blas as _cython_blas

_cython_blas.preload()


def load_target():
    """The CPU Target (codegen.target.get_target("cpu"))."""
    from .target import CPU
    return CPU
