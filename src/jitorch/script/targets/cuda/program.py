"""A CUDA program: the generated host entry that checks shapes, allocates and launches kernels.

The entry is a plain Python function (a kernel launch is a host call; Numba's njit cannot make
it), so it holds only what runs once per call: the broadcast checks and sizes of each group,
its outputs' allocations (launch.alloc) and its launch (launch.launch). The compute is in the
kernels (kernel.py), one per elementwise group, each in its own content-hashed module that the
entry imports. What the graph holds besides elementwise groups, scalar constants and tensor and
number inputs is not lowered yet: NotLowered names it and "cuda", and the runtime runs the
graph in the interpreter with that reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...._tensor import Tensor
from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.elementwise import single_group
from ...codegen.emitter import Emitter, exception_classes
from . import kernel
from .target import CUDA

_HEAD = "import numpy as np\nfrom jitorch.script.targets.cuda.launch import alloc, launch\n"


@dataclass
class Program:
    source: str
    entry: str
    output_types: list
    kernels: list = field(default_factory=list)  # sources of the kernel modules it imports
    checks_overlap: bool = False  # (it writes no argument)

    def listing(self, entry_source: str) -> str:
        """`entry_source` followed by each kernel's module (`fn.code`)."""
        from ...kernels import cache
        return cache.listing(entry_source, self.kernels)

    @property
    def full_source(self) -> str:
        return self.listing(self.source)


def generate(graph: ir.Graph, written=()) -> Program:
    """The CUDA program of `graph` (fused by passes/fuse.py under CUDA's capabilities)."""
    if written:
        raise NotLowered("programs that write their arguments are not lowered on cuda yet")
    em = Emitter(CUDA)
    args = []
    for i, p in enumerate(graph.inputs):
        if isinstance(p.type, ir.TensorType):
            em.tensor(p)
        elif not isinstance(p.type, (ir.IntType, ir.FloatType, ir.BoolType, ir.NoneType)):
            raise NotLowered(f"input {i} of type {p.type} is not lowered on cuda")
        nm = literal.Ident(f"a{i}_")  # never the IR's value names (literal.py)
        args.append(nm)
        em.bind(p, nm)
    for n in graph.block.nodes:
        lower_node(em, n)
    outs = []
    for v in graph.outputs:
        if v.uid in em.consts and em.consts[v.uid] is None:
            outs.append("None")
        elif v.uid in em.consts and not isinstance(em.consts[v.uid], (bool, int, float)):
            raise NotLowered("a constant output is not lowered on cuda")
        else:
            outs.append(em.name(v))
    head = _HEAD + "".join(g + "\n" for g in em.globals) + "".join(
        c + "\n" for c in exception_classes(em))
    src = head + "\n\n" + "def entry(" + ", ".join(args) + "):\n" + "\n".join(em.lines) + \
        ("\n" if em.lines else "") + f"    return ({''.join(o + ', ' for o in outs)})\n"
    return Program(src, "entry", [v.type for v in graph.outputs],
                   kernels=list(em.kernels.values()))


def lower_node(em: Emitter, n: ir.Node) -> None:
    if n.op == "prim::Constant":
        value = n.attrs.get("value")
        if isinstance(value, Tensor):
            raise NotLowered("tensor constants are not lowered on cuda yet")
        em.consts[n.output.uid] = value
        return
    if n.op == "prim::Fused":
        kernel.lower_group(em, n.blocks[0], list(n.inputs), list(n.outputs))
        return
    group = single_group(em, n) if not n.op.startswith("prim::") else None
    if group is None:
        raise NotLowered(f"op {n.op} is not lowered on cuda")
    kernel.lower_group(em, *group)
