"""The IR verifier: checks the structural invariants every pass must keep (see ir/__init__.py).

Owns `verify(graph, closed=True) -> graph` (raises `VerifyError` naming the node, its position
and source location) and `EXTRA_OPS`, a set other parts may extend with op names that are
neither registry ops nor `ir.PRIM_OPS` (e.g. ops a backend introduces).

Checked:
- SSA: every Value is defined once (a node output or a block param) and `value.node` is its
  defining node (None for params);
- scoping: a value is defined before its use; blocks are closed (a block reads only its params
  and values defined in it) unless `closed=False`, which also admits values of enclosing
  blocks (what frontends build before `ir_util.close_block`);
- ops: a registry op has exactly `len(OPS[op].params)` inputs and no blocks; prim ops have the
  arity and attributes their conventions need; only If/Loop/Fused own blocks;
- control flow: prim::If has (cond, *captured) and two blocks each taking the captured values
  and returning one value per output; prim::Loop has (trip, cond, *carried, *captured) and a
  body taking (i, *carried, *captured) and returning (cond, *carried_next); prim::Fused's
  block takes one param per input and returns one value per output;
- returns: every block return (the graph's too) is a value visible at the end of its block.
"""
from __future__ import annotations

from ..._ops import registry
from .. import ir


class VerifyError(Exception):
    pass


EXTRA_OPS: set = set()

_PRIM_ARITY = {  # op -> (min inputs, max inputs or None, n outputs or None)
    "prim::Constant": (0, 0, 1),
    "prim::TupleConstruct": (0, None, 1),
    "prim::ListConstruct": (0, None, 1),
    "prim::DictConstruct": (0, None, 1),
    "prim::TupleUnpack": (1, 1, None),
    "prim::ListUnpack": (1, 1, None),
    "prim::TupleIndex": (2, 2, 1),
    "prim::GetAttr": (1, 1, 1),
    "prim::TensorToScalar": (1, 1, 1),
    "prim::Assert": (1, 2, None),
    "prim::ScalarOp": (1, None, 1),
}
_REQUIRED_ATTRS = {"prim::Constant": ("value",), "prim::GetAttr": ("name",),
                   "prim::ScalarOp": ("fn",), "prim::CallFunction": ("fn",),
                   "prim::PythonOp": ("fn",)}
_BLOCK_OPS = {"prim::If": 2, "prim::Loop": 1, "prim::Fused": 1}


def verify(graph: ir.Graph, closed: bool = True) -> ir.Graph:
    """Check `graph`; returns it unchanged (so the verifier is also a pass)."""
    _Verifier(graph, closed).run()
    return graph


