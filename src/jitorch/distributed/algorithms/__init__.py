"""`jitorch.distributed.algorithms`: PyTorch's generic join context manager for uneven inputs
(join.py) and DDP's communication hooks (ddp_comm_hooks/)."""
from .join import Join, Joinable, JoinHook  # noqa: F401

__all__ = ["Join", "JoinHook", "Joinable"]
