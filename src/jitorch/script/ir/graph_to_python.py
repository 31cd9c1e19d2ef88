"""A graph written out as one Python function: the interpreter tier without its per-node walk.

`ir/interpreter.py` walks a graph node by node: a dict of values, a list of arguments, a
`try` and a few branches per node, about a microsecond each (issue 17 item 5: the interpreted
tier must never be slower than the same code run eagerly). The graphs a scripted call runs
interpreted (while its program compiles, or for good when a node is not lowered) are final, so
this module turns such a graph, once, into Python source whose lines call each node's op
directly: values live in local variables, loops are Python loops, a registry op is a call of
eager dispatch with its arguments already in place, and there is no per-node error handling at
all. An error is located afterwards, from the line that raised it (`_walk`).

Semantics are the interpreter's, which stays the reference and the tier for one-off runs:
- every registry op goes through `registry.dispatch` with its declaration's check, as
  `interpreter._caller` calls it, and its result is taken as `interpreter._registry_result`
  takes it;
- the prims this module does not write inline (unpacking, asserts, raises, prints, attribute
  reads, Python ops, ...) call `interpreter._execute` on their node, so they have one
  definition;
- an exception is located as `interpreter.run_block` locates it, level by level from the
  failing node out through the nodes whose blocks enclose it.

The source is made only of names this module chooses (`v3`, `K0`, `N2`, ...) and Python
syntax: every value a graph carries (constants, ops, nodes, attributes, callee graphs) is bound
in the function's namespace and never written into its text, so a loaded archive's graph
cannot put code in it (docs/security.md).
"""
from __future__ import annotations

import inspect

from ... import _autocast
from ..._ops import registry
from ..._profiling import autocast_hook as _autocast_hook
from ..._tensor import Tensor
from .. import ir
from ..kernels.signals import ScriptRuntimeError, in_library, located, where
from . import interpreter


class Unsupported(Exception):
    """A graph this module does not write out (the interpreter runs it)."""


class GraphFunction:
    """`graph` as a Python function: `run(args)` returns the list of its outputs, exactly as
    `interpreter.run_graph(graph, args)` does (values, autograd records, errors)."""

    __slots__ = ("graph", "fn", "_lines", "_code")

    def __init__(self, graph: ir.Graph):
        self.graph = graph
        w = _Writer()
        self.fn, self._lines = w.function(graph)
        self._code = self.fn.__code__

    def run(self, args) -> list:
        args = list(args)
        if len(args) != len(self.graph.inputs):
            raise TypeError(f"graph @{self.graph.name} takes {len(self.graph.inputs)} inputs, "
                            f"got {len(args)}")
        depth = _autocast.script_depth()
        try:
            return self.fn(*args)
        except BaseException as e:
            _autocast.unwind_script_regions(depth)  # a `with autocast` region left by the error
            if not isinstance(e, Exception):  # KeyboardInterrupt, SystemExit: as they are
                raise
            located_e, cause = _walk(e, self._failing_chain(e.__traceback__))
            if located_e is e:
                raise
            raise located_e from cause

    def _failing_chain(self, tb):
        """The nodes (outermost first) whose line of the generated function raised."""
        line = None
        while tb is not None:
            if tb.tb_frame.f_code is self._code:
                line = tb.tb_lineno
            tb = tb.tb_next
        return self._lines.get(line, ())


_KEEP = object()  # `_located_at`'s marker: the exception propagates as it is


def _located_at(e, n: ir.Node):
    """What `interpreter.run_block` makes of exception `e` raised by its node `n`: `_KEEP`, or
    the located exception (its cause: `_walk`)."""
    if isinstance(e, ScriptRuntimeError):
        if n.loc is not None and n.op == "prim::CallFunction" and \
                in_library(getattr(e, "script_loc", None)):  # name the user's call
            return located(e, n.loc)
        return _KEEP
    if n.loc is None or isinstance(e, StopIteration):
        return _KEEP
    return located(e, n.loc)


def _walk(e, chain):
    """`e` passed out through `chain`'s nodes, innermost first, as the interpreter's nested
    `run_block`s pass it: (the exception raised at the top, its `__cause__`)."""
    cause = e.__cause__
    for n in reversed(chain):
        r = _located_at(e, n)
        if r is not _KEEP:
            # run_block: `raise located(e) from e.__cause__` for a library call, else `from e`
            cause = e.__cause__ if isinstance(e, ScriptRuntimeError) else e
            e = r
    return e, cause


