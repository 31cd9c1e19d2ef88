"""Gather/scatter-style index ops: index_select, gather, scatter, scatter_add, scatter_reduce,
index_add, index_copy, index_fill, take, put, take_along_dim.

Each VJP is written with the family's own ops (gather's VJP is scatter_add, index_select's is
index_add, take's is put, ...), so gradients of gradients work. Index arguments are never
differentiable. Index checks (dtype, rank, bounds) raise PyTorch's exception types and messages,
which differ from op to op as they do in PyTorch.
"""
from __future__ import annotations

import inspect

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._util import wrap_dim
from .indexing import (_broadcast_shape, _check_bounds, _const, _fill_value, _need_tensor,
                       _pad, _scalar, _zeros)
from . import infer
from .registry import _pt_name, defop
from .batching import LOOP, dims

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet (index_select, index_add, embedding are lowered)"

__all__ = ["index_select", "gather", "scatter", "scatter_add", "scatter_reduce", "index_add",
           "index_copy", "index_fill", "take", "put", "take_along_dim"]


def _api(*order):
    """Give an impl PyTorch's parameter order (`gather(input, dim, index)`) as its signature.

    dispatch passes tensor slots positionally and attributes by keyword, so an impl must list
    its slots first; defop builds the public function from `inspect.signature`, which reads
    `__signature__`. Parameters moved in front of a required one lose their default."""
    def deco(fn):
        sig = inspect.signature(fn)
        ps = sig.parameters
        pos = [ps[n] for n in order] + [p for n, p in ps.items()
                                        if n not in order and p.kind != p.KEYWORD_ONLY]
        kw = [p for p in ps.values() if p.kind == p.KEYWORD_ONLY]
        required, fixed = False, []
        for p in reversed(pos):
            if p.default is p.empty:
                required = True
            elif required:
                p = p.replace(default=p.empty)
            fixed.append(p)
        fn.__signature__ = sig.replace(parameters=fixed[::-1] + kw)
        return fn
    return deco


def _name(a: np.ndarray) -> str:
    return _pt_name(dt.from_numpy_dtype(a.dtype))


def _1d(a: np.ndarray) -> np.ndarray:
    """Index ops treat a 0-d tensor as one element along dim 0."""
    return a.reshape(1) if a.ndim == 0 else a


def _vector(index: np.ndarray) -> np.ndarray:
    return index.reshape(-1)


def _along(a: np.ndarray, dim: int) -> np.ndarray:
    """A view of `a` (0-d read as 1-d) with `dim` moved first: index ops address its rows."""
    return np.moveaxis(_1d(a), dim, 0)


# --- index_select ------------------------------------------------------------------------------
@_api("input", "dim", "index")
def _index_select(input, index, dim):
    _need_tensor(index, "index_select", "index", 3)
    if index.dtype not in (np.int64, np.int32):
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if index.ndim > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = wrap_dim(dim, input.ndim)
    size = _1d(input).shape[d]
    idx = _vector(index)
    if idx.size and idx.min() < 0:  # TORCH_CHECK_INDEX: an IndexError, as for idx >= size
        raise IndexError(f"INDICES element is out of DATA bounds, id={idx.min()} "
                         f"axis_dim={size}")
    if idx.size and idx.max() >= size:
        raise IndexError("index out of range in self")
    out = np.take(_1d(input), idx, axis=d)
    return out.reshape(()) if input.ndim == 0 and out.size == 1 else out


index_select = defop("index_select", _index_select, tensors=("input", "index"), kind="index",
                     vjp=lambda g, input_shape, dim, index:
                     (_zeros(input_shape, g._dtype).index_add(dim, index, g), None),
                     jvp=lambda t_input, dim, index: t_input.index_select(dim, index),
                     infer=infer.same,
                     batch=dims("dim"))


# --- gather / scatter --------------------------------------------------------------------------
def _grid(index: np.ndarray, dim: int) -> tuple:
    """The NumPy index addressing `self[i0..index[i]..in]` for every position i of `index`."""
    nd = index.ndim
    return tuple(index if k == dim else
                 np.arange(index.shape[k]).reshape([-1 if j == k else 1 for j in range(nd)])
                 for k in range(nd))


