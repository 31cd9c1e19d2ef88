"""The distributions tests' cases, written once for both libraries: each builder takes the
module (`torch` in tests/gen_distributions_refs.py, `jitorch` in tests/test_distributions.py) and
returns a distribution and values in its support. Not a test module (no torch import here)."""


def _t(M, x, dtype=None):
    return M.tensor(x, dtype=dtype or M.float64)


def _cat_probs(M):
    return _t(M, [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])


CASES = {
    "Normal": lambda M, D: (D.Normal(_t(M, [0.0, 1.5]), _t(M, [1.0, 0.5])),
                            _t(M, [[0.3, -1.0], [2.0, 1.0]])),
    "Laplace": lambda M, D: (D.Laplace(_t(M, [0.0, 1.5]), _t(M, [1.0, 0.5])),
                             _t(M, [[0.3, -1.0], [2.0, 1.0]])),
    "Cauchy": lambda M, D: (D.Cauchy(_t(M, [0.0, 1.5]), _t(M, [1.0, 0.5])),
                            _t(M, [[0.3, -1.0], [2.0, 1.0]])),
    "Gumbel": lambda M, D: (D.Gumbel(_t(M, [0.0, 1.5]), _t(M, [1.0, 0.5])),
                            _t(M, [[0.3, -1.0], [2.0, 1.0]])),
    "StudentT": lambda M, D: (D.StudentT(_t(M, [3.0, 1.5, 0.8]), 0.5, 2.0),
                              _t(M, [0.1, -2.0, 4.0])),
    "LogNormal": lambda M, D: (D.LogNormal(_t(M, [0.0, 0.5]), _t(M, [1.0, 0.3])),
                               _t(M, [0.5, 2.0])),
    "Exponential": lambda M, D: (D.Exponential(_t(M, [0.5, 2.0])), _t(M, [0.3, 1.7])),
    "Gamma": lambda M, D: (D.Gamma(_t(M, [0.7, 3.0]), _t(M, [1.0, 2.0])), _t(M, [0.5, 1.2])),
    "Chi2": lambda M, D: (D.Chi2(_t(M, [1.5, 4.0])), _t(M, [0.5, 3.0])),
    "Beta": lambda M, D: (D.Beta(_t(M, [0.5, 2.0]), _t(M, [1.5, 3.0])), _t(M, [0.2, 0.7])),
    "Dirichlet": lambda M, D: (D.Dirichlet(_t(M, [[0.5, 1.0, 2.0], [3.0, 1.5, 0.8]])),
                               _t(M, [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])),
    "Uniform": lambda M, D: (D.Uniform(_t(M, [0.0, -1.0]), _t(M, [2.0, 1.0])),
                             _t(M, [0.5, 0.9])),
    "Bernoulli": lambda M, D: (D.Bernoulli(_t(M, [0.3, 0.9])), _t(M, [1.0, 0.0])),
    "BernoulliLogits": lambda M, D: (D.Bernoulli(logits=_t(M, [-1.0, 2.0])), _t(M, [1.0, 0.0])),
    "Binomial": lambda M, D: (D.Binomial(5, _t(M, [0.2, 0.7])), _t(M, [1.0, 4.0])),
    "Geometric": lambda M, D: (D.Geometric(_t(M, [0.3, 0.8])), _t(M, [2.0, 0.0])),
    "Poisson": lambda M, D: (D.Poisson(_t(M, [0.5, 3.0])), _t(M, [0.0, 4.0])),
    "Categorical": lambda M, D: (D.Categorical(_cat_probs(M)), _t(M, [2, 0], M.int64)),
    "CategoricalLogits": lambda M, D: (D.Categorical(logits=_t(M, [[0.5, -1.0, 2.0]])),
                                       _t(M, [[2], [1]], M.int64)),
    "OneHotCategorical": lambda M, D: (D.OneHotCategorical(_cat_probs(M)),
                                       _t(M, [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])),
    "Multinomial": lambda M, D: (D.Multinomial(4, _cat_probs(M)),
                                 _t(M, [[1.0, 1.0, 2.0], [4.0, 0.0, 0.0]])),
    "MultivariateNormal": lambda M, D: (
        D.MultivariateNormal(_t(M, [[0.0, 1.0], [1.0, -1.0]]),
                             scale_tril=_t(M, [[1.0, 0.0], [0.5, 2.0]])),
        _t(M, [[[0.3, 0.2]], [[1.0, -2.0]]])),
    "MultivariateNormalCov": lambda M, D: (
        D.MultivariateNormal(_t(M, [0.0, 1.0]),
                             covariance_matrix=_t(M, [[2.0, 0.3], [0.3, 1.0]])),
        _t(M, [0.3, 0.2])),
    "MultivariateNormalPrec": lambda M, D: (
        D.MultivariateNormal(_t(M, [0.0, 1.0]),
                             precision_matrix=_t(M, [[2.0, 0.3], [0.3, 1.0]])),
        _t(M, [0.3, 0.2])),
    "LowRankMultivariateNormal": lambda M, D: (
        D.LowRankMultivariateNormal(_t(M, [0.0, 1.0, -1.0]),
                                    _t(M, [[1.0, 0.0], [0.5, 1.0], [0.0, 2.0]]),
                                    _t(M, [1.0, 0.5, 2.0])),
        _t(M, [[0.3, 0.2, 0.1], [1.0, -1.0, 0.0]])),
    "VonMises": lambda M, D: (D.VonMises(_t(M, [0.0, 1.0]), _t(M, [0.5, 4.0])),
                              _t(M, [0.3, -2.0])),
    "RelaxedBernoulli": lambda M, D: (D.RelaxedBernoulli(_t(M, 0.5), _t(M, [0.3, 0.8])),
                                      _t(M, [0.2, 0.9])),
    "RelaxedOneHotCategorical": lambda M, D: (
        D.RelaxedOneHotCategorical(_t(M, 0.7), _t(M, [[0.2, 0.3, 0.5]])),
        _t(M, [[0.1, 0.6, 0.3]])),
    "Independent": lambda M, D: (
        D.Independent(D.Normal(_t(M, [[0.0, 1.0, 2.0], [0.5, 0.5, 0.5]]), _t(M, 1.5)), 1),
        _t(M, [[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]])),
    "MixtureSameFamily": lambda M, D: (
        D.MixtureSameFamily(D.Categorical(_t(M, [0.3, 0.7])),
                            D.Normal(_t(M, [-1.0, 2.0]), _t(M, [1.0, 0.5]))),
        _t(M, [0.0, 1.5])),
    "MixtureIndependent": lambda M, D: (
        D.MixtureSameFamily(D.Categorical(_t(M, [[0.3, 0.7], [0.5, 0.5]])),
                            D.Independent(D.Normal(_t(M, [[[-1.0, 0.0], [2.0, 1.0]],
                                                           [[0.0, 0.0], [1.0, 1.0]]]),
                                                   _t(M, 0.8)), 1)),
        _t(M, [[0.0, 1.5], [1.0, 1.0]])),
    "TransformedTanh": lambda M, D: (
        D.TransformedDistribution(D.Normal(_t(M, [0.0, 0.5]), _t(M, 1.0)),
                                  [D.transforms.TanhTransform()]),
        _t(M, [0.3, -0.5])),
    "TransformedAffineSigmoid": lambda M, D: (
        D.TransformedDistribution(D.Normal(_t(M, [0.0, 0.5]), _t(M, 1.0)),
                                  [D.transforms.AffineTransform(1.0, -2.0),
                                   D.transforms.SigmoidTransform()]),
        _t(M, [0.3, 0.6])),
    "TransformedStickBreaking": lambda M, D: (
        D.TransformedDistribution(D.Normal(_t(M, [0.0, 0.5]), _t(M, 1.0)),
                                  D.transforms.StickBreakingTransform()),
        _t(M, [0.2, 0.5, 0.3])),
    "TransformedPowerExp": lambda M, D: (
        D.TransformedDistribution(D.Exponential(_t(M, [1.0, 2.0])),
                                  [D.transforms.PowerTransform(_t(M, 0.5))]),
        _t(M, [0.3, 1.1])),
}

