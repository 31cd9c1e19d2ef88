"""Scans along one dim: cumsum, cumprod, cummax, cummin, logcumsumexp, and diff.

Integer and bool cumsum/cumprod accumulate in int64 (dtype= overrides), half types in float32.
cummax/cummin return `jitorch.return_types.cummax(values, indices)`; on ties the index is the
latest one, and a NaN sticks (with its index) like PyTorch. Gradients are written with jitorch
ops (reverse scans via `_flip`) so they differentiate again; cumprod's gradient and tangent are
exact at zeros through the internal `_cumprod_backward` / `_cumprod_fwd` ops (their own
gradients are exact away from zeros); logcumsumexp's gradient and tangent are a pair of
mutually adjoint internal ops (`_lcse_bwd` / `_lcse_fwd`) summed stably in log space.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .. import return_types
from ._reduce_common import (compute_array, flip_, one_dim, pt_name, public, put_along,
                             take_along)
from .registry import defop
from .batching import LOOP, dims

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "diff"]


def _scan_dtype(input, dtype):
    if dtype is not None:
        return dtype.np
    return np.dtype(np.int64) if input.dtype.kind in "biu" else input.dtype


def _scan(np_fn, name):
    def impl(input, dim, *, dtype=None):
        axis = one_dim(dim, input.ndim, name)
        out_np = _scan_dtype(input, dtype)
        x = compute_array(input.astype(out_np, copy=False))
        if input.ndim == 0:
            return x.astype(out_np, copy=True)
        return np_fn(x, axis=axis).astype(out_np, copy=False)
    return impl


def _rev_cumsum(g, dim):
    """sum_{j >= i} g_j along dim."""
    return flip_(flip_(g, (dim,)).cumsum(dim), (dim,))


# --- cumsum --------------------------------------------------------------------------------------
def _cumsum_vjp(g, input_shape, dim):
    if not input_shape:
        return g
    return _rev_cumsum(g, dim % len(input_shape))


cumsum = defop("cumsum", _scan(np.cumsum, "cumsum"),
               autocast={"cuda": "fp32"}, kind="reduction", inplace=True,
               vjp=_cumsum_vjp, jvp=lambda t_input, dim, dtype: t_input.cumsum(dim, dtype=dtype),
               interpreted=_NOT_YET)


# --- cumprod -------------------------------------------------------------------------------------
def _cumprod_backward_impl(grad, input, dim):
    """VJP of cumprod along dim, exact where input has zeros (O(n) per line)."""
    if input.ndim == 0:
        return grad.copy()
    x = np.moveaxis(input, dim, -1)
    g = np.moveaxis(grad, dim, -1)
    n = x.shape[-1]
    out = np.zeros(np.broadcast_shapes(x.shape, g.shape), np.result_type(x, g))
    if n == 0:
        return np.moveaxis(out, -1, dim)
    zero = x == 0
    first = np.where(zero.any(-1), zero.argmax(-1), n)  # first zero per line (n: none)
    pos = np.arange(n)
    c = np.cumprod(x, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rc = np.flip(np.cumsum(np.flip(g * c, -1), -1), -1)
        before = np.where(pos < first[..., None], rc / np.where(zero, 1, x), 0)
    # at the first zero z: sum_{j >= z} g_j * prod_{k <= j, k != z} x_k
    xz = np.where(pos == first[..., None], 1, x)
    cz = np.cumprod(xz, -1)
    at_z = np.flip(np.cumsum(np.flip(np.where(pos >= first[..., None], g * cz, 0), -1), -1), -1)
    out = before + np.where(pos == first[..., None], at_z, 0)
    return np.moveaxis(out.astype(np.result_type(x, g)), -1, dim)


def _cumprod_backward_vjp(u, grad, input, dim):
    # F = revcumsum(grad * cumprod(x)) / x, linear in grad (exact away from zeros of x)
    s = (u / input).cumsum(dim)
    return input.cumprod(dim) * s, -u * _cumprod_backward(grad, input, dim) / input + \
        _cumprod_backward(grad * s, input, dim)


_cumprod_backward = defop("_cumprod_backward", _cumprod_backward_impl,
                          tensors=("grad", "input"), kind="reduction", method=False,
                          vjp=_cumprod_backward_vjp, interpreted=_NOT_YET,
                          batch=dims("dim", expand=True))


def _cumprod_vjp(g, input, dim):
    if input.ndim == 0:
        return g
    return _cumprod_backward(g, input, dim % input.ndim)


def _cumprod_jvp(t_input, input, dim, dtype):
    # d cumprod_j = sum_{k <= j} t_k * prod_{i <= j, i != k} x_i, via the transposed form
    if input.ndim == 0:
        return t_input
    d = dim % input.ndim
    return _cumprod_fwd(t_input, input, d)


def _cumprod_fwd_impl(tangent, input, dim):
    """JVP of cumprod: sum_{k <= j} t_k * prod_{i <= j, i != k} x_i, exact at zeros."""
    x = np.moveaxis(input, dim, -1)
    t = np.moveaxis(tangent, dim, -1)
    x, t = np.broadcast_arrays(x, t)
    n = x.shape[-1]
    if n == 0:
        return np.moveaxis(np.zeros(x.shape, np.result_type(x, t)), -1, dim)
    zero = x == 0
    first = np.where(zero.any(-1), zero.argmax(-1), n)[..., None]
    pos = np.arange(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        # before the first zero every x_i is nonzero: C_j * sum_{k <= j} t_k / x_k
        before = np.cumprod(x, -1) * np.cumsum(np.where(pos < first, t / np.where(zero, 1, x),
                                                        0), -1)
    # from the first zero z on, only the k = z term survives (until a second zero)
    cz = np.cumprod(np.where(pos == first, 1, x), -1)
    tz = np.take_along_axis(t, np.minimum(first, n - 1), -1)
    out = np.where(pos < first, before, cz * tz)
    return np.moveaxis(out.astype(np.result_type(x, t), copy=False), -1, dim)


_cumprod_fwd = defop("_cumprod_fwd", _cumprod_fwd_impl, tensors=("tangent", "input"),
                     kind="reduction", method=False, interpreted=_NOT_YET,
                     batch=dims("dim", expand=True))

cumprod = defop("cumprod", _scan(np.cumprod, "cumprod"),
                autocast={"cuda": "fp32"}, kind="reduction", inplace=True,
                vjp=_cumprod_vjp, jvp=_cumprod_jvp, interpreted=_NOT_YET)


# --- cummax / cummin -----------------------------------------------------------------------------
def _cum_extreme(np_ufunc, name):
    def impl(input, dim):
        if input.dtype.kind == "c":
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{pt_name(input.dtype)}'")
        axis = one_dim(dim, input.ndim, name)
        if input.ndim == 0:
            return input.copy(), np.zeros((), np.int64)
        x = compute_array(input)
        vals = np_ufunc.accumulate(x, axis=axis)  # NaN propagates through maximum/minimum
        eq = x == vals
        if x.dtype.kind == "f":
            eq |= np.isnan(x) & np.isnan(vals)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        pos = np.arange(x.shape[axis]).reshape(shape)
        idx = np.maximum.accumulate(np.where(eq, pos, 0), axis=axis)
        return vals.astype(input.dtype, copy=False), idx.astype(np.int64)
    return impl


def _cum_extreme_vjp(g, result, input_shape, dim):
    if not input_shape:
        return g[0]
    return put_along(g[0], result[1], dim % len(input_shape), input_shape)


def _cum_extreme_jvp(t_input, result, dim):
    if t_input.ndim == 0:
        return t_input, None
    return take_along(t_input, result[1], dim % t_input.ndim), None


_cummax = defop("cummax", _cum_extreme(np.maximum, "cummax"), kind="reduction",
                function=False, method=False, vjp=_cum_extreme_vjp, jvp=_cum_extreme_jvp,
                interpreted=_NOT_YET)
_cummin = defop("cummin", _cum_extreme(np.minimum, "cummin"), kind="reduction",
                function=False, method=False, vjp=_cum_extreme_vjp, jvp=_cum_extreme_jvp,
                interpreted=_NOT_YET)


def cummax(input, dim, *, out=None):
    """`torch.cummax`: running maximum and the index where it was attained."""
    return return_types.cummax(*_cummax(input, dim, out=out))


def cummin(input, dim, *, out=None):
    """`torch.cummin`: running minimum and the index where it was attained."""
    return return_types.cummin(*_cummin(input, dim, out=out))


public(cummax)
public(cummin)


# --- logcumsumexp --------------------------------------------------------------------------------
def _logcumsumexp(input, dim):
    if input.dtype.kind in "biu":
        raise NotImplementedError('"logcumsumexp_out_cpu" not implemented for '
                                  f"'{pt_name(input.dtype)}'")
    axis = one_dim(dim, input.ndim, "logcumsumexp")
    x = compute_array(input)
    if input.ndim == 0:
        return input.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if x.dtype.kind != "c":
            r = np.logaddexp.accumulate(x, axis=axis)
        else:
            m = np.max(x.real, axis=axis, keepdims=True) if x.size else 0
            m = np.where(np.isfinite(m), m, 0)
            r = np.log(np.cumsum(np.exp(x - m), axis=axis)) + m
    return r.astype(input.dtype, copy=False)


def _signed_lse(v, shift, axis, reverse):
    """log of the running sums of v * exp(shift), split by the sign of v: (pos, neg)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = []
        for part in (np.where(v > 0, v, 0), np.where(v < 0, -v, 0)):
            a = np.log(part) + shift
            if reverse:
                a = np.flip(np.logaddexp.accumulate(np.flip(a, axis), axis=axis), axis)
            else:
                a = np.logaddexp.accumulate(a, axis=axis)
            out.append(a)
    return out


