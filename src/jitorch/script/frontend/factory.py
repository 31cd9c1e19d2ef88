"""The frontend of tensor factory calls: `zeros(B, H)` in scripted code -> a factory node.

The factories are registry ops (`_ops/factories.py`: IR params, type rule, eager semantics and
the public signature `extra["stub"]` that calls are bound with). This module decides, per call,
whether the call is static enough to become that node: the keywords that do not change the
result (`layout`, `pin_memory`, `memory_format`, `requires_grad=False`) are checked at compile
time and left out of the IR; `dtype` and `device` become the node's `%dtype` and `%device`
inputs: a constant, or `x.dtype` / `x.device` of a tensor (the type pass and `stamp_device`
fold those once the program's types are known). Whatever the frontend cannot prove static and
acceptable (another run-time dtype or device, `requires_grad=True`, `out=`, a tensor fill
value, an unknown size list, a device string eager cannot parse) stays the `prim::PythonOp` it
was before, so eager raises its own error at run time. It also holds what a trace records for
a large constant that a factory made (`traced_factory`: on the traced tensor's device).
"""
from __future__ import annotations

import inspect

from ..._layout import strided
from ..._ops import registry
from .. import ir
from ..._ops.factories import data_dtype
from ..ir.values import const_of, data_info, leaf_kind


def factory_op(name: str):
    """The registry declaration of factory `name` (None: not a factory)."""
    op = registry.OPS.get(name)
    return op if op is not None and op.kind == "factory" else None


def _jt():
    import jitorch
    return jitorch


# --- tracing --------------------------------------------------------------------------------

TRACE_MIN_ELEMS = 4097  # targets.cpu.program.MAX_CONST_ELEMS + 1: smaller constants are embedded


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
    dtype, device = tracer.constant(d), tracer.constant(x._device, ir.DEVICE)
    if v == 0 or v == 1:
        name, ins = ("zeros" if v == 0 else "ones"), [size, dtype, device]
    else:
        name, ins = "full", [size, tracer.constant(v), dtype, device]
    n = ir.Node(name, ins, (ir.TensorType(d, a.shape, str(x._device)),))
    tracer.block.nodes.append(n)
    return n.output


def note_factory(name: str, out, requires_grad: bool, params: dict) -> None:
    """`_creation.trace_hook` while a trace runs: eager factory `name` made `out` from `params`
    (its IR node's parameters other than dtype and device, as the caller gave them). When a
    size came from a traced tensor (`zeros(x.size(0), 3)`, `x.new_zeros(x.shape[0], 4)`) or
    the factory follows a traced tensor (`zeros_like(x)`), the trace records the factory node
    with those as graph values, as PyTorch's tracer records `aten::zeros`, so the trace runs
    on other sizes; a call it cannot record (`randn`, `requires_grad=True`) keeps its result
    as a constant, with a TracerWarning that the sizes were baked in. Calls that involve no
    traced value stay constants (`traced_factory`)."""
    from .trace import active_tracer, tensor_type, _user_loc, _user_frame
    tr = active_tracer()
    if tr is None or not any(_traced(tr, v) for v in params.values()):
        return
    if any(_has_tensor(v) for k, v in params.items() if k != "input"):
        return  # a number read from a tensor's data: check_data_dependence warned already
    op = factory_op(name)
    if op is None or requires_grad:
        frame = _user_frame()
        if frame is not None:
            from .trace_sizes import _warn_at
            _warn_at(frame, f"{name}() was given a size read from a traced tensor, but the "
                     f"trace records its result{' (requires_grad=True)' if op else ''} as a "
                     "constant. This means that the trace might not generalize to other inputs!")
        return
    ins = [tr.constant(out._dtype) if p == "dtype" else
           tr.constant(out._device, ir.DEVICE) if p == "device" else tr.value_of(params[p])
           for p in op.params]
    n = ir.Node(name, ins, (tensor_type(out),), loc=_user_loc())
    tr.block.nodes.append(n)
    tr.bind(out, n.output)


def _traced(tr, v) -> bool:
    """Whether v is (or holds) a value of trace `tr`: a traced tensor or a size read from one."""
    from ..._tensor import Tensor
    from .trace_sizes import TracedInt
    if isinstance(v, Tensor):
        return id(v) in tr.values
    if isinstance(v, TracedInt):
        return v.__dict__.get("_tracer") is tr
    return isinstance(v, (tuple, list)) and any(_traced(tr, e) for e in v)


def _has_tensor(v) -> bool:
    from ..._tensor import Tensor
    return isinstance(v, Tensor) or isinstance(v, (tuple, list)) and any(map(_has_tensor, v))


# --- frontend ------------------------------------------------------------------------------------
_by_fn: dict = {}


def factory_of(fn) -> str | None:
    """The factory name of public function `fn` (jitorch.zeros -> "zeros"), or None."""
    if not _by_fn:
        jt = _jt()
        for name, f in registry.OPS.items():
            if f.kind == "factory" and not f.extra["method"] and \
                    getattr(jt, name, None) is not None:
                _by_fn[getattr(jt, name)] = name
    try:
        return _by_fn.get(fn)
    except TypeError:
        return None


def _static(a):
    """(True, Python value) for a compile-time argument (a constant or a Python object)."""
    from .expr import Sugar
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
    return True


