"""The unrolled row reductions that generated row and reduction kernels call (lower_rows.py,
lower_reduce.py): `_row_amax`, `_row_amin` over the first n elements of a 1-D buffer.

Why a module of their own: emitted into each kernel module that needs one, the helper was
typed, lowered and compiled again per module (~0.15 CPU-s each); here it is compiled once per
process and dtype, cached on disk, and linked into its callers as any njit callee (LLVM may
still inline it: the same machine code as before).
"""
from __future__ import annotations

import numba

_OPTS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}, cache=True)


@numba.njit(**_OPTS)
def _row_amax(b, n):
    # n >= 1 (checked by the caller); eight independent chains: ILP where LLVM does not
    # vectorise an amax reduction
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = b[0]
    k = 0
    while k + 8 <= n:
        a0 = max(a0, b[k])
        a1 = max(a1, b[k + 1])
        a2 = max(a2, b[k + 2])
        a3 = max(a3, b[k + 3])
        a4 = max(a4, b[k + 4])
        a5 = max(a5, b[k + 5])
        a6 = max(a6, b[k + 6])
        a7 = max(a7, b[k + 7])
        k += 8
    while k < n:
        a0 = max(a0, b[k])
        k += 1
    return max(max(max(a0, a1), max(a2, a3)), max(max(a4, a5), max(a6, a7)))


@numba.njit(**_OPTS)
def _row_amin(b, n):
    # n >= 1 (checked by the caller); eight independent chains: ILP where LLVM does not
    # vectorise an amin reduction
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = b[0]
    k = 0
    while k + 8 <= n:
        a0 = min(a0, b[k])
        a1 = min(a1, b[k + 1])
        a2 = min(a2, b[k + 2])
        a3 = min(a3, b[k + 3])
        a4 = min(a4, b[k + 4])
        a5 = min(a5, b[k + 5])
        a6 = min(a6, b[k + 6])
        a7 = min(a7, b[k + 7])
        k += 8
    while k < n:
        a0 = min(a0, b[k])
        k += 1
    return min(min(min(a0, a1), min(a2, a3)), min(min(a4, a5), min(a6, a7)))
