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
  inputs and intermediate/`result` tensors the rules read, and saved SIZES (ints
  `value.shape[d]`, see below). `n_saved` counts them; `layout` says what each one is. A
  view (constant attributes) of an input or of a saved value, such as a Linear's `t(weight)`,
  or a product of two saved values (a layer norm's `(x - mean) * rstd`) is not saved: the
  backward recomputes it from its operands (autodiff_recompute.py; values no backward node
  reads are not saved either; the runtime passes saved inputs itself, so a compiled forward
  returns nothing for them: runtime/autodiff.py `_without_inputs`). Run-time numbers the rules
  read become stand-ins and backward inputs (autodiff_sizes.py). Static values the rules
  read (attributes from `prim::Constant`, `<slot>_dtype`, tensors computed from constants
  only) are baked into the backward as constants.
- backward inputs: `grad_0 .. grad_{k-1}` (one per forward output: a tensor of the output's
  dtype when the output is differentiable, else a `None` slot the caller fills with None),
  then the saved values in order. It returns one grad per graph input (None constant where the
  input is not a tensor requiring grad, or no gradient reaches it).
- SIZES ARE RUN-TIME VALUES (DESIGN property 3: compile per dtype/rank, never per size). The
  rules get `<slot>_shape`, and the saved tensors / incoming grads get `.shape`, whose sizes
  >= 2 are `_SymSize` stand-ins (autodiff_sym.py); a reshape/expand/narrow... target or a
  count (mean's `n0 * n1`) recorded with them becomes `prim::ListConstruct` / `prim::ScalarOp`
  nodes over backward inputs: read from a backward input of that shape
  (`prim::GetAttr[name='shape']` + getitem) when there is one, else saved by the forward.
  Sizes 0 and 1 stay numbers: they decide broadcasting. Rules reshaping a grad to its own
  sizes plus 1s (`unsqueeze_dims`) get unsqueezes instead; missing float grads are zeros
  expanded to run-time sizes. List outputs (chunk/split picked by getitem or ListUnpack) get
  one grad per element.
- SHAPE KEY, the safety net: `differentiate` traces the backward again for two perturbed
  example sets (every size >= 2 grown by 1 and by 2; 0 and 1 kept) and compares the graphs'
  structure (ops, wiring, constants). Equal: the backward depends only on each input's rank
  and 0/1/many size pattern and `shape_key` is that pattern (`kind="pattern"`: one backward
  for every batch size). Otherwise (a rule that bakes a size in a tensor constant such as
  einsum's diagonal `eye(n)`, sizes a trace baked into the forward, a perturbed run that
  fails) `shape_key` is the exact input shapes (`kind="exact"`) and `extra["sizes"]` says
  why. If tracing with stand-ins fails, the backward is traced with the example's sizes
  (`symbolic=False`, exact key). Comparisons of stand-ins use the example's value (the key
  fixes the pattern; the perturbed traces check the rest); conversions (`int()`, NumPy) bake.
- Not differentiated (raise `NotDifferentiable`; the runtime falls back to the interpreter with
  eager autograd): control flow (`prim::If`, `prim::Loop`; see autodiff_control.py),
  `prim::PythonOp`, `prim::CallFunction`/`prim::Fused` (autodiff runs after inlining, before
  fusion), any other prim op on a value that needs grad, rules that branch on a non-constant
  scalar (see below), a rule that raises while traced (eager autograd then raises it at
  backward time, as PyTorch does), and calls made while a trace is being recorded (the
  example run would land in the outer trace).
- Non-constant Python numbers the rules read (`x * a` with `a: float` a graph input) are saved
  like tensors: the rule gets a stand-in (`_SymFloat`/`_SymInt`) that works as an op operand;
  arithmetic on it is recorded as scalar ops, comparison/truth raise (the branch would be
  baked). Residual risk: a rule that converts it with `float()`/`int()` itself would bake it.

Runtime use (see tests/test_script_autograd.py `compiled`): `d = differentiate(g, args)`;
per call with `d.matches(args)`: `res = forward(*args)`, `outs, saved = res[:k], res[k:]`;
`outs = grad_node.attach(outs, args, lambda grads: backward(*grads, *saved),
saved=d.saved_to_check(args, outs), differentiable=d.output_requires_grad)`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ... import _dtype as dt
from ..._ops import registry
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...autograd.graph import _fit
from ..ir import interpreter
from ..ir import util as ir_util
from .. import ir
from ..._ops.factories import is_factory
from ..frontend.trace import Tracer
from .autodiff_recompute import Recompute
from .autodiff_sizes import SymbolicSizes
from .autodiff_sym import (_Sym, _SymbolicArithmetic, _SizeRef, _clone_with_outputs, _unsqueezes,
                           contains_sym as _contains_sym, materialise, with_sym_shape)


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
    key_kind: str = "exact"           # one of KEY_KINDS: how shape_key was computed
    symbolic: bool = True             # sizes the rules read are run-time values (module doc)
    layout: tuple = ()                # what each saved value is (same layout: same forward)
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


# how a shape key describes one dim, by key kind (`Differentiated.key_kind`): the exact size;
# its pattern 0 / 1 / many; or (autodiff_control.py, whose loops run any trip count) 1 / many,
# size 0 counting as many
_KEY_DIMS = {"exact": lambda s: s, "pattern": lambda s: min(s, 2),
             "pattern0": lambda s: 1 if s == 1 else 2}
KEY_KINDS = frozenset(_KEY_DIMS)


def shape_key_of(args, kind: str = "exact") -> tuple:
    """The key under which a backward traced with `args` may be reused (see module doc)."""
    dim = _KEY_DIMS[kind]
    return tuple(tuple(dim(s) for s in a._data.shape) if isinstance(a, Tensor) else None
                 for a in args)


def differentiate(graph: ir.Graph, example_args, requires_grad=None,
                  check_generic: bool = True, symbolic=None) -> Differentiated:
    """Split `graph` into forward (+ saved values) and backward graphs.

    `example_args`: one value per graph input (tensors, numbers). `requires_grad`: optional
    per-input bools; by default a float tensor input needs a grad when it requires grad (or,
    if none does, every float tensor input). `check_generic`: try for a size-pattern key
    (two extra traces, see module doc); False keys the result by exact shapes. `symbolic`:
    sizes the rules read become run-time values (True), are baked (False), or (None) True
    unless tracing with them fails, then False (the reason lands in `extra["sizes"]`)."""
    args = list(example_args)
    if registry._mode_state.stack:
        raise NotDifferentiable("differentiate called while a trace is being recorded")
    if len(args) != len(graph.inputs):
        raise TypeError(f"differentiate: expected {len(graph.inputs)} example args, got "
                        f"{len(args)}")
    if any(n.op in ("prim::Loop", "prim::If") for n in graph.block.nodes):  # autodiff_control.py
        from . import autodiff_control
        return autodiff_control.differentiate(graph, args, requires_grad, check_generic)
    for n in graph.nodes():
        if n.op in _REJECT or n.blocks:
            raise NotDifferentiable(f"{ir_util.describe(n)} is not differentiated by the "
                                    "compiler")
    if requires_grad is None:
        requires_grad = [isinstance(a, Tensor) and a._requires_grad for a in args]
        if not any(requires_grad):
            requires_grad = [True] * len(args)
    wrt = tuple(bool(r) and isinstance(a, Tensor) and a._dtype.category >= dt.FLOAT
                for a, r in zip(args, requires_grad))

    extra = {}
    if symbolic is None:
        try:
            backward, saved, needs = _differentiate_once(graph, args, wrt, True)
            symbolic = True
        except NotDifferentiable as e:
            # e.g. a rule converting a size with int(): trace with the example's sizes; the
            # exact shape key then keeps it correct (one backward per shape)
            backward, saved, needs = _differentiate_once(graph, args, wrt, False)
            symbolic = False
            extra["sizes"] = f"baked: {e}"
    else:
        backward, saved, needs = _differentiate_once(graph, args, wrt, symbolic)
    forward = _clone_with_outputs(graph, saved)
    input_pos = {p.uid: i for i, p in enumerate(graph.inputs)}
    output_pos = {}
    for j, v in enumerate(graph.outputs):
        output_pos.setdefault(v.uid, j)
    kind = "pattern" if check_generic and _size_generic(graph, args, wrt, backward,
                                                        symbolic) else "exact"
    if kind == "exact" and check_generic and "sizes" not in extra:
        extra["sizes"] = "baked: the backward's structure depends on the sizes"
    return Differentiated(
        forward=forward, backward=backward, n_saved=len(saved),
        input_requires_grad=wrt,
        output_requires_grad=tuple(v.uid in needs for v in graph.outputs),
        shape_key=shape_key_of(args, kind), key_kind=kind,
        saved_inputs=tuple(input_pos.get(v.uid) for v in saved),
        saved_outputs=tuple(output_pos.get(v.uid) for v in saved),
        symbolic=symbolic, extra=extra,
        layout=tuple(("size", v.value.uid, v.dim, v.elem) if isinstance(v, _SizeRef) else v.uid
                     for v in saved))


def _differentiate_once(graph, args, wrt, symbolic=True):
    env: dict = {}
    with grad_mode.no_grad():
        interpreter.run_block(graph.block, args, env)
    needs, dynamic = _analyse(graph, wrt, env)
    bw = _Backward(graph, env, needs, dynamic, symbolic)
    return bw.trace(), bw.saved, needs


def _size_generic(graph, args, wrt, backward, symbolic=True) -> bool:
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
            bw, _, _ = _differentiate_once(graph, other, wrt, symbolic)
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
        if _list_pick(n, env, dynamic) is not None:  # an element of a list output (chunk)
            needs.update(o.uid for o in n.outputs if _is_float_tensor(env[o.uid]))
            continue
        if n.op in _NONDIFF_PRIMS or is_factory(n.op):  # factory outputs never need grad
            continue
        if n.op.startswith("prim::"):
            raise NotDifferentiable(f"'{n.op}' on a value that requires grad")
        op = registry.OPS.get(n.op)
        if op is None:
            raise NotDifferentiable(f"'{n.op}' is not a registry op")
        if op.nondiff or op.vjp is None:
            continue
        by_name = dict(zip(op.params, n.inputs))
        if not any(by_name[s].uid in needs for s in op.grad_slots):
            continue
        for o in n.outputs:
            val = env[o.uid]
            if isinstance(val, (list, tuple)):
                if len(n.outputs) > 1 or not val or not all(_is_float_tensor(e) for e in val):
                    raise NotDifferentiable(f"'{n.op}' returns a list; its gradient is not "
                                            "compiled")
                if any(e._dtype.category == dt.COMPLEX for e in val):
                    raise NotDifferentiable("autograd through complex tensors")
                needs.add(o.uid)  # its elements are picked by getitem / ListUnpack
                continue
            if _is_float_tensor(val):
                if val._dtype.category == dt.COMPLEX:
                    raise NotDifferentiable("autograd through complex tensors")
                needs.add(o.uid)
    return needs, dynamic


def _list_pick(n: ir.Node, env, dynamic):
    """For `lst[k]` (constant k) or `prim::ListUnpack(lst)` of a list of tensors: the element
    index of each output; else None."""
    if n.op == "prim::ListUnpack" and isinstance(env.get(n.inputs[0].uid), (list, tuple)):
        return list(range(len(n.outputs)))
    if n.op == "prim::ScalarOp" and n.attrs.get("fn") == "getitem" and len(n.inputs) == 2 \
            and isinstance(env.get(n.inputs[0].uid), (list, tuple)) \
            and n.inputs[1].uid not in dynamic and isinstance(env.get(n.inputs[1].uid), int):
        k = env[n.inputs[1].uid]
        return [k % len(env[n.inputs[0].uid])] if env[n.inputs[0].uid] else None
    return None


# --- the backward tracer -------------------------------------------------------------------------
class _Backward(Recompute, SymbolicSizes):
    def __init__(self, graph, env, needs, dynamic, symbolic=False):
        self.graph, self.env, self.needs, self.dynamic = graph, env, needs, dynamic
        self.symbolic = symbolic
        self.shapes: dict = {}     # forward uid -> the shape the rules get (see _shape)
        self.params: dict = {}     # forward uid -> backward input holding it (saved or grad)
        self.emit: list = []       # where _size_param puts the nodes it needs
        self.shape_reads: dict = {}  # backward input uid -> its prim::GetAttr shape
        self.saved: list[ir.Value] = []   # forward values the backward reads, in input order
        self.saved_t: dict = {}           # uid -> the tracer-side tensor standing for it
        self.grads: dict = {}             # uid -> accumulated grad tensor (traced)
        self.tracer = Tracer(graph.name + "_backward")
        self.def_node = {o.uid: n for n in graph.block.nodes for o in n.outputs}
        self.sym: dict = {}        # forward uid -> stand-in number (see _symbolic)
        self.sym_param: dict = {}  # id(stand-in) -> the backward input replacing it
        self.input_uids = {p.uid for p in graph.inputs}
        self.read = self._rule_reads()  # uids the rules read (saved unless recomputed)

    def trace(self) -> ir.Graph:
        tr = self.tracer
        try:
            with grad_mode.no_grad(), tr:
                self._trace_body()
            self._substitute_symbols(tr.graph)
            self._drop_unread(tr.graph)
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
        return tr.graph

    def _trace_body(self) -> None:
        tr = self.tracer
        for i, v in enumerate(self.graph.outputs):
            if v.uid in self.needs:
                ref = self.env[v.uid]
                g = Tensor._make(with_sym_shape(np.ones(ref._data.shape, ref._dtype.np),
                                                 self._shape(v)), ref._dtype)
                p = tr.add_input(g, f"grad_{i}")
                p.type = ir.TensorType(ref._dtype, tuple(ref._data.shape))  # not stand-ins
                self.params.setdefault(v.uid, p)
                self._accumulate(v, g)
            else:
                tr.block.params.append(ir.Value(ir.NONE, f"grad_{i}"))
        for n in reversed(self.graph.block.nodes):
            if not n.op.startswith("prim::"):
                self._node(n)
            elif n.inputs and n.inputs[0].uid in self.needs:
                ks = _list_pick(n, self.env, self.dynamic)
                if ks is not None:  # elements' grads, collected per list index
                    got = self.grads.setdefault(n.inputs[0].uid, {})
                    for k, o in zip(ks, n.outputs):
                        g = self.grads.get(o.uid)
                        if g is not None:
                            got[k] = g if got.get(k) is None else got[k] + g
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
                t = self._recomputed(v)
            if t is None:
                # a fresh wrapper: the tracer binds by object identity, and the same tensor
                # object may stand for several forward values
                t = Tensor._make(with_sym_shape(x._data, self._shape(v)), x._dtype)
                # as in eager, where rules see the saved tensors themselves: some rules (einsum,
                # tensordot) compute a grad only for operands that require grad
                t._requires_grad = v.uid in self.needs
                p = self.params[v.uid] = self.tracer.add_input(t, f"saved_{len(self.saved)}")
                p.type = ir.TensorType(x._dtype, tuple(x._data.shape))  # as before the flag
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

    def _substitute_symbols(self, graph: ir.Graph) -> None:
        """Drop dead nodes (rules also compute grads nobody takes), then replace the tracer's
        constants holding stand-ins by backward inputs and the scalar ops that derive values
        from them (see autodiff_sym.materialise)."""
        _dce(graph)
        repl = {}
        nodes = self.emit = []
        memo: dict = {}
        for n in graph.block.nodes:
            if self.symbolic and n.op in ("reshape", "view") and _unsqueezes(n, nodes, repl):
                continue
            if n.op == "prim::Constant":
                val = n.attrs.get("value")
                if _contains_sym(val):
                    repl[n.output.uid] = materialise(val, nodes, memo, self._size_param)
                    continue
            n.inputs = [repl.get(i.uid, i) for i in n.inputs]
            nodes.append(n)
        graph.block.nodes = nodes
        graph.block.returns = [repl.get(r.uid, r) for r in graph.block.returns]
        _dce(graph)  # constants the rewrites left unused

    def _node(self, n: ir.Node) -> None:
        if not any(o.uid in self.needs for o in n.outputs):
            return  # (factory nodes, whose outputs never need grad, always leave here)
        op = registry.OPS[n.op]
        gs = [self.grads.get(o.uid) for o in n.outputs]
        if all(g is None for g in gs):
            return
        for i, o in enumerate(n.outputs):  # as Node.apply: missing float grads are zeros
            ref = self.env[o.uid]
            if gs[i] is None and _is_float_tensor(ref):
                gs[i] = self._zeros(o, ref)
            elif isinstance(gs[i], dict):  # a list output: one grad per element
                gs[i] = tuple(gs[i][k] if gs[i].get(k) is not None else
                              self._zeros(o, e, k) for k, e in enumerate(ref))
        if len(n.outputs) == 1 and isinstance(gs[0], tuple):
            gs = list(gs[0])  # the rule takes the elements' grads as for a tuple output
        by_name = dict(zip(op.params, n.inputs))
        kwargs = {}
        for kind, name in op.vjp_params:
            if kind == "slot":
                kwargs[name] = self._value(by_name[name])
            elif kind == "result":
                res = [self._value(o) for o in n.outputs]
                kwargs[name] = tuple(res) if len(res) > 1 else res[0]
            elif kind == "attr":
                v = by_name[name]
                if v.uid in self.dynamic and type(self.env[v.uid]) is int and \
                        name not in op.extra.get("runtime_attrs", ()):
                    # an int stand-in survives ops but not `operator.index`, which rules use
                    # to check an index or a start (select, narrow): the trace would bake it
                    raise NotDifferentiable(f"'{n.op}' with a run-time '{name}' (its VJP rule "
                                            "would bake the value)")
                kwargs[name] = self._value(v)
            elif kind == "shape":
                x = self.env[by_name[name].uid]
                kwargs[name + "_shape"] = (self._list_shapes(by_name[name], x)
                                           if name in op.lists else self._shape(by_name[name]))
            elif kind == "dtype":
                kwargs[name + "_dtype"] = self.env[by_name[name].uid]._dtype
        g = tuple(gs) if len(gs) > 1 or isinstance(self.env[n.outputs[0].uid], (list, tuple)) \
            else gs[0]
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

    def _list_shapes(self, v: ir.Value, x) -> tuple:
        ln = self.def_node.get(v.uid)
        if ln is not None and ln.op == "prim::ListConstruct":
            return tuple(self._shape(e) for e in ln.inputs)
        return tuple(t._data.shape for t in x)

    def _zeros(self, v: ir.Value, ref, elem=None) -> Tensor:
        """A missing grad of float output `v` (element `elem` of a list output), as zeros (what
        Node.apply gives the rule)."""
        shape = self._shape(v, elem)
        if not _contains_sym(shape):
            return Tensor._make(np.zeros(ref._data.shape, ref._dtype.np), ref._dtype)
        z = Tensor._make(np.zeros((), ref._dtype.np), ref._dtype)
        return z.expand(shape).contiguous()  # run-time sizes; a writable array

    def _give(self, v: ir.Value, g) -> None:
        if g is None or v.uid not in self.needs:
            return
        ref = self.env[v.uid]
        meta = (self._shape(v), ref._dtype)
        if isinstance(g, _Sym):
            raise NotDifferentiable("a VJP rule returns a non-constant scalar as a gradient")
        if not isinstance(g, Tensor):
            g = Tensor._make(np.asarray(g, ref._dtype.np), ref._dtype)
        elif self.symbolic and id(g) not in self.tracer.values and \
                g._data.shape == ref._data.shape and not g._data.any():
            # an input-independent zero grad (`zeros_like(g)` of floor/sign/round...): zeros of
            # the run-time size, not a constant of the example's
            g = self._zeros(v, ref)
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
