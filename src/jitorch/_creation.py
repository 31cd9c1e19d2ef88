"""Tensor creation: `tensor`, `as_tensor`, `asarray`, `from_numpy`, `scalar_tensor`,
`zeros/ones/full/empty(_like)`, `empty_strided`, and the shared argument helpers (sizes, dtypes,
checked Scalar conversion, `out=`). The range and structured-matrix factories (`arange`,
`linspace`, `logspace`, `eye`, `tril/triu_indices`) live in `_ranges.py` and are re-exported.

Invariants: dtype inference follows PyTorch (`tensor`: the promotion of every leaf's dtype, with
Python bools -> bool, ints -> int64, floats -> the default dtype, complex -> the default complex
dtype; numpy scalars/arrays and tensors keep theirs). Python values converted to an integer dtype
are range-checked like PyTorch (RuntimeError "value cannot be converted ... without overflow");
NumPy arrays and tensors are cast without checks. Factories take `dtype`, `device`,
`requires_grad` (and `out=` where PyTorch has it) keywords like PyTorch's. `empty*` return zeros:
uninitialised memory would make results nondeterministic.
"""
from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from . import _dtype as dt
from ._determinism import empty_fill as _empty_fill  # zeros, or PyTorch's deterministic fill
from ._device import CPU, as_device, placed as _placed
from ._device.transfer import check_out_device, factory as _on_device, place as _place, \
    target as _target
from ._layout import factory_layout
from ._tensor import Tensor

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "scalar_tensor", "zeros", "ones",
           "full", "empty", "zeros_like", "ones_like", "full_like", "empty_like",
           "empty_strided", "arange", "linspace", "logspace", "eye", "tril_indices",
           "triu_indices"]

_PY_TYPES = {builtins.bool: dt.BOOL, builtins.int: dt.INT, builtins.float: dt.FLOAT,
             builtins.complex: dt.COMPLEX}
_PY_DTYPE = {builtins.float: dt.float64, builtins.int: dt.int64, builtins.bool: dt.bool,
             builtins.complex: dt.complex128}
# C++ names PyTorch's Scalar conversion errors use (full, fill_, scalar_tensor)
_C_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int",
            "int64": "int64_t", "float32": "float", "float64": "double", "float16": "double",
            "bfloat16": "double"}
_C_FLOAT_NAMES = {"float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float"}


# While a trace runs (the tracer installs it): script/frontend/factory.py's
# `note_factory(name, result, requires_grad, params)`. Eager factories call it with the
# parameters of their IR node (`_ops/factories.py`) as the caller gave them (sizes read from
# traced tensors stay `TracedInt`s), so the trace records the factory with run-time sizes
# instead of baking its result in
trace_hook = [None]


def _raw_size(args: tuple, size=None):
    """The size a sized factory was given, before checking (`zeros(2, 3)`, `zeros((2, 3))`,
    `zeros(size=x.shape)`): what the trace records."""
    if size is not None:
        return size
    return args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


def sparse_result(fname: str, shape, dtype, device, requires_grad: bool, out=None):
    """A factory's `layout=sparse_coo` result (`_layout.factory_layout` said it makes one): the
    all-zero sparse COO tensor, on the CPU (jitorch's sparse tensors live there)."""
    if out is not None:
        raise RuntimeError("layout Sparse does not match layout of out parameter (Strided)")
    if device is not None and as_device(device).type != "cpu":
        from ._layout import unsupported
        raise NotImplementedError(unsupported(f"aten::{fname}") + f" (device {device})")
    from .sparse._coo import zeros as sparse_zeros
    return sparse_zeros(shape, _dtype_arg(dtype, fname) or dt.get_default_dtype(),
                        requires_grad)


# --- argument helpers ----------------------------------------------------------------------------
def _dtype_arg(d, fname: str = "tensor"):
    """A `dtype=` argument: a jitorch dtype, or a Python type as PyTorch allows (float->float64)."""
    if d is None or isinstance(d, dt.dtype):
        return d
    if d in _PY_DTYPE:
        return _PY_DTYPE[d]
    raise TypeError(f"{fname}(): argument 'dtype' must be torch.dtype, not {type(d).__name__}")


