"""Statements of the scripting frontend: `StmtBuilder` (`st.stmts`, frontend/state.py).

Owns assignment (names, tuple unpacking, subscripts, annotated), augmented assignment, `if`,
`break`/`continue`/`return` (by continuation, see frontend/function.py), `assert`, `raise` and the
errors for unsupported statements; loops are in frontend/loops.py. `stmts(body, exit)` compiles a
statement list in tail position and returns the values its paths end with (`exit` says what
falling off, return, break and continue produce). `in_block` compiles a branch into its own
block and environment.
"""
from __future__ import annotations

import ast

from . import types as ft
from .. import ir
from .alias import LoopEntry
from .loops import LoopExit, _exits, _has_return
from .state import UNHANDLED
from ..kernels.signals import in_library


_UNSUPPORTED = {
    ast.Try: "try blocks are not supported in scripted code",
    ast.With: "with statements are not supported in scripted code",
    ast.AsyncWith: "async with statements are not supported in scripted code",
    ast.AsyncFor: "async for loops are not supported in scripted code",
    ast.Global: "global statements are not supported in scripted code",
    ast.Nonlocal: "nonlocal statements are not supported in scripted code",
    ast.Delete: "del statements are not supported in scripted code",
    ast.Import: "import statements are not supported in scripted code",
    ast.ImportFrom: "import statements are not supported in scripted code",
    ast.ClassDef: "class definitions inside scripted functions are not supported",
    ast.FunctionDef: "nested function definitions are not supported in scripted code",
    ast.AsyncFunctionDef: "nested function definitions are not supported in scripted code",
}
if hasattr(ast, "TryStar"):
    _UNSUPPORTED[ast.TryStar] = _UNSUPPORTED[ast.Try]
if hasattr(ast, "Match"):
    _UNSUPPORTED[ast.Match] = "match statements are not supported in scripted code"


