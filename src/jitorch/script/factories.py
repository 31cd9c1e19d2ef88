"""Tensor factories inside compiled code: one declaration per factory, read by every stage.

`zeros(B, H)` in scripted code becomes an IR node named by the factory's public name
(DESIGN.md: an op's IR name is its public name) whose inputs are the run-time values the
factory needs (`FACTORIES[name].params`), not a `prim::PythonOp`:

    zeros(%size: List[int] | Tuple[int, ...], %dtype)        ones, empty: the same
    full(%size, %fill_value, %dtype)
    zeros_like(%input, %dtype)   ones_like, empty_like; full_like(%input, %fill_value, %dtype)
    arange(%start, %end, %step, %dtype)     linspace(%start, %end, %steps, %dtype)
    eye(%n, %m, %dtype)     tensor(%data, %dtype)     scalar_tensor(%s, %dtype)
    new_zeros(%self, %size, %dtype)   new_ones, new_empty; new_full(%self, %size, %fill_value,
    %dtype); new_tensor(%self, %data, %dtype)

Sizes are run-time ints (a new size never recompiles); `%dtype` is always a constant (a dtype
or None). The keywords that do not change the result on this CPU backend (`device`, `layout`,
`pin_memory`, `memory_format`, `requires_grad=False`) are checked at compile time and left out
of the IR. Whatever the frontend cannot prove static and acceptable (a run-time dtype,
`requires_grad=True`, `out=`, a tensor fill value, an unknown size list) stays the
`prim::PythonOp` it was before, so eager raises its own error at run time.

Each `Factory` holds: the Python signature the frontend binds calls with, the IR params, the
eager call the interpreter makes (the reference semantics), and the result-type rule
`passes/types.py` uses (dtype from `%dtype`, else PyTorch's default for that factory; rank from
the size list). Lowering lives in `codegen/lower_factory.py`. Random factories (randn, rand,
randint, ...) stay PythonOps: their generator state lives in Python (`jitorch.random`), and a
compiled program could only reproduce eager's streams by calling back into Python.
Factory outputs never require grad and have no VJP (autodiff treats them as constants).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Callable

from .. import _dtype as dt
from . import ir
from . import verify


@dataclass(eq=False)
class Factory:
    name: str
    params: tuple            # IR inputs, in order
    stub: Callable           # a function with the public signature (binding calls)
    eager: Callable          # dict of param -> value -> Tensor (the interpreter's semantics)
    result: Callable         # dict of param -> ir.Value -> ir.TensorType
    method: bool = False     # a Tensor method (params[0] is `self`)


FACTORIES: dict[str, Factory] = {}


def _jt():
    import jitorch
    return jitorch


# --- result types -------------------------------------------------------------------------------

def const_of(v: ir.Value):
    """(True, value) for a constant (or a list/tuple of constants), else (False, None)."""
    n = v.node
    if n is None:
        return False, None
    if n.op == "prim::Constant":
        return True, n.attrs.get("value")
    if n.op in ("prim::ListConstruct", "prim::TupleConstruct"):
        vals = [const_of(x) for x in n.inputs]
        if all(k for k, _ in vals):
            return True, [x for _, x in vals]
    return False, None


def size_rank(v: ir.Value):
    """The length of a size list/tuple value when the IR knows it, else None."""
    t = v.type
    if isinstance(t, ir.TupleType):
        return len(t.elems)
    n = v.node
    if n is None:
        return None
    if n.op in ("prim::ListConstruct", "prim::TupleConstruct"):
        return len(n.inputs)
    if n.op == "prim::Constant":
        val = n.attrs.get("value")
        return len(val) if isinstance(val, (tuple, list)) else 1
    if n.op == "prim::GetAttr" and n.attrs.get("name") == "shape":
        return getattr(n.inputs[0].type, "ndim", None)
    return None


def _dtype_const(v: ir.Value):
    ok, d = const_of(v)
    if not ok or not (d is None or isinstance(d, dt.dtype)):
        raise TypeError("dtype is not a constant")
    return d


def _ranked(d, rank) -> ir.TensorType:
    if d is None or rank is None:
        return ir.TensorType(None, None)
    return ir.TensorType(d, (None,) * rank)


def scalar_dtype(t: ir.Type):
    """PyTorch's dtype for a Python number of IR type `t` (full, tensor, arange's rules)."""
    if isinstance(t, ir.BoolType):
        return dt.bool
    if isinstance(t, ir.IntType):
        return dt.int64
    if isinstance(t, ir.FloatType):
        return dt.get_default_dtype()
    return None


def _const_shape(c):
    if isinstance(c, (bool, int, float)):
        return ()
    if isinstance(c, (list, tuple)):
        subs = {_const_shape(x) for x in c}
        if not c:
            return (0,)
        if len(subs) != 1 or None in subs:
            return None
        return (len(c),) + subs.pop()
    return None


def _flat(c) -> list:
    return [y for x in c for y in _flat(x)] if isinstance(c, (list, tuple)) else [c]


def data_info(v: ir.Value):
    """(shape, leaves) of `tensor(data)`'s data when its structure is static: a scalar, or
    nested ListConstructs / constant lists (rectangular); leaves are ir.Values or Python
    numbers, row-major. None when not static (eager raises, or the length is a run-time one)."""
    ok, c = const_of(v)
    if ok:
        shape = _const_shape(c)
        return None if shape is None else (shape, _flat(c))
    if isinstance(v.type, (ir.IntType, ir.FloatType, ir.BoolType)):
        return (), [v]
    n = v.node
    if n is None or n.op != "prim::ListConstruct":
        return None
    if not n.inputs:
        return (0,), []
    subs = [data_info(x) for x in n.inputs]
    if None in subs or len({s[0] for s in subs}) != 1:
        return None
    return (len(subs),) + subs[0][0], [x for s in subs for x in s[1]]


def _leaf_types(v: ir.Value) -> list:
    ok, c = const_of(v)
    if ok:
        out = []

        def walk(x):
            if isinstance(x, (list, tuple)):
                for e in x:
                    walk(e)
            else:
                out.append(ir.BOOL if isinstance(x, bool) else ir.INT if isinstance(x, int)
                           else ir.FLOAT)
        walk(c)
        return out
    if v.node is not None and v.node.op == "prim::ListConstruct":
        return [t for x in v.node.inputs for t in _leaf_types(x)]
    return [v.type]


def data_dtype(v: ir.Value):
    """torch.tensor's inferred dtype for data `v` (None: unknown)."""
    ts = _leaf_types(v)
    if not ts:
        return dt.get_default_dtype()
    if any(isinstance(t, ir.FloatType) for t in ts):
        return dt.get_default_dtype()
    if all(isinstance(t, ir.BoolType) for t in ts):
        return dt.bool
    if all(isinstance(t, (ir.IntType, ir.BoolType)) for t in ts):
        return dt.int64
    return None


