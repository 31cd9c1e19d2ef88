"""Indexing: `t[idx]`, `t[idx] = v`, `index_put`, the masked ops, `nonzero` and `argwhere`.

`_getitem`/`_setitem` (bound as `Tensor.__getitem__/__setitem__` in operators.py) parse a Python
index with PyTorch's rules and split it in two, as PyTorch does:
- `basic`: one entry per index element that is applied as a view: an int (select), a
  `(start, stop, step)` slice with concrete bounds, or None (new dim of size 1);
- `adv`: one entry per index position of that view: None (the whole dim) or the position, in
  the op's `indices` list, of an index tensor (a bool mask covers as many dims as it has).
Ints are selects, not advanced indices, so where the advanced dims land follows NumPy's rule
(in place when adjacent, else first) on the view, which is where PyTorch differs from NumPy.

Basic indexing is a view (`_index_view`); advanced indexing is a copy (`_index`) whose VJP is
`_index_backward` (zeros, then accumulate with np.add.at semantics), itself an op, so both are
differentiable to any order. Writes go through `copy_`/`fill_` on a view (basic) or the
in-place `_index_put_` on the view (advanced), so autograd's in-place rules apply.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import _dtype as dt
from .._device.transfer import constant as _constant
from .._tensor import Tensor
from ._util import ON_ARRAYS
from . import infer
from .registry import _pt_name, defop
from .batching import ELEMENTWISE, INDEX, INDEX_BACKWARD, INDEX_VIEW, LOOP

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"
_DATA_SIZE = "the output size depends on the data: no CPU lowering"

__all__ = ["index_put", "masked_fill", "masked_select", "masked_scatter", "nonzero",
           "argwhere"]

_BAD_TENSOR = "tensors used as indices must be long, int, byte or bool tensors"
_CTYPE = {"bool": "bool", "uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t",
          "int32": "int", "int64": "int64_t", "float16": "c10::Half",
          "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double",
          "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


# --- shared helpers (also used by scatter.py) ------------------------------------------------
def _const(arr, dtype=None) -> Tensor:
    """A constant tensor (no history) from a NumPy array, on the default device (in a rule:
    the device the rule runs for)."""
    arr = np.asarray(arr)
    if dtype is not None and arr.dtype != dtype.np:
        arr = arr.astype(dtype.np)
    return _constant(arr, dtype)


def _zeros(shape, dtype) -> Tensor:
    return _constant(np.zeros(shape, dtype.np), dtype)


def _need_tensor(x, op: str, name: str, pos: int) -> None:
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _scalar(value, npdtype) -> np.ndarray:
    """A number (or a one-element array) as a 0-d array of `npdtype`, with PyTorch's overflow
    check: "value cannot be converted to type ... without overflow"."""
    d = dt.from_numpy_dtype(npdtype)
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.item()
    if d is dt.bool:
        return np.asarray(bool(value))
    cat = dt.scalar_category(value)
    bad = False
    if cat == dt.COMPLEX and d.category < dt.COMPLEX:
        bad = value.imag != 0
        value = value.real
        cat = dt.FLOAT
    if d.category == dt.INT and cat == dt.FLOAT:
        # c10's overflows<int>(double) tests the float itself: 127.5 overflows int8 and -0.5
        # uint8 (only integers wrap into an unsigned type); nan and +-inf always overflow
        info = np.iinfo(d.np)
        bad = bad or not info.min <= value <= info.max
        value = 0 if bad else int(value)
    if d.category == dt.INT:
        info = np.iinfo(d.np)
        lo = -255 if d is dt.uint8 else info.min  # uint8 wraps small negatives, as in c10
        bad = bad or not lo <= value <= info.max
    elif d.category == dt.FLOAT and cat <= dt.FLOAT:
        try:
            f = float(value)
        except OverflowError:  # a Python int beyond any float
            f = math.inf
            bad = True
        bad = bad or (math.isfinite(f) and abs(f) > float(dt.finfo(d).max))
    if bad:
        raise RuntimeError(f"value cannot be converted to type {_CTYPE[d.name]} without "
                           "overflow")
    if d is dt.uint8 and value < 0:
        value += 256
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(value, dtype=d.np)


def _broadcast_shape(a: tuple, b: tuple) -> tuple:
    """np.broadcast_shapes with PyTorch's error message (a, b in PyTorch's order)."""
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        n = max(len(a), len(b))
        pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
        for i in range(n - 1, -1, -1):
            if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
                raise RuntimeError(f"The size of tensor a ({pa[i]}) must match the size of "
                                   f"tensor b ({pb[i]}) at non-singleton dimension {i}") from None
        raise


def _check_bool_mask(mask: np.ndarray, msg: str, c_names: bool = True) -> None:
    if mask.dtype != np.bool_:
        d = dt.from_numpy_dtype(mask.dtype)
        name = {"int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
                "uint8": "unsigned char"}.get(d.name, _CTYPE[d.name]) if c_names else \
            _pt_name(d)
        raise RuntimeError(f"{msg}, but got mask with dtype {name}")


def _pad(x: Tensor, shape: tuple) -> Tensor:
    """x placed at the start of a zero tensor of `shape` (gradients of ops that read only a
    leading block of an operand, e.g. scatter's src)."""
    shape = tuple(shape)
    if tuple(x.shape) == shape:
        return x
    if x.ndim != len(shape):
        return x.reshape(shape)
    return _index_backward(x, [], shape, tuple((0, n, 1) for n in x.shape), ())


# --- index parsing -------------------------------------------------------------------------
def _seq_as_tuple(idx) -> bool:
    """NumPy's legacy heuristic, kept by PyTorch: a short list holding a slice, Ellipsis, None, a
    sequence or a tensor is a tuple of indices; otherwise it is one index tensor."""
    if len(idx) >= 32:
        return False
    return any(isinstance(x, (Tensor, list, tuple, slice, np.ndarray, range)) or x is None
               or x is Ellipsis for x in idx)


def _seq_tensor(seq) -> Tensor:
    """An index list/ndarray as an index tensor: bool (or uint8) stays a mask, else int64."""
    arr = np.asarray(seq)
    if arr.dtype.kind == "b":
        return Tensor._make(np.array(arr, dtype=np.bool_))
    if arr.dtype == np.uint8:
        return Tensor._make(arr.astype(np.bool_))
    if arr.dtype.kind not in "iuf" and arr.size:
        raise IndexError(_BAD_TENSOR)
    return Tensor._make(arr.astype(np.int64))


def _classify(it):
    """One index element as (kind, payload)."""
    if it is None:
        return "none", None
    if it is Ellipsis:
        return "ell", None
    if isinstance(it, (bool, np.bool_)):
        return "bool", bool(it)
    if isinstance(it, (int, np.integer)):
        return "int", int(it)
    if isinstance(it, slice):
        return "slice", it
    if isinstance(it, (list, tuple, np.ndarray, range)):  # a range is a sequence of indices
        it = _seq_tensor(it)
    if isinstance(it, Tensor):
        d = it._dtype
        if d is dt.bool or (d is dt.uint8 and it.ndim):
            if it.ndim == 0:
                return "bool", bool(it._data)
            return "mask", it if d is dt.bool else Tensor._make(it._data.astype(np.bool_))
        if d.category != dt.INT:
            raise IndexError(_BAD_TENSOR)
        if it.ndim == 0:  # a 0-d integer tensor selects, like an int (a view)
            return "int", int(it._data)
        if d not in (dt.int64, dt.int32):
            raise IndexError(_BAD_TENSOR)
        return "tensor", it
    if isinstance(it, str):
        raise TypeError("new(): invalid data type 'str'")
    if not isinstance(it, float) and hasattr(it, "__index__"):
        return "int", operator.index(it)
    raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     f"Variables are valid indices (got {type(it).__name__})")


