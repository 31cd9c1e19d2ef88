"""`jitorch.accelerator`: PyTorch 2.6's device-generic accelerator queries, answered as on a
machine with no accelerator (`is_available()` False, `current_accelerator()` None,
`device_count()` 0); what needs one raises PyTorch's RuntimeError."""
from __future__ import annotations

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "synchronize",
           "current_stream", "set_stream", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "reset_peak_memory_stats", "memory_stats"]

_NONE = "Cannot access accelerator device when none is available."


def is_available() -> bool:
    return False


def current_accelerator(check_available: bool = False):
    return None


def device_count() -> int:
    return 0


def _none(*args, **kwargs):
    raise RuntimeError(_NONE)


current_device_index = current_device_idx = _none
set_device_index = set_device_idx = _none
synchronize = current_stream = set_stream = _none


def empty_cache() -> None:
    return None


def memory_allocated(device_index=None) -> int:
    return 0


max_memory_allocated = memory_reserved = max_memory_reserved = memory_allocated


def reset_peak_memory_stats(device_index=None) -> None:
    return None


def memory_stats(device_index=None) -> dict:
    return {}
