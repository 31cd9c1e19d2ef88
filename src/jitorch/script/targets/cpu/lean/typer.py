"""The types of a kernel's source, without Numba's frontend: the lean compiler's first half.

Owns `infer(tree, globals, argtys, typingctx) -> Typed`: every expression's Numba type and every
call's signature in one kernel function (kernel.py's source: assignments, `for` over `range`,
`while`, `if`, static `raise`, `return`), found by asking Numba's typing context about each
operation directly (`resolve_function_type`, `resolve_getattr`, `unify_pairs`). So an operation
means exactly what it means in Numba (the registry's scalar templates, NumPy functions, array
methods, jitorch's njit helpers), but Numba's bytecode analysis, SSA, rewrite passes and
constraint solver are skipped: they cost more than the types of a loop nest whose variables
never change type (bench/RESULTS.md, "The lean kernel compiler").

A variable's type is the unification of every value assigned to it (a loop accumulator
`acc = np.float32(0.0)` ... `acc = acc + x`), found by walking the body until no type widens.
Anything outside that subset raises `Unsupported`, and the kernel is compiled by Numba instead
(lean/__init__.py).
"""
from __future__ import annotations

import ast
import builtins
import operator

from numba.core import types

BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
          ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
          ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
          ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift}
INPLACE = {ast.Add: operator.iadd, ast.Sub: operator.isub, ast.Mult: operator.imul,
           ast.Div: operator.itruediv, ast.FloorDiv: operator.ifloordiv, ast.Mod: operator.imod,
           ast.BitAnd: operator.iand, ast.BitOr: operator.ior, ast.BitXor: operator.ixor}
COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}
UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert,
         ast.Not: operator.not_}
_MISSING = object()


class Unsupported(Exception):
    """The kernel uses what the lean compiler does not compile (Numba does instead)."""


class Typed:
    """The result of `infer`: what lower.py needs."""

    def __init__(self, fn: ast.FunctionDef, argtys: tuple):
        self.fn = fn
        self.params = [a.arg for a in fn.args.args]
        self.argtys = argtys
        self.vars: dict = {}     # local name -> its (unified, non-literal) type
        self.ty: dict = {}       # id(expr node) -> its type
        self.sig: dict = {}      # id(node) -> (function type, signature) of its operation
        self.glob: dict = {}     # id(Name/Attribute node) -> the Python value of a global
        self.direct: set = set()  # ids of array subscripts addressed directly (nonneg.py)
        self.const: dict = {}    # id(expr) -> its value, for numeric constants (`-1` included)
        self.ret = None          # the return type
        # the names the function assigns anywhere (its locals, whatever the order of the code)
        self.assigned = frozenset(n.id for n in ast.walk(fn)
                                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))


