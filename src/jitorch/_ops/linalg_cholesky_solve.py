"""`cholesky_solve(B, L, upper=False)`: X with A X = B, for A = L L^H (or U^H U when upper).

A composite: A is formed from the factor and handed to the general solve, so the gradient with
respect to the factor is the full derivative of X(L) = (L L^H)^{-1} B, which is what PyTorch's
`cholesky_solve_backward` computes (-(gB X^H + X gB^H) L, gB = A^{-1} gX).
"""
from __future__ import annotations

from .._tensor import Tensor
from .. import _autocast

__all__ = ["cholesky_solve"]


@_autocast.policy({"cpu": "fp32"})
def cholesky_solve(input, input2, upper=False):
    from .. import linalg
    b, f = input, input2
    if b.ndim < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {b.ndim} dimensions "
                           f"instead")
    if f.ndim < 2:
        raise RuntimeError(f"u should have at least 2 dimensions, but has {f.ndim} dimensions "
                           f"instead")
    if f.shape[-1] != f.shape[-2] or f.shape[-1] != b.shape[-2]:
        raise RuntimeError(f"Incompatible matrix sizes for cholesky_solve: each A matrix is "
                           f"{f.shape[-2]} by {f.shape[-1]} but each b matrix is {b.shape[-2]} "
                           f"by {b.shape[-1]}")
    if b.dtype != f.dtype:
        raise RuntimeError(f"Expected b and A to have the same dtype, but found b of type "
                           f"{b.dtype.name} and A of type {f.dtype.name} instead.")
    fh = f.transpose(-2, -1).conj() if f.is_complex() else f.transpose(-2, -1)
    a = fh.matmul(f) if upper else f.matmul(fh)
    return linalg.solve(a, b)


def _cholesky_solve_method(self, input2, upper=False):
    return cholesky_solve(self, input2, upper)


Tensor.cholesky_solve = _cholesky_solve_method
