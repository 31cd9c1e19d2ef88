"""Work handles, collective deadlines and job-wide faults for `jitorch.distributed`.

Owns three things every operation in distributed_c10d shares:
  * `Work`: what an `async_op=True` call returns (and what a blocking call waits on at once):
    the started nonblocking MPI requests plus a `finish` step that runs once they complete
    (copying a staged buffer back into a non-contiguous tensor, dividing for AVG, ...).
  * the deadline: MPI has no timeout on a collective, so a Work is completed by polling
    `Request.Testall` with a growing sleep until the group's `timeout` passes; then a
    `DistBackendError` naming the operation is raised and the job is aborted (PyTorch's NCCL
    watchdog with async error handling): the same exception, uncaught, aborts at once through the
    excepthook below, and a daemon timer aborts after `_ABORT_GRACE_S` seconds if user code
    catches it, because the peers are stuck in the collective and cannot recover.
    A large operation (`_BLOCKING_WAIT_BYTES` and up) waits inside MPI instead: a blocking
    all_reduce makes MPI's blocking call, another operation's wait is MPI's `Waitall`, watched by
    the watchdog thread (`_Watchdog`), which ends the job with the same message at the deadline
    (as PyTorch's NCCL watchdog does; the waiting thread is inside MPI and cannot raise). A 1 MB
    float32 all-reduce on 2 ranks took 1.11-1.17x raw mpi4py's time as a polled request, still
    1.12-1.16x with `Waitall` in place of the poll, and 1.04-1.06x as MPI's blocking call on
    the array (bench/distributed.py, 2026-12-05): what costs is on the request path, not only
    the poll, so the blocking all_reduce makes no request at all.
  * job teardown: MPI jobs hang when one rank dies with an exception (the others wait in a
    collective and the dying rank waits in `MPI_Finalize`), so `install_fault_hooks` (called by
    `init_process_group`) makes an uncaught exception call `MPI_Abort` on COMM_WORLD. MPICH's
    Abort can return to its caller, so `abort_job` always ends with `os._exit`.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import queue
import sys
import threading
import time

from .. import _fork

__all__ = ["DistBackendError", "DistError", "Pending", "Work", "abort_job",
           "background_progress_supported", "install_fault_hooks", "progress_in_background",
           "recording_works", "wait_in_mpi", "watched"]

_FORWARD_OUTPUT_S = 0.3
_ABORT_GRACE_S = 3.0  # a caught DistBackendError still ends the job this many seconds later
# MPI progresses a nonblocking operation only inside MPI calls, on every rank, so a rank that
# sleeps stalls its peers too (a 50 us sleep made a 4 KB all-reduce 30x slower): poll without
# sleeping for this long, as a blocking MPI call itself spins, which covers collectives up to
# tens of MB; then back off with sleeps, so a long wait for a late rank costs no CPU
_SPIN_S = 0.05
_MIN_SLEEP_S = 5e-5
_MAX_SLEEP_S = 2e-3  # the backoff's cap: the most latency polling adds to a long wait
# from this size an operation waits in MPI's Waitall under the watchdog (module doc); below
# it, polling's few microseconds are within the 10 us and its timeout stays catchable
_BLOCKING_WAIT_BYTES = 256 << 10
_WATCH_PERIOD_S = 0.05  # how often the watchdog looks at the armed deadlines


class DistError(RuntimeError):
    """`torch.distributed.DistError`: the base of the distributed errors."""

    __module__ = "jitorch.distributed"


class DistBackendError(DistError):
    """`torch.distributed.DistBackendError`: the backend failed (here: a collective or a
    point-to-point operation did not complete before its deadline)."""

    __module__ = "jitorch.distributed"


def abort_job(code: int = 1) -> None:
    """End every rank of the job: `MPI_Abort` on COMM_WORLD, then `os._exit` (MPICH's Abort may
    return to the caller, leaving this rank alive)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream must not stop the abort
            pass
    # mpiexec's proxy kills every rank, and exits, as soon as it hears of the abort: give it a
    # moment to forward what this rank just wrote (the error saying why), or it can be lost
    time.sleep(_FORWARD_OUTPUT_S)
    try:
        from mpi4py import MPI
        if MPI.Is_initialized() and not MPI.Is_finalized():
            MPI.COMM_WORLD.Abort(code)
    finally:
        os._exit(code)


def _world_size() -> int:
    from mpi4py import MPI
    if not MPI.Is_initialized() or MPI.Is_finalized():
        return 1
    return MPI.COMM_WORLD.Get_size()


_installed = False


