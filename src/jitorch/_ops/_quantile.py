"""quantile and nanquantile (re-exported by `sort.py`).

Computed like PyTorch: sort along dim (everything when dim is None), rank = q * (count - 1),
pick by `interpolation`, and lerp between the neighbours. A NaN makes `quantile` NaN for its
line; `nanquantile` ranks only the non-NaN values. The gradient flows to the two sorted
neighbours with lerp weights (1 - w, w), through the internal nondiff `_quantile_plan` op that
returns those indices and weights in "scatter layout": the input's shape with the reduced dim
replaced by the number of q values (a flat (Q,) when dim is None).
"""
from __future__ import annotations

import numpy as np

from ._reduce_common import one_dim, put_along, take_along
from .registry import defop
from .batching import LOOP

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_SORTS = "sorts along a dim: no CPU lowering yet"

__all__ = ["quantile", "nanquantile"]

_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def _check(input, q, interpolation):
    if input.dtype not in (np.float32, np.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    if isinstance(q, np.ndarray):
        if q.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        if np.any((q < 0) | (q > 1)):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    else:
        if isinstance(q, (list, tuple)):
            raise TypeError("quantile(): argument 'q' must be Tensor or float")
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
    if input.size == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if interpolation not in _MODES:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")


def _plan(input, q, dim, interpolation, ignore_nan):
    """Working-layout (reduced axis last, Q values there) indices, weights and sorted values."""
    from .sorting import stable_argsort
    if dim is None:
        xw = input.reshape(-1)
    else:
        xw = np.moveaxis(input, one_dim(dim, input.ndim, "quantile"), -1) if input.ndim \
            else input.reshape(1)
    order = stable_argsort(xw, -1)
    s = np.take_along_axis(xw, order, -1)
    n = s.shape[-1]
    nan = np.isnan(s)
    qa = np.atleast_1d(np.asarray(q, dtype=input.dtype))
    last = n - 1
    if ignore_nan:
        cnt = n - nan.sum(-1, keepdims=True)
        rank = qa * (cnt - 1).astype(input.dtype)  # ranks in the input dtype, like PyTorch
        rank = np.where(rank < 0, 0, rank)  # an all-NaN line picks a NaN
    else:
        rank = np.broadcast_to(qa * (n - 1), s.shape[:-1] + qa.shape)
        rank = np.where(nan.any(-1, keepdims=True), last, rank)
    if interpolation == "lower":
        rank = np.floor(rank)
    elif interpolation == "higher":
        rank = np.ceil(rank)
    elif interpolation == "nearest":
        rank = np.round(rank)  # half to even, like torch.round
    lo = rank.astype(np.int64)
    if interpolation in ("linear", "midpoint"):
        w = np.full(rank.shape, 0.5, input.dtype) if interpolation == "midpoint" else \
            (rank - lo).astype(input.dtype)
        hi = np.ceil(rank).astype(np.int64)
    else:
        w = np.zeros(rank.shape, input.dtype)
        hi = lo
    return order, s, lo, hi, w


def _values(input, q, dim, keepdim, interpolation, ignore_nan):
    _check(input, q, interpolation)
    order, s, lo, hi, w = _plan(input, q, dim, interpolation, ignore_nan)
    a = np.take_along_axis(s, lo, -1)
    b = np.take_along_axis(s, hi, -1)
    with np.errstate(invalid="ignore"):
        v = np.where(w < 0.5, a + w * (b - a), b - (b - a) * (1 - w))  # torch.lerp
    return _to_output(v.astype(input.dtype), input, q, dim, keepdim)


def _to_output(v, input, q, dim, keepdim):
    """Working layout (lead..., Q) -> PyTorch's (Q, lead...) with keepdim's size-1 dims."""
    v = np.moveaxis(v, -1, 0)  # (Q, lead...)
    if keepdim:
        if dim is None:
            v = v.reshape(v.shape[:1] + (1,) * input.ndim)
        elif input.ndim:
            v = np.expand_dims(v, one_dim(dim, input.ndim, "quantile") + 1)
    if not (isinstance(q, np.ndarray) and q.ndim == 1):
        v = v[0]
    return np.asarray(v)


def _plan_impl(input, q, dim, interpolation, ignore_nan):
    """Nondiff: (idx_lo, idx_hi, w_lo, w_hi) in scatter layout (see the module docstring)."""
    order, s, lo, hi, w = _plan(input, q, dim, interpolation, ignore_nan)
    ilo = np.take_along_axis(order, lo, -1)
    ihi = np.take_along_axis(order, hi, -1)
    parts = (ilo, ihi, (1 - w).astype(input.dtype), w)
    if dim is not None and input.ndim:
        axis = one_dim(dim, input.ndim, "quantile")
        parts = tuple(np.moveaxis(p, -1, axis) for p in parts)
    return parts


_quantile_plan = defop("_quantile_plan", _plan_impl, tensors=("input", "q"), kind="reduction",
                       method=False, nondiff=True, interpreted=_SORTS,
                       batch=LOOP)


def _scatter_shape(input, q, dim):
    """The scatter-layout shape and the axis the q values occupy in it."""
    nq = q.shape[0] if hasattr(q, "shape") and len(q.shape) == 1 else 1
    if dim is None or input.ndim == 0:
        return (nq,), 0
    axis = dim % input.ndim
    shape = list(input.shape)
    shape[axis] = nq
    return tuple(shape), axis


def _out_to_scatter(g, input, q, dim, keepdim):
    shape, axis = _scatter_shape(input, q, dim)
    vector = hasattr(q, "shape") and len(q.shape) == 1
    if dim is None or input.ndim == 0:
        return g.reshape(shape)
    nq = shape[axis]
    lead = list(shape)
    lead[axis] = 1
    g = g.reshape([nq] + lead) if vector else g.reshape(lead)
    if vector:
        perm = list(range(1, axis + 2)) + [0] + list(range(axis + 2, len(lead) + 1))
        g = g.permute(perm)  # (lead[:axis], 1, Q, lead[axis+1:])
    return g.reshape(shape)


def _scatter_to_out(t, input, q, dim, keepdim, out_shape):
    shape, axis = _scatter_shape(input, q, dim)
    vector = hasattr(q, "shape") and len(q.shape) == 1
    if vector and dim is not None and input.ndim:
        perm = [axis] + [i for i in range(len(shape)) if i != axis]
        t = t.permute(perm)
    return t.reshape(out_shape)


def _vjp(ignore_nan):
    def vjp(g, input, q, dim, keepdim, interpolation):
        ilo, ihi, wlo, whi = _quantile_plan(input, q, dim, interpolation, ignore_nan)
        gs = _out_to_scatter(g, input, q, dim, keepdim)
        shape, axis = _scatter_shape(input, q, dim)
        flat = (input.numel(),) if dim is None or input.ndim == 0 else tuple(input.shape)
        gi = put_along(gs * wlo, ilo, axis, flat) + put_along(gs * whi, ihi, axis, flat)
        return gi.reshape(input.shape), None
    return vjp


def _jvp(ignore_nan):
    def jvp(t_input, input, q, result, dim, keepdim, interpolation):
        ilo, ihi, wlo, whi = _quantile_plan(input, q, dim, interpolation, ignore_nan)
        shape, axis = _scatter_shape(input, q, dim)
        t = t_input.reshape(input.numel()) if dim is None or input.ndim == 0 else t_input
        ts = take_along(t, ilo, axis) * wlo + take_along(t, ihi, axis) * whi
        return _scatter_to_out(ts, input, q, dim, keepdim, result.shape)
    return jvp


def _quantile_impl(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _values(input, q, dim, keepdim, interpolation, False)


def _nanquantile_impl(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    return _values(input, q, dim, keepdim, interpolation, True)


quantile = defop("quantile", _quantile_impl, tensors=("input", "q"), kind="reduction",
                 vjp=_vjp(False), jvp=_jvp(False), interpreted=_SORTS,
                 batch=LOOP, autocast={"cpu": "fp32"})
nanquantile = defop("nanquantile", _nanquantile_impl, tensors=("input", "q"), kind="reduction",
                    vjp=_vjp(True), jvp=_jvp(True), interpreted=_SORTS,
                    batch=LOOP, autocast={"cpu": "fp32"})
