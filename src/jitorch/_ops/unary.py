"""Unary elementwise math ops: declarations for the registry.

Owns the arithmetic (neg, abs, sign, reciprocal, square, positive), exponential/logarithmic,
trigonometric and hyperbolic families, sigmoid/logit, the scipy-backed special functions (erf,
erfinv, lgamma, digamma, ...), rounding (floor, ceil, round, trunc, frac) and nan_to_num.

dtype rules follow PyTorch: "float" ops (exp, sin, ...) turn integer/bool inputs into the default
float dtype; "promote" ops (neg, sign, square, ...) keep the input dtype; abs of a complex tensor
is real. Unsupported dtypes raise PyTorch's NotImplementedError ('"abs_cpu" not implemented for
'Bool''). Aliases (arcsin, absolute, ...) are declared as ops of their own, so each has its own
Tensor method and in-place method.
"""
from __future__ import annotations

import math

import numpy as np
from .._scipy_special import special as sps, special_fn

from .. import _dtype as dt
from .._creation import zeros_like
from ._util import ON_ARRAYS
from .registry import RULES, _pt_name, defop
from .batching import ELEMENTWISE

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"
_NO_TEMPLATE = "elementwise without a Numba scalar template yet"

__all__ = [
    "neg", "negative", "abs", "absolute", "sign", "sgn", "reciprocal", "square", "positive",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
    "sin", "cos", "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan",
    "sinh", "cosh", "tanh", "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh",
    "sigmoid", "logit", "erf", "erfc", "erfinv", "lgamma", "digamma",
    "floor", "ceil", "round", "trunc", "fix", "frac", "nan_to_num",
]

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)


def _rule(base="float", kernel=None, *, no_bool=False, no_int=False, no_complex=False,
         complex_msg=None, bool_msg=None):
    """A dtype rule: `base` (a RULES name) after PyTorch's unsupported-dtype checks.

    `kernel` names the PyTorch kernel in the "not implemented for" message; `complex_msg`
    replaces that message for complex inputs where PyTorch words it differently; `bool_msg`
    refuses bool with PyTorch's RuntimeError of that text. Refusals by dtype live here, not in
    the impl: the compiler types programs with this rule and never runs the impl.
    """
    base_rule = RULES[base]

    def check(d):
        if bool_msg is not None and d is dt.bool:
            raise RuntimeError(bool_msg)
        if ((no_bool and d is dt.bool) or (no_int and d.category == dt.INT)
                or (no_complex and d.category == dt.COMPLEX)):
            if d.category == dt.COMPLEX and complex_msg:
                raise NotImplementedError(complex_msg)
            raise NotImplementedError(f'"{kernel}" not implemented for \'{_pt_name(d)}\'')
        return base_rule(d)
    return check


def _declare(names, impl, **kw):
    """Declare `impl` under each of `names` (an op and its aliases); returns the functions."""
    kw.setdefault("kind", "elementwise")
    fns = tuple(defop(n, impl, **kw) for n in names)
    return fns if len(fns) > 1 else fns[0]


def _zero_grad(g):
    """Gradient of a piecewise-constant op: zeros (not `g * 0`, which turns inf into nan)."""
    return zeros_like(g)


def _zero_tangent(t_input):
    return zeros_like(t_input)


def _silent(fn):
    """Adapt a NumPy function to an impl taking `input`. It never warns: PyTorch returns inf/nan
    silently, and the registry's warning filter silences NumPy's floating-point warnings raised
    from jitorch._ops modules (np.errstate here would cost ~1 us per call)."""
    def impl(input):
        return fn(input)
    return impl


# --- arithmetic --------------------------------------------------------------------------------
def _neg(input):
    return np.negative(input)


neg, negative = _declare(
    ("neg", "negative"), _neg, inplace=True,
    dtype=_rule("promote", bool_msg="Negation, the `-` operator, on a bool tensor is not "
                "supported. If you are trying to invert a mask, use the `~` or `logical_not()` "
                "operator instead."),
    vjp=lambda g: -g, jvp=lambda t_input: -t_input, scalar="-{input}",
    # (VJPs that hold for complex gradients: autograd/graph.py)
    extra={"complex_grad": True, **ON_ARRAYS})

