"""Subscripts in the scripting frontend: `IndexBuilder` (`st.index`), `x[idx]` and `x[idx] = v`.

Tensor reads lower, without knowing the rank, to:
- `_index_view(x, basic)` when every index element is static: `basic` is a constant tuple of
  ints (possibly negative: NumPy semantics), `(start, stop, step)` tuples (None for an omitted
  bound) and None (a new axis). A trailing Ellipsis is dropped. These raw entries are what
  `_np_basic` turns into NumPy indices, so eager semantics hold without knowing sizes.
- a chain of `select(x, dim, i)` / `_index_view` when some ints are runtime values;
- otherwise (runtime slice bounds, tensor indices, a leading Ellipsis) a `prim::PythonOp` that
  rebuilds the index and calls `Tensor.__getitem__` (correct, but holds the GIL).
Writes `x[idx] = v` are functional in the IR and in place for the user: the new value of `x`
is `_index_write(x, v, basic)` for a static index (an op of `_ops/index_write.py`, lowered by
targets/cpu/lower_write.py); with runtime ints or an Ellipsis, v is written into the view a read
makes and goes back up the view chain (`_select_write(x, view, dim, i)`, also compiled); tensor
indices (masks, index tensors) use the `setitem` PythonOp (GIL). The frontend's alias tracking
(frontend/alias.py) then rebinds every name sharing x's storage and, for arguments, returns the
final value so the runtime writes it back into the caller's tensor.
`_index_write(x, v, ())` is also how `copy_`, `fill_`, `zero_` and the dtype-keeping result of
an in-place method (`x.add_(y)`) are expressed. Lists, tuples, dicts and strings index with
`prim::ScalarOp getitem` / `prim::TupleIndex`.
"""
from __future__ import annotations

import ast

from ..._ops.index_write import _WHOLE
from . import types as ft
from .. import ir


class _Index:
    """Rebuilds a Python index from a static template and runtime values (for PythonOps)."""

    def __init__(self, spec):
        self.spec = spec  # tuple of ("c", value) | ("d", k) | ("s", (lo, hi, st) of those)

    def build(self, dyn):
        def one(e):
            kind, p = e
            if kind == "c":
                return p
            if kind == "d":
                return dyn[p]
            return slice(*(one(x) for x in p))
        items = tuple(one(e) for e in self.spec)
        return items[0] if len(items) == 1 and self.single else items

    single = False


class GetItem(_Index):
    __qualname__ = "getitem"

    def __call__(self, x, *dyn):
        return x[self.build(dyn)]


class SetItem(_Index):
    """`x[idx] = v` out of place: a copy of x with the write applied."""
    __qualname__ = "setitem"

    def __call__(self, x, *rest):
        dyn, v = rest[:-1], rest[-1]
        x = x.clone() if hasattr(x, "clone") else type(x)(x)
        x[self.build(dyn)] = v
        return x


def _const_of(v):
    if isinstance(v, ir.Value) and v.node is not None and v.node.op == "prim::Constant":
        return True, v.node.attrs["value"]
    return False, None


