"""Expressions of the scripting frontend (a mixin of `frontend.FunctionCompiler`).

Owns names (environment, then closure/globals/builtins as compile-time `Sugar`), constants,
operators (registry ops when an operand is a Tensor, `prim::ScalarOp` on numbers), comparisons,
`and`/`or` (short-circuit through `prim::If` when the right side can fail), conditional
expressions, tuple/list/dict literals, list comprehensions, subscripts (tensor indexing
lowers to `_index_view`/`select`; see frontend/index.py), attribute reads, and calls: registry
ops (functions and Tensor methods, every op param filled from args/kwargs/defaults), builtins,
`math.*`, `jitorch.jit` helpers, user functions (compiled recursively -> prim::CallFunction),
`@ignore` functions and other library functions (prim::PythonOp, which holds the GIL).
"""
from __future__ import annotations

import ast

from . import types as ft
from .. import ir
from .call import CallMixin
from .index import IndexMixin


class Sugar:
    """A compile-time Python object (module, function, class, constant)."""
    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __repr__(self):
        return f"Sugar({self.obj!r})"


class BoundMethod:
    """`value.name` before the call: a method of a tensor, list, dict, str or script object."""
    __slots__ = ("value", "name", "node")

    def __init__(self, value, name, node):
        self.value, self.name, self.node = value, name, node


_BINOPS = {  # ast op -> (tensor registry op, scalar op)
    ast.Add: ("add", "add"), ast.Sub: ("sub", "sub"), ast.Mult: ("mul", "mul"),
    ast.Div: ("div", "truediv"), ast.FloorDiv: ("floor_divide", "floordiv"),
    ast.Mod: ("remainder", "mod"), ast.Pow: ("pow", "pow"), ast.MatMult: ("matmul", None),
    ast.BitAnd: ("bitwise_and", "bitand"), ast.BitOr: ("bitwise_or", "bitor"),
    ast.BitXor: ("bitwise_xor", "bitxor"), ast.LShift: ("bitwise_left_shift", "lshift"),
    ast.RShift: ("bitwise_right_shift", "rshift"),
}
_INT_ONLY = (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)
_SYMBOL = {ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_CMPOPS = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt",
           ast.GtE: "ge"}


def tensor_attr_types() -> dict:
    """The tensor attributes scripted code reads as `prim::GetAttr` (and their types); also
    the only names a loaded module's GetAttr may use (load_schema)."""
    return {"shape": ir.ListType(ir.INT), "ndim": ir.INT, "dtype": ir.DTYPE,
            "device": ir.DEVICE, "requires_grad": ir.BOOL, "is_cuda": ir.BOOL,
            "T": ft.tensor(), "mT": ft.tensor(), "H": ft.tensor(), "mH": ft.tensor(),
            "real": ft.tensor(), "imag": ft.tensor(), "grad": ir.OptionalType(ft.tensor())}


TENSOR_ATTRS = frozenset(tensor_attr_types())
_UNSUPPORTED = {
    ast.Lambda: "lambda expressions are not supported in scripted code",
    ast.GeneratorExp: "generator expressions are not supported in scripted code; use a list "
                      "comprehension",
    ast.Set: "set literals are not supported in scripted code",
    ast.SetComp: "set comprehensions are not supported in scripted code",
    ast.DictComp: "dict comprehensions are not supported in scripted code",
    ast.Starred: "starred expressions (*x) are not supported in scripted code",
    ast.Yield: "generators (yield) are not supported in scripted code",
    ast.YieldFrom: "generators (yield from) are not supported in scripted code",
    ast.Await: "await is not supported in scripted code",
    ast.NamedExpr: "assignment expressions (:=) are not supported in scripted code",
}


def _may_fail(node) -> bool:
    """Can evaluating `node` fail or cost (calls, subscripts, attributes)? Then `and`/`or`
    must short-circuit."""
    return any(isinstance(n, (ast.Call, ast.Subscript, ast.Attribute))
               for n in ast.walk(node))