class _Infer:
    def __init__(self, typed: Typed, globs: dict, ctx):
        self.t, self.g, self.ctx = typed, globs, ctx
        self.changed = False  # a type already given to a variable or the return widened

    # --- variables -----------------------------------------------------------------------------
    def assign(self, name: str, ty) -> None:
        if name in self.t.params:
            raise Unsupported(f"assignment to parameter {name}")
        ty = types.unliteral(ty)
        old = self.t.vars.get(name)
        if old is None or old == ty:
            new = ty
        else:
            new = self.ctx.unify_pairs(old, ty)
            if new is None:
                raise Unsupported(f"{name} is {old} and {ty}")
        if new != old:
            self.t.vars[name] = new
            # (a first definition changes nothing typed before it: a use ahead of it was
            # refused as "used before assignment")
            self.changed |= old is not None

    def var_type(self, name: str):
        if name in self.t.params:
            return self.t.argtys[self.t.params.index(name)]
        return self.t.vars.get(name)

    # --- statements ----------------------------------------------------------------------------
    def block(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise Unsupported("chained assignment")
            self.store(s.targets[0], self.expr(s.value))
        elif isinstance(s, ast.AugAssign):
            self.augassign(s)
        elif isinstance(s, ast.For):
            if s.orelse or not isinstance(s.target, ast.Name):
                raise Unsupported("for loop form")
            it = s.iter
            if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                    and self.global_value(it.func.id) is range and not it.keywords
                    and 1 <= len(it.args) <= 3):
                raise Unsupported("a for loop not over range()")
            argtys = [self.expr(a) for a in it.args]
            sig = self.call_type(self.ctx.resolve_value_type(range), argtys, {})
            self.t.sig[id(it)] = (None, sig)
            self.assign(s.target.id, sig.return_type.dtype)
            self.block(s.body)
        elif isinstance(s, ast.While):
            if s.orelse:
                raise Unsupported("while ... else")
            self.expr(s.test)
            self.block(s.body)
        elif isinstance(s, ast.If):
            self.expr(s.test)
            self.block(s.body)
            self.block(s.orelse)
        elif isinstance(s, ast.Raise):
            self.raise_(s)
        elif isinstance(s, ast.Return):
            if s.value is None:
                raise Unsupported("return without a value")
            ty = types.unliteral(self.expr(s.value))
            if self.t.ret is None or self.t.ret == ty:
                self.t.ret = ty
            else:
                new = self.ctx.unify_pairs(self.t.ret, ty)
                if new is None:
                    raise Unsupported(f"returns {self.t.ret} and {ty}")
                self.changed |= new != self.t.ret
                self.t.ret = new
        elif isinstance(s, ast.Expr):
            if not isinstance(s.value, ast.Constant):  # (a docstring is nothing)
                self.expr(s.value)
        elif isinstance(s, ast.Pass):
            pass
        else:
            raise Unsupported(type(s).__name__)

    def store(self, target, ty) -> None:
        if isinstance(target, ast.Name):
            self.assign(target.id, ty)
        elif isinstance(target, ast.Tuple):
            if not isinstance(ty, types.BaseTuple) or len(ty) != len(target.elts):
                raise Unsupported(f"unpacking {ty}")
            for e, et in zip(target.elts, ty):
                if not isinstance(e, ast.Name):
                    raise Unsupported("nested unpacking")
                self.assign(e.id, et)
        elif isinstance(target, ast.Subscript):
            base, index = self.expr(target.value), self.index(target.slice)
            fnty = self.ctx.resolve_value_type(operator.setitem)
            self.t.sig[id(target)] = (fnty, self.call_type(fnty, [base, index, ty], {}))
        else:
            raise Unsupported(f"assignment to {type(target).__name__}")

    def augassign(self, s) -> None:
        op = s.op.__class__
        if isinstance(s.target, ast.Name):
            cur = self.var_type(s.target.id)
            if cur is None:
                raise Unsupported(f"{s.target.id} used before assignment")
            rhs = self.expr(s.value)
            fn = INPLACE.get(op) if cur.mutable else BINOPS.get(op)
            if fn is None:
                raise Unsupported(f"augmented {op.__name__}")
            fnty = self.ctx.resolve_value_type(fn)
            sig = self.call_type(fnty, [cur, rhs], {})
            self.t.sig[id(s)] = (fnty, sig)
            self.assign(s.target.id, sig.return_type)
        elif isinstance(s.target, ast.Subscript):  # a[i] op= v: load, op, store
            base, index = self.expr(s.target.value), self.index(s.target.slice)
            get = self.ctx.resolve_value_type(operator.getitem)
            gsig = self.call_type(get, [base, index], {})
            fnty = self.ctx.resolve_value_type(BINOPS[op])
            sig = self.call_type(fnty, [gsig.return_type, self.expr(s.value)], {})
            put = self.ctx.resolve_value_type(operator.setitem)
            ssig = self.call_type(put, [base, index, sig.return_type], {})
            self.t.sig[id(s)] = (fnty, sig)
            self.t.sig[(id(s), "get")] = (get, gsig)
            self.t.sig[(id(s), "set")] = (put, ssig)
        else:
            raise Unsupported("augmented assignment target")

    def raise_(self, s) -> None:
        exc = s.exc
        cls, args = exc, []
        if isinstance(exc, ast.Call):
            cls, args = exc.func, exc.args
            if exc.keywords:
                raise Unsupported("raise with keywords")
        value = self.global_of(cls)
        if not (isinstance(value, type) and issubclass(value, BaseException)):
            raise Unsupported("raise of a non-exception")
        for a in args:
            if not isinstance(a, ast.Constant):
                raise Unsupported("raise with a run-time argument")
        self.t.glob[id(cls)] = value

    # --- expressions ---------------------------------------------------------------------------
    def expr(self, e):
        ty = self._expr(e)
        if ty is None:
            raise Unsupported(f"no type for {ast.unparse(e)}")
        self.t.ty[id(e)] = ty
        return ty

    def _expr(self, e):
        k = _const_number(e)
        if k is not None:  # (`-1` too: CPython's bytecode, which Numba reads, folds it)
            self.t.const[id(e)] = k
            # a literal type, as Numba's typing of a constant (`_jt_ints(a, 3)` needs one)
            return types.maybe_literal(k) or self.ctx.resolve_value_type(k)
        if isinstance(e, ast.Constant):
            return types.maybe_literal(e.value) or self.ctx.resolve_value_type(e.value)
        if isinstance(e, ast.Name):
            ty = self.var_type(e.id)
            if ty is not None:
                return ty
            if e.id in self.t.vars or e.id in self.t.assigned:
                raise Unsupported(f"{e.id} used before assignment")
            return self.global_type(e)
        if isinstance(e, ast.Attribute):
            if self.global_of(e) is not _MISSING:
                return self.global_type(e)
            base = self.expr(e.value)
            ty = self.ctx.resolve_getattr(base, e.attr)
            if ty is None or isinstance(ty, types.BoundFunction):
                raise Unsupported(f"{base}.{e.attr}" + (" as a value" if ty else ""))
            if _target().get_getattr(base, e.attr) is None:
                raise Unsupported(f"{base}.{e.attr} has no lowering")
            return ty
        if isinstance(e, ast.BinOp):
            return self.op(e, BINOPS.get(e.op.__class__), [e.left, e.right])
        if isinstance(e, ast.UnaryOp):
            return self.op(e, UNARY.get(e.op.__class__), [e.operand])
        if isinstance(e, ast.Compare):
            if len(e.ops) != 1:
                raise Unsupported("chained comparison")
            return self.op(e, COMPARE.get(e.ops[0].__class__), [e.left, e.comparators[0]])
        if isinstance(e, ast.BoolOp):
            tys = [types.unliteral(self.expr(v)) for v in e.values]
            return self.unify(tys, "and/or")
        if isinstance(e, ast.IfExp):
            self.expr(e.test)
            return self.unify([types.unliteral(self.expr(e.body)),
                               types.unliteral(self.expr(e.orelse))], "if-else")
        if isinstance(e, ast.Tuple):
            return types.BaseTuple.from_types([types.unliteral(self.expr(x)) for x in e.elts])
        if isinstance(e, ast.Subscript):
            base = self.expr(e.value)
            k = _const_number(e.slice)
            part = _const_slice(e.slice)
            if isinstance(base, types.BaseTuple) and part is not None:  # a static slice
                self.t.const[id(e.slice)] = part
                return types.BaseTuple.from_types(base.types[part])
            if isinstance(base, types.BaseTuple) and type(k) is int:
                if not -len(base) <= k < len(base):
                    raise Unsupported("tuple index out of range")
                self.expr(e.slice)
                return base.types[k]
            fnty = self.ctx.resolve_value_type(operator.getitem)
            sig = self.call_type(fnty, [base, self.index(e.slice)], {})
            self.t.sig[id(e)] = (fnty, sig)
            return sig.return_type
        if isinstance(e, ast.Call):
            return self.call(e)
        raise Unsupported(type(e).__name__)

    def index(self, s):
        if isinstance(s, ast.Tuple):
            ty = types.BaseTuple.from_types([types.unliteral(self.index(x)) for x in s.elts])
            self.t.ty[id(s)] = ty
            return ty
        if isinstance(s, ast.Slice):
            parts = [s.lower, s.upper] + ([s.step] if s.step is not None else [])
            argtys = [types.none if p is None else self.expr(p) for p in parts]
            fnty = self.ctx.resolve_value_type(slice)
            sig = self.call_type(fnty, argtys, {})
            self.t.sig[id(s)] = (fnty, sig)
            self.t.ty[id(s)] = sig.return_type
            return sig.return_type
        return self.expr(s)

    def op(self, e, fn, operands):
        if fn is None:
            raise Unsupported(f"operator {type(e).__name__}")
        fnty = self.ctx.resolve_value_type(fn)
        sig = self.call_type(fnty, [self.expr(x) for x in operands], {})
        self.t.sig[id(e)] = (fnty, sig)
        return sig.return_type

    def call(self, e):
        f = e.func
        argtys = [self.expr(a) for a in e.args]
        kws = {k.arg: self.expr(k.value) for k in e.keywords}
        if any(k is None for k in kws) or any(isinstance(a, ast.Starred) for a in e.args):
            raise Unsupported("*args or **kwargs")
        if isinstance(f, ast.Attribute) and self.global_of(f) is _MISSING:
            recv = self.expr(f.value)  # a method: the bound function of the receiver
            fnty = self.ctx.resolve_getattr(recv, f.attr)
            if not isinstance(fnty, types.BoundFunction):
                raise Unsupported(f"call of {recv}.{f.attr}")
        else:
            fnty = self.expr(f)
        sig = None
        if isinstance(fnty, types.Dispatcher):
            # an njit function (a jitorch library helper): typed for its arguments' plain
            # types, so `pool_out_size(h, 2, 2, 0, 1, False)` shares one compile with every
            # other kernel size instead of a literal-specialised copy per call site; where
            # only the literals type (a helper that needs a constant), as Numba would
            try:
                sig = self.call_type(fnty, [types.unliteral(a) for a in argtys],
                                     {k: types.unliteral(v) for k, v in kws.items()})
            except Unsupported:
                sig = None
        if sig is None:
            sig = self.call_type(fnty, argtys, kws)
        if kws and sig.pysig is None:
            raise Unsupported(f"keywords in a call of {fnty}")
        self.t.sig[id(e)] = (fnty, sig)
        return sig.return_type

    def call_type(self, fnty, argtys, kws):
        key = (fnty, tuple(argtys), tuple(sorted(kws.items()))) if _pure(fnty) else None
        sig = _SIGNATURES.get(key) if key is not None else None
        if sig is not None:
            return sig
        try:
            sig = self.ctx.resolve_function_type(fnty, tuple(argtys), kws)
        except Exception as exc:  # a TypingError of Numba's: not ours to compile
            raise Unsupported(f"{fnty}{tuple(argtys)}: {type(exc).__name__}") from None
        if sig is None:
            raise Unsupported(f"{fnty}{tuple(argtys)} has no signature")
        try:  # (lower.py asks for it: a missing one is declined now, not a failed lowering)
            _target().get_function(fnty, sig)
        except NotImplementedError:
            raise Unsupported(f"{fnty}{sig.args} has no lowering") from None
        if key is not None:
            _SIGNATURES[key] = sig
        return sig

    def unify(self, tys, what):
        out = tys[0]
        for t in tys[1:]:
            out = out if out == t else self.ctx.unify_pairs(out, t)
            if out is None:
                raise Unsupported(f"{what} of {tys}")
        return out

    # --- globals -------------------------------------------------------------------------------
    def global_value(self, name):
        if name in self.g:
            return self.g[name]
        return getattr(builtins, name, _MISSING)

    def global_of(self, e):
        """The Python value of a global name or of an attribute chain on one (np.float32,
        np.fft.rfftn), or _MISSING."""
        if isinstance(e, ast.Name):
            if e.id in self.t.params or e.id in self.t.assigned:
                return _MISSING
            return self.global_value(e.id)
        if isinstance(e, ast.Attribute):
            base = self.global_of(e.value)
            if base is _MISSING or not _is_module(base):
                return _MISSING
            return getattr(base, e.attr, _MISSING)
        return _MISSING

    def global_type(self, e):
        value = self.global_of(e)
        if value is _MISSING:
            raise Unsupported(f"unknown name {ast.unparse(e)}")
        self.t.glob[id(e)] = value
        try:
            return self.ctx.resolve_value_type(value)
        except Exception:
            raise Unsupported(f"global {ast.unparse(e)} has no Numba type") from None


