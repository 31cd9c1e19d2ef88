"""Devices and storage: the seam through which Tensor, autograd and creation allocate, copy and
move data.

- `_types.py`: the `jitorch.device` value.
- `backends.py`: one storage backend per device type (`cpu`: NumPy; `cuda`: CuPy on a GPU, or
  the simulator's NumPy stand-in, `sim.py`), each with its array namespace `xp`.
- `transfer.py`: tensor-level moves (`Tensor.to/cuda/cpu`), the factories' `device=`, the
  device step of op dispatch (one device per op, results made there).

This module normalises device arguments (`as_device`), keeps the default and the current CUDA
device, and holds `placed`, the one flag the eager hot path reads: it stays False until a tensor
is first placed off the CPU (or the default device is), so CPU-only programs pay one list read
per op (and per factory call) for devices.
"""
from __future__ import annotations

import threading

from .. import _profiling, _settings
from ._types import CPU, NoDeviceError, device
from .backends import backend_of, cuda_backend

__all__ = ["device", "CPU", "NoDeviceError", "as_device", "set_default_device",
           "get_default_device", "placed", "on_device", "backend_of", "cuda_backend", "current_index",
           "set_current_index"]

# True once a tensor was placed off the CPU or another default device was set (dispatch's device
# step, the factories' `device=`); naming a device (a generator's) does not set it
placed = [False]


def mark_placed() -> None:
    """A tensor lives off the CPU from now on: dispatch checks devices (`placed`), and the ops'
    fast path leaves every call to it (`_profiling.slow`)."""
    placed[0] = True
    _profiling.set_slow(_profiling.PLACED, True)


_NOT_COMPILED = "Torch not compiled with CUDA enabled"
_cuda_devices: dict[int, device] = {}  # canonical cuda:N values (tensors hold these)


class _Current(threading.local):
    index = 0  # `torch.cuda.current_device()`, per thread as in PyTorch


_current = _Current()


def current_index() -> int:
    return _current.index


def set_current_index(i: int) -> None:
    _current.index = i


def cuda_device(index: int) -> device:
    """The canonical `cuda:index`, checked against the devices there are."""
    be = cuda_backend()
    if be is None:
        raise NoDeviceError(f"{_NOT_COMPILED}: jitorch: tensors on device 'cuda:{index}' need "
                            f"a GPU with CuPy (jitorch[cuda]) or the simulator "
                            f"(JITORCH_CUDA_SIM=1)")
    if not 0 <= index < be.count():
        raise RuntimeError("CUDA error: invalid device ordinal")
    d = _cuda_devices.get(index)
    if d is None:
        d = _cuda_devices[index] = device("cuda", index)
    return d


def as_device(d) -> device:
    """Normalise a device argument to a device that can hold storage: CPU, or a canonical
    `cuda:N` (no index: the current device). Others raise, naming the device."""
    if d is None or d is CPU:
        return CPU
    if isinstance(d, int) and not isinstance(d, bool):
        return cuda_device(d)
    d = d if isinstance(d, device) else device(d)
    if d.type == "cpu":
        return CPU
    if d.type == "cuda":
        return cuda_device(_current.index if d.index is None else d.index)
    raise NoDeviceError(f"jitorch: tensors on device '{d}' are not implemented yet "
                        f"(devices here: cpu, cuda)")


class on_device:
    """`with on_device(d):` runs the block with `d` as this thread's default device."""

    __slots__ = ("dev",)

    def __init__(self, dev):
        self.dev = dev

    def __enter__(self):
        _push_default(self.dev)

    def __exit__(self, *exc):
        _pop_default()
        return False


_default = [CPU]  # set_default_device: the process's default


class _Scoped(threading.local):
    stack: list = []  # `with jitorch.device(d):` and autograd rules, per thread (innermost last)


_scoped = _Scoped()


@_settings.setter
def set_default_device(device) -> None:
    """`torch.set_default_device`: the device factories use when given none (None: the CPU).
    A device that cannot hold storage raises at once (PyTorch raises at the first factory)."""
    _default[0] = CPU if device is None else as_device(device)
    if _default[0] is not CPU:
        mark_placed()


def get_default_device() -> device:
    s = _scoped.stack
    return s[-1] if s else _default[0]


_settings.register("default_device", get_default_device)  # where factories allocate


def _push_default(d) -> None:
    """Make `d` the default device of this thread until the matching `_pop_default` (`with
    jitorch.device(d):`; autograd runs a device's VJP/JVP rules so, so that the constants and
    zeros a rule makes are made on its device)."""
    d = as_device(d)
    if d is not CPU:
        mark_placed()
    _scoped.stack = _scoped.stack + [d]


def _pop_default() -> None:
    _scoped.stack = _scoped.stack[:-1]
