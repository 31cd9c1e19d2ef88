"""The structural `prim::` ops of a CUDA program, lowered into its host entry.

The host entry is plain Python that runs once per call (program.py), so its structure is
Python's own: lists and tuples of device arrays and numbers, `if` and `while` over host values,
shapes read from the arrays. Scalar ops call the interpreter's closed table of scalar functions
(`ir.interpreter.scalar_fn`: the same semantics and errors as the interpreter). A tensor read
as a number (`prim::TensorToScalar`: `x.item()`, control flow on a device value) is the one
place the program copies device memory to the host: `launch.host_scalar` does it and counts it
(`jit.stats()["host_copies"]`). A scripted `raise` hands the call to the interpreter, which
raises it with the user's line (kernels/signals.RaiseInInterpreter).
"""
from __future__ import annotations

from .... import _dtype as dt
from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.emitter import Emitter
from ...codegen.control import lower_if


def _constant(em: Emitter, n: ir.Node) -> None:
    from ...._tensor import Tensor
    v = n.attrs.get("value")
    if isinstance(v, Tensor):
        name = literal.Ident(f"_C{len(em.globals)}")
        arr = v._data if type(v._data).__module__ == "numpy" else None
        if arr is None or v._dtype not in em.capabilities.dtypes:
            raise NotLowered("a tensor constant of this kind is not lowered on cuda")
        # made once per loaded module, on the device (the entry's arguments' device)
        em.globals.append(f"{name} = device_constant({literal.array(arr)})")
        em.bind(n.output, name)
        return
    em.consts[n.output.uid] = v


def _list(em: Emitter, n: ir.Node) -> None:
    em.lists[n.output.uid] = list(n.inputs)
    _bind_new(em, n.output, "[" + ", ".join(value(em, x) for x in n.inputs) + "]")


def _tuple(em: Emitter, n: ir.Node) -> None:
    em.tuples[n.output.uid] = list(n.inputs)


def _tuple_index(em: Emitter, n: ir.Node) -> None:
    seq, i = n.inputs
    elems = em.tuples.get(seq.uid)
    if elems is not None and em.is_const(i) and type(em.const(i)) is int:
        _alias(em, n.output, elems[em.const(i)])
        return
    _bind_new(em, n.output, f"{value(em, seq)}[{value(em, i)}]")


def _unpack(em: Emitter, n: ir.Node) -> None:
    seq = n.inputs[0]
    elems = em.tuples.get(seq.uid) or em.lists.get(seq.uid)
    if elems is not None and len(elems) == len(n.outputs):
        for o, e in zip(n.outputs, elems):
            _alias(em, o, e)
        return
    names = [em.fresh("u") for _ in n.outputs]
    # Python's own unpacking error; the interpreter's rerun raises it at the user's line
    em.emit(f"{''.join(x + ', ' for x in names)}= {value(em, seq)}")
    for o, nm in zip(n.outputs, names):
        em.bind(o, nm)


def _scalar_op(em: Emitter, n: ir.Node) -> None:
    fn = n.attrs.get("fn")
    if type(fn) is not str:
        raise NotLowered("a scalar op without a name")
    alias = literal.Ident("_sf_" + "".join(c if c.isalnum() else "_" for c in fn))
    line = f"{alias} = scalar_fn({literal.text(fn)})"
    em.global_line(line)
    _bind_new(em, n.output, f"{alias}({', '.join(value(em, x) for x in n.inputs)})")


def _getattr(em: Emitter, n: ir.Node) -> None:
    name, x = n.attrs.get("name"), n.inputs[0]
    if not isinstance(x.type, ir.TensorType):
        raise NotLowered(f"attribute {name} of {x.type} on cuda")
    t = em.tensor(x)
    if name == "shape":
        em.shapes[n.output.uid] = (em.name(x), t.ndim)
        _bind_new(em, n.output, f"list({em.name(x)}.shape)")
    elif name == "ndim":
        em.consts[n.output.uid] = t.ndim
    elif name == "dtype":
        em.consts[n.output.uid] = t.dtype
    elif name == "is_cuda":
        em.consts[n.output.uid] = True
    elif name == "device":
        from ...._device import as_device
        em.consts[n.output.uid] = as_device(t.device)
    else:
        raise NotLowered(f"attribute {name} of a tensor on cuda")


def _to_scalar(em: Emitter, n: ir.Node) -> None:
    kind = n.attrs.get("type")
    kind = kind if isinstance(kind, str) else str(kind) if kind is not None else None
    if kind not in ("int", "float", "bool", None):
        raise NotLowered(f"a tensor read as {kind} on cuda")
    x = n.inputs[0]
    if isinstance(x.type, ir.TensorType):
        em.tensor(x)
    k = "None" if kind is None else literal.text(kind)
    _bind_new(em, n.output, f"host_scalar({value(em, x)}, {k})")


