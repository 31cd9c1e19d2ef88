"""Lowering of row gathers and scatters: `embedding`, `index_select` and `index_add` along dim 0.

These are what an embedding layer and its backward need (the backward of `embedding` is
`zeros.index_add(0, idx, rows)`, of `index_select` the same). Every index is bounds-checked
with PyTorch's message before any row is read or written (a bad token id raises IndexError,
never reads outside the table). Rows are copied with a flat inner loop, so one program serves
any table width and index shape. Other dims keep the interpreter (NotLowered).
"""
from __future__ import annotations

from ... import _dtype as dt
from .. import ir
from . import NotLowered, literal
from .cpu import Emitter, np_type


def _check_indices(em: Emitter, flat: str, n_rows: str, what: str) -> None:
    k = em.fresh("k")
    em.emit(f"for {k} in range({flat}.size):")
    em.indent += 1
    em.emit(f"if {flat}[{k}] < 0 or {flat}[{k}] >= {n_rows}:")
    em.indent += 1
    em.raise_("IndexError", f"{what}: index out of range in self")
    em.indent -= 2


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


def _check_dim0(em: Emitter, dim: ir.Value, rank: int, op: str) -> None:
    if not em.is_const(dim) or em.const(dim) not in (0, -rank) or rank < 1:
        raise NotLowered(f"{op} along a dim other than 0")


def lower_embedding(em: Emitter, n: ir.Node) -> None:
    idx, w = n.inputs[0], n.inputs[1]
    if em.tensor(w).ndim != 2:
        raise NotLowered("embedding of a table that is not 2-D")
    flat = _index_vector(em, idx)
    ws, xs = em.name(w), em.name(idx)
    _check_indices(em, flat, f"{ws}.shape[0]", "embedding")
    lead = "".join(f"{xs}.shape[{d}], " for d in range(em.tensor(idx).ndim))
    _gather(em, n, ws, flat, f"{lead}{ws}.shape[1], ")


def lower_index_select(em: Emitter, n: ir.Node) -> None:
    x, dim, index = n.inputs
    xt = em.tensor(x)
    _check_dim0(em, dim, xt.ndim, "index_select")
    if em.tensor(index).ndim > 1:
        raise NotLowered("index_select with a multi-dim index")
    flat = _index_vector(em, index)
    xs = em.name(x)
    _check_indices(em, flat, f"{xs}.shape[0]", "index_select")
    rest = "".join(f"{xs}.shape[{d}], " for d in range(1, xt.ndim))
    _gather(em, n, _as_rows(em, xs), flat, f"{flat}.size, {rest}")


def lower_index_add(em: Emitter, n: ir.Node) -> None:
    x, dim, index, source, alpha = n.inputs
    xt = em.tensor(x)
    _check_dim0(em, dim, xt.ndim, "index_add")
    if em.tensor(index).ndim > 1 or em.tensor(source).ndim != xt.ndim:
        raise NotLowered("index_add with these ranks")
    if em.tensor(source).dtype is not xt.dtype:
        raise NotLowered("index_add with mixed dtypes")
    flat = _index_vector(em, index)
    xs, ss = em.name(x), em.name(source)
    _check_indices(em, flat, f"{xs}.shape[0]", "index_add")
    checks = [f"{ss}.shape[0] != {flat}.size"] + [
        f"{ss}.shape[{d}] != {xs}.shape[{d}]" for d in range(1, xt.ndim)]
    em.emit(f"if {' or '.join(checks)}:")
    em.indent += 1
    em.raise_("RuntimeError", "index_add_(): source and index shapes do not match self")
    em.indent -= 1
    out = em.fresh("iadd")
    em.emit(f"{out} = np.ascontiguousarray({xs}).copy()")
    o2, s2 = _as_rows(em, out), _as_rows(em, ss)
    a = em.name(alpha) if not em.is_const(alpha) else literal.number(em.const(alpha))
    r, j = em.fresh("r"), em.fresh("j")
    em.emit(f"for {r} in range({flat}.size):")
    em.indent += 1
    em.emit(f"for {j} in range({o2}.shape[1]):")
    em.indent += 1
    scaled = f"{s2}[{r}, {j}]" if a in ("1", "1.0") else f"{s2}[{r}, {j}] * {a}"
    em.emit(f"{o2}[{flat}[{r}], {j}] += {scaled}")
    em.indent -= 2
    em.bind(n.outputs[0], out)


LOWER = {"embedding": lower_embedding, "index_select": lower_index_select,
         "index_add": lower_index_add}
