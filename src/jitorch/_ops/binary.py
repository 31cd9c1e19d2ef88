"""Binary elementwise ops: arithmetic (add, sub, mul, div, floor_divide, remainder, fmod, pow,
float_power) and binary math (atan2, hypot, copysign, xlogy, logaddexp, logaddexp2, ldexp).

Each op: NumPy impl on arrays already cast to the compute dtype, VJP/JVP written with jitorch
ops (broadcast gradients are reduced by autograd), and the Numba scalar template for the compiler.

Also owns the declaration helpers the other elementwise families (`ternary.py`,
`complex_ops.py`) share: `not_implemented`/`kernel_rule` (PyTorch's "not implemented for
'Bool'" errors), `select` (`where` for rules, also taking a Python-bool condition), `ufunc2`, and:
- `guard(name, check)`: PyTorch checks some arguments before type promotion (a bool operand of
  `-`, a negative Python int exponent of an integer tensor, lerp's dtype equality...). The
  registry's dtype rules only see the promoted dtype, so `check` receives the raw arguments and
  runs ahead of the op's public function, Tensor method and in-place method.
- `alias(new, name)`: PyTorch's aliases (`arctan2`, `clip`, `subtract`, ...) are the same op
  (same grad_fn name), so they share the function instead of declaring a second op.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .. import _dtype as dt
from .._creation import zeros_like
from .._tensor import Tensor
from ..autograd.graph import plain_grad
from ._util import ON_ARRAYS
from .registry import OPS, PUBLIC, _pt_name, checked_function, defop

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
           "floor_divide", "remainder", "fmod", "pow", "float_power", "atan2", "arctan2",
           "hypot", "copysign", "xlogy", "logaddexp", "logaddexp2", "ldexp"]

_BIN = ("input", "other")


# --- shared helpers --------------------------------------------------------------------------
class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """PyTorch raises RuntimeError("ZeroDivisionError") for integer division by zero; being
    also a ZeroDivisionError lets Python code catch it either way."""


def check_int_divisor(other) -> None:
    if other.dtype.kind in "iu" and np.any(other == 0):
        raise IntegerDivisionByZero("ZeroDivisionError")


def not_implemented(kernel: str, d: dt.dtype):
    """PyTorch's error for a dtype a kernel lacks (NotImplementedError, like torch >= 2)."""
    raise NotImplementedError(f'"{kernel}" not implemented for \'{_pt_name(d)}\'')


def kernel_rule(kernel: str, *, bool_ok=True, int_ok=True, complex_ok=True, base="promote"):
    """A dtype rule that rejects the dtype categories PyTorch's kernel lacks."""
    def rule(d):
        if (d.category == dt.BOOL and not bool_ok) or (d.category == dt.INT and not int_ok) \
                or (d.category == dt.COMPLEX and not complex_ok):
            not_implemented(kernel, d)
        if base == "float" and d.category < dt.FLOAT:
            d = dt.get_default_dtype()
        return d, d
    return rule


def guard(name: str, check, inplace_check=None, refuses=None):
    """Run `check(*args, **kwargs)` before op `name`'s function, method and in-place method
    (`inplace_check`, if given, replaces `check` for the in-place method; `check=None` guards
    only the in-place method). `refuses`: the operand dtypes `check` rejects, when it rejects
    nothing else but Python numbers of other types than int and float: the function is then
    made with the check after its fast path, which takes none of those (`checked_function`)."""
    op = OPS[name]
    fn = op.fn
    if check is None:
        _guard_inplace(op, name, inplace_check)
        return fn

    if refuses is not None:
        checked = checked_function(op, check, refuses)
    else:
        @functools.wraps(fn)
        def checked(*args, **kwargs):
            check(*args, **kwargs)
            return fn(*args, **kwargs)
    # the interpreter calls ops by their declaration, not through this wrapper: it runs the
    # check from here (`check(*slots, **attrs)`), so scripted code raises what eager raises
    op.extra["check"] = check
    if PUBLIC.get(name) is fn:
        PUBLIC[name] = checked
    any_fn = getattr(op, "fn_any", fn)
    if refuses is None and any_fn is not fn:
        # the unchecked-first-operand form reflected operators use (`1 - t`)
        @functools.wraps(any_fn)
        def checked_any(*args, **kwargs):
            check(*args, **kwargs)
            return any_fn(*args, **kwargs)
        op.fn_any = checked_any
    if Tensor.__dict__.get(name) is fn:
        setattr(Tensor, name, checked)
    _guard_inplace(op, name, inplace_check or check)
    return checked