def _dtype_value(st, name: str, a):
    """The `%dtype` input: a constant dtype or None, or `x.dtype` of a tensor; None when the
    call must stay a PythonOp (`a`: the argument, None when not given)."""
    if _tensor_attr(a, "dtype") is not None:
        return a
    ok, d = _static(a) if a is not None else (True, None)
    if not ok:
        return None
    if d is not None:
        from ..._creation import _dtype_arg
        try:
            d = _dtype_arg(d, name)
        except TypeError:
            return None
    return st.const(d, ir.DTYPE if d is not None else ir.NONE)


def _device_value(st, a):
    """The `%device` input: None, a constant `jitorch.device` (a string or index is parsed as
    eager parses it, without asking whether the device exists: that is the run's business), or
    `x.device` of a tensor; None when the call must stay a PythonOp (`a`: the argument, None
    when not given)."""
    if _tensor_attr(a, "device") is not None:
        return a
    ok, v = _static(a) if a is not None else (True, None)
    if not ok:
        return None
    if v is None:
        return st.const(None, ir.NONE)
    from ..._device import device
    if isinstance(v, bool) or not isinstance(v, (str, int, device)):
        return None
    try:
        d = v if isinstance(v, device) else device(v)
    except Exception:  # eager raises its own error for a malformed device
        return None
    return st.const(d, ir.DEVICE)


def _number(st, a, kinds=(ir.IntType, ir.FloatType, ir.BoolType)):
    from . import types as ft
    try:
        v = st.exprs.to_value(a)
    except Exception:
        return None
    return v if isinstance(ft.base(v.type), kinds) and not isinstance(v.type, ir.OptionalType) \
        else None


def _size_value(st, sizes):
    """The IR value for a size given as varargs or one list/tuple, or None (not static)."""
    if len(sizes) == 1:
        v = st.exprs.to_value(sizes[0]) if not isinstance(sizes[0], ir.Value) else sizes[0]
        t = v.type
        if isinstance(t, ir.IntType):
            return st.emit("prim::ListConstruct", [v], (ir.ListType(ir.INT),)).output
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
    vals = [st.exprs.to_value(s) for s in sizes]
    if not all(isinstance(v.type, ir.IntType) for v in vals):
        return None
    return st.emit("prim::ListConstruct", vals, (ir.ListType(ir.INT),)).output


def _data_ok(v: ir.Value) -> bool:
    """`tensor(data)` compiles when the data's nesting is static and its leaves are numbers."""
    info = data_info(v)
    if info is None:
        return False
    try:
        data_dtype(leaf_kind(x) for x in info[1])
    except TypeError:
        return False
    return True


def frontend_call(st, name: str, node, recv=None):
    """Emit factory `name` for call `node` (recv: the Tensor of a `new_*` method), or None when
    the call must stay a PythonOp. The call's arguments are compiled once, into
    `st.evaluated`, which the PythonOp fallback reuses."""
    f = factory_op(name)
    args, kwargs = st.evaluated = st.calls.eval_args(node)
    pos = ([recv] if recv is not None else []) + list(args)
    try:
        bound = inspect.signature(f.extra["stub"]).bind(*pos, **kwargs)
    except TypeError:
        return None
    a = dict(bound.arguments)
    extra = a.pop("kw", {})
    if "layout" in a and _static(a["layout"])[1] not in (None, strided):
        # eager makes a sparse tensor (or raises); compiled programs hold dense tensors only
        st.fail(f"{name}(layout={_static(a['layout'])[1]!r}): scripted code makes strided "
                "(dense) tensors only; build a sparse tensor outside jitorch.jit.script")
    if set(extra) - {"size"} or not _static_kwargs_ok(name, a):
        return None
    ins = {"dtype": _dtype_value(st, name, a.get("dtype")),
           "device": _device_value(st, a.get("device"))}
    if ins["dtype"] is None or ins["device"] is None:
        return None
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
        ins["size"] = _size_value(st, sizes)
        if ins["size"] is None:
            return None
    if "input" in f.params:
        v = st.exprs.to_value(a["input"])
        if not isinstance(v.type, ir.TensorType):
            return None
        ins["input"] = v
    for k in ("fill_value", "s"):
        if k in f.params:
            ins[k] = _number(st, a[k])
            if ins[k] is None:
                return None
    if name == "arange":
        start, end = a.get("start", 0), a.get("end", None)
        if _static(end) == (True, None) or end is None:
            start, end = 0, start
        for k, x in (("start", start), ("end", end), ("step", a.get("step", 1))):
            ins[k] = _number(st, x if isinstance(x, ir.Value) or not isinstance(x, (int, float))
                             else st.const(x), (ir.IntType, ir.FloatType))
            if ins[k] is None:
                return None
    if name == "linspace":
        for k in ("start", "end"):
            ins[k] = _number(st, a[k], (ir.IntType, ir.FloatType))
        ins["steps"] = _number(st, a["steps"], (ir.IntType,))
        if None in (ins["start"], ins["end"], ins["steps"]):
            return None
    if name == "eye":
        ins["n"] = _number(st, a["n"], (ir.IntType,))
        m = a.get("m")
        ins["m"] = st.const(None) if m is None or _static(m) == (True, None) else \
            _number(st, m, (ir.IntType,))
        if ins["n"] is None or ins["m"] is None:
            return None
    if "data" in f.params:
        v = st.exprs.to_value(a["data"])
        if not _data_ok(v):
            return None
        ins["data"] = v
    st.cur = node
    return st.emit(name, [ins[p] for p in f.params], (ir.TensorType(None, None),)).output
