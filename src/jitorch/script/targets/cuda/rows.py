"""A row region (`prim::Fused[kind='rows']`, passes/fuse_rows.py: softmax, log-softmax, layer
norm, RMSNorm, logsumexp) as one numba.cuda kernel: a block per row.

A region chains last-dim keepdim reductions and elementwise ops whose broadcasts run along the
reduced dim. A value is *per-row* (a reduction result, or computed from per-row values and
scalars only) or *full* (it reads a tensor input along the row). In the kernel, a block takes a
row (a block-stride loop over the rows: every dim but the last); each reduction of a full value
is a pass over the row, the block's threads striding along it and computing the full value
from the inputs (recomputed in every pass that needs it: the row stays in the cache, and no
full-size temporary is written), then a tree in shared memory (reduce.py `tree`) whose result
every thread reads; per-row ops run in every thread; a last pass computes and writes the full
outputs, thread 0 the per-row ones. A logsumexp is two passes (the row's max, then the sum of
exp(x - max), as eager computes it). Each reduction runs over its own input's row length (an
input whose last dim is 1 broadcasts along the row), every load through 0/1 multipliers.

The host part: the region's broadcast shape (codegen/elementwise.loop_shape, rows: a last-dim
mismatch hands the call to the interpreter), the outputs' allocations, and a launch with a block
per row (launch.launch_blocks). A reduction over an empty row (amax's error, logsumexp's -inf,
mean's NaN) is rare: the call goes to the interpreter (RaiseInInterpreter), which gives eager's
result or error. The kernel source is canonical like kernel.py's (parameters `p0, p1, ...`:
outputs, tensor inputs, scalar inputs, the number of rows, the sizes of the row dims but the
first, each reduction's row length, the inputs' and the outputs' multipliers).
"""
from __future__ import annotations

from ...._ops import registry
from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.casts import cast
from ...codegen.elementwise import broadcast_size, emit_member, loop_shape, scalar_expr
from ...codegen.rows import RowPlan, output_shape
from ...codegen.emitter import Emitter, np_type, typed_literal
from ...passes.fuse_rows import ROW_REDUCE
from . import launch
from .kernel import KERNEL_HEAD
from .reduce import combine, emit_launch, tree

def lower_rows(em: Emitter, block: ir.Block, inputs: list, outputs: list) -> None:
    """Emit the host part of the region into `em` and import its kernel into the entry."""
    plan = RowPlan(em, block, inputs)
    if any(r.node is None for r in plan.returns):  # (an input returned as it is)
        raise NotLowered("row region returns a value it does not compute on cuda")
    rank = plan.rank
    sizes, mult = loop_shape(em, plan.ext, rank, rows=True)
    lengths = []  # each pass's row length: the broadcast of what its input reads along the row
    for n in plan.passes():
        dep = plan.deps[n.inputs[0].uid]
        ln = broadcast_size(em, [f"{x}.shape[{r - 1}]" for p, x, r in plan.ext
                                 if dep.get(p.uid) and r])
        lengths.append(ln)
        em.emit(f"if {ln} == 0:")  # an empty row: eager's result or error (docstring)
        em.indent += 1
        em.raise_in_interpreter()
        em.indent -= 1
    outs = []
    for r in plan.returns:
        shape, om = output_shape(em, plan, r)
        o = em.fresh("out")
        em.emit(f"{o} = alloc(({''.join(s + ', ' for s in shape)}), "
                f"{np_type(plan.dtype[r.uid])})")
        outs.append((o, om))
    nrows = em.fresh("nrows")
    em.emit(f"{nrows} = {' * '.join(sizes[:-1]) or '1'}")
    args = [o for o, _ in outs] + [x for _, x, _ in plan.ext] + [x for _, x, _ in plan.scalars]
    args += [nrows] + sizes[1:-1] + [sizes[-1]] + lengths
    args += [m for p, _, _ in plan.ext for m in mult[p.uid]] + [m for _, om in outs for m in om]
    source = _Kernel(em, plan, len(outs)).source()
    emit_launch(em, source, nrows, args)
    for (o, _), v in zip(outs, outputs):
        em.bind(v, o)


