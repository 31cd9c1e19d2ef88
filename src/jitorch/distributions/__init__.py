"""`jitorch.distributions`: PyTorch's `torch.distributions` (probability distributions with
sampling, reparameterised sampling, log-densities, moments, KL divergences, constraints and
transforms). Gradients flow through jitorch's tensor ops; samples come from jitorch's global
generator, so `jitorch.manual_seed` makes them reproducible (the numbers differ from PyTorch's).

Where each piece lives: distribution.py (the base class and validation), constraints.py,
transforms.py, constraint_registry.py (`biject_to`, `transform_to`), kl.py, utils.py, and one
module per family or small group of families.
"""
from . import constraints, transforms
from .bernoulli import Bernoulli, Binomial, Geometric, Poisson
from .categorical import Categorical, Multinomial, OneHotCategorical
from .constraint_registry import biject_to, transform_to
from .distribution import Distribution
from .gamma import Beta, Chi2, Dirichlet, Exponential, Gamma
from .independent import Independent, MixtureSameFamily
from .kl import kl_divergence, register_kl
from .multivariate_normal import LowRankMultivariateNormal, MultivariateNormal
from .normal import Cauchy, Gumbel, Laplace, Normal, StudentT
from .transformed_distribution import (ExpRelaxedCategorical, LogitRelaxedBernoulli, LogNormal,
                                       RelaxedBernoulli, RelaxedOneHotCategorical,
                                       TransformedDistribution)
from .transforms import (AffineTransform, ComposeTransform, ExpTransform, IndependentTransform,
                         PowerTransform, SigmoidTransform, SoftmaxTransform,
                         StickBreakingTransform, TanhTransform, Transform, identity_transform)
from .uniform import Uniform
from .von_mises import VonMises

__all__ = ["AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ComposeTransform", "Dirichlet", "Distribution", "ExpRelaxedCategorical",
           "ExpTransform", "Exponential", "Gamma", "Geometric", "Gumbel", "Independent",
           "IndependentTransform", "Laplace", "LogNormal", "LogitRelaxedBernoulli",
           "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
           "MultivariateNormal", "Normal", "OneHotCategorical", "Poisson", "PowerTransform",
           "RelaxedBernoulli", "RelaxedOneHotCategorical", "SigmoidTransform",
           "SoftmaxTransform", "StickBreakingTransform", "StudentT", "TanhTransform",
           "Transform", "TransformedDistribution", "Uniform", "VonMises", "biject_to",
           "constraints", "identity_transform", "kl_divergence", "register_kl",
           "transform_to", "transforms"]
