"""Type specialisation: copy a graph, give its inputs concrete types, propagate dtype and rank.

Owns `specialize(graph, arg_types) -> Graph` and `copy_graph(graph)`. Input tensor types keep
their dtype and rank but lose their sizes (None): a program is compiled per dtype/rank, never per
size. Every tensor value then gets a dtype and rank where a rule knows them:
- elementwise registry ops: PyTorch's three-tier promotion (dimensioned tensors > 0-d tensors >
  Python scalars, `_dtype.promote_tiers`), then the op's own dtype rule (`registry._apply_rule`);
  the rank is the largest operand rank;
- tensor factories (`zeros`, `arange`, ...): their declarations' rules (factories.py): dtype
  from the dtype argument or PyTorch's default, rank from the size list;
- reductions, matmuls and the shape ops the code generator lowers: rules in `_RULES` below;
- anything else: tensor outputs become `TensorType(None, None)` (unknown), and the code generator
  refuses them (NotLowered), so the interpreter runs the graph.
Sizes stay None except for tensor constants (their shape is known).
"""
from __future__ import annotations

from ... import _dtype as dt
from ..._ops import registry
from .. import ir
from ..factories import FACTORIES, result_type as factory_type
from ..ir_util import replace_many
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
    return g


UNKNOWN = ir.TensorType(None, None)


def const_value(v: ir.Value):
    """(True, value) when `v` is a prim::Constant output, else (False, None)."""
    n = v.node
    if n is not None and n.op == "prim::Constant":
        return True, n.attrs.get("value")
    if n is not None and n.op == "prim::ListConstruct":
        vals = [const_value(x) for x in n.inputs]
        if all(k for k, _ in vals):
            return True, [x for _, x in vals]
    return False, None


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
    if op in FACTORIES:
        _set(n, [factory_type(n)])
        return
    opdef = registry.OPS.get(op)
    try:
        if opdef is not None and opdef.kind == "elementwise":
            _set(n, [elementwise_type(opdef, n.inputs)])
            return
        rule = _RULES.get(op)
        if rule is not None:
            _set(n, [rule(n, *n.inputs)])
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


def _tensor(v) -> ir.TensorType:
    t = v.type
    if not isinstance(t, ir.TensorType) or t.dtype is None or t.ndim is None:
        raise TypeError("unknown tensor")
    return t


def _const(v):
    ok, val = const_value(v)
    if not ok:
        raise TypeError("not a constant")
    return val


def _ranked(dtype, rank) -> ir.TensorType:
    return ir.TensorType(dtype, (None,) * rank)


