"""Reverse-mode autodiff of a straight-line graph: a forward graph that keeps what the backward
needs, and a backward graph derived from the ops' VJP rules.

Owns `differentiate(graph, example_args) -> Differentiated` and `NotDifferentiable`.

How: the forward graph runs once through the interpreter on the example values (so every
intermediate value, shape and dtype is concrete), then a `trace.Tracer` records the backward:
its inputs are one gradient per forward output followed by the saved forward values, and each
node's VJP rule (plain jitorch code) is called in reverse order exactly as the eager engine's
`Node.apply` does (None grads of float outputs become zeros, list slots route one grad per
element, `autograd.graph._fit` reduces broadcast grads and casts to the input dtype); grads of a
value used several times are summed. The traced graph is the backward.

Invariants and choices:
- forward = the original graph (cloned) with extra outputs: the saved values, i.e. the tensor
  inputs and intermediate/`result` tensors the rules read. `n_saved` counts them. Static values
  the rules read (attributes from `prim::Constant`, `<slot>_shape`, `<slot>_dtype`, tensors
  computed from constants only) are baked into the backward as constants.
- backward inputs: `grad_0 .. grad_{k-1}` (one per forward output: a tensor of the output's
  dtype when the output is differentiable, else a `None` slot the caller fills with None),
  then the saved values in order. It returns one grad per graph input (None constant where the
  input is not a tensor requiring grad, or no gradient reaches it).
- SHAPE KEY: tracing bakes shape-derived constants into the backward (reshape/expand targets
  and counts of rules such as sum's `expand_back(g, input_shape, ...)`, materialised zero
  grads). `differentiate` therefore checks whether its backward is size-generic: it traces the
  backward again for two perturbed example sets (every size >= 2 grown by 1 and by 2; sizes 0
  and 1 kept, as they decide broadcasting) and compares the graphs' structure (ops, wiring,
  constants). Equal: the backward depends only on each input's rank and 0/1/many size pattern
  and `shape_key` is that pattern (`kind="pattern"`); otherwise (or when a perturbed run
  fails) `shape_key` is the exact input shapes (`kind="exact"`). Callers reuse a
  `Differentiated` for args where `d.matches(args)`. Broadcast-gradient reduction uses a
  size-generic form of autograd's `_fit` (sums over broadcast dims, no reshape to sizes), so
  elementwise/matmul graphs get pattern keys; reductions whose rules bake sizes get exact ones.
  The forward graph is shape-generic (it is the original graph plus outputs).
- Not differentiated (raise `NotDifferentiable`; the runtime falls back to the interpreter with
  eager autograd): control flow (`prim::If`, `prim::Loop`), `prim::PythonOp`,
  `prim::CallFunction`/`prim::Fused` (autodiff runs after inlining, before fusion), any other
  prim op on a value that needs grad, list-valued op outputs that need grad, and rules that
  compute in Python with a non-constant scalar (see below), a rule that raises while traced
  (eager autograd then raises it at backward time, as PyTorch does), and calls made while a
  trace is being recorded (the example run would land in the outer trace).
- Non-constant Python numbers the rules read (`x * a` with `a: float` a graph input) are saved
  like tensors: the rule gets a stand-in (`_SymFloat`/`_SymInt`) that works as an op operand but
  raises on Python arithmetic/comparison/truth (those results would be baked); the tracer's
  constant for it becomes a backward input. Residual risk: a rule that converts it with
  `float()`/`int()` itself (NumPy needs those conversions) would bake the value.

Runtime use (see tests/test_script_autograd.py `compiled`): `d = differentiate(g, args)`;
per call with `d.matches(args)`: `res = forward(*args)`, `outs, saved = res[:k], res[k:]`;
`outs = grad_node.attach(outs, args, lambda grads: backward(*grads, *saved),
saved=d.saved_to_check(args, outs), differentiable=d.output_requires_grad)`.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np

from ... import _dtype as dt
from ..._ops import registry
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.graph import _fit
from .. import interpreter, ir
from ..trace import Tracer


class NotDifferentiable(Exception):
    """The graph cannot be split into compiled forward/backward; the reason says why."""


_REJECT = {"prim::If", "prim::Loop", "prim::PythonOp", "prim::CallFunction", "prim::Fused"}
# prim ops that may read a value needing grad: their outputs do not carry gradient
_NONDIFF_PRIMS = {"prim::TensorToScalar", "prim::GetAttr", "prim::Print", "prim::Assert"}


@dataclass
class Differentiated:
    forward: ir.Graph        # returns (outputs..., saved...)
    backward: ir.Graph       # takes (grad_outputs..., saved...), returns a grad per input
    n_saved: int
    input_requires_grad: tuple = ()   # per graph input: a grad is computed for it
    output_requires_grad: tuple = ()  # per graph output: differentiable (gets a grad_fn)
    shape_key: tuple = ()             # see module doc: input shapes or their size pattern
    saved_inputs: tuple = ()          # per saved value: index of the graph input it is, or None
    saved_outputs: tuple = ()         # per saved value: index of the graph output it is, or None
    key_kind: str = "exact"           # "exact" | "pattern": how shape_key was computed
    extra: dict = field(default_factory=dict)

    def key_of(self, args) -> tuple:
        return shape_key_of(args, self.key_kind)

    def matches(self, args) -> bool:
        """May this forward/backward pair serve a call with `args` (same dtypes/ranks as the
        example, as the runtime's specialisation key guarantees)?"""
        return self.key_of(args) == self.shape_key

    def saved_to_check(self, args, outputs) -> list:
        """The caller-visible tensors among the saved values (inputs, outputs): pass them to
        `grad_node.attach(saved=...)` so in-place changes before backward raise, as in eager."""
        got = [args[i] for i in self.saved_inputs if i is not None]
        got += [outputs[j] for j, i in zip(self.saved_outputs, self.saved_inputs)
                if j is not None and i is None]
        return [x for x in got if isinstance(x, Tensor)]


def shape_key_of(args, kind: str = "exact") -> tuple:
    """The key under which a backward traced with `args` may be reused (see module doc)."""
    if kind == "pattern":
        return tuple(tuple(min(s, 2) for s in a._data.shape) if isinstance(a, Tensor) else None
                     for a in args)
    return tuple(tuple(a._data.shape) if isinstance(a, Tensor) else None for a in args)


def differentiate(graph: ir.Graph, example_args, requires_grad=None,
                  check_generic: bool = True) -> Differentiated:
    """Split `graph` into forward (+ saved values) and backward graphs.

    `example_args`: one value per graph input (tensors, numbers). `requires_grad`: optional
    per-input bools; by default a float tensor input needs a grad when it requires grad (or,
    if none does, every float tensor input). `check_generic`: try for a size-pattern key
    (two extra traces, see module doc); False keys the result by exact shapes."""
    args = list(example_args)
    if registry._mode_state.stack:
        raise NotDifferentiable("differentiate called while a trace is being recorded")
    if len(args) != len(graph.inputs):
        raise TypeError(f"differentiate: expected {len(graph.inputs)} example args, got "
                        f"{len(args)}")
    for n in graph.nodes():
        if n.op in _REJECT or n.blocks:
            raise NotDifferentiable(f"'{n.op}' is not differentiated by the compiler")
    if requires_grad is None:
        requires_grad = [isinstance(a, Tensor) and a._requires_grad for a in args]
        if not any(requires_grad):
            requires_grad = [True] * len(args)
    wrt = tuple(bool(r) and isinstance(a, Tensor) and a._dtype.category >= dt.FLOAT
                for a, r in zip(args, requires_grad))

    backward, saved, needs = _differentiate_once(graph, args, wrt)
    forward = _clone_with_outputs(graph, saved)
    input_pos = {p.uid: i for i, p in enumerate(graph.inputs)}
    output_pos = {}
    for j, v in enumerate(graph.outputs):
        output_pos.setdefault(v.uid, j)
    kind = "pattern" if check_generic and _size_generic(graph, args, wrt, backward) else "exact"
    return Differentiated(
        forward=forward, backward=backward, n_saved=len(saved),
        input_requires_grad=wrt,
        output_requires_grad=tuple(v.uid in needs for v in graph.outputs),
        shape_key=shape_key_of(args, kind), key_kind=kind,
        saved_inputs=tuple(input_pos.get(v.uid) for v in saved),
        saved_outputs=tuple(output_pos.get(v.uid) for v in saved))


def _differentiate_once(graph, args, wrt):
    env: dict = {}
    with grad_mode.no_grad():
        interpreter.run_block(graph.block, args, env)
    needs, dynamic = _analyse(graph, wrt, env)
    bw = _Backward(graph, env, needs, dynamic)
    return bw.trace(), bw.saved, needs


def _size_generic(graph, args, wrt, backward) -> bool:
    """Is `backward` the same graph for other sizes with the same 0/1/many pattern?"""
    if not any(isinstance(a, Tensor) and any(s >= 2 for s in a._data.shape) for a in args):
        return True  # nothing can vary within the pattern
    want = _structure(backward)
    rng = np.random.default_rng(0)
    for grow in (1, 2):
        other = []
        for a in args:
            if isinstance(a, Tensor):
                shape = tuple(s + grow if s >= 2 else s for s in a._data.shape)
                data = (rng.standard_normal(shape) if a._dtype.category >= dt.FLOAT
                        else np.zeros(shape))
                a = Tensor._make(np.asarray(data, a._dtype.np), a._dtype)
            other.append(a)
        try:
            bw, _, _ = _differentiate_once(graph, other, wrt)
        except Exception:  # the graph itself is size-specific (e.g. a trace's baked reshape)
            return False
        if _structure(bw) != want:
            return False
    return True


def _structure(graph: ir.Graph) -> tuple:
    """A graph's ops, wiring and constants, without value types (sizes)."""
    pos = {p.uid: ("in", i) for i, p in enumerate(graph.inputs)}
    out = [tuple((_type_kind(p.type)) for p in graph.inputs)]
    for k, n in enumerate(graph.block.nodes):
        const = None
        if n.op == "prim::Constant":
            v = n.attrs.get("value")
            const = (("T", str(v._dtype), tuple(v._data.shape), v._data.tobytes())
                     if isinstance(v, Tensor) else (type(v).__name__, repr(v)))
        out.append((n.op, tuple(pos.get(i.uid) for i in n.inputs), const))
        for j, o in enumerate(n.outputs):
            pos[o.uid] = (k, j)
    out.append(tuple(pos.get(r.uid) for r in graph.block.returns))
    return tuple(out)


def _type_kind(t: ir.Type):
    if isinstance(t, ir.TensorType):
        return ("T", str(t.dtype), t.ndim)
    return str(t)


# --- analysis ------------------------------------------------------------------------------------
def _is_float_tensor(x) -> bool:
    return isinstance(x, Tensor) and x._dtype.category >= dt.FLOAT


def _analyse(graph: ir.Graph, wrt, env):
    """`needs`: uids of values that carry gradient; `dynamic`: uids that depend on an input."""
    needs = {p.uid for p, w in zip(graph.inputs, wrt) if w}
    dynamic = {p.uid for p in graph.inputs}
    for n in graph.block.nodes:
        if any(v.uid in dynamic for v in n.inputs):
            dynamic.update(o.uid for o in n.outputs)
        hot = [v for v in n.inputs if v.uid in needs]
        if not hot:
            continue
        if n.op == "prim::ListConstruct":
            needs.add(n.output.uid)
            continue
        if n.op in _NONDIFF_PRIMS:
            continue
        if n.op.startswith("prim::"):
            raise NotDifferentiable(f"'{n.op}' on a value that requires grad")
        op = registry.OPS.get(n.op)
        if op is None:
            raise NotDifferentiable(f"'{n.op}' is not a registry op")
        if op.nondiff or op.vjp is None:
            continue
        by_name = dict(zip(op.params, n.inputs))
        if not any(by_name[s].uid in needs for s in op.tensors):
            continue
        for o in n.outputs:
            val = env[o.uid]
            if isinstance(val, (list, tuple)):
                raise NotDifferentiable(f"'{n.op}' returns a list; its gradient is not "
                                        "compiled")
            if _is_float_tensor(val):
                if val._dtype.category == dt.COMPLEX:
                    raise NotDifferentiable("autograd through complex tensors")
                needs.add(o.uid)
    return needs, dynamic


# --- the backward tracer -------------------------------------------------------------------------
class _Backward:
    def __init__(self, graph, env, needs, dynamic):
        self.graph, self.env, self.needs, self.dynamic = graph, env, needs, dynamic
        self.saved: list[ir.Value] = []   # forward values the backward reads, in input order
        self.saved_t: dict = {}           # uid -> the tracer-side tensor standing for it
        self.grads: dict = {}             # uid -> accumulated grad tensor (traced)
        self.tracer = Tracer(graph.name + "_backward")
        self.def_node = {o.uid: n for n in graph.block.nodes for o in n.outputs}
        self.sym: dict = {}        # forward uid -> stand-in number (see _symbolic)
        self.sym_param: dict = {}  # id(stand-in) -> the backward input replacing it

    def trace(self) -> ir.Graph:
        tr = self.tracer
        try:
            with grad_mode.no_grad(), tr:
                self._trace_body()
        except _SymbolicArithmetic as e:
            raise NotDifferentiable(f"a VJP rule computes with a non-constant scalar ({e}); a "
                                    "traced backward would bake the result") from None
        except NotDifferentiable:
            raise
        except Exception as e:
            # a rule that fails here (unsupported dtype, data-dependent Python branch, ...)
            # must fail at backward time as in eager mode: the runtime falls back to eager
            # autograd, which reproduces the error where PyTorch raises it
            raise NotDifferentiable(f"tracing the VJP rules failed: {type(e).__name__}: "
                                    f"{e}") from e
        self._substitute_symbols(tr.graph)
        return tr.graph

    def _trace_body(self) -> None:
        tr = self.tracer
        for i, v in enumerate(self.graph.outputs):
            if v.uid in self.needs:
                ref = self.env[v.uid]
                g = Tensor._make(np.ones(ref._data.shape, ref._dtype.np), ref._dtype)
                tr.add_input(g, f"grad_{i}")
                self._accumulate(v, g)
            else:
                tr.block.params.append(ir.Value(ir.NONE, f"grad_{i}"))
        for n in reversed(self.graph.block.nodes):
            if not n.op.startswith("prim::"):
                self._node(n)
        rets = []
        for p in self.graph.inputs:
            g = self.grads.get(p.uid)
            rets.append(tr.value_of(g) if g is not None else tr.constant(None, ir.NONE))
        tr.block.returns = rets

    def _accumulate(self, v: ir.Value, g) -> None:
        old = self.grads.get(v.uid)
        self.grads[v.uid] = g if old is None else old + g

    def _value(self, v: ir.Value):
        """What the backward sees for forward value `v`: a saved input, or a baked constant."""
        x = self.env[v.uid]
        if v.uid not in self.dynamic:
            return x
        if isinstance(x, Tensor):
            t = self.saved_t.get(v.uid)
            if t is None:
                # a fresh wrapper: the tracer binds by object identity, and the same tensor
                # object may stand for several forward values
                t = Tensor._make(x._data, x._dtype)
                self.tracer.add_input(t, f"saved_{len(self.saved)}")
                self.saved.append(v)
                self.saved_t[v.uid] = t
            return t
        if isinstance(x, list):
            n = self.def_node.get(v.uid)
            if n is None or n.op != "prim::ListConstruct":
                raise NotDifferentiable("a list operand that is not built in the graph")
            return [self._value(e) for e in n.inputs]
        if x is None:  # an absent Optional: None-ness is part of the specialisation key
            return None
        if type(x) in (int, float):
            return self._symbolic(v, x)
        raise NotDifferentiable(
            f"a VJP rule reads a non-constant {type(x).__name__} ({v}); a traced backward "
            "would bake its value")

    def _symbolic(self, v: ir.Value, x):
        """A non-constant Python number the rules read (`x * a`, `a: float` an input): the rule
        gets a stand-in that behaves as the number inside ops but refuses Python arithmetic
        (which the trace would bake); the constant the tracer records for it is then replaced
        by a backward input fed from the forward's saved values."""
        sym = self.sym.get(v.uid)
        if sym is None:
            sym = (_SymFloat if type(x) is float else _SymInt)(x)
            p = ir.Value(ir.FLOAT if type(x) is float else ir.INT, f"saved_{len(self.saved)}")
            self.tracer.block.params.append(p)
            self.saved.append(v)
            self.sym[v.uid] = sym
            self.sym_param[id(sym)] = p
        return sym

    def _substitute_symbols(self, graph: ir.Graph) -> None:
        """Drop dead nodes (rules also compute grads nobody takes), then replace the tracer's
        constants for stand-ins by the backward's scalar inputs; a live derived value or a
        stand-in inside a constant would be baked: refuse."""
        _dce(graph)
        repl = {}
        nodes = []
        for n in graph.block.nodes:
            if n.op == "prim::Constant":
                val = n.attrs.get("value")
                if isinstance(val, _Sym) and not val.derived and id(val) in self.sym_param:
                    repl[n.output.uid] = self.sym_param[id(val)]
                    continue
                if _contains_sym(val):
                    raise NotDifferentiable("a VJP rule computes with a non-constant scalar "
                                            f"({val!r}); a traced backward would bake it")
            n.inputs = [repl.get(i.uid, i) for i in n.inputs]
            nodes.append(n)
        graph.block.nodes = nodes
        graph.block.returns = [repl.get(r.uid, r) for r in graph.block.returns]

    def _node(self, n: ir.Node) -> None:
        op = registry.OPS[n.op]
        if not any(o.uid in self.needs for o in n.outputs):
            return
        gs = [self.grads.get(o.uid) for o in n.outputs]
        if all(g is None for g in gs):
            return
        for i, o in enumerate(n.outputs):  # as Node.apply: missing float grads are zeros
            ref = self.env[o.uid]
            if gs[i] is None and _is_float_tensor(ref):
                gs[i] = Tensor._make(np.zeros(ref._data.shape, ref._dtype.np), ref._dtype)
        by_name = dict(zip(op.params, n.inputs))
        kwargs = {}
        for kind, name in op.vjp_params:
            if kind == "slot":
                kwargs[name] = self._value(by_name[name])
            elif kind == "result":
                res = [self._value(o) for o in n.outputs]
                kwargs[name] = tuple(res) if len(res) > 1 else res[0]
            elif kind == "attr":
                kwargs[name] = self._value(by_name[name])
            elif kind == "shape":
                x = self.env[by_name[name].uid]
                kwargs[name + "_shape"] = (tuple(t._data.shape for t in x) if name in op.lists
                                           else x._data.shape if isinstance(x, Tensor) else ())
            elif kind == "dtype":
                kwargs[name + "_dtype"] = self.env[by_name[name].uid]._dtype
        g = tuple(gs) if len(n.outputs) > 1 else gs[0]
        res = op.vjp(g, **kwargs)
        if len(op.tensors) == 1:
            res = (res,)
        for name, r in zip(op.tensors, res):
            v = by_name[name]
            if name in op.lists:
                if v.uid not in self.needs or r is None:
                    continue
                ln = self.def_node.get(v.uid)
                if ln is None or ln.op != "prim::ListConstruct":
                    raise NotDifferentiable("a list operand that is not built in the graph")
                for e, ge in zip(ln.inputs, r):
                    self._give(e, ge)
            else:
                self._give(v, r)

    def _give(self, v: ir.Value, g) -> None:
        if g is None or v.uid not in self.needs:
            return
        ref = self.env[v.uid]
        meta = (ref._data.shape, ref._dtype)
        if isinstance(g, _Sym):
            raise NotDifferentiable("a VJP rule returns a non-constant scalar as a gradient")
        if not isinstance(g, Tensor):
            g = Tensor._make(np.asarray(g, ref._dtype.np), ref._dtype)
        self._accumulate(v, _fit_generic(g, meta))


def _fit_generic(g: Tensor, meta) -> Tensor:
    """autograd's `_fit` (reduce a broadcast grad to its input's shape, cast to its dtype)
    written without reshapes to concrete sizes: keepdim sums over the broadcast dims, then a
    plain sum over the extra leading dims, so the traced ops depend only on the size-1 pattern."""
    shape, d = meta
    gs = g._data.shape
    if gs != shape and len(gs) >= len(shape):
        lead = len(gs) - len(shape)
        inner = tuple(i + lead for i, s in enumerate(shape) if s == 1 and gs[i + lead] != 1)
        if inner:
            g = g.sum(dim=inner, keepdim=True)
        if lead:
            g = g.sum(dim=tuple(range(lead)))
    return _fit(g, meta)  # exact-shape fallbacks (e.g. a scalar grad) and the dtype cast


def _dce(graph: ir.Graph) -> None:
    """Remove nodes whose outputs nothing uses (the traced backward holds only pure ops)."""
    live = {v.uid for v in graph.block.returns}
    kept = []
    for n in reversed(graph.block.nodes):
        if any(o.uid in live for o in n.outputs):
            kept.append(n)
            live.update(i.uid for i in n.inputs)
    graph.block.nodes = kept[::-1]


# --- stand-ins for non-constant scalars -----------------------------------------------------------
class _SymbolicArithmetic(Exception):
    pass


class _Sym:
    """Mixin for stand-ins of non-constant numbers. Comparison and truth raise (a rule branching
    on the value would bake the branch). Arithmetic gives a DERIVED value (`_Derived*`): fine
    while it stays out of the backward (e.g. div's rule computes `other * other` for the grad of
    a scalar `other`, which is dropped), an error if a live node uses it (its value would be
    baked). Conversions NumPy needs to consume a stand-in in an op stay allowed."""

    derived = False

    def _refuse(self, *args):
        raise _SymbolicArithmetic(f"{type(self).__name__}({float(self)!r})")

    __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __round__ = __trunc__ = _refuse
    __divmod__ = __rdivmod__ = __floor__ = __ceil__ = _refuse

    def __repr__(self):
        return f"<non-constant {float.__repr__(float(self))}>"

    __hash__ = object.__hash__

    def __eq__(self, other):
        if other is self:
            return True
        self._refuse()

    def __ne__(self, other):
        return not self.__eq__(other)


def _plain(x):
    if isinstance(x, _Sym):
        return int(x) if isinstance(x, int) else float(x)
    return x


def _derive(fn, reflected=False):
    def method(self, *other):
        if other and not isinstance(other[0], (int, float)):
            return NotImplemented
        args = (_plain(self),) + tuple(_plain(o) for o in other)
        r = fn(*(args[::-1] if reflected else args))
        if isinstance(r, bool) or not isinstance(r, (int, float)):
            raise _SymbolicArithmetic(f"{fn.__name__} of a non-constant scalar")
        return (_DerivedInt if isinstance(r, int) else _DerivedFloat)(r)
    return method


for _name, _fn in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow)]:
    setattr(_Sym, f"__{_name}__", _derive(_fn))
    setattr(_Sym, f"__r{_name}__", _derive(_fn, reflected=True))
