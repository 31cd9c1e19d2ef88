"""`jitorch.amp`: automatic mixed precision (PyTorch's `torch.amp`): `autocast` and
`GradScaler`. The casting policy lives in `jitorch._autocast`; each op declares its own."""
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available", "GradScaler"]