class _Writer:
    """Writes one graph's function: its lines, its namespace and, per line, the nodes whose
    error handling applies there (`lines`)."""

    def __init__(self):
        self.src: list[str] = []
        self.lines: dict[int, tuple] = {}  # line number of the source -> node chain
        self.ns: dict = {"_T": Tensor, "_dispatch": registry.dispatch,
                         "_result": interpreter._registry_result, "_exec": interpreter._execute,
                         "_outs": _outputs, "_call": _call_function, "_slow":
                         interpreter._call_by_name}
        self.names: dict[int, str] = {}  # Value.uid -> variable or namespace name
        self.n_bound = 0

    # ---- names ----
    def bind(self, obj, prefix: str) -> str:
        name = f"{prefix}{self.n_bound}"
        self.n_bound += 1
        self.ns[name] = obj
        return name

    def var(self, v: ir.Value) -> str:
        name = self.names.get(v.uid)
        if name is None:
            name = self.names[v.uid] = f"v{len(self.names)}"
        return name

    def use(self, v: ir.Value) -> str:
        name = self.names.get(v.uid)
        if name is None:  # a value used before it is defined: a malformed graph
            raise Unsupported(f"value %{v.uid} used before its definition")
        return name

    def emit(self, indent: int, text: str, chain: tuple):
        self.src.append("    " * indent + text)
        self.lines[len(self.src) + 1] = chain  # +1: the `def` line comes first

    # ---- the function ----
    def function(self, graph: ir.Graph):
        params = [self.var(p) for p in graph.block.params]
        self.block(graph.block.nodes, 1, ())
        rets = ", ".join(self.use(v) for v in graph.block.returns)
        self.emit(1, f"return [{rets}]", ())
        text = f"def graph_function({', '.join(params)}):\n" + "\n".join(self.src) + "\n"
        code = compile(text, f"<scripted @{_safe_name(graph.name)}>", "exec")
        exec(code, self.ns)
        return self.ns["graph_function"], self.lines

    def block(self, nodes, indent: int, chain: tuple):
        start = len(self.src)
        for n in nodes:
            self.node(n, indent, chain + (n,))
        if len(self.src) == start:
            self.emit(indent, "pass", chain)

    def outputs(self, n: ir.Node, indent: int, chain: tuple, expr: str):
        """Assign `expr`, the node's result as the interpreter's `_execute` returns it."""
        k = len(n.outputs)
        if k == 0:
            self.emit(indent, expr, chain)
        elif k == 1:
            self.emit(indent, f"{self.var(n.outputs[0])} = {expr}", chain)
        else:
            names = ", ".join(self.var(o) for o in n.outputs)
            self.emit(indent, f"{names}, = _outs({self.bind(n, 'N')}, {expr})", chain)

    def node(self, n: ir.Node, indent: int, chain: tuple):
        op = n.op
        args = [self.use(v) for v in n.inputs]
        if op == "prim::Constant":
            self.names[n.outputs[0].uid] = self.bind(n.attrs["value"], "K")
            return
        if not op.startswith("prim::"):
            return self.registry_op(n, args, indent, chain)
        if op == "prim::ListConstruct":
            return self.outputs(n, indent, chain, f"[{', '.join(args)}]")
        if op == "prim::TupleConstruct":
            return self.outputs(n, indent, chain, f"({''.join(a + ', ' for a in args)})")
        if op == "prim::ScalarOp":
            try:
                fn = interpreter.scalar_fn(n.attrs["fn"])
            except NotImplementedError:  # raised when the node runs, as the interpreter does
                fn = None
            if fn is not None:
                return self.outputs(n, indent, chain, f"{self.bind(fn, 'S')}({', '.join(args)})")
        if op == "prim::If":
            return self.if_(n, args, indent, chain)
        if op == "prim::Loop":
            return self.loop(n, args, indent, chain)
        if op == "prim::Fused":
            return self.inline(n, n.blocks[0], args, indent, chain)
        if op == "prim::CallFunction":
            callee = _Callee(n.attrs["fn"])
            return self.outputs(n, indent, chain, f"_call({self.bind(n, 'N')}, "
                                f"{self.bind(callee, 'G')}, [{', '.join(args)}])")
        # every other prim: its one definition, the interpreter's (no env: not a block op)
        self.outputs(n, indent, chain, f"_exec({self.bind(n, 'N')}, [{', '.join(args)}], None)")

    def registry_op(self, n: ir.Node, args: list, indent: int, chain: tuple):
        op = registry.OPS.get(n.op)
        if op is None:  # raises when it runs, as in the interpreter
            return self.outputs(n, indent, chain, f"_exec({self.bind(n, 'N')}, "
                                f"[{', '.join(args)}], None)")
        if op.kind == "factory":
            return self.outputs(n, indent, chain, f"{self.bind(op.impl, 'F')}({', '.join(args)})")
        o = self.bind(op, "OP")
        public = _public_call(op)
        if len(args) != len(op.params):  # the error names the missing parameter
            call = f"_slow({o}, [{', '.join(args)}])"
        elif public is not None:
            # the op's own function, as eager code calls it: its fast path for the common call
            # (registry._fast_block), else dispatch; a guarded op's check comes first, as there
            fn, keyword_only = public
            check = op.extra.get("check")
            pos = [a for p, a in zip(op.params, args) if p not in keyword_only]
            kw = [f"{p}={a}" for p, a in zip(op.params, args) if p in keyword_only]
            if check is not None:
                slots = "".join(dict(zip(op.params, args))[t] + ", " for t in op.tensors)
                attrs = ", ".join(f"{a!r}: {dict(zip(op.params, args))[a]}" for a in op.attrs)
                self.emit(indent, f"{self.bind(check, 'CHK')}({slots}**{{{attrs}}})", chain)
            call = f"{self.bind(fn, 'FN')}({', '.join(pos + kw)})"
        else:
            pos = {p: a for p, a in zip(op.params, args)}
            slots = "".join(pos[t] + ", " for t in op.tensors)
            for a in op.attrs:  # registry identifiers, written as keys below
                if not (isinstance(a, str) and a.isidentifier()):
                    raise Unsupported(f"attribute name {a!r} of {n.op}")
            attrs = ", ".join(f"{a!r}: {pos[a]}" for a in op.attrs)
            check = op.extra.get("check")  # a value check of the public function
            if check is not None:
                c = self.bind(check, "CHK")
                self.emit(indent, f"{c}({slots}**{{{attrs}}})", chain)
            call = f"_dispatch({o}, ({slots}), {{{attrs}}})"
        if len(n.outputs) == 1:
            r = self.var(n.outputs[0])
            self.emit(indent, f"{r} = {call}", chain)
            # the interpreter's fast case is a Tensor; anything else is taken as it takes it
            self.emit(indent, f"if {r}.__class__ is not _T: {r} = _result({self.bind(n, 'N')}, "
                      f"{r})", chain)
        else:
            self.outputs(n, indent, chain, f"_result({self.bind(n, 'N')}, {call})")

    def inline(self, n: ir.Node, block: ir.Block, args: list, indent: int, chain: tuple):
        """A block run where its node stands (prim::Fused): params are the node's inputs."""
        self.alias(block.params, args)
        self.block(block.nodes, indent, chain)
        self.assign(n.outputs, [self.use(v) for v in block.returns], indent, chain)

    def alias(self, params, args):
        if len(params) != len(args):
            raise Unsupported("a block's params and its node's inputs differ in number")
        for p, a in zip(params, args):
            self.names[p.uid] = a

    def assign(self, outs, rets: list, indent: int, chain: tuple):
        if len(outs) != len(rets):
            raise Unsupported("a block's returns and its node's outputs differ in number")
        if outs:
            self.emit(indent, f"{', '.join(self.var(o) for o in outs)}, = "
                      f"{''.join(r + ', ' for r in rets)}", chain)

    def if_(self, n: ir.Node, args: list, indent: int, chain: tuple):
        self.emit(indent, f"if {args[0]}:", chain)  # `if` is bool(), as the interpreter's
        for i, b in enumerate(n.blocks):
            if i:
                self.emit(indent, "else:", chain)
            self.alias(b.params, args[1:])
            self.block(b.nodes, indent + 1, chain)
            self.assign(n.outputs, [self.use(v) for v in b.returns], indent + 1, chain)

    def loop(self, n: ir.Node, args: list, indent: int, chain: tuple):
        """`interpreter._run_loop` as a Python loop: the body's carried params are variables
        set before the loop and at the end of each iteration."""
        body = n.blocks[0]
        k = len(n.outputs)
        trip, cond, carried, captured = args[0], args[1], args[2:2 + k], args[2 + k:]
        p_i, p_carried = body.params[0], body.params[1:1 + k]
        self.alias(body.params[1 + k:], captured)
        if len(body.returns) != k + 1:
            raise Unsupported("a loop body's returns and its carried values differ in number")
        i, c, t = self.var(p_i), self.fresh("c"), self.fresh("t")
        if p_carried:
            self.emit(indent, f"{', '.join(self.var(p) for p in p_carried)}, = "
                      f"{''.join(a + ', ' for a in carried)}", chain)
        self.emit(indent, f"{i}, {c}, {t} = 0, {cond}, {trip}", chain)
        self.emit(indent, f"if {t} is not None: {t} = int({t})", chain)
        self.emit(indent, f"while {c} and ({t} is None or {i} < {t}):", chain)
        self.block(body.nodes, indent + 1, chain)
        rets = [self.use(v) for v in body.returns]
        self.emit(indent + 1, f"{c}, {''.join(self.var(p) + ', ' for p in p_carried)}= "
                  f"{''.join(r + ', ' for r in rets)}", chain)
        self.emit(indent + 1, f"{i} += 1", chain)
        if k:
            self.assign(n.outputs, [self.var(p) for p in p_carried], indent, chain)

    def fresh(self, prefix: str) -> str:
        self.n_bound += 1
        return f"{prefix}{self.n_bound}"