class StmtBuilder:
    """Statements for one function (`st.stmts`); loops are `st.loops`."""

    __slots__ = ("st",)  # its only state is the shared one

    def __init__(self, st):
        self.st = st

    # -- statement lists -------------------------------------------------------------------
    def stmts(self, body, exit) -> list:
        """Compile `body` in tail position; returns the values every path ends with."""
        st = self.st
        loops = isinstance(exit, LoopExit)
        for i, s in enumerate(body):
            st.cur = s
            if isinstance(s, ast.If) and _exits(s, loops):
                return self.if_exit(s, body[i + 1:], exit)
            if isinstance(s, (ast.For, ast.While)) and any(
                    _has_return(c) for c in s.body):
                return st.loops.loop_with_return(s, body[i + 1:], exit)
            if isinstance(s, ast.Return):
                v = st.exprs.expr_value(s.value) if s.value is not None else st.const(None)
                st.cur = s
                if st.ret_type is not None:
                    v = st.exprs.coerce(v, st.ret_type, s)
                return exit.ret(v)
            if isinstance(s, ast.Break):
                return exit.brk(s)
            if isinstance(s, ast.Continue):
                return exit.cont(s)
            self.stmt(s)
        return exit.fallthrough()

    def block_stmts(self, body) -> bool:
        """Compile a branch body that does not leave; returns True when it ends in a raise."""
        st = self.st
        for s in body:
            st.cur = s
            self.stmt(s)
            if isinstance(s, ast.Raise):
                return True
        return False

    def in_block(self, block: ir.Block, fn):
        """`fn()` compiled into `block` with a copy of the environment: (its value, the env
        it leaves)."""
        st = self.st
        saved_block, saved_env = st.block, st.env
        st.block, st.env = block, dict(saved_env)
        try:
            with st.hooks.branch():  # the module frontend's static bindings stay inside too
                r = fn()
            return r, st.env
        finally:
            st.block, st.env = saved_block, saved_env

    # -- one statement -------------------------------------------------------------------------
    def stmt(self, s):
        st = self.st
        kind = type(s)
        if kind is LoopEntry:
            st.writes.loop_entry(s)
            return
        if kind in _UNSUPPORTED:
            st.fail(_UNSUPPORTED[kind], s)
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return  # a string used as a comment
            if isinstance(s.value, (ast.Yield, ast.YieldFrom)):
                st.fail("generators (yield) are not supported in scripted code", s.value)
            st.exprs.expr(s.value)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Assign):
            v = st.exprs.expr(s.value)
            for t in s.targets:
                self.assign(t, v)
        elif isinstance(s, ast.AnnAssign):
            ty = st.annotation(s.annotation)
            if s.value is None:
                st.fail("a variable annotation needs a value in scripted code", s)
            v = st.exprs.expr(s.value, hint=ty)
            self.assign(s.target, st.exprs.coerce(st.exprs.to_value(v), ty, s.value))
        elif isinstance(s, ast.AugAssign):
            self.aug_assign(s)
        elif isinstance(s, ast.If):
            self.if_stmt(s)
        elif isinstance(s, ast.For):
            st.loops.for_stmt(s)
        elif isinstance(s, ast.While):
            st.loops.while_stmt(s)
        elif isinstance(s, ast.Assert):
            self.assert_stmt(s)
        elif isinstance(s, ast.Raise):
            self.raise_stmt(s)
        elif isinstance(s, (ast.Return, ast.Break, ast.Continue)):
            st.fail(f"'{type(s).__name__.lower()}' is not supported here", s)
        else:
            st.fail(f"{type(s).__name__} statements are not supported in scripted code", s)

    # -- assignment ------------------------------------------------------------------------
    def assign(self, t, v):
        st = self.st
        v = st.hooks.assign(t, v)  # a module's static names and unrolled items
        if v is None:  # the hook bound the target
            return
        if isinstance(t, ast.Name):
            st.env[t.id] = v
        elif isinstance(t, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in t.elts):
                st.fail("starred assignment targets are not supported in scripted code", t)
            parts = st.exprs.unpack(v, len(t.elts), t)
            for e, p in zip(t.elts, parts):
                self.assign(e, p)
        elif isinstance(t, ast.Subscript):
            st.cur = t
            from .list_methods import slice_assign
            if slice_assign(st, t, st.exprs.to_value(v)):  # l[a:b] = vs
                return
            base = st.exprs.expr_value(t.value)
            attr = isinstance(t.value, ast.Attribute) and not ft.is_tensor(base.type)
            if not isinstance(t.value, ast.Name) and not ft.is_tensor(base.type) and not attr:
                st.fail("subscript assignment is only supported on a variable or a tensor "
                        "(`x[i] = v`, `x.t()[i] = v`)", t)
            new = st.index.setitem(base, t.slice, st.exprs.to_value(v), t)
            if attr:  # `self.table[k] = v`: the module's attribute is the new container
                self.assign(_store(t.value), new)
            else:
                self.store_item(getattr(t.value, "id", None), base, new, t)
        elif isinstance(t, ast.Attribute):
            st.fail("assigning to attributes is only supported in a scripted class's "
                    "__init__", t)
        elif isinstance(t, ast.Starred):
            st.fail("starred assignment targets are not supported in scripted code", t)
        else:
            st.fail(f"cannot assign to {type(t).__name__} in scripted code", t)

    def store_item(self, name, base, new, node):
        """After `name[idx] = v`: a tensor is written in place (every alias sees it), other
        containers are rebound."""
        st = self.st
        if new is None:  # setitem wrote through a view already
            return
        if isinstance(ft.base(base.type), ir.TensorType):
            st.writes.mutate(base, new, node)
        else:
            st.env[name] = new

    def aug_assign(self, s):
        st = self.st
        st.cur = s
        op = type(s.op)
        if isinstance(s.target, ast.Name):
            cur = st.exprs.expr_value(ast.Name(s.target.id, ast.Load(), lineno=s.lineno,
                                               col_offset=s.col_offset))
            rhs = st.exprs.expr(s.value)
            st.cur = s
            new = st.exprs.binop(op, cur, rhs, s)
            if isinstance(ft.base(cur.type), ir.TensorType):  # `x += y` is x.add_(y)
                new = st.writes.write_op(cur, st.exprs.to_value(new), cast_check=True)
                st.writes.mutate(cur, new, s)
            else:
                st.env[s.target.id] = new
        elif isinstance(s.target, ast.Subscript):
            base = st.exprs.expr_value(s.target.value)
            attr = isinstance(s.target.value, ast.Attribute) and not ft.is_tensor(base.type)
            if not isinstance(s.target.value, ast.Name) and not ft.is_tensor(base.type) and \
                    not attr:
                st.fail("augmented assignment is only supported on variables and `x[i]`", s)
            cur = st.index.getitem(base, s.target.slice, s.target)
            rhs = st.exprs.expr(s.value)
            st.cur = s
            new = st.exprs.binop(op, cur, rhs, s)
            new = st.index.setitem(base, s.target.slice, st.exprs.to_value(new), s.target)
            if attr:  # `self.table[k] += v`
                self.assign(_store(s.target.value), new)
            else:
                self.store_item(getattr(s.target.value, "id", None), base, new, s.target)
        elif isinstance(s.target, ast.Attribute):
            # `self.n += 1` (an attribute the module frontend makes state), `self.buf += x`
            cur = st.exprs.expr_value(ast.copy_location(
                ast.Attribute(s.target.value, s.target.attr, ast.Load()), s.target))
            rhs = st.exprs.expr(s.value)
            st.cur = s
            new = st.exprs.binop(op, cur, rhs, s)
            if isinstance(ft.base(cur.type), ir.TensorType):  # in place, as for a variable
                new = st.writes.write_op(cur, st.exprs.to_value(new), cast_check=True)
                st.writes.mutate(cur, new, s)
            else:
                self.assign(s.target, new)
        else:
            st.fail("augmented assignment is only supported on variables and `x[i]`", s)

    # -- if --------------------------------------------------------------------------------
    def static_condition(self, test):
        """A condition known at compile time (is_scripting(), a static `x is None`, `not` of
        one: `if not is_scripting():` keeps eager-only code out of the graph), or None."""
        st = self.st
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            static, v = self.static_condition(test.operand)
            if static is not None:
                return not static, v
            st.cur = test
            return None, st.exprs.scalar_op("not", [st.exprs.as_bool(st.exprs.to_value(v))],
                                            ir.BOOL)
        v = st.exprs.expr(test)
        if isinstance(v, ir.Value) and v.node is not None and v.node.op == "prim::Constant" \
                and isinstance(v.node.attrs["value"], bool):
            return v.node.attrs["value"], v
        from .expr import Sugar
        if isinstance(v, Sugar) and isinstance(v.obj, (bool, int)):
            return bool(v.obj), v
        return None, v

    def if_stmt(self, s):
        st = self.st
        static, v = self.static_condition(s.test)
        if static is not None:
            self.block_stmts(s.body if static else s.orelse)
            return
        cond = st.exprs.as_bool(v, s.test)
        st.cur = s
        then_b, else_b = ir.Block(), ir.Block()
        before = st.env
        raised_t, env_t = self.in_block(then_b, lambda: self.block_stmts(s.body))
        raised_e, env_e = self.in_block(else_b, lambda: self.block_stmts(s.orelse))
        names = []
        for n in list(env_t) + [k for k in env_e if k not in env_t]:
            changed = env_t.get(n) is not before.get(n) or env_e.get(n) is not before.get(n)
            if not changed:
                continue
            if (n in env_t or raised_t) and (n in env_e or raised_e):
                if n in env_t or n in env_e:
                    names.append(n)
        types, rt, re_ = [], [], []
        for n in names:
            a, b = env_t.get(n), env_e.get(n)
            a = a if a is not None else self._placeholder(then_b, b.type)
            b = b if b is not None else self._placeholder(else_b, a.type)
            u = ft.unify(a.type, b.type)
            if u is None:
                st.fail(f"variable '{n}' has type {a.type} in the true branch and {b.type} in "
                        "the false branch", s)
            types.append(u)
            rt.append(a)
            re_.append(b)
        then_b.returns, else_b.returns = rt, re_
        node = st.emit("prim::If", [cond], types, blocks=[then_b, else_b])
        for n, o in zip(names, node.outputs):
            o.name = n
            st.env[n] = o
            st.writes.merge_alias(o, env_t.get(n), env_e.get(n))
        for n in list(env_t) + list(env_e):  # defined on one path only: gone, say why if used
            if n not in st.env and not n.startswith("$"):
                st.partial_names[n] = s

    def _placeholder(self, block, ty):
        """A value for a path that raised (never used): a typed None constant."""
        st = self.st
        saved = st.block
        st.block = block
        try:
            return st.emit("prim::Constant", (), (ty,), {"value": None}).output
        finally:
            st.block = saved

    def if_exit(self, s, rest, exit) -> list:
        """An `if` with a return/break/continue inside: the rest of the list goes into both
        branches, and the `if`'s outputs are the values every path exits with."""
        st = self.st
        static, v = self.static_condition(s.test)
        if static is not None:
            return self.stmts((s.body if static else s.orelse) + list(rest), exit)
        cond = st.exprs.as_bool(v, s.test)
        st.cur = s
        then_b, else_b = ir.Block(), ir.Block()
        rt, _ = self.in_block(then_b, lambda: self.stmts(list(s.body) + list(rest), exit))
        re_, _ = self.in_block(else_b, lambda: self.stmts(list(s.orelse) + list(rest), exit))
        # a tuple returned on both paths leaves as its elements (a tuple-valued `if` output
        # is neither lowered nor differentiated), rebuilt after the if
        k = _returned_tuple(exit, rt, then_b, re_, else_b)
        if k:
            rt = list(rt[0].node.inputs) + list(rt[1:])
            re_ = list(re_[0].node.inputs) + list(re_[1:])
        then_b.returns, else_b.returns = rt, re_
        types = []
        for a, b in zip(rt, re_):
            u = ft.unify(a.type, b.type)
            if u is None:
                st.fail(f"paths through this if leave with different types ({a.type} and "
                        f"{b.type})", s)
            types.append(u)
        st.cur = s
        node = st.emit("prim::If", [cond], types, blocks=[then_b, else_b])
        if not k:
            return node.outputs
        elems = node.outputs[:k]
        tup = st.emit("prim::TupleConstruct", elems,
                      (ir.TupleType([v.type for v in elems]),)).output
        return [tup] + list(node.outputs[k:])

    # -- assert / raise --------------------------------------------------------------------
    def assert_stmt(self, s):
        st = self.st
        static, v = self.static_condition(s.test)
        if static is True:
            return
        cond = st.exprs.as_bool(v, s.test) if static is None else st.const(False)
        st.cur = s
        if s.msg is None or (isinstance(s.msg, ast.Constant) and isinstance(s.msg.value, str)):
            msg = st.const(s.msg.value if s.msg is not None else "")
            st.emit("prim::Assert", [cond, msg], ())
            return
        # a computed message is built only when the assertion fails
        then_b, else_b = ir.Block(), ir.Block()

        def fail_path():
            parts = self.message_parts(s.msg)
            st.cur = s
            st.emit("prim::Raise", parts, (), {"exc": "AssertionError"})
        self.in_block(else_b, fail_path)
        st.emit("prim::If", [cond], (), blocks=[then_b, else_b])

    def raise_stmt(self, s):
        st = self.st
        if s.exc is None:
            st.fail("a bare 'raise' (re-raise) is not supported in scripted code", s)
        if s.cause is not None:
            st.fail("'raise ... from ...' is not supported in scripted code", s)
        e = s.exc
        args = []
        if isinstance(e, ast.Call):
            if e.keywords or len(e.args) > 1:
                st.fail("an exception in scripted code takes at most one message argument", e)
            args = e.args
            e = e.func
        exc = st.exprs.resolve_static(e)
        if not (isinstance(exc, type) and issubclass(exc, BaseException)):
            st.fail("raise needs an exception class or a call of one", s.exc)
        parts = self.message_parts(args[0]) if args else []
        st.cur = s
        attrs = {"exc": exc.__name__}
        if in_library(st.loc()):  # jitorch's own check (a composite's): eager's plain message
            attrs["library"] = True
        st.emit("prim::Raise", parts, (), attrs)

    def message_parts(self, node) -> list:
        """A message expression as the values whose str() joined make it (f-strings split)."""
        st = self.st
        if isinstance(node, ast.JoinedStr):
            out = []
            for p in node.values:
                if isinstance(p, ast.Constant):
                    out.append(st.const(str(p.value)))
                elif isinstance(p, ast.FormattedValue):
                    r = st.hooks.formatted_value(p) if p.format_spec is None else UNHANDLED
                    if r is not UNHANDLED:  # `{self!r}` in a module's message
                        out.append(r)
                        continue
                    if p.format_spec is not None or p.conversion not in (-1, 115):
                        st.fail("format specs and !r/!a in f-strings are not supported in "
                                "scripted code", p)
                    out.append(st.exprs.expr_value(p.value))
            return out
        return [st.exprs.expr_value(node)]


def _returned_tuple(exit, rt, then_b, re_, else_b) -> int:
    """The arity of a tuple that both paths of a function-level `if` return (built by a
    prim::TupleConstruct in each branch), else 0."""
    if not getattr(exit, "returns_value", False) or not rt or not re_:
        return 0
    parts = []
    for v, b in ((rt[0], then_b), (re_[0], else_b)):
        n = v.node
        if n is None or n.op != "prim::TupleConstruct" or n.blocks or n not in b.nodes:
            return 0
        parts.append(len(n.inputs))
    return parts[0] if parts[0] == parts[1] else 0


def _store(node: ast.expr) -> ast.expr:
    """`node` (an attribute read) as an assignment target."""
    return ast.copy_location(ast.Attribute(node.value, node.attr, ast.Store()), node)
