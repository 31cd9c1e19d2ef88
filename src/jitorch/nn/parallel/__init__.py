"""`jitorch.nn.parallel`: PyTorch's data-parallel wrappers as they behave without GPUs.

`DataParallel` on a machine with no accelerator keeps the module and runs it unchanged (PyTorch
does the same: `device_ids` is empty and `forward` calls the module), so a script that wraps
its model takes the same path here. `DistributedDataParallel` (distributed.py) runs one replica
per rank of a `jitorch.distributed` process group (MPI) and averages gradients over the ranks.
"""
from .data_parallel import DataParallel, data_parallel  # noqa: F401
from .distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
