"""Tracing through scripted code: a call of a `runtime.ScriptFunction` (a scripted function, a
scripted module's method, another trace) made while `jit.trace` records is recorded as ONE
`prim::CallFunction` node of the callee's graph, never as a constant of its result (DESIGN,
"Frontends"). The pipeline's inline pass inlines it, so the traced program compiles,
differentiates and saves (`jit.save` inlines) with the callee's control flow intact: a branch on
data inside the scripted code is decided on each call, not once at trace time.

`runtime.ScriptFunction.__call__` hands a call to `record_call` while a tracer is active in the
calling thread. The call runs as usual (compiled or interpreted) with the tracer suspended, so
its values are the trace's values; then the node is appended: its inputs are the tracer's
values of the bound arguments (tensors as the tracer sees any tensor, other values constants),
its outputs the callee graph's, bound to the result's tensors. What the callee writes into its
tensor arguments comes back as the graph's extra outputs (`graph.mutated_inputs`,
frontend/alias.py) and is recorded as in-place writes of those tensors, which the tracer
functionalises as it does every write.
"""
from __future__ import annotations

from ..._ops import registry
from ..._tensor import Tensor
from .. import ir
from . import trace as _trace


def record_call(fn, args, kwargs):
    """Run `fn(*args, **kwargs)` and record it into the active tracer as one call."""
    tr = _trace.active_tracer()
    bound = fn._bind(list(args), dict(kwargs))
    before = [[e._version[0] if isinstance(e, Tensor) else None for e in a]
              if isinstance(a, (list, tuple)) else None for a in bound]
    g = fn.graph
    ins = [_input(tr, a, v.type) for a, v in zip(bound, g.inputs)]  # before it writes any
    result = _suspended(tr, fn, bound)
    mutated = tuple(getattr(g, "mutated_inputs", None) or ())
    n_res = len(g.outputs) - len(mutated)
    flat = list(result) if (fn._tuple_out or n_res != 1) else [result]
    if len(flat) != n_res:
        raise _trace.TracerError(f"jitorch.jit.trace: the call of {fn.name} returned "
                                 f"{len(flat)} values for {n_res} graph outputs")
    types = [_trace.value_type(o) if isinstance(o, Tensor) else v.type
             for o, v in zip(flat, g.outputs)]
    types += [_trace.value_type(bound[i]) if isinstance(bound[i], Tensor) else v.type
              for i, v in zip(mutated, g.outputs[n_res:])]
    node = ir.Node("prim::CallFunction", ins, types, attrs={"fn": g}, loc=_trace._user_loc())
    tr.block.nodes.append(node)
    for o, v in zip(flat, node.outputs):
        _bind_result(tr, o, v)
    for i, v in zip(mutated, node.outputs[n_res:]):
        a = bound[i]
        if isinstance(a, Tensor):
            _written(tr, a, v)
        elif isinstance(a, (list, tuple)) and any(isinstance(e, Tensor) for e in a):
            un = _unpack(tr, v, a)
            for e, ev, ver in zip(a, un, before[i]):
                if isinstance(e, Tensor) and e._version[0] != ver:  # the elements it wrote
                    _written(tr, e, ev)
    return result


def _suspended(tr, fn, args):
    """The call, outside the trace: its ops are not recorded one by one (the call is), and a
    data-dependent branch inside it is the scripted code's business, not the trace's."""
    state, modes = _trace._state, registry._mode_state
    stack = modes.stack
    modes.stack = [m for m in stack if m is not tr]
    state.tracer = None
    try:
        return fn(*args)
    finally:
        state.tracer = tr
        modes.stack = stack


def _input(tr, a, ty: ir.Type) -> ir.Value:
    if isinstance(a, Tensor):
        return tr.value_of(a)
    if isinstance(a, (list, tuple)) and any(isinstance(e, Tensor) for e in a):
        if isinstance(ty, ir.TupleType):
            vals = [_input(tr, e, t) for e, t in zip(a, ty.elems)]
            n = ir.Node("prim::TupleConstruct", vals, (ir.TupleType([v.type for v in vals]),))
        else:
            elem = ty.elem if isinstance(ty, ir.ListType) else ir.ANY
            vals = [_input(tr, e, elem) for e in a]
            n = ir.Node("prim::ListConstruct", vals, (ir.ListType(vals[0].type if vals else
                                                                  elem),))
        tr.block.nodes.append(n)
        return n.output
    if isinstance(ty, ir.FloatType) and isinstance(a, int) and not isinstance(a, bool):
        a = float(a)  # as a call converts it
    return tr.constant(a)


def _unpack(tr, v: ir.Value, seq) -> list:
    kind = "prim::TupleUnpack" if isinstance(v.type, ir.TupleType) else "prim::ListUnpack"
    n = ir.Node(kind, [v], [_trace.value_type(e) for e in seq])
    tr.block.nodes.append(n)
    return n.outputs


def _bind_result(tr, o, v: ir.Value) -> None:
    if isinstance(o, Tensor):
        tr.bind(o, v)
    elif isinstance(o, (list, tuple)) and any(isinstance(e, Tensor) for e in o):
        for e, ev in zip(o, _unpack(tr, v, o)):
            _bind_result(tr, e, ev)


def _written(tr, a: Tensor, v: ir.Value) -> None:
    """The call wrote `a`: its new value is `v` (a tensor standing for it is bound to v)."""
    new = Tensor._make(a._data, a._dtype)
    tr.bind(new, v)
    tr.record_write(a, new)
