"""The gamma family and its relatives: Gamma, Chi2, Exponential, Dirichlet, Beta.

Gamma, Dirichlet and Beta `rsample` go through `utils._standard_gamma` (sampling by inversion
with the implicit reparameterisation gradient); Dirichlet normalises independent gammas and
Beta is the first coordinate of a two-component Dirichlet, so their gradients follow by the
chain rule. `Gamma.cdf` is the regularized incomplete gamma function P(a, rate * x) with its
gradients in both arguments (`_GammaInc`).
"""
from __future__ import annotations

import numbers

import numpy as np
from .._scipy_special import special as _sp

import jitorch
from ..autograd import Function
from . import constraints
from .distribution import Distribution
from .utils import _gamma_dP_dalpha, _np, _rng, _standard_gamma, batch_shape_of, broadcast_all

__all__ = ["Beta", "Chi2", "Dirichlet", "Exponential", "Gamma"]


class _GammaInc(Function):
    """P(a, x), the regularized lower incomplete gamma function, differentiable in a and x."""

    @staticmethod
    def forward(ctx, a, x):
        ctx.save_for_backward(a, x)
        return jitorch.as_tensor(_sp.gammainc(_np(a).astype(np.float64),
                                              _np(x).astype(np.float64)), dtype=x.dtype)

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        av, xv = np.broadcast_arrays(_np(a).astype(np.float64), _np(x).astype(np.float64))
        with np.errstate(divide="ignore", invalid="ignore"):
            dx = np.exp((av - 1) * np.log(xv) - xv - _sp.gammaln(av))
        dx = np.where(xv > 0, dx, 0.0)
        da = _gamma_dP_dalpha(av, np.maximum(xv, 0.0))
        ga = grad * jitorch.as_tensor(da, dtype=a.dtype)
        gx = grad * jitorch.as_tensor(dx, dtype=x.dtype)
        return _unbroadcast(ga, a.shape), _unbroadcast(gx, x.shape)


def _unbroadcast(g, shape):
    shape = tuple(shape)
    while g.dim() > len(shape):
        g = g.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and g.shape[i] != 1:
            g = g.sum(i, keepdim=True)
    return g


class Gamma(Distribution):
    """Gamma(concentration, rate): density x^(a-1) exp(-rate x) rate^a / Gamma(a)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(batch_shape_of((concentration, rate), self.concentration),
                         validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value):
        value = jitorch.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        return (jitorch.xlogy(self.concentration, self.rate)
                + jitorch.xlogy(self.concentration - 1, value)
                - self.rate * value - jitorch.lgamma(self.concentration))

    def entropy(self):
        return (self.concentration - jitorch.log(self.rate) + jitorch.lgamma(self.concentration)
                + (1.0 - self.concentration) * jitorch.digamma(self.concentration))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, x = jitorch.broadcast_tensors(self.concentration, self.rate * value)
        return _GammaInc.apply(a, x)


class Chi2(Gamma):
    """Chi-squared with `df` degrees of freedom: Gamma(df / 2, 1 / 2)."""
    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        df, = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    @property
    def df(self):
        return self.concentration * 2


class Exponential(Distribution):
    """Exponential(rate): density rate exp(-rate x) on x >= 0."""
    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        self.rate, = broadcast_all(rate)
        super().__init__(batch_shape_of((rate,), self.rate), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return jitorch.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        e = jitorch.as_tensor(_rng("exponential").standard_exponential(tuple(shape)),
                              dtype=self.rate.dtype)
        return e / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - jitorch.exp(-self.rate * value)

    def icdf(self, value):
        return -jitorch.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - jitorch.log(self.rate)


class Dirichlet(Distribution):
    """Dirichlet(concentration) on the simplex of the last dim."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        g = _standard_gamma(self.concentration.expand(shape))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (jitorch.xlogy(c - 1.0, value).sum(-1) + jitorch.lgamma(c.sum(-1))
                - jitorch.lgamma(c).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        concm1 = (self.concentration - 1).clamp(min=0.0)
        mode = concm1 / concm1.sum(-1, True)
        # all concentrations < 1: the density peaks at the vertex of the largest one
        vertex = jitorch.nn.functional.one_hot(mode.argmax(-1), concm1.shape[-1]).to(mode.dtype)
        return jitorch.where((self.concentration < 1).all(-1, keepdim=True), vertex, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (jitorch.lgamma(self.concentration).sum(-1) - jitorch.lgamma(a0)
                - (k - a0) * jitorch.digamma(a0)
                - ((self.concentration - 1.0) * jitorch.digamma(self.concentration)).sum(-1))


class Beta(Distribution):
    """Beta(concentration1, concentration0) on [0, 1]: a two-component Dirichlet."""
    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if (isinstance(concentration1, numbers.Real)
                and isinstance(concentration0, numbers.Real)):
            concentration = jitorch.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            concentration = jitorch.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(concentration, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = jitorch.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]