def _index_dtype(index, who: str) -> None:
    if index.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"{who}(): Expected dtype int32/int64 for index")


@_api("input", "dim", "index")
def _gather(input, index, dim, *, sparse_grad=False):
    _need_tensor(index, "gather", "index", 3)
    _index_dtype(index, "gather")
    d = wrap_dim(dim, input.ndim)
    x, ix = _1d(input), _1d(index)
    if ix.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for k in range(x.ndim):
        if k != d and ix.shape[k] > x.shape[k]:
            raise RuntimeError(f"Size does not match at dimension {k} expected index "
                               f"{list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {d}")
    if not ix.size:
        return np.zeros(index.shape, input.dtype)
    _check_bounds(ix, x.shape[d], d, RuntimeError, lo=0)
    return x[_grid(ix, d)].reshape(index.shape)


gather = defop("gather", _gather, tensors=("input", "index"), kind="index",
               vjp=lambda g, input_shape, dim, index:
               (_zeros(input_shape, g._dtype).scatter_add(dim, index, g), None),
               jvp=lambda t_input, dim, index: t_input.gather(dim, index), interpreted=_NOT_YET,
               batch=dims("dim", expand=True))


def _scatter_checks(input, dim, index, src):
    """Shared checks of scatter/scatter_add/scatter_reduce; returns (dim, the 1-d views)."""
    _index_dtype(index, "scatter")
    if isinstance(src, np.ndarray) and src.dtype != input.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    d = wrap_dim(dim, input.ndim)
    x, ix = _1d(input), _1d(index)
    s = _1d(src) if isinstance(src, np.ndarray) else None
    if not ix.size:
        return d, x, ix, s
    if ix.ndim != x.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if s is not None and s.ndim != ix.ndim:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    bad = any(k != d and ix.shape[k] > x.shape[k] for k in range(x.ndim))
    if s is not None:
        bad = bad or any(ix.shape[k] > s.shape[k] for k in range(x.ndim))
    if bad:
        tail = f" and to be no larger size than src {list(src.shape)}" if s is not None else ""
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                           f"{list(input.shape)} apart from dimension {d}{tail}")
    _check_bounds(ix, x.shape[d], d, RuntimeError, lo=0)
    return d, x, ix, s


def _block(s: np.ndarray, shape: tuple) -> np.ndarray:
    """The leading block of src that the index addresses."""
    return s[tuple(slice(0, n) for n in shape)]


@_api("input", "dim", "index", "src", "value")
def _scatter(input, index, src=None, dim=0, value=None, *, reduce=None):
    _need_tensor(index, "scatter", "index", 3)
    if (src is None) == (value is None):
        raise TypeError("scatter() received an invalid combination of arguments: expected "
                        "exactly one of 'src' (a Tensor) or 'value' (a Number)")
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    fill = value if src is None else src
    d, x, ix, s = _scatter_checks(input, dim, index, fill)
    out = np.array(input, copy=True)
    if not ix.size:
        return out
    vals = _block(s, ix.shape) if s is not None else _scalar(fill, input.dtype)
    ov = _1d(out)
    grid = _grid(ix, d)
    if reduce is None:
        ov[grid] = vals
    else:
        ufunc = np.add if reduce == "add" else np.multiply
        ufunc.at(ov, grid, np.broadcast_to(vals, ix.shape))
    return out


def _scatter_vjp(g, index, src, dim, reduce):
    if reduce is not None:
        raise RuntimeError("derivative for aten::scatter is not implemented")
    gs = _pad(g.gather(dim, index), src.shape) if isinstance(src, Tensor) else None
    return g.scatter(dim, index, 0), None, gs


def _scatter_jvp(t_input, t_src, dim, index, reduce):
    if reduce is not None:
        raise RuntimeError("derivative for aten::scatter is not implemented")
    return t_input.scatter(dim, index, t_src if isinstance(t_src, Tensor) else 0)


