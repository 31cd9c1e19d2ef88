"""What generated CUDA entries import: allocation, kernel launches, library calls, host copies.

`alloc(shape, dtype)` is the one place a CUDA program allocates: from the `cuda` storage backend
of the process (`_device/backends.py`: CuPy's caching pool on a GPU, so the memory statistics
see it; NumPy arrays standing in for device memory on the simulator, registered with its pool
model). `launch(kernel, n, args)` runs a grid-stride kernel over `n` elements: on a GPU 256
threads a block, at most MAX_BLOCKS blocks (the kernel's loop covers the rest), on CuPy's
current stream (never a host sync per launch); `launch_blocks(kernel, n, args)` runs a kernel
with a block per unit of work (a reduction's output element, a row region's row). Numba's CUDA
simulator (NUMBA_ENABLE_CUDASIM=1, which JITORCH_CUDA_SIM=1 turns on) runs one Python thread
per CUDA thread (about 0.15 ms each), so there the grid is clamped to 2 blocks of 32 threads.

`implementation(name)` and `result(r)`: a registry op's implementation called on device arrays
(library.py) and its result as an array, as eager's dispatch normalises it. `host_scalar` is
the one device-to-host copy a program makes (a number read from a tensor), counted in
`jit.stats()["host_copies"]`. `device_constant` puts a tensor constant on the device once per
loaded module.
"""
from __future__ import annotations

import itertools
import sys

import numpy as np
from numba import config, cuda

SIMULATED = bool(config.ENABLE_CUDASIM)
THREADS = 32 if SIMULATED else 256
# threads a block of `launch_blocks` (a power of two): on the simulator every
# `cuda.syncthreads()` of a block waits on each of its Python threads
BLOCK_THREADS = 8 if SIMULATED else 256
MAX_BLOCKS = 2 if SIMULATED else 65535
if SIMULATED:
    from numba.cuda.simulator import kernelapi as _sim_api
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    from .... import _fork
    _SHARED_LOCK = _fork.lock()  # (released in a forked child, as every jitorch lock)

    def _shared_array(self, shape, dtype, alignment=None):
        """The simulator's `cuda.shared.array` (a launch's arrays are keyed by the line that
        makes them), made under a lock: without one, two Python threads of a block could each
        make their own array and read slots the other wrote (reduce.py, rows.py)."""
        if shape == 0 or alignment is not None or not isinstance(dtype, (type, np.dtype)):
            # dynamic shared memory, alignment, a Numba type: as Numba does
            return _sim_make_shared(self, shape, dtype, alignment)
        caller = sys._getframe(1)
        key = (caller.f_code.co_filename, caller.f_lineno)
        with _SHARED_LOCK:
            res = self._allocations.get(key)
            if res is None:
                res = self._allocations[key] = np.empty(shape, np.dtype(dtype))
        return res

    _sim_make_shared = _sim_api.FakeCUDAShared.array
    _sim_api.FakeCUDAShared.array = _shared_array

from ...ir.interpreter import scalar_fn  # noqa: E402,F401 - the entries' scalar ops
from .... import _dtype as _dt  # noqa: E402
from ...._device import current_index  # noqa: E402
from ...._device.backends import cuda_backend  # noqa: E402

host_copies = itertools.count()  # device -> host copies made by programs (stats)


def alloc(shape: tuple, dtype):
    """A new array of `shape` and `dtype` in device memory (uninitialised)."""
    b = cuda_backend()  # (decided once per process)
    if b is None:  # the target's tests run kernels on the simulator without jitorch's cuda
        return np.empty(shape, dtype)
    out = b.xp.empty(shape, dtype)
    b.adopt(out, current_index())
    return out


def grid(n: int) -> tuple:
    """(blocks, threads a block) for a grid-stride kernel over `n` > 0 elements."""
    return min(-(-n // THREADS), MAX_BLOCKS), THREADS


def launch(kernel, n: int, args: tuple) -> None:
    """Run `kernel` over `n` elements (none: no launch, CUDA refuses an empty grid)."""
    if n > 0:
        _run(kernel, grid(n), args)


def launch_blocks(kernel, n: int, args: tuple) -> None:
    """Run `kernel` with a block of BLOCK_THREADS threads for each of `n` units of work (a
    reduction's output elements, reduce.py; a row region's rows, rows.py): at most MAX_BLOCKS
    blocks, whose block-stride loop covers the rest; none: no launch."""
    if n > 0:
        if not SIMULATED:
            _run(kernel, (min(n, MAX_BLOCKS), BLOCK_THREADS), args)
            return
        # the simulator's block polls its threads holding the GIL: each `cuda.syncthreads()`
        # would wait for Python's thread switch interval (5 ms) several times
        interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-5)
        try:
            _run(kernel, (min(n, MAX_BLOCKS), BLOCK_THREADS), args)
        finally:
            sys.setswitchinterval(interval)


def _run(kernel, shape: tuple, args: tuple) -> None:
    blocks, threads = shape
    if SIMULATED:
        kernel[blocks, threads](*(_sim_device(a) for a in args))
    else:
        kernel[blocks, threads, _stream()](*args)


def _stream():
    """Numba's handle on CuPy's current stream (jitorch.cuda.current_stream)."""
    import cupy
    s = cupy.cuda.get_current_stream()
    return cuda.external_stream(s.ptr) if s.ptr else 0


def _sim_device(a):
    """Under the simulator a NumPy array IS device memory: wrapped as the simulator's device
    array, so the kernel reads it in place, through its strides (the simulator would copy a
    host array in and out, and refuses one that is not contiguous)."""
    if isinstance(a, np.ndarray) and a.ndim > 0:
        return FakeCUDAArray(a)
    return a


def implementation(name: str):
    from ...._ops import registry
    return registry.OPS[name].impl


def result(r, single: bool = False):
    """An op implementation's result as eager's dispatch takes it: tensors (factories) as their
    arrays, NumPy scalars as 0-d arrays, containers element by element; with `single`, a
    sequence's one element (library.py)."""
    from ...._tensor import Tensor
    if single and isinstance(r, (tuple, list)):
        r = r[0]
    if isinstance(r, Tensor):
        return r._data
    if isinstance(r, np.generic):
        return np.asarray(r)
    if isinstance(r, (tuple, list)):
        return type(r)(result(x) for x in r)
    return r


def host_scalar(x, kind):
    """`x` (a device array or a number) as a Python number of `kind` ("int", "float", "bool",
    None: its own), copied to the host."""
    if hasattr(x, "ndim"):
        next(host_copies)
        x = x.item()
    return {"int": int, "float": float, "bool": bool}.get(kind, lambda v: v)(x)


def device_constant(arr: np.ndarray):
    b = cuda_backend()
    return arr if b is None else b.from_host(arr, current_index())


def jdtype(np_type):
    return _dt.from_numpy_dtype(np.dtype(np_type))


def jdevice(name: str):
    from ...._device import as_device
    return as_device(name)
