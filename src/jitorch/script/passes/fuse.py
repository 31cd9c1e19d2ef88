"""The fuser: groups chains of elementwise ops into `prim::Fused` nodes (one loop nest each).

Owns `run(graph) -> Graph` and `fusible(node, caps)`. Works on a specialised graph (types.py has
set dtype and rank) that names its target's capabilities (`graph.capabilities`,
passes/capabilities.py): which dtypes a loop may hold, whether row regions and reduction
prologues are lowered. Nothing here names a device. A group holds elementwise registry ops
whose `scalar` template the code generator can emit and whose outputs have one rank (the
group's loop rank); sizes may still differ (a `(1, n)` member inside a `(m, n)` group is fine:
the code generator writes every output through its own 0/1 broadcast multipliers).

The `prim::Fused` node's one block is closed: its params mirror the node's inputs (the values
the members read from outside), scalar constants the members read are copied into the block (so
attrs such as `alpha` stay visible as constants), and its returns are the member outputs used
after the group (mirrored by the node's outputs). Groups of a single op are left alone: the code
generator lowers a lone elementwise op as a group of one. Row regions (softmax / layer-norm
chains of last-dim reductions and the elementwise ops around them, `fuse_rows.py`) are formed
first, as `prim::Fused[kind='rows']` nodes.

Placement: a group sits where its last member was, or where its first member was when an earlier
consumer outside the group needs it there. A node joins a producer's group, and the other
producer groups it reads merge into that group, only where one of the two placements keeps every
value defined before its uses (`_order_ok` checks the whole block).
"""
from __future__ import annotations

import re

from ... import _dtype as dt
from ..._ops import registry
from .. import ir
from ..ir.values import const_value
from . import capabilities
from .capabilities import Capabilities
from .types import norm_dims, reduction_dtype

# a scalar template that is only operands, + - * and parentheses means the same for complex
# numbers in Numba (division is not: Numba raises ZeroDivisionError for complex / 0)
_ARITHMETIC = re.compile(r"(?:\{\w+\}|[\s+\-*()])*")


def complex_ok(op) -> bool:
    """May this elementwise op run on complex operands in a fused loop? Its declaration says
    so (`extra={"complex_scalar": True}`: abs, conj_physical), or its template is arithmetic."""
    if "complex_scalar" in op.extra:
        return bool(op.extra["complex_scalar"])
    return bool(op.scalar) and "**" not in op.scalar and \
        _ARITHMETIC.fullmatch(op.scalar) is not None
_INT_DIV = {"floor_divide", "remainder", "fmod", "div"}


def fusible(n: ir.Node, caps: Capabilities) -> bool:
    """Can the code generator of a target with `caps` emit this node as a scalar expression
    inside a loop nest?"""
    op = registry.OPS.get(n.op)
    if op is None or op.kind != "elementwise" or not op.scalar or len(n.outputs) != 1:
        return False
    ok = caps.fusible_dtypes(complex_ok(op))
    out = n.outputs[0].type
    if not isinstance(out, ir.TensorType) or out.dtype not in ok or out.ndim is None:
        return False
    by = dict(zip(op.params, n.inputs))
    for name in op.tensors:
        t = by[name].type
        if isinstance(t, ir.TensorType):
            if t.dtype not in ok or t.ndim is None:
                return False
        elif isinstance(t, ir.NoneType) and n.op == "clamp" and \
                not all(isinstance(by[k].type, ir.NoneType) for k in ("min", "max")):
            continue  # one-sided clamp: lowered with clamp_min/clamp_max's template
        elif not isinstance(t, (ir.IntType, ir.FloatType, ir.BoolType)):
            return False  # other None slots have no scalar form
    for a in op.attrs:
        ok, val = const_value(by[a])
        if not ok and isinstance(by[a].type, (ir.IntType, ir.FloatType)):
            continue  # a run-time number (alpha=-lr): an operand of the scalar expression
        if not ok or not isinstance(val, (int, float, bool, str, type(None))):
            return False  # a str (gelu's approximate) is a literal of the scalar template
    if n.op == "div":
        ok, mode = const_value(by["rounding_mode"])
        if mode is not None:
            return False
    if n.op in _INT_DIV:
        from .types import elementwise_dtypes
        r = elementwise_dtypes(op, n.inputs)
        if r is None or r[0].category <= dt.INT:
            return False  # integer division by zero raises in PyTorch
    return True