def _slice_bound(x):
    return None if x is None else operator.index(x)


def _parse(shape: tuple, idx):
    """Split a Python index into (basic, adv, index tensors); see the module docstring."""
    ndim = len(shape)
    if isinstance(idx, tuple):
        items = idx
    elif isinstance(idx, list) and _seq_as_tuple(idx):
        items = tuple(idx)
    else:
        if ndim == 0:
            if isinstance(idx, (int, np.integer)) and not isinstance(idx, (bool, np.bool_)):
                raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python "
                                 "or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a "
                                 "number")
            if isinstance(idx, slice):
                raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        items = (idx,)
    cls = [_classify(it) for it in items]
    count = 0
    for kind, p in cls:
        if kind in ("int", "slice", "tensor"):
            count += 1
        elif kind == "mask":
            count += p.ndim
    if count > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    basic, adv, tensors = [], [], []
    dim = real = 0  # input dim consumed; index position (PyTorch's dim in error messages)
    ell_left = ndim - count
    for kind, p in cls:
        if kind == "none":
            basic.append(None)
            adv.append(None)
            real += 1
        elif kind == "ell":
            for _ in range(ell_left):
                basic.append((0, shape[dim], 1))
                adv.append(None)
                dim += 1
                real += 1
            ell_left = 0  # a second Ellipsis stands for no dims
        elif kind == "int":
            size = shape[dim]
            if not -size <= p < size:
                raise IndexError(f"index {p} is out of bounds for dimension {real} with size "
                                 f"{size}")
            basic.append(p % size)
            dim += 1
            real += 1
        elif kind == "slice":
            step = _slice_bound(p.step)
            if step is not None and step < 0:
                raise ValueError("step must be greater than zero")
            s = slice(_slice_bound(p.start), _slice_bound(p.stop), step).indices(shape[dim])
            basic.append(s)
            adv.append(None)
            dim += 1
            real += 1
        elif kind == "bool":
            # PyTorch: unsqueeze, then index the new dim with [0] (True) or [] (False)
            basic.append(None)
            adv.append(len(tensors))
            tensors.append(Tensor._make(np.zeros(1 if p else 0, np.int64)))
            real += 1
        else:  # "tensor" or "mask"
            k = 1 if kind == "tensor" else p.ndim
            for _ in range(k):
                basic.append((0, shape[dim], 1))
                dim += 1
            adv.append(len(tensors))
            tensors.append(p)
            real += k
    if not tensors:
        return _trim_basic(basic, shape), (), []
    while adv and adv[-1] is None:
        adv.pop()
    return _trim_basic(basic, shape), tuple(adv), tensors