def _guard_inplace(op, name, check):
    ip = getattr(op, "inplace_fn", None)
    if ip is None:
        return

    @functools.wraps(ip)
    def checked_(self, *args, **kwargs):
        check(self, *args, **kwargs)
        return ip(self, *args, **kwargs)
    setattr(Tensor, name + "_", checked_)


def alias(new: str, name: str):
    """Expose op `name` also as `jitorch.<new>`, `Tensor.<new>` and `Tensor.<new>_`."""
    fn = PUBLIC[name]
    PUBLIC[new] = fn
    for suffix in ("", "_"):
        m = Tensor.__dict__.get(name + suffix)
        if m is not None:
            setattr(Tensor, new + suffix, m)
    return fn


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


def _is_bool(x) -> bool:
    return x is True or x is False or (is_tensor(x) and x._dtype is dt.bool)


def select(condition, input, other):
    """`where` for rules: a condition comparing Python numbers is a plain bool."""
    if not isinstance(condition, Tensor):
        return input if condition else other
    from .ternary import _where_op  # ternary imports this module's helpers
    return _where_op(condition, input, other)


def ufunc2(ufunc):
    """A binary NumPy ufunc as an impl (the registry reads the impl's parameter names)."""
    def impl(input, other):
        return ufunc(input, other)
    impl.__name__ = ufunc.__name__
    return impl


# --- add / sub / mul -------------------------------------------------------------------------
def _alpha_rule(d, alpha=1):
    """PyTorch's alpha checks; they read the result dtype, so they live in the dtype rule."""
    cat = dt.scalar_category(alpha)
    if cat == dt.BOOL and d is not dt.bool:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if d.category <= dt.INT and cat == dt.FLOAT:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    if d.category < dt.COMPLEX and cat == dt.COMPLEX:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex "
                           "number.")
    return d, d


def _add(input, other, *, alpha=1):
    # no np.errstate on the hottest ops (it costs ~1 us); the registry's warning filter
    # silences inf - inf / overflow warnings raised here
    return np.add(input, other * alpha) if alpha != 1 else np.add(input, other)


# `extra["into"]`: the impl writing its result into `out` (an in-place call's own array, of the
# operands' dtype and shape: autograd/inplace.py `_write_direct`), the same NumPy operations
def _add_into(out, input, other, *, alpha=1):
    np.add(input, other * alpha if alpha != 1 else other, out=out)


def _cj(x):
    """The conjugate of a complex operand (tensor or number), else the operand itself: the VJPs
    below then hold for complex values (PyTorch's convention, grad = dL/dRe + i dL/dIm) and,
    for real ones, are the same ops as before."""
    if isinstance(x, Tensor):
        return x.conj() if x._dtype.category == dt.COMPLEX else x
    return x.conjugate() if isinstance(x, complex) else x


# complex_grad: autograd lets complex gradients into these (their VJPs conjugate, see _cj)
add = defop("add", _add, tensors=_BIN, kind="elementwise", scalar_first=True, inplace=True,
            dtype=_alpha_rule, extra={"dtype_attrs": True, "complex_grad": True,
                                      "into": _add_into},
            vjp=lambda g, alpha: (g, g * _cj(alpha) if alpha != 1 else g),
            jvp=lambda t_input, t_other, alpha: t_input + t_other * alpha,
            scalar="{input} + {alpha} * {other}")


def _sub(input, other, *, alpha=1):
    return np.subtract(input, other * alpha) if alpha != 1 else np.subtract(input, other)


def _sub_into(out, input, other, *, alpha=1):
    np.subtract(input, other * alpha if alpha != 1 else other, out=out)


def _sub_check(input, other, *, alpha=1, out=None):
    # PyTorch rejects any bool operand (tensor or Python bool), whatever the promoted dtype
    b1, b2 = _is_bool(input), _is_bool(other)
    if b1 and b2:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. Use the `^` or `logical_xor()` operator instead.")
    if b1 or b2:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")


