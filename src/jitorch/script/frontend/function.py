"""The scripting frontend: a Python function's AST -> `ir.Graph` (TorchScript's language).

Owns `compile_function(fn) -> FrontendResult` and `compile_class(cls)`. The compiler is split
by concern: statements `frontend/stmt.py`, loops `frontend/loops.py`, expressions
`frontend/expr.py`, calls `frontend/call.py`, subscripts `frontend/index.py`, script classes
`frontend/classes.py`, annotations/types `frontend/types.py`; errors in `ir/errors.py`, the language
helpers (`annotate`, `ignore`, ...) in `frontend/lang.py`.

Invariants of the graphs produced here:
- Tensor values are typed `TensorType(None, None)`; the specialiser fills dtype/rank per call.
- Registry-op nodes take all of the op's params (`OPS[name].params`), constants are
  `prim::Constant` nodes; every node has `loc` (the user's file, line, col and source line).
- Blocks are built open (reading outer values directly) and closed at the end by
  `close_blocks`: what a block reads from outside becomes an extra input of its node and a param
  of each of the node's blocks (ir/__init__.py's convention).
- Variables are SSA-renamed through an environment. `if` merges the variables both branches
  define; loops carry the variables they assign that exist before the loop, the `for` target
  included (after `for i in ...` an existing `i` holds the last element, or its old value
  after zero trips, as in Python); variables first assigned inside a loop are not visible
  after it, as in TorchScript.
- `return`, `break` and `continue` inside `if` are compiled by continuation: the statements that
  follow the `if` are compiled into each branch that does not leave, so every path ends in one
  exit (function: the return value; loop body: `(continue_condition, *carried)`).
- In-place writes (`x[idx] = v`, `x.add_(y)`, `x += y`) rebind every variable sharing the
  written storage (frontend/alias.py); writes to tensor arguments are extra graph outputs after
  the results (`graph.mutated_inputs` lists their inputs) that the runtime copies back into the
  caller's tensors, so callers see them as in PyTorch.
- Values that are Python-static at compile time (modules, functions, classes, `is_scripting()`,
  global constants, `Final`s) are folded; `if` on a static condition compiles one branch only.
"""
from __future__ import annotations

import ast
import builtins
import inspect
import sys
import textwrap
import threading
from dataclasses import dataclass, field

from . import types as ft
from .. import ir
from ..ir.errors import ScriptError
from .alias import AliasMixin
from .expr import ExprMixin, Sugar
from .stmt import StmtMixin


@dataclass
class FrontendResult:
    graph: ir.Graph
    static_args: tuple = ()   # names of arguments whose values are part of the specialisation key
    defaults: dict = field(default_factory=dict)   # argument name -> default Python value
    signature: inspect.Signature | None = None
    returns_tuple: bool = False  # the graph's outputs are the elements of one returned tuple
    holds_gil: bool = False      # the program calls Python (@ignore'd functions, fallbacks)
    python_ops: tuple = ()       # why it holds the GIL: the Python callables it calls


_cache: dict = {}
_lock = threading.RLock()
_in_progress: set = set()


def compile_function(fn, name: str | None = None, self_type: ir.Type | None = None,
                     scope_extra: dict | None = None) -> FrontendResult:
    """Compile a plain Python function (or method, with `self_type` for its first argument)."""
    fn = getattr(fn, "__func__", fn)
    key = (fn, self_type)
    with _lock:
        hit = _cache.get(key)
        if hit is not None:
            return hit
        if key in _in_progress:
            raise ScriptError(f"recursive call to '{fn.__qualname__}' is not supported in "
                              "scripted code")
        _in_progress.add(key)
        try:
            res = FunctionCompiler(fn, name, self_type, scope_extra).compile()
        finally:
            _in_progress.discard(key)
        _cache[key] = res
        return res


def compile_class(cls):
    """Compile a user class decorated with `@jitorch.jit.script`: attribute types from the
    assignments to `self.<name>` in `__init__` (annotated, or the type of the value), and every
    method to a graph whose first input is the instance (a `ClassType`). Returns a `ClassInfo`;
    instances are plain Python objects (the interpreter reads attributes with prim::GetAttr)."""
    from .classes import compile_class as impl
    return impl(cls)


# --- scopes ------------------------------------------------------------------------------------
class Scope:
    """Resolves a free name like Python: closure cells, the defining frame's locals (for
    functions defined inside functions: names only annotations use are not closure cells),
    globals, builtins."""

    def __init__(self, fn, extra: dict | None = None):
        self.globals = fn.__globals__
        self.locals: dict = {}
        code = fn.__code__
        outer = _defining_frame_locals(code)
        if outer:
            self.locals.update(outer)
        if fn.__closure__:
            for name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    self.locals[name] = cell.cell_contents
                except ValueError:  # an empty cell: defined later in the enclosing function
                    pass
        if extra:
            self.locals.update(extra)

    _missing = object()

    def lookup(self, name: str):
        for d in (self.locals, self.globals, builtins.__dict__):
            if name in d:
                return d[name]
        return Scope._missing

    def eval(self, node: ast.expr):
        expr = ast.Expression(body=node)
        ast.fix_missing_locations(expr)
        return eval(compile(expr, "<annotation>", "eval"), dict(self.globals), dict(self.locals))


