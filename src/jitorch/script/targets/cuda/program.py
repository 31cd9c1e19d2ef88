"""A CUDA program: the generated host entry that checks shapes, allocates and launches kernels.

The entry is a plain Python function (a kernel launch is a host call; Numba's njit cannot make
it), so it holds only what runs once per call: each elementwise group's broadcast checks,
sizes, output allocations (launch.alloc) and launch (launch.launch, kernel.py: one numba.cuda
kernel per group, each in its own content-hashed module that the entry imports); reductions and
row regions (softmax, layer norm) as kernels with a block per output or row (reduce.py,
rows.py, launch.launch_blocks); each other registry op's call to its implementation on the
device arrays (library.py: matmul on cuBLAS, views, index ops); and the program's structure in Python (prims.py: lists, tuples,
shapes, scalars, `if`/`while`). What it cannot lower raises NotLowered naming it and "cuda",
and the runtime runs the graph in the interpreter with that reason.

Programs that write their arguments return the written values as extra outputs (the IR's
writes are functional) and the runtime copies them back (`ScriptFunction._write_back`); the
runtime checks beforehand that written arguments share no memory (`checks_overlap` False).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.elementwise import single_group
from ...codegen.emitter import Emitter, exception_classes
from . import kernel, rows
from .library import lower_library
from .prims import PRIMS, _alias, value
from .target import CUDA

_HEAD = ("import numpy as np\nfrom jitorch.script.targets.cuda.launch import (alloc, launch, "
         "device_constant, host_scalar, implementation, jdevice, jdtype, result, scalar_fn)\n")


@dataclass
class Program:
    source: str
    entry: str
    output_types: list
    kernels: list = field(default_factory=list)  # sources of the kernel modules it imports
    checks_overlap: bool = False  # the runtime checks written arguments (module docstring)

    def listing(self, entry_source: str) -> str:
        """`entry_source` followed by each kernel's module (`fn.code`)."""
        from ...kernels import cache
        return cache.listing(entry_source, self.kernels)

    @property
    def full_source(self) -> str:
        return self.listing(self.source)


def generate(graph: ir.Graph, written=()) -> Program:
    """The CUDA program of `graph` (fused by passes/fuse.py under CUDA's capabilities)."""
    em = Emitter(CUDA)
    args = []
    for i, p in enumerate(graph.inputs):
        if isinstance(p.type, ir.TensorType):
            em.tensor(p)
        elif not isinstance(p.type, (ir.IntType, ir.FloatType, ir.BoolType, ir.NoneType,
                                     ir.ListType, ir.TupleType, ir.OptionalType)):
            raise NotLowered(f"input {i} of type {p.type} is not lowered on cuda")
        nm = literal.Ident(f"a{i}_")  # never the IR's value names (literal.py)
        args.append(nm)
        em.bind(p, nm)
    for n in graph.block.nodes:
        lower_node(em, n)
    outs = [value(em, v) for v in graph.outputs]
    head = _HEAD + "".join(g + "\n" for g in em.globals) + "".join(
        c + "\n" for c in exception_classes(em))
    src = head + "\n\n" + "def entry(" + ", ".join(args) + "):\n" + "\n".join(em.lines) + \
        ("\n" if em.lines else "") + f"    return ({''.join(o + ', ' for o in outs)})\n"
    return Program(src, "entry", [v.type for v in graph.outputs],
                   kernels=list(em.kernels.values()))


def lower_block(em: Emitter, block: ir.Block, inputs, bound=None) -> list:
    """Lower `block`'s nodes where `em` stands, its params bound to `bound` names (first) or
    standing for `inputs`; -> its returned values."""
    for k, p in enumerate(block.params):
        if bound is not None and k < len(bound):
            em.bind(p, bound[k])
        else:
            _alias(em, p, inputs[k])
    for n in block.nodes:
        lower_node(em, n)
    return list(block.returns)


def lower_node(em: Emitter, n: ir.Node) -> None:
    from ...codegen.lowering import lowering_for
    for o in n.outputs:
        _on_this_device(o)
    if n.op == "prim::Fused":
        if n.attrs.get("kind") == "rows":  # a block per row (rows.py)
            rows.lower_rows(em, n.blocks[0], list(n.inputs), list(n.outputs))
            return
        if n.attrs.get("kind") not in (None, "elementwise"):
            raise NotLowered(f"fused {n.attrs.get('kind')} groups are not lowered on cuda")
        kernel.lower_group(em, n.blocks[0], list(n.inputs), list(n.outputs))
        return
    prim = PRIMS.get(n.op)
    if prim is not None:
        prim(em, n)
        return
    if n.op.startswith("prim::"):
        raise NotLowered(f"op {n.op} is not lowered on cuda")
    fn = lowering_for(n.op, em.target)  # the target's own kernels (codegen/lowering.py)
    if fn is not None:
        fn(em, n)
        return
    group = single_group(em, n)
    if group is not None:
        kernel.lower_group(em, *group)
        return
    lower_library(em, n)


def _on_this_device(v: ir.Value) -> None:
    """Every tensor a CUDA program makes lives on the device: a value the types put elsewhere
    (a factory without `device=`, on the CPU as in eager) is the interpreter's, which mixes
    devices as eager does (0-d CPU tensors) or raises PyTorch's error."""
    t = v.type
    if isinstance(t, ir.TensorType) and t.device.split(":")[0] != "cuda":
        raise NotLowered(f"a tensor on {t.device} in a cuda program ({v})")
