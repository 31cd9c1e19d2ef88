"""Lowering of row regions (`prim::Fused[kind='rows']`, passes/fuse_rows.py) to one loop nest.

A row region chains last-dim keepdim reductions and elementwise ops whose broadcasts run along
the reduced dim (softmax, log-softmax, layer norm, RMSNorm). It becomes one outer loop nest over
the rows (every dim but the last) holding several inner passes over the row:

- a value is *per-row* (a reduction result, or computed from per-row values and scalars only: a
  scalar local of the outer loop) or *full* (it reads a tensor input along the row);
- a full value's *level* is the pass that can compute it: 0 for what reads only inputs, p + 1
  for what reads the result of a reduction done in pass p; a reduction runs in its input's pass;
- pass p computes the full values of level p that its reductions, later passes or the outputs
  need; a full value that a later pass reads is kept in a row-sized scratch buffer (the row
  stays in L1), so nothing full-size is allocated except the outputs.

A tensor input read along the row has the row's length D (the broadcast last dim) or 1 (broadcast
along it: a saved per-row statistic of shape (..., 1) in a layer norm's backward, a per-row
scale). There is one nest for both: where more than one input is read along the row, their
loads carry a 0/1 multiplier on the row index (LLVM versions the loop on it: no slower than
plain indexing), and so do the stores of full outputs that do not depend on every such input
(their last dim may be 1). Every reduction then runs over D; that is its own length unless
every input it reads along the row has last dim 1 while D > 1 (a softmax of a (..., 1) input
scaled by a (..., D) one), which is checked before the loops and hands that call to the
interpreter, as `loop_shape` does for a reduced input of another row length. Why one nest: a
second, general nest for ragged rows doubled the compile cost of every row kernel with two
row-read inputs (0.5-0.8 CPU-s each; issue 17), and it was the nest that ran for every layer
norm backward. Reductions accumulate in their result dtype; sums
(and logsumexp's sum of exponentials) run over blocks of the row with float64 totals, like
`lower_reduce.py`'s, so a long row sums as accurately as NumPy's pairwise sum. amax/amin
propagate NaN and raise PyTorch's error on an empty row (`_max_shift`, the softmax twins' max,
gives 0 there).
"""
from __future__ import annotations

from ...._ops import registry
from ... import ir
from ...passes.fuse_rows import ROW_REDUCE
from ...codegen import NotLowered
from ...codegen.elementwise import broadcast_size, scalar_expr
from ...codegen.emitter import Emitter, np_type
from ...codegen.rows import RowPlan, output_shape


def is_rows(block: ir.Block) -> bool:
    """Does this fused block broadcast a reduction result back along the row?"""
    red = {n.outputs[0].uid for n in block.nodes if n.op in ROW_REDUCE and n.outputs}
    return any(v.uid in red for n in block.nodes for v in n.inputs)


class _Plan(RowPlan):
    """The region's values (codegen/rows.RowPlan) and the CPU's schedule of them: each value's
    level (the pass it is computed in), the pass of each reduction of a full value, and the
    full values a later pass reads (kept in a row buffer)."""

    def __init__(self, em: Emitter, block: ir.Block, inputs: list):
        super().__init__(em, block, inputs)
        # more than one input read along the row: each may be broadcast along it (last dim 1)
        self.ragged = sum(1 for _, _, r in self.ext if r) > 1
        self.level = {p.uid: 0 for p in block.params}  # value uid -> level
        self.red_pass = {}  # id(reduction node with a full input) -> its pass
        self.lse_pass = {}  # id(logsumexp node) -> the pass of its sum (its max: red_pass)
        self.lse_m = {}     # id(logsumexp node) -> name of its row's (finite) max
        for n in self.nodes:
            lvl = max([self.level[v.uid] for v in self.operands(n)], default=0)
            if n.op in ROW_REDUCE and self.full[n.inputs[0].uid]:
                self.red_pass[id(n)] = lvl
                if n.op == "logsumexp":  # a max pass, then a sum of exp(x - max) pass
                    lvl += 1
                    self.lse_pass[id(n)] = lvl
                lvl += 1
            self.level[n.outputs[0].uid] = lvl
        self.buffered = []
        seen = set()
        for n in self.nodes:
            if id(n) not in self.lse_pass and (n.op in ROW_REDUCE or
                                               not self.full[n.outputs[0].uid]):
                continue
            for v in n.inputs:
                if v.uid in seen or v.node is None or v.uid not in self.full:
                    continue
                if self.full[v.uid] and self.level[v.uid] < self.level[n.outputs[0].uid]:
                    seen.add(v.uid)
                    self.buffered.append(v)


