"""DLPack exchange (`torch.utils.dlpack`, `torch.from_dlpack`, `Tensor.__dlpack__`): zero-copy
sharing of a tensor's memory with NumPy, CuPy and anything else speaking DLPack.

The tensor's storage backend does the exchange (`_device/backends.py`): on the CPU NumPy's own
DLPack implementation exports and imports (so strides, dtypes and the capsule's lifetime are
NumPy's); on a GPU CuPy's. The simulator refuses to export or import CUDA memory: its device
memory is host memory, and a capsule claiming CUDA memory (kDLCUDA) at a host address would
crash a real consumer (CuPy on a GPU machine running the simulator tier). `jitorch.from_dlpack`
of a simulator tensor still shares its memory, since both sides are jitorch.

PyTorch's errors: a tensor that requires grad raises BufferError (jitorch has no conjugate bit);
a capsule consumed twice raises RuntimeError. bfloat16 cannot be exchanged (NumPy's DLPack has
no bfloat16): BufferError naming it.
"""
from __future__ import annotations

import ctypes
import enum

import numpy as np

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device types (the ones PyTorch names)."""
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


_USED = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed "
         "only once, so you might have already constructed a tensor from it once.")


def _exportable(t) -> None:
    """PyTorch's refusals before any export: what DLPack cannot carry."""
    if t._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if t._dtype.name == "bfloat16":
        raise BufferError("jitorch: bfloat16 tensors cannot be exchanged through DLPack "
                          "(NumPy's DLPack has no bfloat16); convert with .float() first")


def dlpack(t, stream=None, *, max_version=None, dl_device=None, copy=None):
    """`Tensor.__dlpack__`: a capsule sharing `t`'s memory, made by its device's backend."""
    _exportable(t)
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    from .._device import backend_of
    kw = {k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                            ("copy", copy)) if v is not None}
    return backend_of(t._device).dlpack_export(t._data, stream, kw)


def dlpack_device(t) -> tuple:
    """`Tensor.__dlpack_device__`: (device type, index) of where the tensor lives."""
    if t._device.type == "cpu":
        return (DLDeviceType.kDLCPU, 0)
    return (DLDeviceType.kDLCUDA, t._device.index)


def to_dlpack(tensor):
    """`torch.utils.dlpack.to_dlpack`: a (legacy, unversioned) DLPack capsule of `tensor`."""
    return dlpack(tensor)


class _Capsule:
    """A raw capsule seen as a DLPack exporter (NumPy and CuPy consume exporters)."""

    def __init__(self, capsule):
        self.capsule, self.name = capsule, _capsule_name(capsule)
        if self.name is None:
            raise RuntimeError(_USED)

    def __dlpack__(self, *args, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        # the DLTensor starts the legacy DLManagedTensor; the versioned one puts a version,
        # a context, a deleter and flags (4 x 8 bytes) before it. Its device follows `data`.
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        base = get(self.capsule, self.name) + (32 if self.name == b"dltensor_versioned" else 0)
        dev = (ctypes.c_int32 * 2).from_address(base + ctypes.sizeof(ctypes.c_void_p))
        return (int(dev[0]), int(dev[1]))


def _capsule_name(obj):
    """The DLPack name of an unconsumed capsule `obj`, else None."""
    valid = ctypes.pythonapi.PyCapsule_IsValid
    valid.restype, valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
    for name in (b"dltensor", b"dltensor_versioned"):
        if valid(obj, name):
            return name
    return None


def from_dlpack(ext_tensor):
    """`torch.from_dlpack`: a tensor sharing the memory of `ext_tensor`, an object exporting
    `__dlpack__` (NumPy and CuPy arrays, tensors of other libraries) or a DLPack capsule."""
    from .. import _dtype as dt
    from .._device import CPU, as_device, backend_of
    from .._device.transfer import same_device
    from .._tensor import Tensor
    if isinstance(ext_tensor, Tensor):
        _exportable(ext_tensor)
        if ext_tensor._device is not CPU:  # jitorch to jitorch: the same device memory
            return same_device(Tensor._make(ext_tensor._data, ext_tensor._dtype), ext_tensor)
    src = ext_tensor if hasattr(ext_tensor, "__dlpack__") else _Capsule(ext_tensor)
    kind, index = src.__dlpack_device__()
    if kind == DLDeviceType.kDLCPU:
        dev, arr = CPU, np.from_dlpack(src)
    elif kind == DLDeviceType.kDLCUDA:
        dev = as_device(f"cuda:{index}")  # no CUDA here: PyTorch's "not compiled with CUDA"
        arr = backend_of(dev).dlpack_import(src, dev.index)
    else:
        raise BufferError(f"jitorch: from_dlpack of memory on DLPack device type {kind} "
                          f"(only CPU and CUDA memory can be shared)")
    t = Tensor._make(arr, dt.from_numpy_dtype(arr.dtype))
    return t if dev is CPU else same_device(t, dev)