def _sub_vjp(g, alpha, needs_input_grad=(True, True)):
    if not needs_input_grad[1]:  # (as PyTorch: no negation for an other without grad)
        return g, None
    if alpha != 1:
        return g, -g * _cj(alpha)
    if plain_grad(g):  # (a first-order CPU backward: neg's impl on the array, no dispatch)
        return g, Tensor._make(np.negative(g._data), g._dtype)
    return g, -g


defop("sub", _sub, tensors=_BIN, kind="elementwise", scalar_first=True, inplace=True,
      dtype=_alpha_rule, extra={"dtype_attrs": True, "complex_grad": True,
                                "into": _sub_into},
      vjp=_sub_vjp,
      jvp=lambda t_input, t_other, alpha: t_input - t_other * alpha,
      scalar="{input} - {alpha} * {other}")
sub = guard("sub", _sub_check, refuses=(dt.bool,))
subtract = alias("subtract", "sub")


def _mul(input, other):
    return np.multiply(input, other)


def _mul_into(out, input, other):
    np.multiply(input, other, out=out)


def _mul_vjp(g, input, other, needs_input_grad=(True, True)):
    # (on the arrays in a first-order CPU backward: the declaration's ON_ARRAYS; `_cj` leaves a
    # real array as it is)
    return (g * _cj(other) if needs_input_grad[0] else None,
            g * _cj(input) if needs_input_grad[1] else None)


mul = defop("mul", _mul, tensors=_BIN, kind="elementwise", scalar_first=True, inplace=True,
            vjp=_mul_vjp,
            extra={"complex_grad": True, "into": _mul_into, **ON_ARRAYS},
            jvp=lambda t_input, t_other, input, other: t_input * other + input * t_other,
            scalar="{input} * {other}")
multiply = alias("multiply", "mul")


# --- division --------------------------------------------------------------------------------
def _div_rule(d, rounding_mode=None):
    if rounding_mode is None:
        f = d if d.category >= dt.FLOAT else dt.get_default_dtype()
        return f, f
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    if d.category in (dt.BOOL, dt.COMPLEX):
        not_implemented(f"div_{rounding_mode}_cpu", d)
    return d, d


def _floor_div(input, other):
    """Python-style floor division; NumPy's float algorithm is PyTorch's (fmod-based)."""
    if input.dtype.kind in "iu":
        check_int_divisor(other)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.floor_divide(input, other)


def _trunc_div(input, other):
    if input.dtype.kind in "iu":
        check_int_divisor(other)
        with np.errstate(over="ignore"):
            q = np.floor_divide(input, other)
            # floor -> trunc: step back towards zero where the exact quotient was negative
            fix = (np.remainder(input, other) != 0) & ((input < 0) != (other < 0))
            return q + fix.astype(q.dtype)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.trunc(np.true_divide(input, other))


def _div(input, other, *, rounding_mode=None):
    if rounding_mode == "floor":
        return _floor_div(input, other)
    if rounding_mode == "trunc":
        return _trunc_div(input, other)
    # no np.errstate (~1 us): the registry's warning filter silences x / 0 here, as for add
    return np.true_divide(input, other)


def _div_vjp(g, input, other, rounding_mode, needs_input_grad=(True, True)):
    # (written for tensors and arrays alike: its declaration's ON_ARRAYS)
    if rounding_mode is not None:  # piecewise constant: zero gradient, as in PyTorch
        z = np.zeros_like(g) if type(g) is np.ndarray else zeros_like(g)
        return z, z
    return (g / other if needs_input_grad[0] else None,
            -g * input / (other * other) if needs_input_grad[1] else None)


def _div_jvp(t_input, t_other, input, other, rounding_mode):
    if rounding_mode is not None:
        return zeros_like(t_input)
    return (t_input - input / other * t_other) / other


div = defop("div", _div, tensors=_BIN, kind="elementwise", scalar_first=True, inplace=True,
            dtype=_div_rule, extra={"dtype_attrs": True, **ON_ARRAYS}, vjp=_div_vjp,
            jvp=_div_jvp,
            # the template is true division: a compiler must treat rounding_mode itself
            scalar="{input} / {other}")
divide = alias("divide", "div")


def _true_divide(input, other):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(input, other)


true_divide = defop("true_divide", _true_divide, tensors=_BIN, kind="elementwise",
                    scalar_first=True, inplace=True, dtype="float",
                    vjp=lambda g, input, other: (g / other, -g * input / (other * other)),
                    jvp=lambda t_input, t_other, input, other:
                    (t_input - input / other * t_other) / other,
                    scalar="{input} / {other}")


