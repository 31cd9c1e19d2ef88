"""Registry ops that are not elementwise, lowered to their own implementation on device arrays.

An op is declared once (its registry declaration, `_ops/`), and its implementation is written
over the array namespace of whatever holds the arrays: NumPy on the host and on the simulator,
CuPy on a GPU (cuBLAS for matmul, CUB for reductions, cuFFT). Eager CUDA calls it through the
device step of dispatch (`_device/transfer.dispatch_on`); a CUDA program's host entry calls it
directly, with the arrays it holds and the node's attributes, as eager's dispatch does for a
non-elementwise op (`registry.dispatch`: tensors positional, attributes by keyword, lists of
tensors as lists of arrays), so values, dtypes and errors are eager's. What fuses runs in the
target's own kernels (kernel.py: elementwise groups; reduce.py, rows.py: reductions and row
regions); a node here is one library call.

Not lowered here (NotLowered names the op and why): elementwise ops (kernels only: one without a
CUDA spelling stays interpreted, spelling.py), ops that move data between devices
(`extra["transfer"]`) or that cannot run on a device (`extra["no_device"]`). A factory's
`device` is its last input (the program's device: program.py refuses values elsewhere).
"""
from __future__ import annotations

from ...._ops import registry
from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.emitter import Emitter
from .prims import value


def lower_library(em: Emitter, n: ir.Node) -> None:
    op = registry.OPS.get(n.op)
    if op is None:
        raise NotLowered(f"op {n.op} is not lowered on cuda")
    if op.kind == "elementwise":
        raise NotLowered(f"op {n.op}: elementwise, and its template has no cuda kernel")
    if op.extra.get("transfer"):
        raise NotLowered(f"op {n.op} moves data between devices")
    if op.extra.get("no_device"):
        raise NotLowered(f"op {n.op} does not run on cuda ({op.extra['no_device']})")
    for o in n.outputs:  # (a rank or dtype known only at run time is fine on the host)
        d = o.type.dtype if isinstance(o.type, ir.TensorType) else None
        if d is not None and d not in em.capabilities.dtypes:
            raise NotLowered(f"dtype {d} is not lowered on cuda yet")  # no complex, no half
    by_name = dict(zip(op.params, n.inputs))
    if op.kind == "factory":  # (its result is on this program's device: program.py checks)
        args = [value(em, v) for v in n.inputs]  # the factory's own parameters, in order
        call = f"{_impl_alias(em, op.name)}({', '.join(args)})"
    else:
        pos = [_operand(em, op, t, by_name[t]) for t in op.tensors]
        kw = [f"{a}={value(em, by_name[a])}" for a in op.attrs]
        call = f"{_impl_alias(em, op.name)}({', '.join(pos + kw)})"
    r = em.fresh("r")
    if len(n.outputs) == 1 and not isinstance(n.output.type, (ir.TupleType, ir.ListType,
                                                                ir.AnyType)):
        # an op that may give a sequence (split into one chunk, nonzero as a tuple) for a
        # value the graph types as one: its element, as the interpreter takes it
        em.emit(f"{r} = result({call}, single=True)")
    else:
        em.emit(f"{r} = result({call})")
    if len(n.outputs) == 1:
        em.bind(n.output, r)
        return
    for k, o in enumerate(n.outputs):
        em.bind(o, f"{r}[{k}]")


def _operand(em: Emitter, op, name: str, v: ir.Value) -> str:
    if name in op.lists and v.uid in em.lists:
        return "[" + ", ".join(value(em, x) for x in em.lists[v.uid]) + "]"
    return value(em, v)


def _impl_alias(em: Emitter, name: str) -> str:
    alias = literal.Ident("_op_" + "".join(ch if ch.isalnum() else "_" for ch in name))
    line = f"{alias} = implementation({literal.text(name)})"
    em.global_line(line)
    return alias
