"""Norms of `jitorch.linalg`: vector_norm, matrix_norm and norm (which picks one of the two).

Both norms are ops whose VJP is `g * W` and JVP `sum(W * t)` for one weight tensor W per
order: x / ||x|| for 2-norms, sign masks for 1/inf norms (ties share the gradient evenly, as
PyTorch's amax does), and U V^H / u1 v1^H from the SVD for the nuclear and spectral norms.
Masks and signs are constants (their derivative is zero); everything else is built from ops,
so higher-order gradients follow.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _autocast
from .. import _dtype as dt
from .._tensor import Tensor
from ._linalg_util import const, jt, pt
from ._util import np_axes, reduce_dims, unreduce, wrap_dim
from .linalg_decomp import _safe
from .linalg_svd import _linalg_svd, np_svd
from .registry import _pt_name, _write_out, defop

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__: list = []

_INF = math.inf


def _result_dtype(input, dtype, name) -> dt.dtype:
    d = jt(input)
    if d.category < dt.FLOAT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got "
                           f"{_pt_name(d)}")
    if dtype is not None:
        if dtype.category < dt.FLOAT:
            raise RuntimeError(f"{name}: dtype should be floating point or complex, but got "
                               f"{_pt_name(dtype)}")
        if dt.promote_types(d, dtype) is not dtype:
            raise RuntimeError(f"{name}: the dtype of the input ({_pt_name(d)}) should be "
                               f"convertible without narrowing to the specified dtype "
                               f"({_pt_name(dtype)})")
        d = dtype
    return d


def _fmt(x) -> str:
    if isinstance(x, float) and x.is_integer():
        return str(int(x))
    return str(x)


def _cast(t: Tensor, dtype) -> Tensor:
    return t if dtype is None or t.dtype is dtype else t.to(dtype)


def _pow(t: Tensor, e: float) -> Tensor:
    """t ** e for t >= 0, with ops this family already relies on (0 ** e = 0 for e > 0)."""
    return (t.log() * e).exp()


def _dims(dim):
    """dim=None, () and [] all reduce every dim; lists become tuples (hashable attrs)."""
    if dim is None or isinstance(dim, (list, tuple)) and len(dim) == 0:
        return None
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


# --- vector_norm --------------------------------------------------------------------------------
def _vector_norm(input, ord=2, dim=None, keepdim=False, *, dtype=None):
    if isinstance(ord, bool) or not isinstance(ord, (int, float, np.integer, np.floating)):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' must be Number, not "
                        f"{type(ord).__name__}")
    d = _result_dtype(input, dtype, "linalg.vector_norm")
    axes = reduce_dims(dim, input.ndim)
    size = int(np.prod([input.shape[a] for a in axes])) if input.ndim else 1
    if size == 0 and (ord < 0 or ord == _INF):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {_fmt(ord)} norm on an empty "
                           "tensor because the operation does not have an identity")
    x = np.abs(input.astype(d.compute))
    ax = np_axes(axes, input.ndim)
    with np.errstate(all="ignore"):
        if ord == _INF:
            r = x.max(axis=ax, keepdims=keepdim)
        elif ord == -_INF:
            r = x.min(axis=ax, keepdims=keepdim)
        elif ord == 0:
            r = (x != 0).sum(axis=ax, keepdims=keepdim)
        elif ord == 1:
            r = x.sum(axis=ax, keepdims=keepdim)
        elif ord == 2:
            r = np.sqrt((x * x).sum(axis=ax, keepdims=keepdim))
        else:
            r = (x ** ord).sum(axis=ax, keepdims=keepdim) ** (1.0 / ord)
    return np.asarray(r).astype(d.to_real().np)


def _even_ties(mask: np.ndarray, axes) -> np.ndarray:
    """Spread a unit gradient evenly over the extremal entries of each reduced slice."""
    count = mask.sum(axis=axes, keepdims=True)
    with np.errstate(all="ignore"):
        return np.where(count > 0, mask / np.maximum(count, 1), 0)


def _vn_weight(x: Tensor, ru: Tensor, ord, dim) -> Tensor:
    """d||x|| / dx, broadcast to x's shape (ru: the norm with reduced dims kept)."""
    xd = x._data
    sign = const(np.sign(xd), x)
    if ord == 0:
        return const(np.zeros(xd.shape), x)
    if ord == 1:
        return sign
    if ord == 2:
        return x / _safe(ru)
    if ord in (_INF, -_INF):
        axes = np_axes(reduce_dims(dim, xd.ndim), xd.ndim)
        return sign * const(_even_ties(np.abs(xd) == ru._data, axes), x)
    return sign * _pow(x * sign, ord - 1) / _safe(_pow(ru, ord - 1))


def _vector_norm_vjp(g, input, result, ord, dim, keepdim, dtype):
    x = _cast(input, dtype)
    ru = unreduce(result, x.shape, dim, keepdim)
    return unreduce(g, x.shape, dim, keepdim) * _vn_weight(x, ru, ord, dim)


def _vector_norm_jvp(t_input, input, result, ord, dim, keepdim, dtype):
    x = _cast(input, dtype)
    ru = unreduce(result, x.shape, dim, keepdim)
    return (_vn_weight(x, ru, ord, dim) * _cast(t_input, dtype)).sum(dim, keepdim)


_linalg_vector_norm = defop("_linalg_vector_norm", _vector_norm, kind="reduction",
                            method=False, vjp=_vector_norm_vjp, jvp=_vector_norm_jvp,
                            interpreted=_NOT_YET)


