"""Type specialisation: copy a graph, give its inputs concrete types, propagate dtype and rank.

Owns `specialize(graph, arg_types) -> Graph` and `copy_graph(graph)`. Input tensor types keep
their dtype and rank but lose their sizes (None): a program is compiled per dtype/rank, never per
size. Every tensor value then gets a dtype and rank where a rule knows them:
- elementwise registry ops: PyTorch's three-tier promotion (dimensioned tensors > 0-d tensors >
  Python scalars, `_dtype.promote_tiers`), then the op's own dtype rule (`registry._apply_rule`);
  the rank is the largest operand rank;
- every other registry op with a type rule, tensor factories included: its declaration's
  `infer=` (`_ops/infer.py`, `_ops/factories.py`), read through `_Args`, a view of the node's
  arguments;
- anything else: tensor outputs become `TensorType(None, None)` (unknown), and the code generator
  refuses them (NotLowered), so the interpreter runs the graph.
Sizes stay None except for tensor constants (their shape is known). Devices come last
(`stamp_device`, after propagation and again after inlining): the program's device for its
arguments, where eager makes it for a factory's result (`factory_device`), the operands' common
device for a registry op; `x.device` then folds to a constant.
"""
from __future__ import annotations

from ... import _dtype as dt
from ..._ops import infer, registry
from .. import ir
from ..ir.values import (_KINDS, const_value, data_info, leaf_kind, scalar_result,
                         size_rank)
from ..ir.util import replace_many, walk_blocks
from .simplify import _make_const, fold_if, fold_scalar

# --- copying ------------------------------------------------------------------------------------


def copy_graph(graph: ir.Graph) -> ir.Graph:
    """A deep copy with fresh Values (attrs are shared, except nested Blocks, which are copied)."""
    vmap: dict = {}
    return ir.Graph(graph.name, _copy_block(graph.block, vmap))


def _copy_value(v: ir.Value, vmap: dict) -> ir.Value:
    nv = ir.Value(v.type, v.name)
    vmap[v.uid] = nv
    return nv


def _copy_block(b: ir.Block, vmap: dict) -> ir.Block:
    params = [_copy_value(p, vmap) for p in b.params]
    nodes = [_copy_node(n, vmap) for n in b.nodes]
    return ir.Block(params, nodes, [vmap.get(v.uid, v) for v in b.returns])


def _copy_node(n: ir.Node, vmap: dict) -> ir.Node:
    attrs = {k: (_copy_block(v, vmap) if isinstance(v, ir.Block) else v)
             for k, v in n.attrs.items()}
    blocks = [_copy_block(b, vmap) for b in n.blocks]
    m = ir.Node(n.op, [vmap.get(v.uid, v) for v in n.inputs], (), attrs, blocks, n.loc)
    m.outputs = []
    for o in n.outputs:
        no = ir.Value(o.type, o.name, node=m)
        vmap[o.uid] = no
        m.outputs.append(no)
    return m


# --- specialisation -----------------------------------------------------------------------------


def strip_sizes(t: ir.Type) -> ir.Type:
    if isinstance(t, ir.TensorType):
        shape = None if t.shape is None else (None,) * len(t.shape)
        return ir.TensorType(t.dtype, shape, t.device, t.requires_grad)
    if isinstance(t, ir.TupleType):
        return ir.TupleType([strip_sizes(e) for e in t.elems])
    return t


def specialize(graph: ir.Graph, arg_types, values: dict | None = None) -> ir.Graph:
    """A copy of `graph` typed for `arg_types`. Arguments passed None, and bool arguments
    whose value is in `values` (argument name -> value; the runtime keys bools by value),
    become constants."""
    g = copy_graph(graph)
    fixed = {}
    values = values or {}
    for p, t in zip(g.block.params, arg_types):
        p.type = strip_sizes(t)
        if isinstance(t, ir.NoneType):
            fixed[p] = ir.Node("prim::Constant", (), (ir.NONE,), {"value": None}).output
        elif isinstance(t, ir.BoolType) and isinstance(values.get(p.name), bool):
            fixed[p] = ir.Node("prim::Constant", (), (ir.BOOL,), {"value": values[p.name]}
                               ).output
    if fixed:
        # an Optional argument passed None (TorchScript specialises on it too) or a bool:
        # `x is None` / `if flag` fold and only the branch taken is compiled
        replace_many(g, fixed)
        g.block.nodes[:0] = [v.node for v in fixed.values()]
    propagate_block(g.block)
    stamp_device(one_device(arg_types), g)
    return g


