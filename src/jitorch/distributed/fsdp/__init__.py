"""`jitorch.distributed.fsdp`: PyTorch's FullyShardedDataParallel (1.12+) on MPI:
fully_sharded_data_parallel.py owns the wrapper and its enums and configs, wrap.py the
auto-wrap policies."""
from .fully_sharded_data_parallel import (BackwardPrefetch, CPUOffload, FullStateDictConfig,
                                          FullyShardedDataParallel, MixedPrecision,
                                          ShardingStrategy, StateDictConfig, StateDictType)

__all__ = ["BackwardPrefetch", "CPUOffload", "FullStateDictConfig", "FullyShardedDataParallel",
           "MixedPrecision", "ShardingStrategy", "StateDictConfig", "StateDictType"]
