"""Autodiff of `prim::If` for `autodiff_control.py`: `build_if` rewrites the forward If (both
branches differentiated on the example, each branch's saved values returned through output
slots, dummies from the other branch) and `if_vjp` emits the backward If over the branches'
traced backwards. Functions of the builder / backward tracer they are called from.
"""
from __future__ import annotations

from ..._tensor import Tensor
from .. import ir
from . import autodiff as ad
from .autodiff import NotDifferentiable
from .autodiff_control_ops import (_const, _empty_buffer_fn, _is_none, _pyop, _run_nodes,
                                   _ttype, _typed_fn, _zeros_like_fn)
from .types import _copy_node


def build_if(bld, n: ir.Node) -> None:
    """Both branches differentiated on the example (the one not taken runs too: if it
    fails there, NotDifferentiable); the forward If also returns each branch's saved
    values (dummies from the other branch); the backward is an If over their backwards."""
    from .autodiff_control_build import _Builder
    vm = bld.vmap
    if not n.inputs or len(n.blocks) != 2 or any(
            len(b.params) != len(n.inputs) - 1 or len(b.returns) != len(n.outputs)
            for b in n.blocks):
        raise NotDifferentiable("a malformed prim::If is not differentiated")
    cond_v = vm.get(n.inputs[0].uid, n.inputs[0])
    caps = [vm.get(v.uid, v) for v in n.inputs[1:]]
    cond = bld.env[cond_v.uid]
    if not isinstance(cond, bool):
        raise NotDifferentiable(f"an if on a {type(cond).__name__} condition is not "
                                "differentiated by the compiler")
    cap_vals = [bld.env[v.uid] for v in caps]
    cap_needs = [v.uid in bld.needs for v in caps]
    for v, w in zip(caps, cap_needs):
        if w and not ad._is_float_tensor(bld.env[v.uid]):
            raise NotDifferentiable("an if reading a list or tuple that needs grad is not "
                                    "differentiated by the compiler")
    branches = []
    for k, b in enumerate(n.blocks):
        sub = _Builder(ir.Graph(f"{bld.graph.name}_{'then' if k == 0 else 'else'}", b),
                       cap_vals, cap_needs, symbolic=bld.symbolic)
        try:
            branches.append(sub.build() + (sub,))
        except NotDifferentiable:
            raise
        except Exception as e:
            raise NotDifferentiable(f"the branch not taken fails on the example "
                                    f"({type(e).__name__}: {e})") from e
    n_out = len(n.outputs)
    slot_vals, kinds = [], [[], []]   # per branch: how its backward gets each saved value
    for k, (fb, _, saved, _, sub) in enumerate(branches):
        pos = {p.uid: j for j, p in enumerate(fb.inputs)}
        for v in saved:
            if isinstance(v, ad._SizeRef):
                j = pos.get(v.value.uid)
                if j is not None:
                    kinds[k].append(("capsize", j, v.dim))
                    continue
                sh = ir.Node("prim::GetAttr", [v.value], (ir.ListType(ir.INT),),
                             attrs={"name": "shape"})
                dn = _const(v.dim, ir.INT)
                gi = ir.Node("prim::ScalarOp", [sh.output, dn.output], (ir.INT,),
                             attrs={"fn": "getitem"})
                fb.block.nodes += [sh, dn, gi]
                sub.env[gi.output.uid] = sub.env[v.value.uid]._data.shape[v.dim]
                v = gi.output
            elif v.uid in pos:
                kinds[k].append(("cap", pos[v.uid]))
                continue
            kinds[k].append(("slot", len(slot_vals)))
            slot_vals.append((k, v, sub.env[v.uid]))
    for k, (fb, _, _, _, _) in enumerate(branches):
        rets = list(fb.block.returns)
        for j, (kb, v, x) in enumerate(slot_vals):
            if kb == k:
                rets.append(v)
                continue
            if isinstance(x, Tensor):
                d = _pyop("empty_buffer", _empty_buffer_fn(x._dtype, x._data.ndim - 1),
                          (), _ttype(x), dtype=x._dtype,
                          rank=x._data.ndim - 1)
            elif isinstance(x, (int, float)) and not isinstance(x, bool):
                d = _const(type(x)(0), ir.INT if isinstance(x, int) else ir.FLOAT)
            else:
                raise NotDifferentiable(f"an if branch's backward reads a "
                                        f"{type(x).__name__}; it is not compiled")
            fb.block.nodes.append(d)
            rets.append(d.output)
        fb.block.returns = rets
    out_types = [o.type for o in n.outputs] + [
        _ttype(x) if isinstance(x, Tensor) else (ir.INT if isinstance(x, int) else ir.FLOAT)
        for _, _, x in slot_vals]
    m = ir.Node("prim::If", [cond_v] + caps, out_types,
                blocks=[branches[0][0].block, branches[1][0].block], loc=n.loc)
    for o, mo in zip(n.outputs, m.outputs):
        mo.name = o.name
        vm[o.uid] = mo
    bld._emit([m])
    bld.dynamic.update(o.uid for o in m.outputs)
    for j, o in enumerate(m.outputs[:n_out]):
        if not any(br[0].block.returns[j].uid in br[4].needs for br in branches):
            continue
        x = bld.env[o.uid]
        if ad._is_float_tensor(x):
            bld.needs.add(o.uid)
        elif isinstance(x, (list, tuple)) and any(map(ad._is_float_tensor, x)):
            # never dropped silently: the interpreter's eager autograd runs this graph
            raise NotDifferentiable(f"an if whose {type(x).__name__} output needs grad is not "
                                    "differentiated by the compiler")
    bld.infos[m] = _IfInfo(n_out, [br[1] for br in branches], kinds, cond_v, caps,
                            cap_needs, m.outputs[n_out:])


