"""Lowering of elementwise groups (prim::Fused, or one lone elementwise op) to one loop nest.

The loop runs over the broadcast shape of the group's tensor inputs (rank = the group's rank).
Each tensor input is read as `x[i0 * m0, i1 * m1]` where `m` is 0 on its size-1 (broadcast)
dims and 1 elsewhere; the broadcast shape is computed and checked at run time with PyTorch's
message. Each output is allocated with the broadcast shape of the inputs it depends on and
written through its own multipliers, so a member of size `(1, n)` inside an `(m, n)` loop is
still correct (it is rewritten with the same value). No temporaries: members are scalar locals.
A group whose operands all have the loop's rank and whose outputs all have its shape is one flat
loop instead (`_one_flat_loop`): each operand read through views.py's `_jt_dense` (its own
memory where it is C-contiguous with the loop's shape, else a broadcast copy), so the kernel
carries no strided nest for Numba to compile (issue 17).

Members are the registry's scalar templates, filled in by codegen/elementwise.py (shared with
the other targets), which also emits the checked broadcast shape and the loads. This target's
spelling (`spell`, CpuTarget.spell): for float32, `exp/tanh/log/sigmoid/erf` use the
vectorisable functions of `fastmath.py` when it is present.
"""
from __future__ import annotations

import hashlib

from .... import _dtype as dt
from ... import ir
from ...ir.values import const_value
from ...passes.types import norm_dims
from ...codegen import NotLowered, operand_checks
from ...codegen.casts import cast
from ...codegen.elementwise import (dependencies, group_inputs, group_rank, loads, loop_shape,
                                    members, output_shape, single_group)
from ...codegen.emitter import Emitter, np_type
from . import views

FASTMATH_MODULE = "jitorch.script.targets.cpu.fastmath"
_F32_FUNCS = {"np.exp": "exp_f32", "np.tanh": "tanh_f32", "np.log": "log_f32",
              "np.log1p": "log1p_f32", "math.erf": "erf_f32"}
_fastmath_state: dict = {}


def fastmath_names() -> set:
    """Names fastmath.py provides (empty if it is absent or broken), checked once."""
    if "names" not in _fastmath_state:
        names = set()
        try:
            import importlib
            mod = importlib.import_module(FASTMATH_MODULE)
            names = {n for n in ("exp_f32", "tanh_f32", "log_f32", "log1p_f32", "sigmoid_f32",
                                 "erf_f32")
                     if hasattr(mod, n)}
            # functions emitted in place by an @intrinsic, imported under their own name
            _fastmath_state["in_place"] = {n: v for n, v in getattr(mod, "IN_PLACE", {}).items()
                                           if n in names and hasattr(mod, v)}
            _fastmath_state["hash"] = getattr(mod, "SOURCE_HASH", None) or hashlib.sha256(
                open(mod.__file__, "rb").read()).hexdigest()[:16]
        except Exception:
            names = set()
        _fastmath_state["names"] = names
    return _fastmath_state["names"]


def fastmath_hash() -> str:
    fastmath_names()
    return str(_fastmath_state.get("hash"))


def fastmath_import(name: str) -> str:
    """How a generated module imports fastmath.py's `name`: its in-place intrinsic (fastmath
    IN_PLACE) under that name where there is one."""
    fastmath_names()
    got = _fastmath_state.get("in_place", {}).get(name)
    return f"{got} as {name}" if got else name


def spell(em: Emitter, opdef, compute: dt.dtype, expr: str) -> str:
    """The CPU's spelling of a filled template (CpuTarget.spell): float32 functions that have a
    vectorisable helper in fastmath.py call it."""
    if compute is not dt.float32:
        return expr
    avail = fastmath_names()
    if opdef.name == "sigmoid" and "sigmoid_f32" in avail:
        em.helpers.add("sigmoid_f32")
        return "sigmoid_f32(_OP0_)"
    for np_name, f in _F32_FUNCS.items():
        if np_name + "(" in expr and f in avail:
            expr = expr.replace(np_name + "(", f + "(")
            em.helpers.add(f)
    return expr


def lower_single(em: Emitter, n: ir.Node) -> bool:
    """A lone elementwise op: lower it as a group of one."""
    group = single_group(em, n)
    if group is None:
        return False
    lower_group(em, *group)
    return True


REDUCE_OPS = ("sum", "mean", "amax", "amin")


def lower_group(em: Emitter, block: ir.Block, inputs: list, outputs: list) -> None:
    from . import lower_rows
    operand_checks.scalar_checks(em, block, inputs)
    if lower_rows.is_rows(block):  # softmax / layer-norm: passes over each row
        lower_rows.lower_rows(em, block, inputs, outputs)
        return
    red = block.nodes[-1] if block.nodes and block.nodes[-1].op in REDUCE_OPS else None
    if red is not None:  # an elementwise prologue feeding a reduction over the last dim
        _lower_reduce_group(em, block, inputs, outputs, red)
        return
    rank = group_rank(em, block)
    tensor_in, local = group_inputs(em, block, inputs, rank)
    deps = dependencies(block)
    sizes, mult = loop_shape(em, tensor_in, rank, mults=not _one_flat_loop(block, tensor_in,
                                                                             deps, rank))
    _lower_outputs_and_loop(em, block, outputs, tensor_in, local, deps, sizes, mult, rank)


