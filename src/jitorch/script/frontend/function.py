"""The scripting frontend: a Python function's AST -> `ir.Graph` (TorchScript's language).

Owns `compile_function(fn) -> FrontendResult`, `compile_class(cls)` and `FunctionCompiler`,
which parses the function, creates its one `FrontendState` (frontend/state.py: every field the
builders share, and the emission primitives) and the builders that compile into it, each a
plain class holding the state: expressions `frontend/expr.py` (`st.exprs`), calls
`frontend/call.py` (`st.calls`), method calls `frontend/methods.py` (`st.methods`), subscripts
`frontend/index.py` (`st.index`), statements `frontend/stmt.py` (`st.stmts`), loops
`frontend/loops.py` (`st.loops`), in-place writes `frontend/alias.py` (`st.writes`). They call
each other through the state. A frontend variant changes the language only through
`FrontendHooks` (state.py); the module frontend (`frontend/module.py`) is one. Also here: script
classes `frontend/classes.py`, annotations/types `frontend/types.py`; errors in `ir/errors.py`,
the language helpers (`annotate`, `ignore`, ...) in `frontend/lang.py`.

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
import re
import sys
import textwrap
from dataclasses import dataclass, field

from ... import _fork
from . import types as ft
from .. import ir
from ..ir.errors import ScriptError
from .alias import WriteBuilder
from .call import CallBuilder
from .expr import ExprBuilder, Sugar
from .index import IndexBuilder
from .loops import LoopBuilder
from .grad_blocks import strip_grad_blocks
from .autocast_region import rewrite_regions
from .markers import strip_markers
from .methods import MethodBuilder
from .state import FrontendHooks, FrontendState
from .stmt import StmtBuilder


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
_lock = _fork.rlock()
_in_progress: set = set()  # functions being compiled by the thread holding _lock


@_fork.in_child
def _forget_in_progress() -> None:
    # a forked child lacks the parent thread that was compiling these: scripting one of them
    # there is a first compile, not a recursive call
    _in_progress.clear()


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


_WITH = re.compile(r"\bwith\b")  # (no `with` statement without the word in the source)


# --- the source --------------------------------------------------------------------------------
def _last_line(code) -> int:
    """The last source line that any instruction of `code` (or of the code it nests) spans."""
    end = max((e for _, e, _, _ in code.co_positions() if e is not None), default=0)
    for c in code.co_consts:
        if isinstance(c, type(code)):
            end = max(end, _last_line(c))
    return end


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def source_lines(fn):
    """`inspect.getsourcelines(fn)` and the AST of the dedented lines (None: not parsed yet),
    the function's end taken from where its bytecode ends. inspect finds the end by tokenizing
    the rest of the file (~0.5 ms a function; a warm start scripts a Transformer's ~25
    functions again). Where the two could differ (a function that ends in code its bytecode
    dropped, e.g. after a `return`, or whose last line is a header `else:` over a `pass`),
    inspect's way decides: the next line holding code must be indented no deeper than the
    `def`, and the lines must parse."""
    fn = inspect.unwrap(fn)  # (as inspect: the source of what functools.wraps wraps)
    lines, start = inspect.findsource(fn)
    code = getattr(fn, "__code__", None)
    # (co_positions is Python 3.11's: on 3.10 inspect's way always decides)
    end = _last_line(code) if hasattr(code, "co_positions") else 0
    if start < end <= len(lines):
        after = next((ln for ln in lines[end:] if ln.strip() and
                      not ln.lstrip().startswith("#")), None)
        if after is None or _indent(after) <= _indent(lines[start]):
            block = lines[start:end]
            try:
                return block, start + 1, ast.parse(textwrap.dedent("".join(block)))
            except SyntaxError:
                pass
    return (*inspect.getsourcelines(fn), None)


# --- the compiler ------------------------------------------------------------------------------
class FunctionCompiler:
    """Compiles one function: parses it, builds its `FrontendState` and the builders sharing
    it, and turns the body into the graph. `hooks` is the frontend variant's (module.py)."""

    def __init__(self, fn, name=None, self_type=None, scope_extra=None, hooks=None):
        scope = Scope(fn, scope_extra)
        try:
            lines, first, tree = source_lines(fn)
        except (OSError, TypeError) as e:
            raise ScriptError(f"cannot script '{getattr(fn, '__qualname__', fn)}': its source "
                              f"is not available ({e})") from None
        src = "".join(lines)
        src_lines = src.splitlines()
        dedented = textwrap.dedent(src)
        first_text = next((ln for ln in src_lines if ln.strip()), "")
        ded_first = next((ln for ln in dedented.splitlines() if ln.strip()), "")
        st = self.st = FrontendState(
            fn=fn, self_type=self_type, scope=scope,
            hooks=hooks if hooks is not None else FrontendHooks(),
            file=fn.__code__.co_filename, src_lines=src_lines, line_offset=first - 1,
            col_offset=len(first_text) - len(ded_first))
        st.exprs, st.calls, st.methods = ExprBuilder(st), CallBuilder(st), MethodBuilder(st)
        st.index, st.stmts, st.loops = IndexBuilder(st), StmtBuilder(st), LoopBuilder(st)
        st.writes = WriteBuilder(st)
        if tree is None:
            tree = ast.parse(dedented)
        fdefs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not fdefs:
            if tree.body and isinstance(tree.body[0], ast.Expr) and \
                    isinstance(tree.body[0].value, ast.Lambda):
                st.fail("lambda functions are not supported in scripted code", tree.body[0])
            raise ScriptError(f"cannot script '{fn.__qualname__}': not a function definition")
        st.fdef = fdefs[0]
        if isinstance(st.fdef, ast.AsyncFunctionDef):
            st.fail("async functions are not supported in scripted code", st.fdef)
        markers = ()
        # the three rewrites change `with` statements only: a function without one (most of
        # them) skips their three walks of its AST (a warm start scripts every function again)
        if _WITH.search(dedented) and \
                any(isinstance(n, (ast.With, ast.AsyncWith)) for n in ast.walk(st.fdef)):
            st.fdef, markers = strip_markers(st.fdef, st.scope, st.fail)
            st.fdef = strip_grad_blocks(st.fdef, st.scope, st.fail)  # with no_grad(): ...
            st.fdef = rewrite_regions(st.fdef, st.scope, st.fail)  # `with autocast(...)`
        st.graph = ir.Graph(name or fn.__name__)
        st.graph.profile_markers = markers  # record_function names (profiler ranges)
        st.block = st.graph.block
        st.cur = st.fdef
        st.hooks.bind(st)

    # -- the function ----------------------------------------------------------------------
    def compile(self) -> FrontendResult:
        st = self.st
        a = st.fdef.args
        if a.vararg or a.kwarg:
            st.fail("*args and **kwargs are not supported in scripted functions",
                    a.vararg or a.kwarg)
        if a.posonlyargs:
            st.fail("positional-only arguments are not supported", a.posonlyargs[0])
        sig = inspect.signature(st.fn)
        defaults = {k: p.default for k, p in sig.parameters.items()
                    if p.default is not inspect.Parameter.empty}
        params = list(a.args) + list(a.kwonlyargs)
        for i, arg in enumerate(params):
            st.cur = arg
            if i == 0 and st.self_type is not None:
                ty = st.self_type
            elif arg.annotation is None:
                ty = ft.tensor()
            else:
                ty = st.annotation(arg.annotation)
            v = ir.Value(ty, arg.arg)
            st.block.params.append(v)
            st.env[arg.arg] = v
        st.writes.init_aliases()
        st.hooks.on_entry()
        st.ret_type = None
        if st.fdef.returns is not None:
            st.ret_type = st.annotation(st.fdef.returns)
        body = st.fdef.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        rets = st.stmts.stmts(body, FunctionExit(st))
        n_extra = len(st.arg_tokens)
        extras = list(rets[len(rets) - n_extra:]) if n_extra else []
        rets = rets[:len(rets) - n_extra]
        out = rets[0]
        returns_tuple = False
        if isinstance(out.type, ir.TupleType):
            returns_tuple = True
            if out.node is not None and out.node.op == "prim::TupleConstruct" and \
                    out.node in st.block.nodes:
                rets = list(out.node.inputs)
            else:
                st.cur = st.fdef
                rets = st.emit("prim::TupleUnpack", [out], out.type.elems).outputs
        st.block.returns = st.writes.finish_mutations(list(rets), extras)
        close_blocks(st.graph.block)
        holds = bool(st.python_ops)
        st.graph.holds_gil = holds
        for v in st.graph.inputs:  # strings and lists are keyed by value
            if isinstance(v.type, (ir.StrType, ir.ListType, ir.TupleType, ir.DictType)) and \
                    not any(isinstance(e, ir.TensorType) for e in _elem_types(v.type)):
                st.static_args.add(v.name)
        static = tuple(v.name for v in st.graph.inputs if v.name in st.static_args)
        return FrontendResult(st.graph, static, defaults, sig, returns_tuple, holds,
                              tuple(st.python_ops))


class FunctionExit:
    """How a function body's paths end: with the returned value (None when falling off)."""

    returns_value = True  # the first exit value is the function's result

    def __init__(self, st):
        self.st = st

    def ret(self, v: ir.Value) -> list:
        return [v] + self.st.writes.exit_values()

    def fallthrough(self) -> list:
        return [self.st.const(None)] + self.st.writes.exit_values()

    def brk(self, node):
        self.st.fail("'break' outside a loop", node)

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
