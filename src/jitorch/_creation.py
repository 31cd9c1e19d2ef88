"""Tensor creation: `tensor`, `as_tensor`, `from_numpy`, `zeros/ones/full/empty(_like)`,
`arange`, `linspace`, `logspace`, `eye`.

Invariants: dtype inference follows PyTorch (bool -> bool, Python ints -> int64, floats -> the
default dtype, complex -> the default complex dtype); factories take `dtype`, `device`,
`requires_grad` keywords like PyTorch's.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _dtype as dt
from ._device import as_device
from ._tensor import Tensor

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "full", "empty", "zeros_like",
           "ones_like", "full_like", "empty_like", "arange"]


def _infer_dtype(data) -> dt.dtype:
    """PyTorch's dtype for nested Python data: the highest category present wins."""
    cat = -1
    stack = [data]
    tensor_dtype = None
    while stack:
        x = stack.pop()
        if isinstance(x, Tensor):
            tensor_dtype = x._dtype if tensor_dtype is None else dt.promote_types(tensor_dtype,
                                                                                  x._dtype)
        elif isinstance(x, np.ndarray):
            d = dt.from_numpy_dtype(x.dtype)
            tensor_dtype = d if tensor_dtype is None else dt.promote_types(tensor_dtype, d)
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif isinstance(x, (bool, np.bool_)):
            cat = max(cat, dt.BOOL)
        elif isinstance(x, numbers.Integral):
            cat = max(cat, dt.INT)
        elif isinstance(x, numbers.Real):
            cat = max(cat, dt.FLOAT)
        elif isinstance(x, numbers.Complex):
            cat = max(cat, dt.COMPLEX)
        else:
            raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    if tensor_dtype is not None and cat <= tensor_dtype.category:
        return tensor_dtype
    if cat == -1:
        return dt.get_default_dtype()
    return dt._scalar_default(cat)


def _to_array(data, dtype: dt.dtype | None) -> np.ndarray:
    if isinstance(data, Tensor):
        arr = data._data
    elif isinstance(data, np.ndarray):
        arr = data
    else:
        if dtype is None:
            dtype = _infer_dtype(data)
        arr = np.array(_unwrap(data), dtype=dtype.np if dtype.np.kind != "V" else np.float32)
    if dtype is None:
        dtype = dt.from_numpy_dtype(arr.dtype)
    if arr.dtype != dtype.np:
        arr = arr.astype(dtype.np)
    return arr


def _unwrap(data):
    if isinstance(data, Tensor):
        return data._data
    if isinstance(data, (list, tuple)):
        if any(isinstance(x, Tensor) for x in data):
            for x in data:
                if isinstance(x, Tensor) and x.dim() != 0 and len(data) > 1:
                    pass
            return [_unwrap(x) for x in data]
        return [_unwrap(x) if isinstance(x, (list, tuple)) else x for x in data]
    return data


def _finish(arr, dtype, requires_grad):
    t = Tensor._make(arr, dtype)
    if requires_grad:
        t.requires_grad_(True)
    return t


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """`torch.tensor`: always copies `data`."""
    as_device(device)
    if isinstance(data, Tensor):
        import warnings
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.clone().detach() or sourceTensor.clone().detach()."
                      "requires_grad_(True), rather than jitorch.tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
    if isinstance(data, np.ndarray) and dtype is None:
        dtype = dt.from_numpy_dtype(data.dtype)
    if dtype is None:
        dtype = _infer_dtype(data)
    arr = np.array(_to_array(data, dtype), copy=True)
    return _finish(arr, dtype, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """`torch.as_tensor`: shares memory with a NumPy array or Tensor when no cast is needed."""
    as_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None or dtype is data._dtype else data.to(dtype)
    if isinstance(data, np.ndarray):
        d = dt.from_numpy_dtype(data.dtype)
        if dtype is None or dtype is d:
            return Tensor._make(data, d)
    return tensor(data, dtype=dtype)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """`torch.from_numpy`: a tensor sharing memory with `ndarray`."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return Tensor._make(ndarray, dt.from_numpy_dtype(ndarray.dtype))


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    out = []
    for s in size:
        if isinstance(s, Tensor):
            s = s.__index__()
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)):
            raise TypeError(f"expected a sequence of integers or a single integer, got "
                            f"'{type(s).__name__}'")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        out.append(int(s))
    return tuple(out)


def _factory(fill):
    def make(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False, memory_format=None):
        as_device(device)
        d = dtype or dt.get_default_dtype()
        arr = fill(_size(size), d.np)
        t = _finish(arr, d, requires_grad)
        if out is not None:
            out._data = t._data
            out._dtype = t._dtype
            return out
        return t
    return make


zeros = _factory(np.zeros)
ones = _factory(np.ones)
empty = _factory(np.zeros)  # zero-filled: uninitialised memory would make results nondeterministic
zeros.__name__, ones.__name__, empty.__name__ = "zeros", "ones", "empty"


def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
         requires_grad=False, pin_memory=False) -> Tensor:
    as_device(device)
    if dtype is None:
        dtype = _infer_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    arr = np.full(_size((size,) if isinstance(size, int) else (tuple(size),)), fill_value,
                  dtype=dtype.np)
    return _finish(arr, dtype, requires_grad)


def _like(fill):
    def make(input, *, dtype=None, layout=None, device=None, requires_grad=False,
             memory_format=None):
        as_device(device)
        d = dtype or input._dtype
        return _finish(fill(input._data.shape, d.np), d, requires_grad)
    return make


zeros_like = _like(np.zeros)
ones_like = _like(np.ones)
empty_like = _like(np.zeros)
zeros_like.__name__, ones_like.__name__, empty_like.__name__ = ("zeros_like", "ones_like",
                                                                 "empty_like")


def full_like(input, fill_value, *, dtype=None, layout=None, device=None, requires_grad=False,
              memory_format=None) -> Tensor:
    d = dtype or input._dtype
    return _finish(np.full(input._data.shape, fill_value, dtype=d.np), d, requires_grad)


def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False) -> Tensor:
    """`torch.arange`: int64 when all of start/end/step are integers, else the default float."""
    as_device(device)
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dtype = dt.int64 if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                for v in vals) else dt.get_default_dtype()
    n = int(np.ceil((end - start) / step))
    arr = (start + step * np.arange(max(n, 0), dtype=np.float64 if dtype.category >= dt.FLOAT
                                    else np.int64)).astype(dtype.np)
    return _finish(arr, dtype, requires_grad)
