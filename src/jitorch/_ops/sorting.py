"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode,
quantile, nanquantile.

Ordering follows PyTorch: NaN sorts above every number (last ascending, first descending). Every
sort here is stable, which is one of the orders PyTorch allows for ties (its unstable sort may
pick other tied indices). Results with indices are `jitorch.return_types` named tuples; their
gradients go to the selected indices through `_put_along`, while full-reduction medians share
the gradient evenly among ties, as PyTorch does.
"""
from __future__ import annotations

import numpy as np

from .. import return_types
from ._quantile import nanquantile, quantile
from ._reduce_common import (check_dims_nonempty, compute_array, eq_mask, index_pick_jvp,
                             index_pick_vjp, one_dim, pt_name, public, put_along, take_along)
from .registry import defop
from .batching import via

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
           "quantile", "nanquantile"]  # quantile and nanquantile live in _quantile.py


def _no_complex_sort(input, what="Sort"):
    if input.dtype.kind == "c":
        raise RuntimeError(f"{what} does not support complex dtypes on CPU")


def _not_impl(name, input, bool_too=True):
    if input.dtype.kind == "c" or (bool_too and input.dtype == np.bool_):
        raise NotImplementedError(f'"{name}" not implemented for \'{pt_name(input.dtype)}\'')


def stable_argsort(x: np.ndarray, axis: int, descending: bool = False) -> np.ndarray:
    """Stable argsort with NaN largest; descending keeps tied elements in index order."""
    x = compute_array(x)
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64)
    n = x.shape[axis]
    r = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return (n - 1 - np.flip(r, axis)).astype(np.int64)


def _gather(x, idx, axis):
    return x.copy() if x.ndim == 0 else np.take_along_axis(x, idx, axis)


# --- sort / argsort / msort ----------------------------------------------------------------------
def _sort_impl(input, dim=-1, descending=False, stable=False):
    _no_complex_sort(input)
    axis = one_dim(dim, input.ndim, "sort")
    idx = stable_argsort(input, axis, descending)
    return _gather(input, idx, axis), idx


def _select_vjp(g, result, input_shape, dim):
    """Gradient of (values, indices) results whose indices keep the reduced dim."""
    if not input_shape:
        return g[0]
    return put_along(g[0], result[1], dim % len(input_shape), input_shape)


def _select_jvp(t_input, result, dim):
    if t_input.ndim == 0:
        return t_input, None
    return take_along(t_input, result[1], dim % t_input.ndim), None


_sort = defop("sort", _sort_impl, kind="reduction", function=False, method=False,
              vjp=lambda g, result, input_shape, dim: _select_vjp(g, result, input_shape, dim),
              jvp=lambda t_input, result, dim: _select_jvp(t_input, result, dim),
              interpreted=_NOT_YET)


def sort(input, dim=-1, descending=False, *, stable=False, out=None):
    """`torch.sort`: (values, indices) sorted along dim; NaN is largest."""
    return return_types.sort(*_sort(input, dim, descending, stable, out=out))


public(sort)


def _argsort(input, dim=-1, descending=False, *, stable=False):
    _no_complex_sort(input)
    return stable_argsort(input, one_dim(dim, input.ndim, "argsort"), descending)


argsort = defop("argsort", _argsort, kind="reduction", nondiff=True, interpreted=_NOT_YET)


def _msort(input):
    _no_complex_sort(input)
    return _gather(input, stable_argsort(input, 0), 0)


def _msort_vjp(g, input):
    if input.ndim == 0:
        return g
    return put_along(g, argsort(input, 0), 0, input.shape)


msort = defop("msort", _msort, kind="reduction", vjp=_msort_vjp,
              jvp=lambda t_input, input: t_input if input.ndim == 0 else
              take_along(t_input, argsort(input, 0), 0), interpreted=_NOT_YET,
              batch=via("sort", 0, flatten=False))


# --- topk / kthvalue ----------------------------------------------------------------------------
def _topk_impl(input, k, dim=-1, largest=True, sorted=True):
    _no_complex_sort(input, "topk")
    if input.dtype == np.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    axis = one_dim(dim, input.ndim, "topk")
    n = input.shape[axis] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    idx = stable_argsort(input, axis, descending=largest)
    if input.ndim:
        idx = np.take(idx, np.arange(k), axis=axis)
    return _gather(input, idx, axis), idx


_topk = defop("topk", _topk_impl, kind="reduction", function=False, method=False,
              vjp=lambda g, result, input_shape, dim: _select_vjp(g, result, input_shape, dim),
              jvp=lambda t_input, result, dim: _select_jvp(t_input, result, dim),
              interpreted=_NOT_YET)


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """`torch.topk`: the k largest (or smallest) elements along dim and their indices."""
    return return_types.topk(*_topk(input, k, dim, largest, sorted, out=out))


public(topk)


def _pick(input, axis, keepdim, rank_of):
    """Values/indices of the element at sorted position rank_of(sorted, order) along axis."""
    idx = stable_argsort(input, axis)
    if input.ndim == 0:
        return input.copy(), np.zeros((), np.int64)
    vals = np.take_along_axis(input, idx, axis)
    pos = rank_of(vals, idx)  # keepdims positions into the sorted axis
    sel = np.take_along_axis(idx, pos, axis)
    v = np.take_along_axis(vals, pos, axis)
    if not keepdim:
        sel, v = np.squeeze(sel, axis), np.squeeze(v, axis)
    return v, sel.astype(np.int64)


def _kthvalue_impl(input, k, dim=-1, keepdim=False):
    _not_impl("kthvalue_cpu", input)
    axis = one_dim(dim, input.ndim, "kthvalue")
    check_dims_nonempty("kthvalue", input, (axis,))
    n = input.shape[axis] if input.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    return _pick(input, axis, keepdim, lambda v, i: np.full(
        v.shape[:axis] + (1,) + v.shape[axis + 1:], k - 1))


def _keep_vjp(g, result, input_shape, dim, keepdim):
    """Gradient of (values, indices) reductions over one dim (median(dim), mode, ...)."""
    nd = len(input_shape)
    if nd == 0:
        return g[0]
    axis = dim % nd
    gv, idx = g[0], result[1]
    if not keepdim:
        gv, idx = gv.unsqueeze(axis), idx.unsqueeze(axis)
    return put_along(gv, idx, axis, input_shape)


def _keep_jvp(t_input, result, dim, keepdim):
    vals, idx = result
    if t_input.ndim == 0:
        return t_input, None
    axis = dim % t_input.ndim
    if not keepdim:
        idx = idx.unsqueeze(axis)
    return take_along(t_input, idx, axis).reshape(vals.shape), None


_REDUCE_SEL = dict(kind="reduction", function=False, method=False,
                   vjp=lambda g, result, input_shape, dim, keepdim:
                   _keep_vjp(g, result, input_shape, dim, keepdim),
                   jvp=lambda t_input, result, dim, keepdim:
                   _keep_jvp(t_input, result, dim, keepdim))

_kthvalue = defop("kthvalue", _kthvalue_impl, **_REDUCE_SEL, interpreted=_NOT_YET)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """`torch.kthvalue`: the k-th smallest element along dim and its index."""
    return return_types.kthvalue(*_kthvalue(input, k, dim, keepdim, out=out))


public(kthvalue)


# --- median / nanmedian --------------------------------------------------------------------------
def _median_rank(ignore_nan):
    def rank_of(vals, idx, axis):
        nan = np.isnan(vals) if vals.dtype.kind == "f" else np.zeros(vals.shape, bool)
        valid = vals.shape[axis] - nan.sum(axis, keepdims=True)
        if ignore_nan:
            return np.maximum(valid - 1, 0) // 2
        n = vals.shape[axis]
        return np.where(valid < n, valid, (n - 1) // 2)  # any NaN: the first NaN (sorted last)
    return rank_of


def _median_dim(name, ignore_nan):
    def impl(input, dim, keepdim=False):
        _not_impl("median_cpu" if name == "median" else "nanmedian_cpu", input)
        axis = one_dim(dim, input.ndim, name)
        check_dims_nonempty(name, input, (axis,))
        x = compute_array(input)
        rank = _median_rank(ignore_nan)
        v, i = _pick(x, axis, keepdim, lambda vals, idx: rank(vals, idx, axis))
        if not ignore_nan and input.ndim and x.dtype.kind == "f":
            # a NaN median reports the first NaN along the dim, like PyTorch
            nan = np.isnan(x)
            first = np.argmax(nan, axis=axis, keepdims=keepdim)
            i = np.where(nan.any(axis=axis, keepdims=keepdim), first, i)
        return np.asarray(v).astype(input.dtype), np.asarray(i, np.int64)
    return impl


def _median_all(ignore_nan, name):
    def impl(input):
        _not_impl("median_cpu" if name == "median" else "nanmedian_cpu", input)
        x = compute_array(input).reshape(-1)
        if x.dtype.kind == "f":
            nan = np.isnan(x)
            if not ignore_nan and nan.any():
                return np.asarray(np.nan, input.dtype)
            x = x[~nan]
        if x.size == 0:
            return np.asarray(np.nan, input.dtype)
        return np.asarray(np.sort(x)[(x.size - 1) // 2]).astype(input.dtype)
    return impl


def _even_all_vjp(g, input, result):
    mask = eq_mask(input, result)
    return g * mask / mask.sum()


def _even_all_jvp(t_input, input, result):
    mask = eq_mask(input, result)
    return (t_input * mask).sum() / mask.sum()


_median_full = defop("median", _median_all(False, "median"), kind="reduction", function=False,
                     method=False, vjp=_even_all_vjp, jvp=_even_all_jvp, interpreted=_NOT_YET,
                     batch=via("_median_dim", 0))
_nanmedian_full = defop("nanmedian", _median_all(True, "nanmedian"), kind="reduction",
                        function=False, method=False, vjp=_even_all_vjp, jvp=_even_all_jvp,
                        interpreted=_NOT_YET,
                        batch=via("_nanmedian_dim", 0))
_median_d = defop("_median_dim", _median_dim("median", False), **_REDUCE_SEL, interpreted=_NOT_YET)
_nanmedian_d = defop("_nanmedian_dim", _median_dim("nanmedian", True), **_REDUCE_SEL,
                     interpreted=_NOT_YET)


def _median_overload(name, full, by_dim, nt):
    def fn(input, dim=None, keepdim=False, *, out=None):
        if dim is None:
            return full(input, out=out)
        return nt(*by_dim(input, dim, keepdim, out=out))
    fn.__name__ = name
    fn.__doc__ = (f"`torch.{name}`: {name}(input) -> the lower median (Tensor); "
                  f"{name}(input, dim, keepdim=False) -> (values, indices).")
    return public(fn)


median = _median_overload("median", _median_full, _median_d, return_types.median)
nanmedian = _median_overload("nanmedian", _nanmedian_full, _nanmedian_d,
                             return_types.nanmedian)


# --- mode ----------------------------------------------------------------------------------------
def _mode_impl(input, dim=-1, keepdim=False):
    _not_impl("mode_cpu", input, bool_too=False)
    axis = one_dim(dim, input.ndim, "mode")
    check_dims_nonempty("mode", input, (axis,))
    if input.ndim == 0:
        return input.copy(), np.zeros((), np.int64)
    x = np.moveaxis(compute_array(input), axis, -1)
    order = np.argsort(x, axis=-1, kind="stable")
    s = np.take_along_axis(x, order, -1)
    n = s.shape[-1]
    pos = np.arange(n)
    start = np.ones(s.shape, bool)
    start[..., 1:] = s[..., 1:] != s[..., :-1]
    end = np.ones(s.shape, bool)
    end[..., :-1] = start[..., 1:]
    first = np.maximum.accumulate(np.where(start, pos, 0), -1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(end, pos, n), -1), -1), -1)
    best = np.argmax(last - first, axis=-1)[..., None]  # longest run; ties: smallest value
    v = np.take_along_axis(s, best, -1)
    i = np.take_along_axis(order, np.take_along_axis(last, best, -1), -1)  # latest occurrence
    v, i = np.moveaxis(v, -1, axis), np.moveaxis(i, -1, axis)
    if not keepdim:
        v, i = np.squeeze(v, axis), np.squeeze(i, axis)
    return v.astype(input.dtype), i.astype(np.int64)


_mode = defop("mode", _mode_impl, **_REDUCE_SEL, interpreted=_NOT_YET)


def mode(input, dim=-1, keepdim=False, *, out=None):
    """`torch.mode`: the most frequent value along dim (smallest on ties) and an index of it."""
    return return_types.mode(*_mode(input, dim, keepdim, out=out))


public(mode)

