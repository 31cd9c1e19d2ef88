"""Loops of the scripting frontend: `LoopBuilder` (`st.loops`, frontend/state.py).

Owns `for` (over range(), lists, tuples by unrolling, a tensor's first dim, dict keys,
enumerate()/zip()), `while`, and the loop-exit protocol: a `prim::Loop` body ends with
`(continue_condition, *carried)`, the carried values being the variables the loop assigns
(its `for` target included) that exist before the loop. `break`/`continue` end a path with
False/True; `return` inside a loop sets a carried (flag, value) pair and breaks, and the code
after the loop returns when the flag is set (its type is probed by compiling the loop once into
a scratch block).
"""
from __future__ import annotations

import ast

from . import types as ft
from .. import ir

MAX_TRIP = 9223372036854775807  # while loops: prim::Loop with no trip limit (as TorchScript)


def _exits(node, loops: bool) -> bool:
    """Does `node` contain a return (or, with `loops`, a break/continue of the enclosing loop)?"""
    if isinstance(node, ast.Return):
        return True
    if loops and isinstance(node, (ast.Break, ast.Continue)):
        return True
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return False
    if isinstance(node, (ast.For, ast.While)):  # their break/continue are their own
        return any(_exits(c, False) for c in node.body + node.orelse)
    return any(_exits(c, loops) for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))


# container methods that rebind their receiver (list_methods.py, dict_methods.py)
_MUTATORS = frozenset(("append", "extend", "insert", "pop", "remove", "sort", "reverse", "clear",
                       "update", "setdefault"))


def _widened(before: ir.Type, after: ir.Type):
    """The Optional type a carried variable needs when it is None (or Optional) before the
    loop and a value after an iteration; None when `before` already fits."""
    if ft.unify(before, after) == before:
        return None
    if isinstance(before, (ir.NoneType, ir.OptionalType)) and not isinstance(
            after, ir.AnyType):
        u = ft.unify(before, after)
        return u if isinstance(u, ir.OptionalType) else None
    return None


def _as_type(st, v, ty, node):
    """A carried variable's initial value as the (widened) type of the loop's variable."""
    if isinstance(v.type, ir.NoneType):  # None as an Optional[T] value
        return st.emit("prim::Constant", (), (ty,), {"value": None}).output
    return st.exprs.coerce(v, ty, node)


def assigned_names(stmts) -> list:
    """Names a statement list assigns (in order), not looking into nested scopes."""
    out: list = []

    def target(t):
        if isinstance(t, ast.Name):
            if t.id not in out:
                out.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                target(e)
        elif isinstance(t, ast.Starred):
            target(t.value)
        elif isinstance(t, ast.Subscript):  # x[i] = v rebinds x
            target(t.value)

    def walk(s):
        if isinstance(s, ast.Assign):
            for t in s.targets:
                target(t)
        elif isinstance(s, (ast.AugAssign, ast.AnnAssign)):
            target(s.target)
        elif isinstance(s, ast.For):
            target(s.target)
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        for c in ast.iter_child_nodes(s):
            if isinstance(c, ast.stmt):
                walk(c)
            elif isinstance(c, ast.expr):
                for e in ast.walk(c):
                    if isinstance(e, ast.NamedExpr):
                        target(e.target)
                    # lst.append(v), d[k].pop(), x.add_(y): the frontend rebinds the
                    # receiver name (frontend/list_methods.py). An in-place tensor method on an
                    # element (`ps[i].add_(m)`) is a write through the element's storage
                    # (alias.py), not a rebinding: carrying the list as well would give the
                    # loop two copies of it (and the optimizer step two loops)
                    elif isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and (
                            isinstance(e.func.value, ast.Name) and (
                                e.func.attr in _MUTATORS or
                                e.func.attr.endswith("_") and not e.func.attr.endswith("__"))
                            or isinstance(e.func.value, ast.Subscript) and
                            e.func.attr in _MUTATORS):
                        target(e.func.value)
    for s in stmts:
        walk(s)
    return out


def _has_return(node) -> bool:
    if isinstance(node, ast.Return):
        return True
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        return False
    return any(_has_return(c) for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))


