"""The `cuda` backend on a real GPU: CuPy device arrays, allocated from CuPy's caching memory
pool (the one allocator; Numba's allocations are routed into it by the CUDA target), work
queued on CuPy's current stream. NumPy calls in op implementations reach CuPy through NumPy's
`__array_function__`/`__array_ufunc__` protocols; `np.asarray` on a CuPy array raises, so no op
silently round-trips through the host.

Written against CuPy 13/14's public API; it runs only where a GPU is (CuPy has no CPU mode), so
the simulator backend (`_device/sim.py`) is what CI exercises.
"""
from __future__ import annotations

import numpy as np

from .backends import Backend


class CupyBackend(Backend):
    type = "cuda"

    def __init__(self, cupy):
        self.cp = cupy
        self.xp = cupy
        from .backends import device_array_types
        device_array_types[0] = (cupy.ndarray,)
        self._peak = {}

    def count(self) -> int:
        return self.cp.cuda.runtime.getDeviceCount()

    def on(self, index):
        return self.cp.cuda.Device(index)

    def from_host(self, arr, index):
        with self.on(index):
            out = self.cp.asarray(arr)
        self.adopt(out, index)
        return out

    def to_host(self, arr):
        return self.cp.asnumpy(arr) if isinstance(arr, self.cp.ndarray) else np.asarray(arr)

    def write(self, dst, src):
        with dst.device:
            if dst.flags.c_contiguous and dst.dtype == src.dtype and dst.shape == src.shape:
                dst.set(np.ascontiguousarray(src))  # one host-to-device copy, no temporary
            else:
                dst[...] = self.cp.asarray(src)

    def copy(self, arr, index):
        with self.on(index):
            out = self.cp.array(arr, copy=True)
        self.adopt(out, index)
        return out

    def pinned(self, arr):
        import cupyx
        out = cupyx.empty_pinned(arr.shape, arr.dtype)
        out[...] = arr
        return out

    def dlpack_export(self, arr, stream, kwargs):
        return arr.__dlpack__(stream=stream, **kwargs)

    def dlpack_import(self, src, index):
        with self.on(index):
            out = self.cp.from_dlpack(src)
        self.adopt(out, index)
        return out

    def adopt(self, arr, index) -> None:
        used, held = self.memory_allocated(index), self.memory_reserved(index)
        peak = self._peak.get(index, (0, 0))
        if used > peak[0] or held > peak[1]:
            self._peak[index] = (max(used, peak[0]), max(held, peak[1]))

    def synchronize(self, index) -> None:
        with self.on(index):
            self.cp.cuda.runtime.deviceSynchronize()

    def memory_allocated(self, index) -> int:
        with self.on(index):
            return int(self.cp.get_default_memory_pool().used_bytes())

    def max_memory_allocated(self, index) -> int:
        return max(self._peak.get(index, (0, 0))[0], self.memory_allocated(index))

    def max_memory_reserved(self, index) -> int:
        return max(self._peak.get(index, (0, 0))[1], self.memory_reserved(index))

    def mem_get_info(self, index) -> tuple:
        with self.on(index):
            return tuple(self.cp.cuda.runtime.memGetInfo())

    def memory_reserved(self, index) -> int:
        with self.on(index):
            return int(self.cp.get_default_memory_pool().total_bytes())

    def reset_peak(self, index) -> None:
        self._peak[index] = (self.memory_allocated(index), self.memory_reserved(index))

    def empty_cache(self) -> None:
        for i in range(self.count()):
            with self.on(i):
                self.cp.get_default_memory_pool().free_all_blocks()

    def properties(self, index) -> dict:
        p = self.cp.cuda.runtime.getDeviceProperties(index)
        name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
        return {"name": name, "major": p["major"], "minor": p["minor"],
                "total_memory": p["totalGlobalMem"],
                "multi_processor_count": p["multiProcessorCount"], "is_simulator": False}
