"""`SummaryWriter.add_graph`: the IR of a scripted or traced function/module as a GraphDef.

TensorBoard's graph plugin draws a GraphDef: one NodeDef per IR node (its op type is the IR
op, `aten`-style names as in the printed graph), inputs named by the producing node, output
shapes in `_output_shapes` (-1 for a dimension the IR leaves symbolic) and the node's
attributes as text. Graph inputs and outputs are "IO Node"s under `input/` and `output/`, as in
PyTorch's graphs. A `prim::CallFunction` (a submodule's forward, a called scripted function) is
expanded under a name scope of the callee (`M.forward/Linear.forward/matmul_0`), which gives
the module hierarchy; nested blocks (if / loop bodies) are scoped under their node.
"""
from __future__ import annotations

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from ...script import ir

_MAX_DEPTH = 32  # nested calls expanded before a call is drawn as one node


def graph_of(model, input_to_model=None) -> ir.Graph:
    """The IR to draw: a ScriptFunction's or ScriptModule's forward graph; a plain
    nn.Module or function is traced with `input_to_model` first (as PyTorch's add_graph)."""
    g = getattr(model, "graph", None)
    if isinstance(g, ir.Graph):
        return g
    fwd = getattr(model, "forward", None)
    if isinstance(getattr(fwd, "graph", None), ir.Graph):
        return fwd.graph
    if input_to_model is None:
        raise ValueError("add_graph(): a model that is not scripted or traced needs "
                         "input_to_model to trace it")
    from ... import jit
    args = input_to_model if isinstance(input_to_model, tuple) else (input_to_model,)
    traced = jit.trace(model, args if len(args) > 1 else args[0])
    return graph_of(traced)


def _shape_attr(types) -> AttrValue:
    shapes = []
    for t in types:
        dims = []
        if isinstance(t, ir.TensorType) and t.shape is not None:
            dims = [TensorShapeProto.Dim(size=d if isinstance(d, int) else -1) for d in t.shape]
        shapes.append(TensorShapeProto(dim=dims, unknown_rank=isinstance(t, ir.TensorType)
                                       and t.shape is None))
    return AttrValue(list=AttrValue.ListValue(shape=shapes))


def _attr_text(attrs: dict) -> str:
    parts = []
    for k, v in attrs.items():
        if isinstance(v, ir.Graph):
            v = "@" + v.name
        elif callable(v):
            v = getattr(v, "__qualname__", type(v).__name__)
        parts.append(f"{k}={v}")
    return "{" + ", ".join(parts) + "}"


class _Builder:
    def __init__(self):
        self.nodes: list = []
        self.counts: dict = {}

    def add(self, name, op, inputs, types, attrs=None) -> str:
        n = NodeDef(name=name, op=op, input=list(inputs))
        n.attr["_output_shapes"].CopyFrom(_shape_attr(types))
        n.attr["type"].CopyFrom(AttrValue(s=", ".join(str(t) for t in types).encode()))
        if attrs:
            n.attr["attr"].CopyFrom(AttrValue(s=_attr_text(attrs).encode()))
        self.nodes.append(n)
        return name

    def fresh(self, scope, op) -> str:
        base = f"{scope}/{op}"
        k = self.counts.get(base, 0)
        self.counts[base] = k + 1
        return f"{base}_{k}"

    def block(self, block: ir.Block, scope: str, names: dict, depth: int) -> list:
        """Draw `block`'s nodes (params already named in `names`); -> its returns' names."""
        for node in block.nodes:
            ins = [names[v] for v in node.inputs if v in names]
            callee = node.attrs.get("fn") if node.op == "prim::CallFunction" else None
            if isinstance(callee, ir.Graph) and depth < _MAX_DEPTH:
                sub = f"{scope}/{callee.name}"
                inner = {}
                for p, src in zip(callee.inputs, node.inputs):
                    if src in names:
                        inner[p] = names[src]
                outs = self.block(callee.block, sub, inner, depth + 1)
                for o, src in zip(node.outputs, outs):
                    names[o] = src
                continue
            name = self.fresh(scope, node.op)
            self.add(name, node.op, ins, [o.type for o in node.outputs], node.attrs)
            for k, b in enumerate(node.blocks):
                bscope = f"{name}/block{k}"
                inner = dict(names)
                for j, p in enumerate(b.params):
                    inner[p] = self.add(f"{bscope}/param_{j}", "prim::Param", [], [p.type])
                rets = self.block(b, bscope, inner, depth)
                self.add(f"{bscope}/return", "prim::Return", rets, [r.type for r in b.returns])
            for o in node.outputs:
                names[o] = name
        return [names[v] for v in block.returns if v in names]


def graph_def(graph: ir.Graph) -> GraphDef:
    b = _Builder()
    names: dict = {}
    for i, v in enumerate(graph.inputs):
        names[v] = b.add(f"input/{v.name or f'input.{i}'}", "IO Node", [], [v.type])
    outs = b.block(graph.block, graph.name, names, 0)
    for i, (src, v) in enumerate(zip(outs, graph.outputs)):
        b.add(f"output/output.{i + 1}", "IO Node", [src], [v.type])
    return GraphDef(node=b.nodes, versions=VersionDef(producer=22))