def install_fault_hooks() -> None:
    """Make an uncaught exception in the main thread abort the whole job (after printing it as
    Python would) instead of leaving the other ranks waiting forever."""
    global _installed
    if _installed:
        return
    _installed = True
    previous = sys.excepthook

    def excepthook(tp, value, tb):
        previous(tp, value, tb)
        if _world_size() > 1:
            rank = _world_rank()
            sys.stderr.write(f"jitorch.distributed: rank {rank} raised {tp.__name__}; "
                             f"aborting the job\n")
            abort_job(1)

    sys.excepthook = excepthook


def _world_rank() -> int:
    from mpi4py import MPI
    return MPI.COMM_WORLD.Get_rank()


def _timeout_message(name: str, timeout_s: float, rank: int) -> str:
    return (f"[Rank {rank}] Watchdog caught collective operation timeout: {name} ran for "
            f"{int(timeout_s * 1000)} milliseconds before timing out (the process group's "
            f"timeout is {timeout_s:g} s). Another rank did not join the operation; aborting "
            f"the job.")


def _timed_out(name: str, timeout_s: float, rank: int) -> DistBackendError:
    err = DistBackendError(_timeout_message(name, timeout_s, rank))

    def abort_anyway():  # user code caught the error: the peers are still stuck, end the job
        sys.stderr.write(f"jitorch.distributed: aborting the job after {err}\n")
        abort_job(1)
    timer = threading.Timer(_ABORT_GRACE_S, abort_anyway)
    timer.daemon = True
    timer.start()
    return err


class _Watchdog:
    """A daemon thread that ends the job when a wait armed here passes its deadline (the
    waiting thread is inside MPI's blocking Waitall and cannot raise). Arming and disarming
    are a dict insert and a pop, atomic under the GIL; the thread looks every
    `_WATCH_PERIOD_S` seconds, started at the first arm of each process (a forked child
    starts its own)."""

    def __init__(self):
        self._armed: dict = {}  # token -> (deadline, name, timeout_s, rank)
        self._tokens = itertools.count()
        self._pid = None

    def arm(self, name: str, timeout_s: float, rank: int) -> int:
        if self._pid != os.getpid():
            self._pid = os.getpid()
            threading.Thread(target=self._run, name="jitorch-dist-watchdog",
                             daemon=True).start()
        token = next(self._tokens)
        self._armed[token] = (time.perf_counter() + timeout_s, name, timeout_s, rank)
        return token

    def disarm(self, token: int) -> None:
        self._armed.pop(token, None)

    def _run(self) -> None:
        while True:
            time.sleep(_WATCH_PERIOD_S)
            now = time.perf_counter()
            for deadline, name, timeout_s, rank in list(self._armed.values()):
                if now >= deadline:
                    sys.stderr.write(f"jitorch.distributed: aborting the job after "
                                     f"{_timeout_message(name, timeout_s, rank)}\n")
                    abort_job(1)


_watchdog = _Watchdog()


@contextlib.contextmanager
def watched(name: str, timeout_s: float, rank: int):
    """A blocking MPI call inside the block ends the job if it is still running after
    `timeout_s` seconds (the watchdog; module doc)."""
    token = _watchdog.arm(name, timeout_s, rank)
    try:
        yield
    finally:
        _watchdog.disarm(token)


def wait_in_mpi(nbytes: int, async_op: bool) -> bool:
    """Whether a blocking operation of `nbytes` makes MPI's blocking call under the watchdog
    (no request, no Work: PyTorch's blocking collectives return None) rather than a
    nonblocking one polled."""
    return not async_op and nbytes >= _BLOCKING_WAIT_BYTES


def wait_requests(reqs, name: str, timeout_s: float, rank: int, statuses=None,
                  nbytes: int = 0) -> None:
    """Complete `reqs` (mpi4py Requests; `statuses` receives theirs) or raise DistBackendError
    after `timeout_s` seconds; an operation of `nbytes` >= `_BLOCKING_WAIT_BYTES` waits in MPI
    under the watchdog, which ends the job at the deadline (module doc)."""
    from mpi4py import MPI
    if not reqs or MPI.Request.Testall(reqs, statuses):
        return
    if nbytes >= _BLOCKING_WAIT_BYTES:
        with watched(name, timeout_s, rank):
            MPI.Request.Waitall(reqs, statuses)
        return
    start = time.perf_counter()
    deadline = start + timeout_s
    sleep = 0.0
    while not MPI.Request.Testall(reqs, statuses):
        now = time.perf_counter()
        if now >= deadline:
            raise _timed_out(name, timeout_s, rank)
        if now - start > _SPIN_S:
            sleep = min(_MAX_SLEEP_S, max(_MIN_SLEEP_S, sleep * 2), deadline - now)
            time.sleep(sleep)


