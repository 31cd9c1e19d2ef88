"""`prim::If` for any target whose program is Python-shaped code (the CPU's njit entry, the
CUDA's host entry): the one place that knows how an `if` is emitted.

A static condition lowers only the taken block (its results alias the block's); a run-time one
emits `if cond: ... else: ...`, each branch assigning the node's results to fresh names. An
error branch whose message the program cannot build (a repr, a slice of a string: NotLowered
inside a block that ends in a raise, `ir.util.ends_in_raise`) becomes a hand-over to the
interpreter, which reruns the call and raises the user's error at the user's line. The target
supplies how a block is lowered, how results are assigned and aliased, and how the condition
reads.
"""
from __future__ import annotations

from .. import ir
from ..ir.util import ends_in_raise
from . import NotLowered


def lower_if(em, n: ir.Node, run_block, assign, alias, cond_expr) -> None:
    """`run_block(em, block, inputs) -> returned values`; `assign(em, names, values)`;
    `alias(em, dst, src)`; `cond_expr(em, value) -> str` (called only for a run-time
    condition, after the static case is ruled out)."""
    cond = n.inputs[0]
    if em.is_const(cond):  # a static branch: lower only the taken block
        rets = run_block(em, n.blocks[0 if em.const(cond) else 1], n.inputs[1:])
        for o, r in zip(n.outputs, rets):
            alias(em, o, r)
        return
    outs = [em.fresh("r") for _ in n.outputs]
    em.emit(f"if {cond_expr(em, cond)}:")
    for k, b in enumerate(n.blocks):
        if k == 1:
            em.emit("else:")
        em.indent += 1
        mark = len(em.lines)
        try:
            assign(em, outs, run_block(em, b, n.inputs[1:]))
        except NotLowered:
            if not ends_in_raise(b):
                raise
            del em.lines[mark:]
            em.raise_in_interpreter()
        if not outs:
            em.emit("pass")
        em.indent -= 1
    for o, nm in zip(n.outputs, outs):
        em.bind(o, nm)
