"""Library composites inside `@script`: `F.softmax`, `F.layer_norm`, the losses, ... compiled.

The composites of `jitorch.nn.functional` (and `jitorch.softmax`, `Tensor.softmax`, ...) are not
registry ops; called from scripted code they used to become `prim::PythonOp`, which sends the
WHOLE graph to the interpreter. This module compiles them the TorchScript way (design (a)): each
has a *twin* below, written in the script subset with the same arithmetic as the eager body, and
the call becomes a `prim::CallFunction` of the twin's graph (inlined by the pipeline).

Static arguments (dim, reduction, eps, normalized_shape, p, ...) must be constants at the call
site: `build(static values)` validates them in Python and returns the twin and its constant
arguments (or rejects the call); the twin's graph is then specialised on those constants
(`specialised_graph`: constants substituted, `None` tests on optional tensors folded, simplify +
dce) so branches on them vanish before the types pass sees the graph. Twins never branch on a
tensor's rank where tensors flow (that would make types unknown): per-channel and class-dim
code views the input as (N, C, m) with `reshape([n, c, -1])`, so one program serves every size.
Twins call only registry ops and factories (a helper function of this module would be a
library call again), and the softmax max shift is the nondiff `_max_shift` op (amax without
its empty-dim error: eager softmax of an empty dim is an empty tensor).

Anything a twin does not cover (a non-constant static argument, `dropout(training=True)`,
training batch_norm with running statistics, `rms_norm(eps=None)`, legacy size_average/reduce
flags, an invalid value that eager must report) returns None and the caller keeps the old
`prim::PythonOp` path, which is exactly eager (errors included, at run time).
The losses' class targets go through `_class_index` (_ops/nn_loss.py), which checks them as eager
nll_loss / cross_entropy do (dtype, shape, weight size, every target in range or ignore_index:
IndexError "Target N is out of bounds.") and is compiled with those checks.
Known gaps of the compiled twins (eager raises, compiled code does not): non-float inputs to
softmax; shape mismatches between `normalized_shape` and the input (broadcasting errors still
raise). cross_entropy with class-PROBABILITY (float) targets is not compiled: `_class_index`
raises NotImplementedError naming the case.
"""
from __future__ import annotations

import inspect
import threading
from typing import Any, Optional

from .._ops.nn_misc import embedding as _embedding_op
from .._tensor import Tensor
from . import ir

_NONE = object()  # marker: the argument was not given (use the public default)


class _Reject(Exception):
    """The call is outside what a twin covers: keep the PythonOp path."""


# --- twins (script subset; every non-tensor parameter is a constant when compiled) -------------
def _linear(input: Tensor, weight: Tensor, bias: Optional[Tensor]):
    out = input.matmul(weight.t())
    if bias is not None:
        out = out + bias
    return out


def _identity(input: Tensor):
    return input


def _normalize(input: Tensor, p: Any, dim: Any, eps: Any):
    if p == 2.0:
        nrm = (input * input).sum(dim, True).sqrt()
    elif p == 1.0:
        nrm = input.abs().sum(dim, True)
    else:
        nrm = input.abs().pow(p).sum(dim, True).pow(1.0 / p)
    return input / nrm.clamp_min(eps).expand_as(input)


def _embedding(input: Tensor, weight: Tensor, padding_idx: Any):
    return _embedding_op(input, weight, padding_idx)


