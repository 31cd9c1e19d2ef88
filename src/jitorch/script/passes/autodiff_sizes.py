"""The run-time numbers a traced backward reads (see autodiff.py, autodiff_sym.py).

Owns `SymbolicSizes`, the part of `autodiff._Backward` that gives the VJP rules stand-ins for
the forward's run-time numbers and turns them into backward inputs: `_symbolic` (a
non-constant Python number the graph takes), `_shape` (a forward value's shape with `_SymSize`
stand-ins for its sizes >= 2, symbolic mode) and `_size_param` (the backward input a stand-in
becomes: a saved scalar, a size read from a backward input's shape, or a saved size).
"""
from __future__ import annotations

from ..._tensor import Tensor
from .. import ir
from .autodiff_sym import _SizeRef, _SymFloat, _SymInt, _SymSize


class SymbolicSizes:
    """Mixed into autodiff._Backward: uses its env, symbolic, dynamic, shapes, saved, sym,
    sym_param, params, shape_reads, emit and tracer."""

    def _symbolic(self, v: ir.Value, x):
        """A non-constant Python number the rules read (`x * a`, `a: float` an input): the rule
        gets a stand-in that behaves as the number inside ops but refuses Python arithmetic
        (which the trace would bake); the constant the tracer records for it is then replaced
        by a backward input fed from the forward's saved values."""
        sym = self.sym.get(v.uid)
        if sym is None:
            sym = (_SymFloat if type(x) is float else _SymInt)(x)
            p = ir.Value(ir.FLOAT if type(x) is float else ir.INT, f"saved_{len(self.saved)}")
            self.tracer.block.params.append(p)
            self.saved.append(v)
            self.sym[v.uid] = sym
            self.sym_param[id(sym)] = p
        return sym

    def _shape(self, v: ir.Value, elem=None):
        """The shape a rule gets for forward value `v`: for a value that depends on the inputs
        (symbolic mode), sizes >= 2 are `_SymSize` stand-ins, so ops the rule records with them
        (reshape/expand targets, counts) read run-time sizes; 0 and 1 stay numbers (they are
        part of the shape key's pattern and decide broadcasting)."""
        x = self.env[v.uid]
        if elem is not None:
            x = x[elem]
        shape = tuple(x._data.shape) if isinstance(x, Tensor) else ()
        if not self.symbolic or v.uid not in self.dynamic or not isinstance(x, Tensor):
            return shape
        got = self.shapes.get((v.uid, elem))
        if got is None:
            got = []
            for d, s in enumerate(shape):
                if s >= 2:
                    s = _SymSize(s)
                    s.key = (v, d, elem)
                got.append(s)
            got = self.shapes[(v.uid, elem)] = tuple(got)
        return got

    def _size_param(self, sym) -> ir.Value:
        """The backward input for a base stand-in: a saved scalar input, or a saved size (the
        forward computes `value.shape[dim]`), added on first use."""
        p = self.sym_param.get(id(sym))
        if p is None:
            if not isinstance(sym, _SymSize):
                from .autodiff import NotDifferentiable  # (autodiff imports this module)
                raise NotDifferentiable(f"a stand-in {sym!r} of another trace")
            v, d, elem = sym.key
            src = self.params.get(v.uid) if elem is None else None
            if src is not None:  # a backward input has this shape: read it there
                sh = self.shape_reads.get(src.uid)
                if sh is None:
                    n = ir.Node("prim::GetAttr", [src], [ir.ListType(ir.INT)],
                                attrs={"name": "shape"})
                    self.emit.append(n)
                    sh = self.shape_reads[src.uid] = n.output
                k = ir.Node("prim::Constant", (), (ir.INT,), attrs={"value": d})
                gi = ir.Node("prim::ScalarOp", [sh, k.output], [ir.INT], attrs={"fn": "getitem"})
                self.emit += [k, gi]
                self.sym_param[id(sym)] = gi.output
                return gi.output
            p = ir.Value(ir.INT, f"size_{len(self.saved)}")
            self.tracer.block.params.append(p)
            self.saved.append(_SizeRef(v, d, elem, len(self.env[v.uid]) if elem is not None
                                       else 0))
            self.sym_param[id(sym)] = p
        return p