def _trim_basic(basic: list, shape: tuple) -> tuple:
    """Drop trailing whole-dim slices (NumPy fills them in); all-whole means no basic part."""
    end = len(basic)
    dim = sum(1 for b in basic if b is not None)
    while end:
        b = basic[end - 1]
        if not (isinstance(b, tuple) and b == (0, shape[dim - 1], 1)):
            break
        end -= 1
        dim -= 1
    return tuple(basic[:end])


def _np_basic(basic: tuple) -> tuple:
    # the trailing Ellipsis keeps results arrays (a[1] of a 1-d array would be a NumPy scalar)
    r = _NP_BASIC.get(basic)
    if r is None:
        r = tuple([slice(*b) if isinstance(b, tuple) else b for b in basic]) + (Ellipsis,)
        if len(_NP_BASIC) < 4096:  # memo: loops index with the same few keys
            _NP_BASIC[basic] = r
    return r


_NP_BASIC: dict = {}


def _np_adv(indices: list, adv: tuple) -> tuple:
    return tuple(slice(None) if a is None else indices[a] for a in adv)


def _check_adv(vshape: tuple, indices: list, adv: tuple) -> None:
    """PyTorch's checks for advanced indices, in its order: masks match the dims they cover,
    index tensors broadcast together, and every index is in bounds."""
    d = ordinal = 0
    shapes, ints = [], []
    for a in adv:
        if a is None:
            d += 1
            continue
        arr = indices[a]
        if arr.dtype == np.bool_:
            if d + arr.ndim > len(vshape):
                raise IndexError(f"too many indices for tensor of dimension {len(vshape)}")
            for j in range(arr.ndim):
                if arr.shape[j] != vshape[d + j]:
                    raise IndexError(f"The shape of the mask {list(arr.shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor "
                                     f"{list(vshape)} at index {d + j}")
            shapes += [(int(np.count_nonzero(arr)),)] * max(arr.ndim, 1)
            ordinal += arr.ndim
            d += arr.ndim
            continue
        if d >= len(vshape):
            raise IndexError(f"too many indices for tensor of dimension {len(vshape)}")
        shapes.append(arr.shape)
        ints.append((ordinal, arr, vshape[d]))
        ordinal += 1
        d += 1
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError("shape mismatch: indexing tensors could not be broadcast together with "
                         "shapes " + ", ".join(str(list(s)) for s in shapes)) from None
    for j, arr, size in ints:
        _check_bounds(arr, size, j, IndexError)


