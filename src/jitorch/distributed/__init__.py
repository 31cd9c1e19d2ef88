"""`jitorch.distributed`: PyTorch's process groups and collectives, run on MPI through mpi4py
(the optional extra `jitorch[distributed]`: mpi4py and the mpich wheel; docs/distributed.md).

Ranks come from MPI: start a job with `python -m jitorch.distributed.run --nproc-per-node N
script.py` (run.py, _worker.py) or with a plain `mpiexec -n N python script.py`; a plain
`python script.py` is a 1-rank job. distributed_c10d.py owns the groups and the operations,
_work.py the Work handles, the collective deadline (DistBackendError, then the job is aborted)
and the hooks that end the job when a rank dies. Without mpi4py `is_available()` is False and
`init_process_group` raises RuntimeError saying what to install.
"""
from __future__ import annotations

from ._grad_bucket import GradBucket
from ._work import DistBackendError, DistError, Work
from .distributed_c10d import (Backend, GroupMember, P2POp, ProcessGroup, ReduceOp, all_gather,
                               all_gather_into_tensor, all_gather_object, all_reduce,
                               all_to_all, all_to_all_single, barrier, batch_isend_irecv,
                               broadcast, broadcast_object_list, destroy_process_group, gather,
                               gather_object, get_backend, get_global_rank, get_group_rank,
                               get_process_group_ranks, get_rank, get_world_size, group,
                               init_process_group, irecv, is_available, is_gloo_available,
                               is_initialized, is_mpi_available, is_nccl_available,
                               is_torchelastic_launched, isend, new_group, recv, reduce,
                               reduce_scatter, reduce_scatter_tensor, scatter,
                               scatter_object_list, send)

__all__ = [
    "Backend", "DistBackendError", "DistError", "GradBucket", "GroupMember", "P2POp",
    "ProcessGroup",
    "ReduceOp", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object",
    "all_reduce", "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv",
    "broadcast", "broadcast_object_list", "destroy_process_group", "gather", "gather_object",
    "get_backend", "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
    "get_world_size", "group", "init_process_group", "irecv", "is_available",
    "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
    "is_torchelastic_launched", "isend", "new_group", "recv", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]
