"""Inlining: replaces each `prim::CallFunction` whose `attrs["fn"]` is an `ir.Graph` by a copy of
the callee's body, in every block (callees that call others are inlined recursively). A call of
a library composite inlines the body specialised on the call's constants (specialise.py). Nodes
inlined from jitorch's own sources take the call's location (errors name the user's line).

Owns `run(graph) -> graph` (rewrites in place). Calls to anything that is not a Graph (a Python
callable) are left alone. A call chain deeper than `MAX_DEPTH` (recursion, which the language
does not support) raises `InlineError`. The callee's value types are those of its own graph
(often unspecialised); when the type-propagation pass exists, the inlined nodes and then the
whole graph are re-typed from the caller's argument types (devices included:
types.stamp_device), so later passes and the code generator see exact types.
"""
from __future__ import annotations

from .. import ir
from ..ir.util import inline_block, replace_many
from ..kernels.signals import in_library

MAX_DEPTH = 64


class InlineError(RuntimeError):
    pass


def run(graph: ir.Graph, devices: bool = True) -> ir.Graph:
    """`devices`: the graph is specialised on its arguments' devices (the pipeline's case), so
    its values get theirs (`x.device` folds to a constant); False for a graph that must stay
    device-neutral (the one jit.save writes: it may load on any device)."""
    if _inline_block(graph.block, 0):
        # values downstream of a call were typed from the call's (often unknown) result types:
        # re-propagate over the whole graph now that the callee's nodes are visible, then give
        # the values their devices again (the rules type dtypes and ranks only: a composite's
        # results, F.softmax on cuda, would be typed and returned as cpu tensors)
        from .types import one_device, propagate_block, stamp_device
        try:
            propagate_block(graph.block)
        except Exception:  # best effort; the types pass owns its failures
            pass
        if devices:
            stamp_device(one_device([p.type for p in graph.block.params]), graph)
    return graph


def _retype(nodes) -> None:
    from .types import propagate_node
    for n in nodes:
        try:
            propagate_node(n)
        except Exception:  # typing is best effort here; the types pass owns its failures
            pass


def _inline_block(block: ir.Block, depth: int) -> bool:
    """Inline the calls in `block` (and nested blocks); True if anything was inlined."""
    if depth > MAX_DEPTH:
        raise InlineError(f"inlining: call chain deeper than {MAX_DEPTH} (recursive function?)")
    out = []
    mapping = {}
    done = False
    for n in block.nodes:
        for b in n.blocks:
            done = _inline_block(b, depth) or done
        fn = n.attrs.get("fn") if n.op == "prim::CallFunction" else None
        if not isinstance(fn, ir.Graph):
            if mapping:
                n.inputs = [mapping.get(v, v) for v in n.inputs]
            out.append(n)
            continue
        args = [mapping.get(v, v) for v in n.inputs]
        if "composite" in n.attrs:  # a library composite: its body on this call's constants
            from .specialise import specialised_graph
            fn = specialised_graph(n.attrs["composite"], fn, args)
        if len(args) != len(fn.inputs):
            raise InlineError(f"call of @{fn.name} with {len(args)} arguments, it takes "
                              f"{len(fn.inputs)}")
        body = ir.Block([], *inline_block(fn.block, args))
        _inline_block(body, depth + 1)  # the callee's own calls
        if n.loc is not None:
            _locate_at(body, n.loc)
        _retype(body.nodes)
        own = {id(x) for x in body.nodes}
        for old, new in zip(n.outputs, body.returns):
            # keep the caller's (possibly specialised) type where the callee's is unknown
            if _less_precise(new.type, old.type) and id(new.node) in own:
                new.type = old.type
            mapping[old] = new
        out.extend(body.nodes)
        done = True
    block.nodes = out
    if mapping:
        block.returns = [mapping.get(v, v) for v in block.returns]
        replace_many(block, mapping)
    return done


def _locate_at(block: ir.Block, loc) -> None:
    """Give the inlined nodes that come from jitorch's own sources (a library composite, an nn
    module's forward) the call's location: an error they raise names the user's line, as the
    interpreter's do (kernels/signals.py in_library)."""
    for m in block.nodes:
        if in_library(m.loc):
            m.loc = loc
        for b in m.blocks:
            _locate_at(b, loc)


def _less_precise(a: ir.Type, b: ir.Type) -> bool:
    if isinstance(a, ir.TensorType) and isinstance(b, ir.TensorType):
        return (a.dtype is None and b.dtype is not None) or (a.shape is None and
                                                            b.shape is not None)
    return isinstance(a, ir.AnyType) and not isinstance(b, ir.AnyType)