def _check_bounds(arr: np.ndarray, size: int, dim: int, exc=IndexError, lo=None, prefix=""):
    """Every index in [lo, size) (lo defaults to -size)."""
    if not arr.size:
        return
    lo = -size if lo is None else lo
    bad = (arr < lo) | (arr >= size)
    if bad.any():
        v = arr.reshape(-1)[np.argmax(bad.reshape(-1))]
        raise exc(f"{prefix}index {v} is out of bounds for dimension {dim} with size {size}")


# --- reading: t[idx] -----------------------------------------------------------------------
def _index_view_impl(input, basic):
    r = _NP_BASIC.get(basic)  # _np_basic's memo, read inline (the hot path of x[i], x[a:b])
    return input[_np_basic(basic) if r is None else r]


def _index_view_vjp(g, input_shape, basic):
    # (on an array in a first-order CPU backward, the declaration's ON_ARRAYS: the op's impl)
    if type(g) is np.ndarray:
        return _index_backward_impl(g, [], input_shape, basic, ())
    return _index_backward(g, [], input_shape, basic, ())


_index_view = defop("_index_view", _index_view_impl, kind="shape", view=True, method=False,
                    # (`basic`: ints, slices, None, Ellipsis, never a tensor: a backward that
                    # frees saved tensors has none to search for here)
                    vjp=_index_view_vjp, extra={**ON_ARRAYS, "plain_attrs": ("basic",)},
                    jvp=lambda t_input, basic: _index_view(t_input, basic), infer=infer.index_view,
                    batch=INDEX_VIEW)


def _index_impl(input, indices, basic, adv):
    v = input[_np_basic(basic)] if basic else input
    if not adv:
        return np.array(v, copy=True)
    try:
        # NumPy checks bounds itself; PyTorch's checks run only to word the error
        return v[_np_adv(indices, adv)]
    except (IndexError, ValueError):
        _check_adv(v.shape, indices, adv)
        raise


def _index_vjp(g, indices, input_shape, basic, adv):
    return _index_backward(g, indices, input_shape, basic, adv), [None] * len(indices)


_index = defop("_index", _index_impl, lists=("indices",), kind="index", method=False,
               vjp=_index_vjp,
               jvp=lambda t_input, indices, basic, adv: _index(t_input, indices, basic, adv),
               interpreted=_NOT_YET,
               batch=INDEX)


def _index_backward_impl(grad, indices, shape, basic, adv):
    """Zeros of `shape`, with `grad` added at `input[basic][adv]` (repeats accumulate)."""
    half = grad.dtype.itemsize == 2 and dt.is_half_np(grad.dtype)  # (no calls for the others)
    z = np.zeros(shape, np.float32 if half else grad.dtype)
    zv = z[_np_basic(basic)]
    if adv:
        np.add.at(zv, _np_adv(indices, adv), grad)
    else:
        zv[...] = grad
    return z.astype(grad.dtype) if half else z


def _index_backward_vjp(gg, indices, basic, adv):
    return _index(gg, indices, basic, adv), [None] * len(indices)


