"""CPU lowerings of the helper nodes that autodiff through loops emits (`passes/autodiff_control`).

Those nodes are `prim::PythonOp`s (so the interpreter runs their `fn` and the passes keep them:
they are impure) named by `attrs["lowering"]` ("autodiff::<name>"), which the lowering table
maps to the functions below. They are the only in-place writes in generated code, on buffers nobody
else holds:
- `empty_buffer` (attrs dtype, rank): an empty `(0,) * (rank + 1)` array, the initial value of a
  loop-carried stack of per-iteration saved values;
- `stack_store(buf, value, i, T)`: at the first store (buf.shape[0] != T) allocates `(T, *shape)`,
  then writes `value` into row `i` (checked: row in range, value's shape equal to a row's);
- `zeros_like(x)`: fresh C-contiguous zeros of x's shape and dtype;
- `index_acc(acc, g, idx)` (attrs dim): `acc.select(dim, idx) += g` in place (the gradient of
  `x[i]` inside a loop, accumulated without materialising a full-size zero tensor per step);
- `take_row(g, idx)` / `zero_row(g, idx)` (attrs dim): a copy of row idx, and row idx zeroed in
  place (the gradient of `hs[t] = h` on a loop-carried grad buffer), `copy(x)`: the buffer's
  private copy made before the backward loop.
"""
from __future__ import annotations

from ... import ir
from ...codegen import literal
from ...codegen.emitter import Emitter, np_type, typed_literal
from ...codegen.lowering import lowers
from .lower_list import copy_into
from .lower_write import _fill


def typed_zero(dtype) -> str:
    return typed_literal(0, dtype)


def _row_index(em: Emitter, expr: str, size: str) -> str:
    ix = em.fresh("ix")
    em.emit(f"{ix} = {expr}")
    em.emit(f"if {ix} < 0:")
    em.emit(f"    {ix} += {size}")
    em.emit(f"if {ix} < 0 or {ix} >= {size}:")
    em.indent += 1
    em.raise_("IndexError", "autodiff: per-iteration index ", (ix,), " out of range for ",
              (size,), " rows")
    em.indent -= 1
    return ix


@lowers("autodiff::empty_buffer", target="cpu")
def lower_empty_buffer(em: Emitter, n: ir.Node) -> None:
    rank = int(n.attrs["rank"])
    out = em.fresh("buf")
    shape = literal.value((0,) * (rank + 1))
    em.emit(f"{out} = np.empty({shape}, {np_type(n.attrs['dtype'])})")
    em.bind(n.output, out)


@lowers("autodiff::stack_store", target="cpu")
def lower_stack_store(em: Emitter, n: ir.Node) -> None:
    buf, v, i, trip = (em.name(x) for x in n.inputs)
    bt = em.tensor(n.inputs[0])
    if isinstance(n.inputs[1].type, (ir.IntType, ir.FloatType, ir.BoolType)):
        # a number: a 1-d buffer
        t = ir.TensorType(bt.dtype, ())
        b = em.fresh("buf")
        em.emit(f"if {buf}.shape[0] != {trip}:")
        em.emit(f"    {b} = np.empty(({trip},), {np_type(bt.dtype)})")
        em.emit("else:")
        em.emit(f"    {b} = {buf}")
        ix = _row_index(em, i, f"{b}.shape[0]")
        em.emit(f"{b}[{ix}] = {v}")
        em.bind(n.output, b)
        return
    t = em.tensor(n.inputs[1])
    b = em.fresh("buf")
    # an empty value of another shape is an if's dummy for a slot its branch did not fill
    # (see autodiff_control._if): it is not stored, and real rows replace a dummy allocation
    em.emit(f"if {buf}.shape[0] != {trip} or ({buf}.shape[1:] != {v}.shape and "
            f"{buf}.size == 0 and {v}.size != 0):")
    em.emit(f"    {b} = np.empty(({trip},) + {v}.shape, {np_type(bt.dtype)})")
    em.emit("else:")
    em.emit(f"    {b} = {buf}")
    ix = _row_index(em, i, f"{b}.shape[0]")
    if t.ndim:
        em.emit(f"if {b}.shape[1:] != {v}.shape:")
        em.emit(f"    if {v}.size != 0:")
        em.indent += 2
        em.raise_("RuntimeError", "autodiff: a loop's saved value changed shape between "
                  "iterations; the compiled backward needs equal shapes")
        em.indent -= 2
        em.emit("else:")
        # a loop nest, not `b[ix] = v`: Numba's array setitem compiles its broadcast-error
        # formatting (str/repr/join of shapes, ~2.5 CPU-s per kernel) for a check done above
        em.indent += 1
        row = em.fresh("row")
        em.emit(f"{row} = {b}[{ix}]")
        copy_into(em, row, v, t.ndim)
        em.indent -= 1
    else:
        em.emit(f"{b}[{ix}] = {v}.flat[0]")
    em.bind(n.output, b)


