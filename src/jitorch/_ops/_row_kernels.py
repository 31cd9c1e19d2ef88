"""Eager softmax and log_softmax on CPU arrays (`nn_activation`'s `_softmax_fused`,
`_log_softmax_fused`) as one compiled call that follows the compiled composite's arithmetic.

One algorithm for every tier that compiles: scripted and traced code lower the softmax
composite (x - max, exp, sum, divide; log_softmax: x - max, then minus the log of the sum of
exps) to the loops of script/targets/cpu (lower_rows.py for the last dim, lower_reduce.py and
elementwise kernels for another dim); eager code runs these loops, written to do the same
operations in the same order, so eager, scripted and traced results agree to the bit
(tests/test_tier_agreement.py). What is mirrored, by the kind of dim:

- the last dim (lower_rows' row region): per row the max of the row (`_row_amax`, nan if any
  element is nan), then one pass over blocks of `BLOCK` elements computing exp(x - max) (kept in
  a row buffer; log_softmax keeps x - max) and its sum in the dtype, each block's sum added to a
  float64 total, then a pass dividing by (subtracting the log of) the total in the dtype. The
  block loop is the generated one (same body, same fastmath flags), so LLVM vectorises its sum
  alike: the lanes' order of addition is the compiled kernel's;
- another dim (the composite unfused: a max kernel, an exp kernel, a sum kernel, a division):
  the max and the sum of each output element run along the dim in order; a float32 sum over dim 0
  runs in float32 over blocks of `BLOCK` rows added to a float64 total, over any other dim in
  float64 (lower_reduce's `_accumulate_into`); float64 sums run in float64.

exp and log are the compiled code's: `fastmath.exp_f32` / `log_f32` for float32, libm's for
float64. Inputs must have at least one element, any strides: the last dim's kernel reads the
input in place, as compiled code does (a strided row sums in another order, see `_each_row`).
Imported by nn_activation on the first eager softmax (never by `import jitorch`); each kernel
compiles once per dtype, rank and layout, cached on disk. Numba's cache does not see changes to
fastmath.py (exp_f32 is compiled into these kernels): clear it after changing that file. A
change to the generated loops (lower_rows.py, lower_reduce.py) must be mirrored here; the tier
agreement test fails until it is.
"""
from __future__ import annotations

import sys

import numpy as np
from numba import njit, types
from numba.extending import overload

from ..script.kernels.numba_cache import guard_eager
from ..script.targets.cpu.fastmath import exp_f32_ir as exp_f32, log_f32  # (fastmath.IN_PLACE)
from ..script.targets.cpu.lower_reduce import BLOCK
from ..script.targets.cpu.row_helpers import _row_amax

# the generated kernels' options (targets/cpu): the same flags give the same vectorised loops
_OPTS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}, cache=True)


def _exp(x):
    """exp as compiled code computes it for x's dtype."""


def _log(x):
    """log as compiled code computes it for x's dtype."""


@overload(_exp)
def _exp_impl(x):
    if x == types.float32:
        return lambda x: exp_f32(x)
    return lambda x: np.exp(x)


@overload(_log)
def _log_impl(x):
    if x == types.float32:
        return lambda x: log_f32(x)
    return lambda x: np.log(x)


@njit(**_OPTS)
def _split(shape, dim):
    """(pre, n, post): the dims before `dim` (flattened), `dim`'s size, the dims after."""
    pre = 1
    for i in range(dim):
        pre *= shape[i]
    post = 1
    for i in range(dim + 1, len(shape)):
        post *= shape[i]
    return pre, shape[dim], post


def _at(x, i, j):
    """Element j of row i: x[i, j] of a 2-D array, x[j] of a 1-D one (a row, i unused)."""


@overload(_at)
def _at_impl(x, i, j):
    if x.ndim == 2:
        return lambda x, i, j: x[i, j]
    return lambda x, i, j: x[j]


def _put(y, i, j, v):
    """y[i, j] = v (2-D y), y[j] = v (1-D y)."""


@overload(_put)
def _put_impl(y, i, j, v):
    if y.ndim == 2:
        def put2(y, i, j, v):
            y[i, j] = v
        return put2

    def put1(y, i, j, v):
        y[j] = v
    return put1