def lower_rows(em: Emitter, block: ir.Block, inputs: list, outputs: list) -> None:
    from ...codegen.elementwise import loop_shape as _loop_shape
    plan = _Plan(em, block, inputs)
    rank = plan.rank
    sizes, mult = _loop_shape(em, plan.ext, rank, rows=True)
    _check_lengths(em, plan, sizes[-1])
    outs = _alloc_outputs(em, plan, sizes)
    _nest(em, plan, sizes, mult, outs)
    for (o, _, _), v in zip(outs, outputs):
        em.bind(v, o)


def _row_read(plan: _Plan, v) -> set:
    """The tensor inputs that value `v` reads along the row."""
    return {k for k, f in plan.deps[v.uid].items() if f}


def _check_lengths(em, plan: _Plan, d_row) -> None:
    """Hand the call to the interpreter where a reduction's own row length is not the nest's:
    every input it reads along the row broadcasts along it (last dim 1) while another has
    more (see the module docstring). Static where it reads every row-read input."""
    every = {p.uid for p, _, r in plan.ext if r}
    seen = set()
    for n in plan.nodes:
        own = _row_read(plan, n.inputs[0]) if id(n) in plan.red_pass else every
        if own >= every or frozenset(own) in seen:
            continue
        seen.add(frozenset(own))
        ln = broadcast_size(em, [f"{x}.shape[{r - 1}]" for p, x, r in plan.ext
                                 if r and p.uid in own])
        em.emit(f"if {ln} != {d_row}:")
        em.indent += 1
        em.raise_in_interpreter()
        em.indent -= 1


def _alloc_outputs(em, plan: _Plan, sizes) -> list:
    """Each returned value: allocated with the broadcast shape of what it depends on; with it
    the multipliers its stores use (the last one None where its last dim is the row's)."""
    every = {p.uid for p, _, r in plan.ext if r}
    outs = []
    for r in plan.returns:
        parts, om = output_shape(em, plan, r)
        if not plan.ragged or _row_read(plan, r) >= every:
            om[-1] = None
        o = em.fresh("out")
        em.emit(f"{o} = np.empty(({''.join(s + ', ' for s in parts)}), "
                f"{np_type(plan.dtype[r.uid])})")
        outs.append((o, om, r))
    return outs


def _open_rows(em, rank, sizes) -> list:
    idx = [em.fresh("i") for _ in range(rank)]
    for d in range(rank - 1):
        em.emit(f"for {idx[d]} in range({sizes[d]}):")
        em.indent += 1
    return idx


def _row_locals(em, plan: _Plan, mult, idx) -> dict:
    local = {p.uid: (nm, d) for p, nm, d in plan.scalars}
    for p, x, r in plan.ext:
        if r == 0:
            nm = em.fresh("x")
            em.emit(f"{nm} = {x}[()]")
            local[p.uid] = (nm, plan.dtype[p.uid])
    return local


def _load_full(em, plan: _Plan, v, local, mult, idx) -> None:
    """Load a full tensor input's element of this row at `idx[-1]` (through its multiplier
    where it may broadcast along the row)."""
    rank = plan.rank
    for p, x, r in plan.ext:
        if p.uid == v.uid:
            parts = [f"{idx[rank - r + k]} * {mult[p.uid][k]}" for k in range(r)]
            if not plan.ragged:
                parts[-1] = idx[-1]
            nm = em.fresh("x")
            em.emit(f"{nm} = {x}[{', '.join(parts)}]")
            local[v.uid] = (nm, plan.dtype[v.uid])
            return
    raise NotLowered(f"row region: {v} is not an input")


