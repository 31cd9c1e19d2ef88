"""Statements of the scripting frontend (a mixin of `frontend.FunctionCompiler`).

Owns assignment (names, tuple unpacking, subscripts, annotated), augmented assignment, `if`,
`break`/`continue`/`return` (by continuation, see frontend/function.py), `assert`, `raise` and the
errors for unsupported statements; loops are in frontend/loops.py. `stmts(body, exit)` compiles a
statement list in tail position and returns the values its paths end with (`exit` says what
falling off, return, break and continue produce).
"""
from __future__ import annotations

import ast

from . import types as ft
from .. import ir
from .alias import LoopEntry
from .loops import LoopExit, LoopMixin, _exits, _has_return


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


class StmtMixin(LoopMixin):
    # -- statement lists -------------------------------------------------------------------
    def stmts(self, body, exit) -> list:
        """Compile `body` in tail position; returns the values every path ends with."""
        loops = isinstance(exit, LoopExit)
        for i, s in enumerate(body):
            self.cur = s
            if isinstance(s, ast.If) and _exits(s, loops):
                return self.if_exit(s, body[i + 1:], exit)
            if isinstance(s, (ast.For, ast.While)) and any(
                    _has_return(c) for c in s.body):
                return self.loop_with_return(s, body[i + 1:], exit)
            if isinstance(s, ast.Return):
                v = self.expr_value(s.value) if s.value is not None else self.const(None)
                self.cur = s
                if self.ret_type is not None:
                    v = self.coerce(v, self.ret_type, s)
                return exit.ret(v)
            if isinstance(s, ast.Break):
                return exit.brk(s)
            if isinstance(s, ast.Continue):
                return exit.cont(s)
            self.stmt(s)
        return exit.fallthrough()

    def block_stmts(self, body) -> bool:
        """Compile a branch body that does not leave; returns True when it ends in a raise."""
        for s in body:
            self.cur = s
            self.stmt(s)
            if isinstance(s, ast.Raise):
                return True
        return False

    def in_block(self, block: ir.Block, fn):
        saved_block, saved_env = self.block, self.env
        self.block, self.env = block, dict(saved_env)
        try:
            r = fn()
            return r, self.env
        finally:
            self.block, self.env = saved_block, saved_env

    # -- one statement -------------------------------------------------------------------------
    def stmt(self, s):
        kind = type(s)
        if kind is LoopEntry:
            self.loop_entry(s)
            return
        if kind in _UNSUPPORTED:
            self.fail(_UNSUPPORTED[kind], s)
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return  # a string used as a comment
            if isinstance(s.value, (ast.Yield, ast.YieldFrom)):
                self.fail("generators (yield) are not supported in scripted code", s.value)
            self.expr(s.value)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Assign):
            v = self.expr(s.value)
            for t in s.targets:
                self.assign(t, v)
        elif isinstance(s, ast.AnnAssign):
            ty = self.annotation(s.annotation)
            if s.value is None:
                self.fail("a variable annotation needs a value in scripted code", s)
            v = self.expr(s.value, hint=ty)
            self.assign(s.target, self.coerce(self.to_value(v), ty, s.value))
        elif isinstance(s, ast.AugAssign):
            self.aug_assign(s)
        elif isinstance(s, ast.If):
            self.if_stmt(s)
        elif isinstance(s, ast.For):
            self.for_stmt(s)
        elif isinstance(s, ast.While):
            self.while_stmt(s)
        elif isinstance(s, ast.Assert):
            self.assert_stmt(s)
        elif isinstance(s, ast.Raise):
            self.raise_stmt(s)
        elif isinstance(s, (ast.Return, ast.Break, ast.Continue)):
            self.fail(f"'{type(s).__name__.lower()}' is not supported here", s)
        else:
            self.fail(f"{type(s).__name__} statements are not supported in scripted code", s)

    # -- assignment ------------------------------------------------------------------------
    def assign(self, t, v):
        if isinstance(t, ast.Name):
            self.env[t.id] = v
        elif isinstance(t, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in t.elts):
                self.fail("starred assignment targets are not supported in scripted code", t)
            parts = self.unpack(v, len(t.elts), t)
            for e, p in zip(t.elts, parts):
                self.assign(e, p)
        elif isinstance(t, ast.Subscript):
            self.cur = t
            base = self.expr_value(t.value)
            if not isinstance(t.value, ast.Name) and not ft.is_tensor(base.type):
                self.fail("subscript assignment is only supported on a variable or a tensor "
                          "(`x[i] = v`, `x.t()[i] = v`)", t)
            self.store_item(getattr(t.value, "id", None), base,
                            self.setitem(base, t.slice, self.to_value(v), t), t)
        elif isinstance(t, ast.Attribute):
            self.fail("assigning to attributes is only supported in a scripted class's "
                      "__init__", t)
        elif isinstance(t, ast.Starred):
            self.fail("starred assignment targets are not supported in scripted code", t)
        else:
            self.fail(f"cannot assign to {type(t).__name__} in scripted code", t)

    def store_item(self, name, base, new, node):
        """After `name[idx] = v`: a tensor is written in place (every alias sees it), other
        containers are rebound."""
        if new is None:  # setitem wrote through a view already
            return
        if isinstance(ft.base(base.type), ir.TensorType):
            self.mutate(base, new, node)
        else:
            self.env[name] = new

    def aug_assign(self, s):
        self.cur = s
        op = type(s.op)
        if isinstance(s.target, ast.Name):
            cur = self.expr_value(ast.Name(s.target.id, ast.Load(), lineno=s.lineno,
                                           col_offset=s.col_offset))
            rhs = self.expr(s.value)
            self.cur = s
            new = self.binop(op, cur, rhs, s)
            if isinstance(ft.base(cur.type), ir.TensorType):  # `x += y` is x.add_(y)
                self.mutate(cur, self.write_op(cur, self.to_value(new), cast_check=True), s)
            else:
                self.env[s.target.id] = new
        elif isinstance(s.target, ast.Subscript):
            base = self.expr_value(s.target.value)
            if not isinstance(s.target.value, ast.Name) and not ft.is_tensor(base.type):
                self.fail("augmented assignment is only supported on variables and `x[i]`", s)
            cur = self.getitem(base, s.target.slice, s.target)
            rhs = self.expr(s.value)
            self.cur = s
            new = self.binop(op, cur, rhs, s)
            self.store_item(getattr(s.target.value, "id", None), base,
                            self.setitem(base, s.target.slice, self.to_value(new), s.target),
                            s.target)
        else:
            self.fail("augmented assignment is only supported on variables and `x[i]`", s)

    # -- if --------------------------------------------------------------------------------
    def static_condition(self, test):
        """A condition known at compile time (is_scripting(), a static `x is None`), or None."""
        v = self.expr(test)
        if isinstance(v, ir.Value) and v.node is not None and v.node.op == "prim::Constant" \
                and isinstance(v.node.attrs["value"], bool):
            return v.node.attrs["value"], v
        from .expr import Sugar
        if isinstance(v, Sugar) and isinstance(v.obj, (bool, int)):
            return bool(v.obj), v
        return None, v

    def if_stmt(self, s):
        static, v = self.static_condition(s.test)
        if static is not None:
            self.block_stmts(s.body if static else s.orelse)
            return
        cond = self.as_bool(v, s.test)
        self.cur = s
        then_b, else_b = ir.Block(), ir.Block()
        before = self.env
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
                self.fail(f"variable '{n}' has type {a.type} in the true branch and {b.type} in "
                          "the false branch", s)
            types.append(u)
            rt.append(a)
            re_.append(b)
        then_b.returns, else_b.returns = rt, re_
        node = self.emit("prim::If", [cond], types, blocks=[then_b, else_b])
        for n, o in zip(names, node.outputs):
            o.name = n
            self.env[n] = o
            self.merge_alias(o, env_t.get(n), env_e.get(n))
        for n in list(env_t) + list(env_e):  # defined on one path only: gone, say why if used
            if n not in self.env and not n.startswith("$"):
                self.partial_names[n] = s

    def _placeholder(self, block, ty):
        """A value for a path that raised (never used): a typed None constant."""
        saved = self.block
        self.block = block
        try:
            return self.emit("prim::Constant", (), (ty,), {"value": None}).output
        finally:
            self.block = saved

    def if_exit(self, s, rest, exit) -> list:
        """An `if` with a return/break/continue inside: the rest of the list goes into both
        branches, and the `if`'s outputs are the values every path exits with."""
        static, v = self.static_condition(s.test)
        if static is not None:
            return self.stmts((s.body if static else s.orelse) + list(rest), exit)
        cond = self.as_bool(v, s.test)
        self.cur = s
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
                self.fail(f"paths through this if leave with different types ({a.type} and "
                          f"{b.type})", s)
            types.append(u)
        self.cur = s
        node = self.emit("prim::If", [cond], types, blocks=[then_b, else_b])
        if not k:
            return node.outputs
        elems = node.outputs[:k]
        tup = self.emit("prim::TupleConstruct", elems,
                        (ir.TupleType([v.type for v in elems]),)).output
        return [tup] + list(node.outputs[k:])

    # -- assert / raise --------------------------------------------------------------------
    def assert_stmt(self, s):
        static, v = self.static_condition(s.test)
        if static is True:
            return
        cond = self.as_bool(v, s.test) if static is None else self.const(False)
        self.cur = s
        if s.msg is None or (isinstance(s.msg, ast.Constant) and isinstance(s.msg.value, str)):
            msg = self.const(s.msg.value if s.msg is not None else "")
            self.emit("prim::Assert", [cond, msg], ())
            return
        # a computed message is built only when the assertion fails
        then_b, else_b = ir.Block(), ir.Block()

        def fail_path():
            parts = self.message_parts(s.msg)
            self.cur = s
            self.emit("prim::Raise", parts, (), {"exc": "AssertionError"})
        self.in_block(else_b, fail_path)
        self.emit("prim::If", [cond], (), blocks=[then_b, else_b])

    def raise_stmt(self, s):
        if s.exc is None:
            self.fail("a bare 'raise' (re-raise) is not supported in scripted code", s)
        if s.cause is not None:
            self.fail("'raise ... from ...' is not supported in scripted code", s)
        e = s.exc
        args = []
        if isinstance(e, ast.Call):
            if e.keywords or len(e.args) > 1:
                self.fail("an exception in scripted code takes at most one message argument", e)
            args = e.args
            e = e.func
        exc = self.resolve_static(e)
        if not (isinstance(exc, type) and issubclass(exc, BaseException)):
            self.fail("raise needs an exception class or a call of one", s.exc)
        parts = self.message_parts(args[0]) if args else []
        self.cur = s
        self.emit("prim::Raise", parts, (), {"exc": exc.__name__})

    def message_parts(self, node) -> list:
        """A message expression as the values whose str() joined make it (f-strings split)."""
        if isinstance(node, ast.JoinedStr):
            out = []
            for p in node.values:
                if isinstance(p, ast.Constant):
                    out.append(self.const(str(p.value)))
                elif isinstance(p, ast.FormattedValue):
                    if p.format_spec is not None or p.conversion not in (-1, 115):
                        self.fail("format specs and !r/!a in f-strings are not supported in "
                                  "scripted code", p)
                    out.append(self.expr_value(p.value))
            return out
        return [self.expr_value(node)]


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