def _one_flat_loop(block, tensor_in, deps, rank) -> bool:
    """Whether the group is one flat loop over its operands' dense elements (views.py's
    `_jt_dense`) and no strided nest: every operand has the loop's rank (a lower-rank operand,
    a bias, would be copied to the loop's shape) and every output the loop's shape (it depends
    on every operand: output_shape). Any dtype: first measured on float32 models (issue 17);
    on float64 and integer kernels it cut the compile of the OpInfo gradient programs too
    (tests/test_jit_opinfo.py, 2026-12-06)."""
    all_t = {p.uid for p, _, _ in tensor_in}
    return rank > 0 and all(r == rank for _, _, r in tensor_in) and \
        all(deps.get(r.uid, set()) & all_t == all_t for r in block.returns)


def _lower_outputs_and_loop(em, block, outputs, tensor_in, local, deps, sizes, mult, rank):
    # outputs: shape = broadcast of the inputs they depend on
    out_names = []
    for r in block.returns:
        t = em.tensor(r, complex_ok=True)  # (fuse.fusible admitted complex members)
        o = em.fresh("out")
        shape_parts, om = output_shape(em, r, tensor_in, deps, sizes, rank)
        em.emit(f"{o} = np.empty(({''.join(s + ', ' for s in shape_parts)}), {np_type(t.dtype)})")
        out_names.append((o, om))
    base = em.indent
    fast = _fast_condition(tensor_in, out_names, sizes, rank)
    if _one_flat_loop(block, tensor_in, deps, rank):
        # one flat loop over the operands' dense elements (views.py's _jt_dense: a view where
        # an operand is C-contiguous with the loop's shape, else a broadcast copy) and no
        # strided nest, which cost Numba 0.1-0.2 CPU-s per kernel to compile (issue 17)
        _flat_loop(em, block, tensor_in, dict(local), out_names, sizes, None)
        for (o, _), v in zip(out_names, outputs):
            em.bind(v, o)
        return
    if fast is not None:
        _flat_loop(em, block, tensor_in, dict(local), out_names, sizes, fast)
        em.emit("else:")
        em.indent += 1
    # the general loop nest (broadcasting, or an operand that is not C-contiguous)
    idx = [em.fresh("i") for _ in range(rank)]
    for d in range(rank):
        em.emit(f"for {idx[d]} in range({sizes[d]}):")
        em.indent += 1
    loads(em, tensor_in, local, mult, idx, rank)
    members(em, block.nodes, local)
    for (o, om), r in zip(out_names, block.returns):
        if om is None:
            ix = ", ".join(idx) if rank else "()"
        else:
            ix = ", ".join(f"{i} * {m}" for i, m in zip(idx, om)) if rank else "()"
        if r.uid in local:
            em.emit(f"{o}[{ix}] = {local[r.uid][0]}")
        else:
            raise NotLowered("fused group returns a value it does not compute")
    em.indent = base
    for (o, _), v in zip(out_names, outputs):
        em.bind(v, o)


def _fast_condition(tensor_in, out_names, sizes, rank):
    """The run-time test for the flat loop, or None where it can never hold (or gains nothing).

    The flat loop needs every operand and output to have exactly the loop's shape and to be
    C-contiguous: then one index `k` addresses the same element everywhere and LLVM vectorises
    the loop, which it does not do through the 0/1 multipliers of the general nest.
    """
    if rank == 0 or any(r != rank for _, _, r in tensor_in):
        return None
    conds = []
    for _, x, _ in tensor_in:
        conds.append(f"{x}.flags.c_contiguous")
        conds += [f"{x}.shape[{d}] == {sizes[d]}" for d in range(rank)]
    for o, om in out_names:
        if om is not None:  # allocated (C-contiguous) with the shape of its own inputs
            conds += [f"{o}.shape[{d}] == {sizes[d]}" for d in range(rank)]
    return conds


