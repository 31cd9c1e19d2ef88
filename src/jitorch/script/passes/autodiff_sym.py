"""Stand-ins for run-time numbers while autodiff traces the VJP rules (see autodiff.py).

Owns the stand-in classes, `materialise(value, ...)`, which turns a value holding stand-ins
(a number, or a tuple/list of them, as a rule passes to an op) into backward-graph nodes,
`SymArray` (tensor data whose `.shape` holds stand-ins), and the graph pieces for saved sizes:
`_SizeRef`, `_clone_with_outputs` (the forward graph, computing saved sizes as int outputs) and
`_unsqueezes` (a rule's reshape to its grad's own sizes plus 1s, rewritten size-free).

Two kinds of base stand-ins:
- `_SymFloat` / `_SymInt`: a non-constant Python number the graph takes (`x * a`, `a: float`).
  Its value may be anything at run time, so comparisons and truth raise `_SymbolicArithmetic`
  (a rule branching on it would bake the branch).
- `_SymSize`: a size (>= 2 in the example) of a forward tensor, entry of a `<slot>_shape` the
  rule reads. Comparisons and truth use the example's value: the backward is only reused for
  inputs with the same 0/1/many size pattern, and `differentiate` re-traces with perturbed sizes
  and compares graphs, which catches a rule whose ops depend on such a comparison.
Arithmetic on stand-ins gives DERIVED stand-ins that remember how they were computed
(`recipe = (scalar op name, operands)`), so `materialise` can emit `prim::ScalarOp` nodes: e.g.
mean's `g / count` with `count = n0 * n1` becomes a run-time product of two saved sizes.
Conversions (`int()`, `float()`, NumPy) give the example's value: baked, which the perturbed
re-trace detects for sizes (the residual risk for graph-input scalars is documented in autodiff).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import numpy as np

from .. import ir


class _SymbolicArithmetic(Exception):
    pass


def _plain(x):
    if isinstance(x, _Sym):
        return int.__int__(x) if isinstance(x, int) else float.__float__(x)
    return x


def _size_like(x) -> bool:
    return not isinstance(x, _Sym) or x.sizes_only


class _Sym:
    """Mixin for stand-ins; see the module doc."""

    derived = False
    sizes_only = False   # depends on tensor sizes only: comparisons use the example's value
    recipe = None        # (scalar op, operands) for derived values

    def _refuse(self, *args):
        raise _SymbolicArithmetic(f"{type(self).__name__}({_plain(self)!r})")

    def __bool__(self):
        if self.sizes_only:
            return bool(_plain(self))
        self._refuse()

    def _int_identity(self, *args):  # round()/math.floor() of an int size: itself
        if self.sizes_only and isinstance(self, int) and not args:
            return self
        self._refuse()

    __round__ = __trunc__ = __floor__ = __ceil__ = _int_identity

    def __divmod__(self, other):
        if self.sizes_only and _size_like(other):
            return self // other, self % other
        self._refuse()

    def __rdivmod__(self, other):
        if self.sizes_only and _size_like(other):
            return other // self, other % self
        self._refuse()

    def __repr__(self):
        return f"<non-constant {_plain(self)!r}>"

    def __str__(self):
        return str(_plain(self))

    def __hash__(self):  # sizes compare equal to their value: hash alike
        return hash(_plain(self)) if self.sizes_only else object.__hash__(self)


def _compare(fn):
    def method(self, other):
        if other is self and fn in (operator.eq, operator.le, operator.ge):
            return True
        if not isinstance(other, (int, float)):
            return NotImplemented
        if self.sizes_only and _size_like(other):
            return fn(_plain(self), _plain(other))
        self._refuse()
    return method


for _name, _fn in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge), ("eq", operator.eq), ("ne", operator.ne)]:
    setattr(_Sym, f"__{_name}__", _compare(_fn))


def _derive(fn, name, reflected=False):
    def method(self, *other):
        if other and not isinstance(other[0], (int, float)):
            return NotImplemented
        args = (self,) + other
        if reflected:
            args = args[::-1]
        r = fn(*[_plain(a) for a in args])
        if isinstance(r, bool) or not isinstance(r, (int, float)):
            raise _SymbolicArithmetic(f"{name} of a non-constant scalar")
        d = (_DerivedInt if isinstance(r, int) else _DerivedFloat)(r)
        d.recipe = (name, args)
        d.sizes_only = all(_size_like(a) for a in args)
        return d
    return method


for _name, _fn in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                   ("mod", operator.mod), ("pow", operator.pow)]:
    setattr(_Sym, f"__{_name}__", _derive(_fn, _name))
    setattr(_Sym, f"__r{_name}__", _derive(_fn, _name, reflected=True))
for _name, _fn in [("neg", operator.neg), ("pos", operator.pos), ("abs", operator.abs)]:
    setattr(_Sym, f"__{_name}__", _derive(_fn, _name))


class _SymFloat(_Sym, float):
    pass


class _SymInt(_Sym, int):
    pass


class _SymSize(_Sym, int):
    sizes_only = True
    key = None  # (forward value uid, dim)


class _DerivedFloat(_Sym, float):
    derived = True


class _DerivedInt(_Sym, int):
    derived = True


def contains_sym(val) -> bool:
    if isinstance(val, _Sym):
        return True
    if isinstance(val, (tuple, list)):
        return any(contains_sym(e) for e in val)
    return False


def materialise(val, nodes: list, memo: dict, base_value) -> ir.Value:
    """An IR value computing `val` (a stand-in, or a tuple/list holding some), appending the
    nodes it needs to `nodes`. `base_value(sym)` gives the graph input of a base stand-in;
    `memo` (id -> Value) shares nodes between uses (the stand-ins live as long as the trace)."""
    if isinstance(val, _Sym):
        v = memo.get(id(val))
        if v is not None:
            return v
        if val.recipe is None:
            v = base_value(val)
        else:
            fn, args = val.recipe
            ins = [materialise(a, nodes, memo, base_value) for a in args]
            if fn == "pos":
                v = ins[0]
            else:
                n = ir.Node("prim::ScalarOp", ins, [ir.INT if isinstance(val, int) else ir.FLOAT],
                            attrs={"fn": fn})
                nodes.append(n)
                v = n.output
        memo[id(val)] = v
        return v
    if isinstance(val, (tuple, list)) and contains_sym(val):
        ins = [materialise(e, nodes, memo, base_value) for e in val]
        if all(isinstance(e, int) and not isinstance(e, bool) for e in val):
            n = ir.Node("prim::ListConstruct", ins, [ir.ListType(ir.INT)])
        else:
            n = ir.Node("prim::TupleConstruct", ins, [ir.TupleType([i.type for i in ins])])
        nodes.append(n)
        return n.output
    from ..frontend.trace import value_type
    n = ir.Node("prim::Constant", (), (value_type(val),), attrs={"value": val})
    nodes.append(n)
    return n.output


class SymArray(np.ndarray):
    """The data of a tensor the VJP rules get (a saved value, an incoming grad) whose `.shape`
    holds `_SymSize` stand-ins (set in `sym_shape`), so `g.expand(input.shape)` in a rule
    records run-time sizes too. Only that leaf reports them: NumPy functions and ufuncs get
    plain views and return plain arrays (views made by methods report their real shape)."""

    sym_shape = None

    @property
    def shape(self):
        s = self.sym_shape
        return s if s is not None else np.ndarray.shape.__get__(self)

    @shape.setter
    def shape(self, value):
        np.ndarray.shape.__set__(self, value)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(_plain_array(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain_array(x) for x in kwargs["out"])
        with np.errstate(all="ignore"):  # as the ops' own calls (registry's warning filter)
            return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        with np.errstate(all="ignore"):
            return func(*_plain_tree(args), **{k: _plain_tree(v) for k, v in kwargs.items()})


def _plain_array(x):
    return x.view(np.ndarray) if isinstance(x, SymArray) else x


def _plain_tree(x):
    if isinstance(x, SymArray):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)) and any(isinstance(e, (SymArray, list, tuple)) for e in x):
        return (list if isinstance(x, list) else tuple)(_plain_tree(e) for e in x)
    return x


def with_sym_shape(data: np.ndarray, shape) -> np.ndarray:
    """`data` viewed so that `.shape` gives `shape` (stand-ins), when it holds any."""
    if not contains_sym(shape):
        return data
    out = data.view(SymArray)
    out.sym_shape = tuple(shape)
    return out


# --- graph pieces for saved sizes ---------------------------------------------------------------
@dataclass(frozen=True)
class _SizeRef:
    """A saved size: dim `dim` of forward value `value` (the forward returns it as an int)."""
    value: ir.Value
    dim: int
    elem: int | None = None  # element `elem` of a list-valued `value` (chunk, split)
    count: int = 0           # ... which has `count` elements
    uid = None  # never a graph input or output


def _unsqueezes(n: ir.Node, nodes: list, repl: dict) -> bool:
    """Rules reshape a grad to ITS OWN (traced, so concrete) sizes with 1s inserted (e.g.
    `unsqueeze_dims` in reductions' rules): emit that as unsqueezes, which bake no size.
    True when done (the reshape is replaced)."""
    x, target = n.inputs
    xt = x.type
    if target.node is None or target.node.op != "prim::Constant" or \
            not isinstance(xt, ir.TensorType) or xt.shape is None or None in xt.shape:
        return False
    t = target.node.attrs.get("value")
    if not isinstance(t, (tuple, list)) or contains_sym(t) or \
            not all(type(e) is int for e in t):
        return False
    xs, j, ins = tuple(xt.shape), 0, []
    for i, e in enumerate(t):
        if j < len(xs) and e == xs[j]:
            j += 1
        elif e == 1:
            ins.append(i)
        else:
            return False
    if j != len(xs) or not ins:
        return False
    cur, shape = repl.get(x.uid, x), list(xs)
    for i in ins:
        shape.insert(i, 1)
        k = ir.Node("prim::Constant", (), (ir.INT,), attrs={"value": i})
        u = ir.Node("unsqueeze", [cur, k.output], [ir.TensorType(xt.dtype, tuple(shape))])
        nodes += [k, u]
        cur = u.output
    repl[n.output.uid] = cur
    return True


# --- the forward graph ---------------------------------------------------------------------------
def _clone_with_outputs(graph: ir.Graph, saved) -> ir.Graph:
    """A copy of `graph` (fresh Values and Nodes, so passes on it never touch the original)
    returning its outputs followed by `saved`."""
    vmap = {}
    params = []
    for p in graph.inputs:
        q = ir.Value(p.type, p.name)
        vmap[p.uid] = q
        params.append(q)
    nodes = []
    for n in graph.block.nodes:
        m = ir.Node(n.op, [vmap[v.uid] for v in n.inputs], [o.type for o in n.outputs],
                    attrs=n.attrs, loc=n.loc)
        for o, mo in zip(n.outputs, m.outputs):
            mo.name = o.name
            vmap[o.uid] = mo
        nodes.append(m)
    returns = [vmap[v.uid] for v in graph.outputs]
    shapes = {}
    for v in saved:
        if isinstance(v, _SizeRef):  # `value.shape[dim]`, an int output
            sh = shapes.get((v.value.uid, v.elem))
            if sh is None:
                src = vmap[v.value.uid]
                if v.elem is not None:  # an element of a list output (unpacked: codegen
                    # lowers chunk for a ListUnpack consumer)
                    e = ir.Node("prim::ListUnpack", [src], [ir.TensorType()] * v.count)
                    nodes.append(e)
                    src = e.outputs[v.elem]
                n = ir.Node("prim::GetAttr", [src], [ir.ListType(ir.INT)],
                            attrs={"name": "shape"})
                nodes.append(n)
                sh = shapes[(v.value.uid, v.elem)] = n.output
            k = ir.Node("prim::Constant", (), (ir.INT,), attrs={"value": v.dim})
            gi = ir.Node("prim::ScalarOp", [sh, k.output], [ir.INT], attrs={"fn": "getitem"})
            nodes += [k, gi]
            returns.append(gi.output)
        else:
            returns.append(vmap[v.uid])
    return ir.Graph(graph.name + "_forward", ir.Block(params, nodes, returns))