def _data_rank(v: ir.Value):
    info = data_info(v)
    return None if info is None else len(info[0])


def _tensor_of(v: ir.Value) -> ir.TensorType:
    t = v.type
    if not isinstance(t, ir.TensorType):
        raise TypeError("not a tensor")
    return t


def _sized_rule():
    def rule(a):
        d = _dtype_const(a["dtype"])
        if d is None:
            d = _tensor_of(a["self"]).dtype if "self" in a else dt.get_default_dtype()
        return _ranked(d, size_rank(a["size"]))
    return rule


def _full_rule(a):
    d = _dtype_const(a["dtype"])
    if d is None:
        d = _tensor_of(a["self"]).dtype if "self" in a else scalar_dtype(a["fill_value"].type)
    return _ranked(d, size_rank(a["size"]))


def _like_rule(a):
    t = _tensor_of(a["input"])
    return _ranked(_dtype_const(a["dtype"]) or t.dtype, t.ndim)


def _arange_rule(a):
    d = _dtype_const(a["dtype"])
    if d is None:
        ts = [a[k].type for k in ("start", "end", "step")]
        if all(isinstance(t, ir.IntType) for t in ts):
            d = dt.int64
        elif all(isinstance(t, (ir.IntType, ir.FloatType)) for t in ts):
            d = dt.get_default_dtype()
    return _ranked(d, 1)


def _default_rule(rank):
    def rule(a):
        return _ranked(_dtype_const(a["dtype"]) or dt.get_default_dtype(), rank)
    return rule


def _tensor_rule(a):
    d = _dtype_const(a["dtype"])
    if d is None:
        d = _tensor_of(a["self"]).dtype if "self" in a else data_dtype(a["data"])
    return _ranked(d, _data_rank(a["data"]))