scatter = defop("scatter", _scatter, tensors=("input", "index", "src"), kind="index",
                inplace=True, vjp=_scatter_vjp, jvp=_scatter_jvp, interpreted=_NOT_YET,
                batch=LOOP)


@_api("input", "dim", "index", "src")
def _scatter_add(input, index, src, dim):
    _need_tensor(index, "scatter_add", "index", 3)
    _need_tensor(src, "scatter_add", "src", 4)
    return _scatter(input, index, src, dim, reduce="add")


scatter_add = defop("scatter_add", _scatter_add, tensors=("input", "index", "src"),
                    autocast={"cuda": "promote"}, kind="index", inplace=True,
                    vjp=lambda g, index, src_shape, dim:
                    (g, None, _pad(g.gather(dim, index), src_shape)),
                    jvp=lambda t_input, t_src, dim, index: t_input.scatter_add(dim, index, t_src),
                    interpreted=_NOT_YET,
                    batch=LOOP)


# --- scatter_reduce ------------------------------------------------------------------------
_REDUCE = {"sum": np.add, "mean": np.add, "prod": np.multiply, "amax": np.maximum,
           "amin": np.minimum}


def _identity(reduce: str, npdtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if npdtype == np.bool_:
        return reduce == "amin"
    if npdtype.kind in "iu":
        info = np.iinfo(npdtype)
        return info.min if reduce == "amax" else info.max
    return -np.inf if reduce == "amax" else np.inf


def _counts(shape, grid, include_self: bool) -> np.ndarray:
    """How many values each output position reduces (1 where none, so dividing is a no-op)."""
    n = np.full(shape, 1 if include_self else 0, np.int64)
    np.add.at(n, grid, 1)
    n[n == 0] = 1
    return n


@_api("input", "dim", "index", "src", "reduce")
def _scatter_reduce(input, index, src, dim, reduce, *, include_self=True):
    _need_tensor(index, "scatter_reduce", "index", 3)
    _need_tensor(src, "scatter_reduce", "src", 4)
    if reduce not in _REDUCE:
        raise RuntimeError("reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    d, x, ix, s = _scatter_checks(input, dim, index, src)
    if reduce == "mean" and input.dtype == np.bool_:
        raise NotImplementedError('"scatter_gather_tensor_cpu_reduce_mean" not implemented for '
                                  "'Bool'")
    comp = np.float32 if dt.is_half_np(input.dtype) else input.dtype
    out = np.array(input, dtype=comp, copy=True)
    if not ix.size:
        return out.astype(input.dtype, copy=False)
    ov = _1d(out)
    grid = _grid(ix, d)
    if not include_self:
        ov[grid] = _identity(reduce, np.dtype(comp))
    _REDUCE[reduce].at(ov, grid, _block(s, ix.shape).astype(comp, copy=False))
    if reduce == "mean":
        n = _counts(ov.shape, grid, include_self)
        if np.dtype(comp).kind in "iu":
            np.floor_divide(ov, n, out=ov, casting="unsafe")
        else:
            np.true_divide(ov, n, out=ov, casting="unsafe")
    return out.astype(input.dtype, copy=False)


def _sr_weights(input, dim, index, src, reduce, include_self, result, dtype):
    """(a, b) with d(result) = a * d(input) + scatter_add(b * d(src block)): PyTorch's
    scatter_reduce_backward formulas (ties share amax/amin gradients evenly)."""
    d = wrap_dim(dim, input.ndim)
    ix = _1d(index._data)
    grid = _grid(ix, d)
    shape = _1d(input._data).shape
    sb = src if tuple(src.shape) == tuple(index.shape) else \
        src[tuple(slice(0, n) for n in index.shape)]
    if reduce == "sum":
        a, b = _const(np.ones(input.shape), dtype), _const(np.ones(index.shape), dtype)
    elif reduce == "mean":
        n = _counts(shape, grid, include_self).astype(np.float64)
        a = _const((1 / n).reshape(input.shape), dtype)
        b = _const((1 / n[grid]).reshape(index.shape), dtype)
    elif reduce in ("amax", "amin"):
        r, xs, ss = _1d(result._data), _1d(input._data), _1d(sb._data)
        self_is = (xs == r).astype(np.float64)
        src_is = (ss == r[grid]).astype(np.float64)
        n = self_is.copy()
        np.add.at(n, grid, src_is)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = _const((self_is / n).reshape(input.shape), dtype)
            b = _const((src_is / n[grid]).reshape(index.shape), dtype)
    else:  # prod: exclusive products, with the zero cases done explicitly as PyTorch does
        xs, ss = input._data, sb._data
        masked_self = input.masked_fill(_const(xs == 0), 1)
        a = masked_self.scatter_reduce(dim, index, src, "prod", include_self=include_self) \
            / masked_self
        src_zero = _1d(ss == 0)
        nz = np.zeros(shape, np.int64)
        np.add.at(nz, grid, src_zero)
        single = (src_zero & (nz[grid] == 1)).reshape(index.shape)
        masked_src = sb.masked_fill(_const(single), 1)
        msr = input.scatter_reduce(dim, index, masked_src, "prod", include_self=include_self)
        b = msr.gather(dim, index).masked_fill(_const(~single), 0) + \
            (result.gather(dim, index) / sb.masked_fill(_const(ss == 0), 1)) \
            .masked_fill(_const(single), 0)
    if not include_self:
        a = a.scatter(dim, index, 0)
    return a, b


def _scatter_reduce_vjp(g, input, index, src, result, dim, reduce, include_self):
    a, b = _sr_weights(input, dim, index, src, reduce, include_self, result, g._dtype)
    return g * a, None, _pad(g.gather(dim, index) * b, src.shape)


def _scatter_reduce_jvp(t_input, t_src, input, index, src, result, dim, reduce, include_self):
    a, b = _sr_weights(input, dim, index, src, reduce, include_self, result, t_input._dtype)
    ts = t_src if tuple(t_src.shape) == tuple(index.shape) else \
        t_src[tuple(slice(0, n) for n in index.shape)]
    return t_input * a + _zeros(tuple(input.shape), t_input._dtype).scatter_add(dim, index,
                                                                               ts * b)


scatter_reduce = defop("scatter_reduce", _scatter_reduce, tensors=("input", "index", "src"),
                       kind="index", inplace=True, vjp=_scatter_reduce_vjp,
                       jvp=_scatter_reduce_jvp, interpreted=_NOT_YET,
                       batch=LOOP)


# --- index_add / index_copy / index_fill ------------------------------------------------------
def _check_source_shape(input, source, dim, n, count_error):
    if input.ndim == 0:
        ok = source.ndim == 0
    else:
        ok = source.ndim == input.ndim and all(
            source.shape[k] == input.shape[k] for k in range(input.ndim) if k != dim)
    if not ok:
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(input.shape)} "
                           f"source.shape = {list(source.shape)}")
    if count_error is not None and _1d(source).shape[dim] != n:
        raise count_error


