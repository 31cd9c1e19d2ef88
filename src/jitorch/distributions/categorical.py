"""The categorical families: Categorical (class indices), OneHotCategorical (one-hot vectors)
and Multinomial (counts over `total_count` draws). Each takes `probs` (normalised over the last
dim) or `logits` (normalised to log-probabilities); the other is derived lazily. Samples come
from jitorch's generator by inverting the cumulative probabilities."""
from __future__ import annotations

import math

import numpy as np

import jitorch
from . import constraints
from .distribution import Distribution
from .bernoulli import Binomial
from .utils import _np, _rng, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Categorical", "Multinomial", "OneHotCategorical"]


class Categorical(Distribution):
    """An index in [0, K) drawn with probabilities `probs` (last dim: the K categories)."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.size()[-1]
        batch_shape = self._param.size()[:-1] if self._param.dim() > 1 else jitorch.Size()
        super().__init__(batch_shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.size()

    @property
    def mean(self):
        return jitorch.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return jitorch.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        p = _np(self.probs).astype(np.float64)
        cdf = np.cumsum(p, -1)
        cdf /= cdf[..., -1:]
        u = _rng("categorical").random(shape)[..., None]
        idx = (np.broadcast_to(cdf, shape + (self._num_events,)) <= u).sum(-1)
        return jitorch.as_tensor(np.minimum(idx, self._num_events - 1).astype(np.int64))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = jitorch.broadcast_tensors(value, self.logits)
        return log_pmf.gather(-1, value[..., :1]).squeeze(-1)

    def entropy(self):
        min_real = jitorch.finfo(self.logits.dtype).min
        logits = jitorch.clamp(self.logits, min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = jitorch.arange(self._num_events, dtype=jitorch.int64)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class _OverCategorical(Distribution):
    """A family built on a `Categorical` it holds as `_categorical`: its `probs`, `logits`
    and `param_shape` are that one's."""

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def param_shape(self):
        return self._categorical.param_shape


class OneHotCategorical(_OverCategorical):
    """A one-hot vector of length K: a Categorical's index, encoded."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    @property
    def _param(self):
        return self._categorical._param

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return jitorch.nn.functional.one_hot(probs.argmax(-1), probs.shape[-1]).to(probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    def sample(self, sample_shape=()):
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return jitorch.nn.functional.one_hot(indices, probs.shape[-1]).to(probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        indices = value.max(-1)[1]
        return self._categorical.log_prob(indices)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = jitorch.eye(n, dtype=self._param.dtype)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values


class Multinomial(_OverCategorical):
    """Counts of each of K categories over `total_count` independent draws."""
    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        p = _np(self.probs).astype(np.float64)
        p = np.broadcast_to(p / p.sum(-1, keepdims=True), shape)
        counts = _rng("multinomial").multinomial(self.total_count, p)
        return jitorch.as_tensor(counts, dtype=self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = jitorch.broadcast_tensors(self.logits, value)
        log_factorial_n = jitorch.lgamma(value.sum(-1) + 1)
        log_factorial_xs = jitorch.lgamma(value + 1).sum(-1)
        # a category with probability 0 that was never drawn contributes 0, not 0 * -inf
        logits = jitorch.where((value == 0) & (logits == -math.inf), 0.0, logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers

    def entropy(self):
        n = jitorch.tensor(float(self.total_count), dtype=self.probs.dtype)
        support = self._binomial.enumerate_support()
        binomial_probs = jitorch.exp(self._binomial.log_prob(support))
        weights = jitorch.lgamma(support + 1)
        return (n * self._categorical.entropy() - jitorch.lgamma(n + 1)
                + (binomial_probs * weights).sum(0).sum(-1))
