"""Python's cyclic garbage collector while Numba compiles jitorch's code.

Owns `install()`: a listener on Numba's `numba:compile` event that, for the duration of the
outermost compile of a jitorch dispatcher (a generated program's entry or kernel, or a jitorch
library function; the compiles nested in it included), raises the collector's thresholds
(`RAISED`), and restores the caller's thresholds when it ends (or fails).

Why: a compile allocates millions of short-lived objects (Numba's IR, llvmlite's instruction
objects, type-inference tables), and with the default thresholds (700, 10, 10) the collector
runs every 700 allocations and regularly walks the whole heap, which after `import numba` and
a few compiles holds ~0.4-1.2 M tracked objects. Measured on the first-ever compile of a
Transformer encoder's train step (bench/compile_time.py encoder1, 2 cores): 18.3-19.3 CPU-s
with the defaults, 16.1-16.7 with the collector off, 16.6 with these thresholds. Objects
still die by reference counting as before; only cycles wait for the next (rarer) collection,
and the defaults are back as soon as the compile ends. Numba holds its global compiler lock
around the event, so the nesting count needs no lock of its own.
"""
from __future__ import annotations

import gc

RAISED = (100_000, 50, 100)
_state = {"depth": 0, "saved": None}
_installed = [False]


def _ours(event) -> bool:
    disp = (event.data or {}).get("dispatcher")
    mod = getattr(getattr(disp, "py_func", None), "__module__", None) or ""
    return mod.startswith(("_jitorch_prog_", "jitorch."))


def _on_start(event) -> None:
    if _state["depth"] == 0:
        if not _ours(event):
            return
        _state["saved"] = gc.get_threshold()
        gc.set_threshold(*RAISED)
    _state["depth"] += 1


def _on_end(event) -> None:
    if _state["depth"] == 0:  # (the end of a compile that is not jitorch's)
        return
    _state["depth"] -= 1
    if _state["depth"] == 0:
        gc.set_threshold(*_state["saved"])


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
