"""Eager's checks on the operands of elementwise ops, in generated code (lower_elementwise.py).

An op's public function may check its operands before the op runs (`binary.guard`: `pow`,
`sub`, `lerp`, ...). The op's declaration carries that check (`extra["check"]`, which the
interpreter also runs) and, for checks of a Python-number operand's value, a form the program
can test (`extra["scalar_check"]`: slot, condition, message). `eager_check` runs the check at
generation time on stand-ins of the operands' types (what it refuses for the types alone is left
to the interpreter, which raises eager's error); `scalar_checks` emits the value tests before a
group's loops, since eager raises whatever the size, an empty tensor included.
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from ..._tensor import Tensor
from ..._ops import registry
from .. import ir
from ..passes.types import elementwise_dtypes
from . import NotLowered
from .emitter import Emitter


def eager_check(opdef, n: ir.Node, consts: dict) -> None:
    """Run the op's eager value check (`extra["check"]`, binary.guard) on stand-ins of the
    operands: tensors of their dtype, constants as they are, run-time numbers (and the slot
    of a `scalar_check`, which the program tests itself: `scalar_checks`) as 1 of their type.
    What it refuses for these types (`bool ** bool`, `bool - bool`) the program cannot
    compute: NotLowered, and the interpreter raises eager's error."""
    check = opdef.extra.get("check")
    if check is None:
        return
    emitted = opdef.extra.get("scalar_check", (None,))[0]  # checked by the program itself
    args = []
    for name, v in zip(opdef.params, n.inputs):
        t = v.type
        if v.uid in consts and name != emitted:
            args.append(consts[v.uid])
        elif isinstance(t, ir.TensorType):
            args.append(Tensor._make(np.zeros((1,) * t.ndim, t.dtype.np), t.dtype))
        else:
            args.append({ir.BoolType: True, ir.IntType: 1, ir.FloatType: 1.0}.get(type(t)))
    by = dict(zip(opdef.params, args))
    try:
        check(*[by[s] for s in opdef.tensors], **{a: by[a] for a in opdef.attrs})
    except Exception as e:
        raise NotLowered(f"op {n.op}: eager refuses these operands ({type(e).__name__}: {e})")


def scalar_checks(em: Emitter, block: ir.Block, inputs: list) -> None:
    """The value checks eager makes on a Python-number operand of an integer op (an op's
    `extra["scalar_check"]`: `int_tensor ** -2` raises), emitted before the loops: eager
    raises whatever the size, an empty tensor included."""
    scalars = {p.uid: v for p, v in zip(block.params, inputs)
               if not isinstance(v.type, ir.TensorType)}
    consts = dict(em.consts)
    for n in block.nodes:
        if n.op == "prim::Constant":
            consts[n.output.uid] = n.attrs.get("value")
            continue
        opdef = registry.OPS.get(n.op)
        chk = opdef.extra.get("scalar_check") if opdef is not None else None
        if chk is None:
            continue
        slot, cond, msg = chk
        v = dict(zip(opdef.params, n.inputs))[slot]
        r = elementwise_dtypes(opdef, n.inputs)
        if isinstance(v.type, ir.TensorType) or r is None or r[0].category > dt.INT:
            continue
        if v.uid in consts:
            c = consts[v.uid]
            if isinstance(c, bool) or not isinstance(c, int):
                continue
            expr = str(int(c))
        elif v.uid in scalars and isinstance(v.type, ir.IntType):
            expr = em.name(scalars[v.uid])
        else:
            continue
        em.emit(f"if {cond.format(**{slot: expr})}:")
        em.indent += 1
        em.raise_("RuntimeError", msg)
        em.indent -= 1
