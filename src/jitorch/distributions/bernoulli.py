"""The counting families parameterised by a success probability or a rate: Bernoulli,
Binomial, Geometric, Poisson. Bernoulli/Binomial/Geometric take `probs` or `logits` (exactly
one; the other is derived lazily). Samples are drawn with NumPy from jitorch's generator and
carry no gradient (none of these has `rsample`)."""
from __future__ import annotations

import math

import numpy as np

import jitorch
from . import constraints
from .distribution import Distribution
from .utils import (_np, _rng, _uniform, batch_shape_of, broadcast_all, lazy_property,
                    logits_to_probs, probs_to_logits)

__all__ = ["Bernoulli", "Binomial", "Geometric", "Poisson"]

def _bce_logits(logits, target):
    return jitorch.nn.functional.binary_cross_entropy_with_logits(logits, target,
                                                                  reduction="none")


class _ProbsOrLogits(Distribution):
    """The shared `probs`/`logits` handling of the binary families (and of
    LogitRelaxedBernoulli)."""

    def _set_param(self, probs, logits):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.probs, = broadcast_all(probs)
            self._param = self.probs
        else:
            self.logits, = broadcast_all(logits)
            self._param = self.logits
        return batch_shape_of((probs if probs is not None else logits,), self._param)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()


class Bernoulli(_ProbsOrLogits):
    """1 with probability `probs`, else 0."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        batch_shape = self._set_param(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return jitorch.where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with jitorch.no_grad():
            return (_uniform(shape, self.probs) < self.probs.expand(shape)).to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_logits(logits, value)

    def entropy(self):
        return _bce_logits(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        values = jitorch.arange(2, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Binomial(_ProbsOrLogits):
    """The number of successes in `total_count` Bernoulli trials."""
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.type_as(self.probs)
            self._param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.type_as(self.logits)
            self._param = self.logits
        super().__init__(self._param.size(), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        n = np.broadcast_to(_np(self.total_count).astype(np.int64), shape)
        p = np.broadcast_to(_np(self.probs).astype(np.float64), shape)
        return jitorch.as_tensor(_rng("binomial").binomial(n, p), dtype=self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, k, logits = self.total_count, value, self.logits
        # log(1 + exp(logits)) * n, written without overflow for large |logits|
        normalize = (n * logits.clamp(min=0) + n * jitorch.log1p(jitorch.exp(-logits.abs()))
                     - jitorch.lgamma(n + 1))
        return (k * logits - jitorch.lgamma(k + 1) - jitorch.lgamma(n - k + 1) - normalize)

    def _homogeneous_count(self, what):
        total = int(self.total_count.max())
        if not self.total_count.min() == total:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(jitorch.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total = self._homogeneous_count("enumerate_support")
        values = jitorch.arange(1 + total, dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Geometric(_ProbsOrLogits):
    """The number of failures before the first success in Bernoulli(probs) trials."""
    arg_constraints = {"probs": constraints.interval(0.0, 1.0), "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        batch_shape = self._set_param(probs, logits)
        super().__init__(batch_shape, validate_args=validate_args)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return jitorch.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with jitorch.no_grad():
            u = _uniform(shape, self.probs)
            return (u.log() / jitorch.log1p(-self.probs)).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # P(0) = 1 when probs == 1: 0 * log(0) is 0 here
        probs = jitorch.where((probs == 1) & (value == 0), 0.0, probs)
        return value * jitorch.log1p(-probs) + self.probs.log()

    def entropy(self):
        return _bce_logits(self.logits, self.probs) / self.probs


class Poisson(Distribution):
    """Poisson(rate)."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        self.rate, = broadcast_all(rate)
        super().__init__(batch_shape_of((rate,), self.rate), validate_args=validate_args)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        lam = np.broadcast_to(_np(self.rate).astype(np.float64), shape)
        return jitorch.as_tensor(_rng("poisson").poisson(lam), dtype=self.rate.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return jitorch.xlogy(value, rate) - rate - jitorch.lgamma(value + 1)
