"""The helper nodes and graph utilities of autodiff through control flow
(`autodiff_control.py`): `prim::PythonOp` nodes that the interpreter runs through their `fn` and
the code generator lowers by name (`attrs["lowering"]`, `targets/cpu/lower_autodiff.py`), a
recursive graph structure for the size-generic check, and the pre-pass that makes loops carry
tuples element by element.
"""
from __future__ import annotations

import copy

import numpy as np

from ... import _dtype as dt
from ..._ops import registry
from ..._ops.factories import is_factory
from ..._tensor import Tensor
from ...autograd import grad_mode
from ..ir import interpreter
from .. import ir
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


def _take_row_fn(dim):
    def fn(g, idx):
        return Tensor._make(np.array(g._data.take(int(idx), axis=dim)), g._dtype)
    return fn


def _zero_row_fn(dim):
    def fn(g, idx):
        index = [slice(None)] * g._data.ndim
        index[dim] = int(idx)
        g._data[tuple(index)] = 0
        return g
    return fn


def _copy_fn(x):
    return Tensor._make(np.array(x._data, copy=True), x._dtype)


def _pyop(name, fn, inputs, out_type, **attrs) -> ir.Node:
    """A helper node of autodiff through control flow: the interpreter runs `fn`; the code
    generator lowers it by name (`lowering` "autodiff::<name>", targets/cpu/lower_autodiff.py)."""
    return ir.Node("prim::PythonOp", inputs, (out_type,),
                   attrs=dict(fn=fn, lowering=f"autodiff::{name}", name=name, **attrs))


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
    run_unchecked(ir.Block([], nodes, []), [], env)


def run_unchecked(block: ir.Block, args, env) -> None:
    """Run `block` on example values, without its checks: an if without outputs only checks
    (`a, b = x` pins x's first dim, a computed assert), and the forward program makes that
    check on every call; skipping it on the examples keeps the probe of grown sizes for a
    size-generic backward from tripping a check that pins a size."""
    with _NoModes(), grad_mode.no_grad():
        interpreter.run_block(ir.Block(block.params, _unchecked(block.nodes), block.returns),
                              args, env)


def _unchecked(nodes) -> list:
    """`nodes` without the output-less ifs, also inside blocks (nodes with blocks are shallow
    copies: the same input and output values, so `env` fills in as for the originals)."""
    out = []
    for n in nodes:
        if n.op == "prim::If" and not n.outputs:
            continue
        if n.blocks:
            n = copy.copy(n)
            n.blocks = [ir.Block(b.params, _unchecked(b.nodes), b.returns) for b in n.blocks]
        out.append(n)
    return out


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


# --- loop-invariant values ----------------------------------------------------------------------
# Views cheap to compute once, whose inputs decide whether they can fail (rank, dims): moved out
# of a loop body when their tensor input is loop-invariant, so the body's backward reads them as
# captured values (saved once) instead of per-iteration values (stacked T times).
_HOISTABLE = frozenset({"t", "transpose", "permute", "unsqueeze", "squeeze", "detach"})


def loop_invariants(graph: ir.Graph) -> ir.Graph:
    """In place on `graph` (a copy): loop-carried values that the body returns unchanged become
    captured values (the frontend carries every name a loop body reads; a carried weight would
    be stacked per iteration by the loop differentiation and its grad carried), then
    `_HOISTABLE` views of captured values move before the loop."""
    _invariants_block(graph.block)
    return graph


def _invariants_block(block: ir.Block) -> None:
    nodes = []
    for n in block.nodes:
        for b in n.blocks:
            _invariants_block(b)
        if n.op != "prim::Loop" or len(n.blocks) != 1:
            nodes.append(n)
            continue
        n = _uncarry(block, n)
        nodes.extend(_hoist(n))
        nodes.append(n)
    block.nodes = nodes


def _uncarry(block: ir.Block, n: ir.Node) -> ir.Node:
    nc = len(n.outputs)
    body = n.blocks[0]
    if len(body.params) != len(n.inputs) - 1 or len(body.returns) != 1 + nc:
        return n
    same = [body.returns[1 + k] is body.params[1 + k] for k in range(nc)]
    if not any(same):
        return n
    inits, caps = n.inputs[2:2 + nc], n.inputs[2 + nc:]
    keep = [k for k in range(nc) if not same[k]]
    moved = [k for k in range(nc) if same[k]]
    body.params = ([body.params[0]] + [body.params[1 + k] for k in keep] +
                   body.params[1 + nc:] + [body.params[1 + k] for k in moved])
    body.returns = [body.returns[0]] + [body.returns[1 + k] for k in keep]
    m = ir.Node("prim::Loop", [n.inputs[0], n.inputs[1]] + [inits[k] for k in keep] +
                list(caps) + [inits[k] for k in moved],
                [n.outputs[k].type for k in keep], attrs=n.attrs, blocks=[body], loc=n.loc)
    for j, k in enumerate(keep):
        m.outputs[j].name = n.outputs[k].name
        _replace_uses(block, n.outputs[k], m.outputs[j])
    for k in moved:
        _replace_uses(block, n.outputs[k], inits[k])
    return m