def _lcse_bwd_impl(grad, input, result, dim):
    """F_i = sum_{j >= i} g_j exp(x_i - out_j): logcumsumexp's VJP, summed in log space."""
    if input.ndim == 0:
        return grad.copy()
    p, n = _signed_lse(grad, -result, dim, reverse=True)
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.exp(p + input) - np.exp(n + input)).astype(input.dtype)


def _lcse_fwd_impl(tangent, input, result, dim):
    """H_j = sum_{i <= j} t_i exp(x_i - out_j): logcumsumexp's JVP (and F's adjoint in g)."""
    if input.ndim == 0:
        return tangent.copy()
    p, n = _signed_lse(tangent, input, dim, reverse=False)
    with np.errstate(over="ignore", invalid="ignore"):
        return (np.exp(p - result) - np.exp(n - result)).astype(input.dtype)


# F and H are adjoint in their first argument; their other partials are F or H again, so
# gradients of every order stay exact and stable
_lcse_bwd = defop("_lcse_bwd", _lcse_bwd_impl, tensors=("grad", "input", "result"),
                  kind="reduction", method=False,
                  vjp=lambda u, grad, input, result, dim:
                  (_lcse_fwd(u, input, result, dim), u * _lcse_bwd(grad, input, result, dim),
                   -grad * _lcse_fwd(u, input, result, dim)), interpreted=_NOT_YET,
                  batch=dims("dim", expand=True))
