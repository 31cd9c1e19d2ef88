"""The legacy tensor types: `jitorch.FloatTensor`, `LongTensor`, ... and `jitorch.cuda.*Tensor`,
plus `set_default_tensor_type`.

As in PyTorch, each is a class whose metaclass makes it a constructor of plain Tensors
(`FloatTensor(2, 3)`: uninitialised sizes; `FloatTensor([1, 2])`: data; `FloatTensor(t)`: an
alias of a tensor of that dtype) and an `isinstance` test by dtype and device type; none is a
subclass of Tensor. The names come from `_tensor._LEGACY_NAMES` (the one dtype <-> type-name
table, which `Tensor.type()` also reads).
"""
from __future__ import annotations

import warnings

from . import _dtype as dt
from ._device import as_device
from ._tensor import _LEGACY_NAMES, Size, Tensor

# PyTorch names complex tensors' types ('torch.ComplexFloatTensor') but has no such classes
_CLASSES = {d: n.split(".")[-1] for d, n in _LEGACY_NAMES.items() if d.category != dt.COMPLEX}
__all__ = list(_CLASSES.values()) + ["set_default_tensor_type"]


class _LegacyTensorType(type):
    dtype: dt.dtype
    is_cuda: bool

    def __instancecheck__(cls, instance) -> bool:
        return (isinstance(instance, Tensor) and instance.dtype is cls.dtype
                and instance.device.type == ("cuda" if cls.is_cuda else "cpu"))

    def __call__(cls, *args, device=None):
        from ._creation import empty, tensor
        kind = "cuda" if cls.is_cuda else "cpu"
        if device is not None:
            got = (device.split(":")[0] if isinstance(device, str) else as_device(device).type)
            if got != kind:
                raise RuntimeError(f"legacy constructor expects device type: {kind} but device "
                                   f"type: {got} was passed")
        dev = device if device is not None else kind
        if not args:
            return empty(0, dtype=cls.dtype, device=dev)
        if len(args) == 1 and isinstance(args[0], Tensor):
            t = args[0]
            if t.dtype is not cls.dtype or t.device.type != kind:
                raise TypeError(f"expected {cls.__module__}.{cls.__name__} (got {t.type()})")
            return t.data  # an alias: same storage, no autograd history, like PyTorch's
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args) or (
                len(args) == 1 and isinstance(args[0], Size)):
            sizes = args[0] if isinstance(args[0], Size) else args
            return empty(*sizes, dtype=cls.dtype, device=dev)
        if len(args) == 1:
            data = args[0]
            if isinstance(data, (int, float, complex, bool)):
                raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
            return tensor(data, dtype=cls.dtype, device=dev)
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"({', '.join(type(a).__name__ for a in args)}), but expected one of:\n"
                        " * (*, torch.device device = None)\n * (Tensor other)\n"
                        " * (tuple of ints size, *, torch.device device = None)\n"
                        " * (object data, *, torch.device device = None)")

    def __repr__(cls) -> str:
        return f"<class '{cls.__module__}.{cls.__name__}'>"


def _make(module: str, name: str, dtype: dt.dtype, cuda: bool) -> type:
    cls = _LegacyTensorType(name, (), {"dtype": dtype, "is_cuda": cuda, "is_sparse": False,
                                       "__module__": module})
    return cls


CPU_TYPES = {d: _make("jitorch", n, d, False) for d, n in _CLASSES.items()}
CUDA_TYPES = {d: _make("jitorch.cuda", n, d, True) for d, n in _CLASSES.items()}
globals().update({cls.__name__: cls for cls in CPU_TYPES.values()})


def resolve(t) -> "tuple[dt.dtype, str] | None":
    """(dtype, device type) of a legacy type or its name ('torch.FloatTensor',
    'jitorch.cuda.LongTensor'), or None when `t` is neither."""
    if isinstance(t, _LegacyTensorType):
        return t.dtype, "cuda" if t.is_cuda else "cpu"
    if isinstance(t, str):
        parts = t.split(".")
        if len(parts) in (2, 3) and parts[0] in ("torch", "jitorch") and (
                len(parts) == 2 or parts[1] == "cuda"):
            for d, n in _LEGACY_NAMES.items():
                if n.split(".")[-1] == parts[-1]:
                    return d, "cuda" if len(parts) == 3 else "cpu"
    return None


def set_default_tensor_type(t) -> None:
    """Deprecated `torch.set_default_tensor_type`: the default dtype (and device, for a CUDA
    type) from a legacy type or its name."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    r = resolve(t)
    if r is None:
        raise TypeError(f"invalid type: '{t}'" if isinstance(t, str) else
                        f"invalid type: '{t!r}'")
    d, kind = r
    if d.category != dt.FLOAT:
        raise TypeError("only floating-point types are supported as the default type")
    dt.set_default_dtype(d)
    from ._device import set_default_device
    set_default_device(kind)