for _name, _fn in [("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs)]:
    setattr(_Sym, f"__{_name}__", _derive(_fn))


class _SymFloat(_Sym, float):
    pass


class _SymInt(_Sym, int):
    pass


class _DerivedFloat(_Sym, float):
    derived = True


class _DerivedInt(_Sym, int):
    derived = True


def _contains_sym(val) -> bool:
    if isinstance(val, _Sym):
        return True
    if isinstance(val, (tuple, list)):
        return any(_contains_sym(e) for e in val)
    return False


# --- the forward graph ---------------------------------------------------------------------------
def _clone_with_outputs(graph: ir.Graph, saved) -> ir.Graph:
    """A copy of `graph` (fresh Values and Nodes, so passes on it never touch the original)
    returning its outputs followed by `saved`."""
    vmap = {}
    params = []
    for p in graph.inputs:
        q = ir.Value(p.type, p.name)
        vmap[p.uid] = q
        params.append(q)
    nodes = []
    for n in graph.block.nodes:
        m = ir.Node(n.op, [vmap[v.uid] for v in n.inputs], [o.type for o in n.outputs],
                    attrs=n.attrs, loc=n.loc)
        for o, mo in zip(n.outputs, m.outputs):
            mo.name = o.name
            vmap[o.uid] = mo
        nodes.append(m)
    returns = [vmap[v.uid] for v in graph.outputs] + [vmap[v.uid] for v in saved]
    return ir.Graph(graph.name + "_forward", ir.Block(params, nodes, returns))

