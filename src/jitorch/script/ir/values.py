"""Facts read off IR values that the frontend, the passes and the code generator share: the
number kind of a leaf, a value's constant (lists of constants too), the static structure of
`tensor(data)`'s data, the rank of a size argument, and Python's result type of a scalar op.
"""
from __future__ import annotations

from .. import ir


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


_KINDS = {ir.BoolType: "bool", ir.IntType: "int", ir.FloatType: "float", ir.NoneType: "none"}


def leaf_kind(x) -> str | None:
    """The number kind of a data leaf (a Python number or an ir.Value of a number type)."""
    if isinstance(x, ir.Value):
        return _KINDS.get(type(x.type))
    return "bool" if isinstance(x, bool) else "int" if isinstance(x, int) else \
        "float" if isinstance(x, float) else None


def const_of(v: ir.Value):
    """(True, value) for a constant (or a list/tuple of constants), else (False, None); unlike
    `const_value` it also reads a TupleConstruct (the frontend's size tuples of factories)."""
    n = v.node
    if n is None:
        return False, None
    if n.op == "prim::Constant":
        return True, n.attrs.get("value")
    if n.op in ("prim::ListConstruct", "prim::TupleConstruct"):
        vals = [const_of(x) for x in n.inputs]
        if all(k for k, _ in vals):
            return True, [x for _, x in vals]
    return False, None


def size_rank(v: ir.Value):
    """The length of a size list/tuple value when the IR knows it, else None."""
    t = v.type
    if isinstance(t, ir.TupleType):
        return len(t.elems)
    n = v.node
    if n is None:
        return None
    if n.op in ("prim::ListConstruct", "prim::TupleConstruct"):
        return len(n.inputs)
    if n.op == "prim::Constant":
        val = n.attrs.get("value")
        return len(val) if isinstance(val, (tuple, list)) else 1
    if n.op == "prim::GetAttr" and n.attrs.get("name") == "shape":
        return getattr(n.inputs[0].type, "ndim", None)
    return None


def _const_shape(c):
    if isinstance(c, (bool, int, float)):
        return ()
    if isinstance(c, (list, tuple)):
        subs = {_const_shape(x) for x in c}
        if not c:
            return (0,)
        if len(subs) != 1 or None in subs:
            return None
        return (len(c),) + subs.pop()
    return None


def _flat(c) -> list:
    return [y for x in c for y in _flat(x)] if isinstance(c, (list, tuple)) else [c]


def data_info(v: ir.Value):
    """(shape, leaves) of `tensor(data)`'s data when its structure is static: a scalar, or
    nested ListConstructs / constant lists (rectangular); leaves are ir.Values or Python
    numbers, row-major. None when not static (eager raises, or the length is a run-time one)."""
    ok, c = const_of(v)
    if ok:
        shape = _const_shape(c)
        return None if shape is None else (shape, _flat(c))
    if isinstance(v.type, (ir.IntType, ir.FloatType, ir.BoolType)):
        return (), [v]
    n = v.node
    if n is None or n.op != "prim::ListConstruct":
        return None
    if not n.inputs:
        return (0,), []
    subs = [data_info(x) for x in n.inputs]
    if None in subs or len({s[0] for s in subs}) != 1:
        return None
    return (len(subs),) + subs[0][0], [x for s in subs for x in s[1]]


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
    (targets/cpu/lower_scalar.py), which returns Python's float."""
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