def devices_of(types) -> set:
    """The devices of the tensors among `types` (IR types; containers searched)."""
    found: set = set()

    def visit(t):
        if isinstance(t, ir.TensorType):
            found.add(t.device)
        elif isinstance(t, ir.TupleType):
            for e in t.elems:
                visit(e)
        elif isinstance(t, (ir.ListType, ir.OptionalType)):
            visit(t.elem)
        elif isinstance(t, ir.DictType):
            visit(t.value)
    for t in types:
        visit(t)
    return found


def one_device(types) -> str:
    """The device of the tensors among `types`: "cpu" when there are none, or when they sit on
    several devices (codegen/target.py refuses such a call, and the interpreter runs it)."""
    found = devices_of(types)
    return found.pop() if len(found) == 1 else "cpu"


def _on_device(t, device: str):
    if isinstance(t, ir.TensorType):
        return t if t.device == device else ir.TensorType(t.dtype, t.shape, device,
                                                          t.requires_grad)
    if isinstance(t, ir.TupleType):
        return ir.TupleType([_on_device(e, device) for e in t.elems])
    if isinstance(t, ir.ListType):
        return ir.ListType(_on_device(t.elem, device))
    if isinstance(t, ir.OptionalType):
        return ir.OptionalType(_on_device(t.elem, device))
    return t


def stamp_device(device: str, *graphs: ir.Graph) -> None:
    """The devices of `graphs`' tensor values, for a program that runs on `device` (the one
    device of its arguments, the target's invariant; the ops' type rules and autodiff's tracer
    know dtypes and ranks, not devices):
    - a factory's result is where eager makes it (`factory_device`): `device=`, else the
      tensor it follows (`new_*`, `*_like`), else the default device, whatever the program's;
    - a registry op's results are on its tensor operands' common device, as eager's device
      step decides it (`_device.transfer.common_device`: the first one off the CPU), so what
      is computed from a factory's CPU result in a CUDA program stays on the CPU;
    - everything else (arguments, prims, ops without tensor operands) is on `device`.
    `x.device` of a tensor then folds to that device (a constant): the program is specialised
    on its arguments' devices, and the targets see a factory's `%device` as a constant. A
    factory placing its result on another device than the program's is never lowered (the
    targets refuse it: the interpreter makes it where eager does, and raises eager's error
    where devices mix)."""
    for g in graphs:
        for block in walk_blocks(g.block):
            for p in block.params:
                p.type = _on_device(p.type, device)
            for n in block.nodes:
                _stamp_node(n, device)


def _stamp_node(n: ir.Node, device: str) -> None:
    if n.op == "prim::GetAttr" and n.attrs.get("name") == "device" and n.inputs and \
            isinstance(n.inputs[0].type, ir.TensorType):
        from ..._device import as_device
        try:
            _make_const(n, as_device(n.inputs[0].type.device))
        except Exception:  # a device this process cannot hold: x.device stays a run-time read
            pass
        return
    opdef = registry.OPS.get(n.op)
    here = device
    if opdef is not None and opdef.kind == "factory":
        here = factory_device(n) or device
    elif opdef is not None:
        found = [v.type.device for v in n.inputs if isinstance(v.type, ir.TensorType)]
        if found:
            here = next((d for d in found if d != "cpu"), "cpu")
    for v in n.outputs:
        v.type = _on_device(v.type, here)


