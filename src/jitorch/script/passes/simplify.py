"""Simplification: constant folding, algebraic identities and control flow on constants.

Owns `run(graph) -> graph` (rewrites in place, to a fixed point). Rewrites:
- `prim::ScalarOp` on constants -> `prim::Constant` (an operation that raises is left alone,
  so the error still happens at run time, at the user's line);
- a pure registry op whose inputs are all constants and whose tensors are small
  (<= FOLD_MAX_ELEMENTS elements, no requires_grad) -> a constant when its one result is small;
  `prim::TensorToScalar` of a constant tensor likewise;
- `x * 1`, `1 * x`, `x + 0`, `0 + x`, `x - 0`, `x / 1`, `x ** 1`, `x.to(x.dtype)` -> `x`, only
  when x is a tensor of known dtype and rank and the result has the same dtype and rank (so
  promotion and broadcasting are unchanged), and not when that would make a graph output alias
  a graph input or when an in-place op uses either value;
- `x.is_floating_point()` / `x.is_complex()` on a tensor of known dtype -> a constant;
- `prim::If` on a constant condition -> the taken block's body; one whose blocks only give
  True and False (`differ = True if c else differ` with differ False: what an unrolled check
  loop leaves) -> its condition;
- `prim::Loop` whose trip count is 0 or whose initial condition is False -> its initial values;
  one of a constant trip count that always continues (a `for` over `range(k)` of a constant k,
  no break) and is small (`UNROLL_TRIPS` trips, `UNROLL_NODES` nodes in all) -> its body, once
  per trip with the counter a constant. Why: the library's shape checks loop over a constant
  `normalized_shape` (`_sizes_differ`, ops/nn_norm.py), and each such loop cost Numba ~0.1
  CPU-s in a program's entry (a 1-layer encoder's forward has six: issue 17); unrolled, the
  counter folds and a check is a size compared with a constant;
- `prim::TupleIndex` / `prim::TupleUnpack` of a `prim::TupleConstruct` or tuple constant -> the
  element(s); `prim::ListUnpack` of a `prim::ListConstruct` read by nothing else;
- the transpose of a product of matrices, `(a @ b).t()` -> `b.t() @ a.t()` (the transpose of a
  transposed operand being the operand itself), when the product has no other use: the same
  dot products, with a row-major result. Why: a Linear weight's gradient comes out of the VJPs
  as `(x.t() @ g).t()`, a column-major view, which made `.grad` column-major against a
  row-major parameter and every later elementwise pass over both (the optimizer step, grad
  accumulation) strided; transposed operands cost BLAS nothing (targets/cpu/blas.py).
Placeholders from the parser (`TensorLiteral`, `Ref`) are never folded.
"""
from __future__ import annotations

import numbers

from ..._ops import registry
from ..._tensor import Tensor
from .. import ir
from ..ir.interpreter import SCALAR_OPS, call_registry_op
from ..ir.util import inline_block, is_inplace, node_is_pure, replace_many, uses

FOLD_MAX_ELEMENTS = 64
_DTYPE_QUERIES = {"is_floating_point": lambda d: d.is_floating_point,
                  "is_complex": lambda d: d.is_complex}
MAX_ROUNDS = 20
UNROLL_TRIPS = 8    # a constant-trip loop of at most this many trips is unrolled...
UNROLL_NODES = 96   # ...when its body (nested blocks included) times its trips has at most this

_IDENTITY = {  # op -> [(operand index of x, operand index of the constant, neutral value)]
    "mul": [(0, 1, 1), (1, 0, 1)],
    "add": [(0, 1, 0), (1, 0, 0)],
    "sub": [(0, 1, 0)],
    "div": [(0, 1, 1)],
    "true_divide": [(0, 1, 1)],
    "pow": [(0, 1, 1)],
}


def run(graph: ir.Graph) -> ir.Graph:
    for _ in range(MAX_ROUNDS):
        s = _Simplifier(graph)
        if not s.block(graph.block):
            break
    return graph


def const(v: ir.Value):
    """(True, value) when `v` is a prim::Constant output, else (False, None)."""
    n = v.node
    if n is not None and n.op == "prim::Constant" and "value" in n.attrs:
        return True, n.attrs["value"]
    return False, None