def run(graph: ir.Graph) -> ir.Graph:
    caps = capabilities.of(graph)  # what the graph's target lowers (passes/capabilities.py)
    _forward_list_stores(graph.block, caps)
    _fuse_block(graph.block, caps)
    return graph


# --- in-place chains on list elements (`exp_avgs[i].mul_(b).add_(g)`) ----------------------------
#
# The frontend writes each in-place method on a list element as
#     %x1 = lst0[i];  %o1 = op1(%x1, ...);  %w1 = _index_write(%x1, %o1, ());  %l1 = lst0[i] = %w1
#     %x2 = l1[i];    %o2 = op2(%x2, ...);  %w2 = _index_write(%x2, %o2, ());  %l2 = l1[i] = %w2
# so every method is its own loop and store. Two rewrites, before fusion:
# - load forwarding: %x2 (the element just written) holds %o1, so its readers read %o1 (a write
#   that targets %x2 targets %x1, the same element array); op2 then fuses with op1;
# - dead store: a write whose list value only feeds the next write to the same element is
#   dropped (the next write goes into lst0), when the next value is computed from %o1 (so its
#   shape check covers the dropped one's).
# Both need %o1 to be an elementwise op reading %x1 with the element's dtype and rank: its shape
# is the element's (or %w1's check raises), so %x2 and %o1 are equal wherever the program
# continues. targets/cpu/lower_list.py then stores the fused loop's results into the elements.

def _forward_list_stores(block: ir.Block, caps: Capabilities) -> None:
    for n in block.nodes:
        for b in n.blocks:
            _forward_list_stores(b, caps)
    changed = False
    while _forward_once(block, caps):
        changed = True
    if changed:
        _hoist_getitems(block)


def _hoist_getitems(block: ir.Block) -> None:
    """Move each `lst[i]`, scalar op (`-lr`) and scalar constant up to just after the
    definitions of its inputs, past nodes that do not take the list: pure values defined
    early let the fuser put a group at its first member (`p.add_(m, alpha=-lr)` after m's
    write joins m's loop)."""
    nodes = block.nodes
    k = 0
    while k < len(nodes):
        n = nodes[k]
        item = n.op == "prim::ScalarOp" and n.attrs.get("fn") == "getitem" and \
            len(n.inputs) == 2 and isinstance(n.inputs[0].type, ir.ListType)
        scalar = n.op in ("prim::ScalarOp", "prim::Constant") and n.outputs and not any(
            isinstance(v.type, (ir.TensorType, ir.ListType)) for v in n.inputs + n.outputs)
        if item or scalar:
            j = k
            while j > 0:
                prev = nodes[j - 1]
                if any(o is v for o in prev.outputs for v in n.inputs) or prev.blocks or \
                        (item and any(v is n.inputs[0] for v in prev.inputs)):
                    break
                j -= 1
            if j < k:
                nodes.insert(j, nodes.pop(k))
        k += 1


def _is_list_setitem(n) -> bool:
    return n is not None and n.op == "prim::PythonOp" and \
        n.attrs.get("name") == "list_setitem" and len(n.inputs) == 3


def _is_getitem(n, lst, idx) -> bool:
    return n is not None and n.op == "prim::ScalarOp" and n.attrs.get("fn") == "getitem" and \
        n.inputs[0] is lst and n.inputs[1] is idx


