"""The saved int scalars of a differentiated pair, packed into one `List[int]` (issue 17).

Owns `pack_saved_ints(d)`: a `Differentiated` (passes/autodiff.py) whose forward returns its
saved int scalars (the run-time sizes the backward's rules read: ~60 of them for a 2-layer
Transformer encoder) as ONE `prim::ListConstruct` after its other saved values, and whose
backward takes that list as one parameter and `prim::ListUnpack`s it. Why: every value that
crosses a compiled entry's boundary costs compile time (a wider return tuple type, its boxing,
one argument more to type and unbox in the backward); a target that holds a `List[int]` as one
int64 array (the CPU target: targets/cpu/program.py) returns one array instead. Only graph
values are packed, never the graph inputs among the saved values (the runtime holds those:
runtime/autodiff.py `_without_inputs`). The rewrite uses structural ops every tier runs (the
interpreter holds the list as a Python list), so a target opts in (`Target.packs_saved_ints`)
only for its entries' boundary; a pair with fewer than two such ints is returned unchanged.
"""
from __future__ import annotations

import dataclasses

from .. import ir
from ..ir.util import replace_many


def _packable(d) -> list:
    """Positions among the saved values of the int scalars the forward computes."""
    n = len(d.output_requires_grad)
    rets = d.forward.block.returns[n:]
    return [k for k, (v, i) in enumerate(zip(rets, d.saved_inputs))
            if i is None and isinstance(v.type, ir.IntType)]


def pack_saved_ints(d):
    """`d` with its saved int scalars as one trailing `List[int]` saved value (module doc)."""
    ks = _packable(d)
    if len(ks) < 2:
        return d
    packed = set(ks)
    n = len(d.output_requires_grad)
    keep = [k for k in range(d.n_saved) if k not in packed]
    fb = d.forward.block
    saved = fb.returns[n:]
    lst = ir.Node("prim::ListConstruct", [saved[k] for k in ks], [ir.ListType(ir.IntType())])
    # (in place: the graphs are this pair's own, and keep what else is set on them)
    d.forward.block = ir.Block(fb.params, fb.nodes + [lst],
                               fb.returns[:n] + [saved[k] for k in keep] + [lst.output])
    bb = d.backward.block
    n_grads = len(bb.params) - d.n_saved
    bsaved = bb.params[n_grads:]
    param = ir.Value(ir.ListType(ir.IntType()), name="sizes")
    unpack = ir.Node("prim::ListUnpack", [param], [ir.IntType() for _ in ks])
    d.backward.block = ir.Block(bb.params[:n_grads] + [bsaved[k] for k in keep] + [param],
                                [unpack] + bb.nodes, bb.returns)
    replace_many(d.backward, {bsaved[k]: o for k, o in zip(ks, unpack.outputs)})
    return dataclasses.replace(
        d, n_saved=len(keep) + 1,
        saved_inputs=tuple(d.saved_inputs[k] for k in keep) + (None,),
        saved_outputs=tuple(d.saved_outputs[k] for k in keep) + (None,))
