"""`jitorch.cuda.amp`: PyTorch's CUDA spellings of `jitorch.amp` (`autocast("cuda")`,
`GradScaler("cuda")`). With CUDA (a GPU or the simulator) they run; without it both disable
themselves with PyTorch's UserWarning, so training scripts that enable AMP unconditionally run
their float32 path unchanged, as on a CPU-only PyTorch build. (PyTorch 2.4+ also warns that
these spellings are deprecated; jitorch does not.)"""
from __future__ import annotations

import functools

from .. import _dtype as dt
from ..amp import autocast_mode as _mode
from ..amp import grad_scaler as _scaler

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_mode.autocast):
    """`torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)`."""

    def __init__(self, enabled: bool = True, dtype=dt.float16, cache_enabled: bool = True):
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_scaler.GradScaler):
    """`torch.cuda.amp.GradScaler`: `jitorch.amp.GradScaler("cuda", ...)`."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """`torch.cuda.amp.custom_fwd`: `jitorch.amp.custom_fwd(device_type="cuda")`."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return _mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    return _mode.custom_bwd(bwd, device_type="cuda")
