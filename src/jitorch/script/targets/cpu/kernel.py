"""Kernels: the unit of compilation and caching of a CPU program.

Owns `outline(em, n, lower)`: the code of one compute node of a graph (a fused elementwise group,
a reduction, a row region, a matmul or conv, a copy, an index op, a factory) is generated into a
`KernelEmitter` of its own, becomes a small `njit(nogil=True)` function in a module of its own,
and the program's entry calls it. A kernel's module is named by the hash of its source (through
`cache.module_name`, so library versions and imported helpers are in the name too), and its
source is canonical: arguments are `p0, p1, ...` in order of first use, locals come from the
kernel's own counter, constants are literals. So the source, and therefore the name, is a
function of what the kernel computes (its ops, dtypes, ranks, static attributes and broadcast
pattern) and never of the graph, its value names or the model it came from: layer 2 of a model
calls layer 1's kernels, and every process of the machine loads them from Numba's disk cache.

How a kernel reads the entry's values: its emitter has a `names` table that falls back to the
entry's (`_Names`): a value the kernel does not define becomes a parameter, and the entry passes
the expression it holds for it. `x.shape` lists (`shapes`) map the same way; compile-time values
(`consts`) and the value lists of tuples and lists are shared with the entry. Outputs the kernel
defines are returned as one tuple and bound to fresh names in the entry.

What stays in the entry: structural and scalar nodes (`prim::*` other than fused groups), control
flow (each branch and loop body calls its own kernels), argument checks, nodes whose code is
no more than an expression (a shape query, an alias), and a call of a convolution, pooling or
dropout-mask library function with no loop around it (`_library_call`), which are lowered in
the entry directly.

Why (NUMBA_NOTES.md, "Compile cost at model scale"): Numba's compile time grows faster than
linearly with the size of one function and follows the number of *distinct* functions it compiles;
splitting pays only because identical kernels are compiled once.
"""
from __future__ import annotations

import re

from ... import ir
from ...codegen import literal
from ...kernels import llvm_pipelines


class _FromEntry(dict):
    """A kernel's table of values (uid -> what holds it) that falls back to the entry's: what
    the kernel reads from there goes through `to_param`, which makes its run-time expressions
    parameters of the kernel."""

    def __init__(self, parent_table, to_param):
        super().__init__()
        self._parent, self._to_param = parent_table, to_param

    def own(self, uid) -> bool:
        return dict.__contains__(self, uid)

    def __contains__(self, uid):
        return dict.__contains__(self, uid) or uid in self._parent

    def __getitem__(self, uid):
        if dict.__contains__(self, uid):
            return dict.__getitem__(self, uid)
        return self._to_param(self._parent[uid])

    def get(self, uid, default=None):
        return self[uid] if uid in self else default


def _kernel_emitter_class():
    from ...codegen.emitter import Emitter

    class KernelEmitter(Emitter):
        """The emitter of one kernel: its own lines, globals, helpers and exceptions; values
        of the entry (`parent`) arrive as parameters."""

        def __init__(self, parent):
            super().__init__(parent.target)
            self.parent = parent
            self.params: list = []   # parameter names, in order of first use
            self.args: list = []     # the entry's expression passed for each
            self._param_of: dict = {}
            self.names = _FromEntry(parent.names, self.param)
            # (array expression, rank, ...) of `x.shape` lists and chunk lists
            self.shapes = _FromEntry(parent.shapes, self._array_param)
            self.chunks = _FromEntry(parent.chunks, self._array_param)
            self.consts = parent.consts      # compile-time values: shared
            self.tuples = parent.tuples      # (lists of IR values: shared)
            self.lists = parent.lists
            self.writes_arguments = parent.writes_arguments
            self.top_names = {}  # shape code named once (Emitter.named)

        def param(self, expr: str) -> str:
            p = self._param_of.get(expr)
            if p is None:
                p = self._param_of[expr] = literal.Ident(f"p{len(self.params)}")
                self.params.append(p)
                self.args.append(expr)
            return p

        def run_time(self, expr: str) -> str:  # (Emitter.run_time: a parameter)
            return self.param(expr)

        def _array_param(self, entry):
            return (self.param(entry[0]), *entry[1:])

    return KernelEmitter


_KE = None


def is_compute(n: ir.Node) -> bool:
    """Nodes whose code becomes a kernel: every op but the structural/scalar prims and the shape
    ops lowered in the entry (lower_shape.in_entry)."""
    from .lower_shape import in_entry
    if "lower" in n.attrs or "lowering" in n.attrs or n.op == "prim::Fused":
        return True
    return not n.op.startswith("prim::") and not in_entry(n)


def worth_kernels(graph: ir.Graph) -> bool:
    """A program of one compute node is generated as one function: as a kernel it would cost
    two Numba compiles (the kernel and an entry calling it) for nothing to share within the
    program (most of a test suite's programs, and small scripted functions, are of this kind)."""
    def count(block):  # (a fused group's body is its own kernel's business)
        return sum(1 if is_compute(n) else sum(count(b) for b in n.blocks) for n in block.nodes)
    return count(graph.block) > 1


