"""Row fusion: softmax / layer-norm patterns become one `prim::Fused[kind='rows']` node.

Owns `fuse_rows(block, caps)`, run by `fuse.run` before elementwise grouping. A row region is a
connected set of
- reductions `sum`/`mean`/`amax`/`amin`/`logsumexp`/`_max_shift` of a float32/float64 tensor
  of rank R >= 1 over the last dim with `keepdim=True` (default dtype), and
- fusible elementwise ops (`fuse.fusible`) whose output has rank R,
in which a full-size member reads a reduction's result: the broadcast of a per-row value back
along the row (`x - x.amax(-1, keepdim=True)`; a per-row epilogue such as `x.mean(-1, True) + 1`
alone is left to the elementwise fuser's reduction prologues). Such a chain otherwise runs as
several loops over the whole tensor with full-size temporaries; as one node the code generator
(`targets/cpu/lower_rows.py`) emits one outer loop over rows with several inner passes over the row.

Members keep their order; the node is placed where one of its members was (`fuse._order_ok`
checks that every value stays defined before its uses). Values read from outside are the node's
inputs, member outputs used after the region are its outputs (full-size ones and per-row ones).
"""
from __future__ import annotations

from ... import _dtype as dt
from .. import ir
from ..ir.values import const_value
from .types import norm_dims, reduction_dtype

ROW_REDUCE = ("sum", "mean", "amax", "amin", "logsumexp", "_max_shift")
_FLOATS = (dt.float32, dt.float64)
ENABLED = True


def row_reduction_rank(n: ir.Node):
    """The input rank R when `n` is a last-dim keepdim float reduction a row region can hold."""
    if n.op not in ROW_REDUCE or len(n.outputs) != 1 or not n.inputs:
        return None
    t = n.inputs[0].type
    if not isinstance(t, ir.TensorType) or not t.ndim or t.dtype not in _FLOATS:
        return None
    consts = [const_value(v) for v in n.inputs[1:]]
    if not all(ok for ok, _ in consts) or len(consts) < 2:
        return None
    dim, keepdim = consts[0][1], consts[1][1]
    if keepdim is not True:
        return None
    if n.op in ("sum", "mean") and (len(consts) < 3 or consts[2][1] is not None):
        return None
    if n.op != "logsumexp" and len(consts) < 2:
        return None
    try:
        if norm_dims(dim, t.ndim) != (t.ndim - 1,):
            return None
        if reduction_dtype(n.op, t, None) is not n.outputs[0].type.dtype:
            return None
    except (TypeError, IndexError, AttributeError):
        return None
    o = n.outputs[0].type
    if not isinstance(o, ir.TensorType) or o.ndim != t.ndim:
        return None
    return t.ndim


def _member_rank(n: ir.Node, caps):
    from .fuse import fusible
    r = row_reduction_rank(n)
    if r is not None:
        return r
    if fusible(n, caps):
        rk = n.outputs[0].type.ndim
        return rk if rk else None
    return None


def fuse_rows(block: ir.Block, caps) -> None:
    """Replace each row region of `block` (not nested blocks) by one prim::Fused node, where
    the target lowers row regions (`caps`: passes/capabilities.py)."""
    from .fuse import _make_fused, _order_ok, merge_groups
    nodes = block.nodes
    if not ENABLED or not caps.row_regions or \
            not any(row_reduction_rank(n) is not None for n in nodes):
        return
    pos = {id(n): i for i, n in enumerate(nodes)}
    consumers: dict = {}
    for n in nodes:
        for v in n.inputs:
            consumers.setdefault(v.uid, []).append(n)
    group_of: dict = {}
    groups: list = []
    for n in nodes:
        rank = _member_rank(n, caps)
        if rank is None:
            continue
        cands = []
        for v in n.inputs:
            g = group_of.get(id(v.node)) if v.node is not None else None
            if g is None or g["rank"] != rank or any(g is c for c in cands):
                continue
            if v.node.op in ROW_REDUCE or isinstance(v.type, ir.TensorType) and \
                    v.type.ndim == rank:
                cands.append(g)
        home = None
        for g in cands:
            for at in ("last", "first"):
                saved = g["at"]
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
        merge_groups(home, cands, groups, group_of, nodes, pos)
    keep = [g for g in groups if _broadcasts_a_row_value(g["nodes"])]
    if not keep:
        return
    replace, sub = {}, {}
    for g in keep:
        members = g["nodes"]
        anchor = members[-1] if g["at"] == "last" else members[0]
        f = _make_fused(members, block, consumers, sub)
        f.attrs = {"kind": "rows", **f.attrs}
        replace[id(anchor)] = f
    fused_members = {id(m) for g in keep for m in g["nodes"]}
    new_nodes = []
    for n in nodes:
        if id(n) in replace:
            new_nodes.append(replace[id(n)])
        elif id(n) not in fused_members:
            new_nodes.append(n)
    for n in new_nodes:
        n.inputs = [sub.get(v.uid, v) for v in n.inputs]
    block.returns = [sub.get(v.uid, v) for v in block.returns]
    block.nodes = new_nodes


def _broadcasts_a_row_value(members) -> bool:
    """Does a member read a per-row value along the row (a full-size op of a row value)?"""
    row = set()  # uids of per-row values: reduction results and ops of per-row values only
    for m in members:
        o = m.outputs[0]
        if m.op in ROW_REDUCE:
            row.add(o.uid)
            continue
        tensors = [v for v in m.inputs if isinstance(v.type, ir.TensorType)]
        reads_row = any(v.uid in row for v in tensors)
        if all(v.uid in row or v.type.ndim == 0 for v in tensors):
            row.add(o.uid)
        elif reads_row:
            return True
    return False
