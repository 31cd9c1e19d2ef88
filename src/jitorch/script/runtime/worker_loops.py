"""The library's compiled eager loops: readiness of `cache=True` njit functions that eager code
calls (the fused RNN loops of nn/modules/_rnn_fused.py, the blocked sum of
_ops/_sum_kernels.py), compiled by jitorch's compile worker process so that an eager call never
stalls on Numba.

A `WorkerLoops` is one family of such loops, keyed by tuples of strings (("LSTM", "float32"),
("sum", "float64")). `ready(key)` says whether the caller may run the loops of `key` now:
- loaded in this process already: True (one dict lookup: the hot path);
- in Numba's disk cache already (their marker exists), under `JITORCH_COMPILE=sync`, or with
  no disk cache to carry them: loaded or compiled in the call, True;
- otherwise the compile worker (script/runtime/compile_worker.py, a "call" job of the family's
  module's `compile_in_worker`) compiles them into the disk cache and `ready` says False until
  it is done (`jitorch.jit.wait_compiled()` waits for it); then the caller loads them from
  disk. The caller runs its fallback meanwhile (the scripted composite, NumPy's sum): a compile
  in a thread of this process would hold its GIL for seconds. A failed job leaves the fallback
  serving this process; the next process asks again.

`jitorch.jit.stats()["fused_loops"]` shows every family's keys (`states`).
"""
from __future__ import annotations

import hashlib
import os

__all__ = ["WorkerLoops", "states"]

_FAMILIES: list = []


class WorkerLoops:
    """One family of compiled eager loops (see the module doc).

    family: the name of its markers' folder and compile locks; module: the name of the module
    that defines it, with a module-level `compile_in_worker = <this>.compile_in_worker`;
    dispatchers(key): the njit dispatchers whose disk-cache hits and misses tell whether a
    warm-up loaded or compiled them (the first one's cache path names the Numba cache); warm(key):
    call them once on tiny inputs; sources: the modules whose source the machine code depends
    on (their hashes key the markers)."""

    def __init__(self, family: str, module: str, dispatchers, warm, sources):
        self.family, self.module = family, module
        self._dispatchers, self._warm, self._sources = dispatchers, warm, sources
        self.loaded: dict = {}  # key -> "loaded from the disk cache" | "compiled in this process"
        self.jobs: dict = {}  # key -> the compile worker's job compiling them into the disk cache
        self._stamp: list = []  # (once) what the loops' machine code depends on
        _FAMILIES.append(self)

    def ready(self, key: tuple) -> bool:
        """Whether the loops of `key` can run now (see the module doc)."""
        if key in self.loaded:
            return True
        job = self.jobs.get(key)
        if job is None:
            from . import tiers
            path = self.marker(key)
            if tiers.mode() == "sync" or path is None or os.path.exists(path):
                self._load(key)
                return True
            from ..kernels import cache
            from . import compile_pool
            job = self.jobs[key] = compile_pool.pool().submit(
                (self.family,) + key,
                {"kind": "call", "module": self.module, "entry": "compile_in_worker",
                 "args": key, "cache_dir": cache.cache_dir()})
        if not job.done.is_set() or not job.result["ok"]:
            return False
        self._load(key)
        return True

    def states(self) -> dict:
        """"LSTM float32" -> where those loops are in this process: "compiling in the compile
        worker", "loaded from the disk cache", "compiled in this process" or "not compiled:
        <reason>"."""
        out = {}
        for key, job in list(self.jobs.items()):
            out[" ".join(key)] = ("compiling in the compile worker" if not job.done.is_set()
                                  else None if job.result["ok"]
                                  else "not compiled: " + job.result["reason"])
        for key, how in list(self.loaded.items()):
            out[" ".join(key)] = how
        return {k: v for k, v in out.items() if v is not None}

    def marker(self, key: tuple) -> str | None:
        """The file that says the loops of `key` are in Numba's disk cache (written once they
        are): in jitorch's cache directory, named by a hash of what a program's module name
        hashes (script/kernels/cache.py: the versions, the sources of `sources`) and Numba's
        cache directory of the loops. None where either cache directory is missing (the loops
        then compile in the caller). A marker whose Numba files are gone (a cleared
        `__pycache__`, a cache file dropped as damaged) makes the loops compile in the call
        that finds it."""
        from ..kernels import cache
        first = self._dispatchers(key)[0]
        d, where = cache.cache_dir(), getattr(getattr(first, "_cache", None), "_cache_path", None)
        if d is None or where is None:
            return None
        if not self._stamp:
            parts = [cache._versions(), where] + [cache.file_hash(m) for m in self._sources()]
            self._stamp.append(hashlib.sha256(";".join(parts).encode()).hexdigest()[:24])
        return os.path.join(d, self.family, f"{'-'.join(key)}-{self._stamp[0]}")

    def compile_in_worker(self, *key: str) -> str:
        """The compile worker's job (a "call" job): `_compile`."""
        return self._compile(tuple(key))

    def _compile(self, key: tuple) -> str:
        """`warm`, then write the marker (a temporary file renamed: a process killed before
        leaves none, and Numba writes its own files the same way): "disk" if every loop loaded
        from Numba's disk cache, else "compiled"."""
        from ..kernels.cache import dispatcher_counts
        disps = self._dispatchers(key)
        misses = [dispatcher_counts(d)[1] for d in disps]
        self._warm(key)
        how = "disk" if misses == [dispatcher_counts(d)[1] for d in disps] else "compiled"
        path = self.marker(key)
        if path is not None and not os.path.exists(path):
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = f"{path}.{os.getpid()}.tmp"
                open(tmp, "wb").close()
                os.replace(tmp, path)
            except OSError:
                pass  # a read-only cache: the next process asks the worker again
        return how

    def _load(self, key: tuple) -> None:
        how = self._compile(key)
        self.loaded[key] = ("loaded from the disk cache" if how == "disk" else
                            "compiled in this process")


def states() -> dict:
    """Every family's `states`, for `jitorch.jit.stats()["fused_loops"]`."""
    out: dict = {}
    for fam in list(_FAMILIES):
        out.update(fam.states())
    return out