def place_traced_factories(device: str, graph: ir.Graph) -> None:
    """Factories of a graph autodiff traced on CPU stand-ins (its backward) on `device`: the
    rules ran on NumPy arrays, so the factories they made say the CPU (or no device), where
    eager runs a rule with the gradients' device as the default one and makes them there."""
    if device == "cpu":
        return
    from ..._device import as_device
    for block in walk_blocks(graph.block):
        const = None
        for n in list(block.nodes):
            opdef = registry.OPS.get(n.op)
            if opdef is None or opdef.kind != "factory" or "device" not in opdef.params:
                continue
            k = opdef.params.index("device")
            ok, d = const_value(n.inputs[k])
            if not ok or (d is not None and str(d) != "cpu"):
                continue
            if const is None:
                const = ir.Node("prim::Constant", (), (ir.DEVICE,), {"value": as_device(device)})
                block.nodes.insert(0, const)
            n.inputs[k] = const.output


def factory_device(n: ir.Node) -> str | None:
    """The device factory node `n` makes its result on (`_ops/factories.placement`, from its
    `%device` and the types of its inputs), or None when `%device` is a run-time value other
    than a tensor's `x.device`."""
    from ..._ops.factories import placement
    opdef = registry.OPS[n.op]
    by = dict(zip(opdef.params, n.inputs))
    dev = by.get("device")
    if dev is None:
        return None
    ok, d = const_value(dev)
    if not ok:
        src = dev.node
        if src is not None and src.op == "prim::GetAttr" and src.attrs.get("name") == "device" \
                and isinstance(src.inputs[0].type, ir.TensorType):
            return src.inputs[0].type.device
        return None
    like = opdef.extra.get("like")
    t = by[like].type if like is not None and d is None else None
    return placement(d, t.device if isinstance(t, ir.TensorType) else None)


UNKNOWN = ir.TensorType(None, None)


def propagate_block(block: ir.Block) -> None:
    """Types for every node, folding what the argument types decide as it goes: `x.dim()` and
    `x.dtype` of a typed tensor, scalar arithmetic on those, and `if` on the result (only the
    taken branch stays, so code that branches on rank or dtype types like straight-line
    code: one program per dtype/rank, as the design promises)."""
    out, mapping = [], {}
    for n in block.nodes:
        if mapping:
            n.inputs = [mapping.get(v, v) for v in n.inputs]
        propagate_node(n)
        repl = _fold_static(n, mapping)
        out.extend([n] if repl is None else repl)
    block.nodes = out
    if mapping:
        replace_many(block, mapping)


def _fold_static(n: ir.Node, mapping: dict):
    """None (keep n) or the nodes replacing it; outputs of a folded `if` go to `mapping`."""
    op = n.op
    if op == "prim::GetAttr" and n.inputs and isinstance(n.inputs[0].type, ir.TensorType):
        t, name = n.inputs[0].type, n.attrs.get("name")
        value = t.ndim if name == "ndim" else t.dtype if name == "dtype" else None
        if value is not None:
            _make_const(n, value)
            return [n]
    elif op == "prim::ScalarOp":
        if n.attrs.get("fn") in ("is", "is_not") and len(n.inputs) == 2 and any(
                ok and x is None for ok, x in map(const_value, n.inputs)) and any(
                isinstance(v.type, ir.TensorType) for v in n.inputs):
            # an Optional[Tensor] that holds a tensor in this specialisation is not None
            _make_const(n, n.attrs["fn"] == "is_not")
            return [n]
        return fold_scalar(n)
    elif op == "prim::If":
        return fold_if(n, mapping)
    return None


def _set(n: ir.Node, types) -> None:
    for o, t in zip(n.outputs, types):
        o.type = t


def _join(a: ir.Type, b: ir.Type) -> ir.Type:
    if a == b:
        return a
    if isinstance(a, ir.TensorType) and isinstance(b, ir.TensorType):
        dtype = a.dtype if a.dtype is b.dtype else None
        rank = a.ndim if a.ndim == b.ndim else None
        return ir.TensorType(dtype, None if rank is None else (None,) * rank)
    if isinstance(a, ir.ListType) and isinstance(b, ir.ListType):  # carried/if-merged lists
        return ir.ListType(_join(a.elem, b.elem))
    return a