class Work:
    """`torch.distributed.Work`: an operation in flight. `wait()` completes it (raising
    DistBackendError at the deadline), `is_completed()` polls without blocking."""

    def __init__(self, name: str, reqs, timeout_s: float, rank: int, finish=None, result=None,
                 statuses=None, nbytes: int = 0):
        self._name = name
        self._nbytes = nbytes  # the message size, which picks how `wait` completes it
        self._reqs = list(reqs)
        self._statuses = statuses
        self._timeout_s = timeout_s
        self._rank = rank
        self._finish = finish
        self._result = result if result is not None else []
        self._done = False
        self._value = None
        self._future = None
        works = getattr(_recording, "works", None)
        if works is not None:
            works.append(self)

    def _complete(self) -> None:
        self._done = True
        self._reqs = []
        if self._finish is not None:
            self._value = self._finish()
            self._finish = None

    def wait(self, timeout=None) -> bool:
        """Block until the operation completed; `timeout` (a timedelta or seconds) overrides the
        group's."""
        if not self._done:
            t = self._timeout_s if timeout is None else _seconds(timeout)
            wait_requests(self._reqs, self._name, t, self._rank, self._statuses, self._nbytes)
            self._complete()
        return True

    def is_completed(self) -> bool:
        if not self._done:
            from mpi4py import MPI
            if not self._reqs or MPI.Request.Testall(self._reqs, self._statuses):
                self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()

    def exception(self):
        return None

    def result(self):
        """The output tensors (PyTorch's `Work.result()`)."""
        self.wait()
        return self._result

    def get_future(self):
        """A `jitorch.futures.Future` completed with `result()` when this operation is."""
        if self._future is None:
            from ..futures import Future

            def drive():
                try:
                    self.wait()
                except BaseException as e:  # noqa: BLE001 - the future carries the failure
                    fut.set_exception(e)
                    return
                fut.set_result(self._result)

            def poll():
                if self.is_completed():
                    fut.set_result(self._result)
            fut = self._future = Future._driven(drive, poll)
        return self._future

    def source_rank(self) -> int:
        """The sender of a completed `irecv` (its global rank)."""
        self.wait()
        if self._value is None:
            raise RuntimeError("source_rank() is only valid for recv operations")
        return self._value

    def __repr__(self):
        return f"<Work {self._name} completed={self._done}>"


def _seconds(timeout) -> float:
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)


# --- background progress ------------------------------------------------------------------------
_recording = threading.local()


@contextlib.contextmanager
def recording_works():
    """Collect (in a list) every Work this thread starts inside the block."""
    works: list[Work] = []
    outer = getattr(_recording, "works", None)
    _recording.works = works
    try:
        yield works
    finally:
        _recording.works = outer
        if outer is not None:
            outer.extend(works)


def background_progress_supported() -> bool:
    """True when MPI allows a second thread to complete requests (MPI_THREAD_MULTIPLE, which
    mpi4py requests by default)."""
    from mpi4py import MPI
    return MPI.Query_thread() == MPI.THREAD_MULTIPLE


class Pending:
    """Works whose requests the progress thread is completing. `wait(timeout_s)` returns when it
    has (re-raising its MPI error) or raises DistBackendError at the deadline."""

    def __init__(self, works, name: str, timeout_s: float, rank: int):
        self.works = list(works)
        self.name, self.timeout_s, self.rank = name, timeout_s, rank
        self.event = _fork.event()
        self.error: BaseException | None = None

    def wait(self, deadline: float) -> None:
        if not self.event.wait(max(0.0, deadline - time.perf_counter())):
            raise _timed_out(self.name, self.timeout_s, self.rank)
        if self.error is not None:
            raise self.error


_progress_queue: queue.SimpleQueue | None = None
_progress_lock = _fork.lock()


def _progress_loop(q: queue.SimpleQueue) -> None:
    from mpi4py import MPI
    while True:
        p = q.get()
        try:
            for w in p.works:
                if w._reqs:
                    MPI.Request.Waitall(w._reqs, w._statuses)
        except BaseException as e:  # noqa: BLE001 - re-raised on the waiting thread
            p.error = e
        p.event.set()


def _forget_progress_thread() -> None:
    global _progress_queue
    _progress_queue = None  # a forked child has no copy of the thread: start its own


os.register_at_fork(after_in_child=_forget_progress_thread)


def progress_in_background(works, name: str, timeout_s: float, rank: int) -> Pending:
    """Have the progress thread complete `works`' requests (in submission order); the caller
    must not touch those Works until the returned Pending's `wait` returned."""
    global _progress_queue
    with _progress_lock:
        if _progress_queue is None:
            _progress_queue = queue.SimpleQueue()
            threading.Thread(target=_progress_loop, args=(_progress_queue,), daemon=True,
                             name="jitorch-dist-progress").start()
    p = Pending(works, name, timeout_s, rank)
    _progress_queue.put(p)
    return p