def result_type(n: ir.Node) -> ir.Type:
    """The output type of factory node `n` (unknown where a rule cannot decide)."""
    f = FACTORIES[n.op]
    try:
        return f.result(dict(zip(f.params, n.inputs)))
    except Exception:
        return ir.TensorType(None, None)


# --- declarations ---------------------------------------------------------------------------------
# The stubs spell PyTorch's signatures; `**kw` on zeros/ones/empty admits `size=`.

def _s_sized(*size, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False, memory_format=None, **kw): pass


def _s_full(size, fill_value, *, out=None, dtype=None, layout=None, device=None,
            requires_grad=False, pin_memory=False): pass


def _s_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
            memory_format=None): pass


def _s_full_like(input, fill_value, *, dtype=None, layout=None, device=None,
                 requires_grad=False, memory_format=None): pass


def _s_arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
              requires_grad=False): pass


def _s_linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
                requires_grad=False): pass


def _s_eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
           pin_memory=False): pass


def _s_tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False): pass


def _s_scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False,
                     pin_memory=False): pass


def _s_new_sized(self, *size, dtype=None, device=None, requires_grad=False, layout=None,
                 pin_memory=False): pass


def _s_new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False,
                layout=None, pin_memory=False): pass


def _s_new_tensor(self, data, dtype=None, device=None, requires_grad=False): pass


def _declare(name, params, stub, eager, result, method=False):
    FACTORIES[name] = Factory(name, tuple(params), stub, eager, result, method)


for _n in ("zeros", "ones", "empty"):
    _declare(_n, ("size", "dtype"), _s_sized,
             lambda a, _n=_n: getattr(_jt(), _n)(tuple(a["size"]), dtype=a["dtype"]),
             _sized_rule())
    _declare("new_" + _n, ("self", "size", "dtype"), _s_new_sized,
             lambda a, _n=_n: getattr(a["self"], "new_" + _n)(tuple(a["size"]),
                                                              dtype=a["dtype"]),
             _sized_rule(), method=True)
    _declare(_n + "_like", ("input", "dtype"), _s_like,
             lambda a, _n=_n: getattr(_jt(), _n + "_like")(a["input"], dtype=a["dtype"]),
             _like_rule)
_declare("full", ("size", "fill_value", "dtype"), _s_full,
         lambda a: _jt().full(tuple(a["size"]), a["fill_value"], dtype=a["dtype"]), _full_rule)
_declare("new_full", ("self", "size", "fill_value", "dtype"), _s_new_full,
         lambda a: a["self"].new_full(tuple(a["size"]), a["fill_value"], dtype=a["dtype"]),
         _full_rule, method=True)
_declare("full_like", ("input", "fill_value", "dtype"), _s_full_like,
         lambda a: _jt().full_like(a["input"], a["fill_value"], dtype=a["dtype"]), _like_rule)
_declare("arange", ("start", "end", "step", "dtype"), _s_arange,
         lambda a: _jt().arange(a["start"], a["end"], a["step"], dtype=a["dtype"]),
         _arange_rule)
_declare("linspace", ("start", "end", "steps", "dtype"), _s_linspace,
         lambda a: _jt().linspace(a["start"], a["end"], a["steps"], dtype=a["dtype"]),
         _default_rule(1))
_declare("eye", ("n", "m", "dtype"), _s_eye,
         lambda a: _jt().eye(a["n"], a["m"], dtype=a["dtype"]), _default_rule(2))
_declare("tensor", ("data", "dtype"), _s_tensor,
         lambda a: _jt().tensor(a["data"], dtype=a["dtype"]), _tensor_rule)
_declare("new_tensor", ("self", "data", "dtype"), _s_new_tensor,
         lambda a: a["self"].new_tensor(a["data"], dtype=a["dtype"]), _tensor_rule,
         method=True)
_declare("scalar_tensor", ("s", "dtype"), _s_scalar_tensor,
         lambda a: _jt().scalar_tensor(a["s"], dtype=a["dtype"]), _default_rule(0))
del _n

# the verifier admits these op names (neither registry ops nor prims)
verify.EXTRA_OPS.update(FACTORIES)


def run(name: str, vals: list):
    """The interpreter's rule for factory node `name` (eager semantics)."""
    f = FACTORIES[name]
    return f.eager(dict(zip(f.params, vals)))