def propagate_node(n: ir.Node) -> None:
    op = n.op
    if op.startswith("prim::"):
        _prim(n)
        return
    opdef = registry.OPS.get(op)
    try:
        if opdef is not None and opdef.kind == "elementwise":
            _set(n, [elementwise_type(opdef, n.inputs)])
            return
        if opdef is not None and opdef.infer is not None:
            types = rule_types(opdef, n)
            if opdef.kind == "factory":
                types = [_on_device(t, factory_device(n) or "cpu") for t in types]
            _set(n, types)
            return
    except Exception:  # a rule that cannot decide (unknown attr, eager would raise): unknown
        pass
    _set(n, [UNKNOWN if isinstance(o.type, ir.TensorType) else o.type for o in n.outputs])


def elementwise_dtypes(opdef, inputs):
    """(compute dtype, output dtype) of an elementwise op node, as eager computes them."""
    by = dict(zip(opdef.params, inputs))
    dims, zeros, cats = [], [], []
    for name in opdef.tensors:
        t = by[name].type
        if isinstance(t, ir.TensorType):
            if t.dtype is None or t.ndim is None:
                return None
            (dims if t.ndim else zeros).append(t.dtype)
        elif isinstance(t, ir.BoolType):
            cats.append(dt.BOOL)
        elif isinstance(t, ir.IntType):
            cats.append(dt.INT)
        elif isinstance(t, ir.FloatType):
            cats.append(dt.FLOAT)
        elif isinstance(t, ir.NoneType):
            continue
        else:
            return None
    d = dt.promote_tiers(dims, zeros, cats)
    attrs = {}
    for a in opdef.attrs:
        ok, val = const_value(by[a])
        if not ok:
            # a run-time scalar (alpha=-lr): dtype rules look at its kind, not its value
            val = _SCALAR_STANDIN.get(type(by[a].type))
            if val is None:
                return None
        attrs[a] = val
    return registry._apply_rule(opdef, d, attrs)


_SCALAR_STANDIN = {ir.FloatType: 1.0, ir.IntType: 1, ir.BoolType: True}


def elementwise_type(opdef, inputs) -> ir.Type:
    r = elementwise_dtypes(opdef, inputs)
    ranks = [v.type.ndim for v in inputs if isinstance(v.type, ir.TensorType)]
    if r is None or any(k is None for k in ranks):
        return UNKNOWN
    return ir.TensorType(r[1], (None,) * max(ranks, default=0))


class _Args:
    """The `Args` view of one node that registry type rules read (`_ops/infer.py`): arguments by
    position or parameter name; what the graph does not decide raises `infer.Unknown`."""

    def __init__(self, opdef, n: ir.Node):
        self.n = n
        self.params = opdef.params
        self.count = len(n.inputs)

    def value(self, k) -> ir.Value:
        if isinstance(k, str):
            k = self.params.index(k)
        if k >= len(self.n.inputs):
            raise infer.Unknown(f"no argument {k}")
        return self.n.inputs[k]

    def tensor(self, k) -> infer.Tensor:
        return self.tensor_of(self.value(k))

    def const(self, k):
        ok, val = const_value(self.value(k))
        if not ok:
            raise infer.Unknown("not a constant")
        return val

    def length(self, k) -> int:
        """The length of a size list or tuple (its items may be run-time ints)."""
        n = size_rank(self.value(k))
        if n is None:
            raise infer.Unknown("a size of unknown length")
        return n

    def scalar(self, k) -> str | None:
        return _KINDS.get(type(self.value(k).type))

    def data(self, k) -> tuple:
        """(shape, leaf kinds) of `tensor(data)`'s data when its nesting is static."""
        info = data_info(self.value(k))
        if info is None:
            raise infer.Unknown("data of unknown structure")
        return info[0], [leaf_kind(x) for x in info[1]]

    def tensors(self, k) -> list:
        n = self.value(k).node
        if n is None or n.op != "prim::ListConstruct":
            raise infer.Unknown("not a list built in the graph")
        return [self.tensor_of(v) for v in n.inputs]

    def tensor_of(self, v: ir.Value) -> infer.Tensor:
        t = v.type
        if not isinstance(t, ir.TensorType) or t.dtype is None or t.ndim is None:
            raise infer.Unknown("not a typed tensor")
        return infer.Tensor(t.dtype, t.ndim)


