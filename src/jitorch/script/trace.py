"""Tracing: run a function on real tensors while a dispatch mode records every op into the IR.

Owns `Tracer` (the dispatch mode) and `trace_graph(fn, example_inputs)`. Each registry op call
runs eagerly (so values, dtypes and shapes are exact) and appends a node whose inputs are all of
the op's parameters in signature order (see ir.py). Tensors the function did not receive and did
not compute (e.g. made by a factory) become tensor constants, like PyTorch's tracer.

A Python bool/int/float taken from a traced tensor would silently specialise the trace on data;
`Tensor.__bool__`/`item()`/... call `check_data_dependence`, which raises `TracerError` naming the
user's line and suggesting `jitorch.jit.script`.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

from .. import _dtype as dt
from .._ops import registry
from .._tensor import Tensor
from . import ir


class TracerError(RuntimeError):
    pass


_state = threading.local()


def active_tracer():
    return getattr(_state, "tracer", None)


def tensor_type(t: Tensor, symbolic: bool = False) -> ir.TensorType:
    shape = tuple(None if symbolic else s for s in t._data.shape)
    return ir.TensorType(t._dtype, shape, requires_grad=t._requires_grad or None)


def value_type(x) -> ir.Type:
    if isinstance(x, Tensor):
        return tensor_type(x)
    if isinstance(x, bool):
        return ir.BOOL
    if isinstance(x, int):
        return ir.INT
    if isinstance(x, float):
        return ir.FLOAT
    if isinstance(x, str):
        return ir.STR
    if x is None:
        return ir.NONE
    if isinstance(x, dt.dtype):
        return ir.DTYPE
    if isinstance(x, tuple):
        return ir.TupleType([value_type(e) for e in x])
    if isinstance(x, list):
        return ir.ListType(value_type(x[0]) if x else ir.ANY)
    return ir.ANY


def _user_loc() -> ir.SourceLoc | None:
    """The innermost frame outside jitorch: where the user's code called the op."""
    f = sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not (mod == "jitorch" or mod.startswith("jitorch.")) and not \
                f.f_code.co_filename.startswith("<jitorch"):
            import linecache
            text = linecache.getline(f.f_code.co_filename, f.f_lineno).rstrip("\n")
            return ir.SourceLoc(f.f_code.co_filename, f.f_lineno, 0, text)
        f = f.f_back
    return None


class Tracer:
    """The dispatch mode that records ops. `values` maps id(tensor) -> Value."""

    def __init__(self, name: str):
        self.graph = ir.Graph(name)
        self.block = self.graph.block
        self.values: dict = {}
        self.keep: list = []  # keeps traced tensors alive so their ids stay unique

    # -- values ------------------------------------------------------------------------------
    def add_input(self, t, name: str) -> ir.Value:
        v = ir.Value(value_type(t), name)
        self.block.params.append(v)
        self.bind(t, v)
        return v

    def bind(self, t, v: ir.Value) -> None:
        self.values[id(t)] = v
        self.keep.append(t)

    def constant(self, x, ty=None) -> ir.Value:
        n = ir.Node("prim::Constant", (), (ty or value_type(x),), attrs={"value": x})
        self.block.nodes.append(n)
        return n.output

    def value_of(self, x) -> ir.Value:
        if isinstance(x, Tensor):
            v = self.values.get(id(x))
            if v is None:  # not an input and not computed here: bake it in
                v = self.constant(x)
                self.bind(x, v)
            return v
        if isinstance(x, list) and any(isinstance(e, Tensor) for e in x):
            vals = [self.value_of(e) for e in x]
            n = ir.Node("prim::ListConstruct", vals, (ir.ListType(vals[0].type),))
            self.block.nodes.append(n)
            return n.output
        return self.constant(x)

    # -- the dispatch mode ---------------------------------------------------------------------
    def __call__(self, op, slots, attrs):
        registry.pop_mode()
        try:
            outs = registry.dispatch(op, slots, attrs)
        finally:
            registry.push_mode(self)
        by_name = dict(zip(op.tensors, slots))
        by_name.update(attrs)
        inputs = [self.value_of(by_name[p]) for p in op.params]
        outs_l = outs if isinstance(outs, tuple) else (outs,)
        node = ir.Node(op.name, inputs, [value_type(o) for o in outs_l], loc=_user_loc())
        self.block.nodes.append(node)
        for o, v in zip(outs_l, node.outputs):
            if isinstance(o, Tensor):
                self.bind(o, v)
            elif isinstance(o, list):
                self.bind(o, v)
        return outs

    def __enter__(self):
        if active_tracer() is not None:
            raise TracerError("jitorch.jit.trace: nested tracing is not supported")
        _state.tracer = self
        registry.push_mode(self)
        return self

    def __exit__(self, *exc):
        registry.pop_mode()
        _state.tracer = None


def check_data_dependence(t: Tensor, what: str) -> None:
    """Called by Tensor's Python conversions: refuse to bake data into a trace."""
    tr = active_tracer()
    if tr is None or id(t) not in tr.values:
        return
    loc = _user_loc()
    where = f"{loc.file}:{loc.line}: {loc.text.strip()}\n" if loc else ""
    raise TracerError(
        f"{where}jitorch.jit.trace: converting a traced tensor to a Python {what} makes the "
        "trace depend on this input's data (a data-dependent branch or value), which a trace "
        "cannot record. Use jitorch.jit.script for data-dependent control flow.")


def trace_graph(fn, example_inputs, name: str | None = None):
    """Run `fn(*example_inputs)` under a tracer; returns (graph, eager outputs)."""
    if isinstance(example_inputs, Tensor):
        example_inputs = (example_inputs,)
    tracer = Tracer(name or getattr(fn, "__name__", "traced"))
    import inspect
    try:
        names = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        names = []
    with tracer:
        for i, x in enumerate(example_inputs):
            tracer.add_input(x, names[i] if i < len(names) else f"arg{i}")
        out = fn(*example_inputs)
        outs = out if isinstance(out, tuple) else (out,)
        tracer.block.returns = [tracer.value_of(o) for o in outs]
    return tracer.graph, out
