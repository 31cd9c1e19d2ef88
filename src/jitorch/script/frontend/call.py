"""Calls in the scripting frontend: `CallBuilder` (`st.calls`, frontend/state.py), what `f(args)`
becomes; `x.m(args)` is frontend/methods.py's (`st.methods`).

- registry ops (a public function or Tensor method that IS an op's function): a node named by
  the op with every param of `OPS[name].params`, bound like Python binds the call (kwargs,
  defaults, `*size` varargs); static list/tuple arguments become constant tuples;
- `len(x)`: a shape read;
- builtins (len, min, max, abs, int, float, bool, str, isinstance, print, round) and `math.*`:
  `prim::ScalarOp` (`fn="math.sqrt"`, ...);
- `jitorch.jit.annotate/is_scripting`: folded; `@ignore`d functions: `prim::PythonOp`; `@unused`
  ones: `prim::Raise`;
- plain Python functions (and scripted ones, via `__wrapped__`): compiled recursively ->
  `prim::CallFunction` (attrs fn=Graph);
- tensor factories (`zeros(B, H)`, `arange(n)`): factory nodes (registry
  ops declared in `_ops/factories.py`, bound by `frontend/factory.py`; compiled; a PythonOp
  where the call is not static enough);
- library composites (`F.softmax`, `F.layer_norm`, `F.linear`, the losses):
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
from . import composite
from . import types as ft
from .. import ir
from .classes import ensure_script_class
from .state import UNHANDLED

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


class CallBuilder:
    """Calls for one function (`st.calls`): `f(args)`, `x.m(args)`, registry ops."""

    __slots__ = ("st",)  # its only state is the shared one

    def __init__(self, st):
        self.st = st

    def call(self, node):
        from .expr import BoundMethod, Sugar
        st = self.st
        node = st.hooks.rewrite_call(node)
        for a in node.args:
            if isinstance(a, ast.Starred):
                st.fail("*args in calls are not supported in scripted code", a)
        for k in node.keywords:
            if k.arg is None:
                st.fail("**kwargs in calls are not supported in scripted code", k.value)
        f = st.exprs.expr(node.func)
        st.cur = node
        if isinstance(f, BoundMethod):
            return st.methods.method_call(f, node)
        if isinstance(f, Sugar):
            return self.call_python(f.obj, node)
        st.fail(f"a value of type {f.type} is not callable in scripted code", node.func)

    def eval_args(self, node, skip=0):
        st = self.st
        args = [st.exprs.expr(a) for a in node.args[skip:]]
        kwargs = {k.arg: st.exprs.expr(k.value) for k in node.keywords}
        st.cur = node
        return args, kwargs

    # -- registry ops ----------------------------------------------------------------------
    def call_op(self, name, args, kwargs=None):
        from ..._ops import registry
        op = registry.OPS[name]
        return self.op_call(op, args, kwargs or {})

    def op_call(self, op, args, kwargs, node=None):
        from .expr import Sugar
        st = self.st
        node = node or st.cur
        sig = op.extra.get("_sig")
        if sig is None:
            sig = inspect.signature(op.fn)
            op.extra["_sig"] = sig
        if "out" in kwargs:
            st.fail("out= is not supported in scripted code", node)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            st.fail(f"{op.name}(): {e}", node)
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
                    v = st.exprs.to_value(v)
                else:
                    v = self._op_arg(v, p in op.tensors)
                    # (a tensor slot named like one, index_add's `source`, is not static)
                    if p in STATIC_PARAMS and p not in op.tensors and v in st.graph.inputs:
                        st.static_args.add(v.name)
            elif param is not None and param.default is not inspect.Parameter.empty:
                v = st.const(param.default) if ft.of_python(param.default) is not None \
                    else st.const(param.default, ir.ANY)
            elif p == varargs:
                v = st.const(())
            else:
                st.fail(f"{op.name}() missing required argument '{p}'", node)
            inputs.append(v)
        if isinstance(kwargs.get("_kw"), Sugar):
            pass
        st.cur = node
        if op.name in _LIST_OUT:  # a variable number of results: one List[Tensor] output
            return st.emit(op.name, inputs, (ir.ListType(ft.tensor()),)).output
        if op.name in _TUPLE2:
            n = st.emit(op.name, inputs, (ft.tensor(), ft.tensor()))
            return st.emit("prim::TupleConstruct", n.outputs,
                           (ir.TupleType([ft.tensor(), ft.tensor()]),)).output
        return st.emit(op.name, inputs, (ft.tensor(),)).output

    def overload_op(self, f, name, node, recv=None, evaluated=None):
        """A public wrapper over an op of the same name (extra eager checks, or an overload
        such as `view(dtype)`): the op when the call binds to the op's own signature.
        `evaluated`: the call's (args, kwargs), when the caller evaluated them already."""
        from ..._ops import registry
        st = self.st
        inner = op_of(getattr(f, "__wrapped__", None)) or op_of(f)
        if inner is None and name in _SAME_AS_OP:
            inner = registry.OPS.get(name)
        if inner is None:
            return None
        st.evaluated = args, kwargs = evaluated or self.eval_args(node)
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
        st = self.st
        v = st.exprs.to_value(v)
        if not tensor_slot and v.node is not None and v.node.op in (
                "prim::ListConstruct", "prim::TupleConstruct") and all(
                i.node is not None and i.node.op == "prim::Constant" for i in v.node.inputs):
            return st.const(tuple(i.node.attrs["value"] for i in v.node.inputs))
        return v

    def _varargs(self, vals):
        st = self.st
        vals = list(vals)
        if len(vals) == 1:
            v = st.exprs.to_value(vals[0])
            if isinstance(ft.base(v.type), (ir.ListType, ir.TupleType, ir.AnyType)):
                return self._op_arg(v, False)
            vals = [v]
        vals = [st.exprs.to_value(v) for v in vals]
        consts = [v.node.attrs["value"] for v in vals
                  if v.node is not None and v.node.op == "prim::Constant"]
        if len(consts) == len(vals):
            return st.const(tuple(consts))
        return st.emit("prim::TupleConstruct", vals,
                       (ir.TupleType([v.type for v in vals]),)).output

    # -- Python objects ----------------------------------------------------------------------
    def call_python(self, obj, node):
        from . import grad_blocks, lang
        st = self.st
        r = st.hooks.call_python(obj, node)  # a module's submodules, methods, containers
        if r is not UNHANDLED:
            return r
        op = op_of(obj)
        if op is not None:
            args, kwargs = self.eval_args(node)
            return self.op_call(op, args, kwargs, node)
        if obj is grad_blocks.no_grad_value:  # the end of a `with no_grad():` block
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                # a name the block assigned: rebound when it is a tensor defined here
                v = st.env.get(arg.value)
                if isinstance(v, ir.Value) and isinstance(ft.base(v.type), ir.TensorType):
                    st.cur = node
                    st.env[arg.value] = self.call_op("_no_grad_value", [v])
                return st.const(None)
            v = st.exprs.expr_value(arg)
            st.cur = node
            if isinstance(ft.base(v.type), ir.TensorType):
                return self.call_op("_no_grad_value", [v])
            return v
        if obj is lang.is_scripting or getattr(obj, "__name__", "") == "is_scripting" and \
                getattr(obj, "__module__", "").startswith(("jitorch", "torch")):
            return st.const(True)
        if obj is lang.annotate or getattr(obj, "__name__", "") == "annotate" and \
                getattr(obj, "__module__", "").startswith(("jitorch", "torch")):
            if len(node.args) != 2:
                st.fail("annotate(type, value) takes two arguments", node)
            ty = st.annotation(node.args[0])
            v = st.exprs.expr(node.args[1], hint=ty)
            st.cur = node
            return st.exprs.coerce(v, ty, node.args[1])
        if obj in (builtins.len, builtins.min, builtins.max, builtins.abs, builtins.int,
                   builtins.float, builtins.bool, builtins.str, builtins.isinstance,
                   builtins.print, builtins.round, builtins.list, builtins.range,
                   builtins.sum, builtins.divmod, builtins.pow):
            return self.call_builtin(obj, node)
        if getattr(obj, "_jitorch_unused", False):
            args, kwargs = self.eval_args(node)
            st.emit("prim::Raise", [st.const(f"'{obj.__qualname__}' was marked "
                                             "@jitorch.jit.unused and cannot be called")],
                    (), {"exc": "RuntimeError"})
            return st.const(None)
        if getattr(obj, "_jitorch_ignore", False):
            # a library function kept out of scripting may still be a composite whose body
            # compiles (multi_head_attention_forward); otherwise a Python call
            st.evaluated = None
            r = composite.compile_call(st, obj, node)
            if r is not None:
                return r
            return self.python_call(obj, node, self._return_type(obj), evaluated=st.evaluated)
        if getattr(obj, "__module__", None) == "math" or (
                isinstance(obj, type(math.sqrt)) and getattr(obj, "__self__", None) is math):
            return self.math_call(obj, node)
        wrapped = getattr(obj, "__wrapped__", None)
        if type(obj).__name__ == "ScriptFunction" and wrapped is not None:
            obj = wrapped
        if isinstance(obj, type) and ensure_script_class(obj):  # (compiled on first use)
            return self.python_call(obj, node, ir.ClassType(obj.__qualname__))
        if isinstance(obj, type) and issubclass(obj, BaseException):
            st.fail("exceptions can only be raised in scripted code", node)
        fname = factories.factory_of(obj)
        if fname is not None:  # zeros(B, H), arange(n), ...: a factory node
            r = factories.frontend_call(st, fname, node)
            return r if r is not None else self.library_call(obj, node)
        if getattr(obj, "_jitorch_body_helper", False) and inspect.isfunction(obj):
            return self.function_call(obj, node)  # a check composite bodies share (_ops)
        mod = getattr(obj, "__module__", "") or ""
        if mod == "jitorch" or mod.startswith("jitorch.") or mod.startswith("torch"):
            st.evaluated = None
            r = composite.compile_call(st, obj, node)  # F.softmax, F.layer_norm, losses...
            if r is not None:
                return r
            if st.evaluated is not None:
                return self.library_call(obj, node)
            r = self.overload_op(obj, getattr(obj, "__name__", ""), node)
            if r is not None:
                return r
            return self.library_call(obj, node)
        if inspect.isfunction(obj):
            return self.function_call(obj, node)
        self.eval_args(node)  # errors inside the arguments come first
        st.fail(f"cannot call '{getattr(obj, '__name__', obj)}' in scripted code", node)

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
        st = self.st
        args, kwargs = evaluated if evaluated is not None else self.eval_args(node, skip)
        vals = [st.exprs.to_value(a) for a in args]
        kvals = [st.exprs.to_value(v) for v in kwargs.values()]
        pre = [recv] if recv is not None else []
        call = KwCall(fn, len(vals), list(kwargs), method)
        st.cur = node
        return st.python_op(call, pre + vals + kvals, (out_type,),
                            name=method or getattr(fn, "__qualname__", None)).output

    def library_call(self, fn, node):
        st = self.st
        name = getattr(fn, "__name__", "")
        out = ft.tensor()
        if name in _TUPLE2 or name in _TUPLE2_WITH_DIM and (
                len(node.args) >= 2 and not self._is_tensor_arg(node.args[1])
                or any(k.arg == "dim" for k in node.keywords)):
            out = ir.TupleType([ft.tensor(), ft.tensor()])
        elif name in _LIST_OUT:
            out = ir.ListType(ft.tensor())
        return self.python_call(fn, node, out, evaluated=st.evaluated)

    def _is_tensor_arg(self, a) -> bool:
        st = self.st
        saved = st.block
        st.block = ir.Block()  # probe the type without keeping nodes
        try:
            return ft.is_tensor(st.exprs.expr_value(a).type)
        finally:
            st.block = saved

    def function_call(self, fn, node):
        from .function import compile_function
        st = self.st
        start = len(st.block.nodes)
        res = compile_function(fn)
        st.python_ops.extend(res.python_ops)
        sig = res.signature
        args, kwargs = self.eval_args(node)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            st.fail(f"{fn.__qualname__}(): {e}", node)
        ins = []
        for p, gv in zip(sig.parameters, res.graph.inputs):
            if p in bound.arguments:
                v = st.exprs.coerce(bound.arguments[p], gv.type, node)
            else:
                v = st.const(res.defaults[p]) if ft.of_python(res.defaults[p]) is not None \
                    else st.const(res.defaults[p], gv.type)
            ins.append(v)
        st.cur = node
        n = st.emit("prim::CallFunction", ins, [v.type for v in res.graph.outputs],
                    {"fn": res.graph})
        if res.returns_tuple:
            r = st.emit("prim::TupleConstruct", n.outputs,
                        (ir.TupleType([o.type for o in n.outputs]),)).output
        else:
            r = n.outputs[0]
        return st.writes.call_writes(start, r, node)  # its writes to its arguments

    def math_call(self, fn, node):
        st = self.st
        name = fn.__name__
        args, kwargs = self.eval_args(node)
        if kwargs:
            st.fail(f"math.{name}() keyword arguments are not supported", node)
        vals = [st.exprs.to_value(a) for a in args]
        for a, v in zip(node.args, vals):
            if not ft.is_number(v.type):
                st.fail(f"math.{name}() takes numbers, not {v.type}", a)
        ty = ir.INT if name in _MATH_INT else ir.BOOL if name in _MATH_BOOL else ir.FLOAT
        return st.exprs.scalar_op(f"math.{name}", vals, ty)

    # -- builtins ----------------------------------------------------------------------------
    def call_builtin(self, fn, node):
        st = self.st
        name = fn.__name__
        if name == "range":
            st.fail("range() is only supported as the iterable of a for loop or "
                    "comprehension", node)
        if name == "isinstance":
            return self.isinstance_call(node)
        args, kwargs = self.eval_args(node)
        vals = [st.exprs.to_value(a) for a in args]
        if name == "print":
            st.emit("prim::Print", vals, ())
            return st.const(None)
        if kwargs:
            st.fail(f"{name}() keyword arguments are not supported in scripted code", node)
        if name == "len":
            if len(vals) != 1:
                st.fail("len() takes one argument", node)
            t = ft.base(vals[0].type)
            if isinstance(t, ir.TupleType):
                return st.const(len(t.elems))
            if isinstance(t, ir.TensorType):
                return st.exprs.tensor_size(vals[0], 0)
            return st.exprs.scalar_op("len", vals, ir.INT)
        if name in ("int", "float", "bool"):
            ty = {"int": ir.INT, "float": ir.FLOAT, "bool": ir.BOOL}[name]
            if len(vals) != 1:
                st.fail(f"{name}() takes one argument in scripted code", node)
            if ft.is_tensor(vals[0].type):
                return st.emit("prim::TensorToScalar", vals, (ty,), {"type": name}).output
            return st.exprs.scalar_op(name, vals, ty)
        if name == "str":
            return st.exprs.scalar_op("str", vals, ir.STR)
        if name == "list":
            t = vals[0].type if vals else ir.ListType(ir.ANY)
            return st.exprs.scalar_op("list", vals, t if isinstance(t, ir.ListType) else
                                      ir.ListType(ir.ANY))
        if any(ft.is_tensor(v.type) for v in vals):
            st.fail(f"{name}() on tensors is not supported in scripted code; use "
                    f"jitorch.{name if name != 'abs' else 'abs'}", node)
        if name == "divmod":
            if len(vals) != 2 or not all(ft.is_number(v.type) for v in vals):
                st.fail("divmod() takes two numbers in scripted code", node)
            q, r = st.exprs.binop(ast.FloorDiv, *vals, node), st.exprs.binop(ast.Mod, *vals, node)
            return st.emit("prim::TupleConstruct", [q, r],
                           (ir.TupleType([q.type, r.type]),)).output
        if name == "pow":
            if len(vals) != 2:
                st.fail("pow() takes two arguments in scripted code (no modulus)", node)
            return st.exprs.binop(ast.Pow, *vals, node)
        if name == "abs":
            return st.exprs.scalar_op("abs", vals, st.exprs.scalar_type("abs", vals))
        if name == "round":
            return st.exprs.scalar_op("round", vals, ir.INT if len(vals) == 1 else ir.FLOAT)
        if len(vals) == 1 and isinstance(ft.base(vals[0].type), ir.ListType):
            return st.exprs.scalar_op(name, vals, ft.base(vals[0].type).elem)
        return st.exprs.scalar_op(name, vals, st.exprs.scalar_type(name, vals))

    def isinstance_call(self, node):
        st = self.st
        if len(node.args) != 2:
            st.fail("isinstance() takes two arguments", node)
        v = st.exprs.expr_value(node.args[0])
        cls = self.resolve_static_types(node.args[1])
        st.cur = node
        t = v.type
        wanted = []
        for c in cls:
            try:
                wanted.append(ft.from_annotation(c))
            except ft.AnnotationError:
                st.fail(f"isinstance() with {c!r} is not supported", node.args[1])

        def match(have, want):
            if isinstance(want, ir.TensorType):
                return isinstance(have, ir.TensorType)
            if isinstance(want, (ir.ListType, ir.TupleType, ir.DictType)):
                return type(have) is type(want)
            return have == want
        if isinstance(t, ir.OptionalType):
            if any(match(t.elem, w) for w in wanted):
                return st.exprs.scalar_op("is_not", [v, st.const(None)], ir.BOOL)
            return st.const(False)  # a non-None value of another type
        return st.const(any(match(t, w) for w in wanted))

    def resolve_static_types(self, node):
        st = self.st
        if isinstance(node, ast.Tuple):
            return [x for e in node.elts for x in self.resolve_static_types(e)]
        try:
            return [st.scope.eval(node)]
        except Exception as e:
            st.fail(f"cannot resolve the type ({e})", node)