def _foldable_value(x) -> bool:
    if isinstance(x, Tensor):
        return x._data.size <= FOLD_MAX_ELEMENTS and not x._requires_grad
    if isinstance(x, (bool, numbers.Number, str, type(None))):
        return True
    if isinstance(x, (list, tuple)):
        return all(_foldable_value(e) for e in x)
    from ... import _dtype as dt
    return isinstance(x, dt.dtype)


def _make_const(n: ir.Node, value) -> None:
    """Turn `n` (one output) into a constant, keeping its output Value and so all its uses."""
    n.op = "prim::Constant"
    n.inputs = []
    n.blocks = []
    n.attrs = {"value": value}


def fold_scalar(n: ir.Node):
    """A `prim::ScalarOp` on constants becomes a constant: [n], or None when it cannot fold
    (an operation that raises keeps raising at run time, at the user's line). Also used by
    the types pass, which folds what argument types decide."""
    vals = [const(v) for v in n.inputs]
    if not all(ok for ok, _ in vals) or n.attrs.get("fn") not in SCALAR_OPS:
        return None
    try:
        r = SCALAR_OPS[n.attrs["fn"]](*[x for _, x in vals])
    except Exception:
        return None
    if not isinstance(r, (bool, int, float, complex, str, type(None))):
        return None
    _make_const(n, r)
    return [n]


def fold_if(n: ir.Node, mapping: dict):
    """A `prim::If` on a constant condition: the taken block's nodes (its results go to
    `mapping`), or None."""
    ok, c = const(n.inputs[0])
    if not ok or not isinstance(c, (bool, int, float, type(None))):
        return None
    nodes, rets = inline_block(n.blocks[0] if c else n.blocks[1], n.inputs[1:])
    for o, r in zip(n.outputs, rets):
        mapping[o] = mapping.get(r, r)
    return nodes


def _is_matrix(v: ir.Value) -> bool:
    return isinstance(v.type, ir.TensorType) and v.type.ndim == 2


def _matrix_transpose(n: ir.Node) -> bool:
    """Is `n` `x.t()` or `x.transpose(i, j)` (constant dims, the two different) of a matrix?"""
    if not n.inputs or not _is_matrix(n.inputs[0]) or len(n.outputs) != 1:
        return False
    if n.op == "t":
        return len(n.inputs) == 1
    if n.op != "transpose" or len(n.inputs) != 3:
        return False
    (ok0, d0), (ok1, d1) = const(n.inputs[1]), const(n.inputs[2])
    return ok0 and ok1 and all(type(d) is int and -2 <= d < 2 for d in (d0, d1)) and \
        d0 % 2 != d1 % 2


def _size(block: ir.Block) -> int:
    """The number of nodes in `block`, nested blocks included."""
    return sum(1 + sum(_size(b) for b in n.blocks) for n in block.nodes)


