"""The compile worker: Numba compiles in another process, off the caller's GIL.

Owns the worker process and the job queue between it and the calling process.

Why a process: a Numba compile in a thread of the calling process holds the GIL ~78% of the time
(only LLVM's ctypes calls release it), so the caller's own Python would crawl while a program
compiles (shared/NUMBA_NOTES.md, "Compile cost at model scale"). The worker instead fills the shared
disk cache, and the caller then loads the finished program from disk in milliseconds.

A job is (a generated program's source and njit options, its module name, the entry function's
name, the Numba signature of the overload to compile, the cache directory), or a "call" job
(`_call_job`: a jitorch module, the function of it to call, its arguments): the library's own
`cache=True` njit functions compiled into Numba's disk cache (the fused RNN loops,
nn/modules/_rnn_fused.py). The worker imports
the module exactly as the caller did (`cache.load_module`: same checked file, same module name,
same `cache_guards.guard`ed caches), so what it saves is what the caller's dispatcher looks up:
Numba's index key is (signature, target machine, the function's bytecode), all equal in both
processes. The worker refuses a job whose module name comes out different (another jitorch or
Numba on its path) rather than compile something the caller would not load.

Process: `python -c "from jitorch.script.runtime.compile_worker import _main; _main()"`, started
lazily with `subprocess` (fork + exec: nothing of the caller's Numba threads is inherited, and no
user `__main__` is re-imported, as a multiprocessing spawn would), pickled messages over its
stdin/stdout pipes (the worker moves its own stdout to stderr first, so a print cannot corrupt a
message). A long-lived worker serves jobs one at a time from a FIFO queue fed by a daemon thread of
the caller; that thread waits on the pipe in `select` (no GIL held). The caller runs up to
`JITORCH_COMPILE_WORKERS` such lanes at once (compile_pool.py), so a training step's forward and
backward programs compile side by side. A process forked from the caller (a DataLoader worker) gets
a fresh queue thread and worker of its own and sends the jobs it inherited unanswered again
(`_fork.in_child`). A job that exceeds `JITORCH_COMPILE_TIMEOUT` seconds (default 1800) gets the
worker killed; a worker that dies (killed, crashed, out of memory) fails its job with the reason;
either way the next job starts a fresh worker. A job never hangs its caller: its `done` event is
always set, with `result["ok"]` False and a `reason` on failure.

The worker finishes its work when its caller exits. A short process (a script, a test, an example)
often ends before its compiles do; if they died with it, no run of the program would ever be
compiled. So at the caller's exit (`atexit`: compile_pool's `detach`, each lane's `handoff`) the
jobs not answered yet (the one a worker is compiling and those still queued) are handed to the
workers, their stdin is closed, and the caller says once on stderr how many there are, the workers'
pids and the cache directory they go to. The worker then "detaches" (`_Detached`): it lowers its
priority (nice +10), sends its prints to /dev/null (so nothing waiting on the caller's stderr, a
pipe or a terminal, waits on it), finishes every job it was given, writing each into the disk
cache, and exits; the next run of the program loads them compiled. It detaches the same way when
its caller dies without exiting (killed, crashed: the pipe closes, or its parent pid changes),
finishing only the jobs it had received. A detached worker lives at most `JITORCH_COMPILE_TIMEOUT`
seconds more (a watchdog `os._exit`s it; Numba writes every cache file to a temporary name and
renames it, and jitorch checksums them, kernels/numba_cache.py, so a worker stopped or killed at
any point leaves no damaged file, at worst a missing one).

Two workers (two processes running one program, or a run and the detached worker of the run
before) never compile the same entry, kernel or library function twice: each function's compile
holds its lock (kernels/compile_lock.py, taken by the disk cache on a miss, the same for a
compile in the calling process, JITORCH_COMPILE=sync); a second process waits there, then
finds the overload in the disk cache and loads it.

Fault injection for tests: `JITORCH_COMPILE_WORKER_FAULT` = "die" (the worker exits mid-job) or
"hang" (it sleeps past any timeout), read by the caller when a job is sent.
"""
from __future__ import annotations

import collections
import os
import pickle
import queue
import select
import struct
import subprocess
import sys
import threading
import time

