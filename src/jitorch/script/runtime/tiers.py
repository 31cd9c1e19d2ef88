"""Tiers: a compiled entry serves from the interpreter while the compile worker builds it.

Owns `JITORCH_COMPILE` ("background", the default, or "sync"), the decision at a compiled
entry's first call (`start`), the switch to the compiled program (`switch`), `wait` (behind
`ScriptFunction.wait_compiled`), `wait_all` (behind `jitorch.jit.wait_compiled`: every pending
compile of the process) and the per-function tier report of `jitorch.jit.stats()`.

A call is counted in `jitorch.jit.stats()` by the tier that ran it (runtime/stats.py):
compiled_runs, or interpreted_runs, of which interpreted_while_compiling are the calls the
interpreter ran while the program compiled here (`while_compiling`). The worker outlives its
caller (runtime/compile_worker.py): what a short process leaves compiling, the next run loads
compiled from the disk cache.

An `_Entry` (runtime/entry.py) moves through these tiers:
- "interpreted-while-compiling": its program is generated and its module imported (cheap: no
  Numba compile yet), but the overload for this call's boundary types is neither in memory nor
  in Numba's disk cache. `start` queues a job on the compile worker (runtime/compile_worker.py) and
  turns the entry interpreted (`kind` "interpreted", `pending` = the job): calls run its
  optimised graph through the IR interpreter over eager ops (the same values: the interpreter is
  the compiler's reference semantics).
- "compiled": the first call after the worker answered (or `wait`) loads the overload from the
  disk cache into the entry's dispatcher (milliseconds; Numba finds exactly the file the worker
  saved), records its entry point and flips `kind` back to "compiled", so the next calls take
  the compiled fast paths.
- "interpreted": the worker failed (Numba could not compile the program, the worker died or
  timed out): the entry stays interpreted, with the reason in `entry.reason` and in
  `jitorch.jit.stats().interpreted_reasons`; nothing is retried for that entry (a timeout would
  time out again), while the next job of another entry starts a fresh worker.
A program whose overload is on disk already, a program compiled in memory (no cache directory:
nothing to share with a worker), a dispatcher-less program (tests) and `JITORCH_COMPILE=sync`
take the synchronous path: the first call compiles or loads in the caller.

An entry can need more than one overload (its boundary key `entry._bkey` also tells the layout
of each array). The first goes through `start` as above; a later one (`_Entry._overload`, e.g.
an autodiff backward whose saved values come laid out otherwise) also goes to the worker: its
entry point is a stand-in (`_Compiling`) that raises NotReady, so that call runs interpreted
(the caller's RaiseInInterpreter path), until the worker's overload loads. So that the saved
values a stand-in forward gives its backward have the layouts the compiled forward's will have
(and the backward is not compiled for layouts it never sees again), the interpreter's outputs
are laid out as the program's would be (`entry._stand_in`).
"""
from __future__ import annotations

import os
import sys
import time
import warnings

from ... import _determinism
from ..._tensor import Tensor
from . import compile_pool, stats
from .entry import NotReady, _bkey, _boundary, _nb_signature

_warned: set = set()
PENDING_REASON = "compiling in the background (the interpreter runs it meanwhile)"


def mode() -> str:
    """`JITORCH_COMPILE`: "background" (default) or "sync" (always, where the worker's pipes
    cannot be waited on with `select`: not POSIX)."""
    if os.name != "posix" or _determinism._enabled:
        # deterministic mode: the interpreter's rounding may differ from the compiled loop's,
        # so which tier serves a call must not depend on how fast the worker compiles
        return "sync"
    m = os.environ.get("JITORCH_COMPILE", "").strip().lower() or "background"
    if m in ("background", "sync"):
        return m
    if m not in _warned:
        _warned.add(m)
        warnings.warn(f"JITORCH_COMPILE={m!r} is not 'background' or 'sync'; using "
                      "'background'", RuntimeWarning, stacklevel=3)
    return "background"


def start(entry, args) -> bool:
    """At a compiled entry's first call: queue its compile on the worker and make the entry
    interpreted meanwhile (True), or leave it to the caller to compile/load now (False)."""
    if entry.pending is not None:
        return True
    xs = [a._data if type(a) is Tensor else _boundary(a) for a in args]
    job, sig = _submit(entry, xs)
    if job is None:
        return False
    entry.pending = (job, sig, _bkey(xs))
    entry.reason = PENDING_REASON
    entry.kind = "interpreted"
    return True


