"""CPU lowering of scalar arithmetic: `prim::ScalarOp` on int, float and bool operands.

A scalar op in scripted code means what it means in Python, and a compiled program must agree
with the interpreter (which runs Python's own operators). Numba's operators agree with Python's
on every operand except where Python raises or leaves int64/float64, so each lowering guards
exactly those operands and hands the call to the interpreter there
(`Emitter.raise_in_interpreter`), which returns Python's result or raises Python's error with
the user's line:
- `/`, `//`, `%` by zero: ZeroDivisionError (with error_model="numpy" Numba gives inf/nan);
- `**` of ints with a negative exponent: a float (4 ** -1 is 0.25; the frontend types a
  constant negative exponent as float, a run-time one as int, which this guard keeps honest);
- `**` of floats whose result is nan or inf from finite operands: 0.0 ** -1 raises, (-8.0) **
  0.5 is complex, 10.0 ** 400 raises OverflowError;
- `int(x)` (and math.floor/ceil/trunc) of a float that is nan, infinite or outside int64:
  ValueError, OverflowError, or a Python int beyond int64;
- `math.*`: a nan result from non-nan arguments or an infinite one from finite arguments, where
  CPython raises "math domain error" / "math range error" (the rule of CPython's math_1);
- `<<` / `>>` by a negative count (ValueError); `<<` past 63 (a Python int beyond int64).
Where the interpreter would return a value rather than raise (a float, a complex number, an int
beyond int64), a program that writes its list arguments in place raises instead: it cannot run
the call again without writing twice.
Operand values, not only types, decide these paths, so no specialisation can drop them; each
guard is one compare on the fast path. Int overflow of +, -, *, ** and << wraps at 64 bits, as in
TorchScript (Python ints are unbounded).
"""
from __future__ import annotations

from ... import ir
from ...codegen import NotLowered

BINARY = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
          "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
          "ge": ">=", "and": "and", "or": "or"}

# math functions lowered to Numba's (they agree with CPython's on float arguments inside the
# domain; outside it the result guard below hands over); others run in the interpreter
MATH = {"math." + f for f in (
    "exp", "expm1", "sin", "cos", "tan", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
    "floor", "ceil", "trunc", "fabs", "isnan", "isinf", "isfinite", "copysign", "hypot",
    "erf", "erfc", "degrees", "radians", "sqrt", "log", "log2", "log10", "log1p")}
_BITWISE = {"bitand": "&", "bitor": "|", "bitxor": "^", "lshift": "<<", "rshift": ">>"}
# CPython's own results where C gives inf (no "math range error"): no guard
_NO_ERRORS = {"math.degrees", "math.radians", "math.hypot", "math.atan2", "math.copysign",
              "math.fabs"}
_TO_INT = {"math.floor": "np.floor", "math.ceil": "np.ceil", "math.trunc": "np.trunc"}

# int64's range as floats (both exact): int(x) of a float outside it is not an int64
_I64_LO, _I64_HI = "-9223372036854775808.0", "9223372036854775808.0"


def expression(em, n: ir.Node, fn: str, a: list) -> str:
    """The expression computing `n` from its operands' run-time names `a` (numbers); the guards
    it needs are emitted first. NotLowered for an op this module does not lower."""
    out = n.output.type
    if fn in BINARY and len(a) == 2:
        x, y = a
        if fn in ("truediv", "floordiv", "mod"):
            _hand_over_if(em, f"{y} == 0")
        if fn == "pow":
            return _pow(em, n, x, y)
        return f"({x} {BINARY[fn]} {y})"
    if fn in _BITWISE or fn == "invert":
        return _bitwise(em, n, fn, a)
    if fn == "neg" and len(a) == 1:
        return f"(-{a[0]})"
    if fn == "not" and len(a) == 1:
        return f"(not {a[0]})"
    if fn == "int" and len(a) == 1:
        if isinstance(n.inputs[0].type, ir.FloatType):
            return to_int(em, a[0])
        return _as(int, n.inputs[0], a[0])
    if fn == "float" and len(a) == 1:
        return _as(float, n.inputs[0], a[0])
    if fn == "bool" and len(a) == 1:
        return f"bool({a[0]})"
    if fn == "abs" and len(a) == 1:
        return f"{_conv(out)}(abs({a[0]}))"  # abs(True) is the int 1
    if fn in ("min", "max") and len(a) == 2:
        return f"{_conv(out)}({fn}({a[0]}, {a[1]}))"
    if fn in MATH and len(a) in (1, 2):
        return _math(em, n, fn, a)
    raise NotLowered(f"scalar op {fn}")


def to_int(em, x: str) -> str:
    """int(x) of a float x: Python's result where it is an int64, else the interpreter's."""
    _hand_over_if(em, f"{x} != {x} or math.isinf({x})")  # ValueError, OverflowError
    _hand_over_if(em, f"not ({x} >= {_I64_LO} and {x} < {_I64_HI})", "an int beyond int64")
    return f"int({x})"


def _as(kind, v: ir.Value, x: str) -> str:
    """int(x) / float(x) of a number (Numba has no float(bool))."""
    if isinstance(v.type, ir.BoolType):
        return f"({kind(1)!r} if {x} else {kind(0)!r})"
    return f"{kind.__name__}({x})"


