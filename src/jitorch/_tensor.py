"""The Tensor: an array (storage), a dtype, a device and the autograd fields.

Owns the Tensor type's state and the methods that are not ops (attributes, conversions,
Python protocols, autograd entry points). Ops become Tensor methods through the op registry
(`_ops/registry.py`), which binds each declared op here; dunder operators are bound in
`_ops/operators.py`.

Invariants:
- `_data` is an array of `_device`'s backend (`_device/`: a NumPy array on the CPU and on the
  CUDA simulator, a CuPy array on a GPU) whose dtype is exactly `_dtype.np` (bfloat16 via
  ml_dtypes). `_device` is a class attribute (the CPU) that only tensors placed elsewhere set,
  so making a CPU tensor costs nothing more; `_device/transfer.py` moves and places tensors.
- Views share `_version` (a one-item list) with their `_base`; every in-place op bumps it, so a
  tensor saved for backward can tell it was modified.
- A leaf has `_grad_fn is None`; a non-leaf that requires grad has a `grad_fn` node and
  `_output_nr`, the index of this tensor among the node's outputs.
"""
from __future__ import annotations

import numpy as np

from . import _dtype as dt
from ._device import CPU, as_device, device as _device_cls


class Size(tuple):
    """`torch.Size`: a tuple of ints that prints like PyTorch's."""

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self):
        return f"jitorch.Size([{', '.join(str(s) for s in self)}])"

    def __getitem__(self, i):
        r = tuple.__getitem__(self, i)
        return Size(r) if isinstance(i, slice) else r