_index_backward = defop(
    "_index_backward", _index_backward_impl, tensors=("grad",), lists=("indices",),
    kind="index", method=False, vjp=_index_backward_vjp,
    jvp=lambda t_grad, indices, shape, basic, adv: _index_backward(t_grad, indices, shape,
                                                                   basic, adv),
    interpreted=_NOT_YET,
    batch=INDEX_BACKWARD)


def _getitem(self: Tensor, idx) -> Tensor:
    """`self[idx]`: a view for ints, slices, None and Ellipsis; a copy with index tensors."""
    shape = self._data.shape
    t = type(idx)
    if t is Tensor and shape and (idx._dtype is dt.int64 or idx._dtype is dt.int32) \
            and not idx._data.ndim:
        idx = int(idx._data)  # a 0-d int tensor selects as an int (_classify): the path below
        t = int
    if t is int and shape:  # fast path: x[i], the most common index
        size = shape[0]
        if not -size <= idx < size:
            raise IndexError(f"index {idx} is out of bounds for dimension 0 with size {size}")
        return _index_view(self, (idx if idx >= 0 else idx + size,))
    if t is slice and shape:  # fast path: x[a:b], int bounds and a positive step
        try:  # bounds as _parse's _slice_bound reads them (operator.index), or its error
            s = idx.indices(shape[0])
        except (TypeError, ValueError):
            s = (0, 0, 0)
        if s[2] > 0:
            return _index_view(self, () if s == (0, shape[0], 1) else (s,))  # as _trim_basic
    if type(idx) is Tensor and shape and (idx._dtype is dt.int64 or idx._dtype is dt.int32) \
            and idx._data.ndim:  # fast path: x[index tensor], as _parse splits it
        return _index(self, [idx], (), (0,))
    if type(idx) is tuple and len(idx) <= len(shape):
        # fast path: x[i, j] with ints (or 0-d int64/int32 tensors, which select as ints), in
        # bounds: _parse's basic index of ints (never trimmed); anything else goes to _parse
        basic = []
        for i, size in zip(idx, shape):
            if type(i) is Tensor and (i._dtype is dt.int64 or i._dtype is dt.int32) and \
                    not i._data.ndim:
                i = int(i._data)
            if type(i) is not int or not -size <= i < size:
                break
            basic.append(i % size)
        else:
            return _index_view(self, tuple(basic))
    basic, adv, tensors = _parse(shape, idx)
    if not adv:
        return _index_view(self, basic)
    return _index(self, tensors, basic, adv)


# --- writing: t[idx] = value, index_put -------------------------------------------------------
def _index_put_core(input, indices, values, adv, accumulate):
    _check_adv(input.shape, indices, adv)
    out = np.array(input, copy=True)
    idx = _np_adv(indices, adv)
    tshape = np.shape(out[idx])
    try:
        vals = np.broadcast_to(values, tshape)
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values.shape)} cannot "
                           f"be broadcast to indexing result of shape {list(tshape)}") from None
    if accumulate:
        np.add.at(out, idx, vals)
    else:
        out[idx] = vals
    return out


def _index_put_vjp(g, indices, adv, accumulate):
    gi = g if accumulate else _index_put(g, indices, _zeros((), g._dtype), adv, False)
    return gi, [None] * len(indices), _index(g, indices, (), adv)


# The advanced half of `t[idx] = v`: `adv` places the index tensors among the dims of t.
_index_put = defop("_index_put", _index_put_core, lists=("indices",), tensors=("input", "values"),
                   kind="index", method=False, inplace=True, vjp=_index_put_vjp,
                   jvp=lambda t_input, t_values, indices, adv, accumulate:
                   _index_put(t_input, indices, t_values, adv, accumulate), interpreted=_NOT_YET,
                   batch=LOOP)


def _put_dtype_check(input, values):
    if values.dtype != input.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_pt_name(dt.from_numpy_dtype(input.dtype))} for the destination "
                           f"and {_pt_name(dt.from_numpy_dtype(values.dtype))} for the source.")


