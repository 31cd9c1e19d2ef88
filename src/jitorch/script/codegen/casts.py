"""Casts in generated code: the one place that says how a value changes dtype on CPU.

Two conversions exist in eager jitorch, and generated code must give the same result for each:

- `cast(expr, src, dst)`: an element of a tensor converted to another dtype (`x.to(int8)`,
  `y.copy_(x)`, `x[i] = float_tensor`, operands promoted inside a loop). Eager is NumPy's
  `astype`. NumPy's float -> int conversion is C's truncation as the CPU does it: an int64
  result is the truncated value, or INT64_MIN when it does not fit (nan, +-inf included); every
  narrower integer type (int32 and below, uint8 too) goes through int32 the same way (INT32_MIN
  when it does not fit) and then keeps the low bits (300.0 -> int8 is 44, 1e10 -> int8 is 0).
  Numba's plain `np.int8(x)` is LLVM's `fptosi`, whose out-of-range result is undefined
  (poison), so generated code spells that rule out: a range test and a select, which LLVM still
  vectorises.
- `checked_scalar(em, v, dst)`: a Python number stored into a tensor (`x.fill_(v)`,
  `x[i] = v`), PyTorch's checked Scalar conversion (eager: `_creation._convert_scalar`). A
  value outside the dtype's range (nan and inf into an integer type; a finite float beyond
  float32's range into float32) raises "value cannot be converted to type int8_t without
  overflow"; unsigned types accept integers down to -max (two's complement wrap). A constant is
  converted at generation time by eager's own function, and a failing one becomes a raise at
  its place in the program (a branch not taken must not raise).
"""
from __future__ import annotations

import numpy as np

from ... import _dtype as dt
from .. import ir
from . import literal
from .emitter import Emitter, np_type, typed_literal

# the exact float64 bounds of the integers that fit: x fits when LO < x < HI (nan fails both)
_INT32_LO, _INT32_HI = "-2147483649.0", "2147483648.0"
_INT64_LO, _INT64_HI = "-9223372036854775808.0", "9223372036854775808.0"


def cast(expr: str, src: dt.dtype | None, dst: dt.dtype) -> str:
    """`expr` (of dtype `src`) as dtype `dst`, with NumPy's `astype` semantics. `expr` should
    be a name: a float -> int cast reads it three times."""
    if src is dst:
        return expr
    if src is not None and src.category == dt.FLOAT and dst.category == dt.INT:
        if dst is dt.int64:
            # -2**63 itself fits: the lower test is >=, not >
            return (f"(np.int64({expr}) if ({expr} >= {_INT64_LO}) & ({expr} < {_INT64_HI}) "
                    f"else np.int64(-9223372036854775808))")
        i32 = (f"(np.int32({expr}) if ({expr} > {_INT32_LO}) & ({expr} < {_INT32_HI}) "
               f"else np.int32(-2147483648))")
        return i32 if dst is dt.int32 else f"{np_type(dst)}({i32})"
    return f"{np_type(dst)}({expr})"


def needs_name(src: dt.dtype | None, dst: dt.dtype) -> bool:
    """Does `cast` read its operand more than once (so a compound expression needs a local)?"""
    return src is not dst and src is not None and src.category == dt.FLOAT and \
        dst.category == dt.INT


def cast_array(em: Emitter, xs: str, rank: int, src: dt.dtype, dst: dt.dtype) -> str:
    """A new array: `xs` (rank `rank`, dtype `src`) cast elementwise to `dst` like `astype`."""
    out = em.fresh("v")
    if not needs_name(src, dst):
        em.emit(f"{out} = {xs}.astype({np_type(dst)})")
        return out
    em.emit(f"{out} = np.empty({xs}.shape, {np_type(dst)})")
    if rank == 0:
        v = em.fresh("x")
        em.emit(f"{v} = {xs}[()]")
        em.emit(f"{out}[()] = {cast(v, src, dst)}")
        return out
    idx = [em.fresh("i") for _ in range(rank)]
    base = em.indent
    for d, i in enumerate(idx):
        em.emit(f"for {i} in range({xs}.shape[{d}]):")
        em.indent += 1
    v = em.fresh("x")
    em.emit(f"{v} = {xs}[{', '.join(idx)}]")
    em.emit(f"{out}[{', '.join(idx)}] = {cast(v, src, dst)}")
    em.indent = base
    return out


def _overflow(em: Emitter, dst: dt.dtype) -> None:
    from ..._creation import _C_NAMES
    em.raise_("RuntimeError", f"value cannot be converted to type {_C_NAMES.get(dst.name)} "
              "without overflow")


def scalar_dtype(t: ir.Type) -> dt.dtype:
    """The dtype a Python scalar of IR type `t` computes in inside a program."""
    if isinstance(t, ir.BoolType):
        return dt.bool
    if isinstance(t, ir.IntType):
        return dt.int64
    return dt.float64


def checked_scalar(em: Emitter, v: ir.Value, dst: dt.dtype) -> str:
    """The Python number `v` (a constant or a run-time int/float/bool) converted to `dst` for a
    store, with PyTorch's overflow check emitted before the store."""
    if em.is_const(v):
        return checked_literal(em, em.const(v), dst)
    src = scalar_dtype(v.type)
    x = em.name(v)
    if dst is dt.bool or src is dt.bool:
        return f"{np_type(dst)}({x})"
    if dst.category == dt.INT:
        info = np.iinfo(dst.np)
        if src.category == dt.FLOAT:
            if dst is dt.int64:
                bad = f"not ({x} >= {_INT64_LO} and {x} < {_INT64_HI})"
            else:
                lo, hi = literal.floating(float(info.min)), literal.floating(float(info.max))
                bad = f"not ({x} >= {lo} and {x} <= {hi})"
        elif dst is dt.int64:
            bad = None
        elif info.min == 0:  # unsigned: -max..max, negatives wrap
            hi = literal.integer(int(info.max))
            bad = f"{x} > {hi} or {x} < -{hi}"
        else:
            lo, hi = literal.integer(int(info.min)), literal.integer(int(info.max))
            bad = f"{x} < {lo} or {x} > {hi}"
        if bad is not None:
            em.emit(f"if {bad}:")
            em.indent += 1
            _overflow(em, dst)
            em.indent -= 1
        if src.category == dt.FLOAT:  # in range now: truncation is defined
            return f"{np_type(dst)}(np.int64({x}))"
        return f"{np_type(dst)}({x})"
    if dst is dt.float32 and src.category == dt.FLOAT:
        em.emit(f"if np.isfinite({x}) and abs({x}) > 3.4028234663852886e+38:")
        em.indent += 1
        em.raise_("RuntimeError", "value cannot be converted to type float without overflow")
        em.indent -= 1
    return f"{np_type(dst)}({x})"


def checked_literal(em: Emitter, value, dst: dt.dtype) -> str:
    """A constant number converted for a store into `dst` by eager's own checked conversion;
    a value it refuses becomes the same RuntimeError, raised where the store is."""
    from ..._creation import _convert_scalar
    try:
        conv = _convert_scalar(value, dst)
    except RuntimeError as e:
        em.emit("if True:")  # a raise in a block of its own: the code after it stays reachable
        em.indent += 1
        em.raise_("RuntimeError", str(e))
        em.indent -= 1
        return typed_literal(0, dst)
    return typed_literal(conv, dst)
