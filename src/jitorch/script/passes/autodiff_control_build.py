"""The builder of autodiff through control flow (autodiff_control.py's method, which its module
doc describes): `_Builder` makes the forward graph node by node, rewriting each loop/if whose
inputs carry gradient (saved per-iteration values into loop-carried buffers), and `_CtlBackward`
traces the backward, delegating a loop's backward to autodiff_control_loop.py and an If's to
autodiff_control_if.py. The analysis at the top decides which values need a gradient.
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from ..._ops import registry
from ..._tensor import Tensor
from .. import ir
from ..._ops.factories import is_factory
from . import autodiff as ad
from . import autodiff_control_if as control_if
from . import autodiff_control_loop as control_loop
from . import autodiff_control_write as control_write
from .autodiff import NotDifferentiable
from .autodiff_control_ops import (_empty_buffer_fn, _index_acc_fn, _meta, _pyop, _run_nodes,
                                   _stack_store_fn, _ttype, _typed_fn, run_unchecked)
from .autodiff_sym import _plain
from .types import _copy_node

_CONTROL = ("prim::Loop", "prim::If")



# --- analysis -----------------------------------------------------------------------------------
def _users(block: ir.Block) -> dict:
    users: dict = {}
    for n in block.nodes:
        for v in n.inputs:
            users.setdefault(v.uid, []).append(n)
    return users


def _analyse_node(n, needs, dynamic, env, users_of) -> None:
    """autodiff._analyse for one node, plus list outputs that the graph unpacks (chunk)."""
    if any(v.uid in dynamic for v in n.inputs):
        dynamic.update(o.uid for o in n.outputs)
    if not any(v.uid in needs for v in n.inputs):
        return
    if n.op == "prim::ListConstruct":
        needs.add(n.output.uid)
        return
    if n.op == "prim::TupleConstruct":
        needs.add(n.output.uid)
        return
    if n.op in ("prim::ListUnpack", "prim::TupleUnpack", "prim::TupleIndex"):
        needs.update(o.uid for o in n.outputs if ad._is_float_tensor(env.get(o.uid)))
        return
    if n.op in ad._NONDIFF_PRIMS or is_factory(n.op):  # factory outputs never need grad
        return
    if n.op.startswith("prim::"):
        raise NotDifferentiable(f"'{n.op}' on a value that requires grad")
    op = registry.OPS.get(n.op)
    if op is None:
        raise NotDifferentiable(f"'{n.op}' is not a registry op")
    if op.nondiff or op.vjp is None:
        return
    by_name = dict(zip(op.params, n.inputs))
    if not any(by_name[s].uid in needs for s in op.grad_slots):
        return
    for k, o in enumerate(n.outputs):
        val = env[o.uid]
        if isinstance(val, (list, tuple)):
            us = users_of(k)
            if not us or any(u.op != "prim::ListUnpack" for u in us) or len(us) > 1:
                raise NotDifferentiable(f"'{n.op}' returns a list used other than by unpacking; "
                                        "its gradient is not compiled")
            if any(not ad._is_float_tensor(e) for e in val):
                raise NotDifferentiable(f"'{n.op}' returns a list of non-float tensors")
            needs.add(o.uid)
        elif ad._is_float_tensor(val):
            if val._dtype.category == dt.COMPLEX:
                raise NotDifferentiable("autograd through complex tensors")
            needs.add(o.uid)


def _analyse_block(block, wrt, env) -> set:
    needs = {p.uid for p, w in zip(block.params, wrt) if w}
    dynamic = {p.uid for p in block.params}
    users = _users(block)
    for n in block.nodes:
        if n.op in _CONTROL:  # conservative: float outputs need grad if any input does
            if any(v.uid in needs for v in n.inputs):
                for o in n.outputs:
                    val = env.get(o.uid)
                    if isinstance(val, (list, tuple)) and any(map(ad._is_float_tensor, val)):
                        # never dropped silently: the interpreter's eager autograd runs it
                        raise NotDifferentiable(f"'{n.op}' carries a {type(val).__name__} of "
                                                "tensors that may need grad")
                needs.update(o.uid for o in n.outputs if ad._is_float_tensor(env.get(o.uid)))
            continue
        _analyse_node(n, needs, dynamic, env,
                      lambda k, n=n: users.get(n.outputs[k].uid, []))
    return needs


# --- one loop's forward/backward ----------------------------------------------------------------
class _LoopInfo:
    """What the backward of one rewritten forward loop needs (see module doc)."""

    def __init__(self, nc, body_bw, kinds, n_acc, slice_caps, carried_needs, cap_needs,
                 trip_v, inits, caps, bufs):
        self.nc, self.body_bw, self.kinds, self.n_acc = nc, body_bw, kinds, n_acc
        self.slice_caps, self.carried_needs, self.cap_needs = slice_caps, carried_needs, cap_needs
        self.trip_v, self.inits, self.caps, self.bufs = trip_v, inits, caps, bufs


def _is_const_true(v: ir.Value) -> bool:
    n = v.node
    return n is not None and n.op == "prim::Constant" and n.attrs.get("value") is True


def _slice_caps(body: ir.Block, nc: int, cap_needs) -> list:
    """Captured params (indices) read only through `select(p, const dim, runtime index)`."""
    caps = body.params[1 + nc:]
    users = _users(body)
    out = []
    for c, p in enumerate(caps):
        us = users.get(p.uid, [])
        if not cap_needs[c] or not us:
            continue
        ok = all(u.op == "select" and u.inputs[0] is p and u.inputs[2] is not p and
                 u.inputs[1].node is not None and u.inputs[1].node.op == "prim::Constant" and
                 not (u.inputs[2].node is not None and u.inputs[2].node.op == "prim::Constant")
                 for u in us)
        if ok:
            out.append(c)
    return out


# --- the driver ---------------------------------------------------------------------------------
class _Builder:
    """Builds the forward graph of one block (run on its example as it is built) and traces the
    backward. `slice_caps`: for a loop body, the captured params (by position among all params)
    whose grads accumulate in place into accumulator inputs."""

    def __init__(self, graph: ir.Graph, args, wrt, slice_params=(), symbolic=True,
                 in_loop=False):
        self.graph, self.args, self.wrt = graph, list(args), list(wrt)
        self.in_loop = in_loop
        self.symbolic = symbolic
        self.slice_params = list(slice_params)
        self.vmap: dict = {}
        self.env: dict = {}
        self.needs: set = set()
        self.dynamic: set = set()
        self.infos: dict = {}   # forward loop node -> _LoopInfo
        self.nodes: list = []

    def build(self):
        g = self.graph
        params = []
        for p, a, w in zip(g.inputs, self.args, self.wrt):
            q = ir.Value(p.type, p.name)
            self.vmap[p.uid] = q
            params.append(q)
            self.env[q.uid] = a
            self.dynamic.add(q.uid)
            if w:
                self.needs.add(q.uid)
        users = _users(g.block)
        for n in g.block.nodes:
            if n.op == "prim::Loop" and any(self.vmap.get(v.uid, v).uid in self.needs
                                            for v in n.inputs):
                self._loop(n)
                continue
            # an If without outputs (a check that raises) has nothing to differentiate
            if n.op == "prim::If" and n.outputs and any(self.vmap.get(v.uid, v).uid in
                                                        self.needs for v in n.inputs):
                control_if.build_if(self, n)
                continue
            m = _copy_node(n, self.vmap)
            self._emit([m])
            if n.op in _CONTROL:  # no input needs grad: nothing inside does
                if any(v.uid in self.dynamic for v in m.inputs):
                    self.dynamic.update(o.uid for o in m.outputs)
            else:
                _analyse_node(m, self.needs, self.dynamic, self.env,
                              lambda k, n=n: users.get(n.outputs[k].uid, []))
        fwd = ir.Graph(g.name, ir.Block(params, self.nodes,
                                        [self.vmap.get(r.uid, r) for r in g.block.returns]))
        bw = _CtlBackward(fwd, self.env, self.needs, self.dynamic, self.infos,
                          [fwd.inputs[k] for k in self.slice_params], self.symbolic,
                          self.in_loop)
        backward = bw.trace()
        return fwd, backward, bw.saved, bw

    def _emit(self, nodes) -> None:
        _run_nodes(nodes, self.env)
        self.nodes.extend(nodes)

    def _loop(self, n: ir.Node) -> None:
        vm = self.vmap
        nc = len(n.outputs)
        if len(n.inputs) < 2 + nc or len(n.blocks) != 1 or \
                len(n.blocks[0].returns) != 1 + nc or \
                len(n.blocks[0].params) != len(n.inputs) - 1:
            raise NotDifferentiable("a malformed prim::Loop is not differentiated")
        trip_v, cond_v = vm.get(n.inputs[0].uid, n.inputs[0]), vm.get(n.inputs[1].uid, n.inputs[1])
        inits = [vm.get(v.uid, v) for v in n.inputs[2:2 + nc]]
        caps = [vm.get(v.uid, v) for v in n.inputs[2 + nc:]]
        body = n.blocks[0]
        trip = self.env[trip_v.uid]
        if trip is None or not isinstance(trip, int):
            raise NotDifferentiable("a loop without a trip count (while) is not differentiated "
                                    "by the compiler")
        if self.env[cond_v.uid] is not True or not _is_const_true(body.returns[0]):
            raise NotDifferentiable("a loop with a computed condition (while / break) is not "
                                    "differentiated by the compiler")
        if trip <= 0:
            raise NotDifferentiable("the loop ran 0 times in the example call; its body cannot "
                                    "be differentiated from it")
        for v, o in zip(inits, n.outputs):
            x = self.env[v.uid]
            if not isinstance(x, (Tensor, int, float, bool)):
                raise NotDifferentiable(f"a loop carrying a {type(x).__name__} is not "
                                        "differentiated by the compiler")
        for v in caps:
            if v.uid in self.needs and not ad._is_float_tensor(self.env[v.uid]):
                raise NotDifferentiable("a loop reading a list or tuple that needs grad is "
                                        "not differentiated by the compiler")
        init_vals = [self.env[v.uid] for v in inits]
        cap_vals = [self.env[v.uid] for v in caps]
        example = [0] + init_vals + cap_vals
        env0: dict = {}
        run_unchecked(body, example, env0)
        cap_needs = [v.uid in self.needs for v in caps]
        carried = [v.uid in self.needs for v in inits]
        for _ in range(nc + 1):  # fixpoint: a carried value needs grad if its next one does
            bneeds = _analyse_block(body, [False] + carried + cap_needs, env0)
            new = [c or (r.uid in bneeds and ad._is_float_tensor(env0.get(r.uid)))
                   for c, r in zip(carried, body.returns[1:])]
            if new == carried:
                break
            carried = new
        slice_caps = _slice_caps(body, nc, cap_needs)
        sub = _Builder(ir.Graph(self.graph.name + "_body", body), example,
                       [False] + carried + cap_needs,
                       slice_params=[1 + nc + c for c in slice_caps], symbolic=self.symbolic,
                       in_loop=True)
        fb, body_bw, saved, _ = sub.build()
        # classify what the body's backward reads: the counter, a captured value, or a
        # per-iteration value (stacked)
        pos = {p.uid: k for k, p in enumerate(fb.inputs)}
        kinds, stacked = [], []
        for v in saved:
            if isinstance(v, ad._SizeRef):  # a size the body's backward reads
                k = pos.get(v.value.uid)
                if k is not None and k >= 1 + nc:
                    kinds.append(("capsize", k - 1 - nc, v.dim))
                    continue
                # a per-iteration value's size: read it from the value's stacked rows
                if v.value not in stacked:
                    stacked.append(v.value)
                kinds.append(("size", stacked.index(v.value), v.dim))
                continue
            k = pos.get(v.uid)
            if k == 0:
                kinds.append(("i",))
            elif k is not None and k >= 1 + nc:
                kinds.append(("cap", k - 1 - nc))
            else:
                x = sub.env[v.uid]
                if not isinstance(x, (Tensor, int, float)):
                    raise NotDifferentiable(f"a loop body's backward reads a per-iteration "
                                            f"{type(x).__name__}; it is not compiled")
                if v not in stacked:
                    stacked.append(v)
                kinds.append(("stack", stacked.index(v)) if isinstance(x, Tensor) else
                             ("scalar", stacked.index(v), ir.BOOL if isinstance(x, bool) else
                              ir.INT if isinstance(x, int) else ir.FLOAT))
        # the forward loop: buffers carried after the original carried values
        pre, bufs_init = [], []
        for v in stacked:
            d, r = _meta(sub.env[v.uid])
            e = _pyop("empty_buffer", _empty_buffer_fn(d, r), (),
                      ir.TensorType(d, (None,) * (r + 1)), dtype=d, rank=r)
            pre.append(e)
            bufs_init.append(e.output)
        bparams = fb.inputs
        buf_params = [ir.Value(e.output.type, f"buf{j}") for j, e in enumerate(pre)]
        t_param = ir.Value(ir.INT, "T")
        stores = []
        for bp, v in zip(buf_params, stacked):
            stores.append(_pyop("stack_store", _stack_store_fn, (bp, v, bparams[0], t_param), bp.type))
        new_body = ir.Block(bparams[:1 + nc] + buf_params + bparams[1 + nc:] + [t_param],
                            fb.block.nodes + stores,
                            list(fb.block.returns) + [s.output for s in stores])
        loop = ir.Node("prim::Loop", [trip_v, cond_v] + inits + bufs_init + caps + [trip_v],
                       [o.type for o in n.outputs] + [b.type for b in buf_params],
                       attrs=n.attrs, blocks=[new_body], loc=n.loc)
        for o, mo in zip(n.outputs, loop.outputs):
            mo.name = o.name
            vm[o.uid] = mo
        try:
            self._emit(pre + [loop])
        except RuntimeError as e:
            raise NotDifferentiable(f"running the rewritten loop failed: {e}") from e
        outs = loop.outputs[:nc]
        self.dynamic.update(o.uid for o in loop.outputs)
        for o, c in zip(outs, carried):
            if c and ad._is_float_tensor(self.env[o.uid]):
                self.needs.add(o.uid)
        self.infos[loop] = _LoopInfo(nc, body_bw, kinds, len(slice_caps), slice_caps, carried,
                                     cap_needs, trip_v, inits, caps, loop.outputs[nc:])


class _CtlBackward(ad._Backward):
    """autodiff._Backward plus: rewritten loops, list unpacking, and in-place accumulation of
    `select(captured, dim, i)` grads into accumulator inputs (`acc_params`, a loop body's)."""

    def __init__(self, graph, env, needs, dynamic, infos, acc_params, symbolic=True,
                 in_loop=False):
        super().__init__(graph, env, needs, dynamic, symbolic)
        self.infos = infos
        # a loop body's backward: the grads of its outputs are loop-carried buffers that
        # loop_vjp copies once before the loop, so they may be written in place (ids)
        self.in_loop = in_loop
        self.owned: set = set()
        self.acc_params = list(acc_params)
        self.acc_cur: dict = {}  # forward param uid -> traced accumulator tensor

    def _trace_body(self) -> None:
        tr = self.tracer
        for p in self.acc_params:
            x = self.env[p.uid]
            a = Tensor._make(np.zeros(x._data.shape, x._dtype.np), x._dtype)
            tr.add_input(a, f"acc_{len(self.acc_cur)}")
            self.acc_cur[p.uid] = a
        for i, v in enumerate(self.graph.outputs):
            if v.uid in self.needs and ad._is_float_tensor(self.env[v.uid]):
                ref = self.env[v.uid]
                g = Tensor._make(np.ones(ref._data.shape, ref._dtype.np), ref._dtype)
                tr.add_input(g, f"grad_{i}")
                if self.in_loop:
                    self.owned.add(id(g))
                self._accumulate(v, g)
            else:
                tr.block.params.append(ir.Value(ir.NONE, f"grad_{i}"))
        for n in reversed(self.graph.block.nodes):
            if n in self.infos:
                if n.op == "prim::If":
                    control_if.if_vjp(self, n)
                else:
                    control_loop.loop_vjp(self, n)
            elif n.op == "prim::ListUnpack":
                self._unpack(n)
            elif n.op in ("prim::TupleUnpack", "prim::TupleIndex"):
                self._tuple_out(n)
            elif n.op == "_select_write" and control_write.row_write_vjp(self, n):
                pass
            elif n.op == "_index_write" and control_write.whole_write(n):
                control_write.overwrite_vjp(self, n)
            elif n.op == "select" and n.inputs[0].uid in self.acc_cur:
                self._select_acc(n)
            elif not n.op.startswith("prim::") and any(o.uid in self.needs for o in n.outputs):
                self._check_attrs(n)
                self._node(n)
        rets = []
        for p in self.graph.inputs:
            g = self.acc_cur.get(p.uid, self.grads.get(p.uid))
            rets.append(tr.value_of(g) if g is not None else tr.constant(None, ir.NONE))
        tr.block.returns = rets

    # -- helpers ------------------------------------------------------------------------------
    def _tv(self, x, cenv) -> ir.Value:
        """The backward value of `x` (what `_value` gave), noting its example in `cenv`."""
        tr = self.tracer
        if isinstance(x, ad._Sym):  # a constant holding the stand-in: trace() substitutes it
            v = tr.constant(x, ir.INT if isinstance(x, int) else ir.FLOAT)
            cenv[v.uid] = _plain(x)
            return v
        v = tr.value_of(x) if isinstance(x, Tensor) else tr.constant(x)
        cenv[v.uid] = x
        return v

    def _typed(self, v: ir.Value, x: Tensor, mine) -> ir.Value:
        """`v` through a `typed` node stating its dtype/rank (see lower_autodiff.lower_typed)."""
        n = _pyop("typed", _typed_fn, (v,), _ttype(x))
        if mine is None:
            return n
        return self._add(n, mine).output

    def _add(self, node: ir.Node, mine: list) -> ir.Node:
        self.tracer.block.nodes.append(node)
        mine.append(node)
        return node

    def _unpack(self, n: ir.Node) -> None:
        lst = n.inputs[0]
        if lst.uid not in self.needs:
            return
        gs = [self.grads.get(o.uid) for o in n.outputs]
        if all(g is None for g in gs):
            return
        d = self.def_node.get(lst.uid)
        if d is not None and d.op == "prim::ListConstruct":
            for e, g in zip(d.inputs, gs):
                self._give(e, g)
            return
        # as autodiff._Backward: the elements' grads per list index (its _node fills the
        # missing ones with zeros and hands the rule a tuple)
        got = self.grads.setdefault(lst.uid, {})
        for k, g in enumerate(gs):
            if g is not None:
                got[k] = g if got.get(k) is None else got[k] + g

    def _tuple_out(self, n: ir.Node) -> None:
        """Grads of a tuple's elements go to the values the tuple was built from."""
        t = n.inputs[0]
        if t.uid not in self.needs:
            return
        gs = [self.grads.get(o.uid) for o in n.outputs]
        if all(g is None for g in gs):
            return
        d = self.def_node.get(t.uid)
        if d is None or d.op != "prim::TupleConstruct":
            raise NotDifferentiable("a tuple that needs grad and is not built in the graph")
        if n.op == "prim::TupleUnpack":
            for e, g in zip(d.inputs, gs):
                self._give(e, g)
        else:
            self._give(d.inputs[int(self.env[n.inputs[1].uid])], gs[0])

    def _check_attrs(self, n: ir.Node) -> None:
        """Rules take attributes as Python numbers and may convert them (`operator.index`),
        which would bake a run-time index (a loop counter) into the backward: refuse."""
        op = registry.OPS.get(n.op)
        if op is None or not any(o.uid in self.needs for o in n.outputs):
            return
        by_name = dict(zip(op.params, n.inputs))
        safe = op.extra.get("runtime_attrs", ())  # the rule hands these to ops unconverted
        for kind, name in op.vjp_params:
            v = by_name.get(name)
            if kind == "attr" and name not in safe and v is not None and v.uid in self.dynamic and \
                    isinstance(self.env[v.uid], int) and not isinstance(self.env[v.uid], bool):
                raise NotDifferentiable(f"'{n.op}' with a run-time '{name}' (its VJP rule would "
                                        "bake the value)")

    def _select_acc(self, n: ir.Node) -> None:
        g = self.grads.get(n.output.uid)
        if g is None:
            return
        p = n.inputs[0]
        dim = int(self.env[n.inputs[1].uid])
        idx = self._value(n.inputs[2])
        acc = self.acc_cur[p.uid]
        cenv: dict = {}
        node = _pyop("index_acc", _index_acc_fn(dim), (self._tv(acc, cenv), self._tv(g, cenv), self._tv(idx, cenv)),
                     _ttype(acc), dim=dim)
        self.tracer.block.nodes.append(node)
        res = _index_acc_fn(dim)(Tensor._make(acc._data.copy(), acc._dtype), g, int(idx))
        self.tracer.bind(res, node.output)
        self.acc_cur[p.uid] = res