def _finish(arr: np.ndarray, dtype: dt.dtype, requires_grad: bool, dev=CPU) -> Tensor:
    t = Tensor._make(arr, dtype)
    if dev is not CPU:
        _place(t, dev)
    if requires_grad:
        if dtype.category < dt.FLOAT:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        t.requires_grad_(True)
    return t


def _write_out(out: Tensor, arr: np.ndarray, dtype: dt.dtype | None, fname: str) -> Tensor:
    """`out=` for factories: out keeps its dtype (a different `dtype=` is an error) and is
    resized to the result's shape."""
    from ._ops.registry import _pt_name
    if dtype is not None and dtype is not out._dtype:
        raise RuntimeError(f"dtype {_pt_name(dtype)} does not match dtype of out parameter "
                           f"({_pt_name(out._dtype)})")
    if out._data.shape == arr.shape:
        out._data[...] = arr
    else:
        out._data = arr.astype(out._dtype.np)
    out._version[0] += 1
    return out


def _index_like(s):
    """An int size entry: Python/NumPy ints and one-element integer tensors (not bools)."""
    if isinstance(s, Tensor):
        return s.__index__()
    if isinstance(s, (builtins.bool, np.bool_)) or not isinstance(s, (builtins.int, np.integer)):
        return None
    return builtins.int(s)


def _size_args(fname: str, args: tuple, size=None) -> tuple:
    """Sizes given as varargs (`zeros(2, 3)`), one sequence (`zeros((2, 3))`) or `size=`."""
    if size is not None:
        if args:
            raise TypeError(f"{fname}() got multiple values for argument 'size'")
        args = (size,)
    if not args:
        raise TypeError(f'{fname}() missing 1 required positional arguments: "size"')
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        seq = tuple(args[0])
    elif len(args) == 1:
        v = _index_like(args[0])
        if v is None:
            raise TypeError(f"{fname}(): argument 'size' (position 1) must be tuple of ints, not "
                            f"{type(args[0]).__name__}")
        seq = (v,)
    else:
        if any(isinstance(a, (tuple, list)) for a in args):
            raise TypeError(f"{fname}() takes 1 positional argument but {len(args)} were given")
        seq = args
    return _check_sizes(fname, seq)


def _check_sizes(fname: str, seq) -> tuple:
    out = []
    for i, s in enumerate(seq):
        v = _index_like(s)
        if v is None:
            raise TypeError(f"{fname}(): argument 'size' failed to unpack the object at pos "
                            f"{i + 1} with error \"type must be tuple of ints,but got "
                            f"{type(s).__name__}\"")
        out.append(v)
    for v in out:
        if v < 0:
            if fname == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {v}: {out}")
    return tuple(out)


def _size_tuple(fname: str, size, pos: int = 1) -> tuple:
    """A `size` argument that must be a sequence (`full`, `randint`, `normal`)."""
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{fname}(): argument 'size' (position {pos}) must be tuple of ints, "
                        f"not {type(size).__name__}")
    return _check_sizes(fname, size)


def _num(x) -> str:
    """A number as C++'s ostream prints it (6 significant digits)."""
    return f"{x:g}" if isinstance(x, builtins.float) else str(x)


def _scalar_value(v, fname: str):
    if isinstance(v, Tensor):
        if v.numel() != 1:
            raise RuntimeError(f"{fname}(): a Tensor with {v.numel()} elements cannot be "
                               "converted to Scalar")
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    if not isinstance(v, (builtins.bool, builtins.int, builtins.float, builtins.complex)):
        raise TypeError(f"{fname}(): argument 'fill_value' must be Number, not "
                        f"{type(v).__name__}")
    return v


def _scalar_dtype(v) -> dt.dtype:
    return dt._scalar_default(dt.scalar_category(v))


