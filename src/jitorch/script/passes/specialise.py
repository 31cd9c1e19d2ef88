"""A library composite's body specialised on the constants of one call (used by the inline pass).

The frontend turns a scripted call of a composite (`F.softmax`, `F.layer_norm`, the losses, ...:
`_ops/composite`) into a `prim::CallFunction` of the body's generic graph, marked
`attrs["composite"] = body` (frontend/composite.py). When the inline pass inlines such a call it
inlines `specialised_graph(body, graph, args)` instead: the graph with the call's constant
arguments substituted, `x is None` tests on tensor arguments folded, then simplify + dce, so
branches on static values (`reduction == "mean"`, an absent weight) disappear before the
inlined body is typed. The generic graph stays valid on its own (the interpreter runs it as is).

Specialisations are cached per body and per pattern of the arguments (a constant's type and
repr, "T" for a tensor, "V" for anything else): one graph serves every call with those
constants, whatever the sizes.
"""
from __future__ import annotations

from ... import _fork
from .. import ir
from ..frontend import types as ft
from ..ir.util import clone_graph, replace_all_uses, walk_blocks
from . import dce, simplify

_lock = _fork.rlock()
_graphs: dict = {}


def _constant(v: ir.Value):
    """(True, value) for a value made by a prim::Constant, else (False, None)."""
    n = v.node
    if n is not None and n.op == "prim::Constant" and "value" in n.attrs:
        return True, n.attrs["value"]
    return False, None


def specialised_graph(body, graph: ir.Graph, args) -> ir.Graph:
    """`graph` (`body` compiled) specialised on the constants among `args` (the call's inputs)."""
    kinds = []
    for a in args:
        const, value = _constant(a)
        kinds.append(("C", type(value).__name__, repr(value)) if const else
                     "T" if isinstance(a.type, ir.TensorType) else "V")
    key = (body, tuple(kinds))
    with _lock:
        g = _graphs.get(key)
        if g is not None:
            return g
        g = clone_graph(graph)
        consts, tensors = [], set()
        for inp, a, kind in zip(g.inputs, args, kinds):
            if kind[0] == "C":
                n = ir.Node("prim::Constant", (), (a.type,), {"value": a.node.attrs["value"]})
                consts.append(n)
                replace_all_uses(g, inp, n.output)
            elif kind == "T" and isinstance(ft.base(inp.type), ir.TensorType):
                tensors.add(inp)
        g.block.nodes[:0] = consts
        for b in walk_blocks(g.block):
            for n in b.nodes:
                if n.op == "prim::ScalarOp" and n.attrs.get("fn") in ("is", "is_not") and \
                        any(v in tensors for v in n.inputs) and any(
                        _constant(v) == (True, None) for v in n.inputs):
                    n.op, n.inputs = "prim::Constant", []
                    n.attrs = {"value": n.attrs["fn"] == "is_not"}
        for inp in tensors:
            inp.type = ft.tensor()
        simplify.run(g)
        dce.run(g)
        _graphs[key] = g
        return g