@lowers("autodiff::zeros_like", target="cpu")
def lower_zeros_like(em: Emitter, n: ir.Node) -> None:
    t = em.tensor(n.inputs[0])
    out = em.fresh("z")
    em.emit(f"{out} = np.zeros({em.name(n.inputs[0])}.shape, {np_type(t.dtype)})")
    em.bind(n.output, out)


@lowers("autodiff::index_acc", target="cpu")
def lower_index_acc(em: Emitter, n: ir.Node) -> None:
    acc, g, idx = (em.name(x) for x in n.inputs)
    t = em.tensor(n.inputs[0])
    dim = int(n.attrs["dim"]) % t.ndim
    rest = [f"{acc}.shape[{k}]" for k in range(t.ndim) if k != dim]
    em.emit(f"if {g}.shape != ({''.join(r + ', ' for r in rest)}):")
    em.indent += 1
    em.raise_("RuntimeError", "autodiff: gradient of a per-iteration select has the wrong shape")
    em.indent -= 1
    ix = _row_index(em, idx, f"{acc}.shape[{dim}]")
    view = em.fresh("row")
    em.emit(f"{view} = {acc}[{':, ' * dim}{ix}]")
    if t.ndim == 1:
        em.emit(f"{acc}[{ix}] += {g}.flat[0]")
    else:  # a loop nest, not `view += g`: Numba's in-place ufunc compiled ~2x longer
        _fill(em, view, None, t.ndim - 1,
              lambda idx: f"{view}[{', '.join(idx)}] + {g}[{', '.join(idx)}]")
    em.bind(n.output, acc)


@lowers("autodiff::take_row", target="cpu")
def lower_take_row(em: Emitter, n: ir.Node) -> None:
    """`take_row(g, idx)` (attrs dim): a copy of `g.select(dim, idx)`."""
    g, idx = (em.name(x) for x in n.inputs)
    t = em.tensor(n.inputs[0])
    dim = int(n.attrs["dim"]) % t.ndim
    ix = _row_index(em, idx, f"{g}.shape[{dim}]")
    out = em.fresh("row")
    if t.ndim == 1:
        em.emit(f"{out} = np.empty((), {np_type(t.dtype)})")
        em.emit(f"{out}[()] = {g}[{ix}]")
    else:
        em.emit(f"{out} = np.ascontiguousarray({g}[{':, ' * dim}{ix}]).copy()")
    em.bind(n.output, out)


@lowers("autodiff::zero_row", target="cpu")
def lower_zero_row(em: Emitter, n: ir.Node) -> None:
    """`zero_row(g, idx)` (attrs dim): `g.select(dim, idx) = 0` in place (g is a loop-carried
    grad buffer the backward owns, see autodiff_control._row_write); the result is g."""
    g, idx = (em.name(x) for x in n.inputs)
    t = em.tensor(n.inputs[0])
    dim = int(n.attrs["dim"]) % t.ndim
    ix = _row_index(em, idx, f"{g}.shape[{dim}]")
    em.emit(f"{g}[{':, ' * dim}{ix}] = {typed_zero(t.dtype)}")
    em.bind(n.output, g)


@lowers("autodiff::copy", target="cpu")
def lower_copy(em: Emitter, n: ir.Node) -> None:
    """`copy(x)`: a fresh C-contiguous copy (a grad buffer the backward may write into)."""
    from .lower_shape import contiguous_expr
    out = em.fresh("cp")
    em.emit(f"{out} = {contiguous_expr(em, n.inputs[0])}.copy()")
    em.bind(n.output, out)


@lowers("autodiff::typed", target="cpu")
def lower_typed(em: Emitter, n: ir.Node) -> None:
    """`typed(x)`: x itself; the node only carries x's dtype and rank for the type pass (a
    value whose rule cannot tell them, e.g. `expand` to run-time sizes, feeding a loop)."""
    from .program import _alias
    em.tensor(n.output)
    _alias(em, n.output, n.inputs[0])