def _convert_scalar(v, d: dt.dtype):
    """PyTorch's checked Scalar conversion (full, scalar_tensor): the value to store in `d`."""
    err = RuntimeError(f"value cannot be converted to type {_C_NAMES.get(d.name, d.name)} "
                       "without overflow")
    if d is dt.bool:
        return builtins.bool(v)
    if isinstance(v, builtins.complex) and d.category != dt.COMPLEX:
        if v.imag != 0:
            raise err
        v = v.real
    if d.category == dt.INT:
        if isinstance(v, builtins.float):
            info = np.iinfo(d.np)
            if math.isnan(v) or not info.min <= v <= info.max:
                raise err
            return builtins.int(v)
        return _wrap_int(builtins.int(v), d, err)
    if d.category == dt.FLOAT and d is not dt.float64 and not isinstance(v, builtins.complex) \
            and math.isfinite(v) and abs(v) > dt.finfo(d).max:
        raise RuntimeError(f"value cannot be converted to type {_C_FLOAT_NAMES[d.name]} "
                           "without overflow")
    return v


def _wrap_int(v: int, d: dt.dtype, err: Exception) -> int:
    """Range check for integers; unsigned types accept negatives down to -max (two's complement
    wrap), as PyTorch does."""
    info = np.iinfo(d.np)
    if info.min == 0:
        if v > info.max or (v < 0 and -v > info.max):
            raise err
        return v % (info.max + 1)
    if not info.min <= v <= info.max:
        raise err
    return v


# --- torch.tensor: nested Python data ------------------------------------------------------------
def _is_seq(x) -> bool:
    return isinstance(x, (list, tuple, range, np.ndarray))


