"""Reductions (sum, mean, ...): declarations for the registry.

dim is None, an int, or a tuple; keepdim keeps reduced dims as size 1; integer and bool sums
accumulate in int64 like PyTorch.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ._util import np_axes, reduce_dims, unreduce
from .registry import defop

__all__ = ["sum", "mean"]


def _sum_dtype(arr, dtype):
    if dtype is not None:
        return dtype.np
    if arr.dtype.kind in "biu":
        return np.int64
    return None


def _sum(input, dim=None, keepdim=False, *, dtype=None):
    axes = reduce_dims(dim, input.ndim)
    acc = _sum_dtype(input, dtype)
    if input.dtype == dt.bfloat16.np:
        r = np.sum(input.astype(np.float32), axis=np_axes(axes, input.ndim), keepdims=keepdim)
        return np.asarray(r).astype(input.dtype if acc is None else acc)
    return np.asarray(np.sum(input, axis=np_axes(axes, input.ndim), dtype=acc,
                             keepdims=keepdim))


sum = defop("sum", _sum, kind="reduction",
            vjp=lambda g, input_shape, dim, keepdim: unreduce(g, input_shape, dim, keepdim),
            jvp=lambda t_input, dim, keepdim, dtype: t_input.sum(dim, keepdim, dtype=dtype),
            scalar="+")


def _mean(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is None and input.dtype.kind in "biu":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {dt.from_numpy_dtype(input.dtype).name.capitalize()}")
    axes = reduce_dims(dim, input.ndim)
    x = input if dtype is None else input.astype(dtype.np)
    comp = x.astype(np.float32) if x.dtype == dt.bfloat16.np else x
    r = np.mean(comp, axis=np_axes(axes, x.ndim), keepdims=keepdim)
    return np.asarray(r).astype(x.dtype)


def _mean_vjp(g, input_shape, dim, keepdim):
    axes = reduce_dims(dim, len(input_shape))
    n = 1
    for a in axes:
        n *= input_shape[a]
    return unreduce(g, input_shape, dim, keepdim) / max(n, 1)


mean = defop("mean", _mean, kind="reduction", vjp=_mean_vjp,
             jvp=lambda t_input, dim, keepdim, dtype: t_input.mean(dim, keepdim, dtype=dtype),
             scalar="+")
