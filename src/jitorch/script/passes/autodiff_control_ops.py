"""The helper nodes and graph utilities of autodiff through control flow
(`autodiff_control.py`): `prim::PythonOp` nodes that the interpreter runs through their `fn` and
the code generator lowers through `attrs["lower"]` (`codegen/lower_autodiff.py`), a recursive
graph structure for the size-generic check, and the pre-pass that makes loops carry tuples
element by element.
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from ..._ops import registry
from ..._tensor import Tensor
from ...autograd import grad_mode
from .. import interpreter, ir
from . import autodiff as ad


# --- helper nodes (PythonOps with a lowering) ---------------------------------------------------
def _empty_buffer_fn(dtype, rank):
    def fn():
        return Tensor._make(np.empty((0,) * (rank + 1), dtype.np), dtype)
    return fn


def _stack_store_fn(buf, v, i, trip):
    data = buf._data
    vd = v._data if isinstance(v, Tensor) else np.asarray(v, data.dtype)
    if data.shape[0] != trip or (data.shape[1:] != vd.shape and data.size == 0 and vd.size):
        data = np.empty((trip,) + vd.shape, data.dtype)
    if data.shape[1:] != vd.shape:
        if vd.size:  # an empty value is an if's dummy for a slot its branch did not fill
            raise RuntimeError("autodiff: a loop's saved value changed shape between "
                               "iterations; the compiled backward needs equal shapes")
    else:
        data[i] = vd
    return Tensor._make(data, buf._dtype)


def _zeros_like_fn(x):
    return Tensor._make(np.zeros(x._data.shape, x._dtype.np), x._dtype)


def _index_acc_fn(dim):
    def fn(acc, g, idx):
        data = acc._data
        index = [slice(None)] * data.ndim
        index[dim % data.ndim] = idx
        data[tuple(index)] += g._data
        return acc
    return fn


def _typed_fn(x):
    return x


def _pyop(name, fn, lower, inputs, out_type, **attrs) -> ir.Node:
    n = ir.Node("prim::PythonOp", inputs, (out_type,),
                attrs=dict(fn=fn, lower=lower, name=name, **attrs))
    return n


def _ttype(x: Tensor) -> ir.TensorType:
    return ir.TensorType(x._dtype, (None,) * x._data.ndim)


def _const(value, ty) -> ir.Node:
    return ir.Node("prim::Constant", (), (ty,), attrs={"value": value})


class _NoModes:
    """Run eager ops for real while a trace is being recorded (concrete example values)."""

    def __enter__(self):
        self.stack = registry._mode_state.stack
        registry._mode_state.stack = []

    def __exit__(self, *exc):
        registry._mode_state.stack = self.stack


def _run_nodes(nodes, env) -> None:
    with _NoModes(), grad_mode.no_grad():
        interpreter.run_block(ir.Block([], nodes, []), [], env)


def _meta(x):
    """(dtype, rank) of a value stacked per iteration (numbers as 0-d int64/float64)."""
    if isinstance(x, Tensor):
        return x._dtype, x._data.ndim
    if isinstance(x, bool):
        return dt.bool, 0
    return (dt.int64 if isinstance(x, int) else dt.float64), 0


# --- structure of a graph with blocks -----------------------------------------------------------
def _structure(graph: ir.Graph) -> tuple:
    pos: dict = {}

    def block(b: ir.Block, tag) -> tuple:
        for i, p in enumerate(b.params):
            pos[p.uid] = (tag, "in", i)
        out = [tuple(ad._type_kind(p.type) for p in b.params)]
        for k, n in enumerate(b.nodes):
            const = None
            if n.op == "prim::Constant":
                v = n.attrs.get("value")
                const = (("T", str(v._dtype), tuple(v._data.shape), v._data.tobytes())
                         if isinstance(v, Tensor) else (type(v).__name__, repr(v)))
            elif n.op == "prim::PythonOp":
                const = (n.attrs.get("name"), n.attrs.get("dim"), n.attrs.get("rank"))
            subs = tuple(block(sb, (tag, k, j)) for j, sb in enumerate(n.blocks))
            out.append((n.op, tuple(pos.get(i.uid) for i in n.inputs), const, subs))
            for j, o in enumerate(n.outputs):
                pos[o.uid] = (tag, k, j)
        out.append(tuple(pos.get(r.uid) for r in b.returns))
        return tuple(out)
    return block(graph.block, ())


# --- tuples carried by loops --------------------------------------------------------------------
def flatten_tuple_loops(graph: ir.Graph) -> ir.Graph:
    """A copy of `graph` whose loops carry tuples element by element (code generation and the
    loop differentiation handle tensors and numbers only): the tuple is unpacked before the
    loop, rebuilt at the start of the body and after the loop, and the body's returned tuple is
    unpacked. Tuples of tuples are flattened one level per application, repeatedly."""
    from .types import copy_graph
    g = copy_graph(graph)
    for _ in range(4):
        if not _flatten_block(g.block):
            break
    return g


def _flatten_block(block: ir.Block) -> bool:
    changed = False
    nodes = []
    for n in block.nodes:
        for b in n.blocks:
            changed |= _flatten_block(b)
        if n.op != "prim::Loop" or not any(isinstance(o.type, ir.TupleType) for o in n.outputs):
            nodes.append(n)
            continue
        changed = True
        nc = len(n.outputs)
        body = n.blocks[0]
        inits, caps = n.inputs[2:2 + nc], n.inputs[2 + nc:]
        new_inits, new_params, new_rets, new_outs, after = [], [body.params[0]], [
            body.returns[0]], [], []
        head, tail = [], []
        for k, (v, o) in enumerate(zip(inits, n.outputs)):
            p, r = body.params[1 + k], body.returns[1 + k]
            if not isinstance(o.type, ir.TupleType):
                new_inits.append(v)
                new_params.append(p)
                new_rets.append(r)
                new_outs.append((o, None))
                continue
            elems = list(o.type.elems)
            un = ir.Node("prim::TupleUnpack", [v], elems)
            nodes.append(un)
            new_inits += un.outputs
            ps = [ir.Value(t, p.name) for t in elems]
            new_params += ps
            tc = ir.Node("prim::TupleConstruct", ps, ())
            tc.outputs = [p]  # the old param, now defined by the construct
            p.node = tc
            head.append(tc)
            ru = ir.Node("prim::TupleUnpack", [r], elems)
            tail.append(ru)
            new_rets += ru.outputs
            new_outs.append((o, elems))
        body.params = new_params + body.params[1 + nc:]
        body.nodes = head + body.nodes + tail
        body.returns = new_rets
        types = []
        for o, elems in new_outs:
            types += [o.type] if elems is None else elems
        m = ir.Node("prim::Loop", [n.inputs[0], n.inputs[1]] + new_inits + list(caps), types,
                    attrs=n.attrs, blocks=[body], loc=n.loc)
        nodes.append(m)
        k = 0
        for o, elems in new_outs:
            if elems is None:
                m.outputs[k].name = o.name
                _replace_uses(block, o, m.outputs[k])
                k += 1
                continue
            tc = ir.Node("prim::TupleConstruct", m.outputs[k:k + len(elems)], ())
            tc.outputs = [o]
            o.node = tc
            after.append(tc)
            k += len(elems)
        nodes += after
    block.nodes = nodes
    return changed


def _replace_uses(block: ir.Block, old: ir.Value, new: ir.Value) -> None:
    for n in block.nodes:
        n.inputs = [new if v is old else v for v in n.inputs]
    block.returns = [new if v is old else v for v in block.returns]


def _is_none(v: ir.Value) -> bool:
    n = v.node
    return n is not None and n.op == "prim::Constant" and n.attrs.get("value") is None