# Signatures of the functions whose typing is a pure function of the argument types (Python's
# operators and builtins, NumPy's and math's functions, the number classes): Numba caches a
# resolution per function being typed only, and a process types the same `float32 + float32`
# in every kernel. Never a dispatcher or an intrinsic: typing those compiles or binds code.
_SIGNATURES: dict = {}
_PURE_MODULES = frozenset({"_operator", "operator", "builtins", "math", "numpy"})


def _pure(fnty) -> bool:
    if isinstance(fnty, types.NumberClass):
        return True
    if type(fnty) is not types.Function:
        return False
    key = fnty.typing_key
    mod = getattr(key, "__module__", None) or ""
    return mod.split(".")[0] in _PURE_MODULES


def _target():
    from numba.core.registry import cpu_target
    return cpu_target.target_context


def _is_module(v) -> bool:
    return type(v).__name__ == "module"


def _const_slice(e):
    """A slice of constant (or absent) bounds, as a Python slice; else None."""
    if not isinstance(e, ast.Slice):
        return None
    parts = [None if p is None else _const_number(p) for p in (e.lower, e.upper, e.step)]
    if any(p is None and q is not None for p, q in zip(parts, (e.lower, e.upper, e.step))):
        return None
    if any(p is not None and type(p) is not int for p in parts):
        return None
    return slice(*parts)


