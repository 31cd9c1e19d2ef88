"""Binary arithmetic ops (add, sub, mul, div, ...): declarations for the registry.

Each op: NumPy impl on arrays already cast to the compute dtype, VJP/JVP written with jitorch
ops (broadcast gradients are reduced by autograd), and the Numba scalar template for the compiler.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .registry import defop

__all__ = ["add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide"]

_BIN = ("input", "other")


def _add(input, other, *, alpha=1):
    return np.add(input, other * alpha) if alpha != 1 else np.add(input, other)


add = defop("add", _add, tensors=_BIN, kind="elementwise", inplace=True,
            vjp=lambda g, alpha: (g, g * alpha if alpha != 1 else g),
            jvp=lambda t_input, t_other, alpha: t_input + t_other * alpha,
            scalar="{input} + {alpha} * {other}")


def _sub_rule(d):
    if d is dt.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not "
                           "supported. If you are trying to invert a mask, use the `~` or "
                           "`logical_not()` operator instead.")
    return d, d


def _sub(input, other, *, alpha=1):
    return np.subtract(input, other * alpha) if alpha != 1 else np.subtract(input, other)


sub = defop("sub", _sub, tensors=_BIN, kind="elementwise", inplace=True, dtype=_sub_rule,
            vjp=lambda g, alpha: (g, -g * alpha if alpha != 1 else -g),
            jvp=lambda t_input, t_other, alpha: t_input - t_other * alpha,
            scalar="{input} - {alpha} * {other}")
subtract = defop("subtract", _sub, tensors=_BIN, kind="elementwise", inplace=True,
                 dtype=_sub_rule, vjp=lambda g, alpha: (g, -g * alpha),
                 jvp=lambda t_input, t_other, alpha: t_input - t_other * alpha,
                 scalar="{input} - {alpha} * {other}")


def _mul(input, other):
    return np.multiply(input, other)


def _mul_vjp(g, input, other):
    return g * other, g * input


mul = defop("mul", _mul, tensors=_BIN, kind="elementwise", inplace=True, vjp=_mul_vjp,
            jvp=lambda t_input, t_other, input, other: t_input * other + input * t_other,
            scalar="{input} * {other}")
multiply = defop("multiply", _mul, tensors=_BIN, kind="elementwise", inplace=True,
                 vjp=_mul_vjp,
                 jvp=lambda t_input, t_other, input, other: t_input * other + input * t_other,
                 scalar="{input} * {other}")


def _div_rule(d, rounding_mode=None):
    if rounding_mode is None:
        f = d if d.category >= dt.FLOAT else dt.get_default_dtype()
        return f, f
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    return d, d


def _div(input, other, *, rounding_mode=None):
    with np.errstate(divide="ignore", invalid="ignore"):
        if rounding_mode is None:
            return np.true_divide(input, other)
        if input.dtype.kind in "iub":
            if np.any(other == 0):
                raise ZeroDivisionError("ZeroDivisionError")
            if rounding_mode == "floor":
                return np.floor_divide(input, other)
            q = np.abs(input) // np.abs(other)
            return (q * np.sign(input) * np.sign(other)).astype(input.dtype)
        q = np.true_divide(input, other)
        return np.trunc(q) if rounding_mode == "trunc" else np.floor(q)


def _div_vjp(g, input, other, rounding_mode):
    if rounding_mode is not None:
        return g * 0, g * 0
    return g / other, -g * input / (other * other)


def _div_jvp(t_input, t_other, input, other, rounding_mode):
    if rounding_mode is not None:
        return t_input * 0
    return (t_input - input / other * t_other) / other


_DIV = dict(tensors=_BIN, kind="elementwise", inplace=True, dtype=_div_rule,
            extra={"dtype_attrs": True}, vjp=_div_vjp, jvp=_div_jvp,
            scalar="{input} / {other}")
div = defop("div", _div, **_DIV)
divide = defop("divide", _div, **_DIV)


def _true_divide(input, other):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(input, other)


true_divide = defop("true_divide", _true_divide, tensors=_BIN, kind="elementwise",
                    inplace=True, dtype="float",
                    vjp=lambda g, input, other: (g / other, -g * input / (other * other)),
                    jvp=lambda t_input, t_other, input, other:
                    (t_input - input / other * t_other) / other,
                    scalar="{input} / {other}")