def _defining_frame_locals(code) -> dict | None:
    """Locals of the innermost running frame whose code defines `code` (a nested function)."""
    f = sys._getframe(1)
    while f is not None:
        if code in f.f_code.co_consts:
            return dict(f.f_locals)
        f = f.f_back
    return None


# --- the compiler ------------------------------------------------------------------------------
class FunctionCompiler(AliasMixin, StmtMixin, ExprMixin):
    def __init__(self, fn, name=None, self_type=None, scope_extra=None):
        self.fn = fn
        self.self_type = self_type
        self.scope = Scope(fn, scope_extra)
        self.file = fn.__code__.co_filename
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as e:
            raise ScriptError(f"cannot script '{getattr(fn, '__qualname__', fn)}': its source "
                              f"is not available ({e})") from None
        src = "".join(lines)
        self.src_lines = src.splitlines()
        dedented = textwrap.dedent(src)
        first_text = next((ln for ln in self.src_lines if ln.strip()), "")
        ded_first = next((ln for ln in dedented.splitlines() if ln.strip()), "")
        self.col_offset = len(first_text) - len(ded_first)
        self.line_offset = first - 1
        tree = ast.parse(dedented)
        fdefs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not fdefs:
            if tree.body and isinstance(tree.body[0], ast.Expr) and \
                    isinstance(tree.body[0].value, ast.Lambda):
                self.fail("lambda functions are not supported in scripted code", tree.body[0])
            raise ScriptError(f"cannot script '{fn.__qualname__}': not a function definition")
        self.fdef = fdefs[0]
        if isinstance(self.fdef, ast.AsyncFunctionDef):
            self.fail("async functions are not supported in scripted code", self.fdef)
        self.graph = ir.Graph(name or fn.__name__)
        self.block = self.graph.block
        self.env: dict = {}
        self.cur = self.fdef
        self.python_ops: list = []
        self.static_args: set = set()
        self.partial_names: dict = {}  # name -> the if that defined it on one path only
        self.loop_depth = 0
        self.loop_ret = None      # (flag, value) names for `return` inside the next loop
        self.probing = False      # compiling only to learn return types (frontend_stmt)
        self.probe_types: list = []

    # -- locations and errors ----------------------------------------------------------------
    def loc(self, node=None) -> ir.SourceLoc:
        node = node if node is not None else self.cur
        line = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + self.col_offset
        text = self.src_lines[line - 1] if 0 < line <= len(self.src_lines) else ""
        return ir.SourceLoc(self.file, line + self.line_offset, col, text)

    def fail(self, msg: str, node=None):
        node = node if node is not None else self.cur
        end = None
        if getattr(node, "end_lineno", None) == getattr(node, "lineno", None) and \
                getattr(node, "end_col_offset", None) is not None:
            end = node.end_col_offset + self.col_offset
        raise ScriptError(msg, self.loc(node), end)

    # -- emission ----------------------------------------------------------------------------
    def emit(self, op: str, inputs, types, attrs=None, blocks=()) -> ir.Node:
        n = ir.Node(op, inputs, types, attrs=attrs, blocks=blocks, loc=self.loc())
        self.block.nodes.append(n)
        self.note_view(n)
        return n

    def const(self, value, ty=None) -> ir.Value:
        if ty is None:
            ty = ft.of_python(value)
            if ty is None:
                self.fail(f"cannot use a value of type '{type(value).__name__}' in scripted "
                          "code")
        return self.emit("prim::Constant", (), (ty,), {"value": value}).output

    def python_op(self, fn, inputs, types, name=None) -> ir.Node:
        self.python_ops.append(fn)
        return self.emit("prim::PythonOp", inputs, types,
                         {"fn": fn, "name": name or getattr(fn, "__qualname__", "fn"),
                          "gil": True})

    # -- the function ----------------------------------------------------------------------
    def compile(self) -> FrontendResult:
        a = self.fdef.args
        if a.vararg or a.kwarg:
            self.fail("*args and **kwargs are not supported in scripted functions",
                      a.vararg or a.kwarg)
        if a.posonlyargs:
            self.fail("positional-only arguments are not supported", a.posonlyargs[0])
        sig = inspect.signature(self.fn)
        defaults = {k: p.default for k, p in sig.parameters.items()
                    if p.default is not inspect.Parameter.empty}
        params = list(a.args) + list(a.kwonlyargs)
        for i, arg in enumerate(params):
            self.cur = arg
            if i == 0 and self.self_type is not None:
                ty = self.self_type
            elif arg.annotation is None:
                ty = ft.tensor()
            else:
                ty = self.annotation(arg.annotation)
            v = ir.Value(ty, arg.arg)
            self.block.params.append(v)
            self.env[arg.arg] = v
        self.init_aliases()
        self.ret_type = None
        if self.fdef.returns is not None:
            self.ret_type = self.annotation(self.fdef.returns)
        body = self.fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        rets = self.stmts(body, FunctionExit(self))
        n_extra = len(self.arg_tokens)
        extras = list(rets[len(rets) - n_extra:]) if n_extra else []
        rets = rets[:len(rets) - n_extra]
        out = rets[0]
        returns_tuple = False
        if isinstance(out.type, ir.TupleType):
            returns_tuple = True
            if out.node is not None and out.node.op == "prim::TupleConstruct" and \
                    out.node in self.block.nodes:
                rets = list(out.node.inputs)
            else:
                self.cur = self.fdef
                rets = self.emit("prim::TupleUnpack", [out], out.type.elems).outputs
        self.block.returns = self.finish_mutations(list(rets), extras)
        close_blocks(self.graph.block)
        holds = bool(self.python_ops)
        self.graph.holds_gil = holds
        for v in self.graph.inputs:  # strings and lists are keyed by value
            if isinstance(v.type, (ir.StrType, ir.ListType, ir.TupleType, ir.DictType)) and \
                    not any(isinstance(e, ir.TensorType) for e in _elem_types(v.type)):
                self.static_args.add(v.name)
        static = tuple(v.name for v in self.graph.inputs if v.name in self.static_args)
        return FrontendResult(self.graph, static, defaults, sig, returns_tuple, holds,
                              tuple(self.python_ops))

    def annotation(self, node) -> ir.Type:
        orig = node  # errors point at the annotation as written (a string is re-parsed)
        try:
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                node = ast.parse(node.value, mode="eval").body
                obj = self.scope.eval(node)
            else:
                obj = self.scope.eval(node)
            return ft.from_annotation(obj)
        except ft.AnnotationError as e:
            self.fail(str(e), orig)
        except Exception as e:  # a name the annotation uses does not resolve
            self.fail(f"cannot resolve the type annotation ({type(e).__name__}: {e})", orig)