from ... import _fork

_HEADER = struct.Struct("<Q")
_MAIN = "from jitorch.script.runtime.compile_worker import _main; _main()"
DEFAULT_TIMEOUT = 1800.0


def job_timeout() -> float:
    """Seconds a job may take before its worker is killed (`JITORCH_COMPILE_TIMEOUT`)."""
    try:
        t = float(os.environ.get("JITORCH_COMPILE_TIMEOUT", DEFAULT_TIMEOUT))
    except ValueError:
        return DEFAULT_TIMEOUT
    return t if t > 0 else DEFAULT_TIMEOUT


class Job:
    """One compile. `done` is set once `result` is final: {"ok": True, "how": "compiled" or
    "disk", "wall": s, "cpu": s, "lean": {"compiled": n, "declined": n}} (the generated
    functions the job compiled, by who typed them: kernels/lean_counts.py) or {"ok": False,
    "reason": str, "numba_error": bool}."""

    __slots__ = ("key", "payload", "done", "result", "submitted", "sent", "finished", "lock")

    def __init__(self, key, payload):
        self.key, self.payload = key, payload
        self.done = _fork.event()
        self.result: dict | None = None
        self.submitted = time.perf_counter()
        self.sent: float | None = None  # when a worker got it (after the queue)
        self.finished: float | None = None
        self.lock = _fork.lock()  # held by the caller while it switches entries over

    def wall(self) -> float:
        """Seconds from submission to the worker's answer (queueing included)."""
        end = self.finished if self.finished is not None else time.perf_counter()
        return end - self.submitted

    def _finish(self, result: dict) -> None:
        self.result = result
        self.finished = time.perf_counter()
        self.done.set()


