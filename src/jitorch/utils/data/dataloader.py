"""`DataLoader`: batches from a dataset through a sampler and a collate function, in the main
process or in worker processes, with PyTorch's arguments, checks and error messages.

Workers: `num_workers > 0` starts worker PROCESSES by default, as PyTorch does (on Linux with
`fork`, so the dataset is not pickled). Processes are the default because they give PyTorch's
semantics exactly: each worker owns a copy of the dataset and its own seeded random streams,
and Python-heavy `__getitem__` code runs in parallel despite the GIL. Batches come back as NumPy
arrays (see `_worker.py`). `multiprocessing_context="thread"` (a jitorch extension) runs the
workers as threads instead: no start-up cost and no copies, useful when `__getitem__` is mostly
GIL-free (NumPy, compiled jitorch code); then workers share the dataset object and the global
random generators are not reseeded per worker.
"""
from __future__ import annotations

import itertools
import multiprocessing as mp
import queue
import threading
import time

from ... import _dtype as dt, _fork
from ..._creation import empty
from . import _worker
from ._collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

_STATUS_CHECK_INTERVAL = 0.5  # seconds between worker liveness checks while waiting
_THREAD_CONTEXTS = ("thread", "threads", "threading")


class _InfiniteConstantSampler(Sampler):
    # the sampler of an IterableDataset: the dataset decides what comes next
    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """`torch.utils.data.DataLoader` (see the module docstring for worker processes)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory  # accepted; a no-op on CPU
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self._iterable = isinstance(dataset, IterableDataset)

        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self.__initialized = True

    _FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
               "persistent_workers")
    __initialized = False

    def __setattr__(self, attr, val):
        # as in PyTorch: these define the sampling set up in __init__
        if self.__initialized and attr in self._FROZEN:
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiWorkerIter(self)
            else:
                self._iterator._reset(first=False)
            return self._iterator
        return _MultiWorkerIter(self)

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)  # TypeError when the dataset has no len, as in PyTorch
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


def _base_seed(loader) -> int:
    # one draw per iterator from the loader's generator (or the global one), as in PyTorch
    return int(empty((), dtype=dt.int64).random_(generator=loader.generator).item())


class _BaseIter:
    def __init__(self, loader):
        self._loader = loader
        self._base_seed = _base_seed(loader)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = _worker.make_fetcher(loader._iterable, loader.dataset,
                                             loader._auto_collation, loader.collate_fn,
                                             loader.drop_last)

    def __next__(self):
        index = next(self._sampler_iter)
        return self._fetcher.fetch(index)  # StopIteration of an IterableDataset ends the epoch


class _MultiWorkerIter(_BaseIter):
    """Workers fed round-robin with index batches; results re-ordered by send index."""

    def __init__(self, loader):
        super().__init__(loader)
        n = loader.num_workers
        ctx = loader.multiprocessing_context
        self._threads = isinstance(ctx, str) and ctx in _THREAD_CONTEXTS
        if self._threads:
            self._data_queue = queue.Queue()
            self._done = _fork.event()
            make_queue = queue.Queue
        else:
            if ctx is None:
                ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else None)
            elif isinstance(ctx, str):
                ctx = mp.get_context(ctx)
            self._data_queue = ctx.Queue()
            self._done = ctx.Event()
            make_queue = ctx.Queue
        self._index_queues, self._workers = [], []
        for wid in range(n):
            iq = make_queue()
            args = (loader._iterable, loader.dataset, iq, self._data_queue, self._done,
                    loader._auto_collation, loader.collate_fn, loader.drop_last,
                    self._base_seed, loader.worker_init_fn, wid, n, not self._threads)
            if self._threads:
                w = threading.Thread(target=_worker.worker_loop, args=args, daemon=True)
            else:
                w = ctx.Process(target=_worker.worker_loop, args=args, daemon=True)
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._shutdown = False
        self._epoch = 0
        self._reset(first=True)

    def _reset(self, first: bool):
        loader = self._loader
        self._epoch += 1
        self._sampler_iter = iter(loader._index_sampler)
        self._send_idx = self._rcvd_idx = 0
        self._task_info: dict[int, tuple] = {}
        self._active = [True] * loader.num_workers
        self._queue_cycle = itertools.cycle(range(loader.num_workers))
        if not first:  # persistent workers: each re-creates its dataset iterator
            for iq in self._index_queues:
                iq.put(_worker._ResumeIteration(self._epoch))
        for _ in range(loader.prefetch_factor * loader.num_workers):
            self._try_put_index()

    def _try_put_index(self):
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(len(self._workers)):
            wid = next(self._queue_cycle)
            if self._active[wid]:
                break
        else:
            return
        self._index_queues[wid].put((self._epoch, self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._send_idx += 1

    def _get(self):
        timeout = self._loader.timeout
        deadline = time.monotonic() + timeout if timeout > 0 else None
        while True:
            wait = _STATUS_CHECK_INTERVAL
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    self._shutdown_workers(kill=True)
                    raise RuntimeError(f"DataLoader timed out after {timeout} seconds")
            try:
                return self._data_queue.get(timeout=wait)
            except queue.Empty:
                dead = [w for w in self._workers if not w.is_alive()]
                if dead and not self._shutdown:
                    pids = ", ".join(str(getattr(w, "pid", w.name)) for w in dead)
                    self._shutdown_workers(kill=True)
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited "
                                       "unexpectedly") from None

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data if self._threads else _worker.from_wire(data)

    def __next__(self):
        if self._shutdown:
            raise StopIteration
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._active[info[0]]):
                    break
                # an exhausted worker's task, or one already yielded out of order: skip it
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._loader.persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process(data)
            epoch, idx, data = self._get()
            if epoch != self._epoch:
                continue  # a result of an abandoned earlier epoch (persistent workers)
            if isinstance(data, _worker._IterableEnd):
                self._active[data.worker_id] = False
                self._try_put_index()
                continue
            if idx == self._rcvd_idx:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process(data)
            if not self._loader.in_order:
                del self._task_info[idx]
                return self._process(data)
            self._task_info[idx] += (data,)

    def _shutdown_workers(self, kill: bool = False):
        # kill: after a timeout or a dead worker, stop processes without waiting for the
        # batches they are still computing
        if self._shutdown:
            return
        self._shutdown = True
        self._done.set()
        for iq in self._index_queues:
            try:
                iq.put(None)
            except Exception:
                pass
        for w in self._workers:
            if kill and not self._threads:
                w.terminate()
            w.join(timeout=5)
            if not self._threads and w.is_alive():
                w.terminate()
        if not self._threads:
            for q in self._index_queues + [self._data_queue]:
                q.cancel_join_thread()
                q.close()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass
