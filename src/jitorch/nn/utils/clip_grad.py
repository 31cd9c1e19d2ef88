"""Gradient clipping: `clip_grad_norm_`, `clip_grad_value_`, `get_total_norm`,
`clip_grads_with_norm_` (PyTorch's formulas and messages; `foreach` is accepted, one path here)."""
from __future__ import annotations

import functools
import types
import warnings

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _no_grad(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with no_grad():
            return func(*args, **kwargs)
    return wrapper


@_no_grad
def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The norm of the tensors' norms: the norm of all of them as one vector, on the first
    tensor's device (PyTorch's: each norm is moved there, so tensors may span devices)."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return _jt.tensor(0.0)
    first = tensors[0].device
    norms = [_jt.linalg.vector_norm(g, norm_type).to(first) for g in tensors]
    total_norm = _jt.linalg.vector_norm(_jt.stack(norms), norm_type)
    if error_if_nonfinite and bool(total_norm.isnan() | total_norm.isinf()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total_norm


@_no_grad
def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:
    """Scale grads in place by min(max_norm / (total_norm + 1e-6), 1) (the coefficient moved
    to each gradient's device)."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    clip_coef_clamped = _jt.clamp(max_norm / (total_norm + 1e-6), max=1.0)
    for g in grads:
        g.mul_(clip_coef_clamped.to(g.device))


@_no_grad
def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Clip the total gradient norm of `parameters` to `max_norm` in place; return that norm."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient to [-clip_value, clip_value] in place."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    clip_value = float(clip_value)
    for p in parameters:
        if p.grad is not None:
            p.grad.clamp_(min=-clip_value, max=clip_value)
