"""Elementwise activation functions of `jitorch.nn.functional`: declarations for the registry.

Owns relu (also `jitorch.relu`, `Tensor.relu`, `relu_`), relu6, leaky_relu, elu, selu, celu,
gelu (both approximations), silu, mish, hardtanh, hardsigmoid, hardswish, softplus, softsign,
tanhshrink, threshold, logsigmoid, softshrink and hardshrink. Each is one elementwise primitive
with a NumPy implementation, a Numba scalar template (so the compiler fuses it into loops), and a
derivative written with jitorch ops from which both the VJP and the JVP are built (so higher-order
gradients work). The `inplace=` flags and PyTorch's keyword forms live in `nn/functional.py`.

dtype rules follow PyTorch's CPU kernels: relu, relu6, hardtanh and threshold accept integer
tensors; softsign and tanhshrink turn integers into the default float dtype (they are composites
in PyTorch); the rest raise NotImplementedError naming PyTorch's kernel ('"elu_cpu" not
implemented for 'Long''). Formulas are the numerically stable ones PyTorch uses (expm1 in elu,
log1p(exp(-|x|)) in logsigmoid, the `threshold` cut-over in softplus).
"""
from __future__ import annotations

import inspect
import math

import numpy as np
from .._scipy_special import special as sps

from .. import _autocast
from .. import _dtype as dt
from .._tensor import Tensor
from . import infer
from .composite import body_helper, composite, expose
from . import batching
from . import _row_programs as _rp
from .registry import FAST_TYPES, RULES, _mode_state, _modes_on, _pt_name, defop
from .._profiling import slow as _slow
from ._reduce_common import axes_of, np_axes
from ._util import ON_ARRAYS, pass_where
from .ternary import where

__all__ = ["relu", "relu_", "softmax", "log_softmax"]  # the rest: through jitorch.nn.functional

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _rule(kernel, *, ints=False, base="promote", bool_error=None):
    """dtype rule: floats only (else PyTorch's "not implemented" error), or also integers."""
    base_rule = RULES[base]

    def rule(d):
        if d is dt.bool and bool_error is not None:
            raise bool_error[0](bool_error[1])
        if d is dt.bool or d.category == dt.COMPLEX or (d.category == dt.INT and not ints):
            raise NotImplementedError(f'"{kernel}" not implemented for \'{_pt_name(d)}\'')
        return base_rule(d)
    return rule


def _rules(deriv):
    """VJP `g * d` and JVP `t * d` from `deriv(<names>) -> d output / d input`, with the same
    parameter names (so autograd saves exactly what the derivative reads)."""
    names = ", ".join(inspect.signature(deriv).parameters)
    ns = {"_d": deriv}
    exec(f"def vjp(g, {names}):\n    return g * _d({names})\n"
         f"def jvp(t_input, {names}):\n    return t_input * _d({names})\n", ns)
    return ns["vjp"], ns["jvp"]


def _mask_rules(mask):
    """VJP/JVP of a piecewise-identity op: the gradient passes where `mask(...)` holds, else 0
    (a `where`, not `g * mask`: an infinite gradient must not become nan). The VJP computes on
    arrays too (its op's declaration says so: `_act`): `pass_where` there, the same bits."""
    names = ", ".join(inspect.signature(mask).parameters)
    ns = {"_m": mask, "_pass": _pass_where}
    exec(f"def vjp(g, {names}):\n    return _pass(_m({names}), g)\n"
         f"def jvp(t_input, {names}):\n    return _pass(_m({names}), t_input)\n", ns)
    return ns["vjp"], ns["jvp"]


def _pass_where(mask, g):
    """`g` where `mask` holds, else 0: the `where` op on tensors, `pass_where` on arrays."""
    return pass_where(mask, g) if type(g) is np.ndarray else where(mask, g, 0.0)


def _act(name, impl, deriv=None, mask=None, **kw):
    vjp, jvp = _mask_rules(mask) if mask is not None else _rules(deriv)
    if mask is not None:  # (the mask's comparisons and `&` hold for arrays as for tensors)
        kw["extra"] = {**kw.get("extra", {}), **ON_ARRAYS}
    kw.setdefault("method", False)
    kw.setdefault("function", False)  # F.<name> only (nn/functional.py), not jitorch.<name>
    return defop(name, impl, kind="elementwise", vjp=vjp, jvp=jvp, **kw)