class LoopExit:
    """How a loop body's paths end: `(continue_condition, *carried)`. A `return` inside the
    loop sets the carried flag/value pair `ret` (names) and leaves the loop."""

    def __init__(self, st, names, while_test=None, ret=None):
        self.st, self.names, self.while_test = st, names, while_test
        self.ret_names = ret

    def carried(self) -> list:
        out = []
        for n in self.names:
            v = self.st.env.get(n)
            if v is None:
                self.st.fail(f"variable '{n}' is not defined on every path through the loop "
                             "body")
            out.append(v)
        return out

    def cont(self, node=None) -> list:
        if self.while_test is None:
            cond = self.st.const(True)
        else:
            cond = self.st.exprs.condition(self.while_test)
        return [cond] + self.carried()

    def brk(self, node=None) -> list:
        return [self.st.const(False)] + self.carried()

    fallthrough = cont

    def ret(self, v):
        if self.ret_names is None:
            self.st.fail("'return' inside this loop is not supported in scripted code; "
                         "assign the result and break instead")
        flag, val = self.ret_names
        if self.st.probing:
            self.st.probe_types.append(v.type)
        else:
            v = self.st.exprs.coerce(v, self.st.env[val].type, self.st.cur)
        self.st.env[flag] = self.st.const(True)
        self.st.env[val] = v
        return self.brk()