class _Service:
    """The caller's side of one worker: a queue of jobs, one daemon thread, one worker process
    (a lane of compile_pool.py's pool)."""

    def __init__(self):
        self._lock = _fork.lock()
        self._queue: collections.deque = collections.deque()
        self._jobs: dict = {}  # key -> Job not finished yet (one job per program overload)
        self._wake = _fork.condition(self._lock)
        self._thread: threading.Thread | None = None
        self.proc: subprocess.Popen | None = None
        self._inflight: Job | None = None  # the job the worker has (sent, not answered)
        self.starts = 0  # worker processes started (tests, stats)

    def job(self, key):
        """The job of `key` not answered yet, or None."""
        with self._lock:
            return self._jobs.get(key)

    def submit(self, key, payload) -> Job:
        with self._lock:
            job = self._jobs.get(key)
            if job is not None:
                return job  # the same overload asked for again: one compile
            job = self._jobs[key] = Job(key, payload)
            self._queue.append(job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="jitorch-compile",
                                                daemon=True)
                self._thread.start()
            self._wake.notify()
            return job

    def pending(self) -> int:
        with self._lock:
            return len(self._jobs)

    def pending_jobs(self) -> list:
        """The jobs not answered yet (queued or compiling), oldest first."""
        with self._lock:
            return list(self._jobs.values())

    def _loop(self):
        while True:
            with self._lock:
                while not self._queue:
                    self._wake.wait()
                job = self._queue.popleft()
                # sent under the lock: `detach` (at exit) sends the queued jobs after this one
                try:
                    proc, result = self._dispatch(job)
                except BaseException as e:  # noqa: BLE001 - a job must always finish
                    proc, result = None, _failed(f"compile worker error: {type(e).__name__}: "
                                                 f"{e}")
                if result is None:
                    self._inflight = job
            if result is None:
                try:
                    result = self._await(job, proc)
                except BaseException as e:  # noqa: BLE001 - a job must always finish
                    result = _failed(f"compile worker error: {type(e).__name__}: {e}")
            with self._lock:
                self._jobs.pop(job.key, None)
                if self._inflight is job:
                    self._inflight = None
            job._finish(result)

    def _dispatch(self, job: Job):
        """Send `job` to the worker (started if needed): (worker, None), or (None, the failed
        result) when no worker could take it. Called under `_lock`."""
        try:
            proc = self._ensure_worker()
        except OSError as e:
            return None, _failed(f"the compile worker could not start: {type(e).__name__}: {e}")
        try:
            _send(proc.stdin, _payload(job))
        except (OSError, ValueError) as e:  # it died before reading (a closed pipe)
            code = self._kill(proc)
            return None, _failed(f"the compile worker died (exit code {code}; "
                                 f"{type(e).__name__})")
        job.sent = time.perf_counter()
        return proc, None

    def _await(self, job: Job, proc) -> dict:
        """The worker's answer to `job` (sent to `proc`), or the failure: it timed out
        (`JITORCH_COMPILE_TIMEOUT`: then it is killed) or died."""
        timeout = job_timeout()
        try:
            return _receive(proc.stdout, time.monotonic() + timeout)
        except TimeoutError:
            self._kill(proc)
            return _failed(f"the compile worker timed out after {timeout:g} s "
                           "(JITORCH_COMPILE_TIMEOUT); it was stopped")
        except (EOFError, OSError, ValueError, pickle.UnpicklingError) as e:
            code = self._kill(proc)
            return _failed(f"the compile worker died (exit code {code}; {type(e).__name__}"
                           f"{': ' + str(e) if str(e) else ''})")

    def _ensure_worker(self) -> subprocess.Popen:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            return proc
        env = dict(os.environ)
        # the worker must import this very jitorch (module names hash its files)
        import jitorch
        here = os.path.dirname(os.path.dirname(os.path.abspath(jitorch.__file__)))
        env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in env.get("PYTHONPATH", "")
                                                      .split(os.pathsep) if p])
        env["JITORCH_COMPILE"] = "sync"
        env["_JITORCH_COMPILE_PARENT"] = str(os.getpid())  # (it may die before we start)
        # `-c`, not `-m`: the package imports this module before runpy would run it
        self.proc = subprocess.Popen([sys.executable, "-c", _MAIN],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     close_fds=True)
        self.starts += 1
        return self.proc

    def _kill(self, proc) -> int | None:
        try:
            proc.kill()
            return proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - gone already
            return proc.poll()
        finally:
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except Exception:  # noqa: BLE001
                    pass
            if self.proc is proc:
                self.proc = None

    def _after_fork(self) -> None:
        """In a forked child: the caller's thread is gone and the worker's pipes are the
        parent's. Forget both (closing only this process's copies of the pipes) and send the
        jobs not answered yet again, from a thread and a worker of this process, so that the
        child's entries waiting on them still finish."""
        proc, self.proc = self.proc, None
        self._inflight = None
        if proc is not None:
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()  # (nothing is buffered: every message is flushed)
                except Exception:  # noqa: BLE001 - closed already
                    pass
        # (its lock, condition and the jobs' locks and events are released already:
        # jitorch/_fork.py)
        self._thread = None
        self._queue = collections.deque(self._jobs.values())
        if self._queue:
            self._thread = threading.Thread(target=self._loop, name="jitorch-compile",
                                            daemon=True)
            self._thread.start()

    def shutdown(self) -> None:
        """Stop the worker process (a later job starts a new one)."""
        proc = self.proc
        if proc is not None:
            self._kill(proc)

    def handoff(self):
        """At the caller's exit: hand every job not answered yet to this lane's worker, which
        finishes them into the disk cache after this process is gone (see the module doc), or
        stop the worker when there are none. -> (the jobs it got, its process)."""
        with self._lock:
            queued = list(self._queue)
            self._queue.clear()  # (the queue thread sends nothing after this)
            proc = self.proc
            alive = proc is not None and proc.poll() is None
            jobs = ([self._inflight] if alive and self._inflight is not None else []) + queued
            if jobs:
                try:
                    if queued:
                        proc = self._ensure_worker()
                        for job in queued:
                            _send(proc.stdin, _payload(job))
                    proc.stdin.close()  # end of jobs: the worker detaches and finishes them
                except (OSError, ValueError):
                    jobs = []  # the worker is gone: nothing will finish
        if not jobs:
            self.shutdown()
            return [], None
        if self.proc is proc:  # (a later job, if any, starts a fresh worker)
            self.proc = None
        return jobs, proc


