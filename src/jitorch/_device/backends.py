"""Storage backends, one per device type: each owns how arrays are allocated, copied, moved to
and from the host, and its array namespace `xp` (what an op's NumPy implementation runs on).

- `cpu`: NumPy arrays in host memory (the identity backend).
- `cuda` on a GPU: CuPy device arrays and CuPy's caching memory pool (`_device/cupy_backend.py`).
- `cuda` on the simulator: NumPy arrays standing in for device memory (`_device/sim.py`), with
  real bookkeeping of live allocations behind the memory statistics.

Which `cuda` backend exists is decided once, lazily (`cuda_backend()`): the simulator when
`JITORCH_CUDA_SIM=1` or `NUMBA_ENABLE_CUDASIM=1` is set, else CuPy when it imports and sees a
GPU, else none (then `jitorch.cuda.is_available()` is False and nothing else changes).
"""
from __future__ import annotations

import contextlib
import os

import numpy as np

from .. import _fork

# jitorch's own switch also turns on Numba's CUDA simulator, which Numba reads when it is first
# imported (jitorch imports Numba after this module): one switch gives a consistent simulator
_SIM_ON = ("1", "true", "yes")
if os.environ.get("JITORCH_CUDA_SIM", "").lower() in _SIM_ON:
    os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")


class Backend:
    """The storage operations of one device type. `index` names the device of that type."""

    type = "cpu"
    xp = np

    def count(self) -> int:
        return 1

    def on(self, index):
        """A context making device `index` current for allocations (the namespace's own)."""
        return contextlib.nullcontext()

    def from_host(self, arr: np.ndarray, index) -> np.ndarray:
        return arr

    def to_host(self, arr) -> np.ndarray:
        return arr

    def copy(self, arr, index):
        """A copy of a device array onto device `index` (the same or another device)."""
        return arr.copy()

    def write(self, dst, src: np.ndarray) -> None:
        """Copy host array `src` into device array `dst` in place (its memory, and so every
        tensor and view sharing it, receives the values; cast to `dst`'s dtype)."""
        dst[...] = src

    def pinned(self, arr: np.ndarray) -> np.ndarray:
        """`arr` in page-locked host memory (where the backend has such memory)."""
        return arr

    def adopt(self, arr, index) -> None:
        """Account for an array an op produced on this device (memory statistics)."""

    def synchronize(self, index) -> None:
        """Wait for the device's queued work (a no-op where work runs synchronously)."""

    def dlpack_export(self, arr, stream, kwargs):
        """A DLPack capsule sharing `arr` (`Tensor.__dlpack__`; `kwargs`: the protocol's
        max_version/dl_device/copy, passed on when given)."""
        if stream is not None:  # host memory has no streams (DLPack: None on the CPU)
            raise BufferError("stream must be None for a CPU tensor (DLPack)")
        return arr.__dlpack__(**kwargs)

    def dlpack_import(self, src, index):
        """The array of this device sharing the memory of DLPack exporter `src`."""
        raise BufferError(f"jitorch: {self.type} cannot import DLPack device memory")


class CPUBackend(Backend):
    pass


CPU_BACKEND = CPUBackend()
# array types of device memory other than NumPy's (CuPy's on a GPU): op results of these types
# are wrapped as they are, never converted through the host
device_array_types = [()]

_cuda = []  # [backend or None], filled on the first question
_lock = _fork.lock()


def sim_requested() -> bool:
    return (os.environ.get("JITORCH_CUDA_SIM", "").lower() in _SIM_ON
            or os.environ.get("NUMBA_ENABLE_CUDASIM", "") == "1")


def cuda_backend():
    """The `cuda` backend of this process, or None when there is no CUDA (decided once)."""
    if _cuda:
        return _cuda[0]
    with _lock:
        if not _cuda:
            _cuda.append(_probe())
    return _cuda[0]


def _probe():
    if sim_requested():
        from .sim import SimBackend
        return SimBackend()
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:  # no CuPy, no driver, no GPU: CUDA is simply not available
        return None
    from .cupy_backend import CupyBackend
    return CupyBackend(cupy)


def backend_of(dev):
    """The backend that holds storage for a (normalised) device."""
    return CPU_BACKEND if dev.type == "cpu" else _cuda[0]
