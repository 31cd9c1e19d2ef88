"""`nn.Parameter` and `nn.Buffer`: tensors that a Module registers as its state.

A Parameter is a Tensor subclass sharing its source tensor's storage (and version counter), a new
leaf that requires grad by default. Ops on a Parameter return plain Tensors (the registry always
makes `Tensor`s), as in PyTorch. `nn.Buffer(t)` returns a plain detached Tensor flagged as a
buffer, which `Module.__setattr__` registers with its `persistent` flag.
"""
from __future__ import annotations

from .. import _dtype as dt
from .._tensor import Tensor, _new
from .._creation import empty
from .._device import CPU
from .._device.transfer import data_copy
from .._ops.registry import FAST_TYPES

__all__ = ["Parameter", "Buffer"]


def _share(cls, data: Tensor):
    t = _new(cls)
    t._data = data._data
    t._dtype = data._dtype
    t._version = data._version  # in-place writes through either name bump one counter
    if data._device is not CPU:  # a CUDA tensor's parameter stays on its device
        t._device = data._device
    return t


class Parameter(Tensor):
    """A Tensor that is a module parameter: `Parameter(data=None, requires_grad=True)`."""

    _is_param = True

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        if requires_grad and data._dtype.category not in (dt.FLOAT, dt.COMPLEX):
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")
        p = _share(cls, data)
        p._requires_grad = bool(requires_grad)
        return p

    def __init__(self, data=None, requires_grad=True):
        pass  # all state is set in __new__ (Tensor.__init__ would re-create the storage)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        data = data_copy(self)  # (on the parameter's device, as its grad's copy)
        result = type(self)(data, self._requires_grad)
        if self._grad is not None:
            result._grad = data_copy(self._grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, proto):
        return (_rebuild_parameter, (self._data.copy(), self._dtype.name, self._requires_grad))


def _rebuild_parameter(arr, dtype_name, requires_grad):
    return Parameter(Tensor._make(arr, dt._by_name(dtype_name)), requires_grad)


FAST_TYPES.add(Parameter)  # ops on a Parameter dispatch as on a Tensor: the registry's fast path


class _BufferMeta(type):
    # `isinstance(t, nn.Buffer)` is true for tensors made by `nn.Buffer(...)` (PyTorch's trick:
    # the buffer itself stays a plain Tensor)
    def __instancecheck__(cls, instance):
        return isinstance(instance, Tensor) and getattr(instance, "_is_buffer", False)


class Buffer(metaclass=_BufferMeta):
    """`nn.Buffer(data, *, persistent=True)`: a plain Tensor marked for buffer registration."""

    def __new__(cls, data: Tensor | None = None, *, persistent: bool = True):
        if data is None:
            data = empty(0)
        t = data.detach()
        t._base = None  # a buffer owns its name for the storage, like PyTorch's detach()
        t._is_buffer = True
        t.persistent = persistent
        return t