abs, absolute = _declare(
    ("abs", "absolute"), lambda input: np.abs(input), inplace=True,
    dtype=_rule("real", "abs_cpu", no_bool=True),
    vjp=lambda g, input: g * input.sgn(), jvp=lambda t_input, input: t_input * input.sgn(),
    scalar="abs({input})", extra={"complex_grad": True, "complex_scalar": True})


def _abs_inplace_guard(fn):
    """abs_ would have to write a real result into a complex tensor: PyTorch refuses."""
    def abs_(self):
        if getattr(self, "_dtype", None) is not None and self._dtype.category == dt.COMPLEX:
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        return fn(self)
    abs_.__qualname__ = fn.__qualname__
    abs_.__doc__ = fn.__doc__
    return abs_


def _bind_abs_guards():
    from .._tensor import Tensor
    for name in ("abs_", "absolute_"):
        setattr(Tensor, name, _abs_inplace_guard(getattr(Tensor, name)))


_bind_abs_guards()


def _sign(input):
    if input.dtype == np.bool_:
        return input.copy()
    # (x > 0) - (x < 0), as PyTorch computes it: sign(nan) and sign(-0.0) are 0
    return (input > 0).astype(input.dtype) - (input < 0).astype(input.dtype)


_SIGN_SCALAR = "(1 if {input} > 0 else (-1 if {input} < 0 else 0))"
sign = defop("sign", _sign, kind="elementwise", inplace=True,
             dtype=_rule("promote", no_complex=True, complex_msg=(
                 "Unlike NumPy, torch.sign is not intended to support complex numbers. Please "
                 "use torch.sgn instead.")),
             vjp=_zero_grad, jvp=_zero_tangent, scalar=_SIGN_SCALAR)


def _sgn(input):
    if input.dtype.kind != "c":
        return _sign(input)
    with np.errstate(all="ignore"):
        mag = np.abs(input)
        return np.where(mag == 0, 0, input / np.where(mag == 0, 1, mag)).astype(input.dtype)


# sign's template, for real operands only: sgn(nan) is 0 for reals but nan for complex numbers
# (complex_scalar False: a complex sgn stays interpreted). Compiled, abs's gradient (g * sgn)
# is one fused loop: the L1-type losses' backward compiles
sgn = defop("sgn", _sgn, kind="elementwise", inplace=True, vjp=_zero_grad, jvp=_zero_tangent,
            scalar=_SIGN_SCALAR, extra={"complex_scalar": False})

reciprocal = defop("reciprocal", _silent(np.reciprocal),
                   autocast={"cuda": "fp32"}, kind="elementwise", dtype="float",
                   inplace=True, vjp=lambda g, result: -g * result * result, extra=ON_ARRAYS,
                   jvp=lambda t_input, result: -t_input * result * result,
                   scalar="1.0 / {input}")


def _square_rule(d):
    if d is dt.bool:
        return dt.int64, dt.int64  # square is pow(x, 2): bool ** int promotes to int64
    return d, d


square = defop("square", _silent(np.square), kind="elementwise", dtype=_square_rule,
               inplace=True, vjp=lambda g, input: g * input * 2, extra=ON_ARRAYS,
               jvp=lambda t_input, input: t_input * input * 2, scalar="{input} * {input}")


def _positive(input):
    if input.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input  # PyTorch returns self; here: a view sharing storage and version counter


positive = defop("positive", _positive, kind="other", view=True, vjp=lambda g: g,
                 jvp=lambda t_input: t_input, interpreted=_NOT_YET,
                 batch=ELEMENTWISE)


# --- exponentials and logarithms ---------------------------------------------------------------
exp = defop("exp", _silent(np.exp),
            autocast={"cuda": "fp32"}, kind="elementwise", dtype="float", inplace=True,
            vjp=lambda g, result: g * result, extra=ON_ARRAYS,
            jvp=lambda t_input, result: t_input * result,
            scalar="np.exp({input})")
exp2 = defop("exp2", _silent(np.exp2), kind="elementwise", dtype="float", inplace=True,
             vjp=lambda g, result: g * result * _LN2, extra=ON_ARRAYS,
             jvp=lambda t_input, result: t_input * result * _LN2, scalar="np.exp2({input})")
expm1 = defop("expm1", _silent(np.expm1),
              autocast={"cuda": "fp32"}, kind="elementwise", dtype="float", inplace=True,
              vjp=lambda g, result: g * (result + 1), extra=ON_ARRAYS,
              jvp=lambda t_input, result: t_input * (result + 1), scalar="np.expm1({input})")
log = defop("log", _silent(np.log),
            autocast={"cuda": "fp32"}, kind="elementwise", dtype="float", inplace=True,
            vjp=lambda g, input: g / input, extra=ON_ARRAYS,
            jvp=lambda t_input, input: t_input / input,
            scalar="np.log({input})")
log2 = defop("log2", _silent(np.log2),
             autocast={"cuda": "fp32"}, kind="elementwise", dtype="float", inplace=True,
             vjp=lambda g, input: g / (input * _LN2), extra=ON_ARRAYS,
             jvp=lambda t_input, input: t_input / (input * _LN2), scalar="np.log2({input})")
log10 = defop("log10", _silent(np.log10),
              autocast={"cuda": "fp32"}, kind="elementwise", dtype="float", inplace=True,
              vjp=lambda g, input: g / (input * _LN10), extra=ON_ARRAYS,
              jvp=lambda t_input, input: t_input / (input * _LN10),
              scalar="np.log10({input})")
log1p = defop("log1p", _silent(np.log1p),
              autocast={"cuda": "fp32"}, kind="elementwise", dtype="float", inplace=True,
              vjp=lambda g, input: g / (input + 1), extra=ON_ARRAYS,
              jvp=lambda t_input, input: t_input / (input + 1), scalar="np.log1p({input})")
sqrt = defop("sqrt", _silent(np.sqrt), kind="elementwise", dtype="float", inplace=True,
             vjp=lambda g, result: g / (result * 2), extra=ON_ARRAYS,
             jvp=lambda t_input, result: t_input / (result * 2), scalar="np.sqrt({input})")
rsqrt = defop("rsqrt", _silent(lambda input: 1 / np.sqrt(input)),
              autocast={"cuda": "fp32"}, kind="elementwise",
              dtype="float", inplace=True,
              vjp=lambda g, result: g * result * result * result * -0.5, extra=ON_ARRAYS,
              jvp=lambda t_input, result: t_input * result * result * result * -0.5,
              scalar="1.0 / np.sqrt({input})")


# --- trigonometric -----------------------------------------------------------------------------
sin = defop("sin", _silent(np.sin), kind="elementwise", dtype="float", inplace=True,
            vjp=lambda g, input: g * input.cos(), jvp=lambda t_input, input: t_input * input.cos(),
            scalar="np.sin({input})")
cos = defop("cos", _silent(np.cos), kind="elementwise", dtype="float", inplace=True,
            vjp=lambda g, input: -g * input.sin(),
            jvp=lambda t_input, input: -t_input * input.sin(), scalar="np.cos({input})")
tan = defop("tan", _silent(np.tan),
            autocast={"cuda": "fp32"}, kind="elementwise", dtype="float", inplace=True,
            vjp=lambda g, result: g * (result * result + 1), extra=ON_ARRAYS,
            jvp=lambda t_input, result: t_input * (result * result + 1),
            scalar="np.tan({input})")
asin, arcsin = _declare(("asin", "arcsin"), _silent(np.arcsin), dtype="float", inplace=True,
                        autocast={"cuda": "fp32"},
                        vjp=lambda g, input: g / (1 - input * input).sqrt(),
                        jvp=lambda t_input, input: t_input / (1 - input * input).sqrt(),
                        scalar="np.arcsin({input})")
acos, arccos = _declare(("acos", "arccos"), _silent(np.arccos), dtype="float", inplace=True,
                        autocast={"cuda": "fp32"},
                        vjp=lambda g, input: -g / (1 - input * input).sqrt(),
                        jvp=lambda t_input, input: -t_input / (1 - input * input).sqrt(),
                        scalar="np.arccos({input})")
atan, arctan = _declare(("atan", "arctan"), _silent(np.arctan), dtype="float", inplace=True,
                        vjp=lambda g, input: g / (input * input + 1), extra=ON_ARRAYS,
                        jvp=lambda t_input, input: t_input / (input * input + 1),
                        scalar="np.arctan({input})")


# --- hyperbolic --------------------------------------------------------------------------------
sinh = defop("sinh", _silent(np.sinh),
             autocast={"cuda": "fp32"}, kind="elementwise", dtype="float", inplace=True,
             vjp=lambda g, input: g * input.cosh(),
             jvp=lambda t_input, input: t_input * input.cosh(), scalar="np.sinh({input})")
cosh = defop("cosh", _silent(np.cosh),
             autocast={"cuda": "fp32"}, kind="elementwise", dtype="float", inplace=True,
             vjp=lambda g, input: g * input.sinh(),
             jvp=lambda t_input, input: t_input * input.sinh(), scalar="np.cosh({input})")
tanh = defop("tanh", _silent(np.tanh), kind="elementwise", dtype="float", inplace=True,
             vjp=lambda g, result: g * (1 - result * result), extra=ON_ARRAYS,
             jvp=lambda t_input, result: t_input * (1 - result * result),
             scalar="np.tanh({input})")
asinh, arcsinh = _declare(("asinh", "arcsinh"), _silent(np.arcsinh), dtype="float", inplace=True,
                          vjp=lambda g, input: g / (input * input + 1).sqrt(),
                          jvp=lambda t_input, input: t_input / (input * input + 1).sqrt(),
                          scalar="np.arcsinh({input})")
acosh, arccosh = _declare(("acosh", "arccosh"), _silent(np.arccosh), dtype="float", inplace=True,
                          vjp=lambda g, input: g / (input * input - 1).sqrt(),
                          jvp=lambda t_input, input: t_input / (input * input - 1).sqrt(),
                          scalar="np.arccosh({input})")
atanh, arctanh = _declare(("atanh", "arctanh"), _silent(np.arctanh), dtype="float", inplace=True,
                          vjp=lambda g, input: g / (1 - input * input), extra=ON_ARRAYS,
                          jvp=lambda t_input, input: t_input / (1 - input * input),
                          scalar="np.arctanh({input})")


# --- sigmoid and logit -------------------------------------------------------------------------
# 1 / (1 + exp(-x)) in the compute dtype, as PyTorch's CPU kernel does (float32 underflows to 0
# below about -88 rather than going subnormal)
sigmoid = defop("sigmoid", _silent(lambda input: 1 / (1 + np.exp(-input))), kind="elementwise",
                dtype="float", inplace=True, vjp=lambda g, result: g * result * (1 - result),
                extra=ON_ARRAYS,
                jvp=lambda t_input, result: t_input * result * (1 - result),
                scalar="1.0 / (1.0 + np.exp(-{input}))")


def _logit(input, eps=None):
    with np.errstate(all="ignore"):
        if eps is not None and eps >= 0:  # PyTorch: a negative eps means no clamping
            input = np.clip(input, np.asarray(eps, input.dtype),
                            np.asarray(1 - eps, input.dtype))
        return np.log(input / (1 - input))


def _logit_grad(input, eps=None):
    """d logit / d input, as PyTorch's logit_backward computes it."""
    with np.errstate(all="ignore"):
        d = 1 / (input * (1 - input))
        if eps is None or eps < 0:
            # nan outside [0, 1]; +inf at 0 and 1 whatever the sign of zero
            return np.where((input < 0) | (input > 1), np.nan,
                            np.where((input == 0) | (input == 1), np.inf, d))
        return np.where((input < eps) | (input > 1 - eps), 0, d)  # 0 where clamped


# internal: differentiable so that logit has higher-order gradients;
# d/dx 1 / (x (1 - x)) = (2x - 1) / (x (1 - x))^2
_logit_grad_op = defop("_logit_grad", _logit_grad, kind="elementwise", dtype="float",
                       method=False,
                       vjp=lambda g, input, result: g * (input * 2 - 1) * result * result,
                       jvp=lambda t_input, input, result: t_input * (input * 2 - 1) * result
                       * result, interpreted=_NO_TEMPLATE)


logit = defop("logit", _logit, kind="elementwise", dtype=_rule("float", "logit_cpu",
                                                                 no_complex=True),
              inplace=True, vjp=lambda g, input, eps: g * _logit_grad_op(input, eps),
              jvp=lambda t_input, input, eps: t_input * _logit_grad_op(input, eps),
              interpreted=_NO_TEMPLATE)


# --- special functions (scipy.special) ---------------------------------------------------------
_2_SQRT_PI = 2 / math.sqrt(math.pi)


def _no_complex_float(kernel):
    return _rule("float", kernel, no_complex=True)


erf = defop("erf", _silent(special_fn("erf")), kind="elementwise", dtype=_no_complex_float("erf_vml_cpu"),
            inplace=True, vjp=lambda g, input: g * (-input * input).exp() * _2_SQRT_PI,
            jvp=lambda t_input, input: t_input * (-input * input).exp() * _2_SQRT_PI,
            scalar="math.erf({input})")
erfc = defop("erfc", _silent(special_fn("erfc")), kind="elementwise",
             dtype=_no_complex_float("erfc_vml_cpu"), inplace=True,
             vjp=lambda g, input: g * (-input * input).exp() * -_2_SQRT_PI,
             jvp=lambda t_input, input: t_input * (-input * input).exp() * -_2_SQRT_PI,
             scalar="math.erfc({input})")
# d erfinv(x) / dx = sqrt(pi) / 2 * exp(erfinv(x) ** 2); no Numba scalar for erfinv
erfinv = defop("erfinv", _silent(special_fn("erfinv")), autocast={"cuda": "fp32"}, kind="elementwise",
               dtype=_no_complex_float("erfinv_vml_cpu"), inplace=True,
               vjp=lambda g, result: g * (result * result).exp() / _2_SQRT_PI,
               jvp=lambda t_input, result: t_input * (result * result).exp() / _2_SQRT_PI,
               interpreted=_NO_TEMPLATE)


def _polygamma_n(input, n):
    with np.errstate(all="ignore"):
        return sps.polygamma(n, input)


# internal: the derivatives of digamma (polygamma(n, x)), each differentiable in turn; the public
# polygamma belongs to the special-functions family
_polygamma_op = defop("_polygamma_n", _polygamma_n, kind="elementwise",
                      dtype=_no_complex_float("polygamma"), method=False,
                      vjp=lambda g, input, n: g * _polygamma_op(input, n + 1),
                      jvp=lambda t_input, input, n: t_input * _polygamma_op(input, n + 1),
                      interpreted=_NO_TEMPLATE)


def _lgamma(input):
    with np.errstate(all="ignore"):
        r = sps.gammaln(input)
    return np.where(input == -np.inf, np.inf, r)  # scipy gives -inf; PyTorch: |Gamma| -> inf


lgamma = defop("lgamma", _lgamma, kind="elementwise",
               dtype=_no_complex_float("lgamma_vml_cpu"), inplace=True,
               vjp=lambda g, input: g * input.digamma(),
               jvp=lambda t_input, input: t_input * input.digamma(),
               scalar="math.lgamma({input})")
digamma = defop("digamma", _silent(special_fn("psi")), kind="elementwise",
                dtype=_no_complex_float("digamma"), inplace=True,
                vjp=lambda g, input: g * _polygamma_op(input, 1),
                jvp=lambda t_input, input: t_input * _polygamma_op(input, 1),
                interpreted=_NO_TEMPLATE)


# --- rounding ----------------------------------------------------------------------------------
def _rounding(fn):
    """Rounding keeps integer tensors as they are (a copy, never an alias of the input)."""
    def impl(input):
        return input.copy() if input.dtype.kind in "iub" else fn(input)
    return impl


def _round_rule_for(name):
    return _rule("promote", f"{name}_vml_cpu", no_bool=True, no_complex=True,
                 complex_msg=f"{name} is not supported for complex inputs")


floor = defop("floor", _rounding(np.floor), kind="elementwise", dtype=_round_rule_for("floor"),
              inplace=True, vjp=_zero_grad, jvp=_zero_tangent, scalar="np.floor({input})")
ceil = defop("ceil", _rounding(np.ceil), kind="elementwise", dtype=_round_rule_for("ceil"),
             inplace=True, vjp=_zero_grad, jvp=_zero_tangent, scalar="np.ceil({input})")