def _leaf_dtype(x, given: dt.dtype | None) -> dt.dtype | None:
    """The dtype a scalar leaf contributes to inference; raises PyTorch's errors."""
    if isinstance(x, Tensor):
        return x._dtype
    if isinstance(x, np.generic):
        return dt.bool if isinstance(x, np.bool_) else dt.from_numpy_dtype(x.dtype)
    cat = _PY_TYPES.get(type(x))
    if cat is None:
        for k, c in _PY_TYPES.items():
            if isinstance(x, k):
                cat = c
    if cat is not None:
        return dt._scalar_default(cat)
    if isinstance(x, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if given is not None:
        raise TypeError(_not_scalar_msg(x, given))
    raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")


def _not_scalar_msg(x, d: dt.dtype) -> str:
    if d.category <= dt.INT:
        return f"'{type(x).__name__}' object cannot be interpreted as an integer"
    return f"must be real number, not {type(x).__name__}"


class _Misplaced(Exception):
    """A sequence where a scalar belongs: becomes PyTorch's TypeError once the dtype is known."""

    def __init__(self, item):
        super().__init__()
        self.item = item


class _Scan:
    """What one walk over nested data found: leaf dtypes, the first shape error, and whether
    leaves other than Python scalars need unwrapping."""

    def __init__(self, sizes, given):
        self.sizes = sizes
        self.given = given
        self.dtypes = set()
        self.error = None
        self.has_tensor = False

    def fail(self, exc):
        if self.error is None:
            self.error = exc


def _sizes(data) -> list:
    """PyTorch's compute_sizes: follow the first element of each nesting level."""
    sizes = []
    x = data
    while _is_seq(x) or isinstance(x, str):
        if isinstance(x, str):
            raise ValueError("too many dimensions 'str'")
        n = len(x)
        sizes.append(n)
        if n == 0:
            break
        x = x[0]
    return sizes


def _walk(x, dim: int, st: _Scan) -> None:
    ndim = len(st.sizes)
    if dim < ndim and len(x) != st.sizes[dim]:
        st.fail(ValueError(f"expected sequence of length {st.sizes[dim]} at dim {dim} "
                           f"(got {len(x)})"))
    if isinstance(x, np.ndarray):
        st.dtypes.add(dt.from_numpy_dtype(x.dtype))
        if dim < ndim and x.shape != tuple(st.sizes[dim:]):
            st.fail(ValueError(f"expected sequence of length {st.sizes[-1]} at dim {ndim - 1} "
                               f"(got {x.shape[-1] if x.ndim else 0})"))
        return
    if len(x) == 0:
        st.dtypes.add(dt.get_default_dtype())
        return
    types = set(map(type, x))
    if types <= _PY_TYPES.keys():  # the common case: a row of Python numbers
        st.dtypes.update(dt._scalar_default(_PY_TYPES[t]) for t in types)
        if dim + 1 < ndim:
            st.fail(TypeError("not a sequence"))
        return
    for item in x:
        if _is_seq(item):
            if dim + 1 >= ndim and dim < ndim:
                st.fail(_Misplaced(item))  # the message depends on the inferred dtype
            _walk(item, dim + 1, st)
            continue
        st.dtypes.add(_leaf_dtype(item, st.given))
        if dim + 1 < ndim:
            st.fail(TypeError("not a sequence"))
        elif isinstance(item, Tensor):
            st.has_tensor = True
            if item.numel() != 1:
                st.fail(ValueError("only one element tensors can be converted to Python "
                                   "scalars"))


def _unwrap_tensors(x):
    if isinstance(x, Tensor):
        return x.item()
    if isinstance(x, (list, tuple)):
        return [_unwrap_tensors(y) for y in x]
    return x


def _from_python(data, dtype: dt.dtype | None) -> tuple[np.ndarray, dt.dtype]:
    """Nested Python data (lists, tuples, scalars, tensors, NumPy values) -> (array, dtype)."""
    if isinstance(data, str):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    sizes = _sizes(data)
    st = _Scan(sizes, dtype)
    if sizes:
        _walk(data, 0, st)
    else:
        st.dtypes.add(_leaf_dtype(data, dtype))
        st.has_tensor = isinstance(data, Tensor)
    if dtype is None:
        for d in st.dtypes:
            dtype = d if dtype is None else dt.promote_types(dtype, d)
    if isinstance(st.error, _Misplaced):
        raise TypeError(_not_scalar_msg(st.error.item, dtype))
    if st.error is not None:
        raise st.error
    if st.has_tensor:
        data = _unwrap_tensors(data)
    return _build(data, st.dtypes, dtype), dtype


def _build(data, leaf_dtypes, d: dt.dtype) -> np.ndarray:
    """Build in a wide type (exact for the leaves), then convert with PyTorch's checks."""
    cat = max(x.category for x in leaf_dtypes)
    wide = (np.bool_, np.int64, np.float64, np.complex128)[cat]
    try:
        b = np.array(data, dtype=wide)
    except OverflowError:
        # a Python int beyond int64: fine for floating targets, an error for integral ones
        if d.category <= dt.INT:
            raise ValueError("Overflow when unpacking long long") from None
        b = np.array(data, dtype=np.float64)
    except TypeError:
        if cat == dt.COMPLEX and d.category != dt.COMPLEX:
            b = np.array(data, dtype=np.complex128)
        else:
            raise
    if d is dt.bool:
        return b.astype(np.bool_)
    if b.dtype.kind == "c" and d.category != dt.COMPLEX:
        raise TypeError("'complex' object cannot be interpreted as an integer"
                        if d.category == dt.INT else "must be real number, not complex")
    if d.category == dt.INT and b.dtype.kind in "fiub" and b.size:
        _range_check(b, d)
        if b.dtype.kind in "iu" and np.iinfo(d.np).min == 0:
            b = b % (np.iinfo(d.np).max + 1)  # two's complement wrap of accepted negatives
    with np.errstate(all="ignore"):
        return b.astype(d.np)


def _range_check(b: np.ndarray, d: dt.dtype) -> None:
    info = np.iinfo(d.np)
    err = RuntimeError(f"value cannot be converted to type {d.name} without overflow")
    if b.dtype.kind == "f":
        if not np.all(np.isfinite(b)) or b.min() < info.min or b.max() > info.max:
            raise err
    elif b.dtype.kind in "iu":
        lo, hi = builtins.int(b.min()), builtins.int(b.max())
        if info.min == 0:
            if hi > info.max or -lo > info.max:
                raise err
        elif lo < info.min or hi > info.max:
            raise err


def _to_array(data, dtype: dt.dtype | None) -> np.ndarray:
    """Any tensor-like data as an array of `dtype` (inferred when None); may share memory."""
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, np.ndarray):
        arr = data
    else:
        return _from_python(data, dtype)[0]
    if dtype is not None and arr.dtype != dtype.np:
        arr = arr.astype(dtype.np)
    return arr