class LoopBuilder:
    """Loops for one function (`st.loops`)."""

    __slots__ = ("st",)  # its only state is the shared one

    def __init__(self, st):
        self.st = st

    # -- loops -----------------------------------------------------------------------------
    def loop_with_return(self, s, rest, exit) -> list:
        """A loop containing `return`: the loop carries (returned?, value); after it, the
        function (or the enclosing loop) returns if the flag is set, else runs `rest`."""
        st = self.st
        ret_t = st.ret_type or self.probe_return_type(s)
        flag, val = f"$ret_flag{id(s)}", f"$ret_value{id(s)}"
        st.env[flag] = st.const(False)
        st.env[val] = st.emit("prim::Constant", (), (ret_t,), {"value": None}).output
        saved = st.loop_ret
        st.loop_ret = (flag, val)
        try:
            st.stmts.stmt(s)
        finally:
            st.loop_ret = saved
        st.cur = s
        cond = st.env[flag]
        then_b, else_b = ir.Block(), ir.Block()
        rt, _ = st.stmts.in_block(then_b, lambda: exit.ret(st.env[val]))
        re_, _ = st.stmts.in_block(else_b, lambda: st.stmts.stmts(list(rest), exit))
        then_b.returns, else_b.returns = rt, re_
        types = []
        for a, b in zip(rt, re_):
            u = ft.unify(a.type, b.type)
            if u is None:
                st.fail(f"paths leave with different types ({a.type} and {b.type})", s)
            types.append(u)
        st.cur = s
        return st.emit("prim::If", [cond], types, blocks=[then_b, else_b]).outputs

    def probe_return_type(self, s) -> ir.Type:
        st = self.st
        if st.probing:
            return ir.ANY
        saved = (st.block, dict(st.env), st.probing, st.probe_types,
                 list(st.python_ops), set(st.static_args))
        st.block, st.probing, st.probe_types = ir.Block(), True, []
        saved_ret = st.loop_ret
        try:
            flag, val = "$probe_flag", "$probe_value"
            st.env[flag] = st.const(False)
            st.env[val] = st.emit("prim::Constant", (), (ir.ANY,), {"value": None}).output
            st.loop_ret = (flag, val)
            st.stmts.stmt(s)
            types = st.probe_types
        finally:
            st.loop_ret = saved_ret
            (st.block, st.env, st.probing, st.probe_types, st.python_ops,
             st.static_args) = saved
        out = None
        for t in types:
            out = t if out is None else (ft.unify(out, t) or ir.ANY)
        return out or ir.NONE

    def loop(self, s, trip, init_cond, bind_target, body, while_test=None):
        """Emit a prim::Loop whose body binds the target from the iteration index."""
        st = self.st
        body, before = st.writes.enter_loop(s, body)  # carry every storage the body may write
        # carried: what the loop assigns that exists before it, the `for` target included
        # (`for i in ...` rebinds an argument `i`: after the loop it holds the last element, or
        # its old value when the loop ran zero times); a comprehension's target is its own
        # scope's and is never carried
        own = []
        if isinstance(s, ast.For) and not getattr(s, "jitorch_comprehension", False):
            own = assigned_names([ast.Assign(targets=[s.target], value=None)])
        names = list(dict.fromkeys(n for n in own + assigned_names(body) if n in st.env))
        ret = st.loop_ret
        st.loop_ret = None
        if ret is not None:
            names += [n for n in ret if n not in names]
        else:  # an enclosing loop's return flags are set after this loop, never inside it
            pass
        if s.orelse:
            st.fail("for/while ... else is not supported in scripted code", s)
        init = [st.env[n] for n in names]
        types = [v.type for v in init]
        for _ in range(len(names) + 1):  # until the carried types are stable
            blk, i, params, rets = self._loop_body(names, types, bind_target, body,
                                                   while_test, ret)
            wider = [_widened(p.type, r.type) for p, r in zip(params, rets[1:])]
            if not any(w is not None for w in wider):
                break
            # None before the loop, a value after an iteration: the variable is Optional
            # (as TorchScript types `h: Optional[Tensor] = None`); compile the body again
            types = [w if w is not None else t for w, t in zip(wider, types)]
        init = [v if v.type == ty else _as_type(st, v, ty, s) for v, ty in zip(init, types)]
        for n, p, r in zip(names, params, rets[1:]):
            if ft.unify(p.type, r.type) != p.type and not (
                    ft.is_tensor(p.type) and ft.is_tensor(r.type)):
                st.fail(f"variable '{n}' changes type in the loop ({p.type} before, {r.type} "
                        "after an iteration)", s)
        blk.returns = rets
        st.cur = s
        node = st.emit("prim::Loop", [trip, init_cond] + init, [p.type for p in params],
                       blocks=[blk])
        for n, o in zip(names, node.outputs):
            o.name = n
            st.env[n] = o
        st.writes.leave_loop(before)

    def _loop_body(self, names, types, bind_target, body, while_test, ret):
        """Compile the loop body with the carried variables typed `types`: (block, index
        parameter, carried parameters, the values the body ends with)."""
        st = self.st
        blk = ir.Block()
        i = ir.Value(ir.INT, "i")
        params = [ir.Value(ty, n) for n, ty in zip(names, types)]
        blk.params = [i] + params
        saved_block, saved_env = st.block, st.env
        n_ops = len(st.python_ops)
        st.block, st.env = blk, dict(saved_env)
        st.env.update(zip(names, params))
        st.loop_depth += 1
        try:
            bind_target(i)
            rets = st.stmts.stmts(list(body), LoopExit(st, names, while_test, ret))
        except BaseException:
            del st.python_ops[n_ops:]
            raise
        finally:
            st.loop_depth -= 1
            st.block, st.env = saved_block, saved_env
        return blk, i, params, rets

    def while_stmt(self, s):
        st = self.st
        static, v = st.stmts.static_condition(s.test)
        if static is False:
            return
        cond = st.exprs.as_bool(v, s.test)
        st.cur = s
        self.loop(s, st.const(MAX_TRIP), cond, lambda i: None, s.body, while_test=s.test)

    def for_stmt(self, s):
        st = self.st
        if st.hooks.for_stmt(s):  # unrolled by the module frontend (`for m in self.layers`)
            return
        it = s.iter
        st.cur = s
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
                st.exprs.resolve_name(it.func.id, it.func) is range:
            start, step, trip = self.range_args(it)
            st.cur = s

            def bind(i):
                st.cur = s
                ex = st.exprs
                v = ex.scalar_op("add", [start, ex.scalar_op("mul", [i, step], ir.INT)],
                                 ir.INT) if not _is_const(start, 0) or not _is_const(step, 1) \
                    else i
                st.stmts.assign(s.target, v)
            self.loop(s, trip, st.const(True), bind, s.body)
            return
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
                st.exprs.resolve_name(it.func.id, it.func) in (enumerate, zip):
            return self.for_enumerate_zip(s, it)
        seq = st.exprs.expr(it)
        seq = st.exprs.to_value(seq)
        st.cur = s
        ty = seq.type
        if isinstance(ty, ir.TupleType):  # heterogeneous: unroll
            if any(_exits(b, True) for b in s.body):
                st.fail("break/continue in a loop over a tuple are not supported", s)
            parts = st.exprs.unpack(seq, len(ty.elems), s)
            for p in parts:
                st.stmts.assign(s.target, p)
                st.stmts.block_stmts(s.body)
            return
        trip, get = self.iteration(seq, it)

        def bind(i):
            st.cur = s
            st.stmts.assign(s.target, get(i))
        self.loop(s, trip, st.const(True), bind, s.body)

    def iteration(self, seq, node):
        """(trip count, index -> element) for iterating a list or a tensor's first dim."""
        st = self.st
        ty = ft.base(seq.type)
        if isinstance(ty, ir.ListType):
            return (st.exprs.scalar_op("len", [seq], ir.INT),
                    lambda i: st.exprs.scalar_op("getitem", [seq, i], ty.elem))
        if isinstance(ty, ir.TensorType):
            return (st.exprs.tensor_size(seq, 0),
                    lambda i: st.calls.call_op("select", [seq, st.const(0), i]))
        if isinstance(ty, ir.DictType):
            keys = st.exprs.scalar_op("list", [seq], ir.ListType(ty.key))
            return self.iteration(keys, node)
        st.fail(f"cannot iterate over a value of type {seq.type} in scripted code", node)

    def for_enumerate_zip(self, s, call):
        st = self.st
        trip, get = self.iter_of(call)
        st.cur = s

        def bind(i):
            st.cur = s
            st.stmts.assign(s.target, get(i))
        self.loop(s, trip, st.const(True), bind, s.body)

    def iter_of(self, node):
        """(trip, getter) for an iterable expression, composing `enumerate(seq[, start])` and
        `zip(s1, s2, ...)` (nested ones too) over lists, tensors and dicts."""
        st = self.st
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                st.exprs.resolve_name(node.func.id, node.func) in (enumerate, zip):
            is_enum = node.func.id == "enumerate"
            if node.keywords or not node.args or (is_enum and len(node.args) > 2):
                st.fail(f"unsupported arguments to {node.func.id}()", node)
            its = [self.iter_of(a) for a in (node.args[:1] if is_enum else node.args)]
            start = st.exprs.expr_value(node.args[1]) if is_enum and len(node.args) == 2 else None
            st.cur = node
            trip = its[0][0]
            for other, _ in its[1:]:
                trip = st.exprs.scalar_op("min", [trip, other], ir.INT)

            def get(i):
                elems = [g(i) for _, g in its]
                if is_enum:
                    k = i if start is None else st.exprs.scalar_op("add", [i, start], ir.INT)
                    elems = [k] + elems
                return st.emit("prim::TupleConstruct", elems,
                               (ir.TupleType([e.type for e in elems]),)).output
            return trip, get
        seq = st.exprs.expr_value(node)
        st.cur = node
        return self.iteration(seq, node)

    def range_args(self, call):
        st = self.st
        if call.keywords or not 1 <= len(call.args) <= 3:
            st.fail("range() takes 1 to 3 positional arguments", call)
        vals = [st.exprs.expr_value(a) for a in call.args]
        for a, v in zip(call.args, vals):
            if not isinstance(ft.base(v.type), (ir.IntType, ir.BoolType)):
                st.fail(f"range() arguments must be int, not {v.type}", a)
        st.cur = call
        if len(vals) == 1:
            return st.const(0), st.const(1), vals[0]
        start, stop = vals[0], vals[1]
        step = vals[2] if len(vals) == 3 else st.const(1)
        if len(vals) == 3 and not (step.node is not None and step.node.op == "prim::Constant"):
            st.fail("range() step must be a constant in scripted code", call.args[2])
        k = step.node.attrs["value"]
        if k == 0:
            st.fail("range() step must not be zero", call.args[2])
        # trip = max(0, ceil((stop - start) / step)), in integers
        span = st.exprs.scalar_op("sub", [stop, start], ir.INT)
        adj = st.exprs.scalar_op("add", [span, st.const(k - 1 if k > 0 else k + 1)], ir.INT)
        q = st.exprs.scalar_op("floordiv", [adj, step], ir.INT)
        trip = st.exprs.scalar_op("max", [q, st.const(0)], ir.INT)
        return start, step, trip


def _is_const(v, value) -> bool:
    return v.node is not None and v.node.op == "prim::Constant" and \
        v.node.attrs["value"] == value and type(v.node.attrs["value"]) is type(value)
