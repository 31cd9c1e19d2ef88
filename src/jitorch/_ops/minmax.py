"""Max/min reductions: amax, amin, aminmax, max, min, argmax, argmin.

`max`/`min` are PyTorch overloads, so their public functions are thin wrappers: `max(x)` is a
full reduction (op "max"), `max(x, dim, keepdim=False)` returns
`jitorch.return_types.max(values, indices)` (op "_max_dim"), and `max(x, other)` is
`jitorch.maximum`. Gradients follow PyTorch: full reductions and amax/amin/aminmax share the
gradient evenly among tied extrema; `max(x, dim)` sends it to the chosen index. NaN propagates
(and is the chosen element); ties pick the first index.
"""
from __future__ import annotations

import sys

import numpy as np

from .. import return_types
from .._tensor import Tensor
from ._reduce_common import (axes_of, check_dims_nonempty, check_full_nonempty, eq_mask,
                             expand_back, index_pick_jvp, index_pick_vjp, np_axes, one_dim,
                             pt_name, public)
from . import infer
from .registry import defop
from .batching import via

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet (amax and amin are lowered)"

__all__ = ["amax", "amin", "aminmax", "max", "min", "argmax", "argmin"]


def _no_complex(name, input, msg=None):
    if input.dtype.kind == "c":
        if msg is None:
            raise RuntimeError(f"{name}(): does not support complex input")
        raise NotImplementedError(f'"{msg}" not implemented for \'{pt_name(input.dtype)}\'')


def _extreme(np_fn, name, input, dim, keepdim):
    axes = axes_of(dim, input.ndim)
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0) or \
            len(axes) == input.ndim:
        check_full_nonempty(name, input)
    check_dims_nonempty(name, input, axes)
    return np.asarray(np_fn(input, axis=np_axes(axes, input.ndim), keepdims=keepdim))


def _even_vjp(g, input, result, dim, keepdim, nan_equal=True):
    """Gradient of a value-selecting full/multi-dim reduction: shared evenly among ties.

    max()/min() send it to NaN extrema (nan_equal); amax/amin/aminmax compare with ==, so a NaN
    extremum gives NaN gradients for its slice, exactly as PyTorch does."""
    axes = axes_of(dim, input.ndim)
    mask = eq_mask(input, expand_back(result, input.shape, axes, keepdim), nan_equal)
    count = mask.sum(axes, True) if input.ndim else mask
    return expand_back(g, input.shape, axes, keepdim) * mask / count


def _even_jvp(t_input, input, result, dim, keepdim, nan_equal=True):
    axes = axes_of(dim, input.ndim)
    mask = eq_mask(input, expand_back(result, input.shape, axes, keepdim), nan_equal)
    if not input.ndim:
        return t_input * mask / mask
    return (t_input * mask).sum(axes, keepdim) / mask.sum(axes, keepdim)


def _amax_vjp(g, input, result, dim, keepdim):
    return _even_vjp(g, input, result, dim, keepdim, False)


def _amax_jvp(t_input, input, result, dim, keepdim):
    return _even_jvp(t_input, input, result, dim, keepdim, False)


def _amax(input, dim=(), keepdim=False):
    _no_complex("amax", input, "max_values_cpu")
    return _extreme(np.max, "amax", input, dim, keepdim)


def _amin(input, dim=(), keepdim=False):
    _no_complex("amin", input, "min_values_cpu")
    return _extreme(np.min, "amin", input, dim, keepdim)


amax = defop("amax", _amax, kind="reduction", vjp=_amax_vjp, jvp=_amax_jvp, scalar="max",
             infer=infer.Reduction())
amin = defop("amin", _amin, kind="reduction", vjp=_amax_vjp, jvp=_amax_jvp, scalar="min",
             infer=infer.Reduction())


# --- aminmax -------------------------------------------------------------------------------------
def _aminmax_impl(input, *, dim=None, keepdim=False):
    _no_complex("aminmax", input, "aminmax_cpu")
    if dim is None:
        if input.size == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        lo, hi = np.min(input), np.max(input)
        if keepdim:
            lo, hi = (np.reshape(v, (1,) * input.ndim) for v in (lo, hi))
        return np.asarray(lo), np.asarray(hi)
    axes = (one_dim(dim, input.ndim, "aminmax"),)
    if input.ndim and input.shape[axes[0]] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {axes[0]} to have non-zero size.")
    ax = np_axes(axes, input.ndim)
    return (np.asarray(np.min(input, axis=ax, keepdims=keepdim)),
            np.asarray(np.max(input, axis=ax, keepdims=keepdim)))