# --- piecewise linear ------------------------------------------------------------------------
def _relu(input):
    # PyTorch's relu: 0 where input < 0, else input (-0.0 and nan kept as they are), in every
    # tier (the scalar template below is the same rule). np.maximum with the zero FIRST returns
    # its second operand on a tie, in NumPy's SIMD and scalar float32/float64 loops alike
    # (tests/test_tier_agreement.py), so -0.0 stays -0.0 in one call; a 0-d zero of the input's
    # own dtype is the cheapest operand NumPy takes. Other dtypes: integers have no signed zero;
    # float16 (whose loops do not keep that order) and device arrays take an explicit `where`.
    if type(input) is np.ndarray:
        z = _FLOAT_ZERO.get(input.dtype)
        if z is not None:  # the common call: a float32/float64 array (0-d: a NumPy scalar)
            return _maximum(z, input)
        z = np.zeros((), input.dtype)
        if input.dtype.kind != "f":
            return np.maximum(input, z)
        return np.where(input < z, z, input)
    if input.dtype.kind != "f":  # a device array: its own functions and scalars
        return np.maximum(input, 0)
    return np.where(input < 0, np.zeros((), input.dtype), input)


# NumPy float dtype -> its 0-d zero (read-only use), for the dtypes whose np.maximum keeps the
# operand order on ties
_FLOAT_ZERO = {np.dtype(np.float32): np.zeros((), np.float32),
               np.dtype(np.float64): np.zeros((), np.float64)}
_maximum = np.maximum


relu = _act("relu", _relu, mask=lambda result: result > 0, method=True, function=True,
            inplace=True,
            dtype=_rule("relu", ints=True,
                        bool_error=(RuntimeError, "Boolean inputs not supported for relu")),
            scalar="(0 if {input} < 0 else {input})")



def relu_(input):
    """`jitorch.relu_(x)`: x.relu_()."""
    return input.relu_()


_HARDTANH_BOOL = (RuntimeError, "Bool inputs not supported for hardtanh")


def _hardtanh(input, min_val=-1.0, max_val=1.0):
    lo = np.asarray(min_val).astype(input.dtype)
    hi = np.asarray(max_val).astype(input.dtype)
    return np.where(input < lo, lo, np.where(input > hi, hi, input))


_HARDTANH_SCALAR = ("({min_val} if {input} < {min_val} else "
                    "({max_val} if {input} > {max_val} else {input}))")
hardtanh = _act("hardtanh", _hardtanh,
                mask=lambda input, min_val, max_val: (input > min_val) & (input < max_val),
                dtype=_rule("hardtanh", ints=True, bool_error=_HARDTANH_BOOL),
                scalar=_HARDTANH_SCALAR)


def _relu6(input):
    return _hardtanh(input, 0, 6)


relu6 = _act("relu6", _relu6, mask=lambda input: (input > 0) & (input < 6),
             dtype=_rule("hardtanh", ints=True, bool_error=_HARDTANH_BOOL),
             scalar="(0 if {input} < 0 else (6 if {input} > 6 else {input}))")


def _leaky_relu(input, negative_slope=0.01):
    return np.where(input > 0, input, input * np.asarray(negative_slope, input.dtype))


leaky_relu = _act("leaky_relu", _leaky_relu,
                  deriv=lambda input, negative_slope: where(input > 0, 1.0, negative_slope),
                  dtype=_rule("leaky_relu_cpu"),
                  scalar="({input} if {input} > 0 else {input} * {negative_slope})")


def _threshold(input, threshold, value):
    v = np.asarray(value).astype(input.dtype)
    return np.where(input > threshold, input, v) if input.dtype.kind != "f" else \
        np.where((input <= threshold) & ~np.isnan(input), v, input)


threshold = _act("threshold", _threshold, mask=lambda input, threshold: input > threshold,
                 dtype=_rule("threshold_cpu", ints=True),
                 scalar="({value} if {input} <= {threshold} else {input})")


def _softshrink(input, lambd=0.5):
    if not lambd >= 0:
        d = dt.from_numpy_dtype(input.dtype)
        raise RuntimeError(f"lambda must be in range [0, {dt.finfo(d).max:g}] for input dtype "
                           f"{_pt_name(d)}, but found {lambd:g}")
    lam = np.asarray(lambd, input.dtype)
    return np.where(input > lam, input - lam, np.where(input < -lam, input + lam,
                                                       np.where(np.isnan(input), input, 0)))


softshrink = _act("softshrink", _softshrink,
                  mask=lambda input, lambd: (input > lambd) | (input < -lambd),
                  dtype=_rule("softshrink_check"),
                  scalar="({input} - {lambd} if {input} > {lambd} else ({input} + {lambd} "
                         "if {input} < -{lambd} else ({input} * 0 if {input} != {input} "
                         "else 0)))")


def _hardshrink(input, lambd=0.5):
    lam = np.asarray(lambd, input.dtype)
    return np.where((input >= -lam) & (input <= lam), 0, input).astype(input.dtype)


hardshrink = _act("hardshrink", _hardshrink,
                  mask=lambda input, lambd: (input > lambd) | (input < -lambd),
                  dtype=_rule("hardshrink_cpu"),
                  scalar="(0 if ({input} >= -{lambd} and {input} <= {lambd}) else {input})")


# --- exponential family -----------------------------------------------------------------------
def _elu(input, alpha=1.0):
    a = np.asarray(alpha, input.dtype)
    return np.where(input > 0, input, a * np.expm1(np.minimum(input, 0)))


elu = _act("elu", _elu, deriv=lambda input, alpha: where(input > 0, 1.0, input.exp() * alpha),
           dtype=_rule("elu_cpu"),
           scalar="({input} if {input} > 0 else {alpha} * np.expm1({input}))")


def _selu(input):
    s, a = np.asarray(_SELU_SCALE, input.dtype), np.asarray(_SELU_ALPHA, input.dtype)
    return s * np.where(input > 0, input, a * np.expm1(np.minimum(input, 0)))


selu = _act("selu", _selu,
            deriv=lambda input: where(input > 0, _SELU_SCALE,
                                      input.exp() * (_SELU_SCALE * _SELU_ALPHA)),
            dtype=_rule("elu_cpu"),
            scalar=f"{_SELU_SCALE!r} * ({{input}} if {{input}} > 0 else "
                   f"{_SELU_ALPHA!r} * np.expm1({{input}}))")


def _celu(input, alpha=1.0):
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    a = np.asarray(alpha, input.dtype)
    return np.where(input > 0, input, a * np.expm1(np.minimum(input, 0) / a))


celu = _act("celu", _celu, deriv=lambda input, alpha: where(input > 0, 1.0,
                                                             (input / alpha).exp()),
            dtype=_rule("elu_cpu"),
            scalar="({input} if {input} > 0 else {alpha} * np.expm1({input} / {alpha}))")


def _softplus(input, beta=1.0, threshold=20.0):
    b = np.asarray(beta, input.dtype)
    z = input * b
    return np.where(z > threshold, input, np.log1p(np.exp(z)) / b)


softplus = _act("softplus", _softplus,
                deriv=lambda input, beta, threshold: where(input * beta > threshold, 1.0,
                                                           (input * beta).sigmoid()),
                dtype=_rule("softplus_cpu"), autocast={"cuda": "fp32"},
                scalar="({input} if {input} * {beta} > {threshold} else "
                       "np.log1p(np.exp({input} * {beta})) / {beta})")


def _logsigmoid(input):
    return np.minimum(input, 0) - np.log1p(np.exp(-np.abs(input)))


logsigmoid = _act("logsigmoid", _logsigmoid, deriv=lambda input: (-input).sigmoid(),
                  dtype=_rule("log_sigmoid_cpu"),
                  scalar="(min({input}, 0) - np.log1p(np.exp(-abs({input}))))")


# --- smooth gates -----------------------------------------------------------------------------
def _gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise RuntimeError("approximate argument must be either none or tanh.")
    if approximate == "tanh":
        u = np.asarray(_SQRT_2_PI, input.dtype) * (input + input * input * input
                                                   * np.asarray(0.044715, input.dtype))
        return 0.5 * input * (1 + np.tanh(u))
    return (input * 0.5 * (1 + sps.erf(input * np.asarray(_SQRT1_2, input.dtype)))).astype(
        input.dtype)


def _gelu_deriv(input, approximate):
    if approximate == "tanh":
        x3 = input * input * input
        t = ((input + x3 * 0.044715) * _SQRT_2_PI).tanh()
        return 0.5 * (1 + t) + 0.5 * input * (1 - t * t) * _SQRT_2_PI * (1 + input * input
                                                                          * (3 * 0.044715))
    cdf = (input * _SQRT1_2).erf() * 0.5 + 0.5
    return cdf + input * (input * input * -0.5).exp() * _INV_SQRT_2PI


# the same function as two attribute-free ops: `F.gelu` dispatches to these, so traces hold
# ops the compiler fuses (the code generator has no scalar form for a string attribute yet);
# scripted `F.gelu(...)` calls bind to `gelu` itself
_GELU_ERF_SCALAR = "0.5 * {input} * (1.0 + math.erf({input} * " + repr(_SQRT1_2) + "))"
_GELU_TANH_SCALAR = ("0.5 * {input} * (1.0 + np.tanh(" + repr(_SQRT_2_PI)
                     + " * ({input} + 0.044715 * {input} * {input} * {input})))")
_gelu_erf = _act("_gelu_erf", lambda input: _gelu(input, "none"),
                 deriv=lambda input: _gelu_deriv(input, "none"),
                 dtype=_rule("GeluKernelImpl"), scalar=_GELU_ERF_SCALAR)
_gelu_tanh = _act("_gelu_tanh", lambda input: _gelu(input, "tanh"),
                  deriv=lambda input: _gelu_deriv(input, "tanh"),
                  dtype=_rule("GeluKernelImpl"), scalar=_GELU_TANH_SCALAR)


gelu = _act("gelu", _gelu, deriv=_gelu_deriv, dtype=_rule("GeluKernelImpl"),
            scalar="((" + _GELU_TANH_SCALAR + ") if {approximate} == 'tanh' else ("
                   + _GELU_ERF_SCALAR + "))")


def _silu(input):
    return input / (1 + np.exp(-input))


def _silu_deriv(input):
    s = input.sigmoid()
    return s * (1 + input * (1 - s))


silu = _act("silu", _silu, deriv=_silu_deriv, dtype=_rule("silu_cpu"),
            scalar="{input} / (1.0 + np.exp(-{input}))")


def _mish(input):
    return input * np.tanh(np.log1p(np.exp(input)))


def _mish_deriv(input):
    t = _softplus_t(input).tanh()
    return t + input * input.sigmoid() * (1 - t * t)


def _softplus_t(input):
    return softplus(input)


mish = _act("mish", _mish, deriv=_mish_deriv, dtype=_rule("mish_cpu"),
            scalar="{input} * np.tanh(np.log1p(np.exp({input})))")


def _relu6_of(x):
    """min(max(x, 0), 6) with nan passing through, as PyTorch's kernels clamp."""
    return np.where(x < 0, 0, np.where(x > 6, 6, x)).astype(x.dtype)


_RELU6_OF = "(0 if ({x}) < 0 else (6 if ({x}) > 6 else ({x})))"


def _hardsigmoid(input):
    return _relu6_of(input + 3) / np.asarray(6, input.dtype)


hardsigmoid = _act("hardsigmoid", _hardsigmoid,
                   deriv=lambda input: where((input > -3) & (input < 3), 1.0 / 6, 0.0),
                   dtype=_rule("hardsigmoid_cpu"),
                   scalar=_RELU6_OF.format(x="{input} + 3") + " / 6")


def _hardswish(input):
    return input * _relu6_of(input + 3) / np.asarray(6, input.dtype)


hardswish = _act("hardswish", _hardswish,
                 deriv=lambda input: where(input < -3, 0.0,
                                           where(input <= 3, input / 3 + 0.5, 1.0)),
                 dtype=_rule("hardswish_cpu"),
                 scalar="{input} * " + _RELU6_OF.format(x="{input} + 3") + " / 6")


def _softsign(input):
    return input / (1 + np.abs(input))


softsign = _act("softsign", _softsign, deriv=lambda input: 1 / ((input.abs() + 1) ** 2),
                dtype=_rule("abs_cpu", ints=True, base="float"),
                scalar="{input} / (1.0 + abs({input}))")


def _tanhshrink(input):
    return input - np.tanh(input)


_TANHSHRINK_BOOL = (RuntimeError, "Subtraction, the `-` operator, with a bool tensor is not "
                    "supported. If you are trying to invert a mask, use the `~` or "
                    "`logical_not()` operator instead.")
tanhshrink = _act("tanhshrink", _tanhshrink, deriv=lambda input: input.tanh() ** 2,
                  dtype=_rule("tanhshrink", ints=True, base="float",
                              bool_error=_TANHSHRINK_BOOL),
                  scalar="{input} - np.tanh({input})")


# --- softmax family (composites written once: _ops/composite) ----------------------------------
# x - max(x) then exp and a sum, as PyTorch's kernels compute them: stable for any finite input.
# The shift is `_max_shift` (below): no gradient, as PyTorch's softmax backward never
# differentiates the max, and defined on an empty dim (eager softmax of an empty dim is empty).
# The compiler's row fusion recognises exactly these ops (script/passes/fuse_rows.py).
def _check_dim(dim):
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"softmax(): argument 'dim' must be int, not {type(dim).__name__}")


@body_helper
def _check_softmax_input(input: Tensor, dim: int, kernel: str) -> None:
    """PyTorch's checks of a softmax's input, in its order and words, in the body (so compiled
    code makes them: both fold away once the program knows the dtype and rank)."""
    if not input.is_floating_point():
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{_pt_name(input.dtype)}'")
    nd = max(input.dim(), 1)
    if dim < -nd or dim >= nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], "
                         f"but got {dim})")


@composite(static=("dim", "dtype"))
def _softmax(dim, dtype):
    _check_dim(dim)

    def body(input):
        if dtype is not None:
            input = input.to(dtype)
        _check_softmax_input(input, dim, "softmax_lastdim_kernel_impl")
        e = (input - _max_shift(input, dim, True)).exp()
        return e / e.sum(dim, True)
    return body


@composite(static=("dim", "dtype"))
def _log_softmax(dim, dtype):
    _check_dim(dim)

    def body(input):
        if dtype is not None:
            input = input.to(dtype)
        _check_softmax_input(input, dim, "log_softmax_lastdim_kernel_impl")
        s = input - _max_shift(input, dim, True)
        return s - s.exp().sum(dim, True).log()
    return body


@composite(static=("dim", "dtype"))
def _softmin(dim, dtype):
    _check_dim(dim)

    def body(input):
        if dtype is not None:
            input = input.to(dtype)
        x = -input  # (PyTorch's error for negating a bool tensor comes first)
        _check_softmax_input(input, dim, "softmax_lastdim_kernel_impl")
        e = (x - _max_shift(x, dim, True)).exp()
        return e / e.sum(dim, True)
    return body


# --- eager softmax / log_softmax as one op each --------------------------------------------------
# Eager code runs the composites above as 5-6 recorded ops (~12 us on a 4x4 tensor, PyTorch ~1.5).
# The common eager call (a float32/float64 tensor of rank >= 1 with elements, an int dim in range,
# no dtype=, no dispatch mode such as a tracer or vmap) runs one op instead, with PyTorch's
# softmax backward formulas as its VJP/JVP. Scripted and traced code keep the composites (the
# compiler fuses them: passes/fuse_rows.py); every other call (checks, errors, dtype=, empty or
# 0-d inputs) runs the composite body, op by op (NumPy's arithmetic, as the IR interpreter's).
# On the CPU the op runs the program the code generator makes for the scripted call
# (_row_programs.py: one program per op, dim, dtype, rank and layout, built on its first eager
# call), so eager, scripted and traced softmax agree to the bit. A device array takes NumPy's
# functions.
def _softmax_fused_impl(input, dim):
    if type(input) is np.ndarray:
        return _rp.run("softmax", input, dim)
    return _rp.numpy_softmax(input, dim, False)


def _log_softmax_fused_impl(input, dim):
    if type(input) is np.ndarray:
        return _rp.run("log_softmax", input, dim)
    return _rp.numpy_softmax(input, dim, True)


def _softmax_fused_vjp(g, result, dim):
    gy = g * result
    return gy - result * gy.sum(dim, True)


def _softmax_fused_jvp(t_input, result, dim):
    return result * (t_input - (t_input * result).sum(dim, True))


def _log_softmax_fused_vjp(g, result, dim):
    return g - result.exp() * g.sum(dim, True)


def _log_softmax_fused_jvp(t_input, result, dim):
    return t_input - (result.exp() * t_input).sum(dim, True)


_EAGER_ONLY = "eager form of the softmax composites; scripted code inlines the composite"
_softmax_fused = defop("_softmax_fused", _softmax_fused_impl, vjp=_softmax_fused_vjp,
                       jvp=_softmax_fused_jvp, method=False, function=False,
                       interpreted=_EAGER_ONLY, batch=batching.dims("dim"))
