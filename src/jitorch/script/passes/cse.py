"""Common subexpression elimination: a node equal to an earlier one in the same block (same op,
same inputs, same attributes) is dropped and its outputs replaced by the earlier node's.

Owns `run(graph) -> graph` (rewrites in place). Never merged: impure nodes
(`ir_util.node_is_pure`: in-place `name_` / `*_setitem` ops, random ops, prim::PythonOp,
Raise, Print, Assert, CallFunction), nodes producing mutable objects (prim::ListConstruct,
prim::DictConstruct: two lists stay two lists), factories (`zeros`, `new_zeros`, ...: each is
a fresh buffer that a loop's `out[t] = h` may write in place,
passes/autodiff_control_ops.mark_inplace_writes, so two allocations stay two) and nodes owning
blocks, except a guard (`if c: raise`) after one on the same condition: dropped. Constants
are merged by (type, Python type, repr) of their value, so `1`, `1.0` and `True` stay
distinct, and tensor constants only when they are the same object. Blocks are closed, so
each block has its own table; values never flow into a nested block except as captured
inputs.
"""
from __future__ import annotations

from ..._ops.factories import is_factory
from .. import ir
from ..ir.util import MUTABLE_RESULT_PRIMS, node_is_pure, replace_many


def run(graph: ir.Graph) -> ir.Graph:
    mapping: dict = {}
    _cse_block(graph.block, mapping)
    if mapping:
        replace_many(graph.block, mapping)
    return graph


def _attr_key(v):
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(_attr_key(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple((_attr_key(k), _attr_key(x)) for k, x in v.items()))
    if isinstance(v, (bool, int, float, complex, str, type(None))):
        return (type(v).__name__, repr(v))  # repr: keeps -0.0 apart from 0.0, nan equal to nan
    try:
        hash(v)
        from ..._tensor import Tensor
        if isinstance(v, Tensor):  # Tensor hashes by identity but compares elementwise
            return ("id", id(v))
        return (type(v).__name__, v)
    except TypeError:
        return ("id", id(v))


def _key(n: ir.Node):
    attrs = tuple(sorted((k, _attr_key(v)) for k, v in n.attrs.items()))
    types = tuple(str(o.type) for o in n.outputs)
    return (n.op, tuple(id(v) for v in n.inputs), attrs, types)


def _is_guard(n: ir.Node) -> bool:
    """`if c: raise ...` with nothing else: a `prim::If` without results whose then-block ends
    in `prim::Raise` and whose else-block is empty. A later guard on the same condition value
    never raises (issue 17: an nn.LayerNorm's own shape check and F.layer_norm's)."""
    if n.op != "prim::If" or n.outputs or len(n.blocks) != 2:
        return False
    then, other = n.blocks
    return bool(then.nodes) and then.nodes[-1].op == "prim::Raise" and not other.nodes


def _cse_block(block: ir.Block, mapping: dict) -> None:
    seen: dict = {}
    guarded: set = set()  # conditions of the guards met so far (see _is_guard)
    out = []
    for n in block.nodes:
        if mapping:
            n.inputs = [mapping.get(v, v) for v in n.inputs]
        for b in n.blocks:
            _cse_block(b, mapping)
        if _is_guard(n):
            if n.inputs[0] in guarded:  # an earlier guard raised already if it is true
                continue
            guarded.add(n.inputs[0])
        if n.blocks or n.op in MUTABLE_RESULT_PRIMS or is_factory(n.op) or not node_is_pure(n):
            out.append(n)
            continue
        try:
            k = _key(n)
            hash(k)
        except TypeError:
            out.append(n)
            continue
        prev = seen.get(k)
        if prev is None:
            seen[k] = n
            out.append(n)
            continue
        for o, p in zip(n.outputs, prev.outputs):
            mapping[o] = p
    block.nodes = out
    if mapping:
        block.returns = [mapping.get(v, v) for v in block.returns]
