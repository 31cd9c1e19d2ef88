"""Elementwise selection and three-operand ops: minimum, maximum, fmin, fmax, clamp/clip,
clamp_min, clamp_max, where, lerp, addcmul, addcdiv.

Optional operands (clamp's min/max) are tensor slots that may be None; the dtype is PyTorch's
promotion over all present operands. Argument checks PyTorch makes before promotion (where's
condition dtype, lerp's dtype equality, addcdiv's integer operands) run through `guard`.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from .binary import alias, guard, is_tensor, not_implemented, select, ufunc2
from .registry import PUBLIC, _pt_name, defop

__all__ = ["minimum", "maximum", "fmin", "fmax", "clamp", "clip", "clamp_min", "clamp_max",
           "where", "lerp", "addcmul", "addcdiv"]


# --- minimum / maximum -----------------------------------------------------------------------
def real_only_rule(message):
    """A dtype rule that keeps the promoted dtype (result and compute) and refuses complex
    inputs with PyTorch's `message` (a RuntimeError)."""
    def rule(d):
        if d.category == dt.COMPLEX:
            raise RuntimeError(message)
        return d, d
    return rule


def _minmax_rule(name):
    return real_only_rule(f"{name} not implemented for complex tensors.")


def _max_vjp(g, input, other):
    # ties share the gradient; NaN (neither side smaller) sends it to both, like PyTorch
    half = g / 2
    return (select(input == other, half, select(input < other, 0.0, g)),
            select(input == other, half, select(input > other, 0.0, g)))


def _min_vjp(g, input, other):
    half = g / 2
    return (select(input == other, half, select(input > other, 0.0, g)),
            select(input == other, half, select(input < other, 0.0, g)))


def _first(vjp):
    """JVP from a two-slot VJP that is linear in g: t_input * d/dinput + t_other * d/dother."""
    def jvp(t_input, t_other, input, other):
        gi = vjp(t_input, input, other)[0]
        return gi + vjp(t_other, input, other)[1] if is_tensor(t_other) else gi
    return jvp


maximum = defop("maximum", ufunc2(np.maximum), tensors=("input", "other"), kind="elementwise",
                dtype=_minmax_rule("maximum"), vjp=_max_vjp, jvp=_first(_max_vjp),
                scalar="np.maximum({input}, {other})")
minimum = defop("minimum", ufunc2(np.minimum), tensors=("input", "other"), kind="elementwise",
                dtype=_minmax_rule("minimum"), vjp=_min_vjp, jvp=_first(_min_vjp),
                scalar="np.minimum({input}, {other})")


def _fmax_vjp(g, input, other):
    # the result is input where input >= other or other is NaN (`other != other`)
    return (select(input >= other, g, select(other != other, g, 0.0)),
            select(input >= other, 0.0, select(other != other, 0.0, g)))


def _fmin_vjp(g, input, other):
    return (select(input <= other, g, select(other != other, g, 0.0)),
            select(input <= other, 0.0, select(other != other, 0.0, g)))


fmax = defop("fmax", ufunc2(np.fmax), tensors=("input", "other"), kind="elementwise",
             dtype=_minmax_rule("fmax"),
             vjp=_fmax_vjp, jvp=_first(_fmax_vjp), scalar="np.fmax({input}, {other})")
fmin = defop("fmin", ufunc2(np.fmin), tensors=("input", "other"), kind="elementwise",
             dtype=_minmax_rule("fmin"),
             vjp=_fmin_vjp, jvp=_first(_fmin_vjp), scalar="np.fmin({input}, {other})")


# --- clamp -----------------------------------------------------------------------------------
def _clamp_rule(kernel):
    def rule(d):
        if d.category == dt.COMPLEX:
            raise NotImplementedError("clamp is not supported for complex types")
        if d is dt.bool:
            not_implemented(kernel, d)
        return d, d
    return rule


def _clamp(input, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    # maximum/minimum (not np.clip) propagate NaN bounds and give `max` when min > max
    r = input if min is None else np.maximum(input, min)
    return r if max is None else np.minimum(r, max)


def _clamp_grads(g, input, min, max):
    """PyTorch's clamp backward: the gradient goes to whichever operand the result is."""
    gi = g
    if min is not None:
        gi = _where_op(input >= min, gi, 0.0)
    if max is not None:
        gi = _where_op(input <= max, gi, 0.0)
    g_min = g_max = None
    if is_tensor(min):
        g_min = _where_op(input < min, g, 0.0)
        if max is not None:
            g_min = _where_op(min < max, g_min, 0.0)
    if is_tensor(max):
        g_max = _where_op(input > max, g, 0.0)
        if min is not None:
            g_max = _where_op(max < min, g, g_max)
    return gi, g_min, g_max


def _clamp_jvp(t_input, t_min, t_max, input, min, max):
    out = _clamp_grads(t_input, input, min, max)[0]
    if is_tensor(min):
        out = out + _clamp_grads(t_min, input, min, max)[1]
    if is_tensor(max):
        out = out + _clamp_grads(t_max, input, min, max)[2]
    return out


clamp = defop("clamp", _clamp, tensors=("input", "min", "max"), kind="elementwise",
              inplace=True, dtype=_clamp_rule("clamp_scalar_cpu"), vjp=_clamp_grads,
              jvp=_clamp_jvp,
              # an absent bound is None: a compiler drops that side of the expression
              scalar="np.minimum(np.maximum({input}, {min}), {max})")
clip = alias("clip", "clamp")


def _clamp_min(input, min):
    return np.maximum(input, min)


def _clamp_max(input, max):
    return np.minimum(input, max)


clamp_min = defop("clamp_min", _clamp_min, tensors=("input", "min"), kind="elementwise",
                  inplace=True, dtype=_clamp_rule("clamp_min_scalar_cpu"),
                  vjp=lambda g, input, min: _clamp_grads(g, input, min, None)[:2],
                  jvp=lambda t_input, t_min, input, min: _clamp_jvp(t_input, t_min, None, input,
                                                                    min, None),
                  scalar="np.maximum({input}, {min})")
clamp_max = defop("clamp_max", _clamp_max, tensors=("input", "max"), kind="elementwise",
                  inplace=True, dtype=_clamp_rule("clamp_max_scalar_cpu"),
                  vjp=lambda g, input, max: _clamp_grads(g, input, None, max)[::2],
                  jvp=lambda t_input, t_max, input, max: _clamp_jvp(t_input, None, t_max, input,
                                                                    None, max),
                  scalar="np.minimum({input}, {max})")


# --- where -----------------------------------------------------------------------------------
def _where(condition, input, other):
    # condition arrives cast to the compute dtype: nonzero is True
    return np.where(condition, input, other)


_where_op = defop("where", _where, tensors=("condition", "input", "other"), kind="elementwise",
                  function=False, method=False,
                  vjp=lambda g, condition: (None, _where_op(condition, g, 0.0),
                                            _where_op(condition, 0.0, g)),
                  jvp=lambda t_input, t_other, condition: _where_op(condition, t_input, t_other),
                  scalar="{input} if {condition} else {other}")


def where(condition, input=None, other=None, *, out=None):
    """`where(condition, input, other)`: elementwise choice; `where(condition)` is
    `nonzero(condition, as_tuple=True)`."""
    if not isinstance(condition, Tensor):
        raise TypeError(f"where(): argument 'condition' must be Tensor, not "
                        f"{type(condition).__name__}")
    if input is None and other is None:
        return sys.modules["jitorch"].nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() needs both 'input' and 'other' (or neither)")
    if condition._dtype is dt.uint8:
        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and "
                      "will be removed in a future version of PyTorch. Use a boolean condition "
                      "instead.", UserWarning, stacklevel=2)
        condition = condition.to(dt.bool)  # so that it cannot take part in the promotion
    elif condition._dtype is not dt.bool:
        raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_pt_name(condition._dtype)}")
    return _where_op(condition, input, other, out=out)


PUBLIC["where"] = where
Tensor.where = lambda self, condition, other: where(condition, self, other)


# --- lerp ------------------------------------------------------------------------------------
_C_NAMES = {dt.bool: "bool", dt.uint8: "unsigned char", dt.int8: "signed char",
            dt.int16: "short int", dt.int32: "int", dt.int64: "long int",
            dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16", dt.float32: "float",
            dt.float64: "double", dt.complex64: "c10::complex<float>",
            dt.complex128: "c10::complex<double>"}


def _lerp_check(input, end, weight, *, out=None):
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp(): argument 'end' (position 2) must be Tensor, not "
                        f"{type(end).__name__}")
    if not isinstance(input, Tensor):
        return
    want = input._dtype
    # PyTorch's lerp does not promote: end (and a dimensioned weight) must match input
    for name, x in (("end", end), ("weight", weight)):
        if isinstance(x, Tensor) and x._dtype is not want and (name == "end" or x.ndim):
            raise RuntimeError(f"expected dtype {_C_NAMES[want]} for `{name}` but got dtype "
                               f"{_C_NAMES[x._dtype]}")
    if want.category <= dt.INT:
        not_implemented("lerp_kernel_tensor" if isinstance(weight, Tensor)
                        else "lerp_kernel_scalar", want)