def _const_number(e):
    """The value of a numeric constant, signed ones (`-1`) included; else None."""
    if isinstance(e, ast.Constant) and type(e.value) in (int, float, bool):
        return e.value
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
        k = _const_number(e.operand)
        if k is not None and type(k) is not bool:
            return -k if isinstance(e.op, ast.USub) else k
    return None


def infer(fn: ast.FunctionDef, globs: dict, argtys: tuple, typingctx) -> Typed:
    """Type kernel function `fn` (its AST) for argument types `argtys`; raises Unsupported."""
    if fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs or fn.args.defaults:
        raise Unsupported("parameters other than positional ones")
    if len(fn.args.args) != len(argtys):
        raise Unsupported("argument count")
    t = Typed(fn, tuple(argtys))
    inf = _Infer(t, globs, typingctx)
    # A round types every statement with the types known so far; another is needed only when
    # a type widened (`acc = 0` ... `acc = acc + x[i]`), as what was typed with the narrower
    # one is typed again (most generated functions: one round).
    for _ in range(8):  # a variable's type widens at most a few times (int32 -> int64 ...)
        inf.changed = False
        inf.block(fn.body)
        if not inf.changed:
            if t.ret is None:
                raise Unsupported("no return")
            from .nonneg import direct_subscripts
            t.direct = direct_subscripts(t)
            return t
    raise Unsupported("variable types do not settle")