@_api("input", "dim", "index", "source")
def _index_add(input, index, source, dim, *, alpha=1):
    _need_tensor(index, "index_add", "index", 3)
    _need_tensor(source, "index_add", "source", 4)
    if index.dtype not in (np.int64, np.int32):
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{_name(index)}")
    if index.ndim > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{index.ndim} with type: {_name(index)} and size: "
                         f"{list(index.shape)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_add_(): self ({_name(input)}) and source ({_name(source)}) "
                           "must have the same scalar type")
    d = wrap_dim(dim, input.ndim)
    idx = _vector(index)
    _check_source_shape(input, source, d, idx.size, RuntimeError(
        f"index_add_(): Number of indices ({idx.size}) should be equal to source.size(dim): "
        f"({_1d(source).shape[d]}), for dim: {d}"))
    _check_bounds(idx, _1d(input).shape[d], d, RuntimeError, lo=0)
    comp = np.float32 if dt.is_half_np(input.dtype) else input.dtype
    out = np.array(input, dtype=comp, copy=True)
    if input.dtype.kind in "iu":
        alpha = int(alpha)
    vals = _along(source, d).astype(comp)
    if alpha != 1:
        vals = (vals * alpha).astype(comp)
    np.add.at(_along(out, d), idx, vals)
    return out.astype(input.dtype, copy=False)


