"""The recording side of the profiler: one `Collector` gathers the events of a trace.

While a collector is active (`_profiling.collector[0]`), it receives:
- every eager op from `_ops/registry.dispatch` (`op`): a range "aten::<op>" with the inputs'
  shapes (record_shapes), the user's stack (with_stack) and the bytes of the outputs the op
  allocated (profile_memory: outputs that are views of an input allocate nothing, as the op's
  registry declaration `view` says);
- every call of a scripted/traced function: `ScriptFunction.__call__` is swapped for
  `_profiled_call` while active (and restored after, so an unprofiled call pays nothing), which
  records "script::<name>"; a compiled program runs without the GIL and has no ranges of its
  own, so the `record_function` markers its source contains (the frontend compiles them as
  no-op regions and lists them in `graph.profile_markers`) are recorded as child ranges spanning
  the call;
- every compile, from `script/runtime/stats.log_compile` (`compile`): "compile::<name>" with
  the reason (first call, or which part of the specialisation key changed), how it ended and
  its time;
- `record_function` ranges (`begin`/`end`);
- RPC calls (`distributed/rpc/api.py`): "rpc_sync#fn(worker0 -> worker1)" (`begin_async`),
  from the call until its answer arrives.

Ranges nest per thread (a thread-local stack), which gives each event its parent and children.
Only one collector is active at a time (PyTorch refuses a second profiler as well).
"""
from __future__ import annotations

import itertools
import os
import sys
import threading
import time

from .. import _fork, _profiling
from .._ops.registry import dispatch as _dispatch
from .._tensor import Tensor
from .events import EventList, FunctionEvent

_now = time.perf_counter_ns
_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_lock = _fork.lock()


class Collector:
    def __init__(self, *, record_shapes=False, profile_memory=False, with_stack=False):
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.events: list = []
        self._ids = itertools.count(1)
        self._tls = threading.local()
        self.base_ns = _now()
        self.epoch_us = time.time_ns() / 1e3

    # -- activation ----------------------------------------------------------------------------
    def start(self) -> None:
        with _lock:
            if _profiling.collector[0] is not None:
                raise RuntimeError("Profiler is already enabled: stop the active profiler "
                                   "before starting another")
            _install_script_hook()
            _profiling.collector[0] = self
            _profiling.refresh()

    def stop(self) -> EventList:
        with _lock:
            if _profiling.collector[0] is self:
                _profiling.collector[0] = None
                _profiling.refresh()
                _remove_script_hook()
        end = _now()
        for e in self.events:  # ranges still open when the trace stopped end with it
            if e.end_ns is None:
                e.end_ns = end
        return EventList(self.events, profile_memory=self.profile_memory,
                         trace_meta={"base_ns": self.base_ns, "epoch_us": self.epoch_us,
                                     "record_shapes": self.record_shapes,
                                     "profile_memory": self.profile_memory,
                                     "with_stack": self.with_stack})

    # -- ranges --------------------------------------------------------------------------------
    def _stack(self) -> list:
        try:
            return self._tls.stack
        except AttributeError:
            st = self._tls.stack = []
            return st

    def begin(self, name: str, cat: str, shapes=None, stack=None) -> FunctionEvent:
        st = self._stack()
        ev = FunctionEvent(next(self._ids), name, threading.get_ident(), 0, cat, shapes, stack)
        if st:
            ev.cpu_parent = st[-1]
            st[-1].cpu_children.append(ev)
        st.append(ev)
        self.events.append(ev)
        ev.start_ns = _now()
        return ev

    def begin_async(self, name: str, cat: str) -> FunctionEvent:
        """A range that another thread may end (an RPC's, ended when its answer arrives): a
        child of the current range, never the parent of the ranges that follow it here."""
        ev = self.begin(name, cat)
        self._stack().pop()
        return ev

    def end(self, ev: FunctionEvent) -> None:
        ev.end_ns = _now()
        st = self._stack()
        if st and st[-1] is ev:
            st.pop()
        elif ev in st:  # ranges closed out of order (record_function objects): drop it only
            st.remove(ev)

    def user_stack(self) -> list:
        """The caller's Python frames outside jitorch, innermost first, as PyTorch writes them:
        "file.py(12): fn"."""
        out = []
        f = sys._getframe(2)
        while f is not None:
            fn = f.f_code.co_filename
            if not fn.startswith(_PKG) and not fn.startswith("<jitorch"):
                out.append(f"{fn}({f.f_lineno}): {f.f_code.co_name}")
            f = f.f_back
        return out

    # -- the emitting places -------------------------------------------------------------------
    def op(self, op, slots, attrs):
        """An eager op (from registry.dispatch, which passes itself as `_dispatch`)."""
        shapes = [_shape(s) for s in slots] if self.record_shapes else None
        stack = self.user_stack() if self.with_stack else None
        ev = self.begin("aten::" + op.name, "cpu_op", shapes, stack)
        try:
            r = _dispatch(op, slots, attrs, False)
        finally:
            self.end(ev)
        if self.profile_memory:
            ev.own_memory = _allocated(op, slots, r)
        return r

    def compile(self, name, why, how, seconds, reason) -> None:
        """A specialisation built (stats.log_compile): a range ending now, `seconds` long.
        Ranges of this thread that ran inside that window (the first call runs as part of the
        build) become its children."""
        end = _now()
        st = self._stack()
        ev = FunctionEvent(next(self._ids), "compile::" + name, threading.get_ident(),
                           end - int(seconds * 1e9), "compile",
                           stack=self.user_stack() if self.with_stack else None)
        ev.end_ns = end
        ev.args = {"function": name, "reason": why, "result": how,
                   "seconds": round(seconds, 6)}
        if reason:
            ev.args["interpreted because"] = reason
        if st:
            parent = st[-1]
            inside = [c for c in parent.cpu_children if c.start_ns >= ev.start_ns]
            parent.cpu_children = [c for c in parent.cpu_children if c.start_ns < ev.start_ns]
            parent.cpu_children.append(ev)
            ev.cpu_parent = parent
            for c in inside:
                c.cpu_parent = ev
            ev.cpu_children = inside
        self.events.append(ev)


