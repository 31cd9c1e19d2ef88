"""The simulator's `cuda` backend: NumPy arrays stand in for device memory (as they do in
Numba's CUDA simulator), so every eager op runs unchanged and CI without a GPU exercises the
device plumbing: placement, transfers, mixing checks, autograd across devices, memory statistics.

Device memory is modelled, not assumed: every array placed on or produced on the device is
registered by its owning buffer (views count once) and released when that buffer is collected;
sizes round up to 512 bytes as PyTorch's caching allocator rounds them. `memory_reserved` models
the caching pool: freed blocks stay reserved until `empty_cache()`.

One device by default; `JITORCH_CUDA_SIM_DEVICES=N` models N (each with its own memory
bookkeeping), so code for several GPUs (a model split over cuda:0 and cuda:1, DDP's buckets per
device) runs without them.
"""
from __future__ import annotations

import os
import weakref

import numpy as np

from .. import _fork

from .backends import Backend

_BLOCK = 512  # PyTorch's allocation granularity


def _rounded(nbytes: int) -> int:
    return -(-nbytes // _BLOCK) * _BLOCK


class _Pool:
    """Live allocations of one simulated device, by owning buffer."""

    def __init__(self):
        self.live: dict[int, int] = {}  # id(owner) -> rounded bytes
        self.allocated = self.peak = self.reserved = self.reserved_peak = 0
        self.lock = _fork.lock()

    def add(self, owner) -> None:
        key = id(owner)
        if key in self.live:
            return
        size = _rounded(owner.nbytes)
        try:
            weakref.finalize(owner, self.release, key)
        except TypeError:  # an owner that cannot be watched (not an ndarray): not counted
            return
        with self.lock:
            self.live[key] = size
            self.allocated += size
            self.peak = max(self.peak, self.allocated)
            self.reserved = max(self.reserved, self.allocated)
            self.reserved_peak = max(self.reserved_peak, self.reserved)

    def release(self, key) -> None:
        with self.lock:
            self.allocated -= self.live.pop(key, 0)


def _device_count() -> int:
    n = os.environ.get("JITORCH_CUDA_SIM_DEVICES", "1")
    if not n.isdigit() or int(n) < 1:
        raise ValueError(f"JITORCH_CUDA_SIM_DEVICES must be a positive number of devices, "
                         f"got {n!r}")
    return int(n)


def _owner(arr: np.ndarray):
    """The array that owns `arr`'s memory (a view's ultimate base ndarray)."""
    while isinstance(arr.base, np.ndarray):
        arr = arr.base
    return arr


class SimBackend(Backend):
    type = "cuda"
    xp = np
    name = "jitorch CUDA simulator (NumPy device memory)"

    def __init__(self):
        self.pools = [_Pool() for _ in range(_device_count())]

    def count(self) -> int:
        return len(self.pools)

    def from_host(self, arr, index):
        out = np.array(arr, copy=True, order="K")  # device memory is never the host's
        self.pools[index].add(out)
        return out

    def to_host(self, arr):
        return np.array(arr, copy=True, order="K")

    def copy(self, arr, index):
        return self.from_host(arr, index)

    def adopt(self, arr, index) -> None:
        if isinstance(arr, np.ndarray):
            self.pools[index].add(_owner(arr))

    # DLPack: a capsule of simulated device memory would claim CUDA memory (kDLCUDA) at a host
    # address, which a real consumer (CuPy, on a GPU machine running this tier) would
    # dereference on the device: refuse both ways (jitorch.from_dlpack of a jitorch tensor
    # shares memory without a capsule)
    _NO_DLPACK = ("jitorch: the CUDA simulator keeps device memory in host memory and cannot "
                  "{} CUDA memory through DLPack; exchange CPU tensors (.cpu()) instead")

    def dlpack_export(self, arr, stream, kwargs):
        raise BufferError(self._NO_DLPACK.format("export"))

    def dlpack_import(self, src, index):
        raise BufferError(self._NO_DLPACK.format("import"))

    # --- memory statistics (jitorch.cuda.memory_*) ------------------------------------------
    def memory_allocated(self, index) -> int:
        return self.pools[index].allocated

    def max_memory_allocated(self, index) -> int:
        return self.pools[index].peak

    def memory_reserved(self, index) -> int:
        return self.pools[index].reserved

    def max_memory_reserved(self, index) -> int:
        return self.pools[index].reserved_peak

    def reset_peak(self, index) -> None:
        p = self.pools[index]
        p.peak, p.reserved_peak = p.allocated, p.reserved

    def empty_cache(self) -> None:
        for p in self.pools:
            p.reserved = p.allocated

    def properties(self, index) -> dict:
        return {"name": self.name, "major": 0, "minor": 0, "total_memory": 0,
                "multi_processor_count": 1, "is_simulator": True}
