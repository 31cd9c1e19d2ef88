"""The IR's printed form: stable, one node per line, read back exactly by `ir/parser.py`.

Grammar (indentation is 2 spaces per block level; the parser relies on the tokens, not on it):

    graph   := "graph @" NAME "(" params ")" " {" NL node* "  return (" values ")" NL "}"
    params  := [ VALUE ":" TYPE ("," VALUE ":" TYPE)* ]
    node    := [ outs " = " ] OP [ "[" attrs "]" ] "(" values ")" [ " {" NL block+ "}" ] NL
    outs    := VALUE ":" TYPE ("," VALUE ":" TYPE)*
    block   := LABEL "(" params "):" NL node* "-> (" values ")" NL
    attrs   := KEY "=" LITERAL ("," KEY "=" LITERAL)*
    VALUE   := "%" NAME          TYPE := see ir.Type.__str__ (f32[?,8], int, List[int], ...)
    LITERAL := a Python literal (repr of int/float/bool/str/None/tuple/list/dict, also inf,
               nan, complex), a dtype `jitorch.float32`, a device `device(type='cpu')`,
               `@name` for a graph or callable, `Tensor(f32[2,3])` for a tensor constant
               (a placeholder: the data is not printed), or `{block}`

Values are numbered in definition order (%0, %1, ...) unless they carry a name hint that is a
valid identifier and not yet used (graph inputs keep the user's argument names).
"""
from __future__ import annotations

from ... import _dtype as dt
from ..._tensor import Tensor
from .. import ir

BLOCK_LABELS = {"prim::If": ("then", "else"), "prim::Loop": ("body",),
                "prim::Fused": ("body",)}


class _Namer:
    def __init__(self):
        self.names: dict = {}
        self.used: set = set()
        self.counter = 0

    def __call__(self, v: ir.Value) -> str:
        n = self.names.get(v.uid)
        if n is None:
            hint = v.name
            if hint and hint.isidentifier() and hint not in self.used and not hint.isdigit():
                n = hint
            else:
                while str(self.counter) in self.used:
                    self.counter += 1
                n = str(self.counter)
                self.counter += 1
            self.used.add(n)
            self.names[v.uid] = n
        return "%" + n


def format_literal(v) -> str:
    if isinstance(v, Tensor):  # data is not printed: a placeholder the parser keeps as one
        return "Tensor(" + str(ir.TensorType(v._dtype, v._data.shape)) + ")"
    if isinstance(v, dt.dtype):
        return repr(v)  # jitorch.float32
    if isinstance(v, ir.Graph):
        return "@" + v.name
    if isinstance(v, ir.Block):
        return "{block}"
    if isinstance(v, float):
        r = repr(v)
        return r
    if isinstance(v, (int, bool, str, type(None))):
        return repr(v)
    if isinstance(v, tuple):
        return "(" + ", ".join(format_literal(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, list):
        return "[" + ", ".join(format_literal(x) for x in v) + "]"
    if callable(v):
        return "@" + getattr(v, "__qualname__", getattr(v, "__name__", "fn"))
    return repr(v)


def print_graph(g: ir.Graph) -> str:
    name = _Namer()
    lines = []
    params = ", ".join(f"{name(p)}: {p.type}" for p in g.block.params)
    lines.append(f"graph @{g.name}({params}) {{")
    _print_nodes(g.block.nodes, name, lines, "  ")
    lines.append(f"  return ({', '.join(name(v) for v in g.block.returns)})")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _print_nodes(nodes, name, lines, ind):
    for n in nodes:
        head = ""
        if n.outputs:
            head = ", ".join(f"{name(o)}: {o.type}" for o in n.outputs) + " = "
        attrs = ""
        plain = {k: v for k, v in n.attrs.items() if not isinstance(v, ir.Block)}
        if plain:
            attrs = "[" + ", ".join(f"{k}={format_literal(v)}" for k, v in plain.items()) + "]"
        args = ", ".join(name(v) for v in n.inputs)
        line = f"{ind}{head}{n.op}{attrs}({args})"
        if n.blocks:
            lines.append(line + " {")
            labels = BLOCK_LABELS.get(n.op, tuple(f"block{i}" for i in range(len(n.blocks))))
            for label, b in zip(labels, n.blocks):
                ps = ", ".join(f"{name(p)}: {p.type}" for p in b.params)
                lines.append(f"{ind}  {label}({ps}):")
                _print_nodes(b.nodes, name, lines, ind + "    ")
                lines.append(f"{ind}    -> ({', '.join(name(v) for v in b.returns)})")
            lines.append(f"{ind}}}")
        else:
            lines.append(line)