def _emit_full(em, plan: _Plan, v, local, mult, idx, bufs, level) -> None:
    """Make the full value `v` available in the current inner loop (loads, members, buffers)."""
    if v.uid in local or v.uid in plan.consts:
        return
    if v.node is None:
        _load_full(em, plan, v, local, mult, idx)
        return
    if v.uid in bufs and plan.level[v.uid] < level:
        nm = em.fresh("b")
        em.emit(f"{nm} = {bufs[v.uid]}[{idx[-1]}]")
        local[v.uid] = (nm, plan.dtype[v.uid])
        return
    from ...codegen.elementwise import emit_member as _emit_member
    n = v.node
    for u in n.inputs:
        if u.uid not in plan.consts and plan.full.get(u.uid):
            _emit_full(em, plan, u, local, mult, idx, bufs, level)
    _emit_member(em, n, local, plan.consts)


def _row_node(em, plan: _Plan, n, local, outs, idx) -> None:
    """A per-row node in the outer loop (an elementwise op of per-row values, or a reduction
    of a per-row value, which is that value)."""
    from ...codegen.casts import cast as _cast
    from ...codegen.elementwise import emit_member as _emit_member
    o = n.outputs[0]
    if n.op in ROW_REDUCE:
        e, d = local[n.inputs[0].uid]
        nm = em.fresh("t")
        em.emit(f"{nm} = {_cast(e, d, plan.dtype[o.uid])}")
        local[o.uid] = (nm, plan.dtype[o.uid])
    else:
        _emit_member(em, n, local, plan.consts)
    _store_row(em, plan, o, local, outs, idx)


def _store_row(em, plan, v, local, outs, idx) -> None:
    for o, om, r in outs:
        if r.uid == v.uid:
            ix = [f"{idx[d]} * {om[d]}" for d in range(plan.rank - 1)] + ["0"]
            em.emit(f"{o}[{', '.join(ix)}] = {local[v.uid][0]}")


def _store_full(em, plan, v, local, outs, idx) -> None:
    for o, om, r in outs:
        if r.uid == v.uid:
            ix = [f"{idx[d]} * {om[d]}" for d in range(plan.rank - 1)]
            ix.append(idx[-1] if om[-1] is None else f"{idx[-1]} * {om[-1]}")
            em.emit(f"{o}[{', '.join(ix)}] = {local[v.uid][0]}")