class _Kernel:
    """The kernel's source: its parameters named in the order of `lower_rows`' arguments."""

    def __init__(self, em: Emitter, plan: RowPlan, n_out: int):
        self.plan, self.rank = plan, plan.rank
        self.ke = ke = Emitter(em.target)
        ke.consts = dict(plan.consts)
        self.n = 0
        self.outs = [self._param() for _ in range(n_out)]
        self.ext = {p.uid: (self._param(), r) for p, _, r in plan.ext}
        self.scalars = {p.uid: (self._param(), d) for p, _, d in plan.scalars}
        self.nrows = self._param()
        self.sizes = [self._param() for _ in range(self.rank - 2)]  # row dims but the first
        self.d_row = self._param()
        self.lengths = {id(n): self._param() for n in plan.passes()}
        self.mult = {p.uid: [self._param() for _ in range(r)] for p, _, r in plan.ext}
        self.omult = [[self._param() for _ in range(self.rank)] for _ in range(n_out)]
        self.shared = {}  # dtype -> shared array name

    def _param(self) -> str:
        self.n += 1
        return literal.Ident(f"p{self.n - 1}")

    def source(self) -> str:
        ke, plan, rank = self.ke, self.plan, self.rank
        body_at = len(ke.lines)
        row = ke.fresh("row")
        ke.emit(f"for {row} in range(cuda.blockIdx.x, {self.nrows}, cuda.gridDim.x):")
        ke.indent += 1
        idx, rest = [None] * (rank - 1), row  # the row's index on each dim but the last
        for d in range(rank - 2, 0, -1):
            i, q = ke.fresh("i"), ke.fresh("q")
            ke.emit(f"{i} = {rest} % {self.sizes[d - 1]}")
            ke.emit(f"{q} = {rest} // {self.sizes[d - 1]}")
            idx[d], rest = i, q
        if rank > 1:
            idx[0] = rest
        self.idx = idx
        local = {uid: (nm, d) for uid, (nm, d) in self.scalars.items()}
        for p, _, r in plan.ext:
            if r == 0:  # a 0-d input: one value for every row
                nm = ke.fresh("x")
                ke.emit(f"{nm} = {self.ext[p.uid][0]}[()]")
                local[p.uid] = (nm, plan.dtype[p.uid])
        for n in plan.nodes:
            o = n.outputs[0]
            if id(n) in self.lengths:
                self._pass(n, local)
            elif n.op in ROW_REDUCE:  # of a per-row value: that value
                e, d = local[n.inputs[0].uid]
                nm = ke.fresh("t")
                ke.emit(f"{nm} = {cast(e, d, plan.dtype[o.uid])}")
                local[o.uid] = (nm, plan.dtype[o.uid])
            elif not plan.full[o.uid]:
                emit_member(ke, n, local, plan.consts)
            else:
                continue  # full: computed in the passes that read it
            self._store_row(o, local)
        full_outs = [r for r in plan.returns if plan.full[r.uid]]
        if full_outs:
            j = ke.fresh("j")
            ke.emit(f"for {j} in range(cuda.threadIdx.x, {self.d_row}, cuda.blockDim.x):")
            ke.indent += 1
            inner = dict(local)
            for r in full_outs:
                self._full(r, inner, j)
            for k, r in enumerate(plan.returns):
                if plan.full[r.uid]:
                    ix = [f"{i} * {m}" for i, m in zip(idx, self.omult[k])]
                    ix.append(f"{j} * {self.omult[k][-1]}")
                    ke.emit(f"{self.outs[k]}[{', '.join(ix)}] = {inner[r.uid][0]}")
            ke.indent -= 1
        if ke.globals or ke.helpers or ke.exceptions or ke.scripted_raises:
            raise NotLowered("a cuda row kernel needs module-level names (helpers, raises)")
        head = [f"{nm} = cuda.shared.array({launch.BLOCK_THREADS}, {np_type(d)})"
                for d, nm in self.shared.items()]
        lines = ["    " + h for h in head] + ke.lines[body_at:]
        params = ", ".join(f"p{k}" for k in range(self.n))
        return KERNEL_HEAD + f"def kernel({params}):\n" + "\n".join(lines) + "\n"

    def _sh(self, d) -> str:
        if d not in self.shared:
            self.shared[d] = literal.Ident(f"sh{len(self.shared)}")
        return self.shared[d]

    def _pass(self, n: ir.Node, local: dict) -> None:
        """A reduction of a full value: a pass over the row, the tree, every thread reads the
        result (logsumexp: the max pass, then the sum of exp(x - max))."""
        ke, plan = self.ke, self.plan
        o, x = n.outputs[0], n.inputs[0]
        d, ln = plan.dtype[o.uid], self.lengths[id(n)]
        op = "amax" if n.op in ("logsumexp", "_max_shift") else n.op
        m = self._reduce(op, x, d, ln, local, None)
        if n.op == "logsumexp":  # like eager: an infinite (or NaN) max does not shift
            mf = ke.fresh("m")
            ke.emit(f"{mf} = {m} if {m} - {m} == {typed_literal(0, d)} else "
                    f"{typed_literal(0, d)}")
            s = self._reduce("sum", x, d, ln, local, mf)
            lg = scalar_expr(ke, registry.OPS["log"], d, {"input": s}, {})
            m = ke.fresh("lse")
            ke.emit(f"{m} = {np_type(d)}({lg} + {mf})")
        elif n.op == "mean":
            r = ke.fresh("mean")
            ke.emit(f"{r} = {m} / {np_type(d)}({ln})")
            m = r
        local[o.uid] = (m, d)

    def _reduce(self, op: str, x: ir.Value, d, ln: str, local: dict, shift) -> str:
        """One pass: `op` over the row of `x` (of exp(x - shift) where `shift` is a name)."""
        ke = self.ke
        sh = self._sh(d)
        acc, j, w, res = ke.fresh("acc"), ke.fresh("j"), ke.fresh("w"), ke.fresh("r")
        ke.emit(f"{acc} = {typed_literal(0, d)}")
        ke.emit(f"for {j} in range(cuda.threadIdx.x, {ln}, cuda.blockDim.x):")
        ke.indent += 1
        inner = dict(local)
        self._full(x, inner, j)
        e, xd = inner[x.uid]
        v = ke.fresh("v")
        if shift is None:
            ke.emit(f"{v} = {cast(e, xd, d)}")
        else:
            ex = scalar_expr(ke, registry.OPS["exp"], d, {"input": f"{cast(e, xd, d)} - {shift}"},
                             {})
            ke.emit(f"{v} = {np_type(d)}({ex})")
        # each thread starts from its first element: no identity (amax's -inf) is needed
        ke.emit(f"if {j} == cuda.threadIdx.x:")
        ke.emit(f"    {acc} = {v}")
        ke.emit("else:")
        ke.indent += 1
        for line in combine(op, d, acc, v):
            ke.emit(line)
        ke.indent -= 2
        ke.emit(f"{sh}[cuda.threadIdx.x] = {acc}")
        ke.emit("cuda.syncthreads()")
        nv = ke.fresh("nv")
        ke.emit(f"{nv} = min({ln}, cuda.blockDim.x)")
        ke.emit("t = cuda.threadIdx.x")
        for line in tree(op, d, sh, nv, w):
            ke.emit(line)
        ke.emit(f"{res} = {sh}[0]")
        ke.emit("cuda.syncthreads()")  # every thread has read it before the next pass writes
        return res

    def _full(self, v: ir.Value, local: dict, j: str) -> None:
        """Make the full value `v` at row position `j` available in `local` (loads, members)."""
        if v.uid in local or v.uid in self.plan.consts:
            return
        if v.node is None:  # a tensor input, read along the row through its multipliers
            arr, r = self.ext[v.uid]
            ms = self.mult[v.uid]
            ix = [f"{self.idx[self.rank - r + k]} * {ms[k]}" for k in range(r - 1)]
            ix.append(f"{j} * {ms[r - 1]}")
            nm = self.ke.fresh("x")
            self.ke.emit(f"{nm} = {arr}[{', '.join(ix)}]")
            local[v.uid] = (nm, self.plan.dtype[v.uid])
            return
        for u in v.node.inputs:
            if u.uid not in self.plan.consts and self.plan.full.get(u.uid):
                self._full(u, local, j)
        emit_member(self.ke, v.node, local, self.plan.consts)

    def _store_row(self, v: ir.Value, local: dict) -> None:
        """A returned per-row value, written by thread 0 (its last dim is 1)."""
        for k, r in enumerate(self.plan.returns):
            if r.uid == v.uid:
                ix = [f"{i} * {m}" for i, m in zip(self.idx, self.omult[k])] + ["0"]
                self.ke.emit("if cuda.threadIdx.x == 0:")
                self.ke.emit(f"    {self.outs[k]}[{', '.join(ix)}] = {local[v.uid][0]}")