@_on_device()
def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """`torch.tensor`: always copies `data`; the result is a leaf with no history."""
    as_device(device)
    dtype = _dtype_arg(dtype, "tensor")
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than jitorch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        d = dtype or data._dtype
        return _finish(data._data.astype(d.np, order="C", copy=True), d, requires_grad)
    if isinstance(data, np.ndarray):
        d = dtype or dt.from_numpy_dtype(_native(data).dtype)
        with np.errstate(all="ignore"):
            return _finish(np.array(data, dtype=d.np, copy=True, order="C"), d, requires_grad)
    arr, d = _from_python(data, dtype)
    return _finish(arr, d, requires_grad)


@_on_device()
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`torch.as_tensor`: shares memory with a NumPy array or Tensor when no cast is needed."""
    as_device(device)
    dtype = _dtype_arg(dtype, "as_tensor")
    if isinstance(data, Tensor):
        return data if dtype is None or dtype is data._dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        d = dt.from_numpy_dtype(_native(data).dtype) if dtype is None or data.dtype != dtype.np \
            else dtype
        if dtype is None or dtype is d:
            return Tensor._make(data, d)
    return tensor(data, dtype=dtype)


@_on_device()
def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """`torch.asarray`: aliases tensors and NumPy arrays unless a copy or cast is needed;
    `copy=False` makes a needed copy an error, `copy=True` always copies."""
    from ._ops.registry import _pt_name
    as_device(device)
    dtype = _dtype_arg(dtype, "asarray")
    if isinstance(obj, (Tensor, np.ndarray)):
        src_d = obj._dtype if isinstance(obj, Tensor) else dt.from_numpy_dtype(_native(obj).dtype)
        arr = obj._data if isinstance(obj, Tensor) else obj
        d = dtype or src_d
        if d is not src_d:
            if copy is False:
                raise ValueError(f"can't alias tensor with dtype '{_pt_name(src_d)}' into "
                                 f"dtype '{_pt_name(d)}'.")
            return _finish(arr.astype(d.np, order="C"), d, requires_grad)
        if copy:
            return _finish(arr.copy(), d, requires_grad)
        t = obj if isinstance(obj, Tensor) else Tensor._make(_native(arr), d)
        return t.requires_grad_(True) if requires_grad else t
    return tensor(obj, dtype=dtype, requires_grad=requires_grad)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """`torch.from_numpy`: a tensor sharing memory with `ndarray`."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return Tensor._make(ndarray, dt.from_numpy_dtype(_native(ndarray).dtype))


def _native(arr: np.ndarray) -> np.ndarray:
    if not arr.dtype.isnative:
        raise ValueError("given numpy array has byte order different from the native byte "
                         "order. Conversion between byte orders is currently not supported.")
    return arr


@_on_device()
def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """`torch.scalar_tensor`: a 0-dim tensor of the default dtype unless `dtype` is given."""
    as_device(device)
    d = _dtype_arg(dtype, "scalar_tensor") or dt.get_default_dtype()
    v = _convert_scalar(_scalar_value(s, "scalar_tensor"), d)
    return _finish(np.array(v, dtype=d.np), d, requires_grad)


# --- constant factories --------------------------------------------------------------------------
def _factory(name: str, fill):
    def make(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False, memory_format=None, **kw):
        if kw.keys() - {"size"}:
            raise TypeError(f"{name}() got an unexpected keyword argument "
                            f"'{next(iter(kw.keys() - {'size'}))}'")
        if layout is not None and factory_layout(name, layout):
            return sparse_result(name, _size_args(name, size, kw.get("size")), dtype, device,
                                 requires_grad, out)
        dev = CPU if device is None and not _placed[0] else _target(device)
        shape = _size_args(name, size, kw.get("size"))
        dtype = _dtype_arg(dtype, name)
        d = dtype or (out._dtype if out is not None else dt.get_default_dtype())
        arr = fill(shape, d.np)
        if out is not None:
            check_out_device(out, dev)
            return _write_out(out, arr, dtype, name)
        r = _finish(arr, d, requires_grad, dev)
        if trace_hook[0] is not None:
            trace_hook[0](name, r, requires_grad, {"size": _raw_size(size, kw.get("size"))})
        return r
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"`torch.{name}(*size)`: sizes as varargs, one sequence, or `size=`."
    return make  # (the hottest factories take `device=` inline, not through `_on_device`)