def _hoist(n: ir.Node) -> list:
    """Move `_HOISTABLE` nodes of loop `n`'s body whose tensor input is a captured param out of
    the loop (they become new captured params); returns the nodes to put before the loop."""
    nc = len(n.outputs)
    body = n.blocks[0]
    outer = {p.uid: v for p, v in zip(body.params[1 + nc:], n.inputs[2 + nc:])}
    consts = {}
    for m in body.nodes:
        if m.op == "prim::Constant" and not m.blocks:
            consts[m.output.uid] = m
    before, kept, new_params = [], [], []
    repl: dict = {}
    for m in body.nodes:
        m.inputs = [repl.get(v.uid, v) for v in m.inputs]
        ok = (m.op in _HOISTABLE and not m.blocks and len(m.outputs) == 1 and m.inputs and
              m.inputs[0].uid in outer and all(v.uid in outer or v.uid in consts
                                               for v in m.inputs[1:]))
        if not ok:
            kept.append(m)
            continue
        ins = []
        for v in m.inputs:
            if v.uid in outer:
                ins.append(outer[v.uid])
            else:
                c = consts[v.uid]
                cc = ir.Node("prim::Constant", (), (c.output.type,), attrs=dict(c.attrs))
                before.append(cc)
                ins.append(cc.output)
        h = ir.Node(m.op, ins, (m.output.type,), attrs=dict(m.attrs), loc=m.loc)
        h.output.name = m.output.name
        before.append(h)
        p = ir.Value(m.output.type, m.output.name)
        new_params.append(p)
        outer[p.uid] = h.output
        repl[m.output.uid] = p
    if not before:
        return []
    body.nodes = kept
    body.returns = [repl.get(v.uid, v) for v in body.returns]
    body.params = list(body.params) + new_params
    n.inputs = list(n.inputs) + [outer[p.uid] for p in new_params]
    return before


# --- in-place row writes in loops ---------------------------------------------------------------
def mark_inplace_writes(graph: ir.Graph) -> ir.Graph:
    """Marks (attrs["inplace"] = True) the `_select_write(p, v, dim, i)` nodes of loop bodies
    that may write into p's array instead of a copy (targets/cpu/lower_write.py reads the mark):
    `hs[t] = h` in a time loop would otherwise copy all of hs per step (quadratic in T).
    Safe when p is a loop-carried param that the body returns as the write's result, p's
    other uses are `select(p, ...)` nodes feeding only `_index_write` nodes (the frontend's
    write-through-a-view pattern; those copy the row), all before the write, and the loop's
    initial value is a fresh factory result (`zeros`, `new_zeros`, ...) used by nothing else."""
    _mark_block(graph.block)
    return graph


def _mark_block(block: ir.Block) -> None:
    uses: dict = {}
    for n in block.nodes:
        for v in n.inputs:
            uses[v.uid] = uses.get(v.uid, 0) + 1
    for v in block.returns:
        uses[v.uid] = uses.get(v.uid, 0) + 1
    for n in block.nodes:
        for b in n.blocks:
            _mark_block(b)
        if n.op != "prim::Loop" or len(n.blocks) != 1:
            continue
        nc = len(n.outputs)
        body = n.blocks[0]
        for k in range(nc):
            init = n.inputs[2 + k]
            if init.node is None or not is_factory(init.node.op) or uses.get(init.uid) != 1:
                continue
            _mark_carried(body, body.params[1 + k], body.returns[1 + k])


def _mark_carried(body: ir.Block, p: ir.Value, ret: ir.Value) -> None:
    w = ret.node
    if w is None or w.op != "_select_write" or w.inputs[0] is not p or w not in body.nodes:
        return
    pos = {id(n): j for j, n in enumerate(body.nodes)}
    at = pos[id(w)]
    users: dict = {}
    for n in body.nodes:
        for v in n.inputs:
            users.setdefault(v.uid, []).append(n)
    if ret in body.returns[:1] or sum(r is ret for r in body.returns) != 1 or p in body.returns:
        return
    if sum(v is p for v in w.inputs) != 1:
        return
    for u in users.get(p.uid, []):
        if u is w:
            continue
        if u.op != "select" or u.inputs[0] is not p or pos[id(u)] > at:
            return
        for uu in users.get(u.output.uid, []):
            if uu.op != "_index_write" or uu.inputs[0] is not u.output or pos[id(uu)] > at:
                return
        if u.output in body.returns:
            return
    w.attrs = dict(w.attrs, inplace=True)