def _whole_write(w, x, caps: Capabilities) -> bool:
    """`w` = _index_write(x, o, ()) of an elementwise `o` that reads x, with x's dtype/rank."""
    if w is None or w.op != "_index_write" or w.inputs[0] is not x:
        return False
    ok, basic = const_value(w.inputs[2])
    o = w.inputs[1]
    if not ok or basic != () or o.node is None or not fusible(o.node, caps) or \
            not _reads(o.node, x, 32, caps):
        return False
    ot, xt = o.type, x.type
    return isinstance(ot, ir.TensorType) and isinstance(xt, ir.TensorType) and \
        ot.dtype is not None and ot.dtype is xt.dtype and ot.ndim == xt.ndim


def _reads(n, x, depth: int, caps: Capabilities) -> bool:
    """Does elementwise node `n` compute from `x` through elementwise ops (its shape then
    includes x's)?"""
    for v in n.inputs:
        if v is x:
            return True
        if depth and v.node is not None and fusible(v.node, caps) and \
                _reads(v.node, x, depth - 1, caps):
            return True
    return False


def _written_value(l1, i, here, caps: Capabilities):
    """(lst0, x1, o1, w1 node, s1 node) when `l1` is `lst0[i] = _index_write(x1, o1, ())` of a
    whole elementwise write (see above), else None."""
    s1 = l1.node
    if not _is_list_setitem(s1) or id(s1) not in here or s1.inputs[1] is not i:
        return None
    l0, _, w1v = s1.inputs
    w1 = w1v.node
    if w1 is None or w1.op != "_index_write":
        return None
    x1 = w1.inputs[0]
    if not _is_getitem(x1.node, l0, i) or not _whole_write(w1, x1, caps):
        return None
    return l0, x1, w1.inputs[1], w1, s1


def _forward_once(block: ir.Block, caps: Capabilities) -> bool:
    users: dict = {}
    for n in block.nodes:
        for v in n.inputs:
            users.setdefault(v.uid, []).append(n)
    for v in block.returns:
        users.setdefault(v.uid, []).append(None)
    here = {id(n) for n in block.nodes}
    for n in block.nodes:  # load forwarding
        if n.op != "prim::ScalarOp" or n.attrs.get("fn") != "getitem" or len(n.inputs) != 2:
            continue
        got = _written_value(n.inputs[0], n.inputs[1], here, caps)
        x2 = n.outputs[0]
        if got is None or None in users.get(x2.uid, []):
            continue
        _, x1, o1, _, _ = got
        for u in users.get(x2.uid, []):
            if u.op == "_index_write" and u.inputs[0] is x2:
                u.inputs = [x1] + [o1 if v is x2 else v for v in u.inputs[1:]]
            else:
                u.inputs = [o1 if v is x2 else v for v in u.inputs]
        block.nodes = [m for m in block.nodes if m is not n]
        return True
    for s2 in block.nodes:  # dead store
        if not _is_list_setitem(s2):
            continue
        l1, i, w2v = s2.inputs
        got = _written_value(l1, i, here, caps)
        w2 = w2v.node
        if got is None or w2 is None or w2.op != "_index_write":
            continue
        l0, x1, o1, w1, s1 = got
        o2n = w2.inputs[1].node
        if [u for u in users.get(l1.uid, [])] != [s2] or \
                [u for u in users.get(w1.outputs[0].uid, [])] != [s1] or \
                o2n is None or not any(v is o1 for v in o2n.inputs):
            continue
        s2.inputs = [l0] + list(s2.inputs[1:])
        block.nodes = [m for m in block.nodes if m is not s1 and m is not w1]
        return True
    return False


REDUCE_OPS = ("sum", "mean", "amax", "amin")