# --- building a call ---------------------------------------------------------------------------
class Const:
    """A twin argument that is a Python constant (substituted into the twin's graph)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Args:
    """The bound call: `st(name)` a static value (or _Reject), `t(name)` a runtime value,
    `opt(name)` an optional tensor (Const(None) or the value)."""

    def __init__(self, values: dict, defaults: dict):
        self.values, self.defaults = values, defaults

    def st(self, name):
        v = self.values.get(name, _NONE)
        if v is _NONE:
            return self.defaults[name]
        return _static(v, name)

    def t(self, name):
        v = self.values.get(name, _NONE)
        if v is _NONE:
            raise _Reject(f"'{name}' missing")
        return v

    def st_or_value(self, name):
        """Const(value) when static, else the run-time value (a bool the runtime specialises
        on, so `if flag:` in the twin folds per call signature)."""
        try:
            return Const(self.st(name))
        except _Reject:
            return self.t(name)

    def opt(self, name):
        v = self.values.get(name, _NONE)
        if v is _NONE or (v.node is not None and v.node.op == "prim::Constant"
                          and v.node.attrs.get("value", 0) is None):
            return Const(None)
        return v


def _static(v, name):
    n = v.node
    if n is not None and n.op in ("prim::ListConstruct", "prim::TupleConstruct"):
        return tuple(_static(i, name) for i in n.inputs)
    if n is not None and n.op == "prim::ScalarOp":  # `not self._flag`, `self.a * 2`
        from .interpreter import SCALAR_OPS
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


def _int(v, name="dim"):
    if isinstance(v, bool) or not isinstance(v, int):
        raise _Reject(f"'{name}' must be an int")
    return v


def _b_linear(a):
    return _linear, [a.t("input"), a.t("weight"), a.opt("bias")]


def _b_dropout(a):
    p, training, inplace = a.st("p"), a.st("training"), a.st("inplace")
    if not isinstance(p, (int, float)) or p < 0.0 or p > 1.0 or inplace:
        raise _Reject("dropout p/inplace")
    if training and p != 0:
        raise _Reject("random dropout")  # the random mask stays with eager's generator
    return _identity, [a.t("input")]


def _b_normalize(a):
    p = a.st("p")
    if a.st("out") is not None or isinstance(p, bool) or not isinstance(p, (int, float)) \
            or not 0 < p < float("inf"):
        raise _Reject("out= or a p without a sum-of-powers form")
    return _normalize, [a.t("input"), Const(float(p)), Const(_int(a.st("dim"))),
                        Const(a.st("eps"))]


def _b_embedding(a):
    if a.st("max_norm") is not None or a.st("scale_grad_by_freq") or a.st("sparse"):
        raise _Reject("max_norm / scale_grad_by_freq / sparse")  # eager says what is missing
    pad = a.st("padding_idx")
    if pad is not None:
        _int(pad, "padding_idx")
    return _embedding, [a.t("input"), a.t("weight"), Const(pad)]


_BUILDERS: dict = {}


def _table() -> dict:
    """public callable -> builder (filled on first use: nn.functional imports late)."""
    if _BUILDERS:
        return _BUILDERS
    from .._ops import nn_misc as misc, nn_norm as norm
    from ..nn import functional as F
    for fn, b in ((norm.normalize, _b_normalize), (misc.linear, _b_linear),
                  (misc.dropout, _b_dropout),
                  (F.embedding, _b_embedding)):
        _BUILDERS[fn] = b
    return _BUILDERS


# --- the twin's graph specialised on its constants ----------------------------------------------
_lock = threading.RLock()
_graphs: dict = {}


def _key(v):
    return (type(v).__name__, repr(v))


def specialised_graph(twin, res, targs) -> ir.Graph:
    """`res.graph` (the twin compiled) with the Const arguments substituted, `x is None` tests
    on tensor arguments folded, then simplify + dce: branches on static values disappear."""
    from . import frontend_types as ft
    from .ir_util import clone_graph, replace_all_uses, walk_blocks
    from .passes import dce, simplify
    def is_tensor(a):  # a caller's value that is a Tensor (an Optional one may be None)
        return isinstance(getattr(a, "type", None), ir.TensorType)
    key = (twin, tuple(_key(a.value) if isinstance(a, Const) else "T" if is_tensor(a) else "V"
                       for a in targs))
    with _lock:
        g = _graphs.get(key)
        if g is not None:
            return g
        g = clone_graph(res.graph)
        consts, tensors = [], set()
        for inp, a in zip(g.inputs, targs):
            if isinstance(a, Const):
                ty = ft.of_python(a.value) or ir.ANY
                n = ir.Node("prim::Constant", (), (ty,), {"value": a.value})
                consts.append(n)
                replace_all_uses(g, inp, n.output)
            elif isinstance(ft.base(inp.type), ir.TensorType) and is_tensor(a):
                tensors.add(inp)
        g.block.nodes[:0] = consts
        for b in walk_blocks(g.block):
            for n in b.nodes:
                if n.op == "prim::ScalarOp" and n.attrs.get("fn") in ("is", "is_not") and \
                        any(v in tensors for v in n.inputs) and any(
                        v.node is not None and v.node.op == "prim::Constant" and
                        v.node.attrs.get("value", 0) is None for v in n.inputs):
                    n.op, n.inputs = "prim::Constant", []
                    n.attrs = {"value": n.attrs["fn"] == "is_not"}
        for inp in tensors:
            inp.type = ft.tensor()
        simplify.run(g)
        dce.run(g)
        _graphs[key] = g
        return g


def _bind(fc, fn, node, recv):
    """(values: name -> IR value of the arguments given, defaults) or None."""
    args, kwargs = fc._args(node)
    fc._evaluated = (args, kwargs)
    try:
        sig = inspect.signature(fn, follow_wrapped=False)
        bound = sig.bind(*(([recv] if recv is not None else []) + list(args)), **kwargs)
    except (TypeError, ValueError):
        return None
    values = {}
    for name, v in bound.arguments.items():
        try:
            values["input" if name == "self" else name] = fc.to_value(v)
        except Exception:
            return None
    defaults = {("input" if p.name == "self" else p.name): p.default
                for p in sig.parameters.values()}
    return values, defaults


def _is_const_none(v) -> bool:
    n = v.node
    return n is not None and n.op == "prim::Constant" and n.attrs.get("value", 0) is None


def _composite_call(fc, comp, ignore, values, defaults):
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


def compile_call(fc, fn, node, recv=None):
    """The scripted call `fn(...)` (`recv.fn(...)` for a method) of a library composite as a
    `prim::CallFunction` of its body (or twin), or None (the caller falls back to a
    prim::PythonOp; `fc._evaluated` then holds the evaluated arguments so they are not emitted
    twice)."""
    from .._ops.composite import Unsupported, composite_of
    found = composite_of(fn)
    build = None if found is not None else _table().get(fn)
    if found is None and build is None:
        return None
    b = _bind(fc, fn, node, recv)
    if b is None:
        return None
    values, defaults = b
    try:
        if found is not None:
            twin, targs = _composite_call(fc, found[0], found[1], values, defaults)
        else:
            twin, targs = build(_Args(values, defaults))
    except (_Reject, Unsupported, TypeError, ValueError, KeyError, IndexError, RuntimeError,
            AssertionError, NotImplementedError):
        return None
    from .frontend import compile_function
    res = compile_function(twin)
    g = specialised_graph(twin, res, targs)
    fc.python_ops.extend(res.python_ops)
    ins = []
    for a, gv in zip(targs, res.graph.inputs):
        if isinstance(a, Const):
            from . import frontend_types as ft
            ins.append(fc.const(a.value) if ft.of_python(a.value) is not None
                       else fc.const(a.value, ir.ANY))
        else:
            ins.append(a)
    fc.cur = node
    fc._evaluated = None
    n = fc.emit("prim::CallFunction", ins, [v.type for v in g.outputs], {"fn": g})
    if getattr(res, "returns_tuple", False):  # the graph returns the tuple's elements
        return fc.emit("prim::TupleConstruct", list(n.outputs),
                       (ir.TupleType([v.type for v in n.outputs]),)).output
    return n.outputs[0]
