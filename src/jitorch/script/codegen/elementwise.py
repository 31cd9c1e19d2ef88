"""Elementwise groups, target-neutral: the scalar code of a group's members and the host-side
broadcast of its operands, shared by every target's group lowering (CPU:
targets/cpu/lower_elementwise.py, CUDA: targets/cuda/kernel.py).

- `scalar_expr` / `emit_member`: a member's registry `scalar` template filled in: operands cast
  to the op's compute dtype, numeric literals of the template typed (`np.float32(1.0)`: a bare
  `1.0` would compute a float32 op in float64), the result cast to the op's output dtype (so
  int32 arithmetic wraps like PyTorch's). The function names of the template go through the
  target's `spell` (CPU: vectorisable float32 helpers; CUDA: `math.*` for NumPy ufuncs).
- `loop_shape` / `broadcast_size`: the group's broadcast shape, checked at run time with
  PyTorch's message, and each input's 0/1 multipliers (0 on its size-1 dims);
- `group_inputs`, `loads`, `members`, `dependencies`, `single_group`: the group's operands, the
  indexed loads of its tensor inputs, its members in order, what each value depends on, and a
  lone elementwise op seen as a group of one.
"""
from __future__ import annotations

import ast
import re

from ... import _dtype as dt
from ..._ops import registry
from .. import ir
from ..passes import fuse
from ..passes.types import elementwise_dtypes
from . import NotLowered, literal, operand_checks
from .casts import cast, needs_name, scalar_dtype
from .emitter import Emitter, np_type, typed_literal


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
    expr = em.target.spell(em, opdef, compute, expr)  # the target's function names
    reps = {f"_OP{k}_": "(" + (operands[name] if name in operands else
                               attr_literal(attrs[name], compute)) + ")"
            for k, name in enumerate(opdef.params)}
    # one pass: a replacement (a string literal of a mode) is never scanned for placeholders
    return re.sub(r"_OP\d+_", lambda m: reps.get(m.group(0), m.group(0)), expr)


def attr_literal(v, compute: dt.dtype) -> str:
    if isinstance(v, str):  # a mode such as gelu's approximate
        return literal.text(v)
    if isinstance(v, bool) or v is None:
        return literal.value(v)
    if isinstance(v, (int, float)):
        if compute.category == dt.INT and isinstance(v, float):
            return literal.number(v)
        return typed_literal(v, compute) if compute is not dt.bool else literal.number(v)
    raise NotLowered(f"attribute of type {type(v).__name__} has no scalar form")


def single_group(em: Emitter, n: ir.Node):
    """A lone elementwise op as a group of one: (block, inputs, outputs) for a target's group
    lowering, or None if `n` is not an elementwise registry op."""
    opdef = registry.OPS.get(n.op)
    if opdef is None or opdef.kind != "elementwise":
        return None
    if not fuse.fusible(n, em.capabilities):
        raise NotLowered(f"op {n.op}: elementwise op without a scalar form for these types "
                         f"on {em.target.name}")
    block, ext = one_member_block(n)
    return block, ext, list(n.outputs)


def one_member_block(n: ir.Node):
    """(block, external inputs) of a lone elementwise node seen as a fused group of one member:
    its tensor inputs become the block's params (each once), scalar constants stay inline."""
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
    return ir.Block(params, [inner], list(n.outputs)), ext


def group_rank(em: Emitter, block: ir.Block) -> int:
    """The rank of the group's loop: that of its outputs, which must all have it."""
    rank = None
    for r in block.returns:
        t = em.tensor(r, complex_ok=True)  # (fuse.fusible admitted complex members)
        rank = t.ndim if rank is None else rank
        if t.ndim != rank:
            raise NotLowered("fused group outputs of different ranks")
    return rank


def group_inputs(em: Emitter, block: ir.Block, inputs: list, rank: int):
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
        cur = em.named("n", f"{cur} * ({s} == 1) + {s} * ({s} != 1)")
    if not cur.isidentifier():
        cur = em.named("n", cur)
    return cur


