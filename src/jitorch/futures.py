"""`jitorch.futures`: PyTorch's `torch.futures.Future`, the result of an asynchronous operation
(`Work.get_future()` of jitorch.distributed, DDP communication hooks).

A Future completes either when someone calls `set_result`/`set_exception` (from any thread) or,
for a future made from a pending operation (`_driven`), when it is waited on or polled: MPI only
progresses an operation inside MPI calls, so completion is pulled by `wait()`/`done()` rather
than pushed by a background thread. `then(callback)` chains a future whose value is
`callback(parent)`; callbacks run in registration order, once, on the thread that completes the
parent (PyTorch runs them on whichever thread marks the parent done, too).
"""
from __future__ import annotations

import threading

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """`torch.futures.Future`: `wait()`, `value()`, `done()`, `then(cb)`,
    `add_done_callback(cb)`, `set_result(v)`, `set_exception(e)`."""

    def __init__(self, *, devices=None):
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._done = False
        self._value = None
        self._exc: BaseException | None = None
        self._callbacks: list = []
        self._drive = None  # completes this future by waiting on what it stands for
        self._poll = None  # completes it if that already finished, without blocking

    @classmethod
    def _driven(cls, drive, poll) -> "Future":
        """A future completed by `drive()` (blocking) or `poll()` (returns whether it could);
        both end by calling set_result/set_exception on it."""
        f = cls()
        f._drive, f._poll = drive, poll
        return f

    def done(self) -> bool:
        if not self._done and self._poll is not None:
            self._poll()
        return self._done

    def wait(self):
        """Block until completed; return the value or raise the exception it completed with."""
        if not self._done:
            if self._drive is not None:
                self._drive()
            self._event.wait()
        if self._exc is not None:
            raise self._exc
        return self._value

    def _settle(self) -> None:
        """Complete this future, keeping a failure in it rather than raising it (a chained
        future's callback sees the failure through `value()`)."""
        try:
            self.wait()
        except BaseException:  # noqa: BLE001 - stored in the future, raised by value()/wait()
            pass

    def value(self):
        """The value of a completed future (raises its exception); PyTorch's `value()`."""
        if not self._done:
            raise RuntimeError("Future.value() called on a future that is not completed; call "
                               "wait() first")
        if self._exc is not None:
            raise self._exc
        return self._value

    def set_result(self, result) -> None:
        self._finish(result, None)

    def set_exception(self, result: BaseException) -> None:
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        self._finish(None, result)

    def _finish(self, value, exc) -> None:
        with self._lock:
            if self._done:
                raise RuntimeError("Future can only be marked completed once.")
            self._value, self._exc, self._done = value, exc, True
            self._drive = self._poll = None
            callbacks, self._callbacks = self._callbacks, []
        self._event.set()
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, callback) -> None:
        """Run `callback(self)` when completed (at once if it already is)."""
        with self._lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback) -> "Future":
        """A future whose value is `callback(self)` once this one completes (or whose
        exception is the one callback raised)."""
        child = Future._driven(self._settle, self.done)

        def run(parent):
            try:
                value = callback(parent)
            except BaseException as e:  # noqa: BLE001 - handed to whoever waits on the child
                child.set_exception(e)
                return
            child.set_result(value)
        self.add_done_callback(run)
        return child

    def __repr__(self):
        return f"<jitorch.futures.Future done={self._done}>"


def collect_all(futures) -> Future:
    """A future completed with the list of `futures` once all of them are."""
    futures = list(futures)

    def drive():
        for f in futures:
            f._settle()
        if not out.done():
            out.set_result(futures)

    def poll():
        if all(f.done() for f in futures) and not out._done:
            out.set_result(futures)
    out = Future._driven(drive, poll)
    return out


def wait_all(futures) -> list:
    """Wait for every future; their values in order (the first exception is raised)."""
    return [f.wait() for f in futures]