def _public_call(op):
    """(the op's public function without its Tensor-first check, the names its declaration
    takes by keyword only), or None where the function is not a plain call of the declaration
    (varargs ops normalise their sizes first: they are called through dispatch)."""
    if op.extra.get("varargs"):
        return None
    fn = getattr(op, "fn_any", None) or getattr(op, "fn", None)
    if fn is None:
        return None
    params = inspect.signature(op.impl).parameters
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params.values()):
        return None
    if any(not (isinstance(a, str) and a.isidentifier()) for a in op.params):
        return None
    return fn, {n for n, p in params.items() if p.kind is p.KEYWORD_ONLY}


def _outputs(n: ir.Node, r):
    """A multi-output node's values, checked as `interpreter.run_block` checks them."""
    outs = tuple(r)
    if len(outs) != len(n.outputs):
        raise ScriptRuntimeError(f"{n.op} gave {len(outs)} values for {len(n.outputs)} "
                                 "outputs" + where(n.loc))
    return outs


class _Callee:
    """A `prim::CallFunction`'s graph as a function of its own, written on its first call."""

    __slots__ = ("graph", "gf")

    def __init__(self, graph):
        self.graph, self.gf = graph, None

    def run(self, vals):
        if self.gf is None:
            self.gf = compile_graph(self.graph)
        return self.gf(vals)


