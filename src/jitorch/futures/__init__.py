"""`jitorch.futures`: PyTorch's `torch.futures.Future`, `collect_all` and `wait_all`.

Owns the one Future class jitorch hands out for asynchronous work: `jitorch.jit.fork` and
`jitorch.distributed.rpc.rpc_async` (and `RRef.rpc_async()`). It is a
`concurrent.futures.Future` (so `result()`, `add_done_callback` and `concurrent.futures.wait`
work too) with PyTorch's methods: `wait()` blocks and returns the value or raises the error,
`value()` returns the value of a completed future, `done()`, `then(callback)` chains,
`set_result` / `set_exception` complete it.

Callbacks (`then`, `add_done_callback`) run on the thread that completes the future, or at once
when it is already complete, as in PyTorch. A future may name an executor (`_executor`) that
its callbacks are handed to instead: the RPC agent does, so user callbacks never run on its
service thread (one that blocks there would stop every RPC of the process).

A future may also stand for a pending operation that only progresses when someone waits on it
or polls it (`_driven(drive, poll)`: MPI progresses a request only inside MPI calls, so
`Work.get_future()` is completed by `wait()` / `done()` rather than pushed by a background
thread; an RPC call's future is completed by the waiting caller receiving the answer itself).
A future chained on such a future (`then`, `collect_all`) drives its parents when waited on.
"""
from __future__ import annotations

import concurrent.futures

from .. import _fork

__all__ = ["Future", "collect_all", "wait_all"]


class Future(concurrent.futures.Future):
    """`torch.futures.Future`: the result of an asynchronous computation."""

    _executor = None  # where callbacks run (None: the completing thread)
    _drive = None  # completes this future by waiting for what it stands for (blocking)
    _poll = None  # completes it if that already finished, without blocking

    def __init__(self, *, devices=None):
        super().__init__()

    @classmethod
    def _driven(cls, drive, poll) -> "Future":
        """A future completed by `drive()` (blocking) or `poll()` (returns at once); both end
        by calling set_result/set_exception on it (or leave that to another thread)."""
        f = cls()
        f._drive, f._poll = drive, poll
        return f

    def done(self) -> bool:
        if self._poll is not None and not super().done():
            self._poll()
        return super().done()

    def wait(self):
        """Block until complete; the value, or the error raised."""
        if self._drive is not None and not super().done():
            self._drive()
        return self.result()

    def _settle(self) -> None:
        """Wait until complete, keeping a failure in the future (raised by `value()`)."""
        try:
            self.wait()
        except BaseException:  # noqa: BLE001 - the future carries it
            pass

    def value(self):
        """The value of a completed future (raises its error); call after `wait()` or in a
        callback."""
        if not self.done():
            raise RuntimeError("Cannot retrieve value on a Future that has not been marked "
                               "completed.")
        return self.result()

    def set_result(self, result) -> None:
        try:
            super().set_result(result)
        except concurrent.futures.InvalidStateError:
            raise RuntimeError("Future can only be marked completed once.") from None

    def set_exception(self, result) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        try:
            super().set_exception(result)
        except concurrent.futures.InvalidStateError:
            raise RuntimeError("Future can only be marked completed once.") from None

    def add_done_callback(self, callback) -> None:
        """Run `callback(self)` when complete (at once if it already is)."""
        ex = self._executor
        if ex is None:
            super().add_done_callback(callback)
        else:
            super().add_done_callback(lambda f: ex.submit(callback, f))

    def then(self, callback) -> "Future":
        """A new Future completed with `callback(self)` once this one completes (with the
        callback's exception, if it raises)."""
        out = Future._driven(self._settle, self.done) if self._drive is not None else Future()
        out._executor = self._executor

        def run(fut):
            try:
                out.set_result(callback(fut))
            except BaseException as e:  # noqa: BLE001 - delivered to whoever waits on `out`
                out.set_exception(e)
        self.add_done_callback(run)
        return out


def collect_all(futures) -> Future:
    """A Future completed with the list of `futures` once all of them are complete."""
    futures = list(futures)
    if any(f._drive is not None for f in futures):
        def drive():
            for f in futures:
                f._settle()
        out = Future._driven(drive, lambda: [f.done() for f in futures])
    else:
        out = Future()
    left = [len(futures)]
    if not futures:
        out.set_result([])
        return out
    lock = _fork.lock()

    def one(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            out.set_result(futures)
    for f in futures:
        f.add_done_callback(one)
    return out


def wait_all(futures) -> list:
    """The values of all `futures` (waits for each; raises the first error met)."""
    return [f.wait() for f in futures]
