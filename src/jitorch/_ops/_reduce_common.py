"""Helpers shared by the reduction, scan and sort families.

Owns: reduction-axis normalisation (`axes_of`), the emptiness checks PyTorch makes before
reducing, the internal ops their gradient rules are written with (`_take_along` / `_put_along`,
a gather and a scatter-add that differentiate into each other; `_flip`; constant masks), and
`public`, which registers a thin Python wrapper (namedtuple results, overloads) as a public op.

The masks are ops (not `._data` reads inside rules) so that VJP rules stay traceable; they are
declared `nondiff` because a mask is piecewise constant.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.graph import plain_grad
from ._util import reduce_dims, wrap_dim
from .registry import PUBLIC, _pt_name, defop
from .batching import LOOP, dims
from .shape import _expand

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__: list = []


def axes_of(dim, ndim: int) -> tuple:
    """Reduced axes; None and an empty sequence both mean every dim (PyTorch's sum/amax)."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(ndim))
    if isinstance(dim, Tensor):
        dim = dim.__index__()
    return reduce_dims(dim, ndim)


def np_axes(axes: tuple, ndim: int):
    return None if ndim == 0 else axes


def one_dim(dim, ndim: int, name: str) -> int:
    """A single int dim (ops like prod, cumsum, sort take exactly one)."""
    if isinstance(dim, (list, tuple)) or dim is None:
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    if isinstance(dim, Tensor):
        dim = dim.__index__()
    return wrap_dim(dim, ndim)


def check_full_nonempty(name: str, input: np.ndarray) -> None:
    if input.size == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")


def check_dims_nonempty(name: str, input: np.ndarray, axes) -> None:
    if input.ndim == 0:
        return
    for a in axes:
        if input.shape[a] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {a} to have non-zero size.")


def pt_name(np_dtype) -> str:
    return _pt_name(dt.from_numpy_dtype(np_dtype))


def compute_array(a: np.ndarray) -> np.ndarray:
    """Half types compute in float32, like PyTorch's CPU opmath."""
    return a.astype(np.float32) if dt.is_half_np(a.dtype) else a


def public(fn, name: str | None = None, method: bool = True):
    """Register a hand-written wrapper as the public op `jitorch.<name>` (and Tensor method)."""
    name = name or fn.__name__
    fn.__module__ = "jitorch"
    fn.__qualname__ = name
    PUBLIC[name] = fn
    if method:
        setattr(Tensor, name, fn)
    return fn


# --- gather / scatter-add along one dim (gradients of selections) ------------------------------
def _index_tuple(index: np.ndarray, dim: int):
    idx = list(np.ix_(*[np.arange(s) for s in index.shape]))
    idx[dim] = index
    return tuple(idx)


def _take_along_impl(input, index, dim):
    if input.ndim == 0:
        return input[()] if index.ndim == 0 else np.broadcast_to(input, index.shape).copy()
    return np.take_along_axis(input, index.astype(np.intp), axis=dim)


def _put_along_impl(src, index, dim, shape):
    out = np.zeros(shape, src.dtype)
    if len(shape) == 0:
        return np.asarray(out + src.sum(), src.dtype)
    if index.size == 1 and src.size == 1 and index.ndim == len(shape):
        # one index (a max over a vector's only lane): one element, as np.add.at adds it
        pos = [0] * len(shape)
        pos[dim] = int(index.reshape(-1)[0])
        out[tuple(pos)] += src.reshape(-1)[0]
    elif index.size:
        if index.shape[dim] == 1 and index.shape == src.shape:
            # one index per lane (the gradient of max/min/median/mode over `dim`): no position
            # is hit twice, so a buffered `+=` adds what np.add.at adds, without its cost
            out[_index_tuple(index.astype(np.intp), dim)] += src
        else:
            np.add.at(out, _index_tuple(index.astype(np.intp), dim), src)
    return out


take_along = defop("_take_along", _take_along_impl, tensors=("input", "index"), kind="index",
                   method=False,
                   vjp=lambda g, index, dim, input_shape:
                   (put_along(g, index, dim, input_shape), None),
                   jvp=lambda t_input, index, dim: take_along(t_input, index, dim),
                   interpreted=_NOT_YET,
                   batch=dims("dim", expand=True))

put_along = defop("_put_along", _put_along_impl, tensors=("src", "index"), kind="index",
                  method=False,
                  vjp=lambda g, index, dim: (take_along(g, index, dim), None),
                  jvp=lambda t_src, index, dim, shape: put_along(t_src, index, dim, shape),
                  interpreted=_NOT_YET,
                  batch=LOOP)


def _flip_impl(input, dims):
    return np.flip(input, dims).copy() if input.ndim else input.copy()


flip_ = defop("_flip", _flip_impl, kind="shape", method=False,
              vjp=lambda g, dims: flip_(g, dims), jvp=lambda t_input, dims: flip_(t_input, dims),
              interpreted=_NOT_YET,
              batch=dims("dims"))


# --- constant masks (nondiff) ------------------------------------------------------------------
def _eq_mask_impl(input, other, nan_equal=True):
    eq = input == other
    if nan_equal and input.dtype.kind in "fc":  # a NaN extremum selects the NaN elements
        eq |= np.isnan(input) & np.isnan(other)
    return eq


eq_mask = defop("_eq_mask", _eq_mask_impl, tensors=("input", "other"), kind="elementwise",
                method=False, nondiff=True,
                # x != x is the NaN test that also types for integers (Numba rejects float(bool))
                scalar="(({input} == {other}) or ({nan_equal} and {input} != {input} and "
                       "{other} != {other}))")


def _notnan_mask_impl(input):
    return ~np.isnan(input)


notnan_mask = defop("_notnan_mask", _notnan_mask_impl, kind="elementwise", method=False,
                    nondiff=True, scalar="({input} == {input})")


def _sign_mask_impl(input):
    return np.sign(input)


sign_mask = defop("_sign_mask", _sign_mask_impl, kind="elementwise", method=False,
                  nondiff=True, scalar="np.sign({input})")


# --- |x| ** p, differentiable to any order (norm's gradients) ----------------------------------
def _powabs_impl(input, p):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(np.abs(input), p)


def _powabs_vjp(g, input, p):
    if p == 0:
        return g * 0
    return g * (powabs(input, p - 1) * sign_mask(input) * p)


powabs = defop("_powabs", _powabs_impl, kind="elementwise", dtype="float", method=False,
               vjp=_powabs_vjp,
               jvp=lambda t_input, input, p: t_input * 0 if p == 0 else
               t_input * (powabs(input, p - 1) * sign_mask(input) * p),
               scalar="np.abs({input}) ** {p}")


def unsqueeze_dims(g: Tensor, axes: tuple, ndim: int) -> Tensor:
    """Insert the reduced axes back as size-1 dims (the inverse of keepdim=False)."""
    if not ndim:
        return g
    return g.reshape(_unsqueezed(g.shape, axes))


def _unsqueezed(shape, axes: tuple) -> list:
    out = list(shape)
    for a in axes:
        out.insert(a, 1)
    return out


def expand_back(g: Tensor, input_shape, axes: tuple, keepdim: bool) -> Tensor:
    if plain_grad(g):
        # a first-order CPU backward: the reshape and expand below as their impls compute them,
        # on the array (no dispatch)
        a = g._data
        if not keepdim and a.ndim:
            a = a.reshape(_unsqueezed(a.shape, axes))
        return Tensor._make(_expand(a, tuple(input_shape)), g._dtype)
    if not keepdim and g.dim() == 0:  # everything reduced: the 0-d value expands directly
        return g.expand(input_shape)
    if not keepdim:
        g = unsqueeze_dims(g, axes, len(input_shape))
    return g.expand(input_shape)


# Gradient rules shared by every (values, indices) selection over one dim: max/min(dim),
# median(dim), mode, kthvalue, sort, topk...
def index_pick_vjp(g, result, input_shape, dim, keepdim):
    """Gradient of (values, indices) selections: to the chosen index only."""
    gv, idx = g[0], result[1]
    nd = len(input_shape)
    if nd == 0:
        return gv
    axis = dim % nd
    if not keepdim:
        gv, idx = gv.unsqueeze(axis), idx.unsqueeze(axis)
    return put_along(gv, idx, axis, input_shape)


def index_pick_jvp(t_input, result, dim, keepdim):
    vals, idx = result
    if t_input.ndim == 0:
        return t_input, None
    axis = dim % t_input.ndim
    if not keepdim:
        idx = idx.unsqueeze(axis)
    return take_along(t_input, idx, axis).reshape(vals.shape), None
