"""What every target needs to know about a row region (`prim::Fused[kind='rows']`, formed by
passes/fuse_rows.py: softmax, log-softmax, layer norm, RMSNorm, logsumexp): the one
classification of its values, and the broadcast shape of each value it returns.

A value is *full* (it reads a tensor input along the row) or *per-row* (a reduction result, or
computed from per-row values and scalars only); `deps` says which tensor inputs each value
depends on (param uid -> read along the row?). A target's lowering (targets/cpu/lower_rows.py:
loops, targets/cuda/rows.py: a block per row) builds its own schedule on top of this.
"""
from __future__ import annotations

from .. import ir
from ..passes.fuse_rows import ROW_REDUCE
from . import NotLowered
from .casts import scalar_dtype
from .elementwise import broadcast_size


class RowPlan:
    """The region's values: full or per-row, dtype, dependencies; `ext` (param, array
    expression, ndim) of its tensor inputs, `scalars` (param, expression, dtype) of its number
    inputs, `nodes` its members (constants in `consts`), `rank` the region's."""

    def __init__(self, em, block: ir.Block, inputs: list):
        on = f" on {em.target.name}"
        self.block = block
        self.consts = dict(em.consts)
        self.ext, self.scalars = [], []
        self.full, self.deps, self.dtype = {}, {}, {}
        self.rank = next((em.tensor(n.inputs[0]).ndim for n in block.nodes
                          if n.op in ROW_REDUCE), None)
        if not self.rank:
            raise NotLowered("row region without a reduction" + on)
        for p, v in zip(block.params, inputs):
            if isinstance(v.type, ir.TensorType):
                t = em.tensor(v)
                if t.ndim > self.rank:
                    raise NotLowered("row region input of higher rank than the region" + on)
                self.ext.append((p, em.name(v), t.ndim))
                self.full[p.uid] = t.ndim > 0
                self.deps[p.uid] = {p.uid: t.ndim > 0}
                self.dtype[p.uid] = t.dtype
            elif isinstance(v.type, (ir.IntType, ir.FloatType, ir.BoolType)):
                self.scalars.append((p, em.name(v), scalar_dtype(v.type)))
                self.full[p.uid], self.deps[p.uid] = False, {}
            else:
                raise NotLowered(f"row region input of type {v.type}" + on)
        self.nodes = []
        for n in block.nodes:
            if n.op == "prim::Constant":
                self.consts[n.output.uid] = n.attrs.get("value")
                continue
            self.nodes.append(n)
            ins = self.operands(n)
            if any(v.uid not in self.full for v in ins):
                raise NotLowered("row region member reads a value from outside" + on)
            o = n.outputs[0]
            self.dtype[o.uid] = em.tensor(o).dtype
            dep: dict = {}
            for v in ins:
                for k, f in self.deps[v.uid].items():
                    dep[k] = dep.get(k, False) or f
            if n.op in ROW_REDUCE:
                if em.tensor(n.inputs[0]).ndim != self.rank:
                    raise NotLowered("row region reductions of different ranks" + on)
                self.full[o.uid] = False
                dep = {k: False for k in dep}
            else:
                self.full[o.uid] = any(self.full[v.uid] for v in ins)
            self.deps[o.uid] = dep
        self.returns = list(block.returns)
        for r in self.returns:
            if r.uid not in self.dtype or em.tensor(r).ndim != self.rank:
                raise NotLowered("row region returns a value it does not compute" + on)

    def operands(self, n: ir.Node) -> list:
        """`n`'s inputs that are values of the region (not constants)."""
        return [v for v in n.inputs if v.uid not in self.consts]

    def passes(self) -> list:
        """The reductions of full values, in order: each is a pass over the row."""
        return [n for n in self.nodes if n.op in ROW_REDUCE and self.full[n.inputs[0].uid]]


def output_shape(em, plan: RowPlan, r: ir.Value) -> tuple:
    """(size expressions, 0/1 multiplier names) of returned value `r`: the broadcast shape of
    the inputs it depends on (the last dim only of those it reads along the row), the
    multipliers emitted into `em`."""
    dep, rank = plan.deps[r.uid], plan.rank
    parts, om = [], []
    for d in range(rank):
        sd = broadcast_size(em, [f"{x}.shape[{d - (rank - rr)}]" for p, x, rr in plan.ext
                                 if p.uid in dep and d - (rank - rr) >= 0 and
                                 (d < rank - 1 or dep[p.uid])])
        parts.append(sd)
        om.append(em.named("m", f"int({sd} != 1)"))
    return parts, om
