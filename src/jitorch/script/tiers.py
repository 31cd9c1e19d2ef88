"""Tiers: a compiled entry serves from the interpreter while the compile worker builds it.

Owns `JITORCH_COMPILE` ("background", the default, or "sync"), the decision at a compiled
entry's first call (`start`), the switch to the compiled program (`switch`), `wait` (behind
`ScriptFunction.wait_compiled`) and the per-function tier report of `jitorch.jit.stats()`.

An `_Entry` (entry.py) moves through these tiers:
- "interpreted-while-compiling": its program is generated and its module imported (cheap: no
  Numba compile yet), but the overload for this call's boundary types is neither in memory nor
  in Numba's disk cache. `start` queues a job on the compile worker (compile_worker.py) and
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

Only the first overload of an entry goes to the worker. A later call of the same specialisation
with other boundary types (a list argument whose tensors' contiguity differs: `entry._bkey`)
compiles that overload in the caller, as before.
"""
from __future__ import annotations

import os
import sys
import time
import warnings

from .._tensor import Tensor
from . import compile_worker, stats
from .entry import _bkey, _boundary, _nb_signature

_warned: set = set()
PENDING_REASON = "compiling in the background (the interpreter runs it meanwhile)"


def mode() -> str:
    """`JITORCH_COMPILE`: "background" (default) or "sync" (always, where the worker's pipes
    cannot be waited on with `select`: not POSIX)."""
    if os.name != "posix":
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
    if mode() != "background" or entry.origin is None:
        return False
    fn = entry.fn
    if getattr(fn, "overloads", None) is None or getattr(fn, "typeof_pyval", None) is None:
        return False  # not a Numba dispatcher (tests feed plain Python programs)
    mod = sys.modules.get(getattr(fn.py_func, "__module__", ""))
    if mod is None or not getattr(mod, "__file__", None):
        return False  # compiled in memory: a worker could not share it through the disk
    xs = [a._data if type(a) is Tensor else _boundary(a) for a in args]
    try:
        sig = _nb_signature(fn, xs)
    except Exception:  # noqa: BLE001 - a value Numba cannot type: the call says so
        return False
    if sig in fn.overloads or on_disk(fn, sig):
        return False  # in memory or in Numba's disk cache: loading takes milliseconds
    from . import cache
    source, options, entry_name = entry.origin
    job = compile_worker.submit(
        (mod.__name__, entry_name, sig),
        {"source": source, "options": options, "module": mod.__name__, "entry": entry_name,
         "sig": sig, "cache_dir": cache.cache_dir()})
    entry.pending = (job, sig, _bkey(xs))
    entry.reason = PENDING_REASON
    entry.kind = "interpreted"
    stats.record_background_start()
    return True


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
        res = job.result
        name = entry.graph.name
        if res.get("ok"):
            from . import cache
            t0 = time.perf_counter()
            before = cache.dispatcher_counts(entry.fn)
            try:
                ep = entry.fn.compile(sig)  # the file the worker saved: loads, no compile
            except Exception as e:  # noqa: BLE001 - correct results first: stay interpreted
                res = {"ok": False, "numba_error": False,
                       "reason": f"loading the program the compile worker built failed: "
                                 f"{type(e).__name__}: {e}"}
            else:
                how = cache.dispatcher_outcome(entry.fn, before)
                entry.eps[bk] = ep
                entry.worker_s = (job.wall(), res.get("cpu", 0.0))
                entry.reason = None
                entry.kind = "compiled"  # after eps: a reader of "compiled" finds the program
                entry.pending = None
                dt_s = time.perf_counter() - t0
                stats.record_background_done(job.wall(), res.get("cpu", 0.0), how, dt_s)
                stats.log_compile(name, f"background compile done (worker {job.wall():.2f} s "
                                  f"wall, {res.get('cpu', 0.0):.2f} s CPU)", how, dt_s)
                return True
        reason = res.get("reason") or "the compile worker failed"
        entry.worker_s = (job.wall(), 0.0)
        entry.reason = reason
        if res.get("numba_error"):
            entry.fn = None  # as a failed compile in the caller: the program is never used
        entry.pending = None
        stats.record_background_failed(reason)
        stats.log_compile(name, "background compile", "interpreted", job.wall(), reason)
        return False
    finally:
        job.lock.release()


def wait(entries, timeout: float | None = None) -> bool:
    """Wait until no entry of `entries` is pending (each compiled or settled interpreted):
    True, or False when `timeout` seconds passed first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for e in entries:
        p = e.pending
        if p is None:
            continue
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not p[0].done.wait(left):
            return False
        switch(e, block=True)
    return True


def tier(entry) -> str:
    if entry.pending is not None:
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
