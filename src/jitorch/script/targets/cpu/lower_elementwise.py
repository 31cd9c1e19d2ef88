"""Lowering of elementwise groups (prim::Fused, or one lone elementwise op) to one loop nest.

The loop runs over the broadcast shape of the group's tensor inputs (rank = the group's rank).
Each tensor input is read as `x[i0 * m0, i1 * m1]` where `m` is 0 on its size-1 (broadcast)
dims and 1 elsewhere; the broadcast shape is computed and checked at run time with PyTorch's
message. Each output is allocated with the broadcast shape of the inputs it depends on and
written through its own multipliers, so a member of size `(1, n)` inside an `(m, n)` loop is
still correct (it is rewritten with the same value). No temporaries: members are scalar locals.

Scalar expressions come from the registry's `scalar` templates: operands are cast to the op's
compute dtype, numeric literals in the template become typed literals (`np.float32(1.0)`: a bare
`1.0` would compute a float32 op in float64), and results are cast to the op's output dtype
(so int32 arithmetic wraps like PyTorch's, although Numba computes it in int64). For float32,
`exp/tanh/log/sigmoid/erf` use the vectorisable functions of `fastmath.py` when it is present.
"""
from __future__ import annotations

import ast
import hashlib
import re

from .... import _dtype as dt
from ...._ops import registry
from ... import ir
from ...passes import fuse
from ...ir.values import const_value
from ...passes.types import elementwise_dtypes, norm_dims
from ...codegen import NotLowered, literal, operand_checks
from ...codegen.casts import cast, needs_name, scalar_dtype
from ...codegen.emitter import Emitter, np_type, typed_literal

FASTMATH_MODULE = "jitorch.script.targets.cpu.fastmath"
_F32_FUNCS = {"np.exp": "exp_f32", "np.tanh": "tanh_f32", "np.log": "log_f32",
              "math.erf": "erf_f32"}
_fastmath_state: dict = {}


def fastmath_names() -> set:
    """Names fastmath.py provides (empty if it is absent or broken), checked once."""
    if "names" not in _fastmath_state:
        names = set()
        try:
            import importlib
            mod = importlib.import_module(FASTMATH_MODULE)
            names = {n for n in ("exp_f32", "tanh_f32", "log_f32", "sigmoid_f32", "erf_f32")
                     if hasattr(mod, n)}
            _fastmath_state["hash"] = getattr(mod, "SOURCE_HASH", None) or hashlib.sha256(
                open(mod.__file__, "rb").read()).hexdigest()[:16]
        except Exception:
            names = set()
        _fastmath_state["names"] = names
    return _fastmath_state["names"]


def fastmath_hash() -> str:
    fastmath_names()
    return str(_fastmath_state.get("hash"))


class _Typed(ast.NodeTransformer):
    """Wrap numeric literals of a template in the compute dtype's constructor."""

    def __init__(self, d: dt.dtype):
        self.d = d

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)) or self.d is dt.bool:
            return node
        if self.d.category == dt.INT and isinstance(v, float):
            return node
        return ast.parse(typed_literal(v, self.d), mode="eval").body


def scalar_expr(em: Emitter, opdef, compute: dt.dtype, operands: dict, attrs: dict) -> str:
    """The op's scalar template with `operands` (slot -> expression already in compute dtype)."""
    holders = {}
    for k, name in enumerate(opdef.params):
        holders[name] = f"_OP{k}_"
    template = opdef.scalar
    if compute.category == dt.INT and compute.is_signed and "scalar_int" in opdef.extra:
        template = opdef.extra["scalar_int"]  # C-style integer semantics (pow)
    src = template.format(**holders)
    tree = ast.parse(src, mode="eval")
    tree = ast.fix_missing_locations(_Typed(compute).visit(tree))
    expr = ast.unparse(tree)
    if compute is dt.float32:
        avail = fastmath_names()
        if opdef.name == "sigmoid" and "sigmoid_f32" in avail:
            expr = f"sigmoid_f32(_OP0_)"
            em.helpers.add("sigmoid_f32")
        else:
            for np_name, f in _F32_FUNCS.items():
                if np_name + "(" in expr and f in avail:
                    expr = expr.replace(np_name + "(", f + "(")
                    em.helpers.add(f)
    reps = {f"_OP{k}_": "(" + (operands[name] if name in operands else
                               _attr_literal(attrs[name], compute)) + ")"
            for k, name in enumerate(opdef.params)}
    # one pass: a replacement (a string literal of a mode) is never scanned for placeholders
    return re.sub(r"_OP\d+_", lambda m: reps.get(m.group(0), m.group(0)), expr)