class Tensor:
    # Per-instance state lives in __dict__; the autograd fields default to these class
    # attributes, so making a tensor sets only three fields (eager op overhead matters).
    _requires_grad = False
    _grad = None
    _grad_fn = None
    _output_nr = 0
    _base = None
    _view_spec = None  # set on views by the registry; Tensor._view_fn replays it
    _accum = None
    _retains_grad = False
    _hooks = None
    _tangent = None
    _is_param = False
    _device = CPU  # a canonical device value (`_device.as_device`); set only off the CPU
    _pinned = False

    # NumPy must defer to our reflected operators (ndarray + Tensor -> Tensor.__radd__)
    __array_priority__ = 1000

    def __init__(self, *args, dtype=None, device=None):
        # `torch.Tensor(data)` / `torch.Tensor(*sizes)`: default float dtype, like PyTorch
        from ._creation import _to_array
        d = dtype or dt.get_default_dtype()
        dev = as_device(device)
        if len(args) == 1 and not isinstance(args[0], int):
            arr = _to_array(args[0], d)
        else:
            if not all(isinstance(a, int) for a in args):
                raise TypeError(f"Tensor(): expected sizes as ints, got {args}")
            arr = np.zeros(args, dtype=d.np)
        _init(self, arr, d)
        if dev is not CPU:
            from ._device.transfer import place
            place(self, dev)

    @staticmethod
    def _make(arr: np.ndarray, dtype: dt.dtype | None = None) -> "Tensor":
        t = _new(Tensor)
        t._data = arr
        t._dtype = dt.from_numpy_dtype(arr.dtype) if dtype is None else dtype
        t._version = [0]
        return t

    # --- metadata ---------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> dt.dtype:
        return self._dtype

    @property
    def device(self) -> _device_cls:
        return self._device

    @property
    def is_cuda(self) -> bool:
        return self._device.type == "cuda"

    def get_device(self) -> int:
        """`Tensor.get_device`: the CUDA index, -1 on the CPU."""
        return -1 if self._device is CPU else self._device.index

    @property
    def _never(self) -> bool:
        return False

    # the other device and layout predicates PyTorch tensors carry: none of these exist here
    is_xpu = is_mps = is_meta = is_ipu = is_xla = is_mtia = is_maia = is_vulkan = _never
    is_quantized = is_mkldnn = is_nested = is_sparse = is_sparse_csr = _never

    @property
    def is_cpu(self) -> bool:
        return self._device is CPU

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        return self._data.size

    nelement = numel

    def element_size(self) -> int:
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    def stride(self, dim: int | None = None):
        st = tuple(s // self._dtype.itemsize for s in self._data.strides)
        return st if dim is None else st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        if self._base is None:
            return 0
        base = self._base._data
        off = self._data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        return off // self._dtype.itemsize

    def data_ptr(self) -> int:
        return self._data.__array_interface__["data"][0]

    def is_contiguous(self, memory_format=None) -> bool:
        return bool(self._data.flags.c_contiguous)

    def is_floating_point(self) -> bool:
        return self._dtype.category == dt.FLOAT

    def is_complex(self) -> bool:
        return self._dtype.category == dt.COMPLEX

    def is_signed(self) -> bool:
        return self._dtype.is_signed

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def layout(self):
        from ._layout import strided  # `jitorch.strided`; sparse tensors answer sparse_coo
        return strided

    # --- autograd fields --------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if self._grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use "
                "a computed variable in a subgraph that doesn't require differentiation use "
                "var_no_grad = var.detach().")
        if requires_grad and self._dtype.category not in (dt.FLOAT, dt.COMPLEX):
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad:
            import warnings
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. "
                "Its .grad attribute won't be populated during autograd.backward(). If you "
                "indeed want the .grad field to be populated for a non-leaf Tensor, use "
                ".retain_grad() on the non-leaf Tensor.", UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got "
                                f"grad of type {type(value).__name__}")
            if value.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: "
                                   f"{list(value.shape)} vs {list(self.shape)}")
            if value._dtype is not self._dtype:
                raise RuntimeError(f"assigned grad has data of a different type: "
                                   f"{value._dtype} vs {self._dtype}")
        self._grad = value

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def _version_value(self) -> int:
        return self._version[0]

    @property
    def output_nr(self) -> int:
        return self._output_nr

    def retain_grad(self) -> None:
        from .autograd.graph import retain_grad
        retain_grad(self)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def register_hook(self, hook):
        from .autograd.graph import register_tensor_hook
        return register_tensor_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        from .autograd.graph import register_post_accumulate_grad_hook
        return register_post_accumulate_grad_hook(self, hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from .autograd.engine import backward
        backward((self,), None if gradient is None else (gradient,), retain_graph,
                 create_graph, inputs=inputs)

    def detach(self) -> "Tensor":
        t = Tensor._make(self._data, self._dtype)
        if self._device is not CPU:
            t._device = self._device
        t._version = self._version
        t._base = self._base if self._base is not None else self
        return t

    def detach_(self) -> "Tensor":
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> "Tensor":
        # shares memory, but like PyTorch's `.data` it is no autograd view and has its own
        # version counter: in-place writes through it are allowed and not tracked
        t = Tensor._make(self._data, self._dtype)
        if self._device is not CPU:
            t._device = self._device
        return t

    @data.setter
    def data(self, value: "Tensor") -> None:
        self._data = value._data
        self._dtype = value._dtype
        if value._device is not self._device:
            self._device = value._device

    # --- conversions --------------------------------------------------------------------------
    def item(self):
        if _data_hook is not None:  # jit.trace: refuse to bake data into a trace
            _data_hook(self, 'number (item())')
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        v = self._data.reshape(()).item()
        if self._dtype in (dt.float16, dt.bfloat16):
            v = float(v)
        return v

    def tolist(self):
        if _data_hook is not None:  # jit.trace: refuse to bake data into a trace
            _data_hook(self, 'list (tolist())')
        if self._dtype is dt.bfloat16:
            return self._data.astype(np.float32).tolist()
        return self._data.tolist()

    def numpy(self, *, force: bool = False) -> np.ndarray:
        if _data_hook is not None:  # jit.trace: refuse to bake data into a trace
            _data_hook(self, 'NumPy array (numpy())')
        if self._device is not CPU:
            if not force:
                raise TypeError(_NOT_HOST.format(self._device))
            return self.cpu()._data
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._data

    def __dlpack__(self, stream=None, **kwargs):
        from .utils.dlpack import dlpack  # zero-copy, by the device's backend
        return dlpack(self, stream, **kwargs)

    def __dlpack_device__(self):
        from .utils.dlpack import dlpack_device
        return dlpack_device(self)

    def __array__(self, dtype=None, copy=None):
        if self._device is not CPU:
            raise TypeError(_NOT_HOST.format(self._device))
        a = self._data
        return a if dtype is None else a.astype(dtype)

    def to(self, *args, **kwargs) -> "Tensor":
        dtype, dev, copy = _parse_to(args, kwargs)
        t = self
        if dev is not None:
            dev = as_device(dev)
            if dev is not t._device:
                from ._device.transfer import move
                t, copy = move(t, dev), False  # a move is a copy already
        if dtype is None or dtype is t._dtype:
            return t.clone() if copy else t
        return _cast(t, dtype)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        if dtype is None:
            name = _LEGACY_NAMES.get(self._dtype, f"jitorch.{self._dtype.name}")
            return name if self._device is CPU else name.replace(".", f".{self._device.type}.")
        if not isinstance(dtype, dt.dtype):
            # a legacy type or its name ('torch.FloatTensor', 'jitorch.cuda.LongTensor')
            from ._legacy_types import resolve
            r = resolve(dtype)
            if r is None:
                if isinstance(dtype, str):
                    raise ValueError(f"invalid type: '{dtype}'")
                raise TypeError("dtype must be a type, str, or dtype object")
            if r[1] != self._device.type:
                return self.to(r[1] if r[1] == "cpu" else "cuda", r[0])
            dtype = r[0]
        return self.to(dtype)

    def type_as(self, other: "Tensor") -> "Tensor":
        return self.to(other._dtype)

    def float(self): return self.to(dt.float32)
    def double(self): return self.to(dt.float64)
    def half(self): return self.to(dt.float16)
    def bfloat16(self): return self.to(dt.bfloat16)
    def long(self): return self.to(dt.int64)
    def int(self): return self.to(dt.int32)
    def short(self): return self.to(dt.int16)
    def char(self): return self.to(dt.int8)
    def byte(self): return self.to(dt.uint8)
    def bool(self): return self.to(dt.bool)
    def cfloat(self): return self.to(dt.complex64)
    def cdouble(self): return self.to(dt.complex128)

    def cpu(self, memory_format=None) -> "Tensor":
        return self if self._device is CPU else self.to(CPU)

    def cuda(self, device=None, non_blocking=False, memory_format=None) -> "Tensor":
        if isinstance(device, _device_cls) and device.type != "cuda":
            raise RuntimeError(f"Invalid device, must be cuda device")
        return self.to("cuda" if device is None else device)

    def pin_memory(self, device=None) -> "Tensor":
        """`Tensor.pin_memory`: a copy in page-locked host memory (needs CUDA, as PyTorch)."""
        from ._device.transfer import pin
        return pin(self)

    def is_pinned(self, device=None) -> bool:
        return self._pinned

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        from ._creation import tensor
        return tensor(data, dtype=dtype or self._dtype, device=device or self._device,
                      requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None):
        from ._creation import zeros
        return zeros(*size, dtype=dtype or self._dtype, device=device or self._device,
                     requires_grad=requires_grad, layout=layout)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None):
        from ._creation import ones
        if layout is not None:  # (PyTorch's error for a sparse one: new_ones' own)
            from ._layout import factory_layout
            factory_layout("new_ones", layout)
        return ones(*size, dtype=dtype or self._dtype, device=device or self._device,
                    requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None):
        from ._creation import empty
        return empty(*size, dtype=dtype or self._dtype, device=device or self._device,
                     requires_grad=requires_grad, layout=layout)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False,
                 layout=None):
        from ._creation import full
        if layout is not None:
            from ._layout import factory_layout
            factory_layout("new_full", layout)
        return full(size, fill_value, dtype=dtype or self._dtype, device=device or self._device,
                    requires_grad=requires_grad)

    # --- Python protocols ---------------------------------------------------------------------
    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if _data_hook is not None:  # jit.trace: refuse to bake data into a trace
            _data_hook(self, 'bool')
        if self._data.size != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()))

    def __float__(self) -> float:
        if _data_hook is not None:  # jit.trace: refuse to bake data into a trace
            _data_hook(self, 'float')
        return float(self.item().real if self.is_complex() else self.item())

    def __int__(self) -> int:
        if _data_hook is not None:  # jit.trace: refuse to bake data into a trace
            _data_hook(self, 'int')
        return int(self.item())

    def __complex__(self) -> complex:
        if _data_hook is not None:  # jit.trace: refuse to bake data into a trace
            _data_hook(self, 'complex')
        return complex(self.item())

    def __index__(self) -> int:
        if _data_hook is not None:  # jit.trace: refuse to bake data into a trace
            _data_hook(self, 'int (as an index)')
        if self._dtype.category > dt.INT or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self, *, tensor_contents=None) -> str:
        from ._tensor_str import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec):
        # PyTorch: a plain 0-d tensor formats as its item, spec or not (f"{t}" is "3.5");
        # anything else as an object (str(self); a spec is a TypeError naming the type)
        if self._data.ndim == 0 and type(self) is Tensor:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __deepcopy__(self, memo):
        from ._device.transfer import same_device
        t = same_device(Tensor._make(self._data.copy(), self._dtype), self)
        t._requires_grad = self._requires_grad
        if self._grad is not None:
            t._grad = same_device(Tensor._make(self._grad._data.copy(), self._grad._dtype),
                                  self._grad)
        memo[id(self)] = t
        import copy
        for k, v in self.__dict__.items():  # user attributes only: the internals were set above
            if not hasattr(Tensor, k) and k not in t.__dict__:
                t.__dict__[k] = copy.deepcopy(v, memo)
        return t

    def __reduce_ex__(self, proto):
        host = self._data.copy() if self._device is CPU else self.cpu()._data
        return (_rebuild, (host, self._dtype.name, self._requires_grad, str(self._device)))