class ExprMixin(CallMixin, IndexMixin):
    # -- entry points ------------------------------------------------------------------------
    def expr(self, node, hint=None):
        saved = self.cur
        self.cur = node
        try:
            kind = type(node)
            if kind in _UNSUPPORTED:
                self.fail(_UNSUPPORTED[kind], node)
            meth = getattr(self, "e_" + kind.__name__, None)
            if meth is None:
                self.fail(f"{kind.__name__} expressions are not supported in scripted code",
                          node)
            return meth(node, hint) if kind in (ast.List, ast.ListComp, ast.Dict) else \
                meth(node)
        finally:
            self.cur = saved

    def expr_value(self, node, hint=None) -> ir.Value:
        saved = self.cur
        self.cur = node
        try:
            return self.to_value(self.expr(node, hint))
        finally:
            self.cur = saved

    def to_value(self, v) -> ir.Value:
        if isinstance(v, ir.Value):
            return v
        if isinstance(v, Sugar):
            if ft.of_python(v.obj) is not None:
                # a global list is copied: the graph must not change if the list does
                return self.const(list(v.obj) if isinstance(v.obj, list) else v.obj)
            self.fail(f"'{getattr(v.obj, '__name__', type(v.obj).__name__)}' is not a value "
                      "scripted code can use here")
        if isinstance(v, BoundMethod):
            self.fail(f"method '{v.name}' must be called", v.node)
        self.fail(f"cannot use {v!r} as a value in scripted code")

    def resolve_name(self, name, node):
        v = self.env.get(name)
        if v is not None:
            return v
        obj = self.scope.lookup(name)
        if obj is self.scope._missing:
            where = self.partial_names.get(name)
            if where is not None:
                self.fail(f"'{name}' is not defined on every path through the if at line "
                          f"{self.loc(where).line} (define it before the if, or in every "
                          "branch)", node)
            self.fail(f"undefined value '{name}'", node)
        return obj

    def resolve_static(self, node):
        v = self.expr(node)
        if isinstance(v, Sugar):
            return v.obj
        self.fail("expected a compile-time name here (a class, function or module)", node)

    # -- scalar helpers ---------------------------------------------------------------------
    def scalar_type(self, fn, inputs) -> ir.Type:
        """Python's result type of a scalar op on numbers: the types pass's rule, on the
        operands as the frontend sees them (Optional numbers as their element)."""
        from ..ir.values import scalar_result
        vals = [v if not isinstance(v.type, ir.OptionalType) else
                ir.Value(ft.base(v.type)) for v in inputs]
        ty = scalar_result(fn, vals)
        if ty is None:
            ty = inputs[0].type
            for v in inputs[1:]:
                ty = ft.promote_scalar(ty, v.type) if ft.is_number(ty) else ty
        return ty

    def scalar_op(self, fn, inputs, ty) -> ir.Value:
        return self.emit("prim::ScalarOp", inputs, (ty,), {"fn": fn}).output

    def tensor_size(self, v, dim) -> ir.Value:
        shape = self.emit("prim::GetAttr", [v], (ir.ListType(ir.INT),), {"name": "shape"})
        d = dim if isinstance(dim, ir.Value) else self.const(dim)
        return self.scalar_op("getitem", [shape.output, d], ir.INT)

    def as_bool(self, v, node=None) -> ir.Value:
        v = self.to_value(v)
        t = ft.base(v.type) if not isinstance(v.type, ir.OptionalType) else v.type
        if isinstance(t, ir.BoolType):
            return v
        if isinstance(t, ir.TensorType):
            return self.emit("prim::TensorToScalar", [v], (ir.BOOL,), {"type": "bool"}).output
        return self.scalar_op("bool", [v], ir.BOOL)

    def condition(self, test) -> ir.Value:
        saved = self.cur
        try:
            return self.as_bool(self.expr(test), test)
        finally:
            self.cur = saved

    def coerce(self, v, ty, node):
        v = self.to_value(v)
        have = v.type
        if ty == have or isinstance(ty, ir.AnyType) or isinstance(have, ir.AnyType):
            return v
        if ft.is_tensor(ty) and ft.is_tensor(have):
            return v
        if isinstance(ty, ir.FloatType) and isinstance(have, ir.IntType):
            return self.scalar_op("float", [v], ir.FLOAT)
        if isinstance(ty, ir.OptionalType) and (isinstance(have, ir.NoneType) or
                                                ft.unify(ty.elem, have) is not None):
            return v
        if isinstance(ty, ir.ListType) and isinstance(have, ir.ListType) and \
                isinstance(have.elem, ir.AnyType):
            v.type = ty  # an empty list literal takes the annotated element type
            return v
        if ft.unify(ty, have) == ty:
            return v
        self.fail(f"expected a value of type {ty}, but got {have}", node)

    def unpack(self, v, n, node) -> list:
        v = self.to_value(v)
        t = ft.base(v.type)
        if v.node is not None and v.node.op in ("prim::TupleConstruct", "prim::ListConstruct") \
                and not v.node.blocks:
            if len(v.node.inputs) != n:
                self.fail(f"cannot unpack {len(v.node.inputs)} values into {n}", node)
            return list(v.node.inputs)
        if isinstance(t, ir.TupleType):
            if len(t.elems) != n:
                self.fail(f"cannot unpack a tuple of {len(t.elems)} values into {n}", node)
            return self.emit("prim::TupleUnpack", [v], t.elems).outputs
        if isinstance(t, ir.ListType):
            return self.emit("prim::ListUnpack", [v], [t.elem] * n).outputs
        if isinstance(t, ir.AnyType):
            return self.emit("prim::TupleUnpack", [v], [ft.tensor()] * n).outputs
        if isinstance(t, ir.TensorType):
            self.check_unpack_count(v, n)
            return [self.call_op("select", [v, self.const(0), self.const(k)]) for k in range(n)]
        self.fail(f"cannot unpack a value of type {v.type}", node)

    def check_unpack_count(self, x, n) -> None:
        """`a, b = x` iterates x's first dim, as Python does: a 0-d tensor is a TypeError and a
        first dim that is not `n` long a ValueError, checked at run time (sizes are not part of
        the specialisation; the rank is, so the 0-d check folds away)."""
        ndim = self.emit("prim::GetAttr", [x], (ir.INT,), {"name": "ndim"}).output
        self.raise_if(self.scalar_op("eq", [ndim, self.const(0)], ir.BOOL), "TypeError",
                      [self.const("iteration over a 0-d tensor")])
        size = self.tensor_size(x, 0)
        self.raise_if(self.scalar_op("gt", [size, self.const(n)], ir.BOOL), "ValueError",
                      [self.const(f"too many values to unpack (expected {n})")])
        self.raise_if(self.scalar_op("lt", [size, self.const(n)], ir.BOOL), "ValueError",
                      [self.const(f"not enough values to unpack (expected {n}, got "), size,
                       self.const(")")])

    def raise_if(self, cond, exc: str, parts) -> None:
        """`if cond: raise exc(''.join(map(str, parts)))` (a check-only prim::If)."""
        then_b = ir.Block()
        then_b.nodes.append(ir.Node("prim::Raise", parts, (), attrs={"exc": exc},
                                    loc=self.loc()))
        self.emit("prim::If", [cond], (), blocks=[then_b, ir.Block()])

    # -- leaves ------------------------------------------------------------------------------
    def e_Constant(self, node):
        if node.value is Ellipsis:
            return Sugar(Ellipsis)
        if isinstance(node.value, (bytes, complex)):
            self.fail(f"{type(node.value).__name__} literals are not supported", node)
        return self.const(node.value)

    def e_Name(self, node):
        r = self.resolve_name(node.id, node)
        return r if isinstance(r, ir.Value) else Sugar(r)

    def e_JoinedStr(self, node):
        parts = self.message_parts(node)
        self.cur = node
        fmt = self.const("{}" * len(parts))
        return self.scalar_op("format", [fmt] + parts, ir.STR)

    def e_Attribute(self, node):
        base = self.expr(node.value)
        self.cur = node
        name = node.attr
        if isinstance(base, Sugar):
            try:
                return Sugar(getattr(base.obj, name))
            except AttributeError:
                self.fail(f"'{getattr(base.obj, '__name__', base.obj)}' has no attribute "
                          f"'{name}'", node)
        if isinstance(base, BoundMethod):
            self.fail("attribute of a method", node)
        return self.attribute(base, name, node)

    def attribute(self, v, name, node):
        t = ft.base(v.type)
        if isinstance(t, ir.TensorType):
            types = tensor_attr_types()
            if name in types:
                return self.emit("prim::GetAttr", [v], (types[name],), {"name": name}).output
            return BoundMethod(v, name, node)
        if isinstance(t, ir.ClassType):
            info = self.class_info(t)
            if info is not None and name in info.attr_types:
                return self.emit("prim::GetAttr", [v], (info.attr_types[name],),
                                 {"name": name}).output
            return BoundMethod(v, name, node)
        return BoundMethod(v, name, node)

    # -- operators ---------------------------------------------------------------------------
    def e_BinOp(self, node):
        a = self.expr(node.left)
        b = self.expr(node.right)
        self.cur = node
        return self.binop(type(node.op), a, b, node)

    def binop(self, op, a, b, node):
        a, b = self.to_value(a), self.to_value(b)
        tensor_op, scalar = _BINOPS[op]
        if ft.is_tensor(a.type) or ft.is_tensor(b.type):
            return self.call_op(tensor_op, [a, b])
        ta, tb = ft.base(a.type), ft.base(b.type)
        if scalar is None:
            self.fail("'@' needs tensor operands", node)
        if ft.is_number(ta) and ft.is_number(tb):
            if op in _INT_ONLY and (isinstance(ta, ir.FloatType) or
                                    isinstance(tb, ir.FloatType)):  # Python: a TypeError
                self.fail(f"unsupported operand types for {_SYMBOL[op]}: '{ta}' and '{tb}'",
                          node)
            return self.scalar_op(scalar, [a, b], self.scalar_type(scalar, [a, b]))
        if op is ast.Add and ta == tb and isinstance(ta, (ir.StrType, ir.ListType,
                                                             ir.TupleType)):
            if isinstance(ta, ir.TupleType):
                ty = ir.TupleType(ta.elems + tb.elems)
            else:
                ty = ta
            return self.scalar_op("add", [a, b], ty)
        if op is ast.Add and isinstance(ta, ir.ListType) and isinstance(tb, ir.ListType):
            u = ft.unify(ta, tb)
            if u is not None:
                return self.scalar_op("add", [a, b], u)
        if op is ast.Mult and isinstance(ta, (ir.ListType, ir.StrType)) and \
                isinstance(tb, ir.IntType):
            return self.scalar_op("mul", [a, b], ta)
        if op is ast.Mod and isinstance(ta, ir.StrType):
            return self.scalar_op("mod", [a, b], ir.STR)
        if isinstance(ta, ir.AnyType) or isinstance(tb, ir.AnyType):
            return self.scalar_op(scalar, [a, b], ir.ANY)
        self.fail(f"unsupported operand types for {op.__name__}: {a.type} and {b.type}", node)

    def e_UnaryOp(self, node):
        v = self.to_value(self.expr(node.operand))
        self.cur = node
        op = type(node.op)
        if op is ast.Not:
            return self.scalar_op("not", [self.as_bool(v)], ir.BOOL)
        if ft.is_tensor(v.type):
            if op is ast.UAdd:
                return v
            return self.call_op("neg" if op is ast.USub else "bitwise_not", [v])
        t = ft.base(v.type)
        if op is ast.UAdd:
            return v
        if op is ast.USub:
            if v.node is not None and v.node.op == "prim::Constant" and \
                    isinstance(v.node.attrs["value"], (int, float)):
                return self.const(-v.node.attrs["value"])  # a negative literal
            return self.scalar_op("neg", [v], ft.promote_scalar(t, ir.INT)
                                  if not isinstance(t, ir.FloatType) else ir.FLOAT)
        if not isinstance(t, (ir.IntType, ir.BoolType, ir.AnyType)):
            self.fail(f"bad operand type for unary ~: '{v.type}'", node)
        return self.scalar_op("invert", [v], ir.INT)

    def e_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        acc = self.condition(node.values[0])
        for rhs in node.values[1:]:
            self.cur = node
            if not _may_fail(rhs):
                b = self.condition(rhs)
                acc = self.scalar_op("and" if is_and else "or", [acc, b], ir.BOOL)
                continue
            then_b, else_b = ir.Block(), ir.Block()
            ev, _ = self.in_block(then_b if is_and else else_b, lambda: self.condition(rhs))
            short = then_b if not is_and else else_b
            (then_b if is_and else else_b).returns = [ev]
            sv, _ = self.in_block(short, lambda: self.const(not is_and))
            short.returns = [sv]
            self.cur = node
            acc = self.emit("prim::If", [acc], (ir.BOOL,), blocks=[then_b, else_b]).output
        return acc

    def e_Compare(self, node):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            self.cur = node
            r = self.compare(type(op), left, right, node)
            if result is None:
                result = r
            else:
                result = self.scalar_op("and", [self.as_bool(result), self.as_bool(r)], ir.BOOL)
            left = right
        return result

    def compare(self, op, a, b, node):
        if op in (ast.Is, ast.IsNot):
            return self.identity(op is ast.Is, a, b, node)
        a, b = self.to_value(a), self.to_value(b)
        if op in (ast.In, ast.NotIn):
            r = self.scalar_op("contains", [b, a], ir.BOOL)
            return r if op is ast.In else self.scalar_op("not", [r], ir.BOOL)
        name = _CMPOPS[op]
        if ft.is_tensor(a.type) or ft.is_tensor(b.type):
            return self.call_op(name, [a, b])
        return self.scalar_op(name, [a, b], ir.BOOL)

    def identity(self, is_, a, b, node):
        """`x is None` / `x is not None`: static when the type says so, else a runtime test
        (the runtime specialises on None-ness, so simplify folds it per call)."""
        if isinstance(a, Sugar) and a.obj is None:
            a, b = b, a
        a = self.to_value(a)
        b = self.to_value(b)
        bn = b.node is not None and b.node.op == "prim::Constant" and b.node.attrs["value"] \
            is None
        if bn and not isinstance(a.type, (ir.OptionalType, ir.AnyType)):
            return self.const(isinstance(a.type, ir.NoneType) == is_)
        return self.scalar_op("is" if is_ else "is_not", [a, b], ir.BOOL)

    def e_IfExp(self, node):
        static, v = self.static_condition(node.test)
        if static is not None:
            return self.expr(node.body if static else node.orelse)
        cond = self.as_bool(v)
        self.cur = node
        then_b, else_b = ir.Block(), ir.Block()
        a, _ = self.in_block(then_b, lambda: self.expr_value(node.body))
        b, _ = self.in_block(else_b, lambda: self.expr_value(node.orelse))
        then_b.returns, else_b.returns = [a], [b]
        u = ft.unify(a.type, b.type)
        if u is None:
            self.fail(f"the branches of this conditional expression have types {a.type} and "
                      f"{b.type}", node)
        self.cur = node
        return self.emit("prim::If", [cond], (u,), blocks=[then_b, else_b]).output

    # -- literals ----------------------------------------------------------------------------
    def e_Tuple(self, node):
        vals = [self.expr_value(e) for e in node.elts]
        self.cur = node
        return self.emit("prim::TupleConstruct", vals, (ir.TupleType([v.type for v in vals]),)
                         ).output

    def e_List(self, node, hint=None):
        vals = [self.expr_value(e) for e in node.elts]
        self.cur = node
        if hint is not None and isinstance(hint, ir.ListType):
            elem = hint.elem
        elif not vals:
            elem = ir.ANY
        else:
            elem = vals[0].type
            for v in vals[1:]:
                u = ft.unify(elem, v.type)
                if u is None:
                    self.fail(f"list elements have different types ({elem} and {v.type})", node)
                elem = u
        return self.emit("prim::ListConstruct", vals, (ir.ListType(elem),)).output

    def e_Dict(self, node, hint=None):
        if any(k is None for k in node.keys):
            self.fail("dict unpacking (**d) is not supported in scripted code", node)
        ins, kt, vt = [], None, None
        for k, v in zip(node.keys, node.values):
            kv, vv = self.expr_value(k), self.expr_value(v)
            kt = kv.type if kt is None else ft.unify(kt, kv.type)
            vt = vv.type if vt is None else ft.unify(vt, vv.type)
            if kt is None or vt is None:
                self.fail("dict keys and values must each have one type", node)
            ins += [kv, vv]
        if hint is not None and isinstance(hint, ir.DictType):
            kt, vt = hint.key, hint.value
        self.cur = node
        return self.emit("prim::DictConstruct", ins,
                         (ir.DictType(kt or ir.STR, vt or ft.tensor()),)).output

    def e_ListComp(self, node, hint=None):
        """`[e for x in seq if c]` over range/lists/tensors: a loop carrying the list."""
        if len(node.generators) != 1 or node.generators[0].is_async:
            self.fail("only list comprehensions with one `for` are supported", node)
        gen = node.generators[0]
        acc_name = f"$comp{id(node)}"
        self.env[acc_name] = self.emit("prim::ListConstruct", [], (ir.ListType(ir.ANY),)).output
        probe_target = gen.target
        elt = node.elt
        body = []
        # append as `acc = acc + [elt]`, filtered by the ifs
        append = ast.Assign(targets=[ast.Name(acc_name, ast.Store())],
                            value=ast.BinOp(ast.Name(acc_name, ast.Load()), ast.Add(),
                                            ast.List([elt], ast.Load())))
        ast.copy_location(append, elt)
        ast.fix_missing_locations(append)
        stmt = append
        for cond in reversed(gen.ifs):
            stmt = ast.copy_location(ast.If(test=cond, body=[stmt], orelse=[]), cond)
        body.append(stmt)
        loop = ast.copy_location(ast.For(target=probe_target, iter=gen.iter, body=body,
                                         orelse=[]), node)
        ast.fix_missing_locations(loop)
        loop.jitorch_comprehension = True  # its target is local to the comprehension
        saved_env = dict(self.env)
        saved_ret, self.loop_ret = self.loop_ret, None  # a pending loop-return is not ours
        try:
            # the element type is known only after compiling the element: infer it first
            elem_t = self._comp_elem_type(node, gen)
            self.env[acc_name].type = ir.ListType(elem_t)
            self.for_stmt(loop)
        finally:
            self.loop_ret = saved_ret
        out = self.env[acc_name]
        self.env = {k: v for k, v in saved_env.items() if k != acc_name}
        return out

    def _comp_elem_type(self, node, gen) -> ir.Type:
        saved_block, saved_env = self.block, dict(self.env)
        self.block = ir.Block()
        try:
            it = self.to_value(self.expr(gen.iter)) if not (
                isinstance(gen.iter, ast.Call) and isinstance(gen.iter.func, ast.Name)
                and gen.iter.func.id == "range") else None
            if it is None:
                x = ir.Value(ir.INT)
            elif isinstance(it.type, ir.ListType):
                x = ir.Value(it.type.elem)
            elif ft.is_tensor(it.type):
                x = ir.Value(ft.tensor())
            else:
                x = ir.Value(ir.ANY)
            self.assign(gen.target, x) if isinstance(gen.target, ast.Name) else \
                self.assign(gen.target, ir.Value(ir.ANY))
            return self.expr_value(node.elt).type
        finally:
            self.block, self.env = saved_block, saved_env

    def e_Subscript(self, node):
        base = self.expr(node.value)
        self.cur = node
        if isinstance(base, Sugar) and ft.of_python(base.obj) is not None:
            base = self.to_value(base)  # a global constant list/tuple
        if isinstance(base, Sugar):  # List[int] etc. in annotate()
            self.fail("subscripting a compile-time object is only allowed in type annotations",
                      node)
        return self.getitem(base, node.slice, node)

    def e_Call(self, node):
        return self.call(node)

    def e_Slice(self, node):
        self.fail("slices are only supported inside subscripts", node)


__all__ = ["ExprMixin", "Sugar", "BoundMethod"]
