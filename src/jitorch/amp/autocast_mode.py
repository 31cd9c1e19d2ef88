"""`jitorch.autocast` / `jitorch.amp.autocast`: the context manager and decorator, PyTorch's.

The state and the casting policy live in `jitorch._autocast`; this module is the public face:
validation and warnings as in PyTorch 2.x ("cuda" runs where this process has CUDA, a GPU or
the simulator, and otherwise warns and disables itself as on a CPU-only build; a dtype other than
bfloat16/float16 warns and disables CPU autocast).
"""
from __future__ import annotations

import functools
import warnings

from .. import _autocast as _ac
from .. import _dtype as dt

__all__ = ["autocast", "is_autocast_available", "custom_fwd", "custom_bwd"]


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast can be used for `device_type` (PyTorch: any device type it knows)."""
    return _ac.check_device_type(device_type) in _ac.DEVICE_TYPES


class autocast:
    """Run the ops of a region in mixed precision: `with jitorch.autocast("cpu"):` casts
    matmul/linear/conv inputs to bfloat16 (or `dtype=float16`) and the inputs of losses,
    reductions and linear algebra of PyTorch's CPU fp32 list to float32. Thread-local."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.fast_dtype = _ac.get_dtype(device_type) if dtype is None else dtype
        self.device = device_type
        if not is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type "
                               f"'{device_type}'")
        self._cache_enabled = _ac._state.cache_enabled if cache_enabled is None \
            else cache_enabled
        if enabled:
            from .. import cuda
            if device_type == "cuda" and not cuda.is_available():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling "
                              "autocast.", stacklevel=2)
                enabled = False
            elif device_type not in ("cpu", "cuda"):
                warnings.warn(f"User provided device_type of '{device_type}', but "
                              f"{device_type.upper()} is not available. Disabling",
                              stacklevel=2)
                enabled = False
            elif device_type == "cpu" and self.fast_dtype not in (dt.bfloat16, dt.float16):
                warnings.warn("In CPU autocast, but the target dtype is not supported. "
                              "Disabling autocast.\nCPU Autocast only supports dtypes of "
                              f"{dt.bfloat16}, {dt.float16} currently.", stacklevel=2)
                enabled = False
        self._enabled = enabled

    def __enter__(self):
        st = _ac._state
        self.prev_cache_enabled = st.cache_enabled
        self.prev = _ac.is_enabled(self.device)
        self.prev_fastdtype = _ac.get_dtype(self.device)
        _ac.set_enabled(self.device, self._enabled)
        _ac.set_dtype(self.device, self.fast_dtype)
        st.nesting += 1
        st.cache_enabled = self._cache_enabled
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        st = _ac._state
        st.nesting -= 1
        if st.nesting == 0:
            _ac.clear_cache()
        _ac.set_enabled(self.device, self.prev)
        _ac.set_dtype(self.device, self.prev_fastdtype)
        st.cache_enabled = self.prev_cache_enabled
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got "
                            f"{type(func).__name__}. Did you mean to use autocast as a context "
                            f"manager? For example:\n    with torch.autocast(device_type=...):\n"
                            f"        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return decorate_autocast

    def __repr__(self):
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled})")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """PyTorch's `torch.amp.custom_fwd` for a custom `Function.forward`: with `cast_inputs`,
    the forward runs with autocast off and its floating tensor inputs cast to that dtype."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        if cast_inputs is None or not _ac.is_enabled(device_type):
            return fwd(*args, **kwargs)
        args = tuple(_ac._cast(a, cast_inputs) for a in args)
        kwargs = {k: _ac._cast(v, cast_inputs) for k, v in kwargs.items()}
        with autocast(device_type, enabled=False):
            return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """PyTorch's `torch.amp.custom_bwd`: the backward runs with the forward's autocast state
    (here: autocast off, the state a backward pass outside the region has)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type, enabled=False):
            return bwd(*args, **kwargs)
    return decorate_bwd