_lcse_fwd = defop("_lcse_fwd", _lcse_fwd_impl, tensors=("tangent", "input", "result"),
                  kind="reduction", method=False,
                  vjp=lambda v, tangent, input, result, dim:
                  (_lcse_bwd(v, input, result, dim), tangent * _lcse_bwd(v, input, result, dim),
                   -v * _lcse_fwd(tangent, input, result, dim)), interpreted=_NOT_YET,
                  batch=dims("dim", expand=True))


def _logcumsumexp_vjp(g, input, result, dim):
    return _lcse_bwd(g, input, result, dim % input.ndim if input.ndim else 0)


def _logcumsumexp_jvp(t_input, input, result, dim):
    return _lcse_fwd(t_input, input, result, dim % input.ndim if input.ndim else 0)


logcumsumexp = defop("logcumsumexp", _logcumsumexp, kind="reduction", vjp=_logcumsumexp_vjp,
                     jvp=_logcumsumexp_jvp, interpreted=_NOT_YET)


# --- diff ----------------------------------------------------------------------------------------
def _diff_t_np(g, n, axis):
    """The transpose of n-th forward differences along axis (length grows by n)."""
    for _ in range(n):
        shape = list(g.shape)
        shape[axis] += 1
        z = np.zeros(shape, g.dtype)
        sl = [slice(None)] * g.ndim
        sl[axis] = slice(1, None)
        z[tuple(sl)] += g
        sl[axis] = slice(None, -1)
        z[tuple(sl)] -= g
        g = z
    return g


