"""Method calls in the scripting frontend: what `x.m(args)` becomes (`st.methods`).

- Tensor methods: casts (`x.float()`, `x.to(dtype)` -> `_to_dtype`), shape reads (`x.size(d)`,
  `x.dim()`) and `x.item()`; registry ops bound like their function (frontend/call.py); in-place
  methods as writes (frontend/alias.py, asked first); `x.new_zeros(...)` factories; library
  composites (`x.softmax(d)`); other methods a `prim::PythonOp` (holds the GIL);
- `lst.append(v)` / `lst.extend(vs)` rebind the receiver name (values are immutable);
- dict/str/list reads (`keys`, `get`, `join`, ...) a `prim::PythonOp`; mutating ones refused;
- methods of script classes (frontend/classes.py): `prim::CallFunction` of the method's graph.
"""
from __future__ import annotations

import ast

from . import composite as frontend_nn
from . import dict_methods, list_methods
from . import factory as factories
from . import types as ft
from .. import ir
from .call import _CASTS, _LIST_OUT, _SCALAR_METHODS, _TUPLE2, _TUPLE2_WITH_DIM, op_of


class MethodBuilder:
    """Method calls for one function (`st.methods`)."""

    __slots__ = ("st",)  # its only state is the shared one

    def __init__(self, st):
        self.st = st

    # -- methods -------------------------------------------------------------------------
    def method_call(self, bm, node):
        from ..._tensor import Tensor
        st = self.st
        r = st.writes.inplace_call(bm, node)  # x.add_(y), x.copy_(y), ...: a write
        if r is not None:
            return r
        v, name = bm.value, bm.name
        t = ft.base(v.type)
        if isinstance(t, ir.ClassType):
            return self.class_method_call(v, t, name, node)
        if isinstance(t, (ir.TensorType, ir.AnyType)):
            if name in _CASTS:
                from ... import _dtype as dt
                if node.args or node.keywords:
                    st.fail(f"Tensor.{name}() takes no arguments in scripted code", node)
                return st.calls.call_op("_to_dtype", [v, st.const(getattr(dt, _CASTS[name]))])
            if name == "to" and len(node.args) == 1 and not node.keywords:
                a = st.exprs.expr_value(node.args[0])
                st.cur = node
                if isinstance(a.type, ir.DTypeType):
                    return st.calls.call_op("_to_dtype", [v, a])
            if name in ("size", "dim", "ndimension", "item"):
                args, kwargs = st.calls.eval_args(node)
                if name == "size" and args:
                    return st.exprs.tensor_size(v, st.exprs.to_value(args[0]))
                if name == "size":
                    return st.emit("prim::GetAttr", [v], (ir.ListType(ir.INT),),
                                   {"name": "shape"}).output
                if name in ("dim", "ndimension"):
                    return st.emit("prim::GetAttr", [v], (ir.INT,), {"name": "ndim"}).output
                return st.emit("prim::TensorToScalar", [v], (ir.FLOAT,), {"type": None}
                               ).output
            if name.endswith("_") and not name.endswith("__") and \
                    isinstance(bm.node.value, ast.Name):
                f = getattr(Tensor, name[:-1], None)
                op = op_of(f)
                if op is not None:  # x.add_(y): x = add(x, y), rebinding the name
                    args, kwargs = st.calls.eval_args(node)
                    r = st.calls.op_call(op, [v] + args, kwargs, node)
                    st.env[bm.node.value.id] = r
                    return r
            fac = factories.factory_op(name)
            if fac is not None and fac.extra["method"]:  # x.new_zeros(...): a factory node
                r = factories.frontend_call(st, name, node, recv=v)
                return r if r is not None else st.calls.python_call(
                    None, node, ft.tensor(), method=name, recv=v, evaluated=st.evaluated)
            f = getattr(Tensor, name, None)
            if f is None:
                st.fail(f"Tensor has no method '{name}'", node)
            op = op_of(f)
            # an op whose method normalises calls its signature does not take (x.view(dtype):
            # `varargs_norm`) is an overload: the op when the call binds (overload_op below)
            if op is not None and op.extra.get("varargs_norm") is None:
                args, kwargs = st.calls.eval_args(node)
                return st.calls.op_call(op, [v] + args, kwargs, node)
            st.evaluated = None
            r = frontend_nn.compile_call(st, f, node, recv=v)  # x.softmax(dim), ...
            if r is not None:
                return r
            r = None if st.evaluated is not None else st.calls.overload_op(f, name, node,
                                                                            recv=v)
            if r is not None:
                return r
            out = _SCALAR_METHODS.get(name, ft.tensor())
            if name in _TUPLE2 or name in _TUPLE2_WITH_DIM and (node.args or any(
                    k.arg == "dim" for k in node.keywords)):
                out = ir.TupleType([ft.tensor(), ft.tensor()])
            elif name in _LIST_OUT:
                out = ir.ListType(ft.tensor())
            return st.calls.python_call(None, node, out, method=name, recv=v,
                                    evaluated=st.evaluated)
        if isinstance(t, ir.ListType) and name in list_methods.METHODS and not (
                name in ("append", "extend") and isinstance(bm.node.value, ast.Name)):
            return list_methods.list_method(st, bm, node)  # insert, pop, d[k].append, ...
        if isinstance(t, ir.ListType) and name in ("append", "extend"):
            args, _ = st.calls.eval_args(node)
            if len(args) != 1:
                st.fail(f"list.{name}() takes one argument", node)
            x = st.exprs.to_value(args[0])
            if name == "append":
                x = st.emit("prim::ListConstruct", [x], (ir.ListType(x.type),)).output
            u = ft.unify(t, x.type) or t
            r = st.exprs.scalar_op("add", [v, x], u)
            st.env[bm.node.value.id] = r
            return st.const(None)
        if isinstance(t, ir.DictType) and name in dict_methods.METHODS:
            return dict_methods.dict_method(st, bm, node)  # items(), pop, d[k].update, ...
        if isinstance(t, (ir.DictType, ir.StrType, ir.ListType)):
            out = {"keys": ir.ListType(getattr(t, "key", ir.ANY)),
                   "values": ir.ListType(getattr(t, "value", ir.ANY)),
                   "get": getattr(t, "value", ir.ANY), "format": ir.STR, "join": ir.STR,
                   "lower": ir.STR, "upper": ir.STR, "strip": ir.STR, "index": ir.INT,
                   "count": ir.INT, "startswith": ir.BOOL, "endswith": ir.BOOL}.get(name, ir.ANY)
            if name in ("pop", "insert", "remove", "clear", "update", "setdefault", "sort",
                        "reverse"):
                st.fail(f"mutating {t}.{name}() is not supported in scripted code", node)
            return st.calls.python_call(None, node, out, method=name, recv=v)
        st.fail(f"a value of type {v.type} has no method '{name}' in scripted code", node)

    def class_info(self, t):
        from .classes import class_info
        return class_info(t.name)

    def class_method_call(self, v, t, name, node):
        from .classes import compile_method
        st = self.st
        info = self.class_info(t)
        if info is None or not hasattr(info.cls, name):
            st.fail(f"class {t.name} has no method '{name}'", node)
        res = compile_method(info, name)
        st.python_ops.extend(res.python_ops)
        args, kwargs = st.calls.eval_args(node)
        try:
            bound = res.signature.bind(None, *args, **kwargs)
        except TypeError as e:
            st.fail(f"{t.name}.{name}(): {e}", node)
        ins = [v]
        for p, gv in list(zip(res.signature.parameters, res.graph.inputs))[1:]:
            if p in bound.arguments:
                ins.append(st.exprs.coerce(bound.arguments[p], gv.type, node))
            else:
                ins.append(st.const(res.defaults[p]))
        st.cur = node
        n = st.emit("prim::CallFunction", ins, [o.type for o in res.graph.outputs],
                    {"fn": res.graph})
        if res.returns_tuple:
            return st.emit("prim::TupleConstruct", n.outputs,
                           (ir.TupleType([o.type for o in n.outputs]),)).output
        return n.outputs[0]