def _rebuild(arr, dtype_name, requires_grad, device="cpu"):
    t = Tensor._make(arr, dt._by_name(dtype_name))
    if device != "cpu":
        from ._device.transfer import place
        place(t, as_device(device))
    t._requires_grad = requires_grad
    return t


_NOT_HOST = ("can't convert {} device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
             "to host memory first.")


def _init(t: Tensor, arr: np.ndarray, dtype: dt.dtype) -> None:
    t._data = arr
    t._dtype = dtype
    t._version = [0]


_new = object.__new__
# set by jitorch.script.frontend.trace while a trace runs (any thread): its check_data_dependence
_data_hook = None


def _wrap_dim(dim: int, ndim: int) -> int:
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


_LEGACY_NAMES = {
    dt.float32: "jitorch.FloatTensor", dt.float64: "jitorch.DoubleTensor",
    dt.float16: "jitorch.HalfTensor", dt.bfloat16: "jitorch.BFloat16Tensor",
    dt.int64: "jitorch.LongTensor", dt.int32: "jitorch.IntTensor",
    dt.int16: "jitorch.ShortTensor", dt.int8: "jitorch.CharTensor",
    dt.uint8: "jitorch.ByteTensor", dt.bool: "jitorch.BoolTensor",
    dt.complex64: "jitorch.ComplexFloatTensor", dt.complex128: "jitorch.ComplexDoubleTensor",
}


def _parse_to(args, kwargs):
    """Parse `Tensor.to`'s overloads: (dtype), (device), (device, dtype), (tensor)."""
    dtype = kwargs.get("dtype")
    dev = kwargs.get("device")
    copy = kwargs.get("copy", False)
    for a in args:
        if isinstance(a, dt.dtype):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, dev = a._dtype, a._device
        elif isinstance(a, (str, _device_cls, int)):
            dev = a
        elif isinstance(a, bool):
            pass  # non_blocking: copies here complete before the call returns
        else:
            raise TypeError(f"to() received an invalid combination of arguments: {a!r}")
    return dtype, dev, copy


def _cast(t: Tensor, dtype: dt.dtype) -> Tensor:
    from ._ops.conversion import _to_dtype
    return _to_dtype(t, dtype)
