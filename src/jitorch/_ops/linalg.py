"""Matrix products and linear algebra ops: declarations for the registry."""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .registry import defop

__all__ = ["matmul"]


def _matmul_check(a, b):
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{a.ndim}D and {b.ndim}D")
    ka = a.shape[-1]
    kb = b.shape[-2] if b.ndim > 1 else b.shape[0]
    if ka != kb:
        sa = "x".join(map(str, a.shape if a.ndim > 1 else (1,) + a.shape))
        sb = "x".join(map(str, b.shape if b.ndim > 1 else b.shape + (1,)))
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({sa} and {sb})")
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{dt.from_numpy_dtype(a.dtype).name} != "
                           f"{dt.from_numpy_dtype(b.dtype).name}")


def _matmul(input, other):
    _matmul_check(input, other)
    if input.dtype in (dt.bfloat16.np, dt.float16.np):
        return np.matmul(input.astype(np.float32), other.astype(np.float32)).astype(input.dtype)
    return np.matmul(input, other)


def _matmul_vjp(g, input, other):
    a, b = input, other
    if a.ndim == 1 and b.ndim == 1:
        return g * b, g * a
    if a.ndim == 1:
        ga = (g.unsqueeze(-2) @ b.mT).squeeze(-2)
        gb = a.unsqueeze(-1) @ g.unsqueeze(-2)
        return ga, gb
    if b.ndim == 1:
        ga = g.unsqueeze(-1) @ b.unsqueeze(-2)
        gb = (a.mT @ g.unsqueeze(-1)).squeeze(-1)
        return ga, gb
    return g @ b.mT, a.mT @ g


matmul = defop("matmul", _matmul, tensors=("input", "other"), kind="linalg",
               vjp=_matmul_vjp,
               jvp=lambda t_input, t_other, input, other: t_input @ other + input @ t_other)
