"""The CUDA target (issue 16): numba.cuda kernels launched by a generated host entry.

`program.py` generates a program (the host entry: shape checks, allocations, launches),
`kernel.py` turns each elementwise group into a grid-stride `numba.cuda.jit` kernel from the
registry's scalar templates, spelled for CUDA by `spelling.py`; `reduce.py` makes each
reduction a kernel with a block per output element, `rows.py` each row region (softmax, layer
norm) a kernel with a block per row; `launch.py` is what generated entries import (allocation,
launch grid). Never imports targets/cpu: what both use lives in
codegen/. Light on purpose: generated modules import this package.
"""


def load_target():
    """The CUDA Target (codegen.target.get_target("cuda"))."""
    from .target import CUDA
    return CUDA