class FunctionExit:
    """How a function body's paths end: with the returned value (None when falling off)."""

    returns_value = True  # the first exit value is the function's result

    def __init__(self, c: FunctionCompiler):
        self.c = c

    def ret(self, v: ir.Value) -> list:
        return [v] + self.c.exit_values()

    def fallthrough(self) -> list:
        return [self.c.const(None)] + self.c.exit_values()

    def brk(self, node):
        self.c.fail("'break' outside a loop", node)

    cont = brk


def _elem_types(t):
    if isinstance(t, ir.ListType):
        return [t.elem]
    if isinstance(t, ir.TupleType):
        return list(t.elems)
    if isinstance(t, ir.DictType):
        return [t.key, t.value]
    return []


# --- closing blocks ----------------------------------------------------------------------------
def close_blocks(block: ir.Block) -> None:
    """Make every sub-block closed (ir/__init__.py): values a block reads from outside become extra
    inputs of its node and params of all of the node's blocks, innermost first."""
    for n in block.nodes:
        if not n.blocks:
            continue
        for b in n.blocks:
            close_blocks(b)
        free: list = []
        seen: set = set()
        for b in n.blocks:
            for v in _free_values(b):
                if v.uid not in seen:
                    seen.add(v.uid)
                    free.append(v)
        if not free:
            continue
        n.inputs.extend(free)
        for b in n.blocks:
            sub = {}
            for v in free:
                p = ir.Value(v.type, v.name)
                b.params.append(p)
                sub[v.uid] = p
            for m in b.nodes:
                m.inputs = [sub.get(x.uid, x) for x in m.inputs]
            b.returns = [sub.get(x.uid, x) for x in b.returns]


def _free_values(b: ir.Block) -> list:
    defined = {p.uid for p in b.params}
    out, seen = [], set()
    for m in b.nodes:
        for x in m.inputs:
            if x.uid not in defined and x.uid not in seen:
                seen.add(x.uid)
                out.append(x)
        defined.update(o.uid for o in m.outputs)
    for x in b.returns:
        if x.uid not in defined and x.uid not in seen:
            seen.add(x.uid)
            out.append(x)
    return out


__all__ = ["compile_function", "compile_class", "FrontendResult", "ScriptError", "Sugar"]
