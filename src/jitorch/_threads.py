"""Threads: `set_num_threads` / `get_num_threads`, jitorch's own thread pool, BLAS pinning.

Owns the number of threads jitorch uses for its own parallel work (the pool behind
`jitorch.jit.fork`, and Numba's thread count for parallel programs: see
`apply_numba_threads`), and BLAS pinning.

Why pin BLAS: compiled programs call OpenBLAS from inside `njit` (SciPy's copy; NumPy has its
own). When several Python threads each run a program, a multi-threaded BLAS oversubscribes the
cores (measured: stalls of 16-24 ms and throughput falling as threads were added). So once
jitorch runs work on more than one thread (its pool starts, `set_num_threads` is called, or a
compiled program is called from a thread other than the main one), both OpenBLAS copies are
limited to one thread per call via threadpoolctl. `JITORCH_PIN_BLAS=0` turns this off.
The limit is process-wide (that is how BLAS libraries work) and stays until `unpin_blas()`.

After `os.fork` the child has the parent's pool object but none of its threads (a submitted
task would wait for ever), so the child starts without a pool and makes its own on first use
(`_after_fork`, through jitorch/_fork.py, which also releases `_lock`). The BLAS limit is
library state the child inherits, so `_pinned` stays as it was.
"""
from __future__ import annotations

import concurrent.futures
import os
import threading

from . import _fork

_lock = _fork.lock()
_num_threads: int | None = None
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_size = 0
_pinned = False  # read without the lock on the hot path: a stale False only re-pins
_limiter = None
_main = threading.main_thread()
_main_ident = _main.ident


def _default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def get_num_threads() -> int:
    """Threads jitorch uses for its own parallel work (default: the CPUs this process may use)."""
    return _num_threads if _num_threads is not None else _default_threads()


def set_num_threads(n: int) -> None:
    """Set the size of jitorch's thread pool and Numba's thread count; pins BLAS to one thread
    per call (see the module docstring)."""
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_num_threads(): argument 'int' must be int, not {type(n).__name__}")
    if n <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    with _lock:
        _num_threads = n
        _resize_pool_locked()
    apply_numba_threads(launch=False)
    pin_blas()


def apply_numba_threads(launch: bool = True) -> None:
    """Give Numba's parallel regions get_num_threads() threads (capped by NUMBA_NUM_THREADS).

    `numba.set_num_threads` launches Numba's threading layer, which then cannot be changed
    (NUMBA_NOTES: only TBB is safe under concurrent callers and fork). So `set_num_threads`
    applies it only when a layer is already running (launch=False); code that is about to run
    a parallel program calls this with launch=True after choosing the layer. Numba's count
    is thread-local: call it on the thread that runs the parallel program."""
    try:
        import numba
        from numba.np.ufunc import parallel
        if not launch and not getattr(parallel, "_is_initialized", False):
            return
        numba.set_num_threads(min(get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    except Exception:  # no usable threading layer: serial programs do not need one
        pass


def _resize_pool_locked() -> None:
    global _pool
    if _pool is not None and _pool_size != get_num_threads():
        _pool.shutdown(wait=False)  # running tasks finish; new ones go to the new pool
        _pool = None


def _pool_locked() -> concurrent.futures.ThreadPoolExecutor:
    global _pool, _pool_size
    if _pool is None:
        _pool_size = get_num_threads()
        _pool = concurrent.futures.ThreadPoolExecutor(_pool_size, thread_name_prefix="jitorch")
    return _pool


def pool() -> concurrent.futures.ThreadPoolExecutor:
    """jitorch's own pool (sized by get_num_threads()), created on first use. Another thread's
    `set_num_threads` may shut it down at any time: submit through `submit`."""
    p = _pool
    if p is not None:
        return p
    with _lock:
        p = _pool_locked()
    pin_blas()
    return p


def submit(fn, *args) -> concurrent.futures.Future:
    """`pool().submit(fn, *args)`, safe against a concurrent `set_num_threads`: the pool is
    looked up and given the task under the lock that replacing it takes, so a task never goes
    to a pool already shut down (which refuses it: "cannot schedule new futures after
    shutdown"). A pool shut down later still runs the tasks it has."""
    with _lock:
        fut = _pool_locked().submit(fn, *args)
    if not _pinned:
        pin_blas()
    return fut


def pin_blas() -> None:
    """Limit every loaded BLAS (NumPy's and SciPy's OpenBLAS) to one thread per call."""
    global _pinned, _limiter
    if _pinned or os.environ.get("JITORCH_PIN_BLAS", "1") == "0":
        return
    with _lock:
        if _pinned:
            return
        _pinned = True
        try:
            # SciPy's OpenBLAS is the one njit code calls; load it so threadpoolctl sees it.
            import scipy.linalg.cython_blas  # noqa: F401
        except Exception:
            pass
        try:
            from threadpoolctl import threadpool_limits
            _limiter = threadpool_limits(limits=1, user_api="blas")
        except Exception:  # threadpoolctl missing or a BLAS it cannot drive: leave BLAS alone
            _limiter = None


def unpin_blas() -> None:
    """Restore the BLAS thread counts that were in effect before pinning."""
    global _pinned, _limiter
    with _lock:
        if _limiter is not None:
            _limiter.restore_original_limits()
        _limiter = None
        _pinned = False


def blas_threads() -> dict:
    """{library path: threads} for each loaded BLAS (for tests and diagnostics)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return {}
    return {i["filepath"]: i["num_threads"] for i in threadpool_info()
            if i.get("user_api") == "blas"}


def note_caller_thread() -> None:
    """Called by compiled calls: a program running off the main thread means jitorch code runs
    on several threads, so BLAS gets pinned (once)."""
    if not _pinned and threading.get_ident() != _main_ident:  # get_ident: cheapest check
        pin_blas()


@_fork.in_child
def _after_fork() -> None:
    """In a forked child: no pool (the parent's has no threads here); the thread that forked is
    the child's main thread."""
    global _pool, _pool_size, _main, _main_ident
    _pool, _pool_size = None, 0
    _main = threading.main_thread()
    _main_ident = _main.ident