def _reduce_loop(em, plan: _Plan, reds, length, row_local, mult, idx, bufs,
                 level, stores, outs, scratch, lse2) -> None:
    """One inner loop: accumulate `reds`, compute and keep `stores` (buffers, outputs).

    An amax/amin keeps only a NaN flag in the loop and takes the maximum
    of its input's row buffer (`scratch` or the value's own buffer) after it, with
    `_row_amax`/`_row_amin`: LLVM vectorises neither a max reduction nor its NaN branch, and the
    helper's eight independent chains ran 6x faster than one. A logsumexp takes its row's max
    as a reduction of `reds` and its sum of exp(x - max) as one of `lse2` (the next pass)."""
    from . import lower_reduce
    from ...codegen.casts import cast as _cast
    accs = []
    for n in reds:
        d, op = plan.dtype[n.outputs[0].uid], _op1(n)
        acc, flag = em.fresh("acc"), None
        em.emit(f"{acc} = {lower_reduce._identity(op, d)}")
        if op in ("amax", "amin"):
            flag = em.fresh("nan")
            em.emit(f"{flag} = False")
        accs.append((n, acc, d, flag))
    sums = []
    for n in lse2:
        d = plan.dtype[n.outputs[0].uid]
        acc = em.fresh("acc")
        em.emit(f"{acc} = {lower_reduce._identity('sum', d)}")
        sums.append((n, acc, d))
    # float sums over the row in blocks with float64 totals (lower_reduce.blocked_head)
    wide = [(acc, d) for n, acc, d, _ in accs if lower_reduce.blocked(_op1(n), d)] + \
        [(acc, d) for _, acc, d in sums]
    totals = [em.fresh("tot") for _ in wide]
    loop_base = em.indent
    for tot in totals:
        em.emit(f"{tot} = 0.0")
    if wide:
        lower_reduce.blocked_head(em, idx[-1], length, wide)
    else:
        em.emit(f"for {idx[-1]} in range({length}):")
        em.indent += 1
    local = dict(row_local)
    for n, acc, d, flag in accs:
        x = n.inputs[0]
        _emit_full(em, plan, x, local, mult, idx, bufs, level)
        e, xd = local[x.uid]
        v = em.fresh("v")
        em.emit(f"{v} = {_cast(e, xd, d)}")
        if _via_buffer(n, plan, bufs, scratch, level):
            em.emit(f"{flag} = {flag} | np.isnan({v})")
            if id(n) in scratch:
                em.emit(f"{scratch[id(n)]}[{idx[-1]}] = {v}")
            continue
        for line in lower_reduce.vector_combine(_op1(n), acc, v, d, flag):
            em.emit(line)
    for n, acc, d in sums:
        x = n.inputs[0]
        _emit_full(em, plan, x, local, mult, idx, bufs, level)
        e, xd = local[x.uid]
        ex = scalar_expr(em, registry.OPS["exp"], d, {"input": f"{_cast(e, xd, d)} - "
                                                            f"{plan.lse_m[id(n)]}"}, {})
        em.emit(f"{acc} = {acc} + {np_type(d)}({ex})")
    for v in stores:  # every value first, then the writes: a reused buffer is read first
        _emit_full(em, plan, v, local, mult, idx, bufs, level)
    for v in stores:
        if v.uid in bufs:
            em.emit(f"{bufs[v.uid]}[{idx[-1]}] = {local[v.uid][0]}")
        _store_full(em, plan, v, local, outs, idx)
    if wide:
        lower_reduce.blocked_tail(em, wide, totals)
        for (acc, d), tot in zip(wide, totals):
            em.emit(f"{acc} = {np_type(d)}({tot})")
    em.indent = loop_base
    for n, acc, d, flag in accs:
        if _via_buffer(n, plan, bufs, scratch, level):
            b = scratch.get(id(n)) or bufs[n.inputs[0].uid]
            # an empty row: only a logsumexp or a _max_shift gets here (amax/amin raised
            # before the loops)
            em.emit(f"if {length} > 0:")
            em.emit(f"    {acc} = {_row_helper(em, _op1(n))}({b}, {length})")
        for line in lower_reduce.nan_fixup(_op1(n), acc, d, flag):
            em.emit(line)
        if n.op == "logsumexp":  # like eager: an infinite (or nan) max does not shift
            m = em.fresh("m")
            em.emit(f"{m} = {acc} if np.isfinite({acc}) else {np_type(d)}(0)")
            plan.lse_m[id(n)] = m
            continue
        if n.op == "mean":
            em.emit(f"{acc} = {acc} / {np_type(d)}({length})")
        if n.op == "_max_shift":
            em.emit(f"if {length} == 0:")
            em.emit(f"    {acc} = {np_type(d)}(0)")
        row_local[n.outputs[0].uid] = (acc, d)
        _store_row(em, plan, n.outputs[0], row_local, outs, idx)
    for n, acc, d in sums:
        r = em.fresh("lse")
        lg = scalar_expr(em, registry.OPS["log"], d, {"input": acc}, {})
        em.emit(f"{r} = {np_type(d)}({lg} + {plan.lse_m[id(n)]})")
        row_local[n.outputs[0].uid] = (r, d)
        _store_row(em, plan, n.outputs[0], row_local, outs, idx)


def _op1(n) -> str:
    """The reduction a node's first pass does (a logsumexp's is its row's max; the softmax
    shift `_max_shift` is a max that an empty row leaves at 0)."""
    return "amax" if n.op in ("logsumexp", "_max_shift") else n.op


def _via_buffer(n, plan, bufs, scratch, level) -> bool:
    if _op1(n) not in ("amax", "amin"):
        return False
    x = n.inputs[0]
    return id(n) in scratch or (x.uid in bufs and x.node is not None and
                                plan.level[x.uid] == level)


