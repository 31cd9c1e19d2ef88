"""The scripting frontend's shared state: what the builders of one function compile into.

`FrontendState` is the ONE object the builders share; every field they read or write is
listed here. The builders (`st.exprs` expressions, `st.calls` calls, `st.methods` method
calls, `st.index` subscripts, `st.stmts` statements, `st.loops` loops, `st.writes` in-place
writes) are plain classes, each holding the state and the code of its constructs; they call
each other through it (`st.exprs.expr(node)`, `st.stmts.assign(t, v)`), and emit through its
primitives (`st.emit`, `st.const`, `st.fail`, ...). `frontend/function.py`'s FunctionCompiler
builds the state, the builders and the graph.

`FrontendHooks` is the small interface through which a frontend variant changes the language:
the module frontend (`frontend/module.py`, `self` resolved at compile time) supplies one; a
plain function gets the defaults, which change nothing. A hook that does not apply returns
`UNHANDLED` and the builder's ordinary rule runs.
"""
from __future__ import annotations

import ast
import contextlib
from dataclasses import dataclass, field
from typing import Any

from . import types as ft
from .. import ir
from ..ir.errors import ScriptError


class _Unhandled:
    __slots__ = ()

    def __repr__(self):
        return "UNHANDLED"


UNHANDLED = _Unhandled()  # a hook's answer: "not mine, apply the ordinary rule"


class FrontendHooks:
    """How a frontend variant changes what the builders do. Every method is called at one
    place, named in its docstring; these defaults are the plain-function language."""

    st: FrontendState | None = None

    def bind(self, st: FrontendState) -> None:
        """Called once, when the state exists (its `fdef` parsed, no graph input yet)."""
        self.st = st

    def on_entry(self) -> None:
        """After the function's arguments and their storages are set up (compile)."""

    def resolve_name(self, name: str):
        """A name, before the environment and the Python scope (ExprBuilder.resolve_name)."""
        return UNHANDLED

    def static_attribute(self, obj, name: str, node):
        """`obj.name` on a compile-time object, before getattr (ExprBuilder.e_Attribute)."""
        return UNHANDLED

    def subscript(self, node: ast.Subscript):
        """`a[k]`, before `a` is compiled (ExprBuilder.e_Subscript)."""
        return UNHANDLED

    def rewrite_call(self, node: ast.Call) -> ast.Call:
        """The call as the builders compile it (CallBuilder.call)."""
        return node

    def call_python(self, obj, node: ast.Call):
        """A call of a compile-time object, before the ordinary rules
        (CallBuilder.call_python)."""
        return UNHANDLED

    def formatted_value(self, part: ast.FormattedValue):
        """A `{...}` of an error message's f-string (StmtBuilder.message_parts)."""
        return UNHANDLED

    def for_stmt(self, s: ast.For) -> bool:
        """True when the hook compiled the `for` itself (LoopBuilder.for_stmt)."""
        return False

    def branch(self):
        """A context around the compilation of each branch block (StmtBuilder.in_block)."""
        return contextlib.nullcontext()

    def assign(self, t, v):
        """Before `t = v` (StmtBuilder.assign): the value the ordinary assignment binds (v
        itself, or v made a graph value), or None when the hook bound the target."""
        return v


@dataclass(eq=False, slots=True)  # slots: a field not declared here cannot be set
class FrontendState:
    """Everything the builders of one function share (see the module docstring)."""

    # -- the function being compiled (set once) --
    fn: Any                              # the Python function
    self_type: ir.Type | None            # the type of its first argument (a method), or None
    scope: Any                           # function.Scope: free names -> Python objects
    hooks: FrontendHooks                 # the frontend variant's hooks (see FrontendHooks)
    file: str                            # source file, for locations
    src_lines: list                      # the function's source lines (as in the file)
    line_offset: int                     # line of the function's first line in the file - 1
    col_offset: int                      # indentation removed before parsing
    fdef: ast.FunctionDef | None = None  # the parsed definition
    fdef_nodes: tuple | None = None      # (fdef, its nodes in ast.walk order): see nodes()
    # -- what is being built --
    graph: ir.Graph | None = None        # the function's graph
    block: ir.Block | None = None        # the block nodes are emitted into now
    env: dict = field(default_factory=dict)  # variable (and `$` token) -> ir.Value, SSA-renamed
    cur: ast.AST | None = None           # the AST node compiled now (locations, errors)
    ret_type: ir.Type | None = None      # the annotated return type, or None
    python_ops: list = field(default_factory=list)   # Python callables the graph calls (GIL)
    static_args: set = field(default_factory=set)    # argument names in the specialisation key
    partial_names: dict = field(default_factory=dict)  # name -> the `if` defining it on one path
    evaluated: Any = None                # call arguments already compiled ((args, kwargs)), for
    #                                      the PythonOp fallback not to compile them twice
    # -- control flow --
    loop_depth: int = 0                  # loops around the current statement
    loop_ret: tuple | None = None        # (flag, value) names for a `return` in the next loop
    probing: bool = False                # compiling a loop only to learn its return types
    probe_types: list = field(default_factory=list)  # the types probing found
    # -- storages (frontend/alias.py) --
    alias: dict = field(default_factory=dict)       # value uid -> (token, view chain) | UNKNOWN
    arg_tokens: list = field(default_factory=list)  # (token, graph input index) of the storages
    #                                                 written back to the caller
    # -- the builders (function.py creates them) --
    exprs: Any = None                    # expr.ExprBuilder
    calls: Any = None                    # call.CallBuilder
    methods: Any = None                  # methods.MethodBuilder
    index: Any = None                    # index.IndexBuilder
    stmts: Any = None                    # stmt.StmtBuilder
    loops: Any = None                    # loops.LoopBuilder
    writes: Any = None                   # alias.WriteBuilder

    def nodes(self) -> list:
        """Every node of `fdef`, in `ast.walk` order, walked once per definition (the module
        frontend scans each method's body twice; a warm start scripts every method again)."""
        if self.fdef_nodes is None or self.fdef_nodes[0] is not self.fdef:
            self.fdef_nodes = (self.fdef, list(ast.walk(self.fdef)))
        return self.fdef_nodes[1]

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
        self.writes.note_view(n)
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
            obj = self._evaluated_annotation(orig)
            if obj is None:
                self.fail(f"cannot resolve the type annotation ({type(e).__name__}: {e})", orig)
            try:
                return ft.from_annotation(obj)
            except ft.AnnotationError as e2:
                self.fail(str(e2), orig)

    def _evaluated_annotation(self, node):
        """A parameter's or the return's annotation as Python evaluated it when the function
        was defined (`fn.__annotations__`): it names variables of an enclosing function that
        have gone (a class or type alias defined there), which no closure cell keeps."""
        fdef, ann = self.fdef, getattr(self.fn, "__annotations__", None) or {}
        if fdef is None:
            return None
        a = fdef.args
        for arg in a.posonlyargs + a.args + a.kwonlyargs:
            if arg.annotation is node:
                obj = ann.get(arg.arg)
                return None if isinstance(obj, str) else obj
        if fdef.returns is node and not isinstance(ann.get("return"), str):
            return ann.get("return")
        return None
