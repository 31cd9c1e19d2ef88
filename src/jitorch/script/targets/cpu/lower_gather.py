"""Lowering of row gathers and scatters: `embedding`, `index_select` and `index_add`.

These are what an embedding layer and its backward need (the backward of `embedding` is
`zeros.index_add(0, idx, rows)`, of `index_select` the same), and what resampling ops gather
with along other dims (`F.interpolate`). Every index is bounds-checked with PyTorch's message
before any row is read or written (a bad token id raises IndexError, never reads outside the
table). Along dim 0 rows are copied with a flat inner loop; along a dim d > 0 the tensor is
viewed as (outer, size(d), inner) and the gather runs over that view, so one program serves any
sizes. The dim must be a constant (a run-time dim keeps the interpreter: NotLowered).
"""
from __future__ import annotations

from .... import _dtype as dt
from ... import ir
from ...codegen import NotLowered
from ...codegen.emitter import Emitter, np_type, typed_literal
from ...codegen.lowering import lowers


def _check_indices(em: Emitter, flat: str, n_rows: str, op: str) -> None:
    """Every index of `flat` in [0, n_rows), raising what eager's `op` raises otherwise:
    embedding and index_select IndexError "index out of range in self" (index_select first
    reports a negative index as RuntimeError naming the smallest one), index_add RuntimeError
    naming the first bad index."""
    k = em.fresh("k")
    if op == "index_add":
        em.emit(f"for {k} in range({flat}.size):")
        em.indent += 1
        em.emit(f"if {flat}[{k}] < 0 or {flat}[{k}] >= {n_rows}:")
        em.indent += 1
        em.raise_("RuntimeError", "index ", (f"{flat}[{k}]",),
                  " is out of bounds for dimension 0 with size ", (n_rows,))
        em.indent -= 2
        return
    lo, hi = em.fresh("lo"), em.fresh("hi")
    em.emit(f"{lo} = 0")
    em.emit(f"{hi} = -1")
    em.emit(f"for {k} in range({flat}.size):")
    em.emit(f"    {lo} = min({lo}, {flat}[{k}])")
    em.emit(f"    {hi} = max({hi}, {flat}[{k}])")
    if op == "index_select":
        em.emit(f"if {lo} < 0:")
        em.indent += 1
        em.raise_("IndexError", "INDICES element is out of DATA bounds, id=", (lo,),
                  " axis_dim=", (n_rows,))
        em.indent -= 1
    em.emit(f"if {lo} < 0 or {hi} >= {n_rows}:")
    em.indent += 1
    em.raise_("IndexError", "index out of range in self")
    em.indent -= 1


def _index_vector(em: Emitter, v: ir.Value) -> str:
    t = em.tensor(v)
    if t.dtype.category != dt.INT:  # eager raises PyTorch's dtype error
        raise NotLowered(f"index of dtype {t.dtype}")
    flat = em.fresh("ix")
    em.emit(f"{flat} = np.ascontiguousarray({em.name(v)}).reshape(-1)")
    return flat


def _gather_rows(em: Emitter, table: str, flat: str, out2: str) -> None:
    """out2[r, :] = table2[flat[r], :] with table viewed as (rows, width)."""
    r, j = em.fresh("r"), em.fresh("j")
    em.emit(f"for {r} in range({flat}.size):")
    em.indent += 1
    em.emit(f"for {j} in range({out2}.shape[1]):")
    em.indent += 1
    em.emit(f"{out2}[{r}, {j}] = {table}[{flat}[{r}], {j}]")
    em.indent -= 2


def _as_rows(em: Emitter, x: str) -> str:
    t2 = em.fresh("t2")
    em.emit(f"{t2} = np.ascontiguousarray({x}).reshape({x}.shape[0], -1) if {x}.shape[0] > 0 "
            f"else np.ascontiguousarray({x}).reshape(0, {x}.size)")
    return t2


def _gather(em: Emitter, n: ir.Node, table2: str, flat: str, shape: str) -> None:
    """n's output (shape `shape`, an expression tuple body) = rows `flat` of `table2`."""
    out, o2 = em.fresh("g"), em.fresh("o2")
    em.emit(f"{out} = np.empty(({shape}), {np_type(em.tensor(n.outputs[0]).dtype)})")
    em.emit(f"{o2} = {out}.reshape({flat}.size, {table2}.shape[1])")
    _gather_rows(em, table2, flat, o2)
    em.bind(n.outputs[0], out)


def _dim(em: Emitter, dim: ir.Value, rank: int, op: str) -> int:
    """The constant dim, normalised; NotLowered for a run-time or out-of-range one (eager
    raises PyTorch's IndexError for the latter)."""
    if not em.is_const(dim) or rank < 1:
        raise NotLowered(f"{op} along a run-time dim")
    d = em.const(dim)
    if not isinstance(d, int) or not -rank <= d < rank:
        raise NotLowered(f"{op} along dim {d!r} of a {rank}-d tensor")
    return d % rank


