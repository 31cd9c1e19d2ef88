"""Lowering of reductions (sum, mean, prod, amax, amin over dims, keepdim) to loops.

When the reduced dims are the trailing dims (the common `x.sum(-1)`), the inner loops keep a
scalar accumulator (vectorised under fastmath "reassoc"); otherwise the output is filled with
the identity and accumulated in input order (contiguous reads). amax/amin propagate NaN like
PyTorch and raise PyTorch's error on an empty reduced dim (`_max_shift`, the softmax twins'
shift, is amax giving 0 there instead). Integer/bool sums and products accumulate in int64
(PyTorch's result dtype); mean of integers is not lowered (eager raises).

Float sums and means are accurate on long rows (NumPy sums pairwise, PyTorch in cascades; a
sequential float32 sum of 2**24 + 40 ones is 2**24): a scalar accumulator runs over blocks of
`BLOCK` elements (vectorised inside a block, so each SIMD lane adds only BLOCK / lanes terms)
and each block's partial sum is added to a float64 total (`blocked_head` / `blocked_tail`,
also used by the fused reductions of lower_elementwise.py and the row regions of
lower_rows.py). An accumulation into the output (reduced dims that are not trailing) of a
float32 sum runs over blocks of BLOCK rows of dim 0 in float32, each added to a float64 total
(`x.sum(0)`), or into a float64 buffer when dim 0 is kept.
"""
from __future__ import annotations

from .... import _dtype as dt
from ... import ir
from ...passes.types import norm_dims, reduction_dtype
from ...codegen import NotLowered
from ...codegen.emitter import Emitter, np_type, typed_literal
from ...codegen.lowering import lowers


# elements per block of a blocked float sum: 512 measured within ~5% of an unblocked
# vectorised loop from 1e3 to 1e7 float32 elements (128: up to 30% slower), and a block small
# enough that a loop LLVM does not vectorise (strided reads) still adds few terms in sequence
BLOCK = 512
BLOCKED = True  # False: sequential float sums, as before (bench/accurate_reduce.py compares)


def blocked(op: str, d: dt.dtype) -> bool:
    """Does a reduction `op` accumulating in `d` take the blocked form?"""
    return BLOCKED and op in ("sum", "mean") and d.category == dt.FLOAT


def blocked_head(em: Emitter, var: str, length: str, accs) -> None:
    """Open the blocked form of `for var in range(length):`: blocks of BLOCK elements, each
    starting the sums `accs` ([(name, dtype)]) at 0. The index is `lo + jj` from 0 (LLVM
    vectorises that; a `range(lo, hi)` index defeats its proof that the index is >= 0)."""
    b, lo, jj = em.fresh("b"), em.fresh("lo"), em.fresh("jj")
    em.emit(f"for {b} in range(({length} + {BLOCK - 1}) // {BLOCK}):")
    em.indent += 1
    em.emit(f"{lo} = {b} * {BLOCK}")
    for acc, d in accs:
        em.emit(f"{acc} = {_identity('sum', d)}")
    em.emit(f"for {jj} in range(min({BLOCK}, {length} - {lo})):")
    em.indent += 1
    em.emit(f"{var} = {lo} + {jj}")


def blocked_tail(em: Emitter, accs, totals) -> None:
    """Close `blocked_head`'s loops: each block's sum goes into its float64 total (set to 0.0
    by the caller before the reduced loops; the result is `dtype(total)`)."""
    em.indent -= 1
    for (acc, _), tot in zip(accs, totals):
        em.emit(f"{tot} = {tot} + np.float64({acc})")
    em.indent -= 1


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


@lowers("sum", "mean", "prod", "amax", "amin", "_max_shift", target="cpu")
def lower_reduction(em: Emitter, n: ir.Node) -> None:
    x = n.inputs[0]
    t = em.tensor(x)
    out_t = em.tensor(n.outputs[0])
    shift = n.op == "_max_shift"  # amax, 0 over an empty dim (no error)
    op = "amax" if shift else n.op
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
    if op in ("amax", "amin") and not shift:
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
    v = em.fresh("v")
    if suffix:
        for d in kept:
            em.emit(f"for {idx[d]} in range({xs}.shape[{d}]):")
            em.indent += 1
        acc = _suffix_accumulate(em, op, shift, xs, red, kept, idx, load, v, acc_d,
                                 t.dtype is not acc_d)
        if op == "mean":
            em.emit(f"{acc} = {acc} / {np_type(acc_d)}({count})")
        if shift:
            em.emit(f"if {count} == 0:")
            em.emit(f"    {acc} = {typed_literal(0, acc_d)}")
        em.emit(f"{out}[{out_index()}] = {acc}")
        em.indent = base
    else:
        _accumulate_into(em, op, shift, xs, r, red, idx, out, out_index(), load, v, acc_d,
                         count)
    em.bind(n.outputs[0], out)