def overload(entry, xs, bk):
    """For a compiled entry called with boundary types it has no overload for: a stand-in
    entry point (`_Compiling`) that raises NotReady until the worker has compiled it, or None
    (compile or load it in the caller now)."""
    job, sig = _submit(entry, xs)
    return None if job is None else _Compiling(entry, job, sig, bk)


def _submit(entry, xs):
    """(job, signature) of the worker compiling `entry`'s overload for boundary values `xs`,
    or (None, None) where the caller compiles or loads it itself."""
    if mode() != "background" or entry.origin is None:
        return None, None
    fn = entry.fn
    if getattr(fn, "overloads", None) is None or getattr(fn, "typeof_pyval", None) is None:
        return None, None  # not a Numba dispatcher (tests feed plain Python programs)
    mod = sys.modules.get(getattr(fn.py_func, "__module__", ""))
    if mod is None or not getattr(mod, "__file__", None):
        return None, None  # compiled in memory: a worker could not share it through the disk
    try:
        sig = _nb_signature(fn, xs)
    except Exception:  # noqa: BLE001 - a value Numba cannot type: the call says so
        return None, None
    if sig in fn.overloads or on_disk(fn, sig):
        return None, None  # in memory or in Numba's disk cache: loading takes milliseconds
    from ..kernels import cache
    source, options, entry_name, kernels = entry.origin
    job = compile_pool.pool().submit(
        (mod.__name__, entry_name, sig),
        {"source": source, "options": options, "module": mod.__name__, "entry": entry_name,
         "kernels": kernels, "sig": sig, "cache_dir": cache.cache_dir()})
    stats.record_background_start()
    return job, sig


class _Compiling:
    """The entry point of an overload the worker compiles: raises NotReady (the call runs
    interpreted) until the worker answered, then loads the overload into `entry.eps` and calls
    it; where the worker failed, the calls with these types keep running interpreted."""

    compiling = True

    def __init__(self, entry, job, sig, bk):
        self.entry, self.job, self.sig, self.bk = entry, job, sig, bk

    def __call__(self, *xs):
        return self.ready()(*xs)

    def ready(self):
        """The loaded entry point, or NotReady."""
        if not self.job.done.is_set():
            raise NotReady()
        with self.job.lock:
            ep = self.entry.eps.get(self.bk)
            if ep is self or ep is None:
                ep, reason = _load(self.entry, self.job, self.sig)
                if ep is None:
                    ep = _Failed(reason)
                    self.entry.reason = reason
                self.entry.eps[self.bk] = ep
        if isinstance(ep, (_Compiling, _Failed)):
            # another thread's stand-in for the same types replaced this one (two threads
            # met the new types at once), or the worker failed: never hand out a stand-in
            # as the loaded entry point (a runner would keep it)
            return ep.ready()
        return ep


class _Failed:
    """The entry point of an overload the worker could not build: every call runs interpreted
    (the reason is in the entry and in jitorch.jit.stats())."""

    def __init__(self, reason):
        self.reason = reason

    def __call__(self, *xs):
        raise NotReady()

    def ready(self):
        raise NotReady()


def on_disk(fn, sig) -> bool:
    """Whether Numba's disk cache of dispatcher `fn` holds the overload for `sig`: its index
    has the key Numba's own `load_overload` looks up (signature, target machine, bytecode)."""
    c = getattr(fn, "_cache", None)
    try:
        key = c._index_key(sig, fn.targetctx.codegen())
        return key in c._cache_file._load_index()
    except Exception:  # noqa: BLE001 - no cache, or a damaged index: not loadable as is
        return False


def switch(entry, block: bool = False) -> bool:
    """If the worker answered for this entry: load the compiled overload and make the entry
    compiled (True), or settle it as interpreted with the worker's reason. False while the job
    runs (or another thread is switching it, unless `block`)."""
    p = entry.pending
    if p is None:
        return entry.kind == "compiled"
    job, sig, bk = p
    if not job.done.is_set():
        return False
    if not job.lock.acquire(blocking=block):
        return False
    try:
        if entry.pending is not p:
            return entry.kind == "compiled"
        ep, reason = _load(entry, job, sig)
        if ep is not None:
            entry.eps[bk] = ep
            entry.reason = None
            entry.kind = "compiled"  # after eps: a reader of "compiled" finds the program
        else:
            entry.reason = reason
            if job.result.get("numba_error"):
                entry.fn = None  # as a failed compile in the caller: the program is never used
        entry.pending = None
        return ep is not None
    finally:
        job.lock.release()


