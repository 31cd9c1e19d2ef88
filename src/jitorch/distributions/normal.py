"""The location-scale families on the real line: Normal, Laplace, Cauchy, Gumbel, StudentT.

Each keeps `loc`/`scale` broadcast to the batch shape and samples by transforming standard
draws (`rsample`, reparameterised: gradients reach loc and scale; StudentT's through its Chi2).
"""
from __future__ import annotations

import math

import jitorch
from . import constraints
from .distribution import Distribution
from .gamma import Chi2
from .utils import _normal, _rng, _uniform, batch_shape_of, broadcast_all

__all__ = ["Cauchy", "Gumbel", "Laplace", "Normal", "StudentT"]

_EULER = 0.57721566490153286061


class _LocScale(Distribution):
    """The shared constructor: loc and scale broadcast; the batch shape is theirs."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch_shape_of((loc, scale), self.loc), validate_args=validate_args)

    @property
    def mode(self):
        return self.loc

    def _checked(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return value


class Normal(_LocScale):
    """N(loc, scale^2)."""

    @property
    def mean(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return self.loc.expand(shape) + _normal(shape, self.loc) * self.scale.expand(shape)

    def log_prob(self, value):
        self._checked(value)
        var = self.scale ** 2
        return (-((value - self.loc) ** 2) / (2 * var) - self.scale.log()
                - math.log(math.sqrt(2 * math.pi)))

    def cdf(self, value):
        self._checked(value)
        return 0.5 * (1 + jitorch.erf((value - self.loc) * self.scale.reciprocal()
                                      / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * jitorch.erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + jitorch.log(self.scale)


class Laplace(_LocScale):
    """Laplace(loc, scale): density exp(-|x - loc| / scale) / (2 scale)."""

    @property
    def mean(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = jitorch.finfo(self.loc.dtype).eps
        u = _uniform(shape, self.loc, eps - 1, 1)
        return self.loc - self.scale * u.sign() * jitorch.log1p(-u.abs())

    def log_prob(self, value):
        self._checked(value)
        return -jitorch.log(2 * self.scale) - jitorch.abs(value - self.loc) / self.scale

    def cdf(self, value):
        self._checked(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * jitorch.expm1(
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * jitorch.log1p(-2 * term.abs())

    def entropy(self):
        return 1 + jitorch.log(2 * self.scale)


class Cauchy(_LocScale):
    """Cauchy(loc, scale): no mean or variance (NaN and inf, as in PyTorch)."""

    @property
    def mean(self):
        return jitorch.full(self._extended_shape(), math.nan, dtype=self.loc.dtype)

    @property
    def variance(self):
        return jitorch.full(self._extended_shape(), math.inf, dtype=self.loc.dtype)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = jitorch.as_tensor(_rng("cauchy").standard_cauchy(tuple(shape)),
                                dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value):
        self._checked(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value):
        self._checked(value)
        return jitorch.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return jitorch.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Gumbel(_LocScale):
    """Gumbel(loc, scale) (type-I extreme value): cdf exp(-exp(-(x - loc) / scale))."""

    @property
    def mean(self):
        return self.loc + self.scale * _EULER

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        finfo = jitorch.finfo(self.loc.dtype)
        u = _uniform(shape, self.loc).clamp(min=finfo.tiny, max=1 - finfo.eps)
        return self.loc - self.scale * jitorch.log(-jitorch.log(u))

    def log_prob(self, value):
        self._checked(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    def cdf(self, value):
        self._checked(value)
        return jitorch.exp(-jitorch.exp(-(value - self.loc) / self.scale))

    def icdf(self, value):
        return self.loc - self.scale * jitorch.log(-jitorch.log(value))

    def entropy(self):
        return self.scale.log() + (1 + _EULER)


class StudentT(Distribution):
    """Student's t with `df` degrees of freedom, location and scale."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self._chi2._batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return jitorch.where(self.df > 1, self.loc, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        finite = self.scale.pow(2) * self.df / (self.df - 2)
        inf = jitorch.full_like(self.df, math.inf)
        return jitorch.where(self.df > 2, finite,
                             jitorch.where(self.df > 1, inf, math.nan))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        x = _normal(shape, self.df)
        z = self._chi2.rsample(sample_shape)
        y = x * jitorch.rsqrt(z / self.df)
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + jitorch.lgamma(0.5 * self.df) - jitorch.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * jitorch.log1p(y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = (jitorch.lgamma(0.5 * self.df) + math.lgamma(0.5)
                 - jitorch.lgamma(0.5 * (self.df + 1)))
        return (self.scale.log()
                + 0.5 * (self.df + 1) * (jitorch.digamma(0.5 * (self.df + 1))
                                         - jitorch.digamma(0.5 * self.df))
                + 0.5 * self.df.log() + lbeta)