def _no_derivative(name):
    def vjp(g):
        raise RuntimeError(f"derivative for aten::{name} is not implemented")

    def jvp(t_input):
        raise NotImplementedError(f"Trying to use forward AD with aten::{name} that does not "
                                  f"support it.")
    return vjp, jvp


# PyTorch's floor_divide output requires grad but has no derivative: backward raises
floor_divide = defop("floor_divide", _floor_div, tensors=_BIN, kind="elementwise",
                     scalar_first=True, inplace=True,
                     dtype=kernel_rule("div_floor_cpu", bool_ok=False, complex_ok=False),
                     vjp=_no_derivative("floor_divide")[0],
                     jvp=_no_derivative("floor_divide")[1],
                     scalar="{input} // {other}")


def _remainder(input, other):
    if input.dtype.kind in "iu":
        check_int_divisor(other)
        return np.remainder(input, other)
    with np.errstate(divide="ignore", invalid="ignore"):
        m = np.fmod(input, other)
        # PyTorch's float remainder: fmod shifted by `other` when the signs differ (keeps the
        # sign of zero results, unlike np.remainder)
        return np.where((m != 0) & ((other < 0) != (m < 0)), m + other, m)


remainder = defop("remainder", _remainder, tensors=_BIN, kind="elementwise", scalar_first=True,
                  inplace=True,
                  dtype=kernel_rule("remainder_cpu", bool_ok=False, complex_ok=False),
                  vjp=lambda g, input, other: (
                      g, -g * div(input, other, rounding_mode="floor") if is_tensor(other)
                      else None),
                  jvp=lambda t_input, t_other, input, other:
                  t_input - t_other * div(input, other, rounding_mode="floor"),
                  scalar="{input} % {other}")


def _fmod(input, other):
    if input.dtype.kind in "iu":
        check_int_divisor(other)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.fmod(input, other)


fmod = defop("fmod", _fmod, tensors=_BIN, kind="elementwise", inplace=True,
             dtype=kernel_rule("fmod_cpu", bool_ok=False, complex_ok=False),
             vjp=lambda g, input, other: (
                 g, -g * div(input, other, rounding_mode="trunc") if is_tensor(other)
                 else None),
             jvp=lambda t_input, t_other, input, other:
             t_input - t_other * div(input, other, rounding_mode="trunc"),
             scalar="np.fmod({input}, {other})")


# --- powers ----------------------------------------------------------------------------------
def _int_pow(input, exponent):
    """C-style integer powers: a negative exponent gives 0 except for bases 1 and -1."""
    neg = exponent < 0
    with np.errstate(over="ignore"):
        if not np.any(neg):
            return np.power(input, exponent)
        r = np.power(input, np.where(neg, 0, exponent).astype(exponent.dtype))
    odd = (exponent % 2) != 0
    r_neg = np.where(input == 1, 1, np.where(input == -1, np.where(odd, -1, 1), 0))
    return np.where(neg, r_neg, r).astype(r.dtype)


def _pow(input, exponent):
    if input.dtype.kind == "b":  # a bool tensor to a Python bool power: x ** True is x
        return input | ~exponent
    if input.dtype.kind in "iu":
        return _int_pow(input, exponent)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(input, exponent)


def _log_scalar(x) -> float:
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


def _pow_partials(input, exponent, result):
    """(d result / d input, d result / d exponent); None where the operand is a number."""
    d_in = d_exp = None
    if is_tensor(input):
        if is_tensor(exponent):
            d_in = select(exponent == 0, 0.0, exponent * input.pow(exponent - 1))
        elif exponent == 0:
            d_in = zeros_like(input)
        else:
            d_in = exponent * input.pow(exponent - 1)
    if is_tensor(exponent):
        if is_tensor(input):
            rlog = result * input.log()
            # 0 ** e for e >= 0 has zero slope in e (PyTorch's convention)
            d_exp = select(input == 0, select(exponent >= 0, 0.0, rlog), rlog)
        elif input == 0:
            d_exp = select(exponent >= 0, 0.0, result * -math.inf)
        else:
            d_exp = result * _log_scalar(input)
    return d_in, d_exp


