"""`jitorch.cuda.amp`: CUDA mixed precision as a CPU-only PyTorch build presents it. With no GPU
both disable themselves with PyTorch's UserWarning: `autocast` is a no-op context (and
decorator), and `GradScaler` passes losses and steps through unscaled, so training scripts that
enable AMP only when CUDA is present, or always, run their float32 path unchanged."""
from __future__ import annotations

import functools
import warnings

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast:
    """`torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)`."""

    def __init__(self, enabled: bool = True, dtype=None, cache_enabled: bool = True):
        if enabled:
            warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.",
                          UserWarning, stacklevel=2)
        self.fast_dtype = dtype
        self._enabled = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapped(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapped


class GradScaler:
    """`torch.cuda.amp.GradScaler`: disabled without CUDA (PyTorch's CPU-only behaviour): the
    loss is returned as it is, `step` is the optimizer's step, the scale stays 1."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", UserWarning, stacklevel=2)
        self._enabled = False
        self._init_scale, self._growth_factor = init_scale, growth_factor
        self._backoff_factor, self._growth_interval = backoff_factor, growth_interval

    def is_enabled(self) -> bool:
        return self._enabled

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer) -> None:
        return None

    def step(self, optimizer, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        return None

    def get_scale(self) -> float:
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state_dict) -> None:
        return None


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Decorator for custom autograd Functions' forward: nothing to cast without autocast."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return fwd


def custom_bwd(bwd):
    return bwd
