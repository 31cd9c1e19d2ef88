"""Deterministic mode: `use_deterministic_algorithms`, the debug mode, and what it changes here.

Owns the process-wide flags PyTorch keeps in its global context (`deterministic algorithms`,
`warn_only`, `fill_uninitialized_memory`) and their effects in jitorch:

- `empty`, `empty_like`, `empty_strided` and `Tensor.new_empty` fill their result with NaN
  (floating and complex; NaN+0j) or the dtype's largest value (integers; True for bool) while the
  mode is on and `jitorch.utils.deterministic.fill_uninitialized_memory` is True, as PyTorch 2.1+
  does, so a read of memory nothing wrote shows up. Outside the mode they are zero-filled (jitorch
  never hands out uninitialised memory). Compiled programs fill the same way: the fill is baked
  into the program when it is generated, so it is a registered setting (`_settings`): switching
  it forgets every compiled specialisation.
- BLAS is limited to one thread per call while the mode is on. OpenBLAS's sgemm/dgemm split the
  work differently with the thread count and the low bits of the result change with it (measured:
  a 256x3000 @ 3000x64 float32 matmul differs between 1, 2, 3, 4 and 8 BLAS threads; at one
  thread count it is the same every run), so without this a result depends on the machine's
  core count. With one BLAS thread, eager ops and compiled programs give the same bits whatever
  `set_num_threads` and the core count are.
- Scripted code compiles in the call (`JITORCH_COMPILE=sync`'s path; script/tiers.py) while the
  mode is on. In the default background mode the first calls run in the IR interpreter until the
  worker is done, and the interpreter's float sums round otherwise than the compiled loops'
  (measured: 1.2e-4 apart on a 1000x257 sum), so which calls ran where, and so the bits, depended
  on compile timing. Switching the mode forgets every compiled specialisation (`_settings`), so
  the next call of each scripted function builds its program in the call.

Every other jitorch op is deterministic already: eager ops are serial NumPy calls (scatter/index
accumulation is `np.add.at`, in index order), compiled programs are serial Numba loops (codegen
emits no `prange`/`parallel=True`), and autograd runs nodes in creation order. So no op raises
PyTorch's "does not have a deterministic implementation" error here (PyTorch raises it on CPU
for `put_(accumulate=False)` with repeated indices; jitorch's `put_` writes in index order, the
last write winning, the same every run). An op that ever gains a nondeterministic path (threads
racing on one output) must raise that error from its registry declaration.
"""
from __future__ import annotations

import warnings

import numpy as np

from . import _fork, _settings

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_deterministic", "is_deterministic",
           "get_fill_uninitialized_memory", "set_fill_uninitialized_memory", "empty_fill"]

_enabled = False
_warn_only = False
_fill = True
_lock = _fork.lock()
_blas_limiter = None  # threadpoolctl limits in force while the mode is on
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def _check_bool(fn: str, name: str, pos: int | None, v) -> None:
    if not isinstance(v, bool):
        where = f" (position {pos})" if pos is not None else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be bool, not {type(v).__name__}")


@_settings.setter
def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """`torch.use_deterministic_algorithms`: turn deterministic mode on or off (see module doc).
    `warn_only=True` makes an op without a deterministic implementation warn instead of raise."""
    _check_bool("use_deterministic_algorithms", "mode", 1, mode)
    _check_bool("use_deterministic_algorithms", "warn_only", None, warn_only)
    global _enabled, _warn_only
    with _lock:
        _enabled, _warn_only = mode, warn_only
        _apply_blas_locked()


def _apply_blas_locked() -> None:
    global _blas_limiter
    if _enabled and _blas_limiter is None:
        try:
            import scipy.linalg.cython_blas  # noqa: F401  (njit's BLAS: load it so it is seen)
        except Exception:
            pass
        try:
            from threadpoolctl import threadpool_limits
            _blas_limiter = threadpool_limits(limits=1, user_api="blas")
        except Exception:  # no threadpoolctl / an unknown BLAS: nothing to limit
            _blas_limiter = None
    elif not _enabled and _blas_limiter is not None:
        _blas_limiter.restore_original_limits()
        _blas_limiter = None


def are_deterministic_algorithms_enabled() -> bool:
    return _enabled


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _warn_only


@_settings.setter
def set_deterministic_debug_mode(debug_mode) -> None:
    """`torch.set_deterministic_debug_mode`: 0/"default" off, 1/"warn" on with warn_only,
    2/"error" on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _enabled:
        return 0
    return 1 if _warn_only else 2


@_settings.setter
def set_deterministic(d: bool) -> None:
    """PyTorch 1.7's name (removed in 1.9) for `use_deterministic_algorithms`."""
    warnings.warn("torch.set_deterministic is deprecated and will be removed in a future "
                  "release. Please use torch.use_deterministic_algorithms instead",
                  UserWarning, stacklevel=3)  # (3: the caller of the `_settings.setter` wrapper)
    use_deterministic_algorithms(d)


def is_deterministic() -> bool:
    """PyTorch 1.7's name for `are_deterministic_algorithms_enabled`."""
    warnings.warn("torch.is_deterministic is deprecated and will be removed in a future "
                  "release. Please use torch.are_deterministic_algorithms_enabled instead",
                  UserWarning, stacklevel=2)
    return _enabled


def get_fill_uninitialized_memory() -> bool:
    return _fill


@_settings.setter
def set_fill_uninitialized_memory(mode) -> None:
    global _fill
    if not isinstance(mode, bool):
        raise RuntimeError(f"expected a bool, but got {type(mode).__name__}")
    _fill = mode


def fills_empty() -> bool:
    """Whether `empty*` results are filled (deterministic mode with fill_uninitialized_memory)."""
    return _enabled and _fill


# compiled programs bake `empty*`'s fill in (targets/cpu/lower_factory.py) and compile in the call
# while the mode is on (runtime/tiers.py): both are registered settings
_settings.register("deterministic_algorithms", are_deterministic_algorithms_enabled)
_settings.register("empty_fill", fills_empty)


def empty_fill(shape, np_dtype) -> np.ndarray:
    """The array behind an `empty*` result: zeros, or PyTorch's deterministic fill value."""
    if not (_enabled and _fill):
        return np.zeros(shape, dtype=np_dtype)
    d = np.dtype(np_dtype)
    if d.kind == "b":
        v = True
    elif d.kind in "iu":
        v = np.iinfo(d).max
    else:  # float, complex (NaN+0j, as PyTorch), bfloat16 (ml_dtypes, kind 'V')
        v = np.nan
    return np.full(shape, v, dtype=d)