def _payload(job: Job) -> dict:
    """What is sent to the worker for `job` (the fault injection read as it is sent)."""
    return dict(job.payload, fault=os.environ.get("JITORCH_COMPILE_WORKER_FAULT", ""))


def _failed(reason: str, numba_error: bool = False) -> dict:
    return {"ok": False, "reason": reason, "numba_error": numba_error}


def _send(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_HEADER.pack(len(data)) + data)
    f.flush()


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    out = bytearray()
    while len(out) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError()
        chunk = os.read(fd, n - len(out))
        if not chunk:
            raise EOFError("the pipe closed")
        out += chunk
    return bytes(out)


def _receive(f, deadline: float | None):
    fd = f.fileno()
    (n,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    return pickle.loads(_read_exact(fd, n, deadline))


# --- the worker process ---------------------------------------------------------------------------
def compile_job(job: dict) -> dict:
    """Import the job's module as `cache.load_module` does and compile its entry for the job's
    signature (Numba saves it to the disk cache). Runs in the worker; importable for tests."""
    if job.get("cache_dir"):
        os.environ["JITORCH_CACHE_DIR"] = job["cache_dir"]
    fault = job.get("fault")
    if fault == "die":
        os._exit(70)
    if fault == "hang":
        time.sleep(1e6)
    from ..kernels import compile_gc
    with compile_gc.raised():  # (the whole job: module loads too, not only Numba's compile)
        return _job(job)


def _job(job: dict) -> dict:
    t0, c0 = time.perf_counter(), time.process_time()
    if job.get("kind") == "call":
        return _call_job(job, t0, c0)
    from ..kernels import cache
    from ..kernels.numba_cache import compile_program
    kernels = job.get("kernels") or []
    names = [job["module"]] + [cache.module_name(cache.prepare_source(k)) for k in kernels]
    for name in names:
        old = cache.loaded(name)
        if old is not None and os.path.normpath(os.path.dirname(getattr(old, "__file__", "")
                                                                or "")) != \
                os.path.normpath(job.get("cache_dir") or ""):
            # loaded by an earlier job from another cache directory: its Numba files go
            # there, where the caller does not look
            cache.forget(name)
            from ..kernels import kernel_call
            kernel_call.forget(name)
    try:
        for ksrc in kernels:  # the modules the entry calls (targets/cpu/kernel.py), first
            cache.load_module(ksrc)
        mod, _ = cache.load_module(job["source"], job["options"])
    except Exception as e:  # noqa: BLE001 - reported to the caller
        return _failed(f"the compile worker could not load the program: {type(e).__name__}: {e}")
    if mod.__name__ != job["module"] or not getattr(mod, "__file__", None):
        return _failed(f"the compile worker made module {mod.__name__} "
                       f"({'on disk' if getattr(mod, '__file__', None) else 'in memory'}), not "
                       f"{job['module']} on disk: it runs another jitorch, Numba or cache "
                       "directory")
    fn = getattr(mod, job["entry"])
    before = cache.dispatcher_counts(fn)
    from ..kernels.lean_counts import counts as lean
    lean_before = dict(lean)
    try:
        compile_program(fn, job["sig"])  # (one process at a time: kernels/compile_lock.py)
    except Exception as e:  # noqa: BLE001 - reported to the caller
        return _compile_failure(e)
    return {"ok": True, "how": cache.dispatcher_outcome(fn, before),
            "wall": time.perf_counter() - t0, "cpu": time.process_time() - c0,
            "lean": {k: lean[k] - lean_before[k] for k in lean}}


def _compile_failure(e: Exception) -> dict:
    """The failed result of a job whose compile raised `e` (its first line)."""
    from numba.core.errors import NumbaError
    text = str(e).strip()
    first = text.splitlines()[0] if text else type(e).__name__
    if isinstance(e, NumbaError):
        return _failed(f"numba could not compile the program: {type(e).__name__}: {first}",
                       numba_error=True)
    return _failed(f"the compile worker failed: {type(e).__name__}: {first}")


def _call_job(job: dict, t0: float, c0: float) -> dict:
    """A "call" job: import jitorch module `module` and call its `entry(*args)`, which compiles
    `cache=True` njit functions of the library into Numba's disk cache (e.g. the fused RNN
    loops, nn/modules/_rnn_fused.py; each under its compile lock, kernels/compile_lock.py), and
    returns how ("disk" or "compiled"). The caller then loads them from disk."""
    import importlib
    if not job["module"].startswith("jitorch."):  # (only the library's own functions)
        return _failed(f"the compile worker calls jitorch's modules only, not {job['module']}")
    try:
        fn = getattr(importlib.import_module(job["module"]), job["entry"])
        how = fn(*job["args"])  # (one process at a time: kernels/compile_lock.py)
    except Exception as e:  # noqa: BLE001 - reported to the caller
        return _compile_failure(e)
    return {"ok": True, "how": how, "wall": time.perf_counter() - t0,
            "cpu": time.process_time() - c0}


class _Detached:
    """The worker's state once its caller is gone (see the module doc): set once, by the
    thread that notices (the stdin reader at end of file, or the parent watcher)."""

    def __init__(self, main_tid: int):
        self._lock = _fork.lock()
        self.main_tid = main_tid
        self.is_set = False

    def set(self) -> None:
        with self._lock:
            if self.is_set:
                return
            self.is_set = True
        try:
            # Linux: a thread's own priority (the main thread compiles); elsewhere the process's
            who = self.main_tid if sys.platform.startswith("linux") else 0
            os.setpriority(os.PRIO_PROCESS, who,
                           min(19, os.getpriority(os.PRIO_PROCESS, who) + 10))
        except (OSError, AttributeError):
            pass  # (not permitted or not supported: it compiles at the priority it has)
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)  # the caller's stderr is its user's: nothing more goes there, and
            os.dup2(null, 2)  # a reader waiting for that pipe to close is not kept waiting
            os.close(null)
        except OSError:
            pass
        deadline = time.monotonic() + job_timeout()
        threading.Thread(target=_exit_at, args=(deadline,), daemon=True).start()