def _absorb_reductions(block: ir.Block, caps: Capabilities) -> None:
    """Move a last-dim reduction into the group that computes its only operand."""
    if not caps.reduction_prologues:
        return
    uses: dict = {}
    for n in block.nodes:
        for v in n.inputs:
            uses[v.uid] = uses.get(v.uid, 0) + 1
    for v in block.returns:
        uses[v.uid] = uses.get(v.uid, 0) + 1
    for r in list(block.nodes):
        if r.op not in REDUCE_OPS or len(r.outputs) != 1:
            continue
        x = r.inputs[0]
        p = x.node
        t = x.type
        if p is None or uses.get(x.uid) != 1 or not isinstance(t, ir.TensorType) or \
                not t.ndim or t.dtype is None:
            continue
        consts = [const_value(v) for v in r.inputs[1:]]
        if not all(ok for ok, _ in consts):
            continue
        dim = consts[0][1]
        if r.op in ("sum", "mean") and consts[2][1] is not None:
            continue
        try:
            if norm_dims(dim, t.ndim) != (t.ndim - 1,):
                continue
            if reduction_dtype(r.op, t, None) is not r.outputs[0].type.dtype:
                continue
        except (TypeError, IndexError, AttributeError):
            continue
        if r.op in ("amax", "amin") and t.dtype is dt.bool:
            continue
        if p.op != "prim::Fused":
            if not fusible(p, caps) or p not in block.nodes:
                continue
            sub: dict = {}
            consumers = {x.uid: [r]}
            fused = _make_fused([p], block, consumers, sub)
            block.nodes[block.nodes.index(p)] = fused
            r.inputs[0] = fused.outputs[0]
            p = fused
        elif len(p.outputs) != 1 or p.attrs.get("kind") == "rows":
            continue
        body = p.blocks[0]
        inner_x = body.returns[0]
        copies = []
        new_inputs = [inner_x]
        for v in r.inputs[1:]:
            c = ir.Node("prim::Constant", (), (v.type,), dict(v.node.attrs), loc=v.node.loc)
            copies.append(c)
            new_inputs.append(c.output)
        r.inputs = new_inputs
        body.nodes = copies + body.nodes + [r]
        out = ir.Value(r.outputs[0].type, r.outputs[0].name, node=p)
        body.returns = [r.outputs[0]]
        old = r.outputs[0]
        p.outputs = [out]
        p.attrs["ops"] = p.attrs.get("ops", "") + " -> " + r.op
        block.nodes.remove(r)
        for n in block.nodes:
            n.inputs = [out if v is old else v for v in n.inputs]
        block.returns = [out if v is old else v for v in block.returns]


def _fuse_block(block: ir.Block, caps: Capabilities) -> None:
    for n in block.nodes:
        for b in n.blocks:
            _fuse_block(b, caps)
    from .fuse_rows import fuse_rows
    fuse_rows(block, caps)  # softmax / layer-norm chains first: one loop nest over rows each
    nodes = block.nodes
    pos = {id(n): i for i, n in enumerate(nodes)}
    consumers: dict = {}  # value uid -> consumer nodes in this block
    for n in nodes:
        for v in n.inputs:
            consumers.setdefault(v.uid, []).append(n)
    group_of: dict = {}  # id(node) -> group {"nodes": [...], "rank": r, "at": "last"|"first"}
    groups: list = []
    for n in nodes:
        if not fusible(n, caps):
            continue
        rank = n.outputs[0].type.ndim
        cands = []
        for v in n.inputs:
            g = group_of.get(id(v.node)) if v.node is not None else None
            if g is not None and g["rank"] == rank and all(g is not c for c in cands):
                cands.append(g)
        home = None
        for g in cands:  # join the first group that keeps the order valid
            for at in ("last", "first"):
                saved = g.get("at", "last")
                g["nodes"].append(n)
                g["at"] = at
                if _order_ok(nodes, groups, pos):
                    home = g
                    break
                g["nodes"].pop()
                g["at"] = saved
            if home is not None:
                break
        if home is None:
            home = {"nodes": [n], "rank": rank, "at": "last"}
            groups.append(home)
        group_of[id(n)] = home
        merge_groups(home, cands, groups, group_of, nodes, pos)  # then the other producers
    multi = [g for g in groups if len(g["nodes"]) > 1]
    if not multi:
        _absorb_reductions(block, caps)
        return
    replace, sub = {}, {}
    for g in multi:
        members = g["nodes"]
        anchor = members[-1] if g["at"] == "last" else members[0]
        replace[id(anchor)] = _make_fused(members, block, consumers, sub)
    fused_members = {id(m) for g in multi for m in g["nodes"]}
    new_nodes = []
    for n in nodes:
        if id(n) in replace:
            new_nodes.append(replace[id(n)])
        elif id(n) not in fused_members:
            new_nodes.append(n)
    for n in new_nodes:  # later uses of escaping member outputs read the fused outputs
        n.inputs = [sub.get(v.uid, v) for v in n.inputs]
    block.returns = [sub.get(v.uid, v) for v in block.returns]
    block.nodes = new_nodes
    _absorb_reductions(block, caps)