class _Verifier:
    def __init__(self, graph: ir.Graph, closed: bool):
        self.graph = graph
        self.closed = closed
        self.defined: set = set()

    def fail(self, msg: str, node: ir.Node | None = None, where: str = ""):
        at = ""
        if node is not None:
            at = f" at node {node.op}{where}"
            if node.loc is not None:
                at += f" ({node.loc})"
        raise VerifyError(f"IR verification failed in graph @{self.graph.name}{at}: {msg}")

    def run(self):
        self.block(self.graph.block, [], "top block")

    def define(self, v: ir.Value, node, what: str, where: str):
        if not isinstance(v, ir.Value):
            self.fail(f"{what} is not a Value: {v!r}", node, where)
        if v in self.defined:
            self.fail(f"{what} {v!r} is defined more than once", node, where)
        self.defined.add(v)
        if v.node is not node:
            self.fail(f"{what} {v!r} does not point back to its defining node", node, where)

    def block(self, block: ir.Block, outer: list, where: str):
        visible = set()
        for p in block.params:
            self.define(p, None, "block param", "")
            visible.add(p)
        scopes = outer + [visible]

        def check_use(v, node, what):
            if not isinstance(v, ir.Value):
                self.fail(f"{what} is not a Value: {v!r}", node, f" in {where}")
            if v in visible:
                return
            if not self.closed and any(v in s for s in outer):
                return
            if v in self.defined:
                self.fail(f"{what} {v!r} is defined outside this block (blocks are closed: "
                          "pass it in as a captured input)" if self.closed else
                          f"{what} {v!r} is not visible here", node, f" in {where}")
            self.fail(f"{what} {v!r} is used before it is defined", node, f" in {where}")

        for k, n in enumerate(block.nodes):
            here = f" (#{k} in {where})"
            for i, v in enumerate(n.inputs):
                check_use(v, n, f"input {i}")
            self.node(n, scopes, here)
            for o in n.outputs:
                self.define(o, n, "output", here)
                visible.add(o)
        for i, v in enumerate(block.returns):
            check_use(v, None, f"return {i} of {where}")

    def node(self, n: ir.Node, scopes: list, here: str):
        op = n.op
        if not isinstance(op, str):
            self.fail("op name is not a string", n, here)
        nin, nout = len(n.inputs), len(n.outputs)
        if not op.startswith("prim::"):
            opdef = registry.OPS.get(op)
            if opdef is None:
                if op in EXTRA_OPS:
                    return self.sub_blocks(n, scopes, here)
                self.fail("unknown op (not in the registry, ir.PRIM_OPS or verify.EXTRA_OPS)",
                          n, here)
            if nin != len(opdef.params):
                self.fail(f"takes {len(opdef.params)} inputs {opdef.params}, got {nin}", n, here)
            if n.blocks:
                self.fail("a registry op has no blocks", n, here)
            if nout < 1:
                self.fail("a registry op has at least one output", n, here)
            return
        if op not in ir.PRIM_OPS and op not in EXTRA_OPS:
            self.fail("unknown prim op", n, here)
        for a in _REQUIRED_ATTRS.get(op, ()):
            if a not in n.attrs:
                self.fail(f"missing attribute {a!r}", n, here)
        arity = _PRIM_ARITY.get(op)
        if arity is not None:
            lo, hi, outs = arity
            if nin < lo or (hi is not None and nin > hi):
                self.fail(f"has {nin} inputs, expected {lo}" + ("" if hi == lo else
                          f"..{hi if hi is not None else ''}"), n, here)
            if outs is not None and nout != outs:
                self.fail(f"has {nout} outputs, expected {outs}", n, here)
        if op in _BLOCK_OPS:
            if len(n.blocks) != _BLOCK_OPS[op]:
                self.fail(f"has {len(n.blocks)} blocks, expected {_BLOCK_OPS[op]}", n, here)
            getattr(self, "shape_" + op[6:].lower())(n, here)
        elif n.blocks and op not in EXTRA_OPS:
            self.fail("only prim::If, prim::Loop and prim::Fused own blocks", n, here)
        if op == "prim::CallFunction":
            fn = n.attrs["fn"]
            if isinstance(fn, ir.Graph):
                if nin != len(fn.inputs):
                    self.fail(f"calls @{fn.name} with {nin} arguments, it takes "
                              f"{len(fn.inputs)}", n, here)
                if nout != len(fn.outputs):
                    self.fail(f"has {nout} outputs, @{fn.name} returns {len(fn.outputs)}",
                              n, here)
        if op == "prim::ScalarOp":
            from .interpreter import SCALAR_FNS
            if n.attrs["fn"] not in SCALAR_FNS:
                self.fail(f"unknown scalar function {n.attrs['fn']!r}", n, here)
        self.sub_blocks(n, scopes, here)

    def sub_blocks(self, n: ir.Node, scopes: list, here: str):
        labels = {"prim::If": ("then", "else")}.get(n.op, ("body",) * len(n.blocks))
        for label, b in zip(labels, n.blocks):
            self.block(b, scopes, f"{label} block of {n.op}{here}")

    # -- control-flow conventions -------------------------------------------------------------
    def shape_if(self, n: ir.Node, here: str):
        if not n.inputs:
            self.fail("needs a condition input", n, here)
        cond = n.inputs[0].type
        if isinstance(cond, (ir.TupleType, ir.ListType, ir.DictType, ir.StrType)):
            self.fail(f"condition has type {cond}", n, here)
        for label, b in zip(("then", "else"), n.blocks):
            if len(b.params) != len(n.inputs) - 1:
                self.fail(f"{label} block takes {len(b.params)} params, the node captures "
                          f"{len(n.inputs) - 1} values", n, here)
            if len(b.returns) != len(n.outputs):
                self.fail(f"{label} block returns {len(b.returns)} values, the node has "
                          f"{len(n.outputs)} outputs", n, here)

    def shape_loop(self, n: ir.Node, here: str):
        nc = len(n.outputs)
        if len(n.inputs) < 2 + nc:
            self.fail(f"needs (trip, cond, *carried[{nc}], *captured), got {len(n.inputs)} "
                      "inputs", n, here)
        body = n.blocks[0]
        if len(body.params) != len(n.inputs) - 1:
            self.fail(f"body takes {len(body.params)} params, expected (i, *carried, "
                      f"*captured) = {len(n.inputs) - 1}", n, here)
        if len(body.returns) != 1 + nc:
            self.fail(f"body returns {len(body.returns)} values, expected (cond, *carried) = "
                      f"{1 + nc}", n, here)

    def shape_fused(self, n: ir.Node, here: str):
        b = n.blocks[0]
        if len(b.params) != len(n.inputs):
            self.fail(f"block takes {len(b.params)} params for {len(n.inputs)} inputs", n, here)
        if len(b.returns) != len(n.outputs):
            self.fail(f"block returns {len(b.returns)} values for {len(n.outputs)} outputs",
                      n, here)