def _call_function(n: ir.Node, callee: _Callee, vals: list):
    """`interpreter._execute` on a prim::CallFunction, with the callee written out too."""
    if "autocast" in n.attrs and _autocast_hook[0] is not None:  # a composite's policy
        vals = _autocast.cast_call(n.attrs["autocast"], vals)
    r = callee.run(vals)
    return r[0] if len(n.outputs) == 1 else r


class Runner:
    """The interpreter tier of one final graph: its first run walks the graph
    (`interpreter.run_graph`: writing a function costs more than one walk), every later run
    calls the graph written out as Python. `runner(args)` returns the list of outputs."""

    __slots__ = ("graph", "fn")

    def __init__(self, graph: ir.Graph):
        self.graph, self.fn = graph, None

    def __call__(self, args) -> list:
        fn = self.fn
        if fn is None:
            self.fn = _SECOND_RUN
            return interpreter.run_graph(self.graph, args)
        if fn is _SECOND_RUN:  # (two threads may both write it: the same function twice)
            fn = self.fn = compile_graph(self.graph)
        return fn(args)


_SECOND_RUN = object()


def compile_graph(graph: ir.Graph):
    """`run(args) -> outputs` for `graph`: its Python function, or the interpreter where this
    module does not write the graph out."""
    try:
        return GraphFunction(graph).run
    except (Unsupported, RecursionError, SyntaxError):
        return lambda args: interpreter.run_graph(graph, args)


def _safe_name(name) -> str:
    """A graph's name as it may appear in a code object's file name (never in the source)."""
    s = "".join(ch if ch.isalnum() or ch in "_." else "_" for ch in str(name))[:80]
    return s or "graph"


__all__ = ["GraphFunction", "Runner", "compile_graph", "Unsupported"]
