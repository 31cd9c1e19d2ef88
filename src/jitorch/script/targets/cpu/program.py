"""CPU code generator: a specialised, fused Graph -> the source of one Numba njit(nogil) program.

Owns `generate(graph) -> Program` (the CPU Target's, target.py) and the structural ops; the
`lower_*` modules write into the same `Emitter` (codegen/emitter.py).
The program is one self-contained module (`import numpy as np, numba, math`, plus the float32
fast math functions when `fastmath.py` exists) whose entry function takes NumPy arrays for tensor
inputs and Python numbers for scalars and returns a tuple. Everything is specialised on dtype and
rank only: shapes are read from the arrays at run time, and every size relation the generated
loops rely on (broadcasting, matmul inner dims, reshape sizes, index bounds) is checked at the
point of use with PyTorch's message, so generated code never reads out of bounds. Input arrays
arrive as the caller's arrays, strided or not (the runtime compiles a 'C' and an 'A' overload of
the same source as needed): generated code reads them through their strides and never writes to
them, except for the list-element writes of lower_list.py. A program that writes to arguments
(`written`: graph.mutated_inputs) first checks that those share no memory with another argument
or themselves (`overlap_check`), else raises `ArgumentsOverlap` and the runtime runs the
call in place, as eager would (script/runtime/alias.py).

What cannot be lowered raises `NotLowered(reason)` at generation time; the runtime then runs
the graph with the interpreter. Families live in `lower_elementwise.py`, `lower_reduce.py`,
`lower_linalg.py` and `lower_shape.py`; structural ops (constants, scalars, tuples, if, loop,
`x.shape` / `x.ndim` / `len(x)` queries) are here; scalar arithmetic and `math.*` in
`lower_scalar.py`. A None constant may
be returned (Numba accepts None in the returned tuple): backward graphs return one per input
without grad.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .... import _dtype as dt
from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.emitter import Emitter, static_message
from ...codegen.control import lower_if
from ...kernels import llvm_pipelines
from . import glue_runs, kernel
from .target import CPU

# An entry is called from Python only, never as a C callback: no cfunc wrapper, which Numba
# otherwise types, lowers and turns into machine code for every entry (it takes and returns
# every value, so its cost grows with the entry's arguments and results: ~0.01 of a one-loop
# entry's ~0.13 CPU-s, ~0.5-1 CPU-s of a 2-layer Transformer encoder's cold train step; issue 17)
DECORATOR = ('@numba.njit(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}, '
             'no_cfunc_wrapper=True, cache=False)')
MAX_CONST_ELEMS = 4096  # tensor constants are embedded in the source as literals
OUTLINE = True  # compute nodes become shared kernels (kernel.py); False: one function


@dataclass
class Program:
    source: str
    entry: str
    output_types: list
    helpers: list = field(default_factory=list)  # names imported from fastmath.py
    checks_overlap: bool = False  # the entry checks its written arguments for shared memory
    kernels: list = field(default_factory=list)  # sources of the kernel modules it imports,
    # to be loaded before it, in this order (kernel.py)

    @property
    def full_source(self) -> str:
        """The entry's source followed by its kernels' (what `fn.code` shows)."""
        return self.listing(self.source)

    def listing(self, entry_source: str) -> str:
        """`entry_source` followed by each kernel's module as it is loaded, under a line that
        names the module (`fn.code`)."""
        from ...kernels import cache
        return cache.listing(entry_source, self.kernels)


# --- entry point --------------------------------------------------------------------------------

def generate(graph: ir.Graph, written=()) -> Program:
    """The program of `graph`; `written`: indices of the inputs the caller's function writes
    to (the runtime's `graph.mutated_inputs`), which the program checks for shared memory."""
    em = Emitter(CPU)
    em.outline = OUTLINE and kernel.worth_kernels(graph)
    args = []
    from . import lower_list
    from .lower_overlap import overlap_check
    checked = overlap_check(em, graph, written)
    for i, p in enumerate(graph.inputs):
        t = p.type
        if isinstance(t, ir.TensorType):
            em.tensor(p, complex_ok=True)  # (its consumers check their own operands)
        elif lower_list.is_tensor_list(t):  # a tuple of arrays (lower_list.py)
            lower_list.check_input(em, i, p)
        elif _int_array_input(graph, p):
            em.int_arrays.add(p.uid)  # one int64 array, which its ListUnpacks read (_unpack)
        elif not isinstance(t, (ir.IntType, ir.FloatType, ir.BoolType, ir.NoneType)):
            # (a None argument is unused: types.specialize folded it into a constant)
            raise NotLowered(f"input {i} of type {t} is not lowered")
        nm = literal.Ident(f"a{i}_")  # never the IR's value names (literal.py)
        if lower_list.is_tensor_list(t):
            args.append(nm + "_t")
            lower_list.unpack_input(em, nm + "_t", nm)
        else:
            args.append(nm)
        em.bind(p, nm)
    # (lower_scalar reads it)
    em.writes_arguments = lower_list.check_inplace_lists(graph, em.capabilities)
    if checked:
        checked([em.names.get(p.uid) for p in graph.inputs])
    lower_block(em, graph.block.nodes)
    outs = []
    for v in graph.outputs:
        if v.node is not None and v.node.op == "prim::Constant" and \
                isinstance(v.type, ir.TensorType):
            outs.append(f"{em.name(v)}.copy()")  # never hand out the module's (frozen) global
        elif v.uid in em.consts and em.consts[v.uid] is None:
            outs.append("None")  # e.g. a backward graph's grad of an input without grad
        elif v.uid in em.lists and _is_int_list(v.type) and em.lists[v.uid]:
            # one array, not a tuple of ints: one value to box (an autodiff forward's saved
            # sizes, passes/autodiff_pack.py; the runtime's wrap makes it a list again)
            from . import packed
            outs.append(f"{em.import_name(packed.MODULE, '_jt_pack_ints')}"
                        f"(({''.join(em.name(x) + ', ' for x in em.lists[v.uid])}))")
        else:
            outs.append(em.name(v))
    entry = "entry"  # not the graph's name: identifiers never come from the IR
    from .module_text import module_head
    head, body = module_head(em)
    ret = f"    return ({''.join(o + ', ' for o in outs)})\n"
    if llvm_pipelines.is_glue(em.outline, body):  # (its LLVM pipeline: llvm_pipelines.py)
        n = len(em.globals)  # a run that recurs (a model's layers) is compiled once
        body = glue_runs.outline_repeats(em, args, body, ret, _value_names(em, graph))
        if len(em.globals) != n:  # (the run's alias is a global of the entry's)
            head = module_head(em)[0]
        head += llvm_pipelines.mark_line(llvm_pipelines.GLUE) + "\n"
    from . import lean  # (the entry through the lean compiler when it is on)
    src = head + "\n\n" + lean.function_text(
        DECORATOR, entry, ", ".join(args), "\n".join(body) + ("\n" if body else "") + ret)
    prog = Program(src, entry, [v.type for v in graph.outputs], sorted(em.helpers),
                   checks_overlap=bool(checked), kernels=list(em.kernels.values()))
    return prog


def _value_names(em: Emitter, graph: ir.Graph) -> set:
    """The entry's names bound to a tensor or a number of the graph (what a repeated run may
    take or return, glue_runs.py)."""
    kinds = (ir.TensorType, ir.IntType, ir.FloatType, ir.BoolType)
    out = set()
    for v in [*graph.inputs, *(o for n in graph.nodes() for o in n.outputs)]:
        nm = em.names.get(v.uid)
        if isinstance(nm, str) and nm.isidentifier() and isinstance(v.type, kinds):
            out.add(nm)
    return out


def _is_int_list(t) -> bool:
    return isinstance(t, ir.ListType) and isinstance(t.elem, ir.IntType)


def _int_array_input(graph: ir.Graph, p: ir.Value) -> bool:
    """Is input `p` a `List[int]` that the entry takes as one int64 array (the runtime's
    boundary makes it one, runtime/entry.py)? Only where every use unpacks it (an autodiff
    backward's saved sizes, passes/autodiff_pack.py): no other lowering reads such an array."""
    if not _is_int_list(p.type):
        return False
    used = [n for n in graph.nodes() if any(v is p for v in n.inputs)]
    return bool(used) and all(n.op == "prim::ListUnpack" for n in used) and \
        not any(r is p for r in graph.outputs)


def lower_block(em: Emitter, nodes) -> None:
    for n in nodes:
        lower_node(em, n)


def lower_node(em: Emitter, n: ir.Node) -> None:
    if kernel.is_compute(n) and getattr(em, "outline", False):
        return kernel.outline(em, n, lower_here)  # a kernel of its own (kernel.py)
    lower_here(em, n)


def lower_here(em: Emitter, n: ir.Node) -> None:
    """Lower `n` into `em`'s own function."""
    from . import lower_elementwise
    from ...codegen.lowering import lowering_for
    op = n.op
    if "lowering" in n.attrs:  # a named helper node (autodiff through loops: lower_autodiff.py)
        return lowering_for(n.attrs["lowering"], em.target)(em, n)
    if "lower" in n.attrs:  # a node the code generator planned itself (lower_list.py)
        return n.attrs["lower"](em, n)
    if op.startswith("prim::"):
        fn = _PRIMS.get(op)
        if fn is None:
            raise NotLowered(f"op {op}: no CPU lowering")
        fn(em, n)
        return
    fn = lowering_for(op, em.target)  # the one lowering table (codegen/lowering.py)
    if fn is not None:
        fn(em, n)
        return
    if lower_elementwise.lower_single(em, n):
        return
    raise NotLowered(f"op {op}: no CPU lowering")


# --- structural ops -----------------------------------------------------------------------------

def _tensor_const(em: Emitter, t) -> str:
    arr = np.asarray(t._data, order="C")  # not ascontiguousarray: it makes 0-d arrays 1-d
    d = dt.from_numpy_dtype(arr.dtype)
    if d not in em.capabilities.dtypes:
        raise NotLowered(f"tensor constant of dtype {d} is not lowered")
    if arr.size > MAX_CONST_ELEMS:
        raise NotLowered(f"tensor constant with {arr.size} elements is too large to embed")
    name = f"_C{len(em.globals)}"
    em.globals.append(f"{name} = {literal.array(arr)}")
    return name


def _constant(em: Emitter, n: ir.Node) -> None:
    v = n.attrs.get("value")
    from ...._tensor import Tensor
    if isinstance(v, Tensor):
        em.bind(n.output, _tensor_const(em, v))
    else:
        em.consts[n.output.uid] = v


def _list(em: Emitter, n: ir.Node) -> None:
    if all(em.is_const(v) for v in n.inputs):
        em.consts[n.output.uid] = [em.const(v) for v in n.inputs]
    else:
        em.lists[n.output.uid] = list(n.inputs)


def _tuple(em: Emitter, n: ir.Node) -> None:
    if all(em.is_const(v) for v in n.inputs):
        em.consts[n.output.uid] = tuple(em.const(v) for v in n.inputs)
    else:
        em.tuples[n.output.uid] = list(n.inputs)


def _tuple_index(em: Emitter, n: ir.Node) -> None:
    t, i = n.inputs
    idx = em.const(i)
    if t.uid in em.tuples:
        src = em.tuples[t.uid][idx]
        _alias(em, n.output, src)
    elif t.uid in em.consts:
        em.consts[n.output.uid] = em.consts[t.uid][idx]
    else:
        em.bind(n.output, f"{em.name(t)}[{literal.integer(idx)}]")


def _alias(em: Emitter, dst: ir.Value, src: ir.Value) -> None:
    for table in (em.consts, em.names, em.tuples, em.lists):
        if src.uid in table:
            table[dst.uid] = table[src.uid]
            return
    raise NotLowered(f"value {src} has no lowering")


def _unpack(em: Emitter, n: ir.Node) -> None:
    t = n.inputs[0]
    if t.uid in em.int_arrays:  # a List[int] argument's int64 array (packed.py)
        k, arr = len(n.outputs), em.name(t)
        em.emit(f"if len({arr}) != {k}:")  # (the interpreter raises Python's message)
        em.indent += 1
        em.raise_in_interpreter()
        em.indent -= 1
        from . import packed
        ints = em.named("u", f"{em.import_name(packed.MODULE, '_jt_ints')}({arr}, {k})")
        for j, o in enumerate(n.outputs):
            em.bind(o, f"{ints}[{j}]")
        return
    if t.uid in em.chunks:
        from . import lower_shape
        lower_shape.unpack_chunks(em, em.chunks[t.uid], n.outputs)
        return
    if t.uid in em.shapes:  # `h, w = x.shape`: the rank is part of the specialisation
        xs, rank = em.shapes[t.uid]
        if rank != len(n.outputs):
            raise NotLowered("unpacking a shape of another length")  # the interpreter raises
        for k, o in enumerate(n.outputs):
            em.bind(o, f"{xs}.shape[{k}]")
        return
    if isinstance(t.type, ir.ListType) and not (t.uid in em.lists or t.uid in em.consts):
        # a list of run-time length (a List[Tensor] argument): Python's checks
        k, seq = len(n.outputs), em.name(t)
        em.emit(f"if len({seq}) > {k}:")
        em.indent += 1
        em.raise_("ValueError", f"too many values to unpack (expected {k})")
        em.indent -= 1
        em.emit(f"if len({seq}) < {k}:")
        em.indent += 1
        em.raise_("ValueError", f"not enough values to unpack (expected {k}, got ",
                  (f"len({seq})",), ")")
        em.indent -= 1
    for k, o in enumerate(n.outputs):
        if t.uid in em.tuples:
            _alias(em, o, em.tuples[t.uid][k])
        elif t.uid in em.lists:
            _alias(em, o, em.lists[t.uid][k])
        elif t.uid in em.consts:
            em.consts[o.uid] = em.consts[t.uid][k]
        else:
            em.bind(o, f"{em.name(t)}[{k}]")


def _scalar_op(em: Emitter, n: ir.Node) -> None:
    fn = n.attrs.get("fn")
    if type(fn) is not str:  # fn is pasted below as the name of a builtin: only exact strs
        raise NotLowered("scalar op without a function name")
    if all(em.is_const(v) for v in n.inputs):
        from ...ir.interpreter import SCALAR_OPS
        try:
            em.consts[n.output.uid] = SCALAR_OPS[fn](*[em.const(v) for v in n.inputs])
            return
        except Exception:
            pass
    if fn == "list" and len(n.inputs) == 1 and n.inputs[0].uid in em.shapes:
        em.shapes[n.output.uid] = em.shapes[n.inputs[0].uid]  # list(x.shape): the same sizes
        return
    if fn in ("getitem", "len") and _shape_op(em, n, fn):
        return
    if fn == "getitem" and _const_ints_at(em, n):
        return
    if fn in ("getitem", "len") and n.inputs and isinstance(n.inputs[0].type, ir.ListType):
        from . import lower_list  # a List[Tensor] argument
        if (lower_list.getitem if fn == "getitem" else lower_list.length)(em, n):
            return
    for v in n.inputs:
        if not isinstance(v.type, (ir.IntType, ir.FloatType, ir.BoolType)):
            raise NotLowered(f"scalar op {fn} on {v.type}")
    from . import lower_scalar  # arithmetic with Python's semantics (its guards)
    expr = lower_scalar.expression(em, n, fn, [em.name(v) for v in n.inputs])
    out = em.fresh("s")
    em.emit(f"{out} = {expr}")
    em.bind(n.output, out)


def _const_ints_at(em: Emitter, n: ir.Node) -> bool:
    """`c[i]` of a constant list of ints at a run-time index (a composite's static shape read
    in a loop, `shape[j]`): a tuple literal indexed at run time (Numba bounds-checks it)."""
    seq, i = n.inputs
    if not em.is_const(seq) or not isinstance(i.type, ir.IntType):
        return False
    c = em.const(seq)
    if not isinstance(c, (list, tuple)) or not c or \
            any(type(x) is not int for x in c):
        return False
    _bind_new(em, n.output, f"{literal.value(tuple(c))}[{em.name(i)}]")
    return True


def _getattr(em: Emitter, n: ir.Node) -> None:
    name = n.attrs.get("name")
    x = n.inputs[0]
    if not isinstance(x.type, ir.TensorType):
        raise NotLowered(f"attribute {name} of {x.type}")
    t = em.tensor(x)
    if name == "shape":
        em.shapes[n.output.uid] = (em.name(x), t.ndim)
    elif name == "ndim":
        em.consts[n.output.uid] = t.ndim
    else:
        raise NotLowered(f"attribute {name} of a tensor")


def _shape_op(em: Emitter, n: ir.Node, fn: str) -> bool:
    """`x.shape[i]`, `len(x.shape)`, `len(x)`: True when lowered here."""
    src = n.inputs[0]
    if src.uid in em.shapes:
        xs, rank = em.shapes[src.uid]
    elif fn == "len" and isinstance(src.type, ir.TensorType):
        xs, rank = em.name(src), em.tensor(src).ndim
        if rank == 0:
            raise NotLowered("len() of a 0-d tensor")  # the interpreter raises TypeError
        _bind_new(em, n.output, f"{xs}.shape[0]")
        return True
    else:
        return False
    if fn == "len":
        em.consts[n.output.uid] = rank
        return True
    i = n.inputs[1]
    if not isinstance(i.type, ir.IntType) and not em.is_const(i):
        raise NotLowered(f"shape index of type {i.type}")
    if em.is_const(i):
        k = em.const(i)
        if isinstance(k, bool) or not isinstance(k, int) or not -rank <= k < rank:
            raise NotLowered(f"shape index {k!r}")  # the interpreter raises the error
        _bind_new(em, n.output, f"{xs}.shape[{literal.integer(k % rank)}]")
        return True
    k, out = em.name(i), em.fresh("s")
    em.emit(f"if {k} < -{rank} or {k} >= {rank}:")
    em.indent += 1
    em.raise_("IndexError", "tuple index out of range")
    em.indent -= 1
    em.emit(f"{out} = {xs}.shape[{k} if {k} >= 0 else {k} + {rank}]")
    em.bind(n.output, out)
    return True


def _bind_new(em: Emitter, v: ir.Value, expr: str) -> None:
    # a local, not the expression: the array's name may be rebound later (loop-carried values)
    out = em.fresh("s")
    em.emit(f"{out} = {expr}")
    em.bind(v, out)


def _to_scalar(em: Emitter, n: ir.Node) -> None:
    x = em.name(n.inputs[0])
    em.tensor(n.inputs[0])
    em.emit(f"if {x}.size != 1:")
    em.indent += 1
    em.raise_("RuntimeError", "a Tensor with ", (f"{x}.size",),
              " elements cannot be converted to Scalar")
    em.indent -= 1
    t = n.output.type
    conv = {ir.IntType: "int", ir.FloatType: "float", ir.BoolType: "bool"}.get(type(t))
    if conv is None:
        raise NotLowered(f"item() to {t}")
    expr = f"{conv}({x}.flat[0])"
    if conv == "int" and em.tensor(n.inputs[0]).dtype.category == dt.FLOAT:
        from . import lower_scalar  # Python's int() of a float: nan, inf and huge values
        f = em.fresh("f")
        em.emit(f"{f} = float({x}.flat[0])")
        expr = lower_scalar.to_int(em, f)
    out = em.fresh("s")
    em.emit(f"{out} = {expr}")
    em.bind(n.output, out)


def _run_sub_block(em: Emitter, block: ir.Block, args) -> list:
    """Lower a closed block inline: its params alias `args`; returns its return values."""
    for p, a in zip(block.params, args):
        if isinstance(a, ir.Value):
            _alias(em, p, a)
        else:
            em.bind(p, a)
    lower_block(em, block.nodes)
    return block.returns


def _assign_outputs(em: Emitter, outs, rets) -> None:
    for name, r in zip(outs, rets):
        if isinstance(r.type, ir.TensorType) and r.uid in em.consts:
            em.emit(f"{name} = {_tensor_const(em, em.consts[r.uid])}.copy()")
        else:
            em.emit(f"{name} = {em.name(r)}")


def _if(em: Emitter, n: ir.Node) -> None:
    if not em.is_const(n.inputs[0]):
        for o in n.outputs:
            _check_runtime_type(em, o)
    lower_if(em, n, _run_sub_block, _assign_outputs, _alias, lambda e, c: e.name(c))


def _check_runtime_type(em: Emitter, v: ir.Value) -> None:
    t = v.type
    if isinstance(t, ir.TensorType):
        if t.dtype is None or t.ndim is None or t.dtype not in em.capabilities.dtypes:
            raise NotLowered(f"value {v}: dtype or rank unknown")
    elif isinstance(t, ir.ListType) and isinstance(t.elem, ir.TensorType):
        _check_runtime_type(em, ir.Value(t.elem))  # a list argument carried through control flow
    elif not isinstance(t, (ir.IntType, ir.FloatType, ir.BoolType)):
        raise NotLowered(f"control flow value of type {t}")


def _loop(em: Emitter, n: ir.Node) -> None:
    nc = len(n.outputs)
    trip, cond = n.inputs[0], n.inputs[1]
    carried_init = n.inputs[2:2 + nc]
    captured = n.inputs[2 + nc:]
    body = n.blocks[0]
    for o in n.outputs:
        _check_runtime_type(em, o)
    carried = [em.fresh("c") for _ in range(nc)]
    _assign_outputs(em, carried, carried_init)
    i, c = em.fresh("i"), em.fresh("cond")
    em.emit(f"{i} = 0")
    em.emit(f"{c} = {em.name(cond)}")
    trip_s = None if em.is_const(trip) and em.const(trip) is None else em.name(trip)
    em.emit(f"while {c}" + (f" and {i} < {trip_s}:" if trip_s else ":"))
    em.indent += 1
    rets = _run_sub_block(em, body, [i] + carried + list(captured))
    _assign_outputs(em, [c] + carried, rets)
    em.emit(f"{i} += 1")
    em.indent -= 1
    for o, nm in zip(n.outputs, carried):
        em.bind(o, nm)


def _fused(em: Emitter, n: ir.Node) -> None:
    from . import lower_elementwise
    lower_elementwise.lower_group(em, n.blocks[0], list(n.inputs), list(n.outputs))


def _raise(em: Emitter, n: ir.Node) -> None:
    """`raise E(f"...")` in scripted code: E's message from constant strings and run-time ints.
    The class raised is also a `jitorch.jit.Error`, as the interpreter's is."""
    exc = literal.exception(n.attrs.get("exc", "RuntimeError"))
    parts = [] if n.attrs.get("library") else [f"{exc}: "]  # (the interpreter's rule)
    for v in n.inputs:
        if em.is_const(v):
            c = em.const(v)
            if c is not None and type(c) not in (str, int, float, bool):
                raise NotLowered(f"raise message part of type {type(c).__name__}")
            parts.append(str(c))
        elif isinstance(v.type, ir.IntType):
            parts.append((em.name(v),))
        elif v.uid in em.shapes:  # `list(x.shape)`: the rank is known
            x, nd = em.shapes[v.uid]
            parts.append("[")
            for d in range(nd):
                parts += [(f"{x}.shape[{d}]",), ", " if d < nd - 1 else ""]
            parts.append("]")
        else:  # the interpreter builds this message: the enclosing `if` (_if) emits that
            raise NotLowered(f"raise message part of type {v.type}")
    em.scripted_raises.add(exc)
    # static, as every raise of a program (Emitter.raise_): the interpreter's rerun raises the
    # message with its numbers at the user's line
    em.emit(f"raise _Script{exc}({literal.text(static_message(parts))})")


_PRIMS = {
    "prim::Raise": _raise,
    "prim::Constant": _constant, "prim::ListConstruct": _list, "prim::TupleConstruct": _tuple,
    "prim::TupleIndex": _tuple_index, "prim::TupleUnpack": _unpack,
    "prim::ListUnpack": _unpack, "prim::ScalarOp": _scalar_op,
    "prim::TensorToScalar": _to_scalar, "prim::If": _if, "prim::Loop": _loop,
    "prim::Fused": _fused, "prim::GetAttr": _getattr,
    "prim::PythonOp": lambda em, n: _lower_list().python_op(em, n),
}


def _lower_list():
    from . import lower_list
    return lower_list
