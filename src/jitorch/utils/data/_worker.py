"""DataLoader workers: the fetchers (index batch -> collated batch), the worker loop run in each
worker process (or thread), `get_worker_info`, and the wire format of batches between processes.

Batches cross the process boundary through `multiprocessing` queues with tensors replaced by
their NumPy arrays (`_WireTensor`), so no Tensor object is pickled and the main process rebuilds
plain tensors. Worker errors travel as `ExceptionWrapper`s holding the formatted traceback and are
re-raised in the main process with the original exception type, as in PyTorch.
"""
from __future__ import annotations

import collections.abc
import os
import queue
import random
import sys
import threading
import traceback

from ... import _dtype as dt
from ..._tensor import Tensor

__all__ = ["WorkerInfo", "get_worker_info"]

_POLL_INTERVAL = 0.2  # seconds between a waiting worker's shutdown checks
_local = threading.local()  # per worker thread (or the worker process's main thread)


class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: id, num_workers, seed, dataset."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} "
                               "objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker: its `WorkerInfo` (id, num_workers, seed, dataset, which in a
    worker process is that process's own copy); in the main process: None."""
    return getattr(_local, "info", None)


class ExceptionWrapper:
    """An exception caught in a worker, re-raised in the main process with its traceback."""

    def __init__(self, where: str):
        exc_type, exc, _tb = sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, _tb))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class KeyErrorMessage(str):
    # KeyError repr()s its message; this keeps the traceback readable (PyTorch's trick)
    def __repr__(self):
        return self


class _IterableEnd:
    """A worker's IterableDataset copy is exhausted."""

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


class _ResumeIteration:
    """Persistent workers: start the next epoch (re-create the dataset iterator)."""

    def __init__(self, epoch: int):
        self.epoch = epoch


class _WireTensor:
    # a tensor in transit between processes: its array (bfloat16 as uint16 bits) and dtype
    __slots__ = ("arr", "dtype", "requires_grad")

    def __init__(self, t: Tensor):
        self.dtype = t._dtype.name
        self.arr = t._data.view("uint16") if t._dtype is dt.bfloat16 else t._data
        # like PyTorch, a leaf's requires_grad flag crosses; a non-leaf's history cannot
        self.requires_grad = bool(t._requires_grad and t._grad_fn is None)

    def tensor(self) -> Tensor:
        d = dt._by_name(self.dtype)
        arr = self.arr.view(d.np) if d is dt.bfloat16 else self.arr
        t = Tensor._make(arr, d)
        if self.requires_grad:
            t._requires_grad = True
        return t


def _map_structure(obj, fn, kind):
    if isinstance(obj, kind):
        return fn(obj)
    if isinstance(obj, tuple):
        vals = [_map_structure(v, fn, kind) for v in obj]
        return type(obj)(*vals) if hasattr(obj, "_fields") else type(obj)(vals)
    if isinstance(obj, list):
        return [_map_structure(v, fn, kind) for v in obj]
    if isinstance(obj, collections.abc.Mapping):
        out = {k: _map_structure(v, fn, kind) for k, v in obj.items()}
        try:
            return type(obj)(out)
        except TypeError:
            return out
    return obj


def to_wire(obj):
    return _map_structure(obj, _WireTensor, Tensor)


def from_wire(obj):
    return _map_structure(obj, _WireTensor.tensor, _WireTensor)


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation = dataset, auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if getitems else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.it = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn, self.drop_last = collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.it))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.it)
        return self.collate_fn(data)


def make_fetcher(iterable: bool, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableFetcher if iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation,
                collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers, is_process):
    """One worker: fetch the index batches it is sent until it receives None or `done_event`
    is set (the event needs no queue feeder thread, so a shutdown started from a garbage
    collection inside such a thread still reaches the worker)."""
    seed = base_seed + worker_id
    if is_process:
        # a process owns its global RNGs: seed them per worker, as PyTorch does (threads share
        # the main process's generators, which must not be reseeded)
        from ... import _random
        random.seed(seed)
        _random.manual_seed(seed)
    _local.info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    where = f"in DataLoader worker {'process' if is_process else 'thread'} {worker_id}"
    init_error = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = ExceptionWrapper(where)
    iteration_end = False
    parent = os.getppid() if is_process else None
    while True:
        try:
            r = index_queue.get(timeout=_POLL_INTERVAL)
        except queue.Empty:
            if done_event.is_set() or (parent is not None and os.getppid() != parent):
                break  # shut down, or the main process died
            continue
        if r is None or done_event.is_set():
            break
        if isinstance(r, _ResumeIteration):
            iteration_end = False
            try:
                fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
            except Exception:
                init_error = ExceptionWrapper(where)
            continue
        epoch, idx, index = r
        if init_error is not None:
            data, init_error = init_error, None
        elif iteration_end:
            continue  # the main process skips this worker's outstanding tasks
        else:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                if not iterable:
                    data = ExceptionWrapper(where)
                else:
                    data = _IterableEnd(worker_id)
                    iteration_end = True
            except Exception:
                data = ExceptionWrapper(where)
        if is_process and not isinstance(data, (ExceptionWrapper, _IterableEnd)):
            try:
                data = to_wire(data)
            except Exception:
                data = ExceptionWrapper(where)
        data_queue.put((epoch, idx, data))
        del data
    if is_process:
        # the main process may never read what is still buffered: do not block exit on it
        data_queue.cancel_join_thread()