def _accumulate_into(em, op, shift, xs, r, red, idx, out, oi, load, v, acc_d, count) -> None:
    """Reduced dims that are not all trailing: accumulate into the output in input order
    (contiguous reads). A float32 sum must not add each output element's terms one by one in
    float32: when dim 0 is reduced (`x.sum(0)`, batch norm's (0, 2)) it runs over blocks of
    BLOCK rows into a float32 buffer added to a float64 total after each block (the inner loops
    stay float32 and vectorised); otherwise it accumulates in a float64 buffer."""
    wide = blocked(op, acc_d) and acc_d is dt.float32
    rows = wide and 0 in red
    base = em.indent
    flat, k = em.fresh("flat"), em.fresh("k")
    em.emit(f"{flat} = {out}.reshape(-1)")
    acc_buf, total = out, flat
    if wide:
        tot = em.fresh("tot")
        total = em.fresh("tflat")
        em.emit(f"{tot} = np.empty({out}.shape, np.float64)")
        em.emit(f"{total} = {tot}.reshape(-1)")
        acc_buf = em.fresh("blk") if rows else tot
        if rows:
            em.emit(f"{acc_buf} = np.empty({out}.shape, {np_type(acc_d)})")
    ident = _identity(op, dt.float64 if wide else acc_d)
    em.emit(f"for {k} in range({flat}.size):")
    em.emit(f"    {total}[{k}] = {ident}")
    bflat = em.fresh("bflat")
    if rows:  # blocks over dim 0, each summed in float32, then added to the float64 total
        b, lo, jj = em.fresh("b"), em.fresh("lo"), em.fresh("jj")
        em.emit(f"{bflat} = {acc_buf}.reshape(-1)")
        em.emit(f"for {b} in range(({xs}.shape[0] + {BLOCK - 1}) // {BLOCK}):")
        em.indent += 1
        em.emit(f"{lo} = {b} * {BLOCK}")
        em.emit(f"for {k} in range({flat}.size):")
        em.emit(f"    {bflat}[{k}] = {_identity(op, acc_d)}")
        em.emit(f"for {jj} in range(min({BLOCK}, {xs}.shape[0] - {lo})):")
        em.indent += 1
        em.emit(f"{idx[0]} = {lo} + {jj}")
    else:
        em.emit(f"for {idx[0]} in range({xs}.shape[0]):")
        em.indent += 1
    for d in range(1, r):
        em.emit(f"for {idx[d]} in range({xs}.shape[{d}]):")
        em.indent += 1
    em.emit(f"{v} = {f'np.float64({load})' if wide and not rows else load}")
    acc = em.fresh("acc")
    em.emit(f"{acc} = {acc_buf}[{oi}]")
    for line in _combine(op, acc, v, acc_d):
        em.emit(line)
    em.emit(f"{acc_buf}[{oi}] = {acc}")
    if rows:
        em.indent = base + 1
        em.emit(f"for {k} in range({flat}.size):")
        em.emit(f"    {total}[{k}] = {total}[{k}] + np.float64({bflat}[{k}])")
    em.indent = base
    if op == "mean" or wide or shift:
        div = f" / {'np.float64' if wide else np_type(acc_d)}({count})"
        val = f"{total}[{k}]" + (div if op == "mean" else "")
        if shift:
            val = f"{val} if {count} > 0 else {typed_literal(0, acc_d)}"
        em.emit(f"for {k} in range({flat}.size):")
        em.emit(f"    {flat}[{k}] = {np_type(acc_d)}({val})" if wide else
                f"    {flat}[{k}] = {val}")


def _suffix_accumulate(em, op, shift, xs, red, kept, idx, load, v, acc_d, cast) -> str:
    """The reduction over the trailing dims `red` at the current kept index: returns the name
    of its accumulated value (blocked for float sums). `cast`: the load converts dtypes."""
    acc = em.fresh("acc")
    inner = em.indent
    r = len(idx)
    if red == [r - 1] and op in ("amax", "amin") and acc_d.category == dt.FLOAT and not cast:
        n = f"{xs}.shape[{r - 1}]"
        em.emit(f"{acc} = {_identity(op, acc_d)}")
        if shift:  # the helper reads the row's first element: not on an empty row
            em.emit(f"if {n} > 0:")
            em.indent += 1
        _row_extreme(em, op, xs, [idx[d] for d in kept], n, acc, acc_d)
        em.indent = inner
        return acc
    if not red or not blocked(op, acc_d):
        em.emit(f"{acc} = {_identity(op, acc_d)}")
        for d in red:
            em.emit(f"for {idx[d]} in range({xs}.shape[{d}]):")
            em.indent += 1
        em.emit(f"{v} = {load}")
        for line in _combine(op, acc, v, acc_d):
            em.emit(line)
        em.indent = inner
        return acc
    tot, blk = em.fresh("tot"), em.fresh("blk")
    em.emit(f"{tot} = 0.0")
    for d in red[:-1]:
        em.emit(f"for {idx[d]} in range({xs}.shape[{d}]):")
        em.indent += 1
    blocked_head(em, idx[red[-1]], f"{xs}.shape[{red[-1]}]", [(blk, acc_d)])
    em.emit(f"{v} = {load}")
    for line in _combine(op, blk, v, acc_d):
        em.emit(line)
    blocked_tail(em, [(blk, acc_d)], [tot])
    em.indent = inner
    em.emit(f"{acc} = {np_type(acc_d)}({tot})")
    return acc