def _conv(t: ir.Type) -> str:
    conv = {ir.IntType: "int", ir.FloatType: "float", ir.BoolType: "bool"}.get(type(t))
    if conv is None:
        raise NotLowered(f"scalar op of result type {t}")
    return conv


def _bitwise(em, n: ir.Node, fn: str, a: list) -> str:
    """& | ^ << >> ~ on ints and bools (on int64 two's complement they are Python's)."""
    if any(not isinstance(v.type, (ir.IntType, ir.BoolType)) for v in n.inputs) or \
            len(a) != (1 if fn == "invert" else 2):
        raise NotLowered(f"scalar op {fn} on {[str(v.type) for v in n.inputs]}")
    if fn == "invert":
        return f"(~{_as(int, n.inputs[0], a[0])})"  # ~True is -2 (Numba's ~ on a bool is not)
    x, y = a
    if isinstance(n.output.type, ir.BoolType):  # & | ^ of bools
        return f"(bool({x}) {_BITWISE[fn]} bool({y}))"
    xi, yi = _as(int, n.inputs[0], x), _as(int, n.inputs[1], y)
    if fn in ("lshift", "rshift"):
        _hand_over_if(em, f"{yi} < 0")  # Python: ValueError("negative shift count")
    if fn == "rshift":  # past 63 LLVM's shift is undefined; Python's gives 0 or -1, as >> 63
        return f"({xi} >> min({yi}, 63))"
    if fn == "lshift":  # Python: an int beyond int64 (or 0 for x == 0)
        _hand_over_if(em, f"{yi} > 63", "an int beyond int64")
    return f"({xi} {_BITWISE[fn]} {yi})"


def _pow(em, n: ir.Node, x: str, y: str) -> str:
    if not isinstance(n.output.type, ir.FloatType):
        if any(isinstance(v.type, ir.FloatType) for v in n.inputs):
            raise NotLowered(f"pow of floats typed {n.output.type}")
        _hand_over_if(em, f"{y} < 0", "a float from int ** negative int")
        return f"({_as(int, n.inputs[0], x)} ** {_as(int, n.inputs[1], y)})"
    # as CPython: both operands as doubles into C pow (Numba's float ** int multiplies
    # repeatedly and rounds differently)
    fx, fy, r = em.fresh("f"), em.fresh("f"), em.fresh("p")
    em.emit(f"{fx} = {_as(float, n.inputs[0], x)}")
    em.emit(f"{fy} = {_as(float, n.inputs[1], y)}")
    em.emit(f"{r} = {fx} ** {fy}")
    _hand_over_if(em, f"{fx} < 0 and {fy} != np.floor({fy}) and math.isfinite({fy})",
                  "a complex number")  # a negative base to a fractional power
    _hand_over_if(em, _escaped(r, [fx, fy]))  # ZeroDivisionError, OverflowError
    return r


def _math(em, n: ir.Node, fn: str, a: list) -> str:
    args = []
    for v, x in zip(n.inputs, a):  # floats, as CPython's math module converts its arguments
        f = em.fresh("f")
        em.emit(f"{f} = {_as(float, v, x)}")
        args.append(f)
    if fn in _TO_INT:  # NumPy's returns the float (Numba's math.floor returns a wrapped int)
        if len(args) != 1:
            raise NotLowered(f"{fn} of {len(args)} arguments")
        r = em.fresh("f")
        em.emit(f"{r} = {_TO_INT[fn]}({args[0]})")
        return to_int(em, r)
    conv = _conv(n.output.type)
    if conv == "bool":  # isnan, isinf, isfinite: defined everywhere
        return f"{fn}({', '.join(args)})"
    r = em.fresh("m")
    if fn == "math.log" and len(args) == 2:  # as CPython: log(x) / log(base), each in domain
        x, b = args  # (ValueError below 0, ZeroDivisionError for base 1; nan stays nan)
        _hand_over_if(em, f"{x} <= 0 or {b} <= 0 or {b} == 1.0")
        em.emit(f"{r} = math.log({x}) / math.log({b})")
        return r
    em.emit(f"{r} = {conv}({fn}({', '.join(args)}))")
    if conv == "float" and fn not in _NO_ERRORS:
        _hand_over_if(em, _escaped(r, args))
    return r


def _escaped(r: str, args: list) -> str:
    """The condition under which CPython's float function raises (or leaves the reals) where
    C returns nan/inf: a nan from non-nan arguments, an infinity from finite ones."""
    not_nan = " and ".join(f"{x} == {x}" for x in args)
    finite = " and ".join(f"math.isfinite({x})" for x in args)
    return f"({r} != {r} and {not_nan}) or (math.isinf({r}) and {finite})"


def _hand_over_if(em, cond: str, result: str | None = None) -> None:
    """`if cond:` the interpreter runs the call: it raises Python's error or, when `result`
    names what Python returns instead, computes it. A program that writes its list arguments
    in place (lower_list.py) cannot be run again from the start without writing twice, so
    there the second kind raises, naming what Python would have returned (the first kind
    raises as documented in kernels.signals.RaiseInInterpreter)."""
    em.emit(f"if {cond}:")
    em.indent += 1
    if result is not None and em.writes_arguments:
        em.raise_("RuntimeError", f"Python's result here is {result}, which a compiled "
                  "program that writes its list arguments in place cannot hand to the "
                  "interpreter")
    else:
        em.raise_in_interpreter()
    em.indent -= 1