class IndexBuilder:
    """Subscripts for one function (`st.index`): reads `getitem`, writes `setitem`."""

    __slots__ = ("st",)  # its only state is the shared one

    def __init__(self, st):
        self.st = st

    def _index_items(self, slice_node):
        """The index as a list of ("c", static) | ("d", Value) | ("s", (3 parts)) | ("t",
        tensor Value)."""
        st = self.st
        elts = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
        out = []
        for e in elts:
            if isinstance(e, ast.Slice):
                parts = []
                for p in (e.lower, e.upper, e.step):
                    if p is None:
                        parts.append(("c", None))
                        continue
                    v = st.exprs.expr_value(p)
                    ok, c = _const_of(v)
                    parts.append(("c", c) if ok else ("d", v))
                out.append(("s", tuple(parts)))
                continue
            from .expr import Sugar
            r = st.exprs.expr(e)
            if isinstance(r, Sugar) and r.obj is Ellipsis:
                out.append(("c", Ellipsis))
                continue
            v = st.exprs.to_value(r)
            ok, c = _const_of(v)
            if ok and (c is None or isinstance(c, int)):
                out.append(("c", c))
            elif ft.is_tensor(v.type) or isinstance(v.type, (ir.ListType, ir.AnyType)):
                out.append(("t", v))
            else:
                out.append(("d", v))
        return out, not isinstance(slice_node, ast.Tuple)

    def getitem(self, base, slice_node, node):
        st = self.st
        base = st.exprs.to_value(base)
        t = ft.base(base.type)
        if isinstance(t, ir.TensorType):
            items, single = self._index_items(slice_node)
            st.cur = node
            return self.tensor_getitem(base, items, single)
        if isinstance(slice_node, ast.Slice):
            items, _ = self._index_items(slice_node)
            st.cur = node
            return self._python_getitem(base, items, True, t)
        idx = st.exprs.expr_value(slice_node)
        st.cur = node
        if isinstance(t, ir.TupleType):
            ok, k = _const_of(idx)
            if not ok or not isinstance(k, int):
                st.fail("tuple indices must be integer constants in scripted code",
                        slice_node)
            if not -len(t.elems) <= k < len(t.elems):
                st.fail(f"tuple index {k} is out of range for a tuple of {len(t.elems)}",
                        slice_node)
            if base.node is not None and base.node.op == "prim::TupleConstruct":
                return base.node.inputs[k]
            return st.emit("prim::TupleIndex", [base, idx], (t.elems[k],)).output
        if isinstance(t, ir.ListType):
            return st.exprs.scalar_op("getitem", [base, idx], t.elem)
        if isinstance(t, ir.DictType):
            return st.exprs.scalar_op("getitem", [base, idx], t.value)
        if isinstance(t, ir.StrType):
            return st.exprs.scalar_op("getitem", [base, idx], ir.STR)
        if isinstance(t, ir.AnyType):
            return st.exprs.scalar_op("getitem", [base, idx], ft.tensor())
        st.fail(f"a value of type {base.type} cannot be subscripted", node)

    def tensor_getitem(self, x, items, single):
        st = self.st
        if items and items[-1] == ("c", Ellipsis):
            items = items[:-1]
        if not items:
            return x
        simple = all(k == "c" and c is not Ellipsis or k == "s" and all(
            pk == "c" for pk, _ in c) for k, c in items)
        if simple:
            basic = tuple(c if k == "c" else tuple(p for _, p in c) for k, c in items)
            return st.calls.call_op("_index_view", [x, st.const(basic)])
        chainable = all(k in ("c", "d", "s") and (k != "s" or all(pk == "c" for pk, _ in c))
                        and c is not Ellipsis for k, c in items)
        if chainable:
            dim = 0
            for k, c in items:
                if k == "d":
                    if not isinstance(ft.base(c.type), (ir.IntType, ir.BoolType)):
                        return self._python_getitem(x, items, single, ft.tensor())
                    x = st.calls.call_op("select", [x, st.const(dim), c])
                elif k == "c" and isinstance(c, int):
                    x = st.calls.call_op("_index_view", [x, st.const((_WHOLE,) * dim + (c,))])
                elif k == "c":  # None: a new axis
                    x = st.calls.call_op("_index_view", [x, st.const((_WHOLE,) * dim + (None,))])
                    dim += 1
                else:
                    sl = tuple(p for _, p in c)
                    x = st.calls.call_op("_index_view", [x, st.const((_WHOLE,) * dim + (sl,))])
                    dim += 1
            return x
        ell = [i for i, (k, c) in enumerate(items) if k == "c" and c is Ellipsis]
        if len(ell) == 1 and not any(k in ("s", "t") for k, _ in items[ell[0] + 1:]):
            return self._ellipsis_getitem(x, items[:ell[0]], items[ell[0] + 1:], single)
        return self._python_getitem(x, items, single, ft.tensor())

    def _ellipsis_getitem(self, x, before, after, single):
        """`x[a, ..., i, None]`: the items after the Ellipsis count from the end (negative
        dims, right to left), so no rank is needed: ints select, None unsqueezes."""
        st = self.st
        tail = 0  # result dims already produced to the right of the current item
        for k, c in reversed(after):
            if c is None and k == "c":
                x = st.calls.call_op("unsqueeze", [x, st.const(-(tail + 1))])
                tail += 1
            else:
                i = c if k == "d" else st.const(c)
                if k == "d" and not isinstance(ft.base(c.type), (ir.IntType, ir.BoolType)):
                    return self._python_getitem(x, before + [("c", Ellipsis)] + after,
                                                single, ft.tensor())
                x = st.calls.call_op("select", [x, st.const(-(tail + 1)), i])
        return self.tensor_getitem(x, before, single) if before else x

    def _spec(self, items):
        dyn = []

        def enc(kind, c):
            if kind == "c":
                return ("c", c)
            if kind in ("d", "t"):
                dyn.append(c)
                return ("d", len(dyn) - 1)
            return ("s", tuple(enc(pk, pc) for pk, pc in c))
        return tuple(enc(k, c) for k, c in items), dyn

    def _python_getitem(self, x, items, single, out_type):
        st = self.st
        spec, dyn = self._spec(items)
        fn = GetItem(spec)
        fn.single = single
        n = st.python_op(fn, [x] + dyn, (out_type,), name="getitem")
        if isinstance(ft.base(x.type), ir.TensorType) and not any(k == "t" for k, _ in items):
            st.writes.note_alias(n.output, x, n)  # a basic index: a view, written back by SetItem
        return n.output

    def setitem(self, base, slice_node, v, node):
        """`base[idx] = v`: the new contents of base (the caller rebinds, frontend_alias)."""
        st = self.st
        t = ft.base(base.type)
        if isinstance(t, ir.TupleType):
            st.fail("tuples are immutable: cannot assign to a tuple element", node)
        items, single = self._index_items(slice_node)
        st.cur = node
        if isinstance(t, ir.TensorType):
            its = items[:-1] if items and items[-1] == ("c", Ellipsis) else items
            if all(k == "c" and c is not Ellipsis or k == "s" and all(pk == "c" for pk, _ in c)
                   for k, c in its):
                basic = tuple(c if k == "c" else tuple(p for _, p in c) for k, c in its)
                if all(b is None or isinstance(b, int) and not isinstance(b, bool) or
                       isinstance(b, tuple) and (b[2] is None or b[2] > 0) for b in basic):
                    return st.writes.write_op(base, v, basic)
            if its and not any(k == "t" for k, _ in its):
                # runtime ints, an Ellipsis: write into the view a read makes (a chain of
                # select/_index_view, or a getitem PythonOp for runtime slice bounds); the
                # write goes back up through `_select_write` (compiled) or a setitem PythonOp
                view = self.tensor_getitem(base, list(its), single)
                st.cur = node
                st.writes.mutate(view, st.writes.write_op(view, v), node)
                return None
        spec, dyn = self._spec(items)
        fn = SetItem(spec)
        fn.single = single
        return st.python_op(fn, [st.writes.target(base)] + dyn + [v], (base.type,),
                            name="setitem").output
