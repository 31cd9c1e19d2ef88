"""`VonMises`: the circular normal distribution on [-pi, pi). Its normaliser 2 pi I0(kappa)
is computed as log(i0e(kappa)) + kappa (no overflow for large concentrations); samples come
from NumPy's von Mises sampler on jitorch's generator (no `rsample`, as in PyTorch)."""
from __future__ import annotations

import math

import numpy as np

import jitorch
from . import constraints
from .distribution import Distribution
from .utils import _np, _rng, broadcast_all

__all__ = ["VonMises"]


class VonMises(Distribution):
    """Density exp(kappa cos(x - loc)) / (2 pi I0(kappa))."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return (k * jitorch.cos(value - self.loc) - math.log(2 * math.pi)
                - (jitorch.special.i0e(k).log() + k))

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        loc = np.broadcast_to(_np(self.loc).astype(np.float64), shape)
        kappa = np.broadcast_to(_np(self.concentration).astype(np.float64), shape)
        x = _rng("von_mises").vonmises(loc, kappa)
        x = np.mod(x + np.pi, 2 * np.pi) - np.pi  # into [-pi, pi), as PyTorch's sampler
        return jitorch.as_tensor(x, dtype=self.loc.dtype)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        k = self.concentration
        return 1 - jitorch.special.i1e(k) / jitorch.special.i0e(k)