def _if(em: Emitter, n: ir.Node) -> None:
    from .program import lower_block
    lower_if(em, n, lower_block, _assign, _alias, value)


def _assign(em: Emitter, names, values) -> None:
    for nm, v in zip(names, values):
        em.emit(f"{nm} = {value(em, v)}")


def _loop(em: Emitter, n: ir.Node) -> None:
    """`prim::Loop(trip, cond, carried..., captured...)`: body(i, carried..., captured...) ->
    (cond, carried...), as the interpreter runs it."""
    from .program import lower_block
    k = len(n.outputs)
    trip, cond = n.inputs[0], n.inputs[1]
    carried = [em.fresh("c") for _ in range(k)]
    for c, v in zip(carried, n.inputs[2:2 + k]):
        em.emit(f"{c} = {value(em, v)}")
    i, go, lim = em.fresh("i"), em.fresh("go"), em.fresh("trip")
    em.emit(f"{i} = 0")
    em.emit(f"{go} = bool({value(em, cond)})")
    em.emit(f"{lim} = {value(em, trip)}")
    em.emit(f"while {go} and ({lim} is None or {i} < {lim}):")
    em.indent += 1
    body = n.blocks[0]
    saved = dict(em.names), dict(em.consts)
    rets = lower_block(em, body, [None] * (1 + k) + list(n.inputs[2 + k:]),
                       bound=[i] + carried)
    em.emit(f"{go} = bool({value(em, rets[0])})")
    news = [value(em, r) for r in rets[1:]]
    em.emit(f"{''.join(c + ', ' for c in carried)}= ({''.join(x + ', ' for x in news)})")
    em.emit(f"{i} += 1")
    em.indent -= 1
    em.names, em.consts = saved
    for o, c in zip(n.outputs, carried):
        em.bind(o, c)


def _raise(em: Emitter, n: ir.Node) -> None:
    em.raise_in_interpreter()  # the interpreter builds the message and names the user's line


def _python_op(em: Emitter, n: ir.Node) -> None:
    """Of the Python calls scripted code keeps, only a write to an element of a tensor-list
    argument (frontend/alias.py `ListSet`, the optimizer steps' `params[i] = ...`): the new
    list, functionally; the runtime copies the written elements back (program.py)."""
    if n.attrs.get("name") != "list_setitem" or len(n.inputs) != 3:
        raise NotLowered(f"prim::PythonOp {n.attrs.get('name')!r} (a Python call) on cuda")
    lst, i, x = (value(em, v) for v in n.inputs)
    out = em.fresh("l")
    em.emit(f"{out} = list({lst})")
    em.emit(f"{out}[{i}] = {x}")
    em.bind(n.output, out)


PRIMS = {
    "prim::Constant": _constant, "prim::ListConstruct": _list, "prim::TupleConstruct": _tuple,
    "prim::TupleIndex": _tuple_index, "prim::TupleUnpack": _unpack,
    "prim::ListUnpack": _unpack, "prim::ScalarOp": _scalar_op, "prim::GetAttr": _getattr,
    "prim::TensorToScalar": _to_scalar, "prim::If": _if, "prim::Loop": _loop,
    "prim::Raise": _raise, "prim::PythonOp": _python_op,
}


# --- values of the host entry ----------------------------------------------------------------
def value(em: Emitter, v: ir.Value) -> str:
    """A host expression for `v`: its name, or its constant as a literal (a jitorch dtype as
    the dtype object itself: `jdtype(np.float32)`, what the ops' implementations take)."""
    if v.uid in em.names:
        return em.names[v.uid]
    if v.uid in em.consts:
        c = em.consts[v.uid]
        if isinstance(c, dt.dtype):
            try:
                return f"jdtype({literal.dtype(c)})"
            except literal.LiteralError:
                raise NotLowered(f"dtype {c} as a value on cuda (no NumPy spelling)") from None
        if isinstance(c, str):
            return literal.text(c)
        if isinstance(c, _device_type()):
            return f"jdevice({literal.text(str(c))})"
        if c is None or isinstance(c, (bool, int, float, tuple, list)):
            return literal.value(c)
        raise NotLowered(f"a constant of type {type(c).__name__} on cuda")
    if v.uid in em.tuples:
        return "(" + "".join(value(em, x) + ", " for x in em.tuples[v.uid]) + ")"
    raise NotLowered(f"value {v} has no lowering on cuda")


def _device_type():
    from ...._device import device
    return device


def _bind_new(em: Emitter, v: ir.Value, expr: str) -> None:
    nm = em.fresh("v")
    em.emit(f"{nm} = {expr}")
    em.bind(v, nm)


def _alias(em: Emitter, o: ir.Value, src: ir.Value) -> None:
    """`o` is `src` (a tuple element, an unpacked value, a static branch's result)."""
    for table in (em.names, em.consts, em.tuples, em.lists, em.shapes):
        if src.uid in table:
            table[o.uid] = table[src.uid]