def _view3(em: Emitter, xs: str, rank: int, d: int) -> tuple:
    """(outer, inner) size expressions of viewing array `xs` as (outer, size(d), inner)."""
    outer = " * ".join(f"{xs}.shape[{k}]" for k in range(d)) or "1"
    inner = " * ".join(f"{xs}.shape[{k}]" for k in range(d + 1, rank)) or "1"
    return outer, inner


@lowers("embedding", target="cpu")
def lower_embedding(em: Emitter, n: ir.Node) -> None:
    idx, w = n.inputs[0], n.inputs[1]
    if em.tensor(w).ndim != 2:
        raise NotLowered("embedding of a table that is not 2-D")
    flat = _index_vector(em, idx)
    ws, xs = em.name(w), em.name(idx)
    _check_indices(em, flat, f"{ws}.shape[0]", "embedding")
    lead = "".join(f"{xs}.shape[{d}], " for d in range(em.tensor(idx).ndim))
    _gather(em, n, ws, flat, f"{lead}{ws}.shape[1], ")


@lowers("index_select", target="cpu")
def lower_index_select(em: Emitter, n: ir.Node) -> None:
    x, dim, index = n.inputs
    xt = em.tensor(x)
    d = _dim(em, dim, xt.ndim, "index_select")
    if em.tensor(index).ndim > 1:
        raise NotLowered("index_select with a multi-dim index")
    flat = _index_vector(em, index)
    xs = em.name(x)
    _check_indices(em, flat, f"{xs}.shape[{d}]", "index_select")
    if d == 0:
        rest = "".join(f"{xs}.shape[{k}], " for k in range(1, xt.ndim))
        _gather(em, n, _as_rows(em, xs), flat, f"{flat}.size, {rest}")
        return
    outer, inner = _view3(em, xs, xt.ndim, d)
    x3, out, o3 = em.fresh("x3"), em.fresh("g"), em.fresh("o3")
    em.emit(f"{x3} = np.ascontiguousarray({xs}).reshape({outer}, {xs}.shape[{d}], {inner})")
    shape = "".join(f"{flat}.size, " if k == d else f"{xs}.shape[{k}], " for k in range(xt.ndim))
    em.emit(f"{out} = np.empty(({shape}), {np_type(em.tensor(n.outputs[0]).dtype)})")
    em.emit(f"{o3} = {out}.reshape({outer}, {flat}.size, {inner})")
    a, r, j = em.fresh("a"), em.fresh("r"), em.fresh("j")
    em.emit(f"for {a} in range({o3}.shape[0]):")
    em.emit(f"    for {r} in range({flat}.size):")
    em.emit(f"        for {j} in range({o3}.shape[2]):")
    em.emit(f"            {o3}[{a}, {r}, {j}] = {x3}[{a}, {flat}[{r}], {j}]")
    em.bind(n.outputs[0], out)


@lowers("index_add", target="cpu")
def lower_index_add(em: Emitter, n: ir.Node) -> None:
    x, dim, index, source, alpha = n.inputs
    xt = em.tensor(x)
    axis = _dim(em, dim, xt.ndim, "index_add")
    if em.tensor(index).ndim > 1 or em.tensor(source).ndim != xt.ndim:
        raise NotLowered("index_add with these ranks")
    if em.tensor(source).dtype is not xt.dtype:
        raise NotLowered("index_add with mixed dtypes")
    flat = _index_vector(em, index)
    xs, ss = em.name(x), em.name(source)
    # eager's order: the source's other dims, the number of indices, then their bounds
    checks = [f"{ss}.shape[{k}] != {xs}.shape[{k}]" for k in range(xt.ndim) if k != axis]
    if checks:
        em.emit(f"if {' or '.join(checks)}:")
        em.indent += 1
        em.raise_("RuntimeError", "source tensor shape must match self tensor shape, excluding "
                  "the specified dimension. Got self.shape = ", *_sizes(xs, range(xt.ndim)),
                  " source.shape = ", *_sizes(ss, range(xt.ndim)))
        em.indent -= 1
    em.emit(f"if {ss}.shape[{axis}] != {flat}.size:")
    em.indent += 1
    em.raise_("RuntimeError", "index_add_(): Number of indices (", (f"{flat}.size",),
              ") should be equal to source.size(dim): (", (f"{ss}.shape[{axis}]",),
              f"), for dim: {axis}")
    em.indent -= 1
    _check_indices(em, flat, f"{xs}.shape[{axis}]", "index_add")
    out = em.fresh("iadd")
    em.emit(f"{out} = np.ascontiguousarray({xs}).copy()")
    # alpha in x's dtype, as eager multiplies (an integer tensor truncates it)
    d = xt.dtype
    if em.is_const(alpha):
        c = em.const(alpha)
        a = "1" if c == 1 else typed_literal(int(c) if d.category <= dt.INT else c, d)
    else:
        a = em.name(alpha)
        a = f"{np_type(d)}({f'int({a})' if d.category <= dt.INT else a})"
    r, j = em.fresh("r"), em.fresh("j")
    if axis == 0:
        o2, s2 = _as_rows(em, out), _as_rows(em, ss)
        em.emit(f"for {r} in range({flat}.size):")
        em.indent += 1
        em.emit(f"for {j} in range({o2}.shape[1]):")
        em.indent += 1
        scaled = f"{s2}[{r}, {j}]" if a == "1" else f"{s2}[{r}, {j}] * {a}"
        em.emit(f"{o2}[{flat}[{r}], {j}] += {scaled}")
        em.indent -= 2
        em.bind(n.outputs[0], out)
        return
    outer, inner = _view3(em, xs, xt.ndim, axis)
    o3, s3, b_ = em.fresh("o3"), em.fresh("s3"), em.fresh("b")
    em.emit(f"{o3} = {out}.reshape({outer}, {xs}.shape[{axis}], {inner})")
    em.emit(f"{s3} = np.ascontiguousarray({ss}).reshape({outer}, {flat}.size, {inner})")
    em.emit(f"for {b_} in range({o3}.shape[0]):")
    em.emit(f"    for {r} in range({flat}.size):")
    em.emit(f"        for {j} in range({o3}.shape[2]):")
    scaled = f"{s3}[{b_}, {r}, {j}]" if a == "1" else f"{s3}[{b_}, {r}, {j}] * {a}"
    em.emit(f"            {o3}[{b_}, {flat}[{r}], {j}] += {scaled}")
    em.bind(n.outputs[0], out)


