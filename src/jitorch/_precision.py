"""Precision controls: autocast's state functions (`jitorch.is_autocast_enabled`, ...) and
`set_float32_matmul_precision` / `get_float32_matmul_precision`.

Matmul precision: PyTorch accepts "highest", "high" and "medium". On CUDA "high" allows TF32;
on CPU only "medium" changes anything, and only where oneDNN has a fast bfloat16 GEMM (AVX512-BF16
/ AMX): float32 matmuls may then run on bfloat16 inputs. jitorch's float32 matmuls run on NumPy's
BLAS (and Numba's calls of it), which has no bfloat16 GEMM: a bf16 pass would be both slower
and less exact (bench/autocast.py measures it), so every level computes exact float32 here, as
PyTorch does on a CPU without bf16 GEMM hardware. The level is stored and validated as PyTorch
does, so code that sets it runs unchanged.
"""
from __future__ import annotations

import warnings

from . import _autocast as _ac
from . import _dtype as dt
from . import _settings

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision",
           "is_autocast_enabled", "get_autocast_dtype", "set_autocast_enabled",
           "set_autocast_dtype", "is_autocast_cpu_enabled", "get_autocast_cpu_dtype",
           "set_autocast_cpu_enabled", "set_autocast_cpu_dtype", "is_autocast_cache_enabled",
           "set_autocast_cache_enabled", "clear_autocast_cache", "autocast_increment_nesting",
           "autocast_decrement_nesting"]

_LEVELS = ("highest", "high", "medium")
_matmul_precision = ["highest"]


@_settings.setter
def set_float32_matmul_precision(precision: str) -> None:
    """Store the float32 matmul precision level (every level computes exact float32 on this
    CPU build: see the module docstring and the README's "Mixed precision")."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got "
                           f"{type(precision).__name__}")
    if precision not in _LEVELS:
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current"
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning,
                      stacklevel=3)  # (3: the caller of the `_settings.setter` wrapper)
        return
    _matmul_precision[0] = precision


def get_float32_matmul_precision() -> str:
    return _matmul_precision[0]


# registered although every level computes the same here: a matmul that ever reads it is
# then rebuilt when it changes
_settings.register("float32_matmul_precision", get_float32_matmul_precision)


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """This thread's autocast state for `device_type` (no argument: "cuda", as in PyTorch)."""
    return _ac.is_enabled("cuda" if device_type is None else device_type)


def get_autocast_dtype(device_type: str) -> dt.dtype:
    return _ac.get_dtype(device_type)


def set_autocast_enabled(device_type, enabled=None) -> None:
    if enabled is None:  # the legacy one-argument form sets CUDA's state
        device_type, enabled = "cuda", device_type
    _ac.set_enabled(device_type, enabled)


def set_autocast_dtype(device_type: str, dtype) -> None:
    _ac.set_dtype(device_type, dtype)


def is_autocast_cpu_enabled() -> bool:
    return _ac.is_enabled("cpu")


def get_autocast_cpu_dtype() -> dt.dtype:
    return _ac.get_dtype("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _ac.set_enabled("cpu", enabled)


def set_autocast_cpu_dtype(dtype) -> None:
    _ac.set_dtype("cpu", dtype)


def is_autocast_cache_enabled() -> bool:
    return _ac._state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    _ac._state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    _ac.clear_cache()


def autocast_increment_nesting() -> int:
    _ac._state.nesting += 1
    return _ac._state.nesting


def autocast_decrement_nesting() -> int:
    _ac._state.nesting -= 1
    return _ac._state.nesting