def _attr_literal(v, compute: dt.dtype) -> str:
    if isinstance(v, str):  # a mode such as gelu's approximate
        return literal.text(v)
    if isinstance(v, bool) or v is None:
        return literal.value(v)
    if isinstance(v, (int, float)):
        if compute.category == dt.INT and isinstance(v, float):
            return literal.number(v)
        return typed_literal(v, compute) if compute is not dt.bool else literal.number(v)
    raise NotLowered(f"attribute of type {type(v).__name__} has no scalar form")


def _cast(expr: str, src: dt.dtype | None, dst: dt.dtype) -> str:
    return cast(expr, src, dst)  # NumPy's astype semantics (float -> int included: casts.py)


def lower_single(em: Emitter, n: ir.Node) -> bool:
    """A lone elementwise op: lower it as a group of one."""
    opdef = registry.OPS.get(n.op)
    if opdef is None or opdef.kind != "elementwise":
        return False
    if not fuse.fusible(n, em.capabilities):
        raise NotLowered(f"op {n.op}: elementwise op without a scalar form for these types")
    ext, params, vmap = [], [], {}
    for v in n.inputs:
        if v.uid in vmap:
            continue
        if v.node is not None and v.node.op == "prim::Constant" and \
                not isinstance(v.type, ir.TensorType):
            continue
        p = ir.Value(v.type, v.name)
        vmap[v.uid] = p
        params.append(p)
        ext.append(v)
    # inner view of the node: same op, inputs renamed to the block params (constants stay)
    inner = ir.Node(n.op, [vmap.get(v.uid, v) for v in n.inputs], ())
    inner.outputs = list(n.outputs)
    lower_group(em, ir.Block(params, [inner], list(n.outputs)), ext, list(n.outputs))
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
    rank = None
    for r in block.returns:
        t = em.tensor(r, complex_ok=True)  # (fuse.fusible admitted complex members)
        rank = t.ndim if rank is None else rank
        if t.ndim != rank:
            raise NotLowered("fused group outputs of different ranks")
    tensor_in, local = _group_inputs(em, block, inputs, rank)
    deps = _dependencies(block)
    sizes, mult = _loop_shape(em, tensor_in, rank)
    _lower_outputs_and_loop(em, block, outputs, tensor_in, local, deps, sizes, mult, rank)


def _group_inputs(em: Emitter, block: ir.Block, inputs: list, rank: int):
    tensor_in, local = [], {}
    for p, v in zip(block.params, inputs):
        if isinstance(v.type, ir.TensorType):
            t = em.tensor(v, complex_ok=True)
            if t.ndim > rank:
                raise NotLowered("fused input of higher rank than the group")
            tensor_in.append((p, em.name(v), t.ndim))
        elif isinstance(v.type, (ir.IntType, ir.FloatType, ir.BoolType)):
            local[p.uid] = (em.name(v), scalar_dtype(v.type))
        else:
            raise NotLowered(f"fused input of type {v.type}")
    return tensor_in, local


def broadcast_size(em: Emitter, sizes: list) -> str:
    """The broadcast of size expressions `sizes` (unchecked) in single-assignment form: each
    step is a new name built arithmetically, never a reassignment or a branch. Numba's SSA
    reconstruction and liveness passes grow with (reassigned names x blocks): big programs
    compiled minutes slower when every broadcast size was `n = 1; if ...: n = ...`."""
    if not sizes:
        return "1"
    cur = sizes[0]
    for s in sizes[1:]:
        nxt = em.fresh("n")
        em.emit(f"{nxt} = {cur} * ({s} == 1) + {s} * ({s} != 1)")
        cur = nxt
    if not cur.isidentifier():
        nxt = em.fresh("n")
        em.emit(f"{nxt} = {cur}")
        cur = nxt
    return cur