class _Simplifier:
    def __init__(self, graph: ir.Graph):
        self.graph = graph
        self.uses = uses(graph)
        self.graph_params = set(graph.block.params)
        self.graph_returns = set(graph.block.returns)
        self.changed = False

    def block(self, block: ir.Block) -> bool:
        out = []
        mapping: dict = {}
        for n in block.nodes:
            if mapping:
                n.inputs = [mapping.get(v, v) for v in n.inputs]
            for b in n.blocks:
                self.block(b)
            repl = self.node(n, mapping)
            if repl is None:
                out.append(n)
            else:
                self.changed = True
                out.extend(repl)
        block.nodes = out
        if mapping:
            replace_many(block, mapping)
            self.changed = True
        return self.changed

    # each rule returns None (keep n) or the list of nodes replacing it (outputs go to mapping)
    def node(self, n: ir.Node, mapping: dict):
        op = n.op
        if op == "prim::ScalarOp":
            return self.fold_scalar(n)
        if op == "prim::If":
            return self.fold_if(n, mapping)
        if op == "prim::Loop":
            return self.fold_loop(n, mapping)
        if op in ("prim::TupleIndex", "prim::TupleUnpack", "prim::ListUnpack"):
            return self.fold_unpack(n, mapping)
        if op == "prim::TensorToScalar":
            ok, t = const(n.inputs[0])
            if ok and isinstance(t, Tensor) and t._data.size == 1:
                _make_const(n, t.item())
                return [n]
            return None
        if op == "prim::PythonOp":
            return self.fold_dtype_query(n)
        if op.startswith("prim::") or not node_is_pure(n):
            return None
        if op in ("t", "transpose"):
            return self.transpose_of_product(n, mapping)
        r = self.identity(n, mapping)
        if r is not None:
            return r
        return self.fold_op(n)

    def fold_scalar(self, n: ir.Node):
        return fold_scalar(n)

    def fold_dtype_query(self, n: ir.Node):
        """`x.is_floating_point()` / `x.is_complex()` (a method call the frontend keeps as a
        Python call) on a tensor whose dtype the specialisation knows: its answer. Library
        composites check their inputs' dtypes this way, as TorchScript folds them."""
        query = _DTYPE_QUERIES.get(n.attrs.get("name"))
        if query is None or len(n.inputs) != 1 or len(n.outputs) != 1:
            return None
        t = n.inputs[0].type
        if not isinstance(t, ir.TensorType) or t.dtype is None:
            return None
        _make_const(n, bool(query(t.dtype)))
        return [n]

    def fold_op(self, n: ir.Node):
        if len(n.outputs) != 1 or registry._mode_state.stack:
            return None  # multi-output ops are rare here; inside a tracer, dispatch would record
        vals = []
        for v in n.inputs:
            if v.node is not None and v.node.op == "prim::ListConstruct":
                items = [const(x) for x in v.node.inputs]
                if not all(ok for ok, _ in items):
                    return None
                vals.append([x for _, x in items])
                continue
            ok, x = const(v)
            if not ok or not _foldable_value(x):
                return None
            vals.append(x)
        opdef = registry.OPS.get(n.op)
        # a factory's result is a fresh tensor the program may write to: never a shared constant
        if opdef is None or opdef.view or opdef.kind == "factory":
            return None
        from ...autograd import grad_mode
        try:
            with grad_mode.no_grad():
                r = call_registry_op(n.op, vals)
        except Exception:  # eager would raise: keep the node so it raises at run time
            return None
        if isinstance(r, Tensor):
            ty = n.output.type
            if r._data.size > FOLD_MAX_ELEMENTS or (
                    isinstance(ty, ir.TensorType) and ty.dtype is not None and
                    ty.dtype is not r._dtype):
                return None
        elif not isinstance(r, (bool, int, float)):
            return None
        _make_const(n, r)
        return [n]

    def identity(self, n: ir.Node, mapping: dict):
        rules = _IDENTITY.get(n.op)
        if n.op == "_to_dtype":
            x, (ok, d) = n.inputs[0], const(n.inputs[1])
            if ok and isinstance(x.type, ir.TensorType) and x.type.dtype is not None and \
                    d is x.type.dtype:
                return self._alias(n, x, mapping)
            return None
        if not rules:
            return None
        params = registry.OPS[n.op].params
        by = dict(zip(params, n.inputs))
        if n.op in ("add", "sub"):
            ok, alpha = const(by["alpha"])
            if not ok or not isinstance(alpha, numbers.Number):
                return None
        if n.op == "div":
            ok, mode = const(by["rounding_mode"])
            if not ok or mode is not None:
                return None
        for xi, ci, neutral in rules:
            if n.op == "add" and xi == 1 and alpha != 1:
                continue
            x = n.inputs[xi]
            ok, c = const(n.inputs[ci])
            if not ok:
                continue
            if isinstance(c, Tensor):
                if c._data.ndim != 0 or c._requires_grad:
                    continue
                c = c.item()
            if isinstance(c, bool) or not isinstance(c, numbers.Number) or c != neutral:
                continue
            return self._alias(n, x, mapping)
        return None

    def transpose_of_product(self, n: ir.Node, mapping: dict):
        x = n.inputs[0]
        m = x.node
        if not _matrix_transpose(n) or m is None or m.op not in ("matmul", "mm") or \
                len(m.inputs) != 2 or len(self.uses.get(x, ())) != 1:
            return None
        a, b = m.inputs
        if not all(_is_matrix(v) and v.type.dtype is not None for v in (a, b)):
            return None
        new = []

        def tr(v):
            p = v.node
            if p is not None and _matrix_transpose(p) and _is_matrix(p.inputs[0]):
                return p.inputs[0]
            t = ir.Node("t", [v], [ir.TensorType(v.type.dtype, v.type.shape[::-1])], loc=n.loc)
            new.append(t)
            return t.output
        mm = ir.Node(m.op, [tr(b), tr(a)], [n.output.type], loc=m.loc)
        new.append(mm)
        mapping[n.output] = mm.output
        return new

    def _alias(self, n: ir.Node, x: ir.Value, mapping: dict):
        out = n.output
        xt, ot = x.type, out.type
        if not (isinstance(xt, ir.TensorType) and isinstance(ot, ir.TensorType)):
            return None
        if xt.dtype is None or xt.shape is None or ot.dtype is not xt.dtype or \
                ot.ndim != xt.ndim:
            return None
        if x in self.graph_params and out in self.graph_returns:
            return None  # the output would alias the caller's input
        for v in (x, out):
            for user, _ in self.uses.get(v, ()):
                if isinstance(user, ir.Node) and is_inplace(user.op):
                    return None
        mapping[out] = mapping.get(x, x)
        return []

    def fold_if(self, n: ir.Node, mapping: dict):
        r = fold_if(n, mapping)
        if r is not None or len(n.outputs) != 1:
            return r
        picks = []
        for b in n.blocks:
            v = b.returns[0]
            if v in b.params:  # a captured value: the If's input
                v = n.inputs[1 + b.params.index(v)]
            ok, c = const(v)
            if not ok or type(c) is not bool:
                return None
            picks.append(c)
        if picks != [True, False] or n.inputs[0].type != ir.BOOL:
            return None
        mapping[n.output] = mapping.get(n.inputs[0], n.inputs[0])
        return []

    def fold_loop(self, n: ir.Node, mapping: dict):
        ok_t, trip = const(n.inputs[0])
        ok_c, cond = const(n.inputs[1])
        never = (ok_t and isinstance(trip, int) and trip <= 0) or (
            ok_c and isinstance(cond, (bool, int)) and not cond)
        if not never:
            return self.unroll(n, mapping, trip if ok_t else None, cond if ok_c else None)
        for o, v in zip(n.outputs, n.inputs[2:2 + len(n.outputs)]):
            mapping[o] = mapping.get(v, v)
        return []

    def unroll(self, n: ir.Node, mapping: dict, trip, cond):
        """A small loop of a constant trip count that never stops early: its body once per
        trip (the counter a constant, each copy reading the carried values of the one
        before), or None."""
        body = n.blocks[0]
        if type(trip) is not int or trip > UNROLL_TRIPS or cond is not True or \
                const(body.returns[0]) != (True, True) or \
                _size(body) * trip > UNROLL_NODES:
            return None
        k = len(n.outputs)
        carried, captured = list(n.inputs[2:2 + k]), list(n.inputs[2 + k:])
        nodes = []
        for i in range(trip):
            c = ir.Node("prim::Constant", (), (body.params[0].type,), attrs={"value": i},
                        loc=n.loc)
            copy, rets = inline_block(body, [c.output, *carried, *captured])
            nodes += [c, *copy]
            carried = rets[1:]
        for o, v in zip(n.outputs, carried):
            mapping[o] = mapping.get(v, v)
        return nodes

    def fold_unpack(self, n: ir.Node, mapping: dict):
        src = n.inputs[0]
        d = src.node
        if n.op == "prim::TupleIndex":
            ok, i = const(n.inputs[1])
            if not ok or not isinstance(i, int):
                return None
            if d is not None and d.op == "prim::TupleConstruct" and -len(d.inputs) <= i < \
                    len(d.inputs):
                mapping[n.output] = d.inputs[i]
                return []
            ok, t = const(src)
            if ok and isinstance(t, tuple) and -len(t) <= i < len(t):
                _make_const(n, t[i])
                return [n]
            return None
        if d is None:
            return None
        kind = "prim::TupleConstruct" if n.op == "prim::TupleUnpack" else "prim::ListConstruct"
        if d.op == kind and len(d.inputs) == len(n.outputs):
            if kind == "prim::ListConstruct" and any(
                    not (isinstance(u, ir.Node) and u.op == "prim::ListUnpack")
                    for u, _ in self.uses.get(src, ())):
                return None  # the list may be mutated or escape: keep it
            for o, v in zip(n.outputs, d.inputs):
                mapping[o] = v
            return []
        ok, t = const(src)
        if ok and isinstance(t, tuple) and n.op == "prim::TupleUnpack" and \
                len(t) == len(n.outputs):
            nodes = []
            for o, x in zip(n.outputs, t):
                c = ir.Node("prim::Constant", (), (o.type,), attrs={"value": x}, loc=n.loc)
                mapping[o] = c.output
                nodes.append(c)
            return nodes
        return None

