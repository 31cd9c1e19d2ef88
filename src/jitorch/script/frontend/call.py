"""Calls in the scripting frontend (a mixin): what `f(args)` and `x.m(args)` become.

- registry ops (a public function or Tensor method that IS an op's function): a node named by
  the op with every param of `OPS[name].params`, bound like Python binds the call (kwargs,
  defaults, `*size` varargs); static list/tuple arguments become constant tuples;
- `x.float()`/`.double()`/`.long()`/... and `x.to(dtype)` -> `_to_dtype`; `x.size(d)`,
  `x.dim()`, `x.item()`, `len(x)`: shape reads and `prim::TensorToScalar`;
- in-place tensor methods `x.add_(y)` and `lst.append(v)` rebind the receiver name to the
  out-of-place result (values in this IR are immutable);
- builtins (len, min, max, abs, int, float, bool, str, isinstance, print, round) and `math.*`:
  `prim::ScalarOp` (`fn="math.sqrt"`, ...);
- `jitorch.jit.annotate/is_scripting`: folded; `@ignore`d functions: `prim::PythonOp`; `@unused`
  ones: `prim::Raise`;
- plain Python functions (and scripted ones, via `__wrapped__`): compiled recursively ->
  `prim::CallFunction` (attrs fn=Graph);
- tensor factories (`zeros(B, H)`, `arange(n)`, `x.new_zeros(...)`): factory nodes (registry
  ops declared in `_ops/factories.py`, bound by `frontend/factory.py`; compiled; a PythonOp
  where the call is not static enough);
- library composites (`F.softmax`, `F.layer_norm`, `F.linear`, the losses, `x.softmax(d)`):
  a `prim::CallFunction` of the composite's one body (`_ops/composite`, `frontend/composite.py`)
  when the static arguments are constants;
- other library callables (random factories, composites outside what their body covers):
  `prim::PythonOp` calling the function (correct through the interpreter; holds the GIL).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import math

from . import factory as factories
from . import composite as frontend_nn
from . import types as ft
from .. import ir

_CASTS = {"float": "float32", "double": "float64", "half": "float16", "bfloat16": "bfloat16",
          "long": "int64", "int": "int32", "short": "int16", "char": "int8", "byte": "uint8",
          "bool": "bool", "cfloat": "complex64", "cdouble": "complex128"}
_TUPLE2 = {"sort", "topk", "kthvalue", "mode", "cummax", "cummin", "aminmax", "slogdet", "qr",
           "frexp", "std_mean", "var_mean"}
_TUPLE2_WITH_DIM = {"max", "min", "median", "nanmedian"}
_LIST_OUT = {"unbind", "chunk", "split", "tensor_split", "hsplit", "vsplit", "dsplit",
             "split_with_sizes", "meshgrid", "broadcast_tensors", "unsafe_split"}
# public functions/methods that wrap the op of the same name (checks, overloads)
_SAME_AS_OP = frozenset({"sub", "pow", "logical_and", "logical_or", "logical_xor", "view",
                         "where", "lerp", "addcdiv"})
# guarded functions whose check the op's own dtype rule and kernels repeat (their in-place
# methods `x.lerp_(...)` / `x.addcdiv_(...)` must compile like `x.addcmul_(...)`)
_GUARDED_SAME_OP = frozenset({"lerp", "addcdiv"})
_SCALAR_METHODS = {"numel": ir.INT, "element_size": ir.INT, "is_contiguous": ir.BOOL,
                   "is_floating_point": ir.BOOL, "is_complex": ir.BOOL, "tolist": ir.ANY,
                   "nelement": ir.INT, "get_device": ir.INT, "data_ptr": ir.INT}
_MATH_INT = {"floor", "ceil", "trunc", "factorial", "gcd", "comb", "perm", "isqrt"}
_MATH_BOOL = {"isnan", "isinf", "isfinite", "isclose"}

# op attributes whose value the code generator needs at compile time (a dim, a shape, a dtype):
# a function argument flowing straight into one is a static argument (part of the
# specialisation key). Indices such as select's `index` stay runtime values.
STATIC_PARAMS = frozenset({"dim", "dims", "keepdim", "dtype", "shape", "size", "sizes",
                           "start_dim", "end_dim", "dim0", "dim1", "source", "destination",
                           "correction", "unbiased", "basic", "adv"})

_fn_to_op: dict = {}


def op_of(fn):
    """The registry op whose public function/method `fn` is, or None."""
    from ..._ops import registry
    if len(_fn_to_op) != len(registry.OPS):
        _fn_to_op.clear()
        for op in registry.OPS.values():
            f = getattr(op, "fn", None)
            if f is not None:
                _fn_to_op[f] = op
    try:
        op = _fn_to_op.get(fn)
    except TypeError:
        return None
    if op is None:  # lerp/addcdiv are guarded (an argument check, then the op): same op
        inner = _fn_to_op.get(getattr(fn, "__wrapped__", None))
        if inner is not None and inner.name in _GUARDED_SAME_OP:
            return inner
    return op


class KwCall:
    """Calls `fn(*pos, **dict(zip(kwnames, trailing values)))` for a prim::PythonOp."""

    def __init__(self, fn, npos, kwnames, method=None):
        self.fn, self.npos, self.kwnames, self.method = fn, npos, tuple(kwnames), method
        self.__qualname__ = method or getattr(fn, "__qualname__", "fn")

    def __call__(self, *vals):
        if self.method is not None:
            recv, vals = vals[0], vals[1:]
            f = getattr(recv, self.method)
        else:
            f = self.fn
        pos = vals[:self.npos]
        kw = dict(zip(self.kwnames, vals[self.npos:]))
        return f(*pos, **kw)


class CallMixin:
    _evaluated = None  # call arguments already compiled by overload_op (not to emit twice)
    def call(self, node):
        from .expr import BoundMethod, Sugar
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.fail("*args in calls are not supported in scripted code", a)
        for k in node.keywords:
            if k.arg is None:
                self.fail("**kwargs in calls are not supported in scripted code", k.value)
        f = self.expr(node.func)
        self.cur = node
        if isinstance(f, BoundMethod):
            return self.method_call(f, node)
        if isinstance(f, Sugar):
            return self.call_python(f.obj, node)
        self.fail(f"a value of type {f.type} is not callable in scripted code", node.func)

    def _args(self, node, skip=0):
        args = [self.expr(a) for a in node.args[skip:]]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        self.cur = node
        return args, kwargs

    # -- registry ops ----------------------------------------------------------------------
    def call_op(self, name, args, kwargs=None):
        from ..._ops import registry
        op = registry.OPS[name]
        return self.op_call(op, args, kwargs or {})

    def op_call(self, op, args, kwargs, node=None):
        from .expr import Sugar
        node = node or self.cur
        sig = op.extra.get("_sig")
        if sig is None:
            sig = inspect.signature(op.fn)
            op.extra["_sig"] = sig
        if "out" in kwargs:
            self.fail("out= is not supported in scripted code", node)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            self.fail(f"{op.name}(): {e}", node)
        varargs = op.extra.get("varargs")
        inputs = []
        for p in op.params:
            param = sig.parameters.get(p)
            if p in bound.arguments:
                v = bound.arguments[p]
                if p == varargs:
                    extra = bound.arguments.get("_kw") or {}
                    if p in extra:
                        v = (extra[p],)
                    v = self._varargs(v)
                elif p in op.lists:
                    v = self.to_value(v)
                else:
                    v = self._op_arg(v, p in op.tensors)
                    # (a tensor slot named like one, index_add's `source`, is not static)
                    if p in STATIC_PARAMS and p not in op.tensors and v in self.graph.inputs:
                        self.static_args.add(v.name)
            elif param is not None and param.default is not inspect.Parameter.empty:
                v = self.const(param.default) if ft.of_python(param.default) is not None \
                    else self.const(param.default, ir.ANY)
            elif p == varargs:
                v = self.const(())
            else:
                self.fail(f"{op.name}() missing required argument '{p}'", node)
            inputs.append(v)
        if isinstance(kwargs.get("_kw"), Sugar):
            pass
        self.cur = node
        if op.name in _LIST_OUT:  # a variable number of results: one List[Tensor] output
            return self.emit(op.name, inputs, (ir.ListType(ft.tensor()),)).output
        if op.name in _TUPLE2:
            n = self.emit(op.name, inputs, (ft.tensor(), ft.tensor()))
            return self.emit("prim::TupleConstruct", n.outputs,
                             (ir.TupleType([ft.tensor(), ft.tensor()]),)).output
        return self.emit(op.name, inputs, (ft.tensor(),)).output

    def overload_op(self, f, name, node, recv=None):
        """A public wrapper over an op of the same name (extra eager checks, or an overload
        such as `view(dtype)`): the op when the call binds to the op's own signature."""
        from ..._ops import registry
        inner = op_of(getattr(f, "__wrapped__", None))
        if inner is None and name in _SAME_AS_OP:
            inner = registry.OPS.get(name)
        if inner is None:
            return None
        self._evaluated = args, kwargs = self._args(node)
        if recv is not None:
            args = [recv] + args
        try:
            inspect.signature(inner.fn).bind(*args, **kwargs)
        except TypeError:
            return None
        from .expr import Sugar

        def is_dtype(a):
            if isinstance(a, Sugar):
                return isinstance(ft.of_python(a.obj), ir.DTypeType)
            return isinstance(a, ir.Value) and isinstance(a.type, ir.DTypeType)
        if any(is_dtype(a) for a in list(args) + list(kwargs.values())):
            return None
        return self.op_call(inner, args, kwargs, node)

    def _op_arg(self, v, tensor_slot):
        v = self.to_value(v)
        if not tensor_slot and v.node is not None and v.node.op in (
                "prim::ListConstruct", "prim::TupleConstruct") and all(
                i.node is not None and i.node.op == "prim::Constant" for i in v.node.inputs):
            return self.const(tuple(i.node.attrs["value"] for i in v.node.inputs))
        return v

    def _varargs(self, vals):
        vals = list(vals)
        if len(vals) == 1:
            v = self.to_value(vals[0])
            if isinstance(ft.base(v.type), (ir.ListType, ir.TupleType, ir.AnyType)):
                return self._op_arg(v, False)
            vals = [v]
        vals = [self.to_value(v) for v in vals]
        consts = [v.node.attrs["value"] for v in vals
                  if v.node is not None and v.node.op == "prim::Constant"]
        if len(consts) == len(vals):
            return self.const(tuple(consts))
        return self.emit("prim::TupleConstruct", vals,
                         (ir.TupleType([v.type for v in vals]),)).output

    # -- Python objects ----------------------------------------------------------------------
    def call_python(self, obj, node):
        from . import lang
        op = op_of(obj)
        if op is not None:
            args, kwargs = self._args(node)
            return self.op_call(op, args, kwargs, node)
        if obj is lang.is_scripting or getattr(obj, "__name__", "") == "is_scripting" and \
                getattr(obj, "__module__", "").startswith(("jitorch", "torch")):
            return self.const(True)
        if obj is lang.annotate or getattr(obj, "__name__", "") == "annotate" and \
                getattr(obj, "__module__", "").startswith(("jitorch", "torch")):
            if len(node.args) != 2:
                self.fail("annotate(type, value) takes two arguments", node)
            ty = self.annotation(node.args[0])
            v = self.expr(node.args[1], hint=ty)
            self.cur = node
            return self.coerce(v, ty, node.args[1])
        if obj in (builtins.len, builtins.min, builtins.max, builtins.abs, builtins.int,
                   builtins.float, builtins.bool, builtins.str, builtins.isinstance,
                   builtins.print, builtins.round, builtins.list, builtins.range,
                   builtins.sum, builtins.divmod, builtins.pow):
            return self.call_builtin(obj, node)
        if getattr(obj, "_jitorch_unused", False):
            args, kwargs = self._args(node)
            self.emit("prim::Raise", [self.const(f"'{obj.__qualname__}' was marked "
                                                 "@jitorch.jit.unused and cannot be called")],
                      (), {"exc": "RuntimeError"})
            return self.const(None)
        if getattr(obj, "_jitorch_ignore", False):
            # a library function kept out of scripting may still be a composite whose body
            # compiles (multi_head_attention_forward); otherwise a Python call
            self._evaluated = None
            r = frontend_nn.compile_call(self, obj, node)
            if r is not None:
                return r
            return self.python_call(obj, node, self._return_type(obj), evaluated=self._evaluated)
        if getattr(obj, "__module__", None) == "math" or (
                isinstance(obj, type(math.sqrt)) and getattr(obj, "__self__", None) is math):
            return self.math_call(obj, node)
        wrapped = getattr(obj, "__wrapped__", None)
        if type(obj).__name__ == "ScriptFunction" and wrapped is not None:
            obj = wrapped
        if isinstance(obj, type) and getattr(obj, "_jitorch_script_class", False):
            return self.python_call(obj, node, ir.ClassType(obj.__qualname__))
        if isinstance(obj, type) and issubclass(obj, BaseException):
            self.fail("exceptions can only be raised in scripted code", node)
        fname = factories.factory_of(obj)
        if fname is not None:  # zeros(B, H), arange(n), ...: a factory node
            r = factories.frontend_call(self, fname, node)
            return r if r is not None else self.library_call(obj, node)
        mod = getattr(obj, "__module__", "") or ""
        if mod == "jitorch" or mod.startswith("jitorch.") or mod.startswith("torch"):
            self._evaluated = None
            r = frontend_nn.compile_call(self, obj, node)  # F.softmax, F.layer_norm, losses...
            if r is not None:
                return r
            if self._evaluated is not None:
                return self.library_call(obj, node)
            r = self.overload_op(obj, getattr(obj, "__name__", ""), node)
            if r is not None:
                return r
            return self.library_call(obj, node)
        if inspect.isfunction(obj):
            return self.function_call(obj, node)
        self._args(node)  # errors inside the arguments come first
        self.fail(f"cannot call '{getattr(obj, '__name__', obj)}' in scripted code", node)

    def _return_type(self, fn):
        try:
            ann = inspect.signature(fn).return_annotation
        except (TypeError, ValueError):
            return ir.ANY
        if ann is inspect.Signature.empty:
            return ir.ANY
        try:
            if isinstance(ann, str):
                ann = eval(ann, getattr(fn, "__globals__", {}))
            return ft.from_annotation(ann)
        except Exception:
            return ir.ANY

    def python_call(self, fn, node, out_type, skip=0, method=None, recv=None, evaluated=None):
        args, kwargs = evaluated if evaluated is not None else self._args(node, skip)
        vals = [self.to_value(a) for a in args]
        kvals = [self.to_value(v) for v in kwargs.values()]
        pre = [recv] if recv is not None else []
        call = KwCall(fn, len(vals), list(kwargs), method)
        self.cur = node
        return self.python_op(call, pre + vals + kvals, (out_type,),
                              name=method or getattr(fn, "__qualname__", None)).output

    def library_call(self, fn, node):
        name = getattr(fn, "__name__", "")
        out = ft.tensor()
        if name in _TUPLE2 or name in _TUPLE2_WITH_DIM and (
                len(node.args) >= 2 and not self._is_tensor_arg(node.args[1])
                or any(k.arg == "dim" for k in node.keywords)):
            out = ir.TupleType([ft.tensor(), ft.tensor()])
        elif name in _LIST_OUT:
            out = ir.ListType(ft.tensor())
        return self.python_call(fn, node, out, evaluated=self._evaluated)

    def _is_tensor_arg(self, a) -> bool:
        saved = self.block
        self.block = ir.Block()  # probe the type without keeping nodes
        try:
            return ft.is_tensor(self.expr_value(a).type)
        finally:
            self.block = saved

    def function_call(self, fn, node):
        from .function import compile_function
        res = compile_function(fn)
        self.python_ops.extend(res.python_ops)
        sig = res.signature
        args, kwargs = self._args(node)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            self.fail(f"{fn.__qualname__}(): {e}", node)
        ins = []
        for p, gv in zip(sig.parameters, res.graph.inputs):
            if p in bound.arguments:
                v = self.coerce(bound.arguments[p], gv.type, node)
            else:
                v = self.const(res.defaults[p]) if ft.of_python(res.defaults[p]) is not None \
                    else self.const(res.defaults[p], gv.type)
            ins.append(v)
        self.cur = node
        n = self.emit("prim::CallFunction", ins, [v.type for v in res.graph.outputs],
                      {"fn": res.graph})
        if res.returns_tuple:
            return self.emit("prim::TupleConstruct", n.outputs,
                             (ir.TupleType([o.type for o in n.outputs]),)).output
        return n.outputs[0]

    def math_call(self, fn, node):
        name = fn.__name__
        args, kwargs = self._args(node)
        if kwargs:
            self.fail(f"math.{name}() keyword arguments are not supported", node)
        vals = [self.to_value(a) for a in args]
        for a, v in zip(node.args, vals):
            if not ft.is_number(v.type):
                self.fail(f"math.{name}() takes numbers, not {v.type}", a)
        ty = ir.INT if name in _MATH_INT else ir.BOOL if name in _MATH_BOOL else ir.FLOAT
        return self.scalar_op(f"math.{name}", vals, ty)

    # -- builtins ----------------------------------------------------------------------------
    def call_builtin(self, fn, node):
        name = fn.__name__
        if name == "range":
            self.fail("range() is only supported as the iterable of a for loop or "
                      "comprehension", node)
        if name == "isinstance":
            return self.isinstance_call(node)
        args, kwargs = self._args(node)
        vals = [self.to_value(a) for a in args]
        if name == "print":
            self.emit("prim::Print", vals, ())
            return self.const(None)
        if kwargs:
            self.fail(f"{name}() keyword arguments are not supported in scripted code", node)
        if name == "len":
            if len(vals) != 1:
                self.fail("len() takes one argument", node)
            t = ft.base(vals[0].type)
            if isinstance(t, ir.TupleType):
                return self.const(len(t.elems))
            if isinstance(t, ir.TensorType):
                return self.tensor_size(vals[0], 0)
            return self.scalar_op("len", vals, ir.INT)
        if name in ("int", "float", "bool"):
            ty = {"int": ir.INT, "float": ir.FLOAT, "bool": ir.BOOL}[name]
            if len(vals) != 1:
                self.fail(f"{name}() takes one argument in scripted code", node)
            if ft.is_tensor(vals[0].type):
                return self.emit("prim::TensorToScalar", vals, (ty,), {"type": name}).output
            return self.scalar_op(name, vals, ty)
        if name == "str":
            return self.scalar_op("str", vals, ir.STR)
        if name == "list":
            t = vals[0].type if vals else ir.ListType(ir.ANY)
            return self.scalar_op("list", vals, t if isinstance(t, ir.ListType) else
                                  ir.ListType(ir.ANY))
        if any(ft.is_tensor(v.type) for v in vals):
            self.fail(f"{name}() on tensors is not supported in scripted code; use "
                      f"jitorch.{name if name != 'abs' else 'abs'}", node)
        if name == "divmod":
            if len(vals) != 2 or not all(ft.is_number(v.type) for v in vals):
                self.fail("divmod() takes two numbers in scripted code", node)
            q, r = self.binop(ast.FloorDiv, *vals, node), self.binop(ast.Mod, *vals, node)
            return self.emit("prim::TupleConstruct", [q, r],
                             (ir.TupleType([q.type, r.type]),)).output
        if name == "pow":
            if len(vals) != 2:
                self.fail("pow() takes two arguments in scripted code (no modulus)", node)
            return self.binop(ast.Pow, *vals, node)
        if name == "abs":
            return self.scalar_op("abs", vals, self.scalar_type("abs", vals))
        if name == "round":
            return self.scalar_op("round", vals, ir.INT if len(vals) == 1 else ir.FLOAT)
        if len(vals) == 1 and isinstance(ft.base(vals[0].type), ir.ListType):
            return self.scalar_op(name, vals, ft.base(vals[0].type).elem)
        return self.scalar_op(name, vals, self.scalar_type(name, vals))

    def isinstance_call(self, node):
        if len(node.args) != 2:
            self.fail("isinstance() takes two arguments", node)
        v = self.expr_value(node.args[0])
        cls = self.resolve_static_types(node.args[1])
        self.cur = node
        t = v.type
        wanted = []
        for c in cls:
            try:
                wanted.append(ft.from_annotation(c))
            except ft.AnnotationError:
                self.fail(f"isinstance() with {c!r} is not supported", node.args[1])

        def match(have, want):
            if isinstance(want, ir.TensorType):
                return isinstance(have, ir.TensorType)
            if isinstance(want, (ir.ListType, ir.TupleType, ir.DictType)):
                return type(have) is type(want)
            return have == want
        if isinstance(t, ir.OptionalType):
            if any(match(t.elem, w) for w in wanted):
                return self.scalar_op("is_not", [v, self.const(None)], ir.BOOL)
            return self.const(False)  # a non-None value of another type
        return self.const(any(match(t, w) for w in wanted))

    def resolve_static_types(self, node):
        if isinstance(node, ast.Tuple):
            return [x for e in node.elts for x in self.resolve_static_types(e)]
        try:
            return [self.scope.eval(node)]
        except Exception as e:
            self.fail(f"cannot resolve the type ({e})", node)

    # -- methods -------------------------------------------------------------------------
    def method_call(self, bm, node):
        from ..._tensor import Tensor
        v, name = bm.value, bm.name
        t = ft.base(v.type)
        if isinstance(t, ir.ClassType):
            return self.class_method_call(v, t, name, node)
        if isinstance(t, (ir.TensorType, ir.AnyType)):
            if name in _CASTS:
                from ... import _dtype as dt
                if node.args or node.keywords:
                    self.fail(f"Tensor.{name}() takes no arguments in scripted code", node)
                return self.call_op("_to_dtype", [v, self.const(getattr(dt, _CASTS[name]))])
            if name == "to" and len(node.args) == 1 and not node.keywords:
                a = self.expr_value(node.args[0])
                self.cur = node
                if isinstance(a.type, ir.DTypeType):
                    return self.call_op("_to_dtype", [v, a])
            if name in ("size", "dim", "ndimension", "item"):
                args, kwargs = self._args(node)
                if name == "size" and args:
                    return self.tensor_size(v, self.to_value(args[0]))
                if name == "size":
                    return self.emit("prim::GetAttr", [v], (ir.ListType(ir.INT),),
                                     {"name": "shape"}).output
                if name in ("dim", "ndimension"):
                    return self.emit("prim::GetAttr", [v], (ir.INT,), {"name": "ndim"}).output
                return self.emit("prim::TensorToScalar", [v], (ir.FLOAT,), {"type": None}
                                 ).output
            if name.endswith("_") and not name.endswith("__") and \
                    isinstance(bm.node.value, ast.Name):
                f = getattr(Tensor, name[:-1], None)
                op = op_of(f)
                if op is not None:  # x.add_(y): x = add(x, y), rebinding the name
                    args, kwargs = self._args(node)
                    r = self.op_call(op, [v] + args, kwargs, node)
                    self.env[bm.node.value.id] = r
                    return r
            fac = factories.factory_op(name)
            if fac is not None and fac.extra["method"]:  # x.new_zeros(...): a factory node
                r = factories.frontend_call(self, name, node, recv=v)
                return r if r is not None else self.python_call(
                    None, node, ft.tensor(), method=name, recv=v, evaluated=self._evaluated)
            f = getattr(Tensor, name, None)
            if f is None:
                self.fail(f"Tensor has no method '{name}'", node)
            op = op_of(f)
            if op is not None:
                args, kwargs = self._args(node)
                return self.op_call(op, [v] + args, kwargs, node)
            self._evaluated = None
            r = frontend_nn.compile_call(self, f, node, recv=v)  # x.softmax(dim), ...
            if r is not None:
                return r
            r = None if self._evaluated is not None else self.overload_op(f, name, node,
                                                                            recv=v)
            if r is not None:
                return r
            out = _SCALAR_METHODS.get(name, ft.tensor())
            if name in _TUPLE2 or name in _TUPLE2_WITH_DIM and (node.args or any(
                    k.arg == "dim" for k in node.keywords)):
                out = ir.TupleType([ft.tensor(), ft.tensor()])
            elif name in _LIST_OUT:
                out = ir.ListType(ft.tensor())
            return self.python_call(None, node, out, method=name, recv=v,
                                    evaluated=self._evaluated)
        if isinstance(t, ir.ListType) and name in ("append", "extend"):
            if not isinstance(bm.node.value, ast.Name):
                self.fail(f"list.{name}() is only supported on a variable", node)
            args, _ = self._args(node)
            if len(args) != 1:
                self.fail(f"list.{name}() takes one argument", node)
            x = self.to_value(args[0])
            if name == "append":
                x = self.emit("prim::ListConstruct", [x], (ir.ListType(x.type),)).output
            u = ft.unify(t, x.type) or t
            r = self.scalar_op("add", [v, x], u)
            self.env[bm.node.value.id] = r
            return self.const(None)
        if isinstance(t, (ir.DictType, ir.StrType, ir.ListType)):
            out = {"keys": ir.ListType(getattr(t, "key", ir.ANY)),
                   "values": ir.ListType(getattr(t, "value", ir.ANY)),
                   "get": getattr(t, "value", ir.ANY), "format": ir.STR, "join": ir.STR,
                   "lower": ir.STR, "upper": ir.STR, "strip": ir.STR, "index": ir.INT,
                   "count": ir.INT, "startswith": ir.BOOL, "endswith": ir.BOOL}.get(name, ir.ANY)
            if name in ("pop", "insert", "remove", "clear", "update", "setdefault", "sort",
                        "reverse"):
                self.fail(f"mutating {t}.{name}() is not supported in scripted code", node)
            return self.python_call(None, node, out, method=name, recv=v)
        self.fail(f"a value of type {v.type} has no method '{name}' in scripted code", node)

    def class_info(self, t):
        from .classes import class_info
        return class_info(t.name)

    def class_method_call(self, v, t, name, node):
        from .classes import compile_method
        info = self.class_info(t)
        if info is None or not hasattr(info.cls, name):
            self.fail(f"class {t.name} has no method '{name}'", node)
        res = compile_method(info, name)
        self.python_ops.extend(res.python_ops)
        args, kwargs = self._args(node)
        try:
            bound = res.signature.bind(None, *args, **kwargs)
        except TypeError as e:
            self.fail(f"{t.name}.{name}(): {e}", node)
        ins = [v]
        for p, gv in list(zip(res.signature.parameters, res.graph.inputs))[1:]:
            if p in bound.arguments:
                ins.append(self.coerce(bound.arguments[p], gv.type, node))
            else:
                ins.append(self.const(res.defaults[p]))
        self.cur = node
        n = self.emit("prim::CallFunction", ins, [o.type for o in res.graph.outputs],
                      {"fn": res.graph})
        if res.returns_tuple:
            return self.emit("prim::TupleConstruct", n.outputs,
                             (ir.TupleType([o.type for o in n.outputs]),)).output
        return n.outputs[0]