def merge_groups(home: dict, cands, groups: list, group_of: dict, nodes, pos) -> None:
    """Merge each other candidate group into `home` where the block's order stays valid
    (`home` placed at its last or first member); a merge that cannot be placed is undone."""
    for g in cands:
        if g is home or g not in groups:
            continue
        saved = (list(home["nodes"]), home["at"])
        groups.remove(g)
        home["nodes"] = sorted(home["nodes"] + g["nodes"], key=lambda m: pos[id(m)])
        ok = False
        for at in ("last", "first"):
            home["at"] = at
            if _order_ok(nodes, groups, pos):
                ok = True
                break
        if ok:
            for m in g["nodes"]:
                group_of[id(m)] = home
        else:
            home["nodes"], home["at"] = saved
            groups.append(g)


def _order_ok(nodes, groups, pos) -> bool:
    """Would every value still be defined before its first use once the groups are placed?"""
    slot = {id(n): pos[id(n)] for n in nodes}
    owner = {}
    for k, g in enumerate(groups):
        members = g["nodes"]
        at = pos[id(members[-1] if g.get("at", "last") == "last" else members[0])]
        for m in members:
            slot[id(m)] = at
            owner[id(m)] = k
    for n in nodes:
        for v in n.inputs:
            d = v.node
            if d is None or id(d) not in slot:
                continue
            if id(n) in owner and d.op == "prim::Constant" and \
                    not isinstance(v.type, ir.TensorType):
                continue  # copied into the block
            same = id(d) in owner and owner.get(id(d)) == owner.get(id(n))
            if not same and slot[id(d)] >= slot[id(n)]:
                return False
    return True


def _make_fused(members, block: ir.Block, consumers, sub: dict) -> ir.Node:
    ids = {id(m) for m in members}
    outer_inputs, params, vmap, const_nodes = [], [], {}, []
    for m in members:
        for v in m.inputs:
            if v.uid in vmap or (v.node is not None and id(v.node) in ids):
                continue
            if v.node is not None and v.node.op == "prim::Constant" and \
                    not isinstance(v.type, ir.TensorType):
                c = ir.Node("prim::Constant", (), (v.type,), dict(v.node.attrs), loc=v.node.loc)
                const_nodes.append(c)
                vmap[v.uid] = c.output
                continue
            p = ir.Value(v.type, v.name)
            vmap[v.uid] = p
            params.append(p)
            outer_inputs.append(v)
    returned = {v.uid for v in block.returns}
    escaping = []
    for m in members:
        for o in m.outputs:
            if o.uid in returned or any(id(c) not in ids for c in consumers.get(o.uid, ())):
                escaping.append(o)
    for m in members:
        m.inputs = [vmap.get(v.uid, v) for v in m.inputs]
    body = ir.Block(params, const_nodes + list(members), list(escaping))
    ops = " -> ".join(m.op for m in members)
    fused = ir.Node("prim::Fused", outer_inputs, [o.type for o in escaping],
                    attrs={"ops": ops}, blocks=[body], loc=members[0].loc)
    sub.update({o.uid: f for o, f in zip(escaping, fused.outputs)})
    return fused