def _pow_vjp(g, input, exponent, result):
    d_in, d_exp = _pow_partials(input, exponent, result)
    return (None if d_in is None else g * d_in), (None if d_exp is None else g * d_exp)


def _pow_jvp(t_input, t_exponent, input, exponent, result):
    d_in, d_exp = _pow_partials(input, exponent, result)
    out = 0.0
    if d_in is not None:
        out = t_input * d_in
    if d_exp is not None:
        out = out + t_exponent * d_exp
    return out


_NEG_INT_POW = "Integers to negative integer powers are not allowed."


def _pow_check(input, exponent, *, out=None):
    # PyTorch has a bool kernel only for a bool tensor to a Python bool power
    if _is_bool(input) and _is_bool(exponent) and not (is_tensor(input)
                                                       and not is_tensor(exponent)):
        not_implemented("pow", dt.bool)
    if (is_tensor(input) and input._dtype.category <= dt.INT
            and isinstance(exponent, (int, np.integer)) and not isinstance(exponent, bool)
            and exponent < 0):
        raise RuntimeError(_NEG_INT_POW)


# For the compiler (targets/cpu/lower_elementwise.py): `scalar_int` is the scalar form for a signed
# integer compute dtype, C-style like `_int_pow` (a negative exponent gives 0 except for bases
# 1 and -1); `scalar_check` is `_pow_check`'s value test for integer compute: (slot, condition,
# message), raised before the loop when that slot is a Python number.
defop("pow", _pow, tensors=("input", "exponent"),
      autocast={"cuda": "fp32"}, kind="elementwise", scalar_first=True,
      inplace=True, vjp=_pow_vjp, jvp=_pow_jvp, scalar="{input} ** {exponent}",
      extra={"scalar_int": "({input} ** {exponent} if {exponent} >= 0 else (1 if {input} == 1 "
                           "else ((1 - 2 * ({exponent} & 1)) if {input} == -1 else 0)))",
             "scalar_check": ("exponent", "{exponent} < 0", _NEG_INT_POW)})
pow = guard("pow", _pow_check)


def _float_power_rule(d):
    d = dt.complex128 if d.category == dt.COMPLEX else dt.float64
    return d, d


def _float_power(input, exponent):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.power(input, exponent)


def _float_power_inplace_check(self, exponent):
    cplx = self.is_complex() or (is_tensor(exponent) and exponent.is_complex()) \
        or isinstance(exponent, (complex, np.complexfloating))
    need = dt.complex128 if cplx else dt.float64
    if self._dtype is not need:
        raise RuntimeError(f"the base given to float_power_ has dtype {_pt_name(self._dtype)} "
                           f"but the operation's result requires dtype {_pt_name(need)}")


defop("float_power", _float_power, tensors=("input", "exponent"), kind="elementwise",
      scalar_first=True, inplace=True, dtype=_float_power_rule, vjp=_pow_vjp, jvp=_pow_jvp,
      scalar="{input} ** {exponent}")
float_power = guard("float_power", None, _float_power_inplace_check)


# --- binary math -----------------------------------------------------------------------------
def _atan2_vjp(g, input, other):
    denom = input * input + other * other
    at_origin = denom == 0  # PyTorch gives zero gradients there instead of 0/0
    return select(at_origin, 0.0, g * other / denom), select(at_origin, 0.0, -g * input / denom)


def _atan2(input, other):
    return np.arctan2(input, other)


atan2 = defop("atan2", _atan2, tensors=_BIN,
              autocast={"cuda": "promote"}, kind="elementwise", inplace=True,
              dtype=kernel_rule("atan2_cpu", complex_ok=False, base="float"), vjp=_atan2_vjp,
              jvp=lambda t_input, t_other, input, other:
              (t_input * other - t_other * input) / (input * input + other * other),
              scalar="math.atan2({input}, {other})")
arctan2 = alias("arctan2", "atan2")


def _hypot(input, other):
    with np.errstate(over="ignore"):
        return np.hypot(input, other)


hypot = defop("hypot", _hypot, tensors=_BIN, kind="elementwise", inplace=True,
              dtype=kernel_rule("hypot_cpu", bool_ok=False, int_ok=False, complex_ok=False),
              vjp=lambda g, input, other, result: (g * input / result, g * other / result),
              jvp=lambda t_input, t_other, input, other, result:
              (t_input * input + t_other * other) / result,
              scalar="math.hypot({input}, {other})")