def norm_dims(dim, rank: int) -> tuple:
    """Reduction dims as sorted non-negative ints (None or () means all dims)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(rank))
    if isinstance(dim, int):
        dim = (dim,)
    out = set()
    for d in dim:
        r = max(rank, 1)
        if not -r <= d < r:
            raise IndexError("dim out of range")
        out.add(d % r if rank else 0)
    return tuple(sorted(out))


def reduction_dtype(op: str, t: ir.TensorType, dtype):
    if dtype is not None:
        return dtype
    if op in ("sum", "prod") and t.dtype.category <= dt.INT:
        return dt.int64
    if op == "mean" and t.dtype.category <= dt.INT:
        raise TypeError("mean of integers")
    if op == "logsumexp" and t.dtype not in (dt.float32, dt.float64):
        raise TypeError("logsumexp of a non-float tensor")  # left untyped: interpreted
    return t.dtype


def _reduce(n, x, dim, keepdim, dtype=None):
    t = _tensor(x)
    dims = norm_dims(_const(dim), t.ndim)
    rank = t.ndim if _const(keepdim) else t.ndim - len([d for d in dims if d < t.ndim])
    return _ranked(reduction_dtype(n.op, t, None if dtype is None else _const(dtype)), rank)


def _matmul(n, a, b):
    ta, tb = _tensor(a), _tensor(b)
    ra, rb = ta.ndim, tb.ndim
    if ra == 0 or rb == 0:
        raise TypeError("matmul of 0-d")
    if ra == 1 and rb == 1:
        rank = 0
    elif ra == 1:
        rank = rb - 1
    elif rb == 1:
        rank = ra - 1
    else:
        rank = max(ra, rb)
    return _ranked(dt.promote_types(ta.dtype, tb.dtype), rank)


def _fixed_rank(rank):
    def rule(n, a, b, *rest):
        ta, tb = _tensor(a), _tensor(b)
        return _ranked(dt.promote_types(ta.dtype, tb.dtype), rank)
    return rule


def _addmm(n, inp, a, b, beta, alpha):
    return _ranked(dt.promote_types(_tensor(a).dtype, _tensor(b).dtype), 2)


def _same(n, x, *rest):
    return _tensor(x)


def _sized(n, x, size):
    # a size list built at run time (e.g. a backward reading saved shapes) has a known length
    if size.node is not None and size.node.op in ("prim::ListConstruct", "prim::TupleConstruct"):
        return _ranked(_tensor(x).dtype, len(size.node.inputs))
    if isinstance(size.type, ir.TupleType):  # `x.reshape(t)` with t a tuple of known length
        return _ranked(_tensor(x).dtype, len(size.type.elems))
    return _ranked(_tensor(x).dtype, len(_const(size)))


def _unsqueeze(n, x, dim):
    return _ranked(_tensor(x).dtype, _tensor(x).ndim + 1)


def _flatten(n, x, start, end):
    t = _tensor(x)
    if t.ndim == 0:
        return _ranked(t.dtype, 1)
    s, e = _const(start) % t.ndim, _const(end) % t.ndim
    return _ranked(t.dtype, t.ndim - (e - s))


def _cat(n, lst, dim):
    ts = [_tensor(v) for v in lst.node.inputs] if lst.node is not None and \
        lst.node.op == "prim::ListConstruct" else None
    if not ts:
        raise TypeError("unknown list")
    d = ts[0].dtype
    for t in ts[1:]:
        d = dt.promote_types(d, t.dtype)
    rank = max(t.ndim for t in ts)
    return _ranked(d, rank + 1 if n.op == "stack" else rank)


def _index_view(n, x, basic):
    t = _tensor(x)
    rank = t.ndim
    for b in _const(basic):
        if b is None:
            rank += 1
        elif isinstance(b, int):
            rank -= 1
        elif not isinstance(b, tuple):
            raise TypeError("unknown index")
    return _ranked(t.dtype, rank)


def _select(n, x, dim, index):
    return _ranked(_tensor(x).dtype, _tensor(x).ndim - 1)


def _to_dtype(n, x, dtype):
    return _ranked(_const(dtype), _tensor(x).ndim)


def _expand_as(n, x, other):
    return _ranked(_tensor(x).dtype, _tensor(other).ndim)


_RULES = {
    "sum": _reduce, "mean": _reduce, "prod": _reduce, "amax": _reduce, "amin": _reduce,
    "logsumexp": _reduce, "_max_shift": _reduce,
    "matmul": _matmul, "mm": _fixed_rank(2), "bmm": _fixed_rank(3), "addmm": _addmm,
    "reshape": _sized, "view": _sized, "expand": _sized, "transpose": _same, "permute": _same,
    "t": _same, "contiguous": _same, "narrow": _same, "_narrow_backward": _same,
    "embedding": lambda n, idx, w, *rest: _ranked(_tensor(w).dtype, _tensor(idx).ndim + 1),
    "index_select": _same, "index_add": _same, "unsqueeze": _unsqueeze,
    "flatten": _flatten, "cat": _cat, "stack": _cat, "_index_view": _index_view,
    "select": _select, "_to_dtype": _to_dtype, "expand_as": _expand_as,
    "ravel": lambda n, x: _ranked(_tensor(x).dtype, 1), "view_as": _expand_as,
    "reshape_as": _expand_as, "broadcast_to": _sized,
    # a list of views of x's dtype and rank (the frontend typed it List[Tensor])
    "chunk": lambda n, x, *rest: ir.ListType(_ranked(_tensor(x).dtype, _tensor(x).ndim)),
    # conv / pooling (codegen/lower_conv.py, lower_pool.py): the first operand's dtype and rank
    **dict.fromkeys(("conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "_conv_nd",
                     "_conv_nd_input_grad", "_conv_nd_weight_grad", "max_pool1d", "max_pool2d",
                     "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
                     "_max_pool_nd_backward", "_avg_pool_nd_backward", "_adaptive_avg_t"),
                    _same),
    "_class_index": lambda n, x, target, *rest: _class_target(target),
    "max_pool1d_with_indices": lambda n, x, *rest: _with_indices(n, x),
    "max_pool2d_with_indices": lambda n, x, *rest: _with_indices(n, x),
}


def _class_target(target):
    """A loss's class-index target (_ops/nn_loss._class_index): int64 or uint8, as eager
    requires; other dtypes stay unknown, so the interpreter raises eager's error."""
    t = _tensor(target)
    if t.dtype not in (dt.int64, dt.uint8):
        raise TypeError("not a class-index dtype")
    return t


def _with_indices(n, x):
    """(values, int64 indices) of a max pool: the rule gives output 0's type (the caller sets
    one type per rule), so output 1's is set here."""
    t = _tensor(x)
    if len(n.outputs) == 2:
        n.outputs[1].type = _ranked(dt.int64, t.ndim)
    return t


# --- structural ops -----------------------------------------------------------------------------
_CMP = {"eq", "ne", "lt", "le", "gt", "ge", "not", "and", "or", "is", "is_not", "contains",
        "bool"}


_NUMBERS = (ir.IntType, ir.FloatType, ir.BoolType)


def scalar_result(fn: str, inputs) -> ir.Type | None:
    """Python's result type of the scalar op `fn` on these values (None: no rule here, the
    node keeps its type). The frontend types its scalar ops with this same rule.

    Numbers as in Python: bool + bool is int, any float operand makes a float, `/` is a float,
    min/max/& | ^ of bools are bools, and an int power is a float when its exponent is a
    constant negative int (4 ** -1 is 0.25, as in TorchScript); a run-time exponent keeps the
    int type and the compiled program hands a negative one to the interpreter
    (codegen/lower_scalar.py), which returns Python's float."""
    if fn in _CMP:
        return ir.BOOL
    if fn == "int" or fn == "len":
        return ir.INT
    if fn == "float" or fn == "truediv":
        return ir.FLOAT
    types = [v.type for v in inputs]
    if not types or not all(isinstance(t, _NUMBERS) for t in types):
        return None
    floats = any(isinstance(t, ir.FloatType) for t in types)
    bools = all(isinstance(t, ir.BoolType) for t in types)
    if fn == "pow" and not floats and len(inputs) == 2:
        ok, e = const_value(inputs[1])
        return ir.FLOAT if ok and isinstance(e, int) and e < 0 else ir.INT
    if fn in ("min", "max", "bitand", "bitor", "bitxor") and bools:
        return ir.BOOL
    if fn in ("add", "sub", "mul", "floordiv", "mod", "pow", "neg", "min", "max", "abs"):
        return ir.FLOAT if floats else ir.INT
    if fn in ("bitand", "bitor", "bitxor", "lshift", "rshift", "invert") and not floats:
        return ir.INT
    return None


def _prim(n: ir.Node) -> None:
    op = n.op
    if op == "prim::Constant":
        from ..trace import value_type
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