_log_softmax_fused = defop("_log_softmax_fused", _log_softmax_fused_impl,
                           vjp=_log_softmax_fused_vjp, jvp=_log_softmax_fused_jvp, method=False,
                           function=False, interpreted=_EAGER_ONLY, batch=batching.dims("dim"))
_F32, _F64 = dt.float32, dt.float64
_IMPLS = {_softmax_fused: _softmax_fused_impl, _log_softmax_fused: _log_softmax_fused_impl}


def _run_softmax(form, input, dim, dtype, fused=None):
    """The one-op eager form `fused(input, dim)` when the call is the common one (above): with
    nothing to record or intercept (`_slow`, no requires_grad), the op's impl (its program);
    else its generated function, through the registry's fast path or `dispatch` as every op
    (profiler, devices, autograd, forward AD). Else the argument's type check (Python's
    business), then the body (the other checks)."""
    if fused is not None and dtype is None and type(dim) is int and (
            type(input) is Tensor or type(input) in FAST_TYPES):
        d = input._dtype
        if (d is _F32 or d is _F64) and (not _modes_on[0] or not _mode_state.stack):
            a = input._data
            n = a.ndim
            if -n <= dim < n and a.size != 0:
                if _slow[0] or input._requires_grad or type(a) is not np.ndarray:
                    return fused(input, dim)
                # nothing for the op's dispatch to do (no recording, profiler, dispatch mode,
                # device or forward-AD level): its program, without the op function's frame
                return Tensor._make(_IMPLS[fused](a, dim), d)
    if not isinstance(input, Tensor):
        raise TypeError(f"softmax(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return form.body(dim, dtype)(input)


@_autocast.policy({"cuda": "fp32"})
def softmax(input, dim, dtype=None):
    """exp(x) / sum(exp(x)) along `dim` (computed as exp(x - max) / sum(exp(x - max)))."""
    return _run_softmax(_softmax, input, dim, dtype, _softmax_fused)


@_autocast.policy({"cuda": "fp32"})
def log_softmax(input, dim, dtype=None):
    """x - log(sum(exp(x))) along `dim` (computed as s - log(sum(exp(s))), s = x - max)."""
    return _run_softmax(_log_softmax, input, dim, dtype, _log_softmax_fused)


def softmin(input, dim, dtype=None):
    """softmax(-x) along `dim`."""
    return _run_softmax(_softmin, input, dim, dtype)


def _softmax_method(self, dim, dtype=None):
    return softmax(self, dim, dtype=dtype)


def _log_softmax_method(self, dim, dtype=None):
    return log_softmax(self, dim, dtype=dtype)


Tensor.softmax = _softmax_method
Tensor.log_softmax = _log_softmax_method
expose(_softmax, softmax, _softmax_method)
expose(_log_softmax, log_softmax, _log_softmax_method)
expose(_softmin, softmin)


# the softmax family's max shift carries no gradient (softmax is shift-invariant): stopped with
# this identity, the compiled backward matches PyTorch's softmax backward, which never
# differentiates the max
_stop_gradient = defop("_stop_gradient", lambda input: input.copy(), kind="elementwise",
                       nondiff=True, method=False, function=False, scalar="{input}")


def _max_shift_impl(input, dim, keepdim=True):
    """amax over `dim`, except that an empty reduced dim gives 0 (there is nothing to shift)
    where amax raises: eager softmax of an empty dim returns an empty tensor."""
    ax = np_axes(axes_of(dim, input.ndim), input.ndim)
    if input.size == 0:
        return np.zeros(np.sum(input, axis=ax, keepdims=keepdim).shape, input.dtype)
    if type(input) is np.ndarray:  # np.max's own dispatch layer skipped
        return np.asarray(_max_reduce(input, axis=ax, keepdims=keepdim))
    return np.asarray(np.max(input, axis=ax, keepdims=keepdim))


_max_reduce = np.maximum.reduce


# the softmax family's max shift (its composites above, the losses, attention): no gradient
# (as `_stop_gradient(amax)`), defined on an empty dim; lowered as amax without its empty-dim
# error (targets/cpu/lower_reduce.py, lower_rows.py)
_max_shift = defop("_max_shift", _max_shift_impl, kind="reduction", nondiff=True, method=False,
                   function=False, infer=infer.Reduction())
