"""kron, cross (`torch.cross` and `linalg.cross`), `linalg.vecdot`, and the composite chained
products `linalg.multi_dot`, `chain_matmul` and `matrix_power`.

The composites are plain functions over the product ops (as in PyTorch), so their gradients
come from matmul/mm/inverse; kron, cross and vecdot are ops with their own rules.
"""
from __future__ import annotations

import numpy as np

from .. import _autocast
from .. import _dtype as dt
from .._tensor import Tensor
from ._linalg_util import broadcast_shape, c_name, jt, no_bool, pt
from ._util import wrap_dim
from .linalg import _drop
from .registry import _write_out, defop
from .batching import LOOP

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__ = ["kron", "cross", "matrix_power", "chain_matmul"]


# --- kron -----------------------------------------------------------------------------------
def _kron_shapes(sa, sb):
    n = max(len(sa), len(sb))
    sa = (1,) * (n - len(sa)) + tuple(sa)
    sb = (1,) * (n - len(sb)) + tuple(sb)
    return sa, sb


def _kron(input, other):
    if not isinstance(other, np.ndarray):
        raise TypeError(f"kron(): argument 'other' (position 2) must be Tensor, not "
                        f"{type(other).__name__}")
    d = dt.promote_types(dt.from_numpy_dtype(input.dtype), dt.from_numpy_dtype(other.dtype))
    sa, sb = _kron_shapes(input.shape, other.shape)
    a = input.astype(d.compute).reshape(sum(((s, 1) for s in sa), ()))
    b = other.astype(d.compute).reshape(sum(((1, s) for s in sb), ()))
    with np.errstate(all="ignore"):
        r = a * b
    return r.reshape(tuple(x * y for x, y in zip(sa, sb))).astype(d.np)


def _kron_vjp(g, input, other):
    sa, sb = _kron_shapes(input.shape, other.shape)
    n = len(sa)
    g2 = g.reshape(sum(((x, y) for x, y in zip(sa, sb)), ()))
    a2 = input.to(g.dtype).reshape(sum(((s, 1) for s in sa), ()))
    b2 = other.to(g.dtype).reshape(sum(((1, s) for s in sb), ()))
    ga = (g2 * b2).sum(tuple(range(1, 2 * n, 2))) if n else g2 * b2
    gb = (g2 * a2).sum(tuple(range(0, 2 * n, 2))) if n else g2 * a2
    return ga.reshape(input.shape), gb.reshape(other.shape)


kron = defop("kron", _kron, tensors=("input", "other"), kind="linalg", vjp=_kron_vjp,
             jvp=lambda t_input, t_other, input, other:
             t_input.kron(other) + input.kron(t_other), interpreted=_NOT_YET,
             batch=LOOP)


# --- cross ----------------------------------------------------------------------------------
def _cross_dim(a, b, dim):
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if dim is None:  # torch.cross's legacy default: the first dim of size 3
        d = next((i for i, s in enumerate(a.shape) if s == 3), None)
        if d is None:
            raise RuntimeError("no dimension of size 3 in input")
    else:
        d = wrap_dim(dim, a.ndim)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {d if dim is None else dim} must "
                           f"have length 3. Got {a.shape[d]} and {b.shape[d]}")
    return d, broadcast_shape(a.shape, b.shape)


def _cross(input, other, dim=None):
    d, shape = _cross_dim(input, other, dim)
    if input.dtype != other.dtype:
        raise RuntimeError(f"expected scalar type {pt(input)} but found {pt(other)}")
    no_bool(input, "cross")
    a = np.broadcast_to(input, shape)
    b = np.broadcast_to(other, shape)
    with np.errstate(all="ignore"):
        if dt.is_half_np(a.dtype):
            return np.cross(a.astype(np.float32), b.astype(np.float32), axis=d).astype(a.dtype)
        return np.cross(a, b, axis=d).astype(a.dtype)


def _cross_vjp(g, input, other, dim):
    d = _cross_dim(input._data, other._data, dim)[0]
    return other.cross(g, dim=d), g.cross(input, dim=d)


def _cross_jvp(t_input, t_other, input, other, dim):
    d = _cross_dim(input._data, other._data, dim)[0]
    return t_input.cross(other, dim=d) + input.cross(t_other, dim=d)


cross = defop("cross", _cross, tensors=("input", "other"),
              autocast={"cuda": "promote"}, kind="linalg", vjp=_cross_vjp,
              jvp=_cross_jvp, interpreted=_NOT_YET,
              batch=LOOP)


def linalg_cross(input, other, *, dim=-1, out=None):
    """`linalg.cross`: like `cross` but the dim defaults to the last one."""
    return cross(input, other, dim, out=out)


