"""`jitorch.utils.data`: datasets, samplers, collation and the DataLoader, with PyTorch's API.

`dataset.py` owns the dataset classes and `random_split`, `sampler.py` the samplers
(`distributed.py` the DistributedSampler),
`_collate.py` `default_collate`/`default_convert`, `dataloader.py` the DataLoader and its worker
processes (`_worker.py`: the worker loop and `get_worker_info`).
"""
from ._collate import default_collate, default_convert
from ._worker import WorkerInfo, get_worker_info
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset,
                      Subset, TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
           "WorkerInfo", "default_collate", "default_convert", "get_worker_info", "random_split"]
