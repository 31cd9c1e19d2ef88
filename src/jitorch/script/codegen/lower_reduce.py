"""Lowering of reductions (sum, mean, prod, amax, amin over dims, keepdim) to loops.

When the reduced dims are the trailing dims (the common `x.sum(-1)`), the inner loops keep a
scalar accumulator (vectorised under fastmath "reassoc"); otherwise the output is filled with
the identity and accumulated in input order (contiguous reads). amax/amin propagate NaN like
PyTorch and raise PyTorch's error on an empty reduced dim. Integer/bool sums and products
accumulate in int64 (PyTorch's result dtype); mean of integers is not lowered (eager raises).
"""
from __future__ import annotations

from ... import _dtype as dt
from .. import ir
from ..passes.types import norm_dims, reduction_dtype
from . import NotLowered
from .cpu import Emitter, np_type, typed_literal


def _identity(op: str, d: dt.dtype) -> str:
    if op in ("sum", "mean"):
        return typed_literal(0, d)
    if op == "prod":
        return typed_literal(1, d)
    if d.category == dt.FLOAT:
        return f"{np_type(d)}({'-' if op == 'amax' else ''}np.inf)"
    info = {"amax": "min", "amin": "max"}[op]
    return f"np.iinfo({np_type(d)}).{info}"


def _combine(op: str, acc: str, v: str, d: dt.dtype) -> list:
    if op in ("sum", "mean"):
        return [f"{acc} = {acc} + {v}"]
    if op == "prod":
        return [f"{acc} = {acc} * {v}"]
    cmp = ">" if op == "amax" else "<"
    if d.category == dt.FLOAT:
        return [f"if {v} {cmp} {acc} or np.isnan({v}):", f"    {acc} = {v}"]
    return [f"if {v} {cmp} {acc}:", f"    {acc} = {v}"]


def vector_combine(op: str, acc: str, v: str, d: dt.dtype, flag: str | None) -> list:
    """Like `_combine`, but a float amax/amin keeps a NaN flag (`flag |= isnan(v)`, set to False
    before the loop; `nan_fixup` after it) instead of branching on NaN: LLVM vectorises
    `max(acc, v)` and an or-reduction, not the branch (measured ~10% of a layer norm+softmax)."""
    if op in ("amax", "amin") and d.category == dt.FLOAT and flag is not None:
        return [f"{acc} = {'max' if op == 'amax' else 'min'}({acc}, {v})",
                f"{flag} = {flag} | np.isnan({v})"]
    return _combine(op, acc, v, d)


def nan_fixup(op: str, acc: str, d: dt.dtype, flag: str | None) -> list:
    if op in ("amax", "amin") and d.category == dt.FLOAT and flag is not None:
        return [f"if {flag}:", f"    {acc} = {np_type(d)}(np.nan)"]
    return []


def _row_extreme(em: Emitter, op: str, xs: str, lead: list, n: str, acc: str,
                 d: dt.dtype) -> None:
    """amax/amin of the row `xs[lead..., :]` (n >= 1, checked before): a vectorised NaN test,
    then lower_rows' unrolled helper (LLVM does not vectorise a float max reduction: 6x)."""
    from .lower_rows import _row_helper
    row, flag, j = em.fresh("row"), em.fresh("nan"), em.fresh("j")
    em.emit(f"{row} = {xs}[{''.join(i + ', ' for i in lead)}:]")
    em.emit(f"{flag} = False")
    em.emit(f"for {j} in range({n}):")
    em.emit(f"    {flag} = {flag} | np.isnan({row}[{j}])")
    em.emit(f"{acc} = {_row_helper(em, op)}({row}, {n})")
    for line in nan_fixup(op, acc, d, flag):
        em.emit(line)


