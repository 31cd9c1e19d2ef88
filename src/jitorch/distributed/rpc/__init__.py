"""`jitorch.distributed.rpc`: PyTorch's RPC framework on MPI (docs/distributed.md, "RPC").

api.py owns the public calls (`init_rpc`, `rpc_sync`, `rpc_async`, `remote`, `RRef`,
`shutdown`, ...), agent.py the per-process agent (its service thread and serving pool on a
communicator of its own), wire.py the message format (jitorch.save's pickle-free format, tensors
as buffers) and the rule for the function names a message may carry, functions.py
`async_execution`. Distributed autograd is `jitorch.distributed.autograd`, the distributed
optimizer `jitorch.distributed.optim`.
"""
from __future__ import annotations

from . import functions
from .api import (BackendType, RpcBackendOptions, RRef, TensorPipeRpcBackendOptions,
                  WorkerInfo, get_worker_info, init_rpc, is_available, remote, rpc_async,
                  rpc_sync, shutdown)

__all__ = ["BackendType", "RRef", "RpcBackendOptions", "TensorPipeRpcBackendOptions",
           "WorkerInfo", "functions", "get_worker_info", "init_rpc", "is_available", "remote",
           "rpc_async", "rpc_sync", "shutdown"]
