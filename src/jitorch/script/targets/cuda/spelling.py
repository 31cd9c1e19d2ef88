"""How the CUDA target spells the registry's scalar templates: the one NumPy -> CUDA table.

The registry's templates are written once, in NumPy's spelling (`np.exp({input})`), which Numba's
CPU target compiles. NumPy's ufuncs do not compile inside a `numba.cuda` kernel, so each call of
one is rewritten here (CudaTarget.spell) into what the CUDA target has: `math.*` (libdevice on a
GPU; on float32 operands Numba types them float32), or a short expression for those whose
NaN rule `math` lacks (`np.maximum`/`np.minimum` propagate NaN, `np.fmax`/`np.fmin` ignore it;
Python's max/min do neither). A
template that still calls a NumPy function afterwards (`np.rint`, `np.logaddexp`, ...) is not
lowered: NotLowered names the op, the function and "cuda", and the call runs interpreted.
NumPy's scalar types (`np.float32(x)`, the casts of generated code) compile as they are.
"""
from __future__ import annotations

import ast

from .... import _dtype as dt
from ...codegen import NotLowered
from ...codegen.emitter import typed_literal

# NumPy function -> CUDA spelling; {0}, {1}: the call's arguments (each an expression)
SPELLING = {
    "np.abs": "abs({0})",
    "np.arccos": "math.acos({0})",
    "np.arccosh": "math.acosh({0})",
    "np.arcsin": "math.asin({0})",
    "np.arcsinh": "math.asinh({0})",
    "np.arctan": "math.atan({0})",
    "np.arctan2": "math.atan2({0}, {1})",
    "np.arctanh": "math.atanh({0})",
    "np.ceil": "math.ceil({0})",
    "np.cos": "math.cos({0})",
    "np.cosh": "math.cosh({0})",
    "np.exp": "math.exp({0})",
    "np.exp2": "math.exp2({0})",
    "np.expm1": "math.expm1({0})",
    "np.floor": "math.floor({0})",
    "np.fmod": "math.fmod({0}, {1})",
    "np.isfinite": "math.isfinite({0})",
    "np.isinf": "math.isinf({0})",
    "np.isnan": "math.isnan({0})",
    "np.log": "math.log({0})",
    "np.log10": "math.log10({0})",
    "np.log1p": "math.log1p({0})",
    "np.log2": "math.log2({0})",
    "np.sin": "math.sin({0})",
    "np.sinh": "math.sinh({0})",
    "np.sqrt": "math.sqrt({0})",
    "np.tan": "math.tan({0})",
    "np.tanh": "math.tanh({0})",
    "np.trunc": "math.trunc({0})",
    # NaN propagates from either side, as in NumPy and PyTorch (x != x: x is NaN)
    "np.maximum": "({0} if {0} > {1} or {0} != {0} else {1})",
    "np.minimum": "({0} if {0} < {1} or {0} != {0} else {1})",
    # ... and np.fmax/np.fmin ignore it: the other side wins over a NaN
    "np.fmax": "({0} if {0} >= {1} or {1} != {1} else {1})",
    "np.fmin": "({0} if {0} <= {1} or {1} != {1} else {1})",
    # the sign bit itself (-0.0 and -nan too); {one}, {zero}: literals of the compute dtype
    "np.signbit": "(math.copysign({one}, {0}) < {zero})",
}
# what differs for integer and bool compute dtypes (no float functions on integers)
SPELLING_INT = {"np.signbit": "({0} < 0)", "np.invert": "(~{0})"}
SPELLING_BOOL = {"np.signbit": "False", "np.invert": "(not {0})"}

# NumPy's scalar types: constructors (casts and typed literals), not ufuncs
_SCALAR_TYPES = frozenset(f"np.{n}" for n in ("bool_", "uint8", "int8", "int16", "int32",
                                              "int64", "float32", "float64"))


def _dotted(f: ast.expr) -> str | None:
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return f"{f.value.id}.{f.attr}"
    return None


class _Spell(ast.NodeTransformer):
    def __init__(self, op: str, compute):
        self.op = op
        self.table = {**SPELLING, **(SPELLING_BOOL if compute is dt.bool else SPELLING_INT
                                      if compute.category == dt.INT else {})}
        self.literals = {"one": typed_literal(1, compute), "zero": typed_literal(0, compute)}

    def _refuse(self, what: str):
        raise NotLowered(f"op {self.op}: {what} has no spelling on cuda (targets/cuda/spelling.py)")

    def visit_Call(self, node):
        node.args = [self.visit(a) for a in node.args]  # nested calls are spelled inside out
        node.keywords = [self.visit(k) for k in node.keywords]
        name = _dotted(node.func)
        if name is None or not name.startswith("np.") or name in _SCALAR_TYPES:
            node.func = self.visit(node.func)
            return node
        form = self.table.get(name)
        if form is None or node.keywords:
            self._refuse(name)
        args = (f"({ast.unparse(a)})" for a in node.args)  # an argument may be an if-else
        return ast.parse(form.format(*args, **self.literals), mode="eval").body

    def visit_Attribute(self, node):
        # NumPy reached outside a call it spells: a constant (np.inf: float64 in float32 code)
        name = _dotted(node)
        if name is not None and name.startswith("np.") and name not in _SCALAR_TYPES:
            self._refuse(name)
        return self.generic_visit(node)


def spell(opdef, compute, expr: str) -> str:
    """`expr` (a filled template for dtype `compute`, operands still placeholders) in the CUDA
    spelling."""
    tree = ast.parse(expr, mode="eval")
    return ast.unparse(ast.fix_missing_locations(_Spell(opdef.name, compute).visit(tree)))