def _aminmax_vjp(g, input, result, dim, keepdim):
    out = None
    for gi, ri in zip(g, result):
        if gi is not None:
            d = _even_vjp(gi, input, ri, dim, keepdim, False)
            out = d if out is None else out + d
    return out


def _aminmax_jvp(t_input, input, result, dim, keepdim):
    return tuple(_even_jvp(t_input, input, r, dim, keepdim, False) for r in result)


_aminmax = defop("aminmax", _aminmax_impl, kind="reduction", vjp=_aminmax_vjp,
                 jvp=_aminmax_jvp, function=False, method=False, interpreted=_NOT_YET)


def aminmax(input, *, dim=None, keepdim=False, out=None):
    """`torch.aminmax`: (min, max) named tuple over dim (or everything)."""
    return return_types.aminmax(*_aminmax(input, dim=dim, keepdim=keepdim, out=out))


public(aminmax)


# --- max / min full reduction and with dim -------------------------------------------------------
def _full(np_fn, name):
    def impl(input):
        _no_complex(name, input, f"{name}_all")
        check_full_nonempty(name, input)
        return np.asarray(np_fn(input))
    return impl


_max_all = defop("max", _full(np.max, "max"), kind="reduction", function=False, method=False,
                 vjp=lambda g, input, result: _even_vjp(g, input, result, None, False),
                 jvp=lambda t_input, input, result: _even_jvp(t_input, input, result, None,
                                                              False), interpreted=_NOT_YET,
                 batch=via("amax"), infer=infer.ranked(0))
_min_all = defop("min", _full(np.min, "min"), kind="reduction", function=False, method=False,
                 vjp=lambda g, input, result: _even_vjp(g, input, result, None, False),
                 jvp=lambda t_input, input, result: _even_jvp(t_input, input, result, None,
                                                              False), interpreted=_NOT_YET,
                 batch=via("amin"), infer=infer.ranked(0))


def _arg_extreme(np_arg, input, axis, keepdim):
    """Index of the first extremum along axis; NaN counts as the extremum."""
    if input.ndim == 0:
        return np.asarray(0, np.int64)
    if input.dtype.kind == "f":  # NumPy's argmax/argmin already take the first NaN
        if type(input) is np.ndarray:  # the method: np.argmax's dispatch layer costs ~1 us
            idx = (input.argmax if np_arg is np.argmax else input.argmin)(axis=axis,
                                                                           keepdims=True)
        else:
            idx = np_arg(input, axis=axis, keepdims=True)
    elif input.dtype.kind == "V" or input.dtype.kind == "c":
        nan = np.isnan(input)
        idx = np_arg(np.where(nan, 0, input), axis=axis, keepdims=True)
        if nan.any():
            has = nan.any(axis=axis, keepdims=True)
            idx = np.where(has, np.argmax(nan, axis=axis, keepdims=True), idx)
    else:
        idx = np_arg(input, axis=axis, keepdims=True)
    if not keepdim:
        idx = np.squeeze(idx, axis)
    return np.asarray(idx, np.int64)


_INT64 = np.dtype(np.int64)


def _lane_values(input: np.ndarray, idx: np.ndarray, axis: int) -> np.ndarray:
    """`np.take_along_axis(input, idx, axis)` for an index of the input's shape but 1 on `axis`
    (one entry per lane): the same fancy index NumPy builds, without its checks (microseconds
    per call in a Python loop of `max(x, 1)`)."""
    if input.size == input.shape[axis] and type(input) is np.ndarray:
        return input.take(idx)  # one lane (`max(vec, 1)` of a row): its flat index is `idx`
    ones = (1,) * input.ndim
    fancy = [idx if d == axis else np.arange(n).reshape(ones[:d] + (-1,) + ones[d + 1:])
             for d, n in enumerate(input.shape)]
    return input[tuple(fancy)]


