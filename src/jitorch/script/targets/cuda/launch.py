"""What generated CUDA entries import: output allocation and kernel launches.

`alloc(shape, dtype)` is the one place a CUDA program allocates (to be routed to the device
memory pool when CUDA tensors land); under Numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1,
no GPU) device memory is NumPy arrays, so it returns one. `launch(kernel, n, args)` runs a
grid-stride kernel over `n` elements: on a GPU 256 threads a block, at most MAX_BLOCKS blocks
(the kernel's loop covers the rest); the simulator runs one Python thread per CUDA thread
(about 0.15 ms each), so there the grid is clamped to 2 blocks of 32 threads.
"""
from __future__ import annotations

import numpy as np
from numba import config, cuda

SIMULATED = bool(config.ENABLE_CUDASIM)
THREADS = 32 if SIMULATED else 256
MAX_BLOCKS = 2 if SIMULATED else 65535
if SIMULATED:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray


def alloc(shape: tuple, dtype):
    """A new array of `shape` and `dtype` in device memory (uninitialised)."""
    if SIMULATED:
        return np.empty(shape, dtype)
    return cuda.device_array(shape, dtype)


def grid(n: int) -> tuple:
    """(blocks, threads a block) for a grid-stride kernel over `n` > 0 elements."""
    return min(-(-n // THREADS), MAX_BLOCKS), THREADS


def launch(kernel, n: int, args: tuple) -> None:
    """Run `kernel` over `n` elements (none: no launch, CUDA refuses an empty grid)."""
    if n > 0:
        blocks, threads = grid(n)
        kernel[blocks, threads](*(_device(a) for a in args))


def _device(a):
    """Under the simulator a NumPy array IS device memory: wrapped as the simulator's device
    array, so the kernel reads it in place, through its strides (the simulator would copy a
    host array in and out, and refuses one that is not contiguous)."""
    if SIMULATED and isinstance(a, np.ndarray) and a.ndim > 0:
        return FakeCUDAArray(a)
    return a
