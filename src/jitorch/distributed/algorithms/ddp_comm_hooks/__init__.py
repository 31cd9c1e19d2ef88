"""`jitorch.distributed.algorithms.ddp_comm_hooks`: hooks for
`DistributedDataParallel.register_comm_hook` (default_hooks.py: all-reduce, fp16/bf16
compression)."""
from . import default_hooks  # noqa: F401

__all__ = ["default_hooks"]
