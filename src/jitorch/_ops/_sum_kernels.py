"""The compiled loop of eager `sum` / `mean` over a large contiguous float tensor: the blocked
float sum of the compiled reductions (script/targets/cpu/lower_reduce.py, `BLOCK`), one pass.

Why: NumPy's pairwise float32 sum is not vectorised (on an AVX2 machine a 1M-element sum took
192 us against PyTorch's 67, bench/eager_overhead.py 2026-12-06). Here each block of `BLOCK`
elements is summed in the input's dtype in a loop LLVM vectorises (fastmath "reassoc" only: no
assumption about NaN or infinity, which propagate as in NumPy), and each block's sum is added to
a float64 total, so the error stays at NumPy's pairwise level or below (the sum of 2**24 + 40
float32 ones is exact) and eager and compiled sums run the same algorithm.

Imported by _ops/reduce.py on the first large float sum (never by `import jitorch`). The
function is cached on disk (`cache=True`, checked loads: `guard_eager`), typed only by the
array's dtype; `LOOPS` says when it can run (script/runtime/worker_loops.py: compiled by
jitorch's compile worker while NumPy sums, never a stall of the caller).
"""
from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..script.kernels.cache_guards import guard_eager
from ..script.runtime.worker_loops import WorkerLoops

# the compiled reductions' block (script/targets/cpu/lower_reduce.py; importing it here would
# import the compiler): tests/test_eager_sum_kernel.py checks the two agree
BLOCK = 512


@njit(nogil=True, cache=True, error_model="numpy", fastmath={"reassoc"})
def blocked_total(x):
    """The float64 total of the 1-D array `x`, summed in blocks of BLOCK in x's dtype."""
    n = x.shape[0]
    total = 0.0
    for b in range((n + BLOCK - 1) // BLOCK):
        lo = b * BLOCK
        acc = x.dtype.type(0)
        for jj in range(min(BLOCK, n - lo)):
            acc += x[lo + jj]
        total += acc
    return total


guard_eager(sys.modules[__name__])  # checked, lean loads (script/kernels/cache_guards.py)


def _warm(key: tuple) -> None:
    blocked_total(np.zeros(1, key[1]))


# ("sum", "float32") -> loaded in this process, or compiled by the compile worker meanwhile
LOOPS = WorkerLoops("eager-sum", __name__, lambda key, d=(blocked_total,): d, _warm,
                    lambda: [__name__])
compile_in_worker = LOOPS.compile_in_worker  # (the compile worker's "call" job)