def _diff_t_impl(grad, n, dim, start, length):
    if grad.shape[dim] == 0:  # n exceeded the length: nothing flows back
        shape = list(grad.shape)
        shape[dim] = length
        return np.zeros(shape, grad.dtype)
    full = _diff_t_np(grad, n, dim)
    sl = [slice(None)] * full.ndim
    sl[dim] = slice(start, start + length)
    return full[tuple(sl)].copy()


def _diff_pad_impl(input, n, dim, start, total):
    shape = list(input.shape)
    shape[dim] = total
    y = np.zeros(shape, input.dtype)
    sl = [slice(None)] * y.ndim
    sl[dim] = slice(start, start + input.shape[dim])
    y[tuple(sl)] = input
    return np.diff(y, n, axis=dim)


# the two are adjoint linear maps, so each is the other's VJP (and itself its JVP)
_diff_t = defop("_diff_t", _diff_t_impl, tensors=("grad",), kind="shape", method=False,
                vjp=lambda g, n, dim, start, grad_shape:
                _diff_pad(g, n, dim, start, grad_shape[dim] + n),
                jvp=lambda t_grad, n, dim, start, length: _diff_t(t_grad, n, dim, start, length),
                interpreted=_NOT_YET,
                batch=LOOP)
_diff_pad = defop("_diff_pad", _diff_pad_impl, kind="shape", method=False,
                  vjp=lambda g, n, dim, start, input_shape:
                  _diff_t(g, n, dim, start, input_shape[dim]),
                  jvp=lambda t_input, n, dim, start, total: _diff_pad(t_input, n, dim, start,
                                                                      total), interpreted=_NOT_YET,
                  batch=LOOP)


def _diff(input, prepend, append, n, dim):
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    axis = one_dim(dim, input.ndim, "diff")
    parts = [p for p in (prepend, append) if p is not None]
    for p in parts:
        if not isinstance(p, np.ndarray):
            raise TypeError(f"diff(): argument 'prepend' must be Tensor, not "
                            f"{type(p).__name__}")
        if p.ndim != input.ndim:
            raise RuntimeError("diff expects prepend or append to be the same dimension as "
                               "input")
        for i in range(input.ndim):
            if i != axis and p.shape[i] != input.shape[i]:
                raise RuntimeError(
                    "diff expects the shape of tensor to prepend or append to match that of "
                    f"input except along the differencing dimension; input.size({i}) = "
                    f"{input.shape[i]}, but got tensor.size({i}) = {p.shape[i]}")
    d = dt.from_numpy_dtype(input.dtype)
    for p in parts:
        d = dt.promote_types(d, dt.from_numpy_dtype(p.dtype))
    seq = [a.astype(d.np, copy=False) for a in (prepend, input, append) if a is not None]
    y = np.concatenate(seq, axis=axis) if len(seq) > 1 else seq[0]
    if n == 0:
        return y.copy()
    if n >= y.shape[axis]:
        shape = list(y.shape)
        shape[axis] = 0
        return np.zeros(shape, d.np)
    return np.diff(compute_array(y), n, axis=axis).astype(d.np, copy=False)


def _diff_vjp(g, input, prepend, append, n, dim):
    axis = dim % input.ndim
    pre = prepend.shape[axis] if prepend is not None else 0
    size = input.shape[axis]
    gin = _diff_t(g, n, axis, pre, size)
    gpre = _diff_t(g, n, axis, 0, pre) if prepend is not None else None
    gapp = _diff_t(g, n, axis, pre + size, append.shape[axis]) if append is not None else None
    return gin, gpre, gapp


def _diff_jvp(t_input, t_prepend, t_append, n, dim):
    return _diff_op(t_input, t_prepend, t_append, n, dim)


# the registry passes tensor slots first, so the op takes (input, prepend, append, n, dim) and
# the public function restores PyTorch's argument order
_diff_op = defop("diff", _diff, tensors=("input", "prepend", "append"), kind="shape",
                 vjp=_diff_vjp, jvp=_diff_jvp, function=False, method=False, interpreted=_NOT_YET,
                 batch=LOOP)


def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """`torch.diff`: n-th forward difference along dim, after concatenating prepend/append."""
    return _diff_op(input, prepend, append, n, dim, out=out)


public(diff)