def _load(entry, job, sig):
    """(entry point, None) loaded from the disk cache after the worker compiled `sig`, or
    (None, reason) when it failed; counted in stats and logged either way."""
    res = job.result
    name = entry.graph.name
    if res.get("ok"):
        from ..kernels import cache
        from ..kernels.numba_cache import compile_program
        t0 = time.perf_counter()
        before = cache.dispatcher_counts(entry.fn)
        try:
            ep = compile_program(entry.fn, sig)  # the file the worker saved: loads, no compile
        except Exception as e:  # noqa: BLE001 - correct results first: stay interpreted
            res = {"reason": f"loading the program the compile worker built failed: "
                             f"{type(e).__name__}: {e}"}
        else:
            how = cache.dispatcher_outcome(entry.fn, before)
            dt_s = time.perf_counter() - t0
            w, c = entry.worker_s
            entry.worker_s = (w + job.wall(), c + res.get("cpu", 0.0))
            stats.record_background_done(job.wall(), res.get("cpu", 0.0), how, dt_s,
                                         res.get("lean"))
            stats.log_compile(name, f"background compile done (worker {job.wall():.2f} s "
                              f"wall, {res.get('cpu', 0.0):.2f} s CPU)", how, dt_s)
            return ep, None
    reason = res.get("reason") or "the compile worker failed"
    entry.worker_s = (entry.worker_s[0] + job.wall(), entry.worker_s[1])
    stats.record_background_failed(reason)
    stats.log_compile(name, "background compile", "interpreted", job.wall(), reason)
    return None, reason


def wait(entries, timeout: float | None = None) -> bool:
    """Wait until no entry of `entries` is pending (each compiled or settled interpreted):
    True, or False when `timeout` seconds passed first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for e in entries:
        p = e.pending
        if p is not None:
            if not _wait_job(p[0], deadline):
                return False
            switch(e, block=True)
        for ep in [ep for ep in list(e.eps.values()) if isinstance(ep, _Compiling)]:
            if not _wait_job(ep.job, deadline):
                return False
            try:
                ep.ready()
            except NotReady:
                pass  # the worker failed: settled interpreted for these types
    return True


def wait_all(timeout: float | None = None) -> bool:
    """`jitorch.jit.wait_compiled`: wait until nothing this process sent to the compile worker
    is pending: the programs of every ScriptFunction (the optimizers' compiled steps are
    ScriptFunctions too), each then compiled or settled interpreted, and any job no function
    holds any more (a specialisation dropped meanwhile: its program still lands in the disk
    cache). True, or False when `timeout` seconds passed first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    entries = [e for sf in stats.functions() for e in sf._entries()]
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    if not wait(entries, left):
        return False
    return all(_wait_job(job, deadline) for job in compile_pool.pool().pending_jobs())


def while_compiling(entry) -> bool:
    """Does an interpreted call of `entry` (a specialisation: its forward, for an autodiff
    pair) run because its program compiles in the background?"""
    e = entry.autodiff.fwd if entry.autodiff is not None else entry
    return getattr(e, "pending", None) is not None


def _wait_job(job, deadline) -> bool:
    left = None if deadline is None else max(0.0, deadline - time.monotonic())
    return job.done.wait(left)


def tier(entry) -> str:
    if entry.pending is not None or any(isinstance(ep, _Compiling)
                                        for ep in list(entry.eps.values())):
        return "interpreted-while-compiling"
    return "compiled" if entry.kind == "compiled" else "interpreted"


# --- the report of jitorch.jit.stats() ------------------------------------------------------------
def function_report(sf) -> dict:
    """Tier and compile seconds of one ScriptFunction over its programs (each plain
    specialisation, or an autodiff pair's forward and backward programs): tier is
    "interpreted-while-compiling" while any program is, else "interpreted" if any program is
    interpreted, else "compiled" ("not called" before the first call); compile_wall_s sums the
    in-process build time and the worker's wall time, worker_cpu_s the worker's CPU time."""
    entries = list(sf._entries())
    tiers = [tier(e) for e in entries]
    if not tiers:
        t = "not called"
    elif "interpreted-while-compiling" in tiers:
        t = "interpreted-while-compiling"
    elif "interpreted" in tiers:
        t = "interpreted"
    else:
        t = "compiled"
    wall = sum(e.build_s for e in entries) + sum(e.worker_s[0] for e in entries)
    return {"tier": t, "programs": len(entries),
            "programs_compiling": tiers.count("interpreted-while-compiling"),
            "programs_interpreted": tiers.count("interpreted"), "compile_wall_s": wall,
            "worker_cpu_s": sum(e.worker_s[1] for e in entries),
            "reasons": sorted({e.reason for e in entries if e.reason})}