def _sizes(xs: str, dims) -> list:
    """raise_ parts printing `[s0, s1]` (a Python list of sizes) for the dims of array xs."""
    parts = ["["]
    for k, d in enumerate(dims):
        parts += ([", "] if k else []) + [(f"{xs}.shape[{d}]",)]
    return parts + ["]"]


def _check_weight(em: Emitter, w: ir.Value, c: str) -> None:
    if em.is_const(w) and em.const(w) is None:
        return
    ws, wr = em.name(w), em.tensor(w).ndim
    em.emit(f"if {ws}.shape[0] != {c}:" if wr == 1 else "if True:")
    em.indent += 1
    em.raise_("RuntimeError", "weight tensor should be defined either for all ", (c,),
              " classes or no classes but got weight tensor of shape: ",
              *_sizes(ws, range(wr)))
    em.indent -= 1


@lowers("_class_index", target="cpu")
def lower_class_index(em: Emitter, n: ir.Node) -> None:
    """`_class_index(input, target, weight, ignore_index, loss)` (_ops/nn_loss.py): eager's
    checks of a loss's class targets in eager's order, then the bounds of every target that is
    not ignore_index; the result is the target array itself (the twins only read it)."""
    x, target, weight, ign, loss = n.inputs
    rin, rt = em.tensor(x).ndim, em.tensor(target).ndim
    if rin < 1:
        raise NotLowered("class targets of a 0-d input")  # the interpreter raises eager's error
    xs, ts = em.name(x), em.name(target)
    c = em.fresh("c")
    em.emit(f"{c} = {xs}.shape[{1 if rin > 1 else 0}]")
    ce = em.const(loss) == "cross_entropy"
    if ce:
        _check_weight(em, weight, c)
    if rin > 1:  # the batch sizes, then the whole target size (input's without the class dim)
        em.emit(f"if {ts}.shape[0] != {xs}.shape[0]:" if rt else "if True:")
        em.indent += 1
        em.raise_("ValueError", "Expected input batch_size (", (f"{xs}.shape[0]",),
                  ") to match target batch_size (", *((f"{ts}.shape[0]",) if rt else "None",),
                  ").")
        em.indent -= 1
    want = [0] + list(range(2, rin)) if rin > 1 else []
    if rt == len(want):
        bad = [f"{ts}.shape[{k}] != {xs}.shape[{d}]" for k, d in enumerate(want)]
    else:
        bad = ["True"]
    if bad:
        em.emit(f"if {' or '.join(bad)}:")
        em.indent += 1
        em.raise_("RuntimeError", "Expected target size ", *_sizes(xs, want), ", got ",
                  *_sizes(ts, range(rt)))
        em.indent -= 1
    if not ce:
        _check_weight(em, weight, c)
    flat, k, v = em.fresh("tg"), em.fresh("k"), em.fresh("t")
    em.emit(f"{flat} = np.ascontiguousarray({ts}).reshape(-1)")
    em.emit(f"for {k} in range({flat}.size):")
    em.indent += 1
    em.emit(f"{v} = np.int64({flat}[{k}])")
    em.emit(f"if {v} != {em.name(ign)} and ({v} < 0 or {v} >= {c}):")
    em.indent += 1
    em.raise_("IndexError", "Target ", (v,), " is out of bounds.")
    em.indent -= 2
    em.bind(n.outputs[0], ts)
