"""Library composites inside `@script`: `F.softmax`, `F.layer_norm`, the losses, ... compiled.

The composites of `jitorch.nn.functional` (and `jitorch.softmax`, `Tensor.softmax`, ...) are not
registry ops; a `prim::PythonOp` calling them would send the WHOLE graph to the interpreter.
Each is declared once, as a `Composite` (`_ops/composite`): a factory that checks the static
arguments and returns the body, written in the script subset, that eager runs. A scripted call
of an exposed public function becomes a `prim::CallFunction` of that same body's graph (inlined
by the pipeline): this module binds the call to the public signature, reads the statics (they
must be constants at the call site, see `_static`), calls the factory, and specialises the
body's graph on the arguments that are constants at the call site when it inlines the call
(`passes/specialise.py`: constants substituted, `None` tests on optional tensors folded,
simplify + dce) so branches on them vanish before the inlined body is typed. Bodies never branch on
a tensor's rank where tensors flow (that would make types unknown): per-channel and class-dim code
views the input as (N, C, m), so one program serves every size.

Anything a body does not cover (a non-constant static argument, a factory that raises for the
statics, a public parameter outside the statics and the body's parameters given a non-default
value, or the composite's `script_unsupported` reason: running statistics updated
in place, ...) returns None and the caller keeps the `prim::PythonOp` path, which is exactly
eager (errors included, at run time).
The losses' class targets go through `_class_index` (_ops/nn_loss.py), which checks them as eager
nll_loss / cross_entropy do (dtype, shape, weight size, every target in range or ignore_index:
IndexError "Target N is out of bounds.") and is compiled with those checks.
A composite whose checks live in its body (layer_norm, rms_norm, group_norm: shapes of the
input, weight and bias; the softmax family: float input, dim in range; cosine_similarity:
a float common dtype; shared checks are
`@body_helper` functions the body calls) raises eager's error in every tier (a `raise` in
jitorch's own source is marked `library`: eager's plain message at the user's call); checks on
dtypes and ranks fold away once the program knows them. Known gaps: the pointwise losses'
warning for a target of another size is not given in scripted code.
cross_entropy with class-PROBABILITY (float) targets is not compiled: `_class_index` raises
NotImplementedError naming the case.
"""
from __future__ import annotations

import inspect

from .. import ir

_NONE = object()  # marker: the argument was not given (use the public default)


class _Reject(Exception):
    """The call is outside what the body covers: keep the PythonOp path."""