def _index_add_vjp(g, index, dim, alpha):
    gs = g.index_select(dim, index)
    return g, None, gs * alpha if alpha != 1 else gs


index_add = defop("index_add", _index_add, tensors=("input", "index", "source"), kind="index",
                  inplace=True, vjp=_index_add_vjp,
                  jvp=lambda t_input, t_source, dim, index, alpha:
                  t_input.index_add(dim, index, t_source, alpha=alpha), infer=infer.same,
                  batch=LOOP)


@_api("input", "dim", "index", "source")
def _index_copy(input, index, source, dim):
    _need_tensor(index, "index_copy", "index", 3)
    _need_tensor(source, "index_copy", "source", 4)
    if index.dtype != np.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{_name(index)}")
    if index.ndim > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {index.ndim})")
    if source.dtype != input.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, "
                           f"but got (self) {_name(input)} and (source) {_name(source)}")
    d = wrap_dim(dim, input.ndim)
    idx = _vector(index)
    if _1d(source).shape[d] != idx.size:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to "
                         f"source.size(dim) ({_1d(source).shape[d]})")
    if not (source.ndim == 0 and input.ndim <= 1):  # PyTorch also takes a 0-d source
        _check_source_shape(input, source, d, idx.size, None)
    _check_bounds(idx, _1d(input).shape[d], d, IndexError, lo=0, prefix="index_copy_(): ")
    out = np.array(input, copy=True)
    _along(out, d)[idx] = _along(source, d)
    return out


index_copy = defop("index_copy", _index_copy, tensors=("input", "index", "source"),
                   kind="index", inplace=True,
                   vjp=lambda g, index, dim:
                   (g.index_fill(dim, index, 0), None, g.index_select(dim, index)),
                   jvp=lambda t_input, t_source, dim, index:
                   t_input.index_copy(dim, index, t_source), interpreted=_NOT_YET,
                   batch=LOOP, autocast={"cpu": "promote"})


@_api("input", "dim", "index", "value")
def _index_fill(input, index, value, dim):
    _need_tensor(index, "index_fill", "index", 3)
    if index.dtype != np.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    value = _fill_value(value, input.dtype, "index_fill_")
    d = wrap_dim(dim, input.ndim)
    idx = _vector(index)
    _check_bounds(idx, _1d(input).shape[d], d, IndexError)
    out = np.array(input, copy=True)
    _along(out, d)[idx] = value
    return out


def _index_fill_vjp(g, index, dim):
    gi = g.index_fill(dim, index, 0)
    return gi, None, (g - gi).sum()


index_fill = defop("index_fill", _index_fill, tensors=("input", "index", "value"),
                   kind="index", inplace=True, vjp=_index_fill_vjp,
                   jvp=lambda t_input, t_value, dim, index:
                   t_input.index_fill(dim, index, t_value if isinstance(t_value, Tensor) else 0),
                   interpreted=_NOT_YET,
                   batch=LOOP)


# --- take / put / take_along_dim ---------------------------------------------------------------
def _flat_bounds(idx: np.ndarray, n: int) -> None:
    if idx.size:
        bad = (idx < -n) | (idx >= n)
        if bad.any():
            v = idx.reshape(-1)[np.argmax(bad.reshape(-1))]
            raise IndexError(f"out of range: tried to access index {v} on a tensor of {n} "
                             "elements.")


def _take(input, index):
    _need_tensor(index, "take", "index", 2)
    if index.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_name(index)}")
    if input.size == 0 and index.size:
        raise IndexError("take(): tried to take from an empty tensor")
    _flat_bounds(index, input.size)
    return input.reshape(-1)[index]