def _index_put_impl(input, indices, values, accumulate=False):
    _need_tensor(values, "index_put", "values", 3)
    idx, count = [], 0
    for a in indices:
        if a.dtype == np.uint8:
            a = a.astype(np.bool_)
        elif a.dtype != np.bool_ and a.dtype not in (np.int64, np.int32):
            raise IndexError(_BAD_TENSOR)
        count += a.ndim if a.dtype == np.bool_ else 1
        idx.append(a)
    if count > input.ndim:
        raise IndexError(f"too many indices for tensor of dimension {input.ndim} (got {count})")
    _put_dtype_check(input, values)
    return _index_put_core(input, idx, values, tuple(range(len(idx))), accumulate)


def _index_put_pub_vjp(g, indices, accumulate):
    # byte indices are masks: the private ops take them as bool
    indices = [_const(i._data.astype(np.bool_)) if i._dtype is dt.uint8 else i for i in indices]
    return _index_put_vjp(g, indices, tuple(range(len(indices))), accumulate)


index_put = defop("index_put", _index_put_impl, lists=("indices",),
                  tensors=("input", "values"), autocast={"cuda": "promote"}, kind="index",
                  inplace=True,
                  vjp=_index_put_pub_vjp,
                  jvp=lambda t_input, t_values, indices, accumulate:
                  t_input.index_put(indices, t_values, accumulate), interpreted=_NOT_YET,
                  batch=LOOP)


def _strip_leading_ones(value: Tensor) -> Tensor:
    """PyTorch drops a value's leading size-1 dims before broadcasting it into t[idx]."""
    k = 0
    while k < value.ndim and value.shape[k] == 1:
        k += 1
    return value.reshape(tuple(value.shape[k:])) if k else value


def _check_expand(value: Tensor, target: tuple) -> None:
    check_expand(tuple(value.shape), target, value.type)


def check_expand(value_shape: tuple, target: tuple, type_name) -> None:
    """PyTorch's errors for a value of `value_shape` (leading size-1 dims dropped) written to
    `t[idx]` of shape `target` (`type_name()`: the value's legacy type name, for the message);
    also scripted code's functional writes (index_write.py)."""
    if len(value_shape) > len(target):
        raise RuntimeError(f"expand({type_name()}{{{list(value_shape)}}}, "
                           f"size={list(target)}): the number of sizes provided ({len(target)}) "
                           "must be greater or equal to the number of dimensions in the tensor "
                           f"({len(value_shape)})")
    lead = len(target) - len(value_shape)
    for i, s in enumerate(value_shape):
        if s != 1 and s != target[lead + i]:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + i]}) must match "
                               f"the existing size ({s}) at non-singleton dimension {lead + i}.  "
                               f"Target sizes: {list(target)}.  Tensor sizes: "
                               f"{list(value_shape)}")


def _setitem(self: Tensor, idx, value) -> None:
    """`self[idx] = value`: an in-place write (basic: copy_/fill_ on a view; advanced:
    index_put_), so autograd rebases self's history and both self and value get gradients."""
    if isinstance(value, Tensor):
        number = False
    elif isinstance(value, (bool, int, float, complex, np.number, np.bool_)):
        number = True
    else:
        mod = type(value).__module__
        name = type(value).__name__ if mod == "builtins" else f"{mod}.{type(value).__name__}"
        raise TypeError(f"can't assign a {name} to a {self.type()}")
    basic, adv, tensors = _parse(self._data.shape, idx)
    v = _index_view(self, basic) if basic else self
    if not adv:
        if number:
            v.fill_(value)
        else:
            value = _strip_leading_ones(value)
            _check_expand(value, tuple(v.shape))
            v.copy_(value)
        return
    if number:
        value = Tensor._make(_scalar(value, self._dtype.np), self._dtype)
    else:
        value = _strip_leading_ones(value)
        _put_dtype_check(self._data, value._data)
    v._index_put_(tensors, value, adv, False)