# --- building a call ---------------------------------------------------------------------------
class Const:
    """A body argument that is a Python constant (substituted into the body's graph)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _static(v, name):
    n = v.node
    if n is not None and n.op in ("prim::ListConstruct", "prim::TupleConstruct"):
        return tuple(_static(i, name) for i in n.inputs)
    if n is not None and n.op == "prim::ScalarOp":  # `not self._flag`, `self.a * 2`
        from ..ir.interpreter import SCALAR_OPS
        fn = SCALAR_OPS.get(n.attrs.get("fn"))
        if fn is None:
            raise _Reject(f"'{name}' is not a constant")
        try:
            return fn(*[_static(i, name) for i in n.inputs])
        except _Reject:
            raise
        except Exception:
            raise _Reject(f"'{name}' raises") from None
    if n is None or n.op != "prim::Constant" or "value" not in n.attrs:
        raise _Reject(f"'{name}' is not a constant")
    return n.attrs["value"]


def _bind(st, fn, node, recv):
    """(values: name -> IR value of the arguments given, defaults) or None."""
    args, kwargs = st.calls.eval_args(node)
    st.evaluated = (args, kwargs)
    try:
        sig = inspect.signature(fn, follow_wrapped=False)
        bound = sig.bind(*(([recv] if recv is not None else []) + list(args)), **kwargs)
    except (TypeError, ValueError):
        return None
    values = {}
    for name, v in bound.arguments.items():
        try:
            values["input" if name == "self" else name] = st.exprs.to_value(v)
        except Exception:
            return None
    defaults = {("input" if p.name == "self" else p.name): p.default
                for p in sig.parameters.values()}
    return values, defaults


def _is_const_none(v) -> bool:
    n = v.node
    return n is not None and n.op == "prim::Constant" and n.attrs.get("value", 0) is None


def _composite_call(comp, ignore, values, defaults):
    """(body, targs) for a call of an exposed composite (_ops/composite), or None."""
    statics = []
    for name in comp.static:
        if name.endswith("?"):  # whether an optional argument is given
            v = values.get(name[:-1], _NONE)
            statics.append(v is not _NONE and not _is_const_none(v))
            continue
        v = values.get(name, _NONE)
        try:
            statics.append(defaults[name] if v is _NONE else _static(v, name))
        except _Reject:
            if name not in comp.static_fallback:
                raise
            statics.append(comp.static_fallback[name])
    body = comp.body(*statics)  # the factory checks the statics (raises: a Python call)
    if comp.script_unsupported is not None and comp.script_unsupported(*statics):
        raise _Reject(comp.script_unsupported(*statics))
    params = inspect.signature(body).parameters
    for name, v in values.items():  # a public parameter the body does not read: its default
        if name in params or name in comp.static or name in ignore:
            continue
        if _static(v, name) != defaults.get(name, _NONE):
            raise _Reject(f"'{name}' is not its default")
    targs = []
    for name, p in params.items():
        v = values.get(name, _NONE)
        if v is _NONE:
            d = defaults.get(name, p.default)
            if d is inspect.Parameter.empty:
                raise _Reject(f"'{name}' missing")
            targs.append(Const(d))
        elif v.node is not None and v.node.op == "prim::Constant" and "value" in v.node.attrs:
            targs.append(Const(v.node.attrs["value"]))
        else:
            targs.append(v)
    return body, targs


def compile_call(st, fn, node, recv=None):
    """The scripted call `fn(...)` (`recv.fn(...)` for a method) of a library composite as a
    `prim::CallFunction` of its body, or None (the caller falls back to a
    prim::PythonOp; `st.evaluated` then holds the evaluated arguments so they are not emitted
    twice)."""
    from ..._ops.composite import Unsupported, composite_of
    found = composite_of(fn)
    if found is None:
        return None
    b = _bind(st, fn, node, recv)
    if b is None:
        return None
    values, defaults = b
    try:
        body, targs = _composite_call(found[0], found[1], values, defaults)
    except (_Reject, Unsupported, TypeError, ValueError, KeyError, IndexError, RuntimeError,
            AssertionError, NotImplementedError):
        return None
    from .function import compile_function
    res = compile_function(body)
    g = res.graph  # the inline pass specialises it on the call's constants (passes/specialise)
    st.python_ops.extend(res.python_ops)
    ins = []
    for a, gv in zip(targs, res.graph.inputs):
        if isinstance(a, Const):
            from . import types as ft
            ins.append(st.const(a.value) if ft.of_python(a.value) is not None
                       else st.const(a.value, ir.ANY))
        else:
            ins.append(a)
    st.cur = node
    st.evaluated = None
    start = len(st.block.nodes)
    attrs = {"fn": g, "composite": body}
    if getattr(fn, "autocast", None):  # its autocast policy (_autocast.policy), for the
        attrs["autocast"] = fn.autocast  # interpreter inside jitorch.autocast
    n = st.emit("prim::CallFunction", ins, [v.type for v in g.outputs], attrs)
    if getattr(res, "returns_tuple", False):  # the graph returns the tuple's elements
        r = st.emit("prim::TupleConstruct", list(n.outputs),
                    (ir.TupleType([v.type for v in n.outputs]),)).output
    else:
        r = n.outputs[0]
    # a body that writes its arguments (`inplace=True`: x.mul_(mask)) writes the caller's
    return st.writes.call_writes(start, r, node)