def outline(em, n: ir.Node, lower) -> None:
    """Lower node `n` (with `lower(emitter, n)`) as a kernel called from `em`'s entry
    (through kernel_call.py: `_kX(args...)`)."""
    global _KE
    if _KE is None:
        _KE = _kernel_emitter_class()
    ke = _KE(em)
    lower(ke, n)
    if not _worth_a_kernel(ke) or _library_call(ke) or \
            any(uid in em.names for uid in dict.keys(ke.names)):
        # (the second: a lowering that rebinds a value of the entry, which a kernel's return
        # values would not carry back: none does today; this keeps it correct if one does)
        lower(em, n)
        return
    rets, binds = [], []  # kernel-side expressions returned; (value, table) bound after
    for o in n.outputs:
        if ke.names.own(o.uid):
            rets.append(dict.__getitem__(ke.names, o.uid))
            binds.append((o, "names", None))
        elif ke.shapes.own(o.uid) or ke.chunks.own(o.uid):
            table = "shapes" if ke.shapes.own(o.uid) else "chunks"
            xs, *rest = dict.__getitem__(getattr(ke, table), o.uid)
            if xs in ke.params:  # the entry's own array: no need to return it
                getattr(em, table)[o.uid] = (ke.args[ke.params.index(xs)], *rest)
            else:
                rets.append(xs)
                binds.append((o, table, rest))
        # anything else is compile-time (consts) or a list of values (tuples, lists): shared
    source = kernel_source(ke, rets)
    call = f"{kernel_alias(em, source, len(ke.args))}({', '.join(ke.args)})"
    if not rets:
        em.emit(call)
        return
    outs = [em.fresh("k") for _ in rets]
    em.emit(f"{outs[0] if len(outs) == 1 else ', '.join(outs)} = {call}")
    for (o, table, rest), name in zip(binds, outs):
        if table == "names":
            em.bind(o, name)
        else:
            getattr(em, table)[o.uid] = (name, *rest)


def _worth_a_kernel(ke) -> bool:
    """Whatever emits code is a kernel, straight-line code included (a checked narrow; a node
    bound to an expression, e.g. a transpose that is the identity, emits nothing and is
    lowered in the entry): measured on a Transformer encoder's training step, keeping
    straight-line nodes in the entry cut the number of kernels from 67 to 39 but made the
    entries so much longer that a 2-layer model whose kernels were all cached compiled in 54
    CPU-s instead of 10 (Numba's time per line grows with the length of the function; a kernel's is paid once)."""
    return bool(ke.lines)


def _library_call(ke) -> bool:
    """A node whose code is a call of a library function that `lower_conv.import_kernels`
    imported (conv.py's convolutions, pool.py's pooling, random.py's dropout mask, through
    their symbols) with no loop of its own around it: argument checks, a contiguous operand,
    the call, all specialised on the node's strides, padding and sizes. It is lowered in the
    entry: such a kernel rarely recurs in a program, and as a kernel it cost a Numba compile
    of its own (~0.1-0.2 CPU-s) for what the entry holds in a few lines. A CNN train step: 22
    kernels instead of 25, their compile 2.9-3.0 instead of 3.4-3.8 CPU-s, the entries'
    0.7-0.8 as before (bench/compile_profile.py, 2026-12-07). A matmul's call stays a kernel:
    every Linear of the same layout calls the same one."""
    return getattr(ke, "library_call", False) and \
        not any(_LOOP.match(line) for line in ke.lines)


_LOOP = re.compile(r"^\s*(for|while)\b")


def kernel_decorator() -> str:
    """An entry's decorator (program.DECORATOR, which has no cfunc wrapper already) with
    kernel_call.NATIVE_ONLY's options: a kernel is only ever called through its symbol by native
    code (kernel_call.py), never from Python or as a C callback, and Numba otherwise builds a
    CPython wrapper (unboxing each argument, boxing the returned tuple) for every function it
    compiles: typed, lowered and turned into machine code for nothing
    (bench/compile_profile.py). The dispatcher of such a module compiles and loads from disk
    as before; calling it from Python is not possible (its Python entry point is null)."""
    from ...kernels.kernel_call import NATIVE_ONLY
    from .program import DECORATOR
    assert DECORATOR.endswith(")")
    extra = "".join(f", {k}={v!r}" for k, v in NATIVE_ONLY.items() if f"{k}=" not in DECORATOR)
    return DECORATOR[:-1] + extra + ")"


def kernel_source(ke, rets) -> str:
    """The kernel's module: its loop nest as `kernel` (through the lean compiler when it is on:
    lean.function_text)."""
    from . import lean
    from .module_text import module_head
    head, body = module_head(ke)
    # (its LLVM pipeline: llvm_pipelines.py)
    head += llvm_pipelines.mark_line(llvm_pipelines.KERNEL) + "\n"
    nest = "\n".join(body) + "\n" + f"    return {_returned(rets)}\n"
    return head + "\n\n" + lean.function_text(kernel_decorator(), "kernel",
                                                ", ".join(ke.params), nest)


def _returned(rets) -> str:
    """One value is returned as itself (no tuple to unpack at each call site)."""
    return rets[0] if len(rets) == 1 else f"({''.join(r + ', ' for r in rets)})"


def kernel_alias(em, source: str, nargs: int) -> str:
    """The entry's name for the kernel of `source`, importing its module once per entry."""
    from ...kernels import cache
    module = cache.module_name(cache.prepare_source(source))
    alias = literal.Ident("_k" + module[len(cache.MODULE_PREFIX):][:16])
    if module not in em.kernels:
        if not em.kernels:
            em.globals.append(f"from {CALLER} import caller")
        em.kernels[module] = source
        em.globals.append(f"{alias} = caller({literal.text(module)}, {literal.integer(nargs)})")
    return alias


CALLER = "jitorch.script.kernels.kernel_call"  # (kernel_call.py: calls through symbols)