def _row_helper(em, op: str) -> str:
    """The name of row_helpers.py's unrolled `op` reduction, imported into `em`'s module."""
    name = f"_row_{op}"
    line = f"from jitorch.script.targets.cpu.row_helpers import {name}"
    em.global_line(line)
    return name


def _check_nonempty(em, reds, length, rank) -> None:
    for n in reds:
        if n.op in ("amax", "amin"):
            em.emit(f"if {length} == 0:")
            em.indent += 1
            em.raise_("IndexError", f"{n.op}(): Expected reduction dim {rank - 1} to have "
                      "non-zero size.")
            em.indent -= 1
            return


def _nest(em, plan: _Plan, sizes, mult, outs) -> None:
    """The loop nest: passes by level, row buffers."""
    rank, d_row = plan.rank, sizes[-1]
    _check_nonempty(em, [n for n in plan.nodes if id(n) in plan.red_pass], d_row, rank)
    bufs = _assign_buffers(em, plan, d_row)
    scratch = {}  # amax/amin of a value without a row buffer: kept in one for `_row_amax`
    for n in plan.nodes:
        x = n.inputs[0] if n.inputs else None
        if _op1(n) in ("amax", "amin") and id(n) in plan.red_pass and x.uid not in bufs:
            scratch[id(n)] = em.fresh("sbuf")
            em.emit(f"{scratch[id(n)]} = np.empty({d_row}, {np_type(plan.dtype[x.uid])})")
    out_full = {r.uid for r in plan.returns if plan.full[r.uid]}
    last = max([p for p in plan.red_pass.values()] + list(plan.lse_pass.values()) +
               [plan.level[u] for u in out_full], default=0)
    base = em.indent
    idx = _open_rows(em, rank, sizes)
    row_local = _row_locals(em, plan, mult, idx)
    done = set()
    for level in range(last + 1):
        for n in plan.nodes:  # per-row values this pass can read
            o = n.outputs[0]
            if id(n) not in plan.red_pass and not plan.full[o.uid] and \
                    plan.level[o.uid] <= level and o.uid not in done:
                done.add(o.uid)
                _row_node(em, plan, n, row_local, outs, idx)
        reds = [n for n in plan.nodes if plan.red_pass.get(id(n)) == level]
        lse2 = [n for n in plan.nodes if plan.lse_pass.get(id(n)) == level]
        stores = [v for v in plan.buffered if plan.level[v.uid] == level]
        stores += [r for r in plan.returns if r.uid in out_full and plan.level[r.uid] == level
                   and all(r is not s for s in stores)]
        if reds or stores or lse2:
            _reduce_loop(em, plan, reds, d_row, row_local, mult, idx, bufs, level,
                         stores, outs, scratch, lse2)
    for n in plan.nodes:
        o = n.outputs[0]
        if id(n) not in plan.red_pass and not plan.full[o.uid] and o.uid not in done:
            done.add(o.uid)
            _row_node(em, plan, n, row_local, outs, idx)
    em.indent = base


def _assign_buffers(em, plan: _Plan, d_row) -> dict:
    """value uid -> row buffer name. A buffer whose value is last read in pass q is reused by a
    value written in pass q or later (each iteration reads before it writes, at one index)."""
    last = {}
    for n in plan.nodes:
        lvl = plan.level[n.outputs[0].uid]
        for v in n.inputs:
            last[v.uid] = max(last.get(v.uid, 0), lvl)
    bufs, held = {}, []  # held: [name, dtype, last level read]
    for v in sorted(plan.buffered, key=lambda u: plan.level[u.uid]):
        d, lvl = plan.dtype[v.uid], plan.level[v.uid]
        for h in held:
            if h[1] is d and h[2] <= lvl:
                bufs[v.uid] = h[0]
                h[2] = last[v.uid]
                break
        else:
            b = em.fresh("buf")
            em.emit(f"{b} = np.empty({d_row}, {np_type(d)})")
            held.append([b, d, last[v.uid]])
            bufs[v.uid] = b
    return bufs
