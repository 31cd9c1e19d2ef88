"""Moments and norms: var, std, var_mean, std_mean, norm.

var/std accept PyTorch's overloads in one signature: `var(x, dim, unbiased, keepdim)`,
`var(x, unbiased)` (a bool in the dim position) and `var(x, dim, *, correction=, keepdim=)`.
Complex inputs give real results (|x - mean|^2). `norm` follows `torch.norm`: 'fro' and numeric
p are vector norms over dim (every dim by default), 'nuc' is delegated to `linalg.matrix_norm`.
"""
from __future__ import annotations

import math
import sys
import warnings

import numpy as np

from .. import _dtype as dt
from ._reduce_common import (axes_of, compute_array, eq_mask, expand_back, np_axes, powabs,
                             pt_name, public, sign_mask)
from .registry import defop

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__ = ["var", "std", "var_mean", "std_mean", "norm"]


def _check_float(name, np_dtype):
    if np_dtype.kind not in "fc" and not dt.is_bfloat16_np(np_dtype):
        what = "std and var" if name in ("std", "var") else name
        raise RuntimeError(f"{what} only support floating point and complex dtypes")


def _moment_args(name, ndim, dim, unbiased, correction):
    """(axes, correction) from PyTorch's overloaded arguments."""
    if isinstance(dim, bool):  # var(x, unbiased)
        if unbiased is not None:
            raise TypeError(f"{name}() received an invalid combination of arguments")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments - got both "
                        "unbiased and correction")
    corr = correction if correction is not None else (0 if unbiased is False else 1)
    return axes_of(dim, ndim), corr


def _count(shape, axes) -> int:
    if not shape:
        return 1  # a 0-d tensor reduced over dim 0 has one element
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _var_np(name, input, dim, unbiased, keepdim, correction):
    """(var, mean) arrays in the input's dtype (real dtype for var of complex)."""
    _check_float(name, input.dtype)
    axes, corr = _moment_args(name, input.ndim, dim, unbiased, correction)
    x = compute_array(input)
    ax = np_axes(axes, x.ndim)
    n = _count(x.shape, axes)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.sum(x, axis=ax, keepdims=True) / n
        d = x - m
        ss = np.sum((d * np.conj(d)).real if x.dtype.kind == "c" else d * d, axis=ax,
                    keepdims=keepdim)
        if n - corr <= 0:
            warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be "
                          "strictly less than the reduction factor (input numel divided by "
                          "output numel).", UserWarning, stacklevel=4)
        v = ss / max(n - corr, 0)
    if not keepdim and x.ndim:
        m = np.squeeze(m, axis=axes)
    real = dt.from_numpy_dtype(input.dtype).to_real().np
    return np.asarray(v).astype(real), np.asarray(m).astype(input.dtype)


def _dvar(input, dim, unbiased, correction):
    """(d var / d input elementwise, reduced axes); the incoming gradient multiplies it."""
    axes, corr = _moment_args("var", input.ndim, dim, unbiased, correction)
    n = _count(input.shape, axes)
    m = input.mean(axes, True) if input.ndim else input
    scale = 2.0 / (n - corr) if n - corr > 0 else math.inf
    return (input - m) * scale, axes


# --- var / std -----------------------------------------------------------------------------------
def _var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_np("var", input, dim, unbiased, keepdim, correction)[0]


def _var_vjp(g, input, dim, unbiased, keepdim, correction):
    d, axes = _dvar(input, dim, unbiased, correction)
    return expand_back(g, input.shape, axes, keepdim) * d


def _var_jvp(t_input, input, dim, unbiased, keepdim, correction):
    d, axes = _dvar(input, dim, unbiased, correction)
    return (t_input * d).sum(axes, keepdim)


var = defop("var", _var, kind="reduction", vjp=_var_vjp, jvp=_var_jvp, interpreted=_NOT_YET)


def _std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    v = _var_np("std", input, dim, unbiased, keepdim, correction)[0]
    return np.sqrt(compute_array(v)).astype(v.dtype)


def _std_vjp(g, input, result, dim, unbiased, keepdim, correction):
    d, axes = _dvar(input, dim, unbiased, correction)
    return expand_back(g / (result * 2), input.shape, axes, keepdim) * d


def _std_jvp(t_input, input, result, dim, unbiased, keepdim, correction):
    d, axes = _dvar(input, dim, unbiased, correction)
    return (t_input * d).sum(axes, keepdim) / (result * 2)


std = defop("std", _std, kind="reduction", vjp=_std_vjp, jvp=_std_jvp, interpreted=_NOT_YET)


# --- var_mean / std_mean (one pass, two results) -------------------------------------------------
def _var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_np("var_mean", input, dim, unbiased, keepdim, correction)


def _std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    v, m = _var_np("std_mean", input, dim, unbiased, keepdim, correction)
    return np.sqrt(compute_array(v)).astype(v.dtype), m


