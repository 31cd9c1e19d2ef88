"""Unary elementwise math ops (neg, exp, log, tanh, ...): declarations for the registry.

dtype rules: "float" ops (exp, sin, ...) turn integer/bool inputs into the default float dtype,
like PyTorch; "promote" ops (neg, abs, ...) keep the input dtype.
"""
from __future__ import annotations

import numpy as np

from .registry import defop

__all__ = ["neg", "negative", "exp", "log", "tanh"]


def _neg(input):
    if input.dtype == np.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. If "
                           "you are trying to invert a mask, use the `~` or `logical_not()` "
                           "operator instead.")
    return np.negative(input)


neg = defop("neg", _neg, kind="elementwise", inplace=True, vjp=lambda g: -g,
            jvp=lambda t_input: -t_input, scalar="-{input}")
negative = defop("negative", _neg, kind="elementwise", inplace=True, vjp=lambda g: -g,
                 jvp=lambda t_input: -t_input, scalar="-{input}")


exp = defop("exp", lambda input: np.exp(input),
            kind="elementwise", dtype="float", inplace=True,
            vjp=lambda g, result: g * result, jvp=lambda t_input, result: t_input * result,
            scalar="np.exp({input})")


def _log(input):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(input)


log = defop("log", _log, kind="elementwise", dtype="float", inplace=True,
            vjp=lambda g, input: g / input, jvp=lambda t_input, input: t_input / input,
            scalar="np.log({input})")

tanh = defop("tanh", lambda input: np.tanh(input), kind="elementwise", dtype="float",
             inplace=True, vjp=lambda g, result: g * (1 - result * result),
             jvp=lambda t_input, result: t_input * (1 - result * result),
             scalar="np.tanh({input})")