def _dim_impl(np_fn, np_arg, name):
    def impl(input, dim, keepdim=False):
        nd = input.ndim
        if type(input) is np.ndarray and type(dim) is int and input.dtype.kind == "f" and \
                -nd <= dim < nd and input.shape[dim]:
            # the common call (`max(vec, 1)` in a Python loop): what the general path below
            # computes for a float array and a valid dim, without its checks' calls
            axis = dim % nd
            arg = input.argmax if np_arg is np.argmax else input.argmin
            if not keepdim and nd > 1 and input.size == input.shape[axis]:
                # one lane (`max(vec, 1)` of a row): its reduced index (an array, rank >= 1) is
                # also its flat position; no keepdims, gather or squeezes
                idx = arg(axis=axis)
                if idx.dtype is not _INT64:
                    idx = idx.astype(np.int64)
                return input.take(idx), idx
            idx = np.asarray(arg(axis=axis, keepdims=True), np.int64)
            vals = _lane_values(input, idx, axis)
            return (vals, idx) if keepdim else (vals.squeeze(axis), idx.squeeze(axis))
        _no_complex(name, input)
        axis = one_dim(dim, input.ndim, name)
        check_dims_nonempty(name, input, (axis,))
        idx = _arg_extreme(np_arg, input, axis, True)
        if input.ndim == 0:
            return input.copy(), idx
        vals = _lane_values(input, idx, axis)
        return (vals, idx) if keepdim else (vals.squeeze(axis), idx.squeeze(axis))
    return impl


# (their VJP reads the indices alone: only they are saved, as PyTorch saves them)
_max_dim = defop("_max_dim", _dim_impl(np.max, np.argmax, "max"), kind="reduction",
                 method=False, vjp=index_pick_vjp, jvp=index_pick_jvp, interpreted=_NOT_YET,
                 extra={"result_read": (1,)})
_min_dim = defop("_min_dim", _dim_impl(np.min, np.argmin, "min"), kind="reduction",
                 method=False, vjp=index_pick_vjp, jvp=index_pick_jvp, interpreted=_NOT_YET,
                 extra={"result_read": (1,)})


_tuple_new = tuple.__new__


def _overload(name, all_op, dim_op, binary, nt):
    def fn(input, dim=None, keepdim=False, *, other=None, out=None):
        if other is not None or isinstance(dim, Tensor):
            o = other if other is not None else dim
            return getattr(sys.modules["jitorch"], binary)(input, o, out=out)
        if dim is None:
            if keepdim:
                raise TypeError(f"{name}() received an invalid combination of arguments - "
                                "keepdim given without dim")
            return all_op(input, out=out)
        # (the named tuple made from the pair directly: its generated `__new__` is a Python
        # call per `max(vec, 1)`)
        return _tuple_new(nt, dim_op(input, dim, keepdim, out=out))
    fn.__name__ = name
    fn.__doc__ = (f"`torch.{name}`: {name}(input) -> Tensor; {name}(input, dim, keepdim=False) "
                  f"-> (values, indices); {name}(input, other) -> {binary}(input, other).")
    return public(fn)


max = _overload("max", _max_all, _max_dim, "maximum", return_types.max)
min = _overload("min", _min_all, _min_dim, "minimum", return_types.min)


# --- argmax / argmin -----------------------------------------------------------------------------
def _arg_impl(np_arg, name):
    def impl(input, dim=None, keepdim=False):
        if input.dtype == np.bool_:
            raise RuntimeError(f"{name}(): does not support bool input")
        _no_complex(name, input)
        if dim is None:
            if input.size == 0:
                raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                                 "input.numel() == 0.")
            r = _arg_extreme(np_arg, input.reshape(-1), 0, False)
            return r.reshape((1,) * input.ndim) if keepdim else r
        axis = one_dim(dim, input.ndim, name)
        check_dims_nonempty(name, input, (axis,))
        return _arg_extreme(np_arg, input, axis, keepdim)
    return impl


argmax = defop("argmax", _arg_impl(np.argmax, "argmax"), kind="reduction", nondiff=True,
               interpreted=_NOT_YET)
argmin = defop("argmin", _arg_impl(np.argmin, "argmin"), kind="reduction", nondiff=True,
               interpreted=_NOT_YET)