def loop_shape(em: Emitter, tensor_in, rank: int, rows: bool = False, mults: bool = True):
    """Emit the broadcast loop shape (checked) and each input's 0/1 multipliers. `rows`: a
    row region (lower_rows.py), where inputs read only through a row reduction may have
    another row length than the rest (`z + s.sum(-1, keepdim=True)`): the program cannot run
    that with one row length, so a last-dim mismatch re-runs the call in the interpreter,
    which computes it (or raises PyTorch's error for a real mismatch).

    A dim's checks are one condition and one raise (its message is the same for every pair of
    the dim, the sizes being `?`): each raise site, and each branch of an `and`, cost Numba
    ~10 ms of compile time, and a fused kernel of six inputs had 14 checks (issue 17)."""
    sizes = []
    for d in range(rank):
        cur, bad = None, []
        for k, (p, x, r) in enumerate(tensor_in):
            j = d - (rank - r)
            if j < 0:
                continue
            s = f"{x}.shape[{j}]"
            if cur is None:
                cur = s
                continue
            bad.append(f"(({s} != 1) & ({cur} != 1) & ({s} != {cur}))")
            cur = broadcast_size(em, [cur, s])
        if bad:
            em.emit(f"if {' | '.join(bad)}:")
            em.indent += 1
            if rows and d == rank - 1:
                em.raise_in_interpreter()
            else:
                em.raise_("RuntimeError", "The size of tensor a (", ("?",),
                          ") must match the size of tensor b (", ("?",),
                          f") at non-singleton dimension {d}")
            em.indent -= 1
        sizes.append(broadcast_size(em, [cur or "1"]))
    mult = {}
    for p, x, r in (tensor_in if mults else ()):  # (none for a loop that reads no multiplier)
        ms = []
        for j in range(r):
            ms.append(em.named("m", f"int({x}.shape[{j}] != 1)"))
        mult[p.uid] = ms
    return sizes, mult


def output_shape(em: Emitter, r: ir.Value, tensor_in, deps: dict, sizes: list, rank: int):
    """(shape expressions, multipliers or None) of the group output `r`: the broadcast of the
    tensor inputs it depends on (`deps`, dependencies()). None when that is the loop's whole
    shape; else its own 0/1 multipliers (a member of size `(1, n)` inside an `(m, n)` loop is
    written through them: rewritten with the same value)."""
    all_t = {p.uid for p, _, _ in tensor_in}
    dep = deps.get(r.uid, set()) & all_t
    if dep == all_t:
        return list(sizes), None
    shape_parts, om = [], []
    for d in range(rank):
        sd = broadcast_size(em, [f"{x}.shape[{d - (rank - rr)}]" for p, x, rr in tensor_in
                                 if p.uid in dep and d - (rank - rr) >= 0])
        shape_parts.append(sd)
        om.append(em.named("m", f"int({sd} != 1)"))
    return shape_parts, om


def loads(em: Emitter, tensor_in, local, mult, idx, rank) -> None:
    for p, x, r in tensor_in:
        if not r:
            ix = "()"
        else:
            ix = ", ".join(f"{idx[rank - r + j]} * {mult[p.uid][j]}" for j in range(r))
        nm = em.fresh("x")
        em.emit(f"{nm} = {x}[{ix}]")
        local[p.uid] = (nm, p.type.dtype)


def members(em: Emitter, nodes, local) -> None:
    consts = dict(em.consts)  # outer constants read by a lone op
    for n in nodes:
        if n.op == "prim::Constant":
            consts[n.output.uid] = n.attrs.get("value")
            continue
        emit_member(em, n, local, consts)


def dependencies(block: ir.Block) -> dict:
    """value uid -> set of block-param uids it is computed from."""
    deps = {p.uid: {p.uid} for p in block.params}
    for n in block.nodes:
        s = set()
        for v in n.inputs:
            s |= deps.get(v.uid, set())
        for o in n.outputs:
            deps[o.uid] = s
    return deps


def emit_member(em: Emitter, n: ir.Node, local: dict, consts: dict) -> None:
    opdef = registry.OPS.get(n.op)
    if opdef is None or opdef.kind != "elementwise" or not opdef.scalar:
        raise NotLowered(f"op {n.op}: not an elementwise op with a scalar form")
    r = elementwise_dtypes(opdef, n.inputs)
    if r is None:
        raise NotLowered(f"op {n.op}: operand dtypes unknown")
    compute, out = r
    ok = em.capabilities.fusible_dtypes(fuse.complex_ok(opdef))
    if compute not in ok or out not in ok:
        raise NotLowered(f"op {n.op}: dtype {compute} is not lowered on {em.target.name} yet")
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
                operands[name] = cast(e, d, compute)
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
            operands[name] = cast(e, d, compute)
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