# the attributes compared with PyTorch's (values, or the exception type PyTorch raises)
PROPERTIES = ("mean", "mode", "variance", "stddev", "entropy")

# pairs of CASES for kl_divergence (each batch shape (2,) or broadcastable)
KL_SCALAR = ("Normal", "Laplace", "Cauchy", "Gumbel", "Exponential", "Gamma", "Chi2", "Beta",
             "Uniform", "Bernoulli", "Binomial", "Geometric", "Poisson", "LogNormal")
KL_PAIRS = [(p, q) for p in KL_SCALAR for q in KL_SCALAR] + [
    ("Categorical", "Categorical"), ("OneHotCategorical", "OneHotCategorical"),
    ("Dirichlet", "Dirichlet"), ("Independent", "Independent"),
    ("MultivariateNormalCov", "MultivariateNormalPrec"),
    ("LowRankMultivariateNormal", "LowRankMultivariateNormal")]
KL_SECOND = {  # q built with other parameters than p
    "Categorical": lambda M, D: D.Categorical(_t(M, [[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])),
    "OneHotCategorical": lambda M, D: D.OneHotCategorical(_t(M, [[0.5, 0.25, 0.25]])),
    "Dirichlet": lambda M, D: D.Dirichlet(_t(M, [1.0, 2.0, 0.7])),
    "Independent": lambda M, D: D.Independent(D.Normal(_t(M, [0.3, 0.1, -0.2]),
                                                       _t(M, [1.0, 2.0, 0.5])), 1),
    "LowRankMultivariateNormal": lambda M, D: D.LowRankMultivariateNormal(
        _t(M, [0.5, 0.0, 0.0]), _t(M, [[0.2], [0.5], [1.0]]), _t(M, [2.0, 1.0, 1.0])),
}

# (builder, what it does) whose ValueError messages are compared with PyTorch's
INVALID = {
    "Normal_scale": lambda M, D: D.Normal(_t(M, 0.0), _t(M, -1.0)),
    "Bernoulli_probs": lambda M, D: D.Bernoulli(_t(M, [0.5, 1.5])),
    "Bernoulli_both": lambda M, D: D.Bernoulli(_t(M, 0.5), _t(M, 0.0)),
    "Categorical_0d": lambda M, D: D.Categorical(_t(M, 0.5)),
    "Dirichlet_conc": lambda M, D: D.Dirichlet(_t(M, [1.0, -1.0])),
    "MVN_two": lambda M, D: D.MultivariateNormal(_t(M, [0.0]), _t(M, [[1.0]]),
                                                 scale_tril=_t(M, [[1.0]])),
    "Gamma_value": lambda M, D: D.Gamma(_t(M, 1.0), _t(M, 1.0)).log_prob(_t(M, -1.0)),
    "Normal_value_shape": lambda M, D: D.Normal(_t(M, [0.0, 1.0]), _t(M, 1.0)).log_prob(
        _t(M, [1.0, 2.0, 3.0])),
    "MVN_event": lambda M, D: D.MultivariateNormal(
        _t(M, [0.0, 0.0]), _t(M, [[1.0, 0.0], [0.0, 1.0]])).log_prob(_t(M, [1.0, 2.0, 3.0])),
    "Binomial_value": lambda M, D: D.Binomial(3, _t(M, 0.5)).log_prob(_t(M, 4.0)),
    "Mixture_k": lambda M, D: D.MixtureSameFamily(D.Categorical(_t(M, [0.5, 0.5])),
                                                  D.Normal(_t(M, [0.0, 1.0, 2.0]), _t(M, 1.0))),
    "Independent_ndims": lambda M, D: D.Independent(D.Normal(_t(M, [0.0]), _t(M, 1.0)), 2),
}
