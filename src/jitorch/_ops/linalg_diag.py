"""Triangular and diagonal matrix ops: tril/triu (+ in-place), diag, diag_embed, trace, and the
diagonal view behind `jitorch.linalg.diagonal`.

Two internal ops carry the gradients: `_linalg_diagonal` (a writable view of a diagonal) and
`_linalg_diag_scatter` (zeros of a given shape with a diagonal filled in). Each is the other's
VJP, so diag/diag_embed/trace have gradients of every order.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import _dtype as dt
from ._linalg_util import no_bool
from ._util import wrap_dim
from .registry import defop
from .batching import LOOP, TRACE
from .batching import LEADING, dims

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__ = ["tril", "triu", "diag", "diag_embed", "trace"]


def _dims(ndim: int, dim1: int, dim2: int):
    d1, d2 = wrap_dim(dim1, ndim), wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def _diagonal_view(a: np.ndarray, offset: int, d1: int, d2: int) -> np.ndarray:
    """A writable strided view of a diagonal (NumPy's own `diagonal` view is read-only)."""
    n1, n2 = a.shape[d1], a.shape[d2]
    if offset >= 0:
        length = max(0, min(n1, n2 - offset))
        start = [0] * a.ndim
        start[d2] = min(offset, n2)
    else:
        length = max(0, min(n1 + offset, n2))
        start = [0] * a.ndim
        start[d1] = min(-offset, n1)
    base = a[tuple(slice(s, None) for s in start)]
    keep = [k for k in range(a.ndim) if k not in (d1, d2)]
    shape = tuple(a.shape[k] for k in keep) + (length,)
    strides = tuple(a.strides[k] for k in keep) + (a.strides[d1] + a.strides[d2],)
    return as_strided(base, shape, strides, writeable=a.flags.writeable)


def _diagonal(input, offset=0, dim1=-2, dim2=-1):
    d1, d2 = _dims(input.ndim, dim1, dim2)
    return _diagonal_view(input, offset, d1, d2)


_linalg_diagonal = defop(
    "_linalg_diagonal", _diagonal, kind="shape", view=True, method=False,
    vjp=lambda g, input_shape, offset, dim1, dim2:
    _linalg_diag_scatter(g, input_shape, offset, dim1, dim2),
    jvp=lambda t_input, offset, dim1, dim2: _linalg_diagonal(t_input, offset, dim1, dim2),
    interpreted=_NOT_YET,
    batch=dims("dim1", "dim2"))


def _diag_scatter(input, shape, offset=0, dim1=-2, dim2=-1):
    out = np.zeros(shape, input.dtype)
    d1, d2 = _dims(len(shape), dim1, dim2)
    _diagonal_view(out, offset, d1, d2)[...] = input
    return out


_linalg_diag_scatter = defop(
    "_linalg_diag_scatter", _diag_scatter, kind="shape", method=False,
    vjp=lambda g, shape, offset, dim1, dim2: _linalg_diagonal(g, offset, dim1, dim2),
    jvp=lambda t_input, shape, offset, dim1, dim2:
    _linalg_diag_scatter(t_input, shape, offset, dim1, dim2), interpreted=_NOT_YET,
    batch=LOOP)


def linalg_diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """`jitorch.linalg.diagonal`: `A.diagonal` with batch-friendly defaults (a view)."""
    return _linalg_diagonal(A, offset, dim1, dim2)


# --- diag_embed / diag / trace ----------------------------------------------------------------
def _embed_shape(shape, offset, dim1, dim2):
    nd = len(shape) + 1
    d1, d2 = _dims(nd, dim1, dim2)
    n = (shape[-1] if shape else 1) + abs(offset)
    rest = list(shape[:-1])
    out = []
    for k in range(nd):
        out.append(n if k in (d1, d2) else rest.pop(0))
    return tuple(out)


def _diag_embed(input, offset=0, dim1=-2, dim2=-1):
    if input.ndim == 0:
        wrap_dim(-2 if dim1 < 0 else dim1, 1)  # PyTorch's IndexError for a 0-d input
    return _diag_scatter(input, _embed_shape(input.shape, offset, dim1, dim2), offset, dim1, dim2)


diag_embed = defop("diag_embed", _diag_embed, kind="shape",
                   vjp=lambda g, offset, dim1, dim2: _linalg_diagonal(g, offset, dim1, dim2),
                   jvp=lambda t_input, offset, dim1, dim2: t_input.diag_embed(offset, dim1, dim2),
                   interpreted=_NOT_YET,
                   batch=dims("dim1", "dim2", extra=1))


def _diag(input, diagonal=0):
    if input.ndim == 1:
        n = input.shape[0] + abs(diagonal)
        return _diag_scatter(input, (n, n), diagonal, 0, 1)
    if input.ndim == 2:
        return np.array(_diagonal_view(input, diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")


def _diag_vjp(g, input_shape, diagonal):
    if len(input_shape) == 1:
        return _linalg_diagonal(g, diagonal, 0, 1)
    return _linalg_diag_scatter(g, input_shape, diagonal, 0, 1)


diag = defop("diag", _diag, kind="shape", vjp=_diag_vjp,
             jvp=lambda t_input, diagonal: t_input.diag(diagonal), interpreted=_NOT_YET,
             batch=LOOP)


def _trace(input):
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    no_bool(input, "trace")
    d = _diagonal_view(input, 0, 0, 1)
    if input.dtype.kind in "iu":
        return np.asarray(d.sum(dtype=np.int64))
    if dt.is_half_np(input.dtype):
        return np.asarray(d.astype(np.float32).sum()).astype(input.dtype)
    return np.asarray(d.sum())


def _trace_vjp(g, input_shape):
    n = min(input_shape)
    return _linalg_diag_scatter(g.expand((n,)), input_shape, 0, 0, 1)


trace = defop("trace", _trace, kind="reduction", vjp=_trace_vjp,
              jvp=lambda t_input: t_input.trace(), interpreted=_NOT_YET,
              batch=TRACE, autocast={"cpu": "fp32"})


# --- tril / triu --------------------------------------------------------------------------------
def _tri_check(name, input):
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")


def _tril(input, diagonal=0):
    _tri_check("tril", input)
    return np.tril(input, diagonal)


def _triu(input, diagonal=0):
    _tri_check("triu", input)
    return np.triu(input, diagonal)


tril = defop("tril", _tril, kind="shape", inplace=True,
             vjp=lambda g, diagonal: g.tril(diagonal),
             jvp=lambda t_input, diagonal: t_input.tril(diagonal), interpreted=_NOT_YET,
             batch=LEADING)
triu = defop("triu", _triu, kind="shape", inplace=True,
             vjp=lambda g, diagonal: g.triu(diagonal),
             jvp=lambda t_input, diagonal: t_input.triu(diagonal), interpreted=_NOT_YET,
             batch=LEADING)
