"""Helpers shared by the distribution families: parameter broadcasting (`broadcast_all`),
probabilities <-> logits, `lazy_property` (a parameter computed from another on first use),
drawing NumPy arrays from jitorch's global generator (so `manual_seed` makes every sampler
reproducible), and `_standard_gamma`, the one sampler with a hand-written gradient.

Gamma sampling is by inversion, x = P^-1(alpha, u) with u uniform (P the regularized lower
incomplete gamma function), so the pathwise derivative with u held fixed is exactly the implicit
reparameterisation gradient PyTorch uses for Gamma/Beta/Dirichlet `rsample`:
dx/dalpha = -(dP/dalpha)(alpha, x) / p(x; alpha). dP/dalpha has no closed form; it is taken by
a central difference of P in float64, whose error (~1e-9 relative) is far under float32's.
"""
from __future__ import annotations

import numbers

import numpy as np
from .._scipy_special import special as _sp

import jitorch
from .. import _random
from ..autograd import Function

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits"]


def _float_default():
    return jitorch.get_default_dtype()


def broadcast_all(*values):
    """Broadcast tensors and numbers to one shape; numbers take the tensors' dtype (the
    default dtype when there are none), as in PyTorch."""
    if not all(isinstance(v, (jitorch.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, jitorch.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, jitorch.Tensor)), None)
        dtype = like.dtype if like is not None else _float_default()
        values = [v if isinstance(v, jitorch.Tensor) else jitorch.tensor(v, dtype=dtype)
                  for v in values]
    return jitorch.broadcast_tensors(*values)


def batch_shape_of(given, broadcast):
    """The batch shape of a family whose parameters were `given` (as the caller passed them)
    and broadcast to `broadcast`: empty when every one was a Python number, as in PyTorch
    (a 0-d tensor parameter also gives an empty shape, through its size)."""
    if all(isinstance(v, numbers.Number) for v in given):
        return jitorch.Size()
    return broadcast.size()


def _sum_rightmost(value, dim: int):
    """Sum out the `dim` rightmost dims of `value`."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary=False):
    return jitorch.sigmoid(logits) if is_binary else jitorch.softmax(logits, dim=-1)


def clamp_probs(probs):
    eps = jitorch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return jitorch.log(ps_clamped) - jitorch.log1p(-ps_clamped)
    return jitorch.log(ps_clamped)


class lazy_property:
    """A parameter derived from another (Bernoulli's logits from its probs) on first read,
    then stored in the instance's __dict__ (where `expand` and validation find it)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with jitorch.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


# ---- random draws (NumPy arrays from jitorch's default generator) --------------------------

class _Draws:
    """NumPy's samplers (binomial, poisson, multinomial, ...) on the default generator's
    mt19937 stream, each draw under the generator's lock (jitorch/_random.py `_draw`), so that
    `manual_seed` reproduces them; `name` is what a refusal (vmap) names."""

    def __init__(self, name: str):
        self.name = name

    def __getattr__(self, method: str):
        def draw(*args, **kwargs):
            return _random._draw(None, self.name, lambda eng: getattr(
                np.random.Generator(eng.bitgen), method)(*args, **kwargs))
        return draw


def _rng(name: str) -> _Draws:
    return _Draws(name)


def _np(t) -> np.ndarray:
    return t.detach().numpy()


def _uniform(shape, like, low=0.0, high=1.0):
    """U[low, high) in `like`'s dtype from `jitorch.rand` (PyTorch's stream), never exactly
    `low` (PyTorch's samplers clamp the uniform away from 0 so that log(u) stays finite)."""
    tiny = jitorch.finfo(like.dtype).tiny
    u = jitorch.rand(tuple(shape), dtype=like.dtype)
    return u.clamp(min=tiny) * (high - low) + low


def _normal(shape, like):
    return jitorch.randn(tuple(shape), dtype=like.dtype)  # PyTorch's `_standard_normal`


def _gamma_dP_dalpha(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    h = 1e-5 * np.maximum(alpha, 1.0)
    h = np.minimum(h, 0.5 * alpha)
    return (_sp.gammainc(alpha + h, x) - _sp.gammainc(alpha - h, x)) / (2 * h)


class _StandardGamma(Function):
    """x ~ Gamma(alpha, 1), drawn by inversion; backward: the implicit gradient dx/dalpha."""

    @staticmethod
    def forward(ctx, alpha):
        a = _np(alpha).astype(np.float64)
        u = _rng("_standard_gamma").random(a.shape)
        x = _sp.gammaincinv(a, u)
        tiny = float(jitorch.finfo(alpha.dtype).tiny)
        x = np.maximum(x, tiny)  # PyTorch clamps gamma samples to the dtype's smallest normal
        out = jitorch.as_tensor(x, dtype=alpha.dtype)
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        a, xv = _np(alpha).astype(np.float64), _np(x).astype(np.float64)
        log_pdf = (a - 1) * np.log(xv) - xv - _sp.gammaln(a)
        dx_da = -_gamma_dP_dalpha(a, xv) / np.exp(log_pdf)
        dx_da = np.where(np.isfinite(dx_da), dx_da, 0.0)
        return grad * jitorch.as_tensor(dx_da, dtype=alpha.dtype)


def _standard_gamma(alpha):
    """Gamma(alpha, 1) samples of `alpha`'s shape, differentiable in alpha."""
    if alpha.requires_grad and jitorch.is_grad_enabled():
        return _StandardGamma.apply(alpha)
    with jitorch.no_grad():
        return _StandardGamma.apply(alpha.detach())