# --- vecdot ---------------------------------------------------------------------------------
def _vecdot(x, y, dim=-1):
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x "
                           f"of type {pt(x)} and y of type {pt(y)} instead")
    if jt(x).category < dt.FLOAT:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {pt(x)}")
    shape = broadcast_shape(x.shape, y.shape)
    d = wrap_dim(dim, len(shape))
    c = np.float32 if dt.is_half_np(x.dtype) else x.dtype
    with np.errstate(all="ignore"):
        r = (np.conj(x.astype(c, copy=False)) * y.astype(c, copy=False)).sum(axis=d)
    return np.asarray(r).astype(x.dtype)


def _vecdot_dim(x, y, dim):
    return wrap_dim(dim, max(x.ndim, y.ndim))


_linalg_vecdot = defop(
    "_linalg_vecdot", _vecdot, tensors=("x", "y"), kind="linalg", method=False,
    vjp=lambda g, x, y, dim: (g.unsqueeze(_vecdot_dim(x, y, dim)) * y,
                              g.unsqueeze(_vecdot_dim(x, y, dim)) * x),
    jvp=lambda t_x, t_y, x, y, dim: (t_x * y + x * t_y).sum(_vecdot_dim(x, y, dim)),
    interpreted=_NOT_YET,
    batch=LOOP, autocast="lower")


def vecdot(x, y, *, dim=-1, out=None):
    """`linalg.vecdot`: sum(conj(x) * y) over `dim`, broadcasting x and y."""
    r = _linalg_vecdot(x, y, dim)
    return r if out is None else _write_out(out, r)


# --- composites: their gradients come from the ops they call, as in PyTorch ------------------
def _out(out, r):
    return r if out is None else _write_out(out, r)


def matrix_power(input, n, *, out=None):
    """`A @ A @ ... @ A` (n times); n = 0 gives the identity, n < 0 powers of the inverse."""
    from .linalg_decomp import inverse
    a = input._data
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        if a.ndim < 2:
            raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                               "dimensions.")
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {a.shape[-2]} by {a.shape[-1]} matrices")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        eye = np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy()
        from .._device.transfer import constant
        return _out(out, constant(eye, input._dtype, input._device))
    if n < 0:
        input, n = inverse(input), -n
    # square-and-multiply, as PyTorch does (same rounding for large n)
    result, z = None, input
    while True:
        if n & 1:
            result = z if result is None else result @ z
        n >>= 1
        if not n:
            break
        z = z @ z
    return _out(out, result.clone() if result is input else result)


@_autocast.policy({"cuda": "lower"})
def chain_matmul(*matrices, out=None):
    """Deprecated `torch.chain_matmul`: `multi_dot` of 2-D matrices."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    if len(matrices) == 1:
        return _out(out, matrices[0].clone())
    return multi_dot(list(matrices), out=out)


@_autocast.policy({"cuda": "lower"})
def multi_dot(tensors, *, out=None):
    """`linalg.multi_dot`: chained matmul; first/last may be 1-D; cheapest order (NumPy's)."""
    ts = list(tensors)
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        nd = t.ndim
        if i == 0 and nd not in (1, 2):
            raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {nd}D")
        if i == len(ts) - 1 and i and nd not in (1, 2):
            raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {nd}D")
        if 0 < i < len(ts) - 1 and nd != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {nd}D")
        if t.dtype is not ts[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor "
                               f"0 is {c_name(ts[0]._data)} and tensor {i} "
                               f"{c_name(t._data)}")
    first_1d, last_1d = ts[0].ndim == 1, ts[-1].ndim == 1
    if first_1d:
        ts[0] = ts[0].unsqueeze(0)
    if last_1d:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i in range(len(ts) - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            sa, sb = list(tensors[i].shape), list(tensors[i + 1].shape)
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {sa} and {sb} "
                               "cannot be multiplied")
    r = _chain(ts, _chain_order([t.shape[0] for t in ts] + [ts[-1].shape[1]]), 0, len(ts) - 1)
    if first_1d and last_1d:
        r = r.reshape(())
    elif first_1d:
        r = _drop(r, 0)
    elif last_1d:
        r = _drop(r, -1)
    return _out(out, r)


def _chain_order(p):
    """Matrix-chain dynamic programme: split[i][j] = best split of ts[i..j]."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def _chain(ts, split, i, j):
    if i == j:
        return ts[i]
    k = split[i][j]
    return _chain(ts, split, i, k).mm(_chain(ts, split, k + 1, j))


Tensor.matrix_power = matrix_power
