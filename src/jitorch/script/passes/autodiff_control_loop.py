"""The backward of a rewritten forward loop, for `autodiff_control.py` (see its module doc):
`loop_vjp(backward_tracer, node)` emits a `prim::Loop` over the same trip count that runs the
body's traced backward in reverse, carrying the loop-carried values' grads and accumulators for
the captured values, and runs it on the example so the trace can go on.
"""
from __future__ import annotations

from ..._tensor import Tensor
from .. import ir
from .autodiff_control_ops import (_const, _copy_fn, _is_none, _pyop, _run_nodes,
                                   _typed_fn, _zeros_like_fn)
from .types import _copy_node


def loop_vjp(bk, n: ir.Node) -> None:
    info = bk.infos[n]
    nc = info.nc
    outs = n.outputs[:nc]
    gouts = [bk.grads.get(o.uid) if c else None for o, c in zip(outs, info.carried_needs)]
    if all(g is None for g in gouts):
        return
    cenv: dict = {}
    mine: list = []
    trip = bk._tv(bk._value(info.trip_v), cenv)
    true = bk._add(_const(True, ir.BOOL), mine).output
    # the body's backward zeroes rows of its grad buffers in place: give it private copies
    inplace = any(m.op == "prim::PythonOp" and m.attrs.get("name") == "zero_row"
                  for m in info.body_bw.block.nodes)
    g_init, g_of = [], {}
    for k in range(nc):
        if not info.carried_needs[k]:
            continue
        g = gouts[k]
        if g is None:
            ref = bk._tv(bk._value(outs[k]), cenv)
            g_v = bk._add(_pyop("zeros_like", _zeros_like_fn, (ref,), ref.type), mine).output
        else:
            g_v = bk._typed(bk._tv(g, cenv), g, mine)
            if inplace:
                g_v = bk._add(_pyop("copy", _copy_fn, (g_v,), g_v.type),
                              mine).output
        g_of[k] = len(g_init)
        g_init.append(g_v)
    acc_init, acc_of = [], {}
    for c, cap in enumerate(info.caps):
        if not info.cap_needs[c]:
            continue
        ref = bk._tv(bk._value(cap), cenv)
        acc_of[c] = len(acc_init)
        acc_init.append(bk._add(_pyop("zeros_like", _zeros_like_fn, (ref,), ref.type), mine).output)
    buf_vals = [bk._tv(bk._value(b), cenv) for b in info.bufs]
    inv_caps = sorted({k[1] for k in info.kinds if k[0] == "cap"})
    inv_vals = [bk._tv(bk._value(info.caps[c]), cenv) for c in inv_caps]
    inv_sizes = sorted({k[1:] for k in info.kinds if k[0] == "capsize"})
    for c, d in inv_sizes:
        inv_vals.append(bk._tv(bk._shape(info.caps[c])[d], cenv))

    # the reversed body
    k_p = ir.Value(ir.INT, "k")
    g_ps = [ir.Value(v.type, "g") for v in g_init]
    acc_ps = [ir.Value(v.type, "acc") for v in acc_init]
    buf_ps = [ir.Value(v.type, "buf") for v in buf_vals]
    inv_ps = [ir.Value(v.type, "inv") for v in inv_vals]
    t_p = ir.Value(ir.INT, "T")
    bn: list = []
    one = _const(1, ir.INT)
    zero = _const(0, ir.INT)
    none = _const(None, ir.NONE)
    last = ir.Node("prim::ScalarOp", [t_p, one.output], (ir.INT,), attrs={"fn": "sub"})
    idx = ir.Node("prim::ScalarOp", [last.output, k_p], (ir.INT,), attrs={"fn": "sub"})
    bn += [one, zero, none, last, idx]
    rows = []
    for b in buf_ps:
        r = ir.Node("select", [b, zero.output, idx.output],
                    (ir.TensorType(b.type.dtype, (None,) * (b.type.ndim - 1)),))
        bn.append(r)
        rows.append(r.output)
    bw = info.body_bw
    bparams = bw.inputs
    vmap: dict = {}
    for j, c in enumerate(info.slice_caps):
        vmap[bparams[j].uid] = acc_ps[acc_of[c]]
    for j in range(1 + nc):
        p = bparams[info.n_acc + j]
        if j == 0 or isinstance(p.type, ir.NoneType) or (j - 1) not in g_of:
            vmap[p.uid] = none.output
        else:
            vmap[p.uid] = g_ps[g_of[j - 1]]
    for p, kind in zip(bparams[info.n_acc + 1 + nc:], info.kinds):
        if kind[0] == "i":
            vmap[p.uid] = idx.output
        elif kind[0] == "cap":
            vmap[p.uid] = inv_ps[inv_caps.index(kind[1])]
        elif kind[0] == "capsize":
            vmap[p.uid] = inv_ps[len(inv_caps) + inv_sizes.index(kind[1:])]
        elif kind[0] == "scalar":
            ts = ir.Node("prim::TensorToScalar", [rows[kind[1]]], (kind[2],),
                         attrs={"type": kind[2]})
            bn.append(ts)
            vmap[p.uid] = ts.output
        elif kind[0] == "size":
            sh = ir.Node("prim::GetAttr", [rows[kind[1]]], (ir.ListType(ir.INT),),
                         attrs={"name": "shape"})
            dn = _const(kind[2], ir.INT)
            gi = ir.Node("prim::ScalarOp", [sh.output, dn.output], (ir.INT,),
                         attrs={"fn": "getitem"})
            bn += [sh, dn, gi]
            vmap[p.uid] = gi.output
        else:
            vmap[p.uid] = rows[kind[1]]
    for m in bw.block.nodes:
        bn.append(_copy_node(m, vmap))
    rets = [vmap.get(r.uid, r) for r in bw.block.returns]
    new_g = []
    for k, j in g_of.items():
        r = rets[1 + k]
        if _is_none(r):
            z = _pyop("zeros_like", _zeros_like_fn, (g_ps[j],),
                      g_ps[j].type)
            bn.append(z)
            r = z.output
        else:
            t = _pyop("typed", _typed_fn, (r,), g_ps[j].type)
            bn.append(t)
            r = t.output
        new_g.append(r)
    new_acc = []
    for c, j in acc_of.items():
        r = rets[1 + nc + c]
        if _is_none(r):
            new_acc.append(acc_ps[j])
            continue
        t = _pyop("typed", _typed_fn, (r,), acc_ps[j].type)
        bn.append(t)
        r = t.output
        if c not in info.slice_caps:
            a = ir.Node("add", [acc_ps[j], r, one.output], (acc_ps[j].type,))
            bn.append(a)
            r = a.output
        new_acc.append(r)
    ttrue = _const(True, ir.BOOL)
    bn.append(ttrue)
    body = ir.Block([k_p] + g_ps + acc_ps + buf_ps + inv_ps + [t_p], bn,
                    [ttrue.output] + new_g + new_acc)
    loop = bk._add(ir.Node("prim::Loop", [trip, true] + g_init + acc_init + buf_vals +
                             inv_vals + [trip], [v.type for v in g_init + acc_init],
                             blocks=[body], loc=n.loc), mine)
    _run_nodes(mine, cenv)
    results = []
    for o in loop.outputs:
        x = cenv[o.uid]
        x = Tensor._make(x._data, x._dtype)  # a fresh object: the tracer binds by identity
        bk.tracer.bind(x, o)
        results.append(x)
    for k, j in g_of.items():
        bk._give(info.inits[k], results[j])
    for c, j in acc_of.items():
        bk._give(info.caps[c], results[len(g_init) + j])
