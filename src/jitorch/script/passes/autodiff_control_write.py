"""Gradients of index writes inside differentiated control flow, for
`autodiff_control._CtlBackward` (`self` below is that backward tracer; see its module doc).
(`stack`, `cat` and `select` need nothing here: their registry rules use ops that lower.)

- `_index_write(x, v, ())` (`hs[t] = h` writes v over the whole view `hs[t]`): v gets the
  grad, x none (a zero grad here would make the select feeding x add a zero row per step);
- `_select_write(x, v, dim, i)` with a run-time i whose output grad is a loop-carried grad
  buffer the body's backward owns (`_CtlBackward.owned`; loop_vjp copies it once before the
  backward loop): `take_row` (a copy of row i, v's grad) then `zero_row` (row i zeroed in
  place, x's grad) instead of the rule's `_select_write(g, 0, dim, i)`, a copy of the whole
  buffer per step (quadratic in the trip count).
"""
from __future__ import annotations

from ..._tensor import Tensor
from .. import ir
from .autodiff_control_ops import _pyop, _take_row_fn, _ttype, _zero_row_fn


def row_write_vjp(self, n: ir.Node) -> bool:
    """`_select_write(x, v, dim, i)` (`hs[t] = h`) whose output grad g is a loop-carried
    grad buffer of this body's backward: v gets a copy of row i of g (`take_row`), x gets
    g with row i zeroed in place (`zero_row`): no copy of the whole buffer per step (the
    registry rule's `_select_write(g, 0, dim, i)` would be quadratic in the trip count).
    Nothing else reads g: it is the only grad of the write's output. False: the rule runs."""
    g = self.grads.get(n.output.uid)
    if g is None or id(g) not in self.owned or n.inputs[2].uid in self.dynamic:
        return False
    x, v, idx_v = n.inputs[0], n.inputs[1], n.inputs[3]
    ref = self.env[x.uid]
    dim = int(self.env[n.inputs[2].uid])
    nd = ref._data.ndim
    if not -nd <= dim < nd:
        return False
    dim %= nd
    idx = self._value(idx_v)
    cenv: dict = {}
    gv, iv = self._tv(g, cenv), self._tv(idx, cenv)
    row_t = ir.TensorType(g._dtype, (None,) * (nd - 1))
    if v.uid in self.needs:
        take = _pyop("take_row", _take_row_fn(dim), (gv, iv), row_t,
                     dim=dim)
        self.tracer.block.nodes.append(take)
        row = _take_row_fn(dim)(g, int(idx))
        self.tracer.bind(row, take.output)
        self._give(v, row)
    if x.uid in self.needs:
        zero = _pyop("zero_row", _zero_row_fn(dim), (gv, iv),
                     _ttype(g), dim=dim)
        self.tracer.block.nodes.append(zero)
        res = _zero_row_fn(dim)(Tensor._make(g._data.copy(), g._dtype), int(idx))
        self.tracer.bind(res, zero.output)
        self.owned.add(id(res))
        self._give(x, res)
    return True


def whole_write(n: ir.Node) -> bool:
    """`_index_write(x, v, (), ...)` (`hs[t] = h` writes through the view `hs[t]`)."""
    b = n.inputs[2].node
    return b is not None and b.op == "prim::Constant" and b.attrs.get("value") == ()


def overwrite_vjp(self, n: ir.Node) -> None:
    """x is overwritten entirely: its grad is zero (none is given: a zeros tensor here
    would make the select feeding x accumulate a zero row per step), v gets the grad."""
    g = self.grads.get(n.output.uid)
    if g is not None:
        self._give(n.inputs[1], g)