@_autocast.policy({"cuda": "fp32"})
def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """`linalg.vector_norm`: (sum |x|^ord)^(1/ord) over `dim` (all dims by default)."""
    r = _linalg_vector_norm(x, ord, _dims(dim), keepdim, dtype=dtype)
    return r if out is None else _write_out(out, r)


# --- matrix_norm --------------------------------------------------------------------------------
_MATRIX_ORDS = ("fro", "nuc", 2, -2, 1, -1, _INF, -_INF)


def _mn_dims(ndim, dim):
    if not isinstance(dim, (list, tuple)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dim}")
    d0, d1 = wrap_dim(dim[0], ndim), wrap_dim(dim[1], ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    return d0, d1


def _last_two(a, d0, d1):
    return np.moveaxis(a, (d0, d1), (-2, -1))


def _matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 "
                           "dimensions.")
    d = _result_dtype(A, dtype, "linalg.matrix_norm")
    if not any(ord == o and type(ord) is not bool for o in _MATRIX_ORDS):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if ord in ("nuc", 2, -2) and d in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"linalg.matrix_norm: Low precision dtypes not supported. Got "
                           f"{pt(A)}")
    d0, d1 = _mn_dims(A.ndim, dim)
    x = A.astype(d.compute)
    with np.errstate(all="ignore"):
        if ord == "fro":
            r = np.sqrt((np.abs(x) ** 2).sum(axis=(d0, d1), keepdims=True))
        elif ord in ("nuc", 2, -2):
            s = np_svd(_last_two(x, d0, d1), False)[1]
            r = s.sum(-1) if ord == "nuc" else (s.max(-1) if ord == 2 else s.min(-1))
            r = np.expand_dims(r, tuple(sorted((d0, d1))))
        else:  # 1-norms: max column sum; inf-norms: max row sum
            inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
            sums = np.abs(x).sum(axis=inner, keepdims=True)
            r = sums.max(axis=outer, keepdims=True) if ord > 0 else \
                sums.min(axis=outer, keepdims=True)
    if not keepdim:
        r = np.squeeze(r, axis=(d0, d1))
    return np.asarray(r).astype(d.to_real().np)


def _mn_weight(x: Tensor, ru: Tensor, ord, d0, d1) -> Tensor:
    if ord == "fro":
        return x / _safe(ru)
    if ord in ("nuc", 2, -2):
        nd = x.ndim
        perm = [k for k in range(nd) if k not in (d0, d1)] + [d0, d1]
        inv = [0] * nd
        for i, p in enumerate(perm):
            inv[p] = i
        U, _, Vh = _linalg_svd(x.permute(perm), False)
        if ord == "nuc":
            W = U @ Vh
        else:
            k = U.shape[-1]
            e = const(np.eye(k)[0 if ord == 2 else k - 1], U)
            W = (U @ e).unsqueeze(-1) * (Vh.mT @ e).unsqueeze(-2)
        return W.permute(inv)
    xd = x._data
    inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
    sums = np.abs(xd).sum(axis=inner, keepdims=True)
    ties = _even_ties(sums == ru._data, outer)
    return const(np.sign(xd), x) * const(ties, x)


def _matrix_norm_vjp(g, A, result, ord, dim, keepdim, dtype):
    x = _cast(A, dtype)
    d0, d1 = _mn_dims(x.ndim, dim)
    ru = unreduce(result, x.shape, (d0, d1), keepdim)
    return unreduce(g, x.shape, (d0, d1), keepdim) * _mn_weight(x, ru, ord, d0, d1)


def _matrix_norm_jvp(t_A, A, result, ord, dim, keepdim, dtype):
    x = _cast(A, dtype)
    d0, d1 = _mn_dims(x.ndim, dim)
    ru = unreduce(result, x.shape, (d0, d1), keepdim)
    return (_mn_weight(x, ru, ord, d0, d1) * _cast(t_A, dtype)).sum((d0, d1), keepdim)


_linalg_matrix_norm = defop("_linalg_matrix_norm", _matrix_norm, tensors=("A",),
                            kind="reduction", method=False, vjp=_matrix_norm_vjp,
                            jvp=_matrix_norm_jvp, interpreted=_NOT_YET)


@_autocast.policy({"cuda": "fp32"})
def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """`linalg.matrix_norm`: 'fro', 'nuc', 2/-2 (extreme singular values), 1/-1 (column
    sums), inf/-inf (row sums) over the two dims `dim`."""
    dim = tuple(dim) if isinstance(dim, list) else dim
    r = _linalg_matrix_norm(A, ord, dim, keepdim, dtype=dtype)
    return r if out is None else _write_out(out, r)


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """`linalg.norm`: a vector norm for one dim (or a flattened input when ord is None), a
    matrix norm for two dims (or a 2-D input with an ord)."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, (int, np.integer)) else tuple(dim)
        if len(dims) == 1:
            r = vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        elif len(dims) == 2:
            r = matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        else:
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                               f"Got {list(dims)}")
    elif ord is None:
        r = vector_norm(A, 2, None, keepdim, dtype=dtype)
    elif A.ndim == 2 or isinstance(ord, str):
        if A.ndim > 2:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must "
                               f"be 1D or 2D. Got {A.ndim}D.")
        r = matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    elif A.ndim == 1:
        r = vector_norm(A, ord, None, keepdim, dtype=dtype)
    else:
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.ndim}D.")
    return r if out is None else _write_out(out, r)
