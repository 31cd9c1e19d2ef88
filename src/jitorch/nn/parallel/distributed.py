"""`DistributedDataParallel`: needs `torch.distributed` process groups, which jitorch lacks."""
from __future__ import annotations

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class DistributedDataParallel(Module):
    def __init__(self, module, *args, **kwargs):
        raise NotImplementedError(
            "jitorch: torch.nn.parallel.DistributedDataParallel is not implemented: it needs "
            "torch.distributed process groups, which jitorch does not provide (wrap the module "
            "in nn.DataParallel, or use it directly, for single-process training)")