zeros = _factory("zeros", np.zeros)
ones = _factory("ones", np.ones)
empty = _factory("empty", _empty_fill)


@_on_device()
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False) -> Tensor:
    """`torch.full`: without `dtype`, the fill value's Python type picks it (1.5 -> default
    float, 1 -> int64, True -> bool, 1j -> default complex)."""
    as_device(device)
    factory_layout("full", layout)
    shape = _size_tuple("full", size)
    v = _scalar_value(fill_value, "full")
    dtype = _dtype_arg(dtype, "full")
    d = dtype or (out._dtype if out is not None else _scalar_dtype(v))
    arr = np.full(shape, _convert_scalar(v, d), dtype=d.np)
    if out is not None:
        return _write_out(out, arr, dtype, "full")
    r = _finish(arr, d, requires_grad)
    if trace_hook[0] is not None:
        trace_hook[0]("full", r, requires_grad, {"size": size, "fill_value": fill_value})
    return r


def _check_input(input, fname: str) -> None:
    if not isinstance(input, Tensor):
        raise TypeError(f"{fname}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")


def _like(name: str, fill):
    def make(input, *, dtype=None, layout=None, device=None, requires_grad=False,
             memory_format=None):
        _check_input(input, name)
        shape = None
        if layout is not None or type(input) is not Tensor:  # (a sparse input has no _data)
            if factory_layout(name, input.layout if layout is None else layout,
                              layout is None):
                return sparse_result(name, input.shape, dtype or input.dtype, device,
                                     requires_grad)
            shape = tuple(input.shape)
        dev = CPU if device is None and not _placed[0] else _target(device, input)
        d = _dtype_arg(dtype, name) or input._dtype
        if shape is None:
            shape = input._data.shape
        r = _finish(fill(shape, d.np), d, requires_grad, dev)
        if trace_hook[0] is not None:
            trace_hook[0](name, r, requires_grad, {"input": input})
        return r
    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"`torch.{name}`: input's shape, input's dtype unless `dtype` is given."
    return make


zeros_like = _like("zeros_like", np.zeros)
ones_like = _like("ones_like", np.ones)
empty_like = _like("empty_like", _empty_fill)


@_on_device(like="input")
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    """`torch.full_like`: the fill value is converted (checked) to input's dtype."""
    _check_input(input, "full_like")
    factory_layout("full_like", input.layout if layout is None else layout, layout is None)
    as_device(device)
    d = _dtype_arg(dtype, "full_like") or input._dtype
    v = _convert_scalar(_scalar_value(fill_value, "full_like"), d)
    r = _finish(np.full(tuple(input.shape), v, dtype=d.np), d, requires_grad)
    if trace_hook[0] is not None:
        trace_hook[0]("full_like", r, requires_grad, {"input": input, "fill_value": fill_value})
    return r


@_on_device()
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False) -> Tensor:
    """`torch.empty_strided`: a zero-filled tensor whose strides are exactly `stride`."""
    as_device(device)
    factory_layout("empty_strided", layout)
    shape = _size_tuple("empty_strided", size)
    strides = tuple(builtins.int(s) for s in stride)
    if len(strides) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality "
                           f"of strides ({len(strides)})")
    if any(s < 0 for s in strides):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and "
                           f"strides={list(strides)}")
    d = _dtype_arg(dtype, "empty_strided") or dt.get_default_dtype()
    n = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    buf = _empty_fill(n, d.np)
    arr = np.lib.stride_tricks.as_strided(buf, shape, tuple(s * d.itemsize for s in strides))
    return _finish(arr, d, requires_grad)


# ranges and structured matrices live in _ranges.py (re-exported here)
from ._ranges import arange, eye, linspace, logspace, tril_indices, triu_indices  # noqa: E402,F401