def _ir_type(t) -> ir.Type:
    """A rule's result (infer.Tensor / infer.ListOf) as an IR type."""
    if isinstance(t, infer.ListOf):
        return ir.ListType(_ir_type(t.elem))
    return ir.TensorType(t.dtype, (None,) * t.rank)


def rule_types(opdef, n: ir.Node) -> list:
    """The output types of node `n` by its op's registry rule (one per output it gives)."""
    r = opdef.infer(_Args(opdef, n))
    return [_ir_type(t) for t in (r if isinstance(r, tuple) else (r,))]


def reduction_dtype(op: str, t: ir.TensorType, dtype):
    """The result dtype of reduction `op` on `t` (its declaration's `infer.Reduction`)."""
    return registry.OPS[op].infer.out_dtype(t.dtype, dtype)


norm_dims = infer.norm_dims


# --- structural ops -----------------------------------------------------------------------------
def _prim(n: ir.Node) -> None:
    op = n.op
    if op == "prim::Constant":
        from ..frontend.trace import value_type
        t = value_type(n.attrs.get("value"))
        if t != ir.ANY:  # keep the frontend's type for values the tracer cannot name
            _set(n, [t])
    elif op == "prim::ListConstruct":
        elems = [v.type for v in n.inputs]
        el = elems[0] if elems else ir.ANY
        for e in elems[1:]:
            el = _join(el, e)
        _set(n, [ir.ListType(el)])
    elif op == "prim::TupleConstruct":
        _set(n, [ir.TupleType([v.type for v in n.inputs])])
    elif op in ("prim::TupleUnpack", "prim::ListUnpack"):
        t = n.inputs[0].type
        if isinstance(t, ir.TupleType):
            _set(n, list(t.elems))
        elif isinstance(t, ir.ListType):
            _set(n, [t.elem] * len(n.outputs))
    elif op == "prim::TupleIndex":
        t = n.inputs[0].type
        ok, idx = const_value(n.inputs[1])
        if isinstance(t, ir.TupleType) and ok and isinstance(idx, int):
            _set(n, [t.elems[idx]])
    elif op == "prim::ScalarOp":
        if n.attrs.get("fn") == "getitem" and isinstance(n.inputs[0].type, ir.ListType) \
                and isinstance(n.inputs[0].type.elem, ir.TensorType):
            _set(n, [n.inputs[0].type.elem])  # params[i]: the list's element type
            return
        r = scalar_result(n.attrs.get("fn"), n.inputs)
        if r is not None:
            _set(n, [r])
    elif op == "prim::If":
        for b in n.blocks:
            for p, v in zip(b.params, n.inputs[1:]):
                p.type = v.type
            propagate_block(b)
        if len(n.blocks) == 2:
            _set(n, [_join(a.type, b.type) for a, b in
                     zip(n.blocks[0].returns, n.blocks[1].returns)])
    elif op == "prim::Loop":
        _loop(n)
    elif op == "prim::Fused":
        b = n.blocks[0]
        for p, v in zip(b.params, n.inputs):
            p.type = v.type
        propagate_block(b)
        _set(n, [v.type for v in b.returns])
    elif op == "prim::PythonOp" and n.attrs.get("name") == "list_setitem" \
            and isinstance(n.inputs[0].type, ir.ListType):
        # lst[i] = x (frontend_alias's functional list write): the list's type joined with x's
        _set(n, [ir.ListType(_join(n.inputs[0].type.elem, n.inputs[2].type))])
    else:  # other prims keep the frontend's types, without sizes
        _set(n, [strip_sizes(o.type) for o in n.outputs])


def _loop(n: ir.Node) -> None:
    """Carried types to a fixpoint: start from the initial values, join with the body's."""
    nc = len(n.outputs)
    body = n.blocks[0]
    carried = [v.type for v in n.inputs[2:2 + nc]]
    captured = [v.type for v in n.inputs[2 + nc:]]
    for _ in range(4):
        for p, t in zip(body.params, [ir.INT] + carried + captured):
            p.type = t
        propagate_block(body)
        new = [_join(c, r.type) for c, r in zip(carried, body.returns[1:])]
        if new == carried:
            break
        carried = new
    _set(n, carried)