def _shape(s):
    if isinstance(s, Tensor):
        return list(s._data.shape)
    if isinstance(s, (list, tuple)):
        return [list(x._data.shape) if isinstance(x, Tensor) else [] for x in s]
    return []


def _allocated(op, slots, r) -> int:
    """Bytes of new storage among an op's outputs: none for a view of its input (the registry's
    `view` declaration: True always, "maybe" when the arrays share memory)."""
    outs = r if isinstance(r, (tuple, list)) else (r,)
    total = 0
    first = slots[0] if slots and isinstance(slots[0], Tensor) else None
    for o in outs:
        if not isinstance(o, Tensor):
            continue
        if op.view is True and first is not None:
            continue
        if op.view and first is not None and _shares(o, first):
            continue
        total += o._data.nbytes
    return total


def _shares(a, b) -> bool:
    import numpy as np
    return np.may_share_memory(a._data, b._data)


# -- scripted calls -----------------------------------------------------------------------------
_original = None  # ScriptFunction.__call__ itself (kept: a call in flight may still need it)


def _profiled_call(self, *args, **kwargs):
    c = _profiling.collector[0]
    if c is None:
        return _original(self, *args, **kwargs)
    stack = c.user_stack() if c.with_stack else None
    shapes = [_shape(a) for a in args] if c.record_shapes else None
    ev = c.begin("script::" + self.name, "jit", shapes, stack)
    marks = [c.begin(m, "user_annotation") for m in _markers(self.graph)]
    for m in marks:
        m.args["scripted"] = "a record_function region inside compiled code: spans the call"
    try:
        r = _original(self, *args, **kwargs)
    finally:
        for m in reversed(marks):
            c.end(m)
        c.end(ev)
    if c.profile_memory:
        inner = marks[-1] if marks else ev
        if not inner.cpu_children:  # a compiled call: its outputs are what it allocated
            outs = r if isinstance(r, tuple) else (r,)
            inner.own_memory = sum(o._data.nbytes for o in outs if isinstance(o, Tensor))
    return r


def _markers(graph, depth: int = 0) -> tuple:
    """The record_function names of a scripted graph and of the graphs it calls (a submodule's
    forward, another scripted function), computed once per graph."""
    got = getattr(graph, "_all_profile_markers", None)
    if got is not None:
        return got
    out = list(getattr(graph, "profile_markers", ()))
    if depth < 32:
        for n in graph.nodes():
            callee = n.attrs.get("fn") if n.op == "prim::CallFunction" else None
            if callee is not None and hasattr(callee, "nodes"):
                out += _markers(callee, depth + 1)
    got = tuple(out)
    try:
        graph._all_profile_markers = got
    except AttributeError:  # a graph type without attributes: recomputed per call
        pass
    return got


def _install_script_hook() -> None:
    global _original
    from ..jit import ScriptFunction
    if _original is None:
        _original = ScriptFunction.__call__
    ScriptFunction.__call__ = _profiled_call


def _remove_script_hook() -> None:
    from ..jit import ScriptFunction
    if _original is not None:
        ScriptFunction.__call__ = _original


def active() -> Collector | None:
    return _profiling.collector[0]
