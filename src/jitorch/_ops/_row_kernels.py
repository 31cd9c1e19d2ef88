"""The compiled loops of eager softmax on small CPU tensors (`nn_activation`'s `_softmax_fused`).

On a small tensor NumPy's five calls for a softmax (max, subtract, exp, sum, divide) cost ~2 us
where PyTorch's whole op costs ~1.3 us. Two loops do four of them: `shift_rows` (x - max along
the dim) and `normalise_rows` (divide by the sum along the dim, in place), with NumPy's own exp
between them, so the result is bit for bit the composite's, which the interpreted traced graph
computes (tests/test_jit_opinfo.py): the max, the subtraction and the division are exact IEEE
operations, and the sum adds in NumPy's order. That order (NumPy 2's reduction of a C-contiguous
array): when the dim is innermost (every later dim of size 1) its pairwise sum (`_pairwise`,
rows of at most 128 elements: `ROW_MAX`), else one slice after another.

Imported by nn_activation on the first small softmax (never by `import jitorch`); each loop
compiles on its first call per dtype and rank and is cached on disk (`cache=True`). No
`fastmath`: nan and inf propagate as in NumPy. Inputs are C-contiguous (others take NumPy's
calls, whose summation order follows the memory layout).
"""
from __future__ import annotations

import sys

import numpy as np
from numba import njit

from ..script.kernels.numba_cache import guard_eager

ROW_MAX = 128  # NumPy's pairwise block: a longer innermost row splits in halves, not done here


@njit(nogil=True, cache=True)
def _split(shape, dim):
    """(pre, n, post): the dims before `dim` (flattened), `dim`'s size, the dims after."""
    pre = 1
    for i in range(dim):
        pre *= shape[i]
    post = 1
    for i in range(dim + 1, len(shape)):
        post *= shape[i]
    return pre, shape[dim], post


@njit(nogil=True, cache=True)
def shift_rows(a, dim):
    """a - max(a) along `dim` (-ndim <= dim < ndim, a.size > 0, C-contiguous); a nan wins the
    max, as in np.maximum."""
    if dim < 0:
        dim += a.ndim
    pre, n, post = _split(a.shape, dim)
    x = a.reshape((pre, n, post))
    out = np.empty_like(a)
    y = out.reshape((pre, n, post))
    for i in range(pre):
        for k in range(post):
            m = x[i, 0, k]
            for j in range(1, n):
                v = x[i, j, k]
                if v > m or v != v:
                    m = v
            for j in range(n):
                y[i, j, k] = x[i, j, k] - m
    return out


@njit(nogil=True, cache=True)
def _pairwise(y, i, n):
    """NumPy's pairwise_sum of y[i, :n, 0], n <= ROW_MAX (numpy/_core/src/umath/
    loops_utils.h.src): eight running sums combined as a tree, then the tail."""
    if n < 8:
        res = y[i, 0, 0]
        for j in range(1, n):
            res += y[i, j, 0]
        return res
    r0, r1, r2, r3 = y[i, 0, 0], y[i, 1, 0], y[i, 2, 0], y[i, 3, 0]
    r4, r5, r6, r7 = y[i, 4, 0], y[i, 5, 0], y[i, 6, 0], y[i, 7, 0]
    j = 8
    while j < n - n % 8:
        r0 += y[i, j, 0]
        r1 += y[i, j + 1, 0]
        r2 += y[i, j + 2, 0]
        r3 += y[i, j + 3, 0]
        r4 += y[i, j + 4, 0]
        r5 += y[i, j + 5, 0]
        r6 += y[i, j + 6, 0]
        r7 += y[i, j + 7, 0]
        j += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while j < n:
        res += y[i, j, 0]
        j += 1
    return res


@njit(nogil=True, cache=True)
def normalise_rows(e, dim):
    """e / sum(e) along `dim`, in place (e as `shift_rows` returns it, after exp: its sums are
    >= 0, so NumPy's +0.0 start changes nothing); False, e untouched, when `dim` is innermost
    with more than ROW_MAX elements."""
    if dim < 0:
        dim += e.ndim
    pre, n, post = _split(e.shape, dim)
    if post == 1 and n > ROW_MAX:
        return False
    y = e.reshape((pre, n, post))
    for i in range(pre):
        for k in range(post):
            if post == 1:
                s = _pairwise(y, i, n)
            else:
                s = y[i, 0, k]
                for j in range(1, n):
                    s += y[i, j, k]
            for j in range(n):
                y[i, j, k] /= s
    return True


guard_eager(sys.modules[__name__])  # checked, lean loads (script/kernels/numba_cache.py)