def _lerp(input, end, weight):
    # PyTorch's two-sided formula: exact at weight 0 and 1
    small = np.abs(weight) < 0.5
    with np.errstate(invalid="ignore", over="ignore"):
        diff = end - input
        return np.where(small, input + weight * diff, end - diff * (1 - weight))


def _lerp_vjp(g, input, end, weight):
    return (g * (1 - weight), g * weight,
            g * (end - input) if is_tensor(weight) else None)


defop("lerp", _lerp, tensors=("input", "end", "weight"), kind="elementwise", inplace=True,
      vjp=_lerp_vjp,
      jvp=lambda t_input, t_end, t_weight, input, end, weight:
      t_input * (1 - weight) + t_end * weight + t_weight * (end - input),
      scalar="(({input} + {weight} * ({end} - {input})) if abs({weight}) < 0.5 "
             "else ({end} - ({end} - {input}) * (1 - {weight})))")
lerp = guard("lerp", _lerp_check)


# --- addcmul / addcdiv -----------------------------------------------------------------------
def _value_rule(kernel):
    def rule(d, value=1):
        if d is dt.bool:
            not_implemented(kernel, d)
        if dt.scalar_category(value) == dt.COMPLEX and d.category < dt.COMPLEX:
            raise RuntimeError(f"value cannot be converted to type {_C_NAMES[d]} without "
                               f"overflow")
        return d, d
    return rule


def _value_for(arr, value):
    # integer results take value as an integer (PyTorch casts the scalar to the result dtype)
    return int(value) if arr.dtype.kind in "iu" else value


def _addcmul(input, tensor1, tensor2, *, value=1):
    with np.errstate(invalid="ignore", over="ignore"):
        return input + _value_for(input, value) * tensor1 * tensor2


def _addcmul_into(out, input, tensor1, tensor2, *, value=1):  # (extra["into"], see binary.py)
    with np.errstate(invalid="ignore", over="ignore"):
        np.add(input, _value_for(input, value) * tensor1 * tensor2, out=out)


addcmul = defop("addcmul", _addcmul, tensors=("input", "tensor1", "tensor2"),
                autocast={"cuda": "promote"}, kind="elementwise", inplace=True,
                dtype=_value_rule("addcmul_cpu_out"),
                extra={"dtype_attrs": True, "into": _addcmul_into},
                vjp=lambda g, tensor1, tensor2, value: (g, g * tensor2 * value,
                                                        g * tensor1 * value),
                jvp=lambda t_input, t_tensor1, t_tensor2, tensor1, tensor2, value:
                t_input + value * (t_tensor1 * tensor2 + tensor1 * t_tensor2),
                scalar="{input} + {value} * {tensor1} * {tensor2}")


def _addcdiv_check(input, tensor1, tensor2, *, value=1, out=None):
    def integral(x):
        return (x._dtype.category <= dt.INT if isinstance(x, Tensor)
                else dt.scalar_category(x) <= dt.INT)
    if integral(tensor1) and integral(tensor2):
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release "
            "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
            "behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2))"
            ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for "
            "float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")


def _addcdiv(input, tensor1, tensor2, *, value=1):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return input + value * (tensor1 / tensor2)


def _addcdiv_into(out, input, tensor1, tensor2, *, value=1):
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.add(input, value * (tensor1 / tensor2), out=out)


defop("addcdiv", _addcdiv, tensors=("input", "tensor1", "tensor2"),
      autocast={"cuda": "promote"}, kind="elementwise",
      inplace=True, dtype=_value_rule("addcdiv_cpu_out"),
      extra={"dtype_attrs": True, "into": _addcdiv_into},
      vjp=lambda g, tensor1, tensor2, value: (g, g * value / tensor2,
                                              -g * value * tensor1 / (tensor2 * tensor2)),
      jvp=lambda t_input, t_tensor1, t_tensor2, tensor1, tensor2, value:
      t_input + value * (t_tensor1 - tensor1 / tensor2 * t_tensor2) / tensor2,
      scalar="{input} + {value} * ({tensor1} / {tensor2})")
addcdiv = guard("addcdiv", _addcdiv_check)