# --- tracing --------------------------------------------------------------------------------

TRACE_MIN_ELEMS = 4097  # codegen.cpu.MAX_CONST_ELEMS + 1: smaller constants are embedded


def traced_factory(tracer, x):
    """What a trace records for a tensor it did not compute: a tensor too large for the code
    generator to embed (`TRACE_MIN_ELEMS`) whose elements are all equal (what zeros/ones/full/
    empty made) becomes the factory node with its sizes baked, as PyTorch's tracer bakes them,
    so the graph still compiles. None otherwise (the caller embeds a constant: small ones stay
    constants, which the simplifier folds)."""
    a = x._data
    if a.size < TRACE_MIN_ELEMS or x._requires_grad or getattr(x, "_base", None) is not None:
        return None
    first = a.reshape(-1)[0]
    if not (a == first).all():  # NaN never equals itself: stays a constant
        return None
    v = first.item()
    if isinstance(v, complex):
        return None
    d = x._dtype
    size = tracer.constant(tuple(int(s) for s in a.shape))
    dtype = tracer.constant(d)
    if v == 0 or v == 1:
        name, ins = ("zeros" if v == 0 else "ones"), [size, dtype]
    else:
        name, ins = "full", [size, tracer.constant(v), dtype]
    n = ir.Node(name, ins, (ir.TensorType(d, a.shape),))
    tracer.block.nodes.append(n)
    return n.output


# --- frontend ------------------------------------------------------------------------------------
_by_fn: dict = {}


def factory_of(fn) -> str | None:
    """The factory name of public function `fn` (jitorch.zeros -> "zeros"), or None."""
    if not _by_fn:
        jt = _jt()
        for name, f in FACTORIES.items():
            if not f.method and getattr(jt, name, None) is not None:
                _by_fn[getattr(jt, name)] = name
    try:
        return _by_fn.get(fn)
    except TypeError:
        return None


def _static(a):
    """(True, Python value) for a compile-time argument (a constant or a Python object)."""
    from .frontend_expr import Sugar
    if isinstance(a, Sugar):
        return True, a.obj
    if isinstance(a, ir.Value):
        return const_of(a)
    return False, None


def _tensor_attr(a, name: str):
    """The tensor `x` when `a` is `x.<name>` (a prim::GetAttr), else None."""
    n = a.node if isinstance(a, ir.Value) else None
    if n is not None and n.op == "prim::GetAttr" and n.attrs.get("name") == name and \
            isinstance(n.inputs[0].type, ir.TensorType):
        return n.inputs[0]
    return None


# `zeros(size, dtype=x.dtype)` is `x.new_zeros(size)`: the dtype then comes from x's type,
# which the program is specialised on
_AS_NEW = {"zeros": "new_zeros", "ones": "new_ones", "empty": "new_empty", "full": "new_full",
           "tensor": "new_tensor"}


def _static_kwargs_ok(name: str, args: dict) -> bool:
    """The keywords left out of the IR must be compile-time values eager accepts unchanged."""
    for k in ("out", "requires_grad", "pin_memory"):
        if k in args:
            ok, v = _static(args[k])
            if not ok or (v is not None and v is not False):
                return False
    for k in ("layout", "memory_format"):
        if k in args and not _static(args[k])[0]:
            return False
    if "device" in args:
        if _tensor_attr(args["device"], "device") is not None:
            return True  # x.device: every tensor this backend sees is a CPU tensor
        ok, v = _static(args["device"])
        if not ok:
            return False
        from .._device import as_device
        try:
            if v is not None and as_device(v).type != "cpu":
                return False
        except Exception:
            return False
    return True


def _number(fc, a, kinds=(ir.IntType, ir.FloatType, ir.BoolType)):
    from . import frontend_types as ft
    try:
        v = fc.to_value(a)
    except Exception:
        return None
    return v if isinstance(ft.base(v.type), kinds) and not isinstance(v.type, ir.OptionalType) \
        else None


