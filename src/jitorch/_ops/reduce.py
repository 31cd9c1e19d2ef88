"""Sum-like reductions (sum, mean, nansum, nanmean, prod, logsumexp) and the boolean/count
reductions (all, any, count_nonzero): declarations for the registry.

dim is None, an int, or a sequence (an empty one means every dim, as in PyTorch); keepdim keeps
reduced dims as size 1. Integer and bool sums/products accumulate in int64 like PyTorch; half
types accumulate in float32. Max/min live in `minmax.py`, moments and norms in `moments.py`.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import _dtype as dt
from ._reduce_common import (axes_of, compute_array, expand_back, notnan_mask, np_axes,
                             one_dim, pt_name)
from . import infer
from .registry import defop

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet (sum, mean, prod, amax, amin are lowered)"
_ROWS = ("compiled only inside a row region (passes/fuse_rows.py: a float reduction over the "
         "last dim); elsewhere interpreted")

__all__ = ["sum", "mean", "nansum", "nanmean", "prod", "logsumexp", "all", "any",
           "count_nonzero"]


def _count(shape, axes) -> int:
    if not shape:
        return 1  # a 0-d tensor reduced over dim 0 has one element
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _acc_dtype(arr, dtype):
    """The dtype a sum accumulates and returns in: dtype=, else int64 for integers/bool."""
    if dtype is not None:
        return dtype.np
    if arr.dtype.kind in "biu":
        return np.dtype(np.int64)
    return arr.dtype


def _summed(input, dim, keepdim, dtype, np_fn):
    out_np = _acc_dtype(input, dtype)
    x = input if input.dtype == out_np else input.astype(out_np)
    axes = axes_of(dim, input.ndim)
    r = np_fn(compute_array(x), axis=np_axes(axes, x.ndim), keepdims=keepdim)
    return np.asarray(r).astype(out_np, copy=False)


# --- the compiled blocked sum of large float tensors ------------------------------------------
# From this many elements a full float sum runs the compiled blocked sum: NumPy's pairwise float
# sum is not vectorised (1M float32: 192 us, PyTorch 67, the kernel ~55; bench/eager_overhead.py
# 2026-12-06); the kernel is faster from a few hundred elements on, but a smaller sum never asks
# for its compile.
BLOCKED_MIN = 4096
_SUM_KEYS = {np.dtype(np.float32): ("sum", "float32"), np.dtype(np.float64): ("sum", "float64")}
_kernels = None  # _ops/_sum_kernels.py, once a large sum imported it (it imports Numba)


def _blocked_total(x, dim, keepdim):
    """`x.sum(dim, keepdim)` in x's dtype by the compiled blocked sum (_ops/_sum_kernels.py: the
    compiled reductions' algorithm) where it serves: a sum of every element (`dim` None) of an
    ndarray of at least BLOCKED_MIN elements that the kernel is typed for (writeable, aligned,
    contiguous, native float32/float64), the kernel loaded. None where NumPy sums it (meanwhile
    jitorch's compile worker compiles the kernel; under `JITORCH_COMPILE=sync` it compiles in
    the call: script/runtime/worker_loops.py)."""
    global _kernels
    if dim is not None or type(x) is not np.ndarray or x.size < BLOCKED_MIN:
        return None
    key = _SUM_KEYS.get(x.dtype)
    flags = x.flags
    if key is None or not (flags.writeable and flags.aligned and
                           (flags.c_contiguous or flags.f_contiguous)):
        return None
    if _kernels is None:
        from . import _sum_kernels
        _kernels = _sum_kernels
    if not _kernels.LOOPS.ready(key):
        return None
    total = x.dtype.type(_kernels.blocked_total(x.ravel(order="K")))
    return np.asarray(total).reshape((1,) * x.ndim if keepdim else ())


# --- sum / mean ----------------------------------------------------------------------------------
def _sum(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is None and input.dtype.kind == "f" and input.itemsize > 2 and \
            type(input) is np.ndarray:
        t = _blocked_total(input, dim, keepdim)
        if t is not None:
            return t
        # fast path for float32/64: np.add.reduce skips np.sum's Python-level dispatch
        axis = None if dim is None else np_axes(axes_of(dim, input.ndim), input.ndim)
        return np.asarray(_add_reduce(input, axis=axis, keepdims=keepdim))
    return _summed(input, dim, keepdim, dtype, np.sum)


_add_reduce = np.add.reduce


def _sum_vjp(g, input_shape, dim, keepdim):
    return expand_back(g, input_shape, axes_of(dim, len(input_shape)), keepdim)


sum = defop("sum", _sum, autocast={"cuda": "fp32"}, kind="reduction", vjp=_sum_vjp,
            jvp=lambda t_input, dim, keepdim, dtype: t_input.sum(dim, keepdim, dtype=dtype),
            scalar="+", infer=infer.Reduction(ints="long"))


def _mean(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is None and input.dtype.kind in "biu":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {pt_name(input.dtype)}")
    x = input if dtype is None else input.astype(dtype.np)
    axes = axes_of(dim, x.ndim)
    s = _blocked_total(x, dim, keepdim)
    if s is None and type(x) is np.ndarray and x.dtype.kind == "f" and x.itemsize > 2:
        # as np.sum, less its Python layer
        s = _add_reduce(x, axis=np_axes(axes, x.ndim), keepdims=keepdim)
    elif s is None:
        s = np.sum(compute_array(x), axis=np_axes(axes, x.ndim), keepdims=keepdim)
    n = _count(x.shape, axes)
    if n:  # only 0 / 0 warns: np.errstate (~1 us) just for an empty reduction
        r = np.true_divide(s, n)
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            r = np.true_divide(s, n)
    return np.asarray(r).astype(x.dtype, copy=False)


def _mean_vjp(g, input_shape, dim, keepdim):
    axes = axes_of(dim, len(input_shape))
    return expand_back(g, input_shape, axes, keepdim) / builtins.max(_count(input_shape, axes), 1)


mean = defop("mean", _mean, kind="reduction", vjp=_mean_vjp,
             jvp=lambda t_input, dim, keepdim, dtype: t_input.mean(dim, keepdim, dtype=dtype),
             scalar="+", infer=infer.Reduction(ints="error"))


# --- nansum / nanmean ----------------------------------------------------------------------------
def _nansum(input, dim=None, keepdim=False, *, dtype=None):
    if input.dtype.kind == "c":
        raise RuntimeError("nansum on CPU does not support complex inputs")
    return _summed(input, dim, keepdim, dtype, np.nansum)


def _nansum_vjp(g, input, dim, keepdim):
    return expand_back(g, input.shape, axes_of(dim, input.ndim), keepdim) * notnan_mask(input)


def _nansum_jvp(t_input, input, dim, keepdim, dtype):
    return (t_input * notnan_mask(input)).sum(dim, keepdim, dtype=dtype)


nansum = defop("nansum", _nansum, kind="reduction", vjp=_nansum_vjp, jvp=_nansum_jvp,
               interpreted=_NOT_YET)


def _nanmean(input, dim=None, keepdim=False, *, dtype=None):
    if input.dtype.kind not in "fc" and not dt.is_bfloat16_np(input.dtype):
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype "
                           f"but got {pt_name(input.dtype)}")
    x = input if dtype is None else input.astype(dtype.np)
    axes = axes_of(dim, x.ndim)
    c = compute_array(x)
    s = np.nansum(c, axis=np_axes(axes, x.ndim), keepdims=keepdim)
    n = np.sum(~np.isnan(c), axis=np_axes(axes, x.ndim), keepdims=keepdim)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(s / n).astype(x.dtype, copy=False)


def _nanmean_vjp(g, input, dim, keepdim):
    axes = axes_of(dim, input.ndim)
    mask = notnan_mask(input)
    count = mask.sum(axes, True)
    return expand_back(g, input.shape, axes, keepdim) * mask / count


def _nanmean_jvp(t_input, input, dim, keepdim, dtype):
    mask = notnan_mask(input)
    return (t_input * mask).sum(dim, keepdim, dtype=dtype) / mask.sum(dim, keepdim)


nanmean = defop("nanmean", _nanmean, kind="reduction", vjp=_nanmean_vjp, jvp=_nanmean_jvp,
                interpreted=_NOT_YET)


# --- prod ----------------------------------------------------------------------------------------
def _prod_axis(input, dim):
    return None if dim is None else one_dim(dim, input.ndim, "prod")


def _prod(input, dim=None, keepdim=False, *, dtype=None):
    axis = _prod_axis(input, dim)
    out_np = _acc_dtype(input, dtype)
    x = compute_array(input.astype(out_np, copy=False))
    if axis is None or input.ndim == 0:
        r = np.prod(x)
        if keepdim and axis is None:
            r = np.reshape(r, (1,) * input.ndim)
    else:
        r = np.prod(x, axis=axis, keepdims=keepdim)
    return np.asarray(r).astype(out_np, copy=False)


def _prod_others_impl(input, dim):
    """Product of all other elements along dim (None: over everything); safe with zeros."""
    if dim is None or input.ndim == 0:
        flat = input.reshape(-1)
        return _prod_others_impl(flat, 0).reshape(input.shape)
    x = np.moveaxis(input, dim, -1)
    ones = np.ones(x.shape[:-1] + (1,), x.dtype)
    left = np.cumprod(np.concatenate([ones, x[..., :-1]], -1), -1)
    right = np.flip(np.cumprod(np.flip(np.concatenate([x[..., 1:], ones], -1), -1), -1), -1)
    return np.moveaxis(left * right, -1, dim)


def _prod_others_vjp(g, input, result, dim):
    # F_i = P / x_i: dF_i/dx_k = F_k / x_i for k != i (exact away from zeros of the input)
    gx = g / input
    s = gx.sum(dim, True) if dim is not None else gx.sum()
    return result * (s - gx)


_prod_others = defop("_prod_others", _prod_others_impl, kind="reduction", method=False,
                     vjp=_prod_others_vjp, interpreted=_NOT_YET)


def _prod_vjp(g, input, input_shape, dim, keepdim):
    axis = _prod_axis(input, dim)
    if axis is None:
        return expand_back(g, input_shape, tuple(range(len(input_shape))), keepdim) * \
            _prod_others(input, None)
    return expand_back(g, input_shape, (axis,), keepdim) * _prod_others(input, axis)


def _prod_jvp(t_input, input, dim, keepdim, dtype):
    axis = _prod_axis(input, dim)
    r = (t_input * _prod_others(input, axis))
    if axis is None:
        r = r.sum()
        return r.reshape((1,) * input.ndim) if keepdim else r
    return r.sum(axis, keepdim)


prod = defop("prod", _prod, kind="reduction", vjp=_prod_vjp, jvp=_prod_jvp, scalar="*",
             infer=infer.Reduction(ints="long"), autocast="fp32")


# --- logsumexp -----------------------------------------------------------------------------------
def _logsumexp(input, dim, keepdim=False):
    x = input
    if x.dtype.kind in "biu":
        x = x.astype(dt.get_default_dtype().np)
    out_np = x.dtype
    x = compute_array(x)
    axes = axes_of(dim, x.ndim)
    ax = np_axes(axes, x.ndim)
    if x.size == 0:
        m = np.zeros(np.sum(x, axis=ax, keepdims=True).shape, x.real.dtype)
    else:
        m = np.max(x.real, axis=ax, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)  # all -inf (or an inf) must not give inf - inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = np.sum(np.exp(x - m), axis=ax, keepdims=True)
        r = np.log(s) + m
    if not keepdim and x.ndim:
        r = np.squeeze(r, axis=axes)
    return np.asarray(r).astype(out_np, copy=False)


def _logsumexp_vjp(g, input, result, dim, keepdim):
    axes = axes_of(dim, input.ndim)
    r = expand_back(result, input.shape, axes, keepdim)
    return expand_back(g, input.shape, axes, keepdim) * (input - r).exp()


def _logsumexp_jvp(t_input, input, result, dim, keepdim):
    axes = axes_of(dim, input.ndim)
    r = expand_back(result, input.shape, axes, keepdim)
    return (t_input * (input - r).exp()).sum(axes, keepdim)


logsumexp = defop("logsumexp", _logsumexp,
                  autocast={"cuda": "fp32"}, kind="reduction", vjp=_logsumexp_vjp,
                  jvp=_logsumexp_jvp, infer=infer.Reduction(floats_only=True),
                  interpreted=_ROWS)


# --- all / any / count_nonzero (never differentiable) -------------------------------------------
def _bool_reduce(np_fn, input, dim, keepdim):
    if isinstance(dim, (list, tuple)) and len(dim) == 0:
        r = input != 0  # PyTorch: all/any over no dims is an elementwise test
    else:
        axes = axes_of(dim, input.ndim)
        r = np_fn(input != 0, axis=np_axes(axes, input.ndim), keepdims=keepdim)
    # uint8 inputs keep uint8 results (a PyTorch legacy rule)
    return np.asarray(r).astype(np.uint8 if input.dtype == np.uint8 else np.bool_)


def _all(input, dim=None, keepdim=False):
    return _bool_reduce(np.all, input, dim, keepdim)


def _any(input, dim=None, keepdim=False):
    return _bool_reduce(np.any, input, dim, keepdim)


all = defop("all", _all, kind="reduction", nondiff=True, scalar="and", interpreted=_NOT_YET)
any = defop("any", _any, kind="reduction", nondiff=True, scalar="or", interpreted=_NOT_YET)


def _count_nonzero(input, dim=None):
    axes = axes_of(dim, input.ndim)
    return np.asarray(np.count_nonzero(input, axis=np_axes(axes, input.ndim))).astype(np.int64)


count_nonzero = defop("count_nonzero", _count_nonzero, kind="reduction", nondiff=True,
                      interpreted=_NOT_YET)
