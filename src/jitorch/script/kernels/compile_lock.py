"""One compile of a function at a time across the processes that share its disk cache (issue 17).

Owns `acquire(directory, name)` and `release(token)`: an exclusive `flock` on
`<directory>/compile-locks/<name>.lock`. numba_cache.GuardedCache takes it when Numba's disk cache
misses a function's overload, looks in the cache once more (another process may have saved it
while this one waited), and keeps it until the overload it compiles is saved, or until the
compile fails (`numba:compile` ends with an exception). Every compile of jitorch code goes
through that cache: a program's entry and kernels, compiled in the calling process
(`JITORCH_COMPILE=sync`) or in a compile worker, and the library functions eager code calls
(matrix products, convolution, pooling, the random transforms). So N processes that start the
same work on a cold cache (MPI ranks, pytest-xdist workers, two runs of a script) compile each
function once: one compiles, the others wait for it and load its files. Before, each process
compiled everything itself (except compile workers, which locked whole modules), N times the CPU.

Why no deadlock: a process waits for a lock only inside a compile, holding the locks of the
compiles that are nesting it (an entry's typing compiles its kernels, a kernel's its library
functions). The call graph of compiled code has no cycle, so no two processes can each hold a
lock the other waits for. Within a process Numba's compiler lock lets one thread compile at a
time, and a lock this process holds already is taken again at no cost (a count): a function
compiled for a second signature inside its own compile never waits for itself.

Bounded: a process waits at most `JITORCH_COMPILE_LOCK_WAIT` seconds (default 600), and not at
all once the holder is seen stopped (Ctrl-Z, a debugger: its pid is in the lock file), then
compiles without the lock (the compile log says so). A lock dies with its process (the kernel
releases a dead process's flocks), so none is ever left stale. No usable directory, or no
`fcntl` (Windows): compiles unlocked, as before.
"""
from __future__ import annotations

import os
import time

from ... import _fork

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Linux/macOS
    fcntl = None

DEFAULT_WAIT_S = 600.0
_POLL_S = 0.02
_CHECK_S = 1.0  # after this long a waiter checks that the holder is not stopped
_lock = _fork.lock()
_held: dict = {}  # lock file path -> [fd, count]: this process's locks


@_fork.in_child
def _forget_the_parents_locks() -> None:
    """A forked child shares its parent's open lock files; closing its copies leaves the
    parent's locks to the parent (a flock lasts until every copy is closed) and starts the
    child with none."""
    for fd, _ in _held.values():
        try:
            os.close(fd)
        except OSError:
            pass
    _held.clear()


def wait_limit() -> float:
    """Seconds to wait for another process's compile (`JITORCH_COMPILE_LOCK_WAIT`)."""
    try:
        return max(0.0, float(os.environ.get("JITORCH_COMPILE_LOCK_WAIT", DEFAULT_WAIT_S)))
    except ValueError:
        return DEFAULT_WAIT_S


def acquire(directory: str, name: str, log=None):
    """Hold `<directory>/compile-locks/<name>.lock` for this process: a token for `release`,
    or None when it cannot be had (no directory, no flock, or waited `wait_limit()` seconds:
    then `log` is told why)."""
    if fcntl is None or not directory:
        return None
    path = os.path.join(directory, "compile-locks", name + ".lock")
    with _lock:
        got = _held.get(path)
        if got is not None:
            got[1] += 1
            return path
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError:
        return None  # a read-only or vanished directory: compile as without a lock
    start = time.monotonic()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            waited = time.monotonic() - start
            why = None
            if waited >= wait_limit():
                why = f"waited {wait_limit():.0f} s (JITORCH_COMPILE_LOCK_WAIT)"
            elif waited >= _CHECK_S and _holder_stopped(fd):
                why = "its process is stopped (Ctrl-Z, a debugger)"
            if why is not None:
                os.close(fd)
                if log is not None:
                    log(f"another process holds the compile lock of {name}, and {why}; "
                        "compiling it here as well")
                return None
            time.sleep(_POLL_S)
        except OSError:
            os.close(fd)
            return None  # a file system without flock
    try:  # who holds it, for a waiter's `_holder_stopped`
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    except OSError:
        pass
    with _lock:
        _held[path] = [fd, 1]
    return path


def _holder_stopped(fd: int) -> bool:
    """Whether the process whose pid the lock file holds is stopped (state T or t in
    /proc/<pid>/stat): its compile makes no progress, so waiting for it could hang the caller.
    False whenever that cannot be told (no /proc, another pid namespace, a pid not written)."""
    try:
        pid = int(os.pread(fd, 32, 0).decode().strip() or 0)
        if pid <= 0 or pid == os.getpid():
            return False
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, ValueError, IndexError):
        return False
    return state in ("T", "t")


def release(token) -> None:
    """Give back a lock `acquire` returned (None: nothing to give back)."""
    if token is None:
        return
    with _lock:
        got = _held.get(token)
        if got is None:
            return
        got[1] -= 1
        if got[1] > 0:
            return
        del _held[token]
    os.close(got[0])  # (closing releases the flock)


def held() -> list:
    """The lock files this process holds (tests)."""
    with _lock:
        return sorted(_held)
