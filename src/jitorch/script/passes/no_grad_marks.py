"""After autodiff, the markers of writes inside `with no_grad():` are values only:
`_no_grad_target(x)` is x and `_no_grad_write(old, new)` is new.

The markers (frontend/alias.py) give such a write eager's autograd meaning: for the autodiff pass
(nothing flows through the write, the tensor keeps its autograd identity) and for the in-place
run (runtime/alias.py, which reads the frontend's graph). A program computes values only, where
each marker would copy a whole tensor, so this pass forwards them. It runs in PIPELINE, and not
among the passes the autodiff runtime runs before it differentiates (`pipeline.BEFORE_AUTODIFF`).
Forwarding x never makes a program write its input: a target's users are functional writes.
"""
from __future__ import annotations

from .. import ir
from ..ir.util import replace_many, walk_blocks

_VALUE = {"_no_grad_target": 0, "_no_grad_write": 1}  # marker -> the operand that is its value


def run(g: ir.Graph) -> ir.Graph:
    mapping = {}
    for b in walk_blocks(g.block):
        keep = []
        for n in b.nodes:
            k = _VALUE.get(n.op)
            if k is None:
                keep.append(n)
            else:
                mapping[n.outputs[0]] = n.inputs[k]
        b.nodes = keep
    replace_many(g, mapping)
    return g
