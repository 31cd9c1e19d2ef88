"""The compiled loop of eager softmax and log_softmax on small CPU tensors (`nn_activation`'s
`_softmax_fused` and `_log_softmax_fused` ops).

On a small tensor NumPy's five calls for a softmax (max, subtract, exp, sum, divide) cost ~2 us
where PyTorch's whole op costs ~1.3 us: this one loop per row does the same arithmetic as those
calls (x - max, exp, a sum in the input's dtype, a division; log_softmax: s - log(sum(exp(s))))
for ~0.5 us. The roundings can differ from NumPy's in the last place (the C library's exp, a
sequential sum where NumPy sums pairwise), as PyTorch's own vectorised kernels differ.

Imported by nn_activation on the first small softmax (never by `import jitorch`); compiles on
its first call per dtype and rank and is cached on disk (`cache=True`). No `fastmath`: nan and
inf propagate as in NumPy (a nan in a row gives a row of nan; a row of -inf gives nan).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def softmax_rows(a, dim):
    """softmax of `a` along `dim` (-ndim <= dim < ndim, a.size > 0)."""
    return _rows(a, dim, False)


@njit(nogil=True, cache=True)
def log_softmax_rows(a, dim):
    """log_softmax of `a` along `dim` (-ndim <= dim < ndim, a.size > 0)."""
    return _rows(a, dim, True)


@njit(nogil=True, cache=True)
def _rows(a, dim, log):
    a = np.ascontiguousarray(a)
    if dim < 0:
        dim += a.ndim
    shape = a.shape
    pre = 1
    for i in range(dim):
        pre *= shape[i]
    n = shape[dim]
    post = a.size // (pre * n)
    x = a.reshape((pre, n, post))  # the reduced dim in the middle: one loop shape for any dim
    out = np.empty_like(a)
    y = out.reshape((pre, n, post))
    for i in range(pre):
        for k in range(post):
            m = x[i, 0, k]
            for j in range(1, n):
                v = x[i, j, k]
                if v > m or v != v:  # np.maximum's rule: a nan wins
                    m = v
            # the sum starts from its first term: it accumulates in the input's dtype
            if log:
                v = x[i, 0, k] - m
                y[i, 0, k] = v
                s = math.exp(v)
                for j in range(1, n):
                    v = x[i, j, k] - m
                    y[i, j, k] = v
                    s += math.exp(v)
                s = math.log(s)
                for j in range(n):
                    y[i, j, k] -= s
            else:
                s = math.exp(x[i, 0, k] - m)
                y[i, 0, k] = s
                for j in range(1, n):
                    e = math.exp(x[i, j, k] - m)
                    y[i, j, k] = e
                    s += e
                for j in range(n):
                    y[i, j, k] /= s
    return out