def _exit_at(deadline: float) -> None:
    """A detached worker's bound: JITORCH_COMPILE_TIMEOUT seconds after its caller left."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            os._exit(0)
        time.sleep(min(left, 1.0))


def _watch_parent(parent: int, detached: _Detached) -> None:
    """A caller that died (killed, crashed) closes the pipe, but if something else holds it
    open the reader never sees its end: detach as soon as the parent is gone too (the worker
    is then re-parented; `parent` comes from the caller, which may have died while we
    started)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    detached.set()


def _read_jobs(inp, jobs, detached: _Detached) -> None:
    """Move the caller's messages into `jobs` as they come (so the caller's writes never wait
    on a compile); at the end of the pipe, None, and the worker detaches."""
    try:
        while True:
            jobs.put(_receive(inp, None))
    except (EOFError, OSError, ValueError, pickle.UnpicklingError):
        pass  # the caller closed the pipe: it exited, or died
    detached.set()
    jobs.put(None)


def _main() -> None:
    import signal
    # Ctrl-C in a terminal reaches the whole process group: it is meant for the caller (which
    # may catch it and go on), not for a compile it would turn into a failure; nor does a
    # closed terminal end the jobs a caller handed over (the timeout bounds the worker)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    parent = int(os.environ.get("_JITORCH_COMPILE_PARENT") or os.getppid())
    detached = _Detached(threading.get_native_id())
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # prints (Numba warnings, user code) go to stderr, never into a message
    sys.stdout = sys.stderr
    jobs: queue.SimpleQueue = queue.SimpleQueue()
    threading.Thread(target=_read_jobs, args=(sys.stdin.buffer, jobs, detached),
                     daemon=True).start()
    threading.Thread(target=_watch_parent, args=(parent, detached), daemon=True).start()
    while True:
        job = jobs.get()
        if job is None:
            return  # every job the caller sent is done
        try:
            reply = compile_job(job)
        except BaseException as e:  # noqa: BLE001 - answer, then keep serving
            reply = _failed(f"the compile worker failed: {type(e).__name__}: {e}")
        try:
            _send(out, reply)
        except OSError:
            pass  # the caller is gone: what it asked for is in the disk cache all the same
