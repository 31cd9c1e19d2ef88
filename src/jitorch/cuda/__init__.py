"""`jitorch.cuda`: the CUDA namespace, answering from the process's `cuda` backend
(`_device/backends.py`): a GPU through CuPy, or the simulator (`JITORCH_CUDA_SIM=1`: one
device, NumPy standing in for device memory; see docs/cuda.md).

Without either, every query answers "not available" exactly as a CPU-only PyTorch build does, so
scripts take their CPU branch: `is_available()` is False, `device_count()` 0, the seeding, cache
and memory-statistics calls are harmless no-ops (PyTorch's queue lazily or report zeros), and
what needs a GPU raises PyTorch's `AssertionError("Torch not compiled with CUDA enabled")`.
`amp` (autocast, GradScaler) disables itself as PyTorch's does without CUDA.

Streams and events live in `streams.py`, the per-device generators in `random.py`.
"""
from __future__ import annotations

from .. import _device
from .._device import cuda_backend
from . import amp  # noqa: F401  (`torch.cuda.amp.GradScaler`, `autocast`: disabled here)
from .random import (get_rng_state, get_rng_state_all, initial_seed, manual_seed,  # noqa: F401
                     manual_seed_all, seed, seed_all, set_rng_state, set_rng_state_all)
from .streams import (Event, Stream, StreamContext, current_stream, default_stream,  # noqa: F401
                      set_stream, stream)

_NOT_COMPILED = "Torch not compiled with CUDA enabled"

__all__ = ["is_available", "device_count", "is_initialized", "init", "current_device",
           "set_device", "synchronize", "empty_cache", "ipc_collect", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "get_rng_state_all", "set_rng_state", "set_rng_state_all", "get_device_name",
           "get_device_properties", "get_device_capability", "get_arch_list",
           "is_bf16_supported", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "memory_cached", "max_memory_cached", "memory_stats",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "mem_get_info",
           "current_stream", "default_stream", "Stream", "Event", "stream", "StreamContext",
           "set_stream", "device", "device_of", "default_generators"]

_initialized = [False]


def _lazy_init():
    """The backend, initialised; PyTorch's AssertionError where there is none."""
    be = cuda_backend()
    if be is None:
        raise AssertionError(_NOT_COMPILED)
    _initialized[0] = True
    return be


def _index(device) -> int:
    """A device argument (None: the current device, an int, a str, a device) as an index."""
    _lazy_init()
    if device is None:
        return _device.current_index()
    if isinstance(device, int) and not isinstance(device, bool):
        return _device.as_device(device).index
    return _device.as_device(device).index


def is_available() -> bool:
    return cuda_backend() is not None


def device_count() -> int:
    be = cuda_backend()
    return 0 if be is None else be.count()


def is_initialized() -> bool:
    return _initialized[0]


def _is_compiled() -> bool:
    return cuda_backend() is not None


def init():
    _lazy_init()


def current_device() -> int:
    _lazy_init()
    return _device.current_index()


def set_device(device) -> None:
    """Select the current device (a negative index selects nothing, as in PyTorch)."""
    if isinstance(device, str):
        device = _device.device(device)
    i = device if isinstance(device, int) else device.index
    if i is None or i < 0:
        return
    _device.set_current_index(_index(i))


class device:
    """`with torch.cuda.device(i):` selects device i inside the block (a negative index or None
    selects nothing, as PyTorch's)."""

    def __init__(self, device):
        if isinstance(device, str):
            device = _device.device(device)
        self.idx = device if isinstance(device, int) or device is None else device.index
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None and self.idx >= 0:
            self.prev_idx = _device.current_index()
            _device.set_current_index(_index(self.idx))
        return self

    def __exit__(self, *exc):
        if self.prev_idx >= 0:
            _device.set_current_index(self.prev_idx)
        return False


class device_of(device):
    """`torch.cuda.device_of(t)`: the device context of a tensor's device (CPU: none)."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.is_cuda else -1)


def synchronize(device=None) -> None:
    """Wait for all queued work on the device (on the simulator work is already done)."""
    _lazy_init().synchronize(_index(device))


def ipc_collect() -> None:
    _lazy_init()


class _CudaDeviceProperties:
    """What `get_device_properties` returns: name, capability, memory, multiprocessors."""

    def __init__(self, p: dict):
        self.name, self.major, self.minor = p["name"], p["major"], p["minor"]
        self.total_memory = p["total_memory"]
        self.multi_processor_count = p["multi_processor_count"]
        self.is_integrated = False

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


def get_device_properties(device=None) -> _CudaDeviceProperties:
    return _CudaDeviceProperties(_lazy_init().properties(_index(device)))


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple:
    p = get_device_properties(device)
    return (p.major, p.minor)


def mem_get_info(device=None):
    be = _lazy_init()
    i = _index(device)
    if not hasattr(be, "mem_get_info"):
        raise NotImplementedError("mem_get_info: the CUDA simulator has no fixed device memory")
    return be.mem_get_info(i)


def get_arch_list() -> list:
    be = cuda_backend()
    if be is None or not be.count():
        return []
    major, minor = get_device_capability(0)
    return [f"sm_{major}{minor}"] if major else []


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return cuda_backend() is not None and get_device_capability()[0] >= 8


# `jitorch.cuda.FloatTensor`, ...: the legacy types of CUDA tensors (issue 19)
from .._legacy_types import CUDA_TYPES as _CUDA_TYPES  # noqa: E402
globals().update({_cls.__name__: _cls for _cls in _CUDA_TYPES.values()})


def __getattr__(name):
    if name == "default_generators":  # made on first use: probing CUDA is lazy
        from .random import generators
        return generators()
    raise AttributeError(f"module 'jitorch.cuda' has no attribute '{name}'")


# --- memory statistics: the backend's allocator (CuPy's pool; the simulator's bookkeeping);
# without CUDA nothing is allocated, as on a machine without a GPU, and the calls are no-ops
def _stat(name: str, device) -> int:
    be = cuda_backend()
    return 0 if be is None else int(getattr(be, name)(_index(device)))


def memory_allocated(device=None) -> int:
    return _stat("memory_allocated", device)


def max_memory_allocated(device=None) -> int:
    return _stat("max_memory_allocated", device)


def memory_reserved(device=None) -> int:
    return _stat("memory_reserved", device)


def max_memory_reserved(device=None) -> int:
    return _stat("max_memory_reserved", device)


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def memory_stats(device=None) -> dict:
    if cuda_backend() is None:
        return {}
    return {"allocated_bytes.all.current": memory_allocated(device),
            "allocated_bytes.all.peak": max_memory_allocated(device),
            "reserved_bytes.all.current": memory_reserved(device),
            "reserved_bytes.all.peak": max_memory_reserved(device)}


def reset_peak_memory_stats(device=None) -> None:
    be = cuda_backend()
    if be is not None:
        be.reset_peak(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats


def empty_cache() -> None:
    be = cuda_backend()
    if be is not None:
        be.empty_cache()