def lower_reduction(em: Emitter, n: ir.Node) -> None:
    x = n.inputs[0]
    t = em.tensor(x)
    out_t = em.tensor(n.outputs[0])
    op = n.op
    dim, keepdim = em.const(n.inputs[1]), em.const(n.inputs[2])
    dtype = em.const(n.inputs[3]) if len(n.inputs) > 3 else None
    try:
        acc_d = reduction_dtype(op, t, dtype)
    except TypeError:
        raise NotLowered(f"op {op}: mean of an integer tensor")
    if t.dtype is dt.bool and op in ("amax", "amin"):
        raise NotLowered(f"op {op} on bool")
    if acc_d is not out_t.dtype:
        raise NotLowered(f"op {op}: result dtype mismatch")
    r = t.ndim
    try:
        dims = norm_dims(dim, r)
    except IndexError:
        raise NotLowered(f"op {op}: dim {dim} out of range")
    xs = em.name(x)
    red = [d for d in dims if d < r]
    kept = [d for d in range(r) if d not in red]
    if op in ("amax", "amin"):
        for d in red:
            em.emit(f"if {xs}.shape[{d}] == 0:")
            em.indent += 1
            em.raise_("IndexError", f"{op}(): Expected reduction dim {d} to have non-zero size.")
            em.indent -= 1
    shape = [f"{xs}.shape[{d}]" if d in kept else "1" for d in range(r)]
    if not keepdim:
        shape = [s for d, s in zip(range(r), shape) if d in kept]
    out = em.fresh("red")
    em.emit(f"{out} = np.empty(({''.join(s + ', ' for s in shape)}), {np_type(acc_d)})")
    idx = {d: em.fresh("i") for d in range(r)}

    def out_index():
        if keepdim:
            parts = [idx[d] if d in kept else "0" for d in range(r)]
        else:
            parts = [idx[d] for d in kept]
        return ", ".join(parts) if parts else "()"

    x_index = ", ".join(idx[d] for d in range(r)) if r else "()"
    load = f"{xs}[{x_index}]"
    if t.dtype is not acc_d:
        load = f"{np_type(acc_d)}({load})"
    count = " * ".join([f"{xs}.shape[{d}]" for d in red]) or "1"
    base = em.indent
    suffix = red == list(range(r - len(red), r))
    acc = em.fresh("acc")
    v = em.fresh("v")
    if suffix:
        for d in kept:
            em.emit(f"for {idx[d]} in range({xs}.shape[{d}]):")
            em.indent += 1
        em.emit(f"{acc} = {_identity(op, acc_d)}")
        inner = em.indent
        if red == [r - 1] and op in ("amax", "amin") and acc_d.category == dt.FLOAT and \
                t.dtype is acc_d:
            _row_extreme(em, op, xs, [idx[d] for d in kept], f"{xs}.shape[{r - 1}]", acc,
                         acc_d)
        else:
            for d in red:
                em.emit(f"for {idx[d]} in range({xs}.shape[{d}]):")
                em.indent += 1
            em.emit(f"{v} = {load}")
            for line in _combine(op, acc, v, acc_d):
                em.emit(line)
        em.indent = inner
        if op == "mean":
            em.emit(f"{acc} = {acc} / {np_type(acc_d)}({count})")
        em.emit(f"{out}[{out_index()}] = {acc}")
        em.indent = base
    else:
        flat = em.fresh("flat")
        em.emit(f"{flat} = {out}.reshape(-1)")
        k = em.fresh("k")
        em.emit(f"for {k} in range({flat}.size):")
        em.emit(f"    {flat}[{k}] = {_identity(op, acc_d)}")
        for d in range(r):
            em.emit(f"for {idx[d]} in range({xs}.shape[{d}]):")
            em.indent += 1
        em.emit(f"{v} = {load}")
        em.emit(f"{acc} = {out}[{out_index()}]")
        for line in _combine(op, acc, v, acc_d):
            em.emit(line)
        em.emit(f"{out}[{out_index()}] = {acc}")
        em.indent = base
        if op == "mean":
            em.emit(f"for {k} in range({flat}.size):")
            em.emit(f"    {flat}[{k}] = {flat}[{k}] / {np_type(acc_d)}({count})")
    em.bind(n.outputs[0], out)


LOWER = {"sum": lower_reduction, "mean": lower_reduction, "prod": lower_reduction,
         "amax": lower_reduction, "amin": lower_reduction}