def _pair_vjp(is_std):
    def vjp(g, input, result, dim, unbiased, keepdim, correction):
        d, axes = _dvar(input, dim, unbiased, correction)
        gv, gm = g
        out = None
        if gv is not None:
            gv = gv / (result[0] * 2) if is_std else gv
            out = expand_back(gv, input.shape, axes, keepdim) * d
        if gm is not None:
            gmean = expand_back(gm, input.shape, axes, keepdim) / max(
                _count(input.shape, axes), 1)
            out = gmean if out is None else out + gmean
        return out
    return vjp


def _pair_jvp(is_std):
    def jvp(t_input, input, result, dim, unbiased, keepdim, correction):
        d, axes = _dvar(input, dim, unbiased, correction)
        tv = (t_input * d).sum(axes, keepdim)
        if is_std:
            tv = tv / (result[0] * 2)
        return tv, t_input.mean(axes, keepdim)
    return jvp


var_mean = defop("var_mean", _var_mean, kind="reduction", method=False,
                 vjp=_pair_vjp(False), jvp=_pair_jvp(False), interpreted=_NOT_YET)
std_mean = defop("std_mean", _std_mean, kind="reduction", method=False,
                 vjp=_pair_vjp(True), jvp=_pair_jvp(True), interpreted=_NOT_YET)


# --- norm ----------------------------------------------------------------------------------------
def _norm_p(p):
    if p is None or p == "fro":
        return 2.0
    if isinstance(p, str):
        raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
    return float(p)


def _norm_impl(input, p="fro", dim=None, keepdim=False, dtype=None):
    if input.dtype.kind not in "fc" and not dt.is_bfloat16_np(input.dtype):
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {pt_name(input.dtype)}")
    x = input if dtype is None else input.astype(dtype.np)
    real = dt.from_numpy_dtype(x.dtype).to_real().np
    q = _norm_p(p)
    axes = axes_of(dim, x.ndim)
    ax = np_axes(axes, x.ndim)
    a = np.abs(compute_array(x))
    if math.isinf(q) and (a.size == 0 or any(x.shape[i] == 0 for i in axes)):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p} norm on an empty tensor "
                           "because the operation does not have an identity")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if q == math.inf:
            r = np.max(a, axis=ax, keepdims=keepdim)
        elif q == -math.inf:
            r = np.min(a, axis=ax, keepdims=keepdim)
        elif q == 0:
            r = np.sum(a != 0, axis=ax, keepdims=keepdim)
        elif q == 1:
            r = np.sum(a, axis=ax, keepdims=keepdim)
        elif q == 2:
            r = np.sqrt(np.sum(a * a, axis=ax, keepdims=keepdim))
        else:
            r = np.power(np.sum(np.power(a, q), axis=ax, keepdims=keepdim), 1.0 / q)
    return np.asarray(r).astype(real)


def _dnorm(input, r, q, axes):
    """d norm / d input, elementwise; r is the norm broadcast to the input's shape."""
    if q == 0:
        return input * 0
    if math.isinf(q):  # shared evenly among the tied extreme |x|
        mask = eq_mask(powabs(input, 1.0), r)
        cnt = mask.sum(axes, True) if input.ndim else mask
        return sign_mask(input) * mask / cnt
    if q == 1:
        return sign_mask(input)
    safe = r + eq_mask(r, 0.0)  # a zero norm has zero gradient (as in PyTorch)
    if q == 2:
        return input / safe
    return sign_mask(input) * powabs(input, q - 1) / powabs(safe, q - 1)


def _norm_rule_parts(input, result, p, dim, keepdim):
    axes = axes_of(dim, input.ndim)
    r = expand_back(result, input.shape, axes, keepdim)
    return _dnorm(input, r, _norm_p(p), axes), axes


def _norm_vjp(g, input, result, p, dim, keepdim):
    d, axes = _norm_rule_parts(input, result, p, dim, keepdim)
    return expand_back(g, input.shape, axes, keepdim) * d


def _norm_jvp(t_input, input, result, p, dim, keepdim, dtype):
    d, axes = _norm_rule_parts(input, result, p, dim, keepdim)
    return (t_input * d).sum(axes, keepdim)


_norm = defop("norm", _norm_impl,
              autocast={"cuda": "fp32"}, kind="reduction", vjp=_norm_vjp, jvp=_norm_jvp,
              function=False, method=False, interpreted=_NOT_YET)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """`torch.norm`: vector norms ('fro' or a number p) over dim; 'nuc' via linalg."""
    if p == "nuc":
        return sys.modules["jitorch"].linalg.matrix_norm(input, "nuc", dim if dim is not None
                                                         else (-2, -1), keepdim, dtype=dtype,
                                                         out=out)
    return _norm(input, p, dim, keepdim, dtype, out=out)


public(norm)
