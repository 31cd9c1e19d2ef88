"""The run-time helpers of the shared-memory check that programs writing an argument run first
(lower_overlap.py emits the calls; script/runtime/alias.py has the rule).

Owns `_jt_rows`, `_jt_put`, `_jt_meet` (njit, cached on disk) and `rows`, `put`, `meet`: the same
called through symbols (kernels/kernel_call.library), which is what generated entries import.
Why a library: emitted into each program's module, the three were typed, optimised and turned
into machine code again for every program that writes an argument (an optimizer step, an
in-place update), ~1.5-1.8 CPU-s each time (`_jt_meet` alone ~1.1 s: its argsort); here they are
compiled once per process (`put` once per dtype and rank: an array of any layout is passed as
'A', it reads strides at run time) and loaded from disk after that. A call through a symbol is
not inlined: a few ns more per check (bench/alias_check.py).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import types

from ...kernels import kernel_call


# called through kernel_call symbols only
_OPTS = dict(nogil=True, cache=True, **kernel_call.NATIVE_ONLY)


@numba.njit(**_OPTS)
def _jt_rows(n):
    return np.empty((3, n), np.int64)


@numba.njit(**_OPTS)
def _jt_put(sp, k, x, w):
    """Column k of sp: x's byte bounds [lo, hi) ([0, 0) when empty) and whether it is written.
    Returns True when x is written and two of its elements may share bytes (alias.self_overlap:
    dims of size > 1 by increasing |stride|, each at least the extent of those before)."""
    sp[2, k] = w
    if x.size == 0:
        sp[0, k] = 0
        sp[1, k] = 0
        return False
    lo = np.int64(x.ctypes.data)
    hi = lo + np.int64(x.itemsize)
    for j in range(x.ndim):
        ext = np.int64((x.shape[j] - 1) * x.strides[j])
        if ext < 0:
            lo += ext
        else:
            hi += ext
    sp[0, k] = lo
    sp[1, k] = hi
    if not w or x.size < 2 or x.flags.c_contiguous or x.flags.f_contiguous:
        return False
    for j in range(x.ndim):
        if x.shape[j] < 2:
            continue
        s = abs(x.strides[j])
        need = x.itemsize
        for m in range(x.ndim):
            t = abs(x.strides[m])
            if m != j and x.shape[m] > 1 and (t < s or (t == s and m < j)):
                need += (x.shape[m] - 1) * t
        if s < need:
            return True
    return False


@numba.njit(**_OPTS)
def _jt_meet(sp):
    """Does a written column of sp overlap another? Pairwise for up to 16 (measured faster
    than sorting there: bench/alias_check.py), else a sweep in start order keeping the
    furthest end of all columns and of written columns seen so far."""
    n = sp.shape[1]
    if n <= 16:
        for i in range(n):
            for j in range(i + 1, n):
                if (sp[2, i] or sp[2, j]) and sp[0, i] < sp[1, j] and sp[0, j] < sp[1, i]:
                    return True
        return False
    order = np.argsort(sp[0])
    far_all = np.int64(0)
    far_w = np.int64(0)
    for q in range(n):
        r = order[q]
        lo = sp[0, r]
        hi = sp[1, r]
        if lo == hi:
            continue
        if lo < far_w or (sp[2, r] and lo < far_all):
            return True
        far_all = max(far_all, hi)
        if sp[2, r]:
            far_w = max(far_w, hi)
    return False


def _any_layout(argtys: tuple) -> tuple:
    return tuple(types.Array(t.dtype, t.ndim, "A") if isinstance(t, types.Array) else t
                 for t in argtys)


rows = kernel_call.library(_jt_rows)
put = kernel_call.library(_jt_put, _any_layout)
meet = kernel_call.library(_jt_meet)

# native-only functions (no Python entry point): a Python call raises instead of crashing
kernel_call.refuse_python_calls(globals())
