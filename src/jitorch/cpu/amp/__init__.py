"""`jitorch.cpu.amp`: the deprecated CPU aliases of `jitorch.amp` (PyTorch's FutureWarning)."""
import warnings

from ... import _dtype as dt
from ...amp import autocast_mode as _mode
from ...amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["autocast", "GradScaler"]


class autocast(_mode.autocast):
    """`jitorch.cpu.amp.autocast(args...)`: deprecated for `jitorch.amp.autocast("cpu", ...)`."""

    def __init__(self, enabled: bool = True, dtype=dt.bfloat16, cache_enabled: bool = True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """`jitorch.cpu.amp.GradScaler(args...)`: deprecated for `jitorch.amp.GradScaler("cpu")`."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)
