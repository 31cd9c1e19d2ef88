"""Reverse-mode autodiff through control flow: `prim::Loop` with a trip count (for-range loops,
nested, carrying tuples), `prim::If` (bool or tensor condition), and their mixes.

Owns `differentiate(graph, example_args, requires_grad, check_generic) -> Differentiated`, which
`autodiff.differentiate` hands graphs with a top-level `prim::Loop` / `prim::If` to (same
contract). It reuses autodiff.py's tracing machinery (`_Backward`: each registry node's VJP rule
is traced on example values) and adds structure around it. Neighbours:
`autodiff_control_build.py` (the builder of forward and backward), `autodiff_control_loop.py`
(a loop's backward), `autodiff_control_if.py` (the If),
`autodiff_control_ops.py` (helper nodes, tuple flattening, graph structure) and
`targets/cpu/lower_autodiff.py` (the helper nodes' lowerings).

- The FORWARD graph is built node by node (a fresh copy, run on the example args as it is built,
  so every value has an example). A loop whose inputs carry gradient is rewritten: its body is
  differentiated recursively (on the example of iteration 0), and every per-iteration value the
  body's backward reads is stored into a loop-carried buffer `[T, *shape]` (`empty_buffer`
  before the loop, `stack_store(buf, v, i, T)` in the body, allocated at the first store;
  numbers go to 1-d buffers). The buffers are extra loop outputs, saved for the backward like
  any value. Values the body reads from outside (captured) are saved once, not per iteration;
  the loop counter `i` is not saved (the backward recomputes it).
- The BACKWARD of such a loop is a `prim::Loop` over the same trip count running the body's
  traced backward in reverse (`i = T - 1 - k`, saved rows read with `select(buf, 0, i)`). It
  carries the grads of the loop-carried values and accumulators for the captured values that
  need a grad (`zeros_like` before the loop, `add` per step). `select(x, dim, i)` with a
  run-time index (the `x[t]` of an RNN) of a captured x adds its grad into x's accumulator in
  place (`index_acc`); otherwise select's registry rule runs (it hands the index to
  `_select_write` unconverted: `extra["runtime_attrs"]`). Any other rule reading a run-time
  integer attribute is refused: it could convert (`operator.index`) and so bake the value.
- An IF: both branches are differentiated on the example (the branch not taken runs too; if it
  fails there: NotDifferentiable); the forward If also returns each branch's saved values; the
  backward is an If on the saved condition over the branches' backwards.
- The helper nodes are `prim::PythonOp`s naming their lowering ("autodiff::<name>"), so the
  interpreter runs them and both graphs compile. Trip counts and sizes are run-time values of the
  programs: a new sequence length reuses them (the shape key, kind "pattern0", treats size 0 as
  "many" when the example had no empty dim, so T = 0 reuses the programs too).

Not differentiated (NotDifferentiable -> the runtime interprets with eager autograd, recording
the reason): loops without a trip count or with a computed condition (`while`, `break`), a loop
that ran 0 times in the example call (no example for its body), per-iteration values other than
tensors and numbers, lists that need grad entering a loop/if, and everything autodiff.py
refuses. Differences from eager: an input that no path reached in a call (a loop that ran 0
times, an if branch not using it) gets a zero grad where eager leaves None. Residual risk: the
body's backward is traced on iteration 0; a saved value whose shape changes between iterations
raises a RuntimeError in the forward (`stack_store`).
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from ..._ops import registry
from ..._tensor import Tensor
from .. import ir
from ..ir import util as ir_util
from . import autodiff as ad
from .autodiff import NotDifferentiable
from .autodiff_control_build import _Builder
from .autodiff_control_ops import _const, _structure, flatten_tuple_loops, loop_invariants, \
    mark_inplace_writes


# --- entry point --------------------------------------------------------------------------------
def _tensor_free(n: ir.Node) -> bool:
    """A Python call on non-tensors only (formatting an error message): nothing to
    differentiate, the forward keeps it."""
    from ..frontend import types as ft
    return not any(ft.is_tensor(v.type) or isinstance(v.type, (ir.ListType, ir.TupleType,
                                                                ir.OptionalType, ir.AnyType))
                   for v in list(n.inputs) + list(n.outputs))


def _check_rejects(block: ir.Block) -> None:
    for n in block.nodes:
        if n.op == "prim::If" and not n.outputs:
            continue  # a check that raises: copied into the forward as it is (build)
        if n.op in ("prim::CallFunction", "prim::Fused") or (
                n.op == "prim::PythonOp" and not _tensor_free(n)):
            raise NotDifferentiable(f"{ir_util.describe(n)} is not differentiated by the "
                                    "compiler")
        for b in n.blocks:
            _check_rejects(b)


def differentiate(graph: ir.Graph, example_args, requires_grad=None,
                  check_generic: bool = True) -> ad.Differentiated:
    """autodiff.differentiate for graphs with control flow (same contract)."""
    args = list(example_args)
    if registry._mode_state.stack:
        raise NotDifferentiable("differentiate called while a trace is being recorded")
    if len(args) != len(graph.inputs):
        raise TypeError(f"differentiate: expected {len(graph.inputs)} example args, got "
                        f"{len(args)}")
    _check_rejects(graph.block)
    if requires_grad is None:
        requires_grad = [isinstance(a, Tensor) and a._requires_grad for a in args]
        if not any(requires_grad):
            requires_grad = [True] * len(args)
    wrt = tuple(bool(r) and isinstance(a, Tensor) and a._dtype.category >= dt.FLOAT
                for a, r in zip(args, requires_grad))
    graph = loop_invariants(flatten_tuple_loops(graph))
    fwd, backward, saved, bw = _once(graph, args, wrt)
    fwd.name = graph.name + "_forward"
    extra_rets = []
    for v in saved:
        if isinstance(v, ad._SizeRef):  # `value.shape[dim]`, an int output
            sh = ir.Node("prim::GetAttr", [v.value], [ir.ListType(ir.INT)],
                         attrs={"name": "shape"})
            k = _const(v.dim, ir.INT)
            gi = ir.Node("prim::ScalarOp", [sh.output, k.output], [ir.INT],
                         attrs={"fn": "getitem"})
            fwd.block.nodes += [sh, k, gi]
            extra_rets.append(gi.output)
        else:
            extra_rets.append(v)
    fwd.block.returns = list(fwd.block.returns) + extra_rets
    mark_inplace_writes(fwd)
    input_pos = {p.uid: i for i, p in enumerate(fwd.inputs)}
    output_pos: dict = {}
    for j, v in enumerate(fwd.outputs[:len(graph.outputs)]):
        output_pos.setdefault(v.uid, j)
    kind = "exact"
    if check_generic and _size_generic(graph, args, wrt, backward):
        empty = any(isinstance(a, Tensor) and 0 in a._data.shape for a in args)
        # "pattern0": size 0 counts as many (a loop's trip count may be 0), unless the
        # example had an empty dim (autodiff.shape_key_of)
        kind = "pattern" if empty else "pattern0"
    return ad.Differentiated(
        forward=fwd, backward=backward, n_saved=len(saved), input_requires_grad=wrt,
        output_requires_grad=tuple(v.uid in bw.needs for v in fwd.outputs[:len(graph.outputs)]),
        shape_key=ad.shape_key_of(args, kind), key_kind=kind,
        saved_inputs=tuple(input_pos.get(v.uid) for v in saved),
        saved_outputs=tuple(output_pos.get(v.uid) for v in saved),
        layout=_layout(fwd, saved))


def _layout(fwd: ir.Graph, saved) -> tuple:
    """What each saved value is, by position in the forward graph (its Values are fresh per
    call, unlike autodiff.py's), so the runtime can see that two keys save the same values."""
    pos = {p.uid: ("in", k) for k, p in enumerate(fwd.inputs)}
    for k, n in enumerate(fwd.block.nodes):
        for j, o in enumerate(n.outputs):
            pos[o.uid] = (k, j)
    return tuple(("size", pos.get(v.value.uid), v.dim) if isinstance(v, ad._SizeRef)
                 else pos.get(v.uid) for v in saved)


def _once(graph, args, wrt):
    try:
        try:
            return _Builder(graph, args, wrt).build()
        except NotDifferentiable:
            # as autodiff.differentiate: retry with the example's sizes baked (a rule that
            # converts a size with int()); the size-generic check then decides the key
            return _Builder(graph, args, wrt, symbolic=False).build()
    except NotDifferentiable:
        raise
    except ad._SymbolicArithmetic as e:
        raise NotDifferentiable(f"a VJP rule computes with a non-constant scalar ({e})") from None


def _size_generic(graph, args, wrt, backward) -> bool:
    """autodiff._size_generic with structures that include nested blocks."""
    if not any(isinstance(a, Tensor) and any(s >= 2 for s in a._data.shape) for a in args):
        return True
    want = _structure(backward)
    if _same_for(graph, args, wrt, want, lambda s, k: s + k):
        return True
    # sizes tied by a ratio (an LSTM's 4 * hidden) break when grown by 1: scale them instead,
    # from the example divided by the largest common factor that keeps them >= 2 (the traces
    # run the loops eagerly: a T=32, hidden=64 example scaled up ran ~20 s of matmuls)
    d = _common_factor(args)
    return _same_for(graph, args, wrt, want, lambda s, k: s // d * (k + 1))


def _common_factor(args) -> int:
    sizes = {s for a in args if isinstance(a, Tensor) for s in a._data.shape if s >= 2}
    if not sizes:
        return 1
    for d in range(min(sizes) // 2, 1, -1):
        if all(s % d == 0 for s in sizes):
            return d
    return 1


def _same_for(graph, args, wrt, want, grow_fn) -> bool:
    rng = np.random.default_rng(0)
    for grow in (1, 2):
        other = []
        for a in args:
            if isinstance(a, Tensor):
                shape = tuple(grow_fn(s, grow) if s >= 2 else s for s in a._data.shape)
                data = (rng.standard_normal(shape) if a._dtype.category >= dt.FLOAT
                        else np.zeros(shape))
                a = Tensor._make(np.asarray(data, a._dtype.np), a._dtype)
            other.append(a)
        try:
            _, bw, _, _ = _once(graph, other, wrt)
        except Exception:
            return False
        if _structure(bw) != want:
            return False
    return True