def _flat_loop(em, block, tensor_in, local, out_names, sizes, conds, stores=None) -> None:
    """`if <conds>:` one loop over flattened views, with the same scalar members (`conds`
    None: unconditionally, over each operand's dense elements, views.py's `_jt_dense`). `stores`
    (output index -> input param; lower_list.py) stores that output through the flat view its
    element is loaded from: one pointer per array lets LLVM vectorise the loop (with separate
    views for the load and the store its run-time alias checks exceed its limit)."""
    stores = stores or {}
    base = em.indent
    if conds is not None:
        em.emit(f"if {' and '.join(conds) if conds else 'True'}:")
        em.indent += 1
    nf = em.fresh("nf")
    em.emit(f"{nf} = {' * '.join(sizes)}")
    flat = {}
    for p, x, _ in tensor_in:
        f = em.fresh("f")
        if conds is None:  # no condition checked the operand: its dense elements
            shape = "".join(s + ", " for s in sizes)
            e = em.named("e", f"{views.use(em, '_jt_expand')}({x}, ({shape}))")
            em.emit(f"{f} = {views.use(em, '_jt_dense')}({e})")
        else:
            # a view typed C-contiguous (Numba types values from views as 'A' layout, which
            # it does not reshape): views.py's intrinsic, the condition above checked it
            em.emit(f"{f} = {views.use(em, '_jt_flat')}({x}, {nf})")
        flat[p.uid] = f
    oflat = []
    for j, (o, _) in enumerate(out_names):
        if j in stores:
            oflat.append(flat[stores[j].uid])
            continue
        f = em.fresh("g")
        # (allocated C-contiguous with the loop's shape: the same view, without Numba's
        # reshape, whose lowering cost each kernel ~0.1 CPU-s of compile time: issue 17)
        em.emit(f"{f} = {views.use(em, '_jt_flat')}({o}, {nf})")
        oflat.append(f)
    k = em.fresh("k")
    em.emit(f"for {k} in range({nf}):")
    em.indent += 1
    for p, _, _ in tensor_in:
        nm = em.fresh("x")
        em.emit(f"{nm} = {flat[p.uid]}[{k}]")
        local[p.uid] = (nm, p.type.dtype)
    members(em, block.nodes, local)
    for f, r in zip(oflat, block.returns):
        if r.uid not in local:
            raise NotLowered("fused group returns a value it does not compute")
        em.emit(f"{f}[{k}] = {local[r.uid][0]}")
    em.indent = base


def _lower_reduce_group(em, block, inputs, outputs, red) -> None:
    """Loops over the kept dims, a scalar accumulator over the last dim: no temporary."""
    from . import lower_reduce
    from ...passes.types import reduction_dtype
    x = red.inputs[0]
    rank = em.tensor(x).ndim
    ok, keepdim = const_value(red.inputs[2])
    okd, dim = const_value(red.inputs[1])
    if not ok or not okd or norm_dims(dim, rank) != (rank - 1,):
        raise NotLowered("fused reduction: not over the last dim")
    acc_d = reduction_dtype(red.op, em.tensor(x), None)
    if acc_d is not em.tensor(red.outputs[0]).dtype or rank == 0:
        raise NotLowered("fused reduction: dtype or rank")
    tensor_in, local = group_inputs(em, block, inputs, rank)
    sizes, mult = loop_shape(em, tensor_in, rank)
    last = sizes[-1]
    if red.op in ("amax", "amin"):
        em.emit(f"if {last} == 0:")
        em.indent += 1
        em.raise_("IndexError", f"{red.op}(): Expected reduction dim {rank - 1} to have "
                  "non-zero size.")
        em.indent -= 1
    shape = sizes[:-1] + (["1"] if keepdim else [])
    out = em.fresh("red")
    em.emit(f"{out} = np.empty(({''.join(s + ', ' for s in shape)}), {np_type(acc_d)})")
    idx = [em.fresh("i") for _ in range(rank)]
    base = em.indent
    for d in range(rank - 1):
        em.emit(f"for {idx[d]} in range({sizes[d]}):")
        em.indent += 1
    acc = em.fresh("acc")
    wide = lower_reduce.blocked(red.op, acc_d)  # blocks of a float32 sum, float64 total
    blk, tot = (em.fresh("blk"), em.fresh("tot")) if wide else (acc, None)
    loop_base = em.indent
    if wide:
        em.emit(f"{tot} = 0.0")
        lower_reduce.blocked_head(em, idx[-1], last, [(blk, acc_d)])
    else:
        em.emit(f"{acc} = {lower_reduce._identity(red.op, acc_d)}")
        em.emit(f"for {idx[-1]} in range({last}):")
        em.indent += 1
    loads(em, tensor_in, local, mult, idx, rank)
    members(em, [n for n in block.nodes if n is not red], local)
    e, d = local[x.uid]
    v = em.fresh("v")
    em.emit(f"{v} = {cast(e, d, acc_d)}")
    for line in lower_reduce._combine(red.op, blk, v, acc_d):
        em.emit(line)
    if wide:
        lower_reduce.blocked_tail(em, [(blk, acc_d)], [tot])
        em.emit(f"{acc} = {np_type(acc_d)}({tot})")
    em.indent = loop_base
    if red.op == "mean":
        em.emit(f"{acc} = {acc} / {np_type(acc_d)}({last})")
    ix = idx[:-1] + (["0"] if keepdim else [])
    em.emit(f"{out}[{', '.join(ix) if ix else '()'}] = {acc}")
    em.indent = base
    em.bind(outputs[0], out)