def _loop_shape(em: Emitter, tensor_in, rank: int, rows: bool = False):
    """Emit the broadcast loop shape (checked) and each input's 0/1 multipliers. `rows`: a
    row region (lower_rows.py), where inputs read only through a row reduction may have
    another row length than the rest (`z + s.sum(-1, keepdim=True)`): the program cannot run
    that with one row length, so a last-dim mismatch re-runs the call in the interpreter,
    which computes it (or raises PyTorch's error for a real mismatch)."""
    sizes = []
    for d in range(rank):
        cur = None
        for k, (p, x, r) in enumerate(tensor_in):
            j = d - (rank - r)
            if j < 0:
                continue
            s = f"{x}.shape[{j}]"
            if cur is None:
                cur = s
                continue
            em.emit(f"if {s} != 1 and {cur} != 1 and {s} != {cur}:")
            em.indent += 1
            if rows and d == rank - 1:
                em.raise_in_interpreter()
            else:
                em.raise_("RuntimeError", "The size of tensor a (", (s,),
                          ") must match the size of tensor b (", (cur,),
                          f") at non-singleton dimension {d}")
            em.indent -= 1
            cur = broadcast_size(em, [cur, s])
        sizes.append(broadcast_size(em, [cur or "1"]))
    mult = {}
    for p, x, r in tensor_in:
        ms = []
        for j in range(r):
            m = em.fresh("m")
            em.emit(f"{m} = int({x}.shape[{j}] != 1)")
            ms.append(m)
        mult[p.uid] = ms
    return sizes, mult


def _loads(em: Emitter, tensor_in, local, mult, idx, rank) -> None:
    for p, x, r in tensor_in:
        if not r:
            ix = "()"
        else:
            ix = ", ".join(f"{idx[rank - r + j]} * {mult[p.uid][j]}" for j in range(r))
        nm = em.fresh("x")
        em.emit(f"{nm} = {x}[{ix}]")
        local[p.uid] = (nm, p.type.dtype)


def _members(em: Emitter, nodes, local) -> None:
    consts = dict(em.consts)  # outer constants read by a lone op
    for n in nodes:
        if n.op == "prim::Constant":
            consts[n.output.uid] = n.attrs.get("value")
            continue
        _emit_member(em, n, local, consts)


def _lower_outputs_and_loop(em, block, outputs, tensor_in, local, deps, sizes, mult, rank):
    # outputs: shape = broadcast of the inputs they depend on
    all_t = {p.uid for p, _, _ in tensor_in}
    out_names = []
    for r in block.returns:
        t = em.tensor(r, complex_ok=True)  # (fuse.fusible admitted complex members)
        o = em.fresh("out")
        dep = deps.get(r.uid, set()) & all_t
        shape_parts = []
        if dep == all_t:
            shape_parts = list(sizes)
            om = None
        else:
            om = []
            for d in range(rank):
                sd = broadcast_size(em, [f"{x}.shape[{d - (rank - rr)}]"
                                         for p, x, rr in tensor_in
                                         if p.uid in dep and d - (rank - rr) >= 0])
                shape_parts.append(sd)
                mm = em.fresh("m")
                em.emit(f"{mm} = int({sd} != 1)")
                om.append(mm)
        em.emit(f"{o} = np.empty(({''.join(s + ', ' for s in shape_parts)}), {np_type(t.dtype)})")
        out_names.append((o, om))
    base = em.indent
    fast = _fast_condition(tensor_in, out_names, sizes, rank)
    if fast is not None:
        _flat_loop(em, block, tensor_in, dict(local), out_names, sizes, fast)
        em.emit("else:")
        em.indent += 1
    # the general loop nest (broadcasting, or an operand that is not C-contiguous)
    idx = [em.fresh("i") for _ in range(rank)]
    for d in range(rank):
        em.emit(f"for {idx[d]} in range({sizes[d]}):")
        em.indent += 1
    _loads(em, tensor_in, local, mult, idx, rank)
    _members(em, block.nodes, local)
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
    """`if <conds>:` one loop over flattened views, with the same scalar members. `stores`
    (output index -> input param; lower_list.py) stores that output through the flat view its
    element is loaded from: one pointer per array lets LLVM vectorise the loop (with separate
    views for the load and the store its run-time alias checks exceed its limit)."""
    stores = stores or {}
    em.emit(f"if {' and '.join(conds) if conds else 'True'}:")
    em.indent += 1
    nf = em.fresh("nf")
    em.emit(f"{nf} = {' * '.join(sizes)}")
    flat = {}
    for p, x, _ in tensor_in:
        f = em.fresh("f")
        # a view typed C-contiguous: Numba types values from views as 'A' layout (no reshape);
        # ascontiguousarray of an 'A' array that is contiguous at run time does not copy
        em.emit(f"{f} = np.ascontiguousarray({x}).reshape({nf})")
        flat[p.uid] = f
    oflat = []
    for j, (o, _) in enumerate(out_names):
        if j in stores:
            oflat.append(flat[stores[j].uid])
            continue
        f = em.fresh("g")
        em.emit(f"{f} = {o}.reshape({nf})")
        oflat.append(f)
    k = em.fresh("k")
    em.emit(f"for {k} in range({nf}):")
    em.indent += 1
    for p, _, _ in tensor_in:
        nm = em.fresh("x")
        em.emit(f"{nm} = {flat[p.uid]}[{k}]")
        local[p.uid] = (nm, p.type.dtype)
    _members(em, block.nodes, local)
    for f, r in zip(oflat, block.returns):
        if r.uid not in local:
            raise NotLowered("fused group returns a value it does not compute")
        em.emit(f"{f}[{k}] = {local[r.uid][0]}")
    em.indent -= 2


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
    tensor_in, local = _group_inputs(em, block, inputs, rank)
    sizes, mult = _loop_shape(em, tensor_in, rank)
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
    _loads(em, tensor_in, local, mult, idx, rank)
    _members(em, [n for n in block.nodes if n is not red], local)
    e, d = local[x.uid]
    v = em.fresh("v")
    em.emit(f"{v} = {_cast(e, d, acc_d)}")
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