# --- masked ops ------------------------------------------------------------------------------
def _fill_value(value, npdtype, who: str):
    if isinstance(value, np.ndarray) and value.ndim:
        raise RuntimeError(f"{who} only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value.ndim} dimension(s).")
    return _scalar(value, npdtype)


def _masked_fill_impl(input, mask, value):
    _need_tensor(mask, "masked_fill", "mask", 2)
    _check_bool_mask(mask, "masked_fill_ only supports boolean masks")
    value = _fill_value(value, input.dtype, "masked_fill_")
    _broadcast_shape(mask.shape, input.shape)  # PyTorch's message when they don't broadcast
    return np.where(mask, value, input).astype(input.dtype, copy=False)


def _masked_fill_vjp(g, mask):
    return g.masked_fill(mask, 0), None, g.masked_fill(_const(~mask._data), 0).sum()


def _masked_fill_jvp(t_input, t_value, mask):
    return t_input.masked_fill(mask, t_value if isinstance(t_value, Tensor) else 0)


masked_fill = defop("masked_fill", _masked_fill_impl, tensors=("input", "mask", "value"),
                    kind="index", inplace=True, vjp=_masked_fill_vjp, jvp=_masked_fill_jvp,
                    interpreted=_NOT_YET,
                    batch=ELEMENTWISE)


def _masked_select_impl(input, mask):
    _need_tensor(mask, "masked_select", "mask", 2)
    if mask.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    shape = _broadcast_shape(mask.shape, input.shape)
    return np.broadcast_to(input, shape)[np.broadcast_to(mask, shape)]


def _masked_select_vjp(g, input_shape, mask):
    shape = np.broadcast_shapes(input_shape, mask.shape)
    return _zeros(shape, g._dtype).masked_scatter(mask, g), None


masked_select = defop("masked_select", _masked_select_impl, tensors=("input", "mask"),
                      kind="index", vjp=_masked_select_vjp,
                      jvp=lambda t_input, mask: t_input.masked_select(mask), interpreted=_DATA_SIZE)


def _masked_scatter_impl(input, mask, source):
    _need_tensor(mask, "masked_scatter", "mask", 2)
    _need_tensor(source, "masked_scatter", "source", 3)
    _check_bool_mask(mask, "masked_scatter_ only supports boolean masks", c_names=False)
    if source.dtype != input.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_pt_name(dt.from_numpy_dtype(input.dtype))} and "
                           f"{_pt_name(dt.from_numpy_dtype(source.dtype))}")
    shape = _broadcast_shape(mask.shape, input.shape)
    m = np.broadcast_to(mask, shape)
    n = int(np.count_nonzero(m))
    if source.size < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = np.array(np.broadcast_to(input, shape), copy=True)
    out[m] = source.reshape(-1)[:n]
    return out


def _masked_scatter_vjp(g, mask, source_shape):
    sel = g.masked_select(mask)
    numel = int(np.prod(source_shape))
    gs = _index_backward(sel, [], (numel,), ((0, sel.shape[0], 1),), ()).reshape(source_shape)
    return g.masked_fill(mask, 0), None, gs


masked_scatter = defop("masked_scatter", _masked_scatter_impl,
                       tensors=("input", "mask", "source"), kind="index", inplace=True,
                       vjp=_masked_scatter_vjp,
                       jvp=lambda t_input, t_source, mask: t_input.masked_scatter(mask, t_source),
                       interpreted=_NOT_YET)


# --- nonzero / argwhere ----------------------------------------------------------------------
def _nonzero_impl(input, *, as_tuple=False):
    nz = input != 0
    if as_tuple:
        return tuple(a.astype(np.int64) for a in np.nonzero(np.atleast_1d(nz)))
    return np.argwhere(nz).astype(np.int64)


nonzero = defop("nonzero", _nonzero_impl, kind="index", nondiff=True, interpreted=_DATA_SIZE)


def _argwhere_impl(input):
    return np.argwhere(input != 0).astype(np.int64)


argwhere = defop("argwhere", _argwhere_impl, kind="index", nondiff=True, interpreted=_DATA_SIZE)