def _copysign_slope(input, result):
    return select(input == 0, 0.0, result / input)


copysign = defop("copysign", ufunc2(np.copysign), tensors=_BIN, kind="elementwise",
                 inplace=True,
                 dtype=kernel_rule("copysign_cpu", complex_ok=False, base="float"),
                 vjp=lambda g, input, other, result: (
                     g * _copysign_slope(input, result),
                     zeros_like(other) if is_tensor(other) else None),
                 jvp=lambda t_input, input, result: t_input * _copysign_slope(input, result),
                 scalar="math.copysign({input}, {other})")


def _xlogy(input, other):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(input == 0, np.zeros((), input.dtype), input * np.log(other))
    return np.where(np.isnan(other), other, r)


def _xlogy_terms(g_input, g_other, input, other):
    """(g_input * d/dinput, g_other * d/dother); None where that operand is a number."""
    gi = go = None
    if is_tensor(input):
        gi = g_input * (other.log() if is_tensor(other) else _log_scalar(other))
        # PyTorch's mask: no slope where x == 0 and y <= 0
        gi = select(input == 0, select(other <= 0, 0.0, gi), gi)
    if is_tensor(other):
        go = g_other * input / other
    return gi, go


def _xlogy_jvp(t_input, t_other, input, other):
    gi, go = _xlogy_terms(t_input, t_other, input, other)
    return go if gi is None else gi if go is None else gi + go


xlogy = defop("xlogy", _xlogy, tensors=_BIN, kind="elementwise", scalar_first=True, inplace=True,
              dtype=kernel_rule("xlogy_cpu", complex_ok=False, base="float"),
              vjp=lambda g, input, other: _xlogy_terms(g, g, input, other), jvp=_xlogy_jvp,
              scalar="({other} if np.isnan({other}) else "
                     "(0.0 if {input} == 0 else {input} * np.log({other})))")


def _logaddexp(input, other):
    if input.dtype.kind != "c":
        return np.logaddexp(input, other)
    # complex: max + log1p(exp(min - max)), ordered by real part (PyTorch's formula)
    a, b = np.broadcast_arrays(input, other)
    swap = a.real < b.real
    hi, lo = np.where(swap, b, a), np.where(swap, a, b)
    with np.errstate(all="ignore"):
        r = hi + np.log1p(np.exp(lo - hi))
        both_inf = np.isinf(hi.real) & (hi.real == lo.real)
        return np.where(both_inf, np.log(np.exp(hi) + np.exp(lo)), r)


logaddexp = defop("logaddexp", _logaddexp, tensors=_BIN, kind="elementwise",
                  dtype=kernel_rule("logaddexp_cpu", bool_ok=False, int_ok=False),
                  vjp=lambda g, input, other: (g / (1 + (other - input).exp()),
                                               g / (1 + (input - other).exp())),
                  jvp=lambda t_input, t_other, input, other:
                  t_input / (1 + (other - input).exp()) + t_other / (1 + (input - other).exp()),
                  scalar="np.logaddexp({input}, {other})")

logaddexp2 = defop("logaddexp2", ufunc2(np.logaddexp2), tensors=_BIN, kind="elementwise",
                   dtype=kernel_rule("logaddexp2_cpu", bool_ok=False, int_ok=False,
                                     complex_ok=False),
                   vjp=lambda g, input, other: (g / (1 + pow(2.0, other - input)),
                                                g / (1 + pow(2.0, input - other))),
                   jvp=lambda t_input, t_other, input, other:
                   t_input / (1 + pow(2.0, other - input))
                   + t_other / (1 + pow(2.0, input - other)),
                   scalar="np.logaddexp2({input}, {other})")


def _ldexp(input, other):
    with np.errstate(over="ignore"):
        return input * np.exp2(other)


_LN2 = math.log(2.0)

ldexp = defop("ldexp", _ldexp, tensors=_BIN, kind="elementwise", inplace=True, dtype="float",
              vjp=lambda g, other, result: (g * pow(2.0, other),
                                            g * result * _LN2 if is_tensor(other) else None),
              jvp=lambda t_input, t_other, other, result:
              t_input * pow(2.0, other) + t_other * result * _LN2,
              scalar="{input} * 2.0 ** {other}")
