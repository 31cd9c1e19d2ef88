"""Dead code elimination.

Owns `run(graph) -> graph` (rewrites in place). Removes:
- pure nodes (`ir_util.is_pure`, which looks into sub-blocks) none of whose outputs is used;
- outputs of prim::If nodes that nothing reads (and the matching returns of both blocks);
- loop-carried values of prim::Loop whose final value nothing reads and whose value inside the
  body feeds nothing but its own next value (liveness to a fixed point over the body);
- captured inputs of prim::If / prim::Loop / prim::Fused that no block reads (with their params).
Kept: impure nodes (in-place, random: removing one would shift the random stream, PythonOp,
Raise, Print, Assert, CallFunction) and graph inputs and outputs.
"""
from __future__ import annotations

from .. import ir
from ..ir.util import free_values, is_pure


def run(graph: ir.Graph) -> ir.Graph:
    _dce_block(graph.block, set(range(len(graph.block.returns))))
    return graph


def _dce_block(block: ir.Block, live_returns: set) -> set:
    """Remove dead code in `block` given which of its returns are needed; returns the set of
    its params that are still read (by a kept node or a live return)."""
    live: set = set(v for i, v in enumerate(block.returns) if i in live_returns)
    kept = []
    for n in reversed(block.nodes):
        used = [o in live for o in n.outputs]
        if not any(used) and is_pure(n):
            continue
        if n.op == "prim::If":
            _dce_if(n, used)
        elif n.op == "prim::Loop":
            _dce_loop(n, used)
        elif n.op == "prim::Fused":
            _dce_fused(n, used)
        else:
            for b in n.blocks:
                _dce_block(b, set(range(len(b.returns))))
        live.update(n.inputs)
        for b in n.blocks:  # an open block (before close_block) reads outer values directly
            live.update(free_values(b))
        kept.append(n)
    kept.reverse()
    block.nodes = kept
    return {p for p in block.params if p in live}


def _drop_captured(n: ir.Node, first_input: int, first_param: int) -> None:
    """Remove captured inputs (from `first_input` on) that no block reads."""
    used_params = [_reads(b) for b in n.blocks]
    keep_in = list(range(first_input))
    drop = set()
    for k in range(first_input, len(n.inputs)):
        pi = k - first_input + first_param
        if any(b.params[pi] in u for b, u in zip(n.blocks, used_params)):
            keep_in.append(k)
        else:
            drop.add(pi)
    if not drop:
        return
    n.inputs = [n.inputs[k] for k in keep_in]
    for b in n.blocks:
        b.params = [p for i, p in enumerate(b.params) if i not in drop]


def _reads(block: ir.Block) -> set:
    out = set(block.returns)
    for x in block.nodes:
        out.update(x.inputs)
    return out


def _dce_if(n: ir.Node, used: list) -> None:
    keep = [i for i, u in enumerate(used) if u]
    if len(keep) != len(n.outputs):
        n.outputs = [n.outputs[i] for i in keep]
        for b in n.blocks:
            b.returns = [b.returns[i] for i in keep]
    for b in n.blocks:
        _dce_block(b, set(range(len(b.returns))))
    _drop_captured(n, 1, 0)


def _dce_fused(n: ir.Node, used: list) -> None:
    keep = [i for i, u in enumerate(used) if u]
    if len(keep) != len(n.outputs):
        n.outputs = [n.outputs[i] for i in keep]
        b = n.blocks[0]
        b.returns = [b.returns[i] for i in keep]
    _dce_block(n.blocks[0], set(range(len(n.blocks[0].returns))))
    _drop_captured(n, 0, 0)


def _dce_loop(n: ir.Node, used: list) -> None:
    body = n.blocks[0]
    nc = len(n.outputs)
    live_c = {k for k in range(nc) if used[k]}
    while True:  # a carried value is live if its result is used or the body needs its param
        needed = _needed_params(body, {0} | {1 + k for k in live_c})
        grow = {k for k in range(nc) if body.params[1 + k] in needed} - live_c
        if not grow:
            break
        live_c |= grow
    keep = sorted(live_c)
    if len(keep) != nc:
        n.inputs = n.inputs[:2] + [n.inputs[2 + k] for k in keep] + n.inputs[2 + nc:]
        body.params = [body.params[0]] + [body.params[1 + k] for k in keep] + \
            body.params[1 + nc:]
        body.returns = [body.returns[0]] + [body.returns[1 + k] for k in keep]
        n.outputs = [n.outputs[k] for k in keep]
    _dce_block(body, set(range(len(body.returns))))
    _drop_captured(n, 2 + len(n.outputs), 1 + len(n.outputs))


def _needed_params(block: ir.Block, live_returns: set) -> set:
    """Params a block needs for the given returns plus its effects (without rewriting it)."""
    live = {v for i, v in enumerate(block.returns) if i in live_returns}
    for n in reversed(block.nodes):
        if any(o in live for o in n.outputs) or not is_pure(n):
            live.update(n.inputs)
    return {p for p in block.params if p in live}
