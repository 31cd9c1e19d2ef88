"""`jitorch.cuda`: the CUDA namespace as PyTorch presents it on a CPU-only machine.

jitorch has no CUDA backend, so every query answers "not available" exactly as a CPU-only
PyTorch build does, and scripts take their CPU branch: `is_available()` is False,
`device_count()` 0, the seeding, cache and memory-statistics calls are harmless no-ops (PyTorch's
are too: they queue lazily or report zeros), and what needs a GPU raises PyTorch's
`AssertionError("Torch not compiled with CUDA enabled")`. `amp` (autocast, GradScaler)
disables itself as PyTorch's does without CUDA.
"""
from __future__ import annotations

from . import amp  # noqa: F401  (`torch.cuda.amp.GradScaler`, `autocast`: disabled here)

_NOT_COMPILED = "Torch not compiled with CUDA enabled"

__all__ = ["is_available", "device_count", "is_initialized", "init", "current_device",
           "set_device", "synchronize", "empty_cache", "ipc_collect", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
           "get_rng_state_all", "set_rng_state", "set_rng_state_all", "get_device_name",
           "get_device_properties", "get_device_capability", "get_arch_list",
           "is_bf16_supported", "memory_allocated", "max_memory_allocated", "memory_reserved",
           "max_memory_reserved", "memory_cached", "max_memory_cached", "memory_stats",
           "reset_peak_memory_stats", "reset_max_memory_allocated", "mem_get_info",
           "current_stream", "default_stream", "Stream", "Event", "device", "default_generators"]

default_generators: tuple = ()


def _lazy_init():
    raise AssertionError(_NOT_COMPILED)


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def _is_compiled() -> bool:
    return False


def init():
    _lazy_init()


def current_device() -> int:
    _lazy_init()


def set_device(device) -> None:
    _lazy_init()


def synchronize(device=None) -> None:
    _lazy_init()


def ipc_collect() -> None:
    _lazy_init()


def get_device_name(device=None) -> str:
    _lazy_init()


def get_device_properties(device=None):
    _lazy_init()


def get_device_capability(device=None):
    _lazy_init()


def mem_get_info(device=None):
    _lazy_init()


def current_stream(device=None):
    _lazy_init()


def default_stream(device=None):
    _lazy_init()


def get_rng_state(device="cuda"):
    _lazy_init()


# PyTorch queues these until CUDA initialises, which never happens here: no-ops.
def empty_cache() -> None:
    return None


def manual_seed(seed) -> None:
    int(seed)  # PyTorch rejects a seed that is not an integer


def manual_seed_all(seed) -> None:
    int(seed)


def seed() -> None:
    return None


def seed_all() -> None:
    return None


def initial_seed() -> int:
    _lazy_init()


def get_rng_state_all() -> list:
    return []


def set_rng_state(new_state, device="cuda") -> None:
    return None


def set_rng_state_all(new_states) -> None:
    return None


def get_arch_list() -> list:
    return []


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return False


# Memory statistics report nothing allocated, as on a machine without a GPU.
def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def memory_stats(device=None) -> dict:
    return {}


def reset_peak_memory_stats(device=None) -> None:
    return None


def reset_max_memory_allocated(device=None) -> None:
    return None


class Stream:
    """`torch.cuda.Stream`: needs a GPU."""

    def __init__(self, *args, **kwargs):
        raise RuntimeError("torch.cuda.Stream requires CUDA support")


class Event:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("Tried to instantiate dummy base class Event")


class device:
    """`with torch.cuda.device(i):` — a context that selects a device; PyTorch's does nothing
    for a negative index and fails on entry for a real one without CUDA."""

    def __init__(self, device):
        self.idx = device if isinstance(device, int) else getattr(device, "index", -1)

    def __enter__(self):
        if self.idx is not None and self.idx >= 0:
            _lazy_init()
        return self

    def __exit__(self, *exc):
        return False