trunc, fix = _declare(("trunc", "fix"), _rounding(np.trunc), dtype=_round_rule_for("trunc"),
                      inplace=True, vjp=_zero_grad, jvp=_zero_tangent, scalar="np.trunc({input})")


def _round_rule(d, decimals=0):
    # PyTorch's round(x) and round(x, decimals=n) are different kernels with their own names;
    # integer tensors are returned unchanged by the first only
    kernel = "round_vml_cpu" if decimals == 0 else "round_cpu"
    if d is dt.bool or d.category == dt.COMPLEX or (d.category == dt.INT and decimals != 0):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_pt_name(d)}\'')
    return d, d


def _round(input, *, decimals=0):
    if input.dtype.kind in "iu":
        return input.copy()
    with np.errstate(all="ignore"):
        if decimals == 0:
            return np.rint(input)  # half to even, like std::nearbyint
        # PyTorch's kernel: 10 ** |decimals| in double, cast to the compute dtype (may be inf)
        ten = np.power(np.float64(10.0), -decimals if decimals < 0 else decimals)
        ten = np.asarray(ten).astype(input.dtype)
        if decimals < 0:
            return np.rint(input / ten) * ten
        return np.rint(input * ten) / ten


round = defop("round", _round, kind="elementwise", dtype=_round_rule,
              extra={"dtype_attrs": True}, inplace=True, vjp=_zero_grad, jvp=_zero_tangent,
              scalar="(np.rint({input} * 10.0 ** {decimals}) / 10.0 ** {decimals} "
                     "if {decimals} >= 0 else "
                     "np.rint({input} / 10.0 ** -{decimals}) * 10.0 ** -{decimals})")

frac = defop("frac", _silent(lambda input: input - np.trunc(input)), kind="elementwise",
             dtype=_rule("promote", "frac_cpu", no_bool=True, no_int=True, no_complex=True),
             inplace=True, vjp=lambda g: g, jvp=lambda t_input: t_input,
             scalar="{input} - np.trunc({input})")


# --- nan_to_num --------------------------------------------------------------------------------
def _finite_mask(input):
    return np.isfinite(input).astype(input.dtype)


_finite_mask_op = defop("_finite_mask", _finite_mask, kind="elementwise", nondiff=True,
                        method=False, scalar="(1.0 if math.isfinite({input}) else 0.0)")


def _nan_to_num_real(x, d, nan, posinf, neginf):
    """Replace nan/inf in a real array of jitorch dtype d; replacements are cast to d."""
    big = dt.finfo(d).max
    posinf = big if posinf is None else posinf
    neginf = -big if neginf is None else neginf
    with np.errstate(all="ignore"):
        c = x.astype(d.compute)
        vals = [np.asarray(v, np.float64).astype(d.np).astype(d.compute)
                for v in (nan, posinf, neginf)]
        r = np.where(np.isnan(c), vals[0], np.where(c == np.inf, vals[1],
                                                    np.where(c == -np.inf, vals[2], c)))
        return r.astype(d.np)


def _nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    if not isinstance(input, np.ndarray):
        raise TypeError(f"nan_to_num(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.dtype.kind in "biu":
        return input.copy()
    nan, posinf, neginf = (None if v is None else float(v) for v in (nan, posinf, neginf))
    nan = 0.0 if nan is None else nan
    d = dt.from_numpy_dtype(input.dtype)
    if d.category == dt.COMPLEX:  # real and imaginary parts are cleaned separately
        r = np.empty_like(input)
        r.real = _nan_to_num_real(input.real, d.to_real(), nan, posinf, neginf)
        r.imag = _nan_to_num_real(input.imag, d.to_real(), nan, posinf, neginf)
        return r
    return _nan_to_num_real(input, d, nan, posinf, neginf)


# kind "other": the default replacements depend on the storage dtype, not the compute dtype
nan_to_num = defop("nan_to_num", _nan_to_num, kind="other", inplace=True,
                   vjp=lambda g, input: g * _finite_mask_op(input),
                   jvp=lambda t_input, input: t_input * _finite_mask_op(input),
                   interpreted=_NOT_YET,
                   batch=ELEMENTWISE)
