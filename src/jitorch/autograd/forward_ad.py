"""Forward-mode AD (`jitorch.autograd.forward_ad`): dual tensors and JVP propagation.

Owns `dual_level`, `make_dual`, `unpack_dual` and `propagate`, which dispatch calls after an op
when a dual level is open: the op's JVP rule (from the registry) maps input tangents to output
tangents. One level at a time (nested levels raise NotImplementedError).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from .. import _dtype as dt, _profiling
from .._device import CPU, on_device, placed as _placed
from .._tensor import Tensor
from .rule_args import rule_kwargs
from . import grad_mode

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
_live: list = []  # tensors given tangents in the open level (cleared on exit)


class dual_level:
    def __enter__(self):
        if grad_mode._fwd_level[0]:
            raise NotImplementedError("jitorch: nested forward AD levels are not implemented")
        grad_mode._fwd_level[0] = 1
        _profiling.set_slow(_profiling.FORWARD_AD, True)
        return 0

    def __exit__(self, *exc):
        grad_mode._fwd_level[0] = 0
        _profiling.set_slow(_profiling.FORWARD_AD, False)
        for ref in _live:
            ref._tangent = None
        _live.clear()


def enter_dual_level():
    return dual_level().__enter__()


def exit_dual_level(*, level=None):
    dual_level().__exit__(None, None, None)


def make_dual(tensor: Tensor, tangent: Tensor, *, level=None) -> Tensor:
    if not grad_mode._fwd_level[0]:
        raise RuntimeError("To create a dual Tensor, you must first enter a dual level with "
                           "jitorch.autograd.forward_ad.dual_level")
    if tangent.shape != tensor.shape:
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if tensor._dtype.category < dt.FLOAT:
        raise ValueError("Expected primal to be floating point or complex, but got: "
                         f"{tensor._dtype}")
    d = tensor.view_as(tensor)
    d._tangent = tangent
    _live.append(d)
    return d


def unpack_dual(tensor: Tensor, *, level=None) -> UnpackedDualTensor:
    return UnpackedDualTensor(tensor, tensor._tangent)


def propagate(op, slots, attrs, outs) -> None:
    if not any(isinstance(s, Tensor) and s._tangent is not None
               or isinstance(s, (list, tuple)) and any(  # a list slot (einsum, cat)
                   isinstance(x, Tensor) and x._tangent is not None for x in s)
               for n, s in zip(op.tensors, slots) if n not in op.shape_only):
        return
    kwargs = rule_kwargs(op, op.jvp_params, slots, attrs, outs, tangent=_tangent_or_zero)
    level = grad_mode._fwd_level[0]
    grad_mode._fwd_level[0] = 0  # tangent math is not itself forward-differentiated
    try:
        dev = _placed[0] and _first_device(slots)
        if dev:  # the rule's own constants and zeros are made on the operands' device
            with on_device(dev):
                t = op.jvp(**kwargs)
        else:
            t = op.jvp(**kwargs)
    finally:
        grad_mode._fwd_level[0] = level
    outs_l = outs if isinstance(outs, (tuple, list)) else (outs,)
    ts = t if isinstance(t, (tuple, list)) else (t,)
    for o, tt in zip(outs_l, ts):
        if tt is not None and o._dtype.category >= dt.FLOAT:
            if tt._data.shape != o._data.shape:
                tt = tt.expand(o.shape) if tt.ndim <= o.ndim else tt.reshape(o.shape)
            o._tangent = tt.to(o._dtype) if tt._dtype is not o._dtype else tt
            _live.append(o)


def _first_device(slots):
    """The device of an op's operands when it is not the CPU (else None)."""
    for s in slots:
        for x in (s if isinstance(s, (list, tuple)) else (s,)):
            if isinstance(x, Tensor) and x._device is not CPU:
                return x._device
    return None


def _tangent_or_zero(t: Tensor) -> Tensor:
    if t._tangent is not None:
        return t._tangent
    from .._device.transfer import full
    return full(t._data.shape, 0, t._dtype, t._device)
