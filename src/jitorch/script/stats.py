"""Compile statistics and the compile log: what `jitorch.jit.stats()` reports.

Owns the process-wide counters (compiles, memory/disk cache hits, interpreted runs and their
reasons, compile seconds) and `JITORCH_LOG=compile`, which prints one line per compile to stderr
with the function, the reason (first call, or which part of the specialisation key changed), how
it ended (compiled, loaded from the disk cache, interpreted and why) and the time.

Invariant: counters only grow (until `reset()`); compile updates hold `_lock`, so threads that
compile at once never lose a count. The per-call counters are `itertools.count` objects: `next()`
on one is atomic under the GIL and costs a fraction of a lock (the call path must stay cheap).
"""
from __future__ import annotations

import itertools
import os
import sys
import threading
from collections import Counter

_lock = threading.Lock()


class Stats(dict):
    """A snapshot of the counters: a dict that also reads as attributes (`stats().compiles`).

    Keys: compiles (programs built: code generated and loaded, plus interpreted fallbacks),
    numba_compiles (programs Numba compiled from source), disk_hits (programs Numba loaded
    from its on-disk cache), memory_hits (calls served by an existing specialisation),
    interpreted_runs (calls run by the IR interpreter), interpreted_reasons (reason -> number of
    specialisations that fell back for it), compile_seconds (total time spent building
    specialisations), calls (all calls through ScriptFunctions), kernels (kernel overloads
    compiled / loaded from disk / shared with another call site, codegen/kernel_call.py)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class _Counters:
    def __init__(self):
        self.reset()

    def reset(self):
        self.compiles = 0
        self.numba_compiles = 0
        self.disk_hits = 0
        self.memory_hits = itertools.count()
        self.interpreted_runs = itertools.count()
        self.interpreted_reasons: Counter = Counter()
        self.compile_seconds = 0.0
        self.calls = itertools.count()


_c = _Counters()


def snapshot() -> Stats:
    with _lock:
        return Stats(compiles=_c.compiles, numba_compiles=_c.numba_compiles,
                     disk_hits=_c.disk_hits, memory_hits=_value(_c.memory_hits),
                     interpreted_runs=_value(_c.interpreted_runs),
                     interpreted_reasons=dict(_c.interpreted_reasons),
                     compile_seconds=_c.compile_seconds, calls=_value(_c.calls),
                     kernels=_kernel_counts())


def _kernel_counts() -> dict:
    """Kernel overloads this process got (codegen/kernel_call.py): compiled, loaded from the
    disk cache, or shared (one already in memory: another call site, layer or program)."""
    kc = sys.modules.get("jitorch.script.codegen.kernel_call")  # (never imports Numba here)
    counts = kc.counts if kc is not None else {}
    return {"compiled": counts.get("compiled", 0), "disk": counts.get("disk", 0),
            "shared": counts.get("memory", 0)}


def _value(counter) -> int:
    return counter.__reduce__()[1][0]  # the next value next() would give: the count so far


def reset() -> None:
    """Zero every counter (tests and benchmarks measure differences from here)."""
    with _lock:
        _c.reset()
        kc = sys.modules.get("jitorch.script.codegen.kernel_call")
        if kc is not None:
            kc.counts.update(dict.fromkeys(kc.counts, 0))


def record_compile(seconds: float, *, how: str, reason: str | None = None) -> None:
    """One specialisation built. how: "compiled" (Numba compiled it), "disk" (Numba loaded
    it from the disk cache), "memory" (the same program was already loaded in this process)
    or "interpreted" (no program; `reason` says why)."""
    with _lock:
        _c.compiles += 1
        _c.compile_seconds += seconds
        if how == "compiled":
            _c.numba_compiles += 1
        elif how == "disk":
            _c.disk_hits += 1
        elif how == "interpreted":
            _c.interpreted_reasons[reason or "unknown"] += 1


def record_call(*, hit: bool, interpreted: bool) -> None:
    c = _c
    next(c.calls)
    if hit:
        next(c.memory_hits)
    if interpreted:
        next(c.interpreted_runs)


def log_enabled(kind: str = "compile") -> bool:
    flags = os.environ.get("JITORCH_LOG", "")
    return kind in {f.strip() for f in flags.split(",")} or flags.strip() == "all"


def log_compile(name: str, why: str, how: str, seconds: float, reason: str | None = None) -> None:
    """Print one compile line to stderr when JITORCH_LOG includes "compile"."""
    if not log_enabled("compile"):
        return
    what = {"compiled": "compiled", "disk": "loaded from disk cache",
            "memory": "program already loaded"}.get(how, f"interpreted ({reason})")
    print(f"jitorch: compile {name}: {why} -> {what} in {seconds * 1e3:.1f} ms",
          file=sys.stderr, flush=True)