@njit(**_OPTS)
def _each_row(x, y, log, buf, sbuf):
    """Softmax (log_softmax if `log`) of each row of `x` into `y`, as lower_rows' row region
    computes a row (`buf`, `sbuf`: its scratch rows), reading x as that kernel does: a 2-D
    array with two indices, a 1-D array (one row) with one (LLVM vectorises a loop over a
    strided 1-D array behind a check that the stride is 1, not one over a 2-D array: the sum's
    order)."""
    n = x.shape[-1]
    for i in range(x.size // n):
        _row(x, i, y, log, buf, sbuf, n)


@njit(**_OPTS, inline="always")
def _row(x, i, y, log, buf, sbuf, n):
    """Row i of `_each_row` (n: the row's length)."""
    nan = False
    for j in range(n):
        v = _at(x, i, j)
        nan = nan | np.isnan(v)
        sbuf[j] = v
    m = _row_amax(sbuf, n)
    if nan:
        m = x.dtype.type(np.nan)
    zero = x.dtype.type(0.0)
    tot = 0.0
    # two copies of the generated block loop: what the pass keeps is part of the loop body,
    # and so of LLVM's choice of vector width and interleaving (the sum's order)
    if log:
        for b in range((n + BLOCK - 1) // BLOCK):
            lo = b * BLOCK
            acc = zero
            for jj in range(min(BLOCK, n - lo)):
                j = lo + jj
                t = _at(x, i, j) - m
                acc = acc + _exp(t)
                buf[j] = t
            tot = tot + np.float64(acc)
        lse = _log(x.dtype.type(tot))
        for j in range(n):
            _put(y, i, j, buf[j] - lse)
    else:
        for b in range((n + BLOCK - 1) // BLOCK):
            lo = b * BLOCK
            acc = zero
            for jj in range(min(BLOCK, n - lo)):
                j = lo + jj
                t = _at(x, i, j) - m
                e = _exp(t)
                acc = acc + e
                buf[j] = e
            tot = tot + np.float64(acc)
        s = x.dtype.type(tot)
        for j in range(n):
            _put(y, i, j, buf[j] / s)


@njit(**_OPTS)
def _last_dim(x, log):
    """Softmax (log_softmax if `log`) along the last dim of `x`, any strides; a new C-contiguous
    array. A 1-D or 2-D x is read as it is (as compiled code reads that input); higher ranks row
    by row (1-D views)."""
    n = x.shape[-1]
    y = np.empty(x.shape, x.dtype)
    buf = np.empty(n, x.dtype)
    sbuf = np.empty(n, x.dtype)
    if x.ndim <= 2:
        _each_row(x, y, log, buf, sbuf)
    else:
        for idx in np.ndindex(x.shape[:-1]):
            _each_row(x[idx], y[idx], log, buf, sbuf)
    return y


@njit(**_OPTS)
def _other_dim(a, dim, log, row_blocks):
    """Softmax (log_softmax if `log`) along a dim that is not the last, as the unfused kernels:
    each loop nest runs over (pre, dim, post) in memory order, so every output element's max
    and sum run along the dim in order; `row_blocks`: a float32 sum over dim 0."""
    pre, n, post = _split(a.shape, dim)
    x = a.reshape((pre, n, post))
    out = np.empty_like(a)
    y = out.reshape((pre, n, post))
    m = np.full((pre, post), -np.inf, a.dtype)
    for i in range(pre):
        for j in range(n):
            for k in range(post):
                v = x[i, j, k]
                if v > m[i, k] or np.isnan(v):
                    m[i, k] = v
    e = np.empty_like(out) if log else out  # softmax: exp(x - max) in place of the result
    ev = e.reshape((pre, n, post))
    for i in range(pre):
        for j in range(n):
            for k in range(post):
                t = x[i, j, k] - m[i, k]
                ev[i, j, k] = _exp(t)
                if log:
                    y[i, j, k] = t
    tot = np.zeros((pre, post), np.float64)
    if row_blocks:  # pre == 1: blocks of rows summed in float32
        blk = np.empty(post, a.dtype)
        for b in range((n + BLOCK - 1) // BLOCK):
            lo = b * BLOCK
            blk[:] = 0
            for jj in range(min(BLOCK, n - lo)):
                for k in range(post):
                    blk[k] = blk[k] + ev[0, lo + jj, k]
            for k in range(post):
                tot[0, k] = tot[0, k] + np.float64(blk[k])
    else:  # float64 totals (float64: the dtype's own sum)
        for i in range(pre):
            for j in range(n):
                for k in range(post):
                    tot[i, k] = tot[i, k] + np.float64(ev[i, j, k])
    for i in range(pre):
        for k in range(post):
            s = a.dtype.type(tot[i, k])
            if log:
                s = _log(s)
            for j in range(n):
                y[i, j, k] = y[i, j, k] - s if log else ev[i, j, k] / s
    return out


@njit(**_OPTS)
def softmax_last(x):
    """Softmax along the last dim of `x` (any rank and strides)."""
    return _last_dim(x, False)


@njit(**_OPTS)
def log_softmax_last(x):
    """Log-softmax along the last dim of `x` (any rank and strides)."""
    return _last_dim(x, True)


def _any_dim(a: np.ndarray, dim: int, log: bool, last) -> np.ndarray:
    if dim < 0:
        dim += a.ndim
    if dim == a.ndim - 1:  # the input itself, whatever its strides (see _last_dim)
        if a.ndim > 2 and a.flags.c_contiguous:  # as compiled code reads it: one row a row
            return last(a.reshape(-1, a.shape[-1])).reshape(a.shape)
        return last(a)
    if not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    return _other_dim(a, dim, log, dim == 0 and a.dtype == np.float32)


def softmax(a: np.ndarray, dim: int) -> np.ndarray:
    """Softmax of the float32/float64 array `a` (with elements) along `dim` (-a.ndim <= dim <
    a.ndim), as compiled code computes it."""
    return _any_dim(a, dim, False, softmax_last)


def log_softmax(a: np.ndarray, dim: int) -> np.ndarray:
    """Log-softmax, as `softmax`."""
    return _any_dim(a, dim, True, log_softmax_last)


guard_eager(sys.modules[__name__])  # checked, lean loads (script/kernels/numba_cache.py)