def _dependencies(block: ir.Block) -> dict:
    """value uid -> set of block-param uids it is computed from."""
    deps = {p.uid: {p.uid} for p in block.params}
    for n in block.nodes:
        s = set()
        for v in n.inputs:
            s |= deps.get(v.uid, set())
        for o in n.outputs:
            deps[o.uid] = s
    return deps


def _emit_member(em: Emitter, n: ir.Node, local: dict, consts: dict) -> None:
    opdef = registry.OPS.get(n.op)
    if opdef is None or opdef.kind != "elementwise" or not opdef.scalar:
        raise NotLowered(f"op {n.op}: not an elementwise op with a scalar form")
    r = elementwise_dtypes(opdef, n.inputs)
    if r is None:
        raise NotLowered(f"op {n.op}: operand dtypes unknown")
    compute, out = r
    ok = em.capabilities.fusible_dtypes(fuse.complex_ok(opdef))
    if compute not in ok or out not in ok:
        raise NotLowered(f"op {n.op}: dtype {compute} is not lowered on CPU yet")
    operand_checks.eager_check(opdef, n, consts)
    by = dict(zip(opdef.params, n.inputs))
    if n.op == "clamp":  # a one-sided clamp uses clamp_min's / clamp_max's template
        for side in ("min", "max"):
            v = by[side]
            if isinstance(v.type, ir.NoneType) or (v.uid in consts and consts[v.uid] is None):
                opdef = registry.OPS["clamp_max" if side == "min" else "clamp_min"]
                del by[side]
                break
    operands, attrs = {}, {}
    for name in opdef.params:
        v = by[name]
        if name in opdef.attrs:
            if v.uid not in consts and v.uid in local and \
                    isinstance(v.type, (ir.IntType, ir.FloatType)):
                e, d = local[v.uid]  # a run-time number (alpha=-lr), cast like a literal
                operands[name] = _cast(e, d, compute)
                continue
            if v.uid not in consts:
                raise NotLowered(f"op {n.op}: attribute {name} is not a constant")
            attrs[name] = consts[v.uid]
            continue
        if v.uid in consts:
            c = consts[v.uid]
            if c is None or isinstance(c, (str,)) or not isinstance(c, (bool, int, float)):
                raise NotLowered(f"op {n.op}: operand {name}={c!r}")
            operands[name] = typed_literal(c, compute)
        elif v.uid in local:
            e, d = local[v.uid]
            operands[name] = _cast(e, d, compute)
        else:
            raise NotLowered(f"op {n.op}: operand {name} unavailable in the loop")
    if n.op == "div" and attrs.get("rounding_mode") is not None:
        raise NotLowered("div with rounding_mode")
    expr = scalar_expr(em, opdef, compute, operands, attrs)
    nm = em.fresh("t")
    if out is dt.bool:
        em.emit(f"{nm} = np.bool_({expr})")
    elif needs_name(compute, out):  # a float result stored as an integer: casts.py
        raw = em.fresh("t")
        em.emit(f"{raw} = {np_type(compute)}({expr})")
        em.emit(f"{nm} = {cast(raw, compute, out)}")
    else:
        em.emit(f"{nm} = {np_type(out)}({expr})")
    local[n.outputs[0].uid] = (nm, out)
