"""Python's cyclic garbage collector while jitorch builds and Numba compiles jitorch's code.

Owns the collector during a build: its thresholds are raised (`RAISED`) and the objects that
existed when the build began are frozen (`gc.freeze`: left out of every collection) while any of
- `raised()` is active: `jit.script` runs the frontend (api.py; a ScriptModule's method
  compiled on first use too, runtime/module.py); the first call of a scripted function
  builds its program (the plan key, whose first use imports Numba; jitorch's passes and
  code generation; loading the program's modules; Numba's compile) and a backward program's
  first run compiles it (runtime/functions.py, runtime/autodiff.py); the compile worker
  runs a job (runtime/compile_worker.py);
- a Numba compile of a jitorch dispatcher (a generated program's entry or kernel, or a jitorch
  library function, the compiles nested in it included) runs: `install()` puts a listener on
  Numba's `numba:compile` event (eager kernels compile outside any `raised()`);
and the caller's thresholds are restored and those objects unfrozen (back in the oldest
generation, collectable as before) when the outermost of them ends (or fails). Where the
program has frozen objects of its own (`gc.get_freeze_count()`, e.g. a pre-fork server) nothing
is frozen: unfreezing would undo its freeze.

Why: a compile allocates millions of short-lived objects (Numba's IR, llvmlite's instruction
objects, type-inference tables), and with the default thresholds (700, 10, 10) the collector
runs every 700 allocations and regularly walks the whole heap, which after `import numba` and
a few compiles holds ~0.4-1.2 M tracked objects. Measured on the first-ever compile of a
Transformer encoder's train step (bench/compile_time.py encoder1, 2 cores): 18.3-19.3 CPU-s
with the defaults, 16.1-16.7 with the collector off, 16.6 with these thresholds. Objects
still die by reference counting as before; only cycles wait for the next (rarer) collection,
and the defaults are back as soon as the compile ends. The same holds before Numba compiles:
in a new model's first call (bench/compile_time.py "new model", gelu) the collector ran ~95
times (~0.05 of ~0.45 CPU-s) outside the compile event, walking the ~140 k objects of
`import jitorch` while Numba was imported and the program generated. Raised thresholds alone
cost more than they saved on a train step (mlp_train: its forward's build, backward's build
and backward's first run are three builds, and each end released a batch of ~100 k young
objects and a full collection: 0.10 CPU-s of collections against 0.065 with the defaults);
with the heap frozen those collections walk only what the build made: 0.025 (gelu 0.056 ->
0.023, mlp_infer 0.05 -> 0.013; bench/compile_time.py's children, new-model caches).

The nesting count is one for the process (the thresholds are), under a lock: builds run in
several threads at once, outside Numba's compiler lock. A compile event that did not raise
them (not jitorch's, with nothing raised) is remembered per thread, so its end does not
lower the count that a build in another thread holds.
"""
from __future__ import annotations

import contextlib
import gc
import threading

from ... import _fork

RAISED = (100_000, 50, 100)
_state = {"depth": 0, "saved": None, "froze": False}
_lock = _fork.lock()
_counted = threading.local()  # .stack: per compile event of this thread, did it count?
_installed = [False]


def _enter() -> None:
    with _lock:
        if _state["depth"] == 0:
            _state["saved"] = gc.get_threshold()
            gc.set_threshold(*RAISED)
            # the heap as it is now is left out of the collections until the end (never a
            # program's own frozen objects: their permanent generation is not touched)
            _state["froze"] = gc.get_freeze_count() == 0
            if _state["froze"]:
                gc.freeze()
        _state["depth"] += 1


def _exit() -> None:
    with _lock:
        _state["depth"] -= 1
        if _state["depth"] == 0:
            if _state["froze"]:
                gc.unfreeze()
            gc.set_threshold(*_state["saved"])


@contextlib.contextmanager
def raised():
    """The collector's thresholds raised for the block (see the module doc)."""
    _enter()
    try:
        yield
    finally:
        _exit()


def _ours(event) -> bool:
    disp = (event.data or {}).get("dispatcher")
    mod = getattr(getattr(disp, "py_func", None), "__module__", None) or ""
    return mod.startswith(("_jitorch_prog_", "jitorch."))


def _on_start(event) -> None:
    stack = _counted.__dict__.setdefault("stack", [])
    count = _state["depth"] > 0 or _ours(event)  # (a stale read only decides for foreign code)
    if count:
        _enter()
    stack.append(count)


def _on_end(event) -> None:
    stack = getattr(_counted, "stack", None)
    if stack and stack.pop():  # (else the end of a compile that did not raise them)
        _exit()


def install() -> None:
    """Install the listener once per process (idempotent)."""
    if _installed[0]:
        return
    from numba.core import event as ev

    class _Listener(ev.Listener):
        def on_start(self, event):
            _on_start(event)

        def on_end(self, event):
            _on_end(event)

    ev.register("numba:compile", _Listener())
    _installed[0] = True
