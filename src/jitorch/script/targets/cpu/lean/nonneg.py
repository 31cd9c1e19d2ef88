"""Which integer values of a typed function are never negative: the lean compiler's licence to
index an array without Python's negative-index wraparound.

Owns `direct_subscripts(typed) -> set`: the ids of the subscripts (loads, stores, augmented
stores) of an array by as many integer indices as it has dimensions, each provably >= 0. For
those lower.py computes the element's address itself instead of calling Numba's getitem and
setitem, which add `i < 0 ? i + size : i` per index: generated loop nests index by loop
variables times 0/1 broadcast multipliers, and the select costs LLVM time on every one.

The proof: a local variable is non-negative if every value assigned to it is, assuming that of
the variables in the set (the greatest fixed point: an induction over the run, as a loop
counter `i = i + 1` from 0 is); a `range` loop variable is when its start is and its step is
a positive constant. Expressions: non-negative constants, sizes (`x.shape[k]`, `len`,
`x.size`), comparisons and `int` of them, and `+`, `*`, `//`, `min` of non-negative operands,
`%` by a non-negative divisor, `max` with one non-negative operand. Anything else (a
parameter, a subtraction) is not known to be.
"""
from __future__ import annotations

import ast

from numba.core import types

_SIZES = ("shape", "size", "ndim")


class _Facts:
    def __init__(self, typed):
        self.t = typed
        self.vars = {n for n, ty in typed.vars.items()
                     if isinstance(ty, (types.Integer, types.Boolean))}
        # each variable's definitions, collected once: (kind, node)
        self.defs: dict = {}
        for node in ast.walk(typed.fn):
            if isinstance(node, ast.Assign):
                tgt = node.targets[0]
                if isinstance(tgt, ast.Name):
                    self.defs.setdefault(tgt.id, []).append(("value", node.value))
                elif isinstance(tgt, ast.Tuple):  # (an unpacked element: not followed)
                    for x in tgt.elts:
                        self.defs.setdefault(x.id, []).append(("unknown", None))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self.defs.setdefault(node.target.id, []).append(("augment", node))
            elif isinstance(node, ast.For):
                self.defs.setdefault(node.target.id, []).append(("range", node.iter.args))

    def value(self, e) -> bool:
        t = self.t
        if isinstance(e, ast.Constant):
            return isinstance(e.value, (bool, int)) and e.value >= 0
        if isinstance(e, ast.Name):
            return e.id in self.vars
        ty = t.ty.get(id(e))
        if isinstance(ty, types.Boolean):
            return True
        if isinstance(e, ast.Subscript):  # x.shape[k]
            v = e.value
            return isinstance(v, ast.Attribute) and v.attr == "shape" and \
                isinstance(t.ty.get(id(v.value)), types.Array)
        if isinstance(e, ast.Attribute):
            return e.attr in _SIZES and isinstance(t.ty.get(id(e.value)), types.Array)
        if isinstance(e, ast.BinOp):
            if isinstance(e.op, (ast.Add, ast.Mult, ast.FloorDiv)):
                return self.value(e.left) and self.value(e.right)
            if isinstance(e.op, ast.Mod):  # (Python's %: the divisor's sign)
                return self.value(e.right)
            return False
        if isinstance(e, ast.IfExp):
            return self.value(e.body) and self.value(e.orelse)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and not e.keywords:
            fn = t.glob.get(id(e.func))
            if fn is int or fn is len:
                return fn is len or (len(e.args) == 1 and self.value(e.args[0]))
            if fn is min:
                return all(self.value(a) for a in e.args)
            if fn is max:
                return any(self.value(a) for a in e.args)
        return False

    def settle(self) -> None:
        while True:
            drop = {n for n in self.vars if not self._assignments_ok(n)}
            if not drop:
                return
            self.vars -= drop

    def _assignments_ok(self, name) -> bool:
        for kind, what in self.defs.get(name, ()):
            if kind == "unknown":
                return False
            if kind == "value" and not self.value(what):
                return False
            if kind == "augment" and not (isinstance(what.op, (ast.Add, ast.Mult, ast.FloorDiv))
                                          and self.value(what.value)):
                return False
            if kind == "range":
                start_ok = len(what) == 1 or self.value(what[0])
                step_ok = len(what) < 3 or (isinstance(what[2], ast.Constant) and
                                            what[2].value > 0)
                if not (start_ok and step_ok):
                    return False
        return True


def direct_subscripts(typed) -> set:
    facts = _Facts(typed)
    facts.settle()
    out = set()
    for node in ast.walk(typed.fn):
        sub = node.target if isinstance(node, ast.AugAssign) else node
        if not isinstance(sub, ast.Subscript):
            continue
        arr = typed.ty.get(id(sub.value))
        if not isinstance(arr, types.Array):
            continue
        idx = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        if len(idx) != arr.ndim:
            continue
        if all(isinstance(typed.ty.get(id(i)), types.Integer) and facts.value(i) for i in idx):
            out.add(id(sub))
    return out