take = defop("take", _take, tensors=("input", "index"), kind="index",
             vjp=lambda g, input_shape, index:
             (_zeros(input_shape, g._dtype).put(index, g, accumulate=True), None),
             jvp=lambda t_input, index: t_input.take(index), interpreted=_NOT_YET)


def _put(input, index, source, accumulate=False):
    _need_tensor(index, "put", "index", 2)
    _need_tensor(source, "put", "source", 3)
    if index.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_name(index)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_name(input)} and source.dtype = {_name(source)}")
    if source.size != index.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.size}, index.numel() = "
                         f"{index.size}")
    _flat_bounds(index, input.size)
    out = np.array(input, copy=True, order="C")
    flat = out.reshape(-1)
    if accumulate:
        np.add.at(flat, index.reshape(-1), source.reshape(-1))
    else:
        flat[index.reshape(-1)] = source.reshape(-1)
    return out


def _put_vjp(g, index, source_shape, accumulate):
    gi = g if accumulate else g.put(index, _zeros(source_shape, g._dtype))
    return gi, None, g.take(index).reshape(source_shape)


put = defop("put", _put, tensors=("input", "index", "source"), kind="index", inplace=True,
            vjp=_put_vjp,
            jvp=lambda t_input, t_source, index, accumulate:
            t_input.put(index, t_source, accumulate), interpreted=_NOT_YET)


def _tad_layout(in_shape: tuple, idx_shape: tuple, d: int):
    """Shapes input and indices broadcast to (all dims but `d`)."""
    if len(idx_shape) != len(in_shape):
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {len(in_shape)} dimensions for "
                           f"input, and {len(idx_shape)} dimensions for indices")
    a = list(in_shape)
    b = list(idx_shape)
    a[d] = b[d] = 1
    common = list(_broadcast_shape(tuple(a), tuple(b)))
    bi, bx = common.copy(), common.copy()
    bi[d], bx[d] = in_shape[d], idx_shape[d]
    return tuple(bi), tuple(bx)


def _take_along_dim(input, indices, dim=None):
    _need_tensor(indices, "take_along_dim", "indices", 2)
    if dim is None:
        if indices.dtype not in (np.int64, np.int32):
            raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but "
                               f"got {_name(indices)}")
        idx = indices.reshape(-1)
        _check_bounds(idx, input.size, 0, RuntimeError, lo=0)  # no wrapping here, as PyTorch
        return input.reshape(-1)[idx]
    if indices.dtype != np.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{_name(indices)}")
    if input.ndim == 0:
        if indices.ndim:
            _tad_layout(input.shape, indices.shape, 0)  # raises: ranks differ
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, input.ndim)
    bi, bx = _tad_layout(input.shape, indices.shape, d)
    idx = np.broadcast_to(indices, bx)
    _check_bounds(idx, input.shape[d], d, RuntimeError)
    idx = np.where(idx < 0, idx + input.shape[d], idx)
    return np.take_along_axis(np.broadcast_to(input, bi), idx, axis=d)


def _wrapped(indices: Tensor, size: int) -> Tensor:
    a = indices._data
    return _const(np.where(a < 0, a + size, a).astype(np.int64))


def _take_along_dim_vjp(g, input_shape, indices, dim):
    if dim is None:
        n = int(np.prod(input_shape))
        flat = _zeros((n,), g._dtype).scatter_add(0, _wrapped(indices, n).reshape(-1),
                                                  g.reshape(-1))
        return flat.reshape(input_shape), None
    d = wrap_dim(dim, len(input_shape))
    bi, bx = _tad_layout(tuple(input_shape), tuple(indices.shape), d)
    idx = _wrapped(indices, input_shape[d]).expand(bx)
    return _zeros(bi, g._dtype).scatter_add(d, idx, g), None


take_along_dim = defop("take_along_dim", _take_along_dim, tensors=("input", "indices"),
                       kind="index", vjp=_take_along_dim_vjp,
                       jvp=lambda t_input, indices, dim: t_input.take_along_dim(indices, dim),
                       interpreted=_NOT_YET,
                       batch=LOOP)