class _IfInfo:
    def __init__(self, n_out, bws, kinds, cond_v, caps, cap_needs, slots):
        self.n_out, self.bws, self.kinds, self.cond_v = n_out, bws, kinds, cond_v
        self.caps, self.cap_needs, self.slots = caps, cap_needs, slots


def if_vjp(bk, n: ir.Node) -> None:
    info = bk.infos[n]
    outs = n.outputs[:info.n_out]
    gouts = [bk.grads.get(o.uid) for o in outs]
    if all(g is None for g in gouts):
        return
    tr = bk.tracer
    cenv: dict = {}
    mine: list = []
    cond = bk.env[info.cond_v.uid]
    if info.cond_v.uid in bk.dynamic:
        cv = bk.sym_param.get(("cond", info.cond_v.uid))
        if cv is None:  # the condition, saved as a bool
            cv = ir.Value(ir.BOOL, f"saved_{len(bk.saved)}")
            tr.block.params.append(cv)
            bk.saved.append(info.cond_v)
            bk.sym_param[("cond", info.cond_v.uid)] = cv
    else:
        cv = tr.constant(cond)
    cenv[cv.uid] = cond
    g_vals = []
    for o, g in zip(outs, gouts):
        if o.uid not in bk.needs:
            g_vals.append(None)
        elif g is None:
            ref = bk._tv(bk._value(o), cenv)
            g_vals.append(bk._add(_pyop("zeros_like", _zeros_like_fn,
                                          (ref,), ref.type),
                                    mine).output)
        else:
            g_vals.append(bk._typed(bk._tv(g, cenv), g, mine))
    ext = [v for v in g_vals if v is not None]
    slot_vals = [bk._tv(bk._value(s), cenv) for s in info.slots]
    cap_vals = [bk._tv(bk._value(c), cenv)
                if isinstance(bk.env[c.uid], (Tensor, int, float)) else None
                for c in info.caps]
    ext += slot_vals + [v for v in cap_vals if v is not None]
    size_keys = sorted({k[1:] for ks in info.kinds for k in ks if k[0] == "capsize"})
    size_vals = []
    for c, d in size_keys:
        size_vals.append(bk._tv(bk._shape(info.caps[c])[d], cenv))
    ext += size_vals
    need_caps = [c for c, w in enumerate(info.cap_needs) if w]
    blocks = []
    for b, bw in enumerate(info.bws):
        params = [ir.Value(v.type, "x") for v in ext]
        pm = {v.uid: p for v, p in zip(ext, params)}
        none = _const(None, ir.NONE)
        bn: list = [none]
        vmap: dict = {}
        for j, p in enumerate(bw.inputs[:info.n_out]):
            gv = g_vals[j]
            vmap[p.uid] = (none.output if gv is None or isinstance(p.type, ir.NoneType)
                           else pm[gv.uid])
        for p, kind in zip(bw.inputs[info.n_out:], info.kinds[b]):
            if kind[0] == "slot":
                vmap[p.uid] = pm[slot_vals[kind[1]].uid]
            elif kind[0] == "cap":
                cvv = cap_vals[kind[1]]
                if cvv is None:
                    raise NotDifferentiable("an if branch's backward reads a captured "
                                            "non-tensor value")
                vmap[p.uid] = pm[cvv.uid]
            else:
                vmap[p.uid] = pm[size_vals[size_keys.index(kind[1:])].uid]
        for m in bw.block.nodes:
            bn.append(_copy_node(m, vmap))
        rets = []
        for c in need_caps:
            r = vmap.get(bw.block.returns[c].uid, bw.block.returns[c])
            if _is_none(r):
                z = _pyop("zeros_like", _zeros_like_fn, (pm[cap_vals[c].uid],), cap_vals[c].type)
            else:
                z = _pyop("typed", _typed_fn, (r,), cap_vals[c].type)
            bn.append(z)
            rets.append(z.output)
        blocks.append(ir.Block(params, bn, rets))
    node = bk._add(ir.Node("prim::If", [cv] + ext, [cap_vals[c].type for c in need_caps],
                             blocks=blocks, loc=n.loc), mine)
    _run_nodes(mine, cenv)
    for c, o in zip(need_caps, node.outputs):
        x = cenv[o.uid]
        x = Tensor._make(x._data, x._dtype)
        tr.bind(x, o)
        bk._give(info.caps[c], x)