def _size_value(fc, sizes):
    """The IR value for a size given as varargs or one list/tuple, or None (not static)."""
    if len(sizes) == 1:
        v = fc.to_value(sizes[0]) if not isinstance(sizes[0], ir.Value) else sizes[0]
        t = v.type
        if isinstance(t, ir.IntType):
            return fc.emit("prim::ListConstruct", [v], (ir.ListType(ir.INT),)).output
        if isinstance(t, ir.TupleType):
            return v if all(isinstance(e, ir.IntType) for e in t.elems) else None
        if isinstance(t, ir.ListType):
            ok, c = const_of(v)
            if ok and not all(type(x) is int for x in c):
                return None
            n = v.node
            if n is not None and n.op in ("prim::ListConstruct", "prim::TupleConstruct"):
                return v if all(isinstance(x.type, ir.IntType) for x in n.inputs) else None
            # x.shape, or a List[int] variable (its length may be known only at run time)
            return v if isinstance(t.elem, ir.IntType) else None
        return None
    vals = [fc.to_value(s) for s in sizes]
    if not all(isinstance(v.type, ir.IntType) for v in vals):
        return None
    return fc.emit("prim::ListConstruct", vals, (ir.ListType(ir.INT),)).output


def _data_ok(v: ir.Value) -> bool:
    return data_info(v) is not None and data_dtype(v) is not None


def frontend_call(fc, name: str, node, recv=None):
    """Emit factory `name` for call `node` (recv: the Tensor of a `new_*` method), or None when
    the call must stay a PythonOp. The call's arguments are compiled once, into
    `fc._evaluated`, which the PythonOp fallback reuses."""
    f = FACTORIES[name]
    args, kwargs = fc._evaluated = fc._args(node)
    pos = ([recv] if recv is not None else []) + list(args)
    try:
        bound = inspect.signature(f.stub).bind(*pos, **kwargs)
    except TypeError:
        return None
    a = dict(bound.arguments)
    extra = a.pop("kw", {})
    if set(extra) - {"size"} or not _static_kwargs_ok(name, a):
        return None
    like = _tensor_attr(a["dtype"], "dtype") if "dtype" in a else None
    if like is not None and name in _AS_NEW and recv is None:
        name, recv, f = _AS_NEW[name], like, FACTORIES[_AS_NEW[name]]
        del a["dtype"]
    ok, d = _static(a["dtype"]) if "dtype" in a else (True, None)
    if not ok:
        return None
    if d is not None:
        from .._creation import _dtype_arg
        try:
            d = _dtype_arg(d, name)
        except TypeError:
            return None
    ins = {"dtype": fc.const(d, ir.DTYPE if d is not None else ir.NONE)}
    if "self" in f.params:
        ins["self"] = recv
    if "size" in f.params:
        sizes = a.get("size", ())
        if not isinstance(sizes, tuple) or "size" in extra:  # full(size, ...) / size=
            sizes = (extra["size"],) if "size" in extra else (sizes,)
            if "size" in extra and a.get("size"):
                return None
        if len(sizes) == 0:
            return None
        ins["size"] = _size_value(fc, sizes)
        if ins["size"] is None:
            return None
    if "input" in f.params:
        v = fc.to_value(a["input"])
        if not isinstance(v.type, ir.TensorType):
            return None
        ins["input"] = v
    for k in ("fill_value", "s"):
        if k in f.params:
            ins[k] = _number(fc, a[k])
            if ins[k] is None:
                return None
    if name == "arange":
        start, end = a.get("start", 0), a.get("end", None)
        if _static(end) == (True, None) or end is None:
            start, end = 0, start
        for k, x in (("start", start), ("end", end), ("step", a.get("step", 1))):
            ins[k] = _number(fc, x if isinstance(x, ir.Value) or not isinstance(x, (int, float))
                             else fc.const(x), (ir.IntType, ir.FloatType))
            if ins[k] is None:
                return None
    if name == "linspace":
        for k in ("start", "end"):
            ins[k] = _number(fc, a[k], (ir.IntType, ir.FloatType))
        ins["steps"] = _number(fc, a["steps"], (ir.IntType,))
        if None in (ins["start"], ins["end"], ins["steps"]):
            return None
    if name == "eye":
        ins["n"] = _number(fc, a["n"], (ir.IntType,))
        m = a.get("m")
        ins["m"] = fc.const(None) if m is None or _static(m) == (True, None) else \
            _number(fc, m, (ir.IntType,))
        if ins["n"] is None or ins["m"] is None:
            return None
    if "data" in f.params:
        v = fc.to_value(a["data"])
        if not _data_ok(v):
            return None
        ins["data"] = v
    fc.cur = node
    return fc.emit(name, [ins[p] for p in f.params], (ir.TensorType(None, None),)).output
