"""jitorch.distributions against PyTorch's torch.distributions (issue 19).

Values and shapes are compared with PyTorch's, recorded in distributions_refs.json by
gen_distributions_refs.py from the cases of distributions_cases.py; SciPy and closed forms check
a few densities independently; gradients of rsample and log_prob are checked by finite
differences (samples reproduced by reseeding), and samplers by their sample moments.
"""
import json
import math
import pathlib
import warnings

import numpy as np
import pytest
from scipy import stats

import jitorch
import jitorch.distributions as D
from jitorch.autograd import gradcheck

from distributions_cases import CASES, INVALID, KL_PAIRS, KL_SECOND, PROPERTIES

REFS = json.loads((pathlib.Path(__file__).resolve().parent
                   / "distributions_refs.json").read_text())


def _t(x):
    return jitorch.tensor(x, dtype=jitorch.float64)


def _attempt(fn):
    try:
        return fn()
    except (NotImplementedError, ValueError) as e:
        return type(e).__name__


def _check(got, want, what):
    if isinstance(want, str):
        assert got == want, f"{what}: PyTorch raises {want}, jitorch gave {got!r}"
        return
    assert isinstance(got, jitorch.Tensor), f"{what}: {got!r}"
    assert list(got.shape) == want["shape"], what
    np.testing.assert_allclose(got.detach().double().numpy().ravel(), want["values"],
                               rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=what)


@pytest.fixture(autouse=True)
def _float64_default():
    old = jitorch.get_default_dtype()
    jitorch.set_default_dtype(jitorch.float64)
    yield
    jitorch.set_default_dtype(old)


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_shapes_match_pytorch(name):
    ref = REFS["cases"][name]
    d, value = CASES[name](jitorch, D)
    assert list(d.batch_shape) == ref["batch_shape"]
    assert list(d.event_shape) == ref["event_shape"]
    assert d.has_rsample == ref["has_rsample"]
    assert repr(d.support).replace("jitorch", "torch") == ref["support"]
    assert list(d.sample((3,)).shape) == ref["sample_shape"]
    if d.has_rsample:
        assert list(d.rsample((3,)).shape) == ref["sample_shape"]
    expanded = d.expand((4,) + tuple(d.batch_shape))
    assert list(expanded.batch_shape) == ref["expand_shape"]
    assert list(expanded.sample().shape) == ref["expand_shape"] + ref["event_shape"]
    one = value[-1] if value.dim() > len(d.batch_shape) + len(d.event_shape) else value
    _check(_attempt(lambda: expanded.log_prob(one)), ref["expand_log_prob"], "expanded")
    _check(_attempt(lambda: d.log_prob(value)), ref["log_prob"], "log_prob")
    _check(_attempt(lambda: d.cdf(value)), ref["cdf"], "cdf")
    for prop in PROPERTIES:
        got = _attempt(lambda: d.entropy() if prop == "entropy" else getattr(d, prop))
        _check(got, ref[prop], prop)
    q = _t([0.3, 0.8]).reshape((2,) + (1,) * len(d.batch_shape))
    _check(_attempt(lambda: d.icdf(q)), ref["icdf"], "icdf")


def test_kl_divergence_matches_pytorch_for_its_registered_pairs():
    for p_name, q_name in KL_PAIRS:
        p = CASES[p_name](jitorch, D)[0]
        q = KL_SECOND[q_name](jitorch, D) if q_name in KL_SECOND else CASES[q_name](jitorch, D)[0]
        _check(_attempt(lambda: D.kl_divergence(p, q)), REFS["kl"][f"{p_name}|{q_name}"],
               f"KL({p_name} || {q_name})")


def test_validation_errors_have_pytorchs_messages():
    for name, build in INVALID.items():
        with pytest.raises(ValueError) as info:
            build(jitorch, D)
        assert str(info.value).replace("jitorch.", "torch.") == REFS["invalid"][name], name
    D.Normal(_t(0.0), _t(-1.0), validate_args=False)  # off per instance
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(_t(0.0), _t(-1.0)).log_prob(_t([1.0, 2.0, 3.0]))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_densities_and_cdfs_against_scipy():
    x = np.array([0.2, 1.3, 4.0])
    cases = [(D.Gamma(_t(2.5), _t(1.5)), stats.gamma(2.5, scale=1 / 1.5)),
             (D.Beta(_t(2.0), _t(5.0)), stats.beta(2.0, 5.0)),
             (D.StudentT(_t(4.0), _t(0.5), _t(2.0)), stats.t(4.0, 0.5, 2.0)),
             (D.LogNormal(_t(0.3), _t(0.7)), stats.lognorm(0.7, scale=math.exp(0.3))),
             (D.VonMises(_t(0.5), _t(2.0)), stats.vonmises(2.0, loc=0.5))]
    for d, ref in cases:
        v = _t(x / 5 if isinstance(d, D.Beta) else x / 2 if isinstance(d, D.VonMises) else x)
        np.testing.assert_allclose(d.log_prob(v).numpy(), ref.logpdf(v.numpy()), rtol=1e-7)
        if not isinstance(d, D.VonMises):
            np.testing.assert_allclose(d.entropy().numpy(), ref.entropy(), rtol=1e-7)
    g = D.Gamma(_t([0.5, 2.5]), _t([1.0, 3.0]))
    np.testing.assert_allclose(g.cdf(_t([0.7, 0.4])).numpy(),
                               stats.gamma.cdf([0.7, 0.4], [0.5, 2.5], scale=[1.0, 1 / 3]))
    np.testing.assert_allclose(D.Poisson(_t(3.0)).log_prob(_t([0.0, 2.0, 7.0])).numpy(),
                               stats.poisson.logpmf([0, 2, 7], 3.0))


def _seeded(sampler):
    def f(*args):
        jitorch.manual_seed(7)
        return sampler(*args)
    return f


def _p(x):
    return _t(x).requires_grad_()


@pytest.mark.parametrize("name,sampler,args", [
    ("Normal", lambda m, s: D.Normal(m, s).rsample((2,)), ([0.3, -1.0], [1.5, 0.5])),
    ("Laplace", lambda m, s: D.Laplace(m, s).rsample((2,)), ([0.3], [1.5])),
    ("Gumbel", lambda m, s: D.Gumbel(m, s).rsample((2,)), ([0.3], [1.5])),
    ("Uniform", lambda lo, hi: D.Uniform(lo, hi).rsample((2,)), ([0.3], [1.5])),
    ("Cauchy", lambda m, s: D.Cauchy(m, s).rsample((2,)), ([0.3], [1.5])),
    ("LogNormal", lambda m, s: D.LogNormal(m, s).rsample((2,)), ([0.3], [0.5])),
    ("Exponential", lambda r: D.Exponential(r).rsample((2,)), ([0.3, 2.0],)),
    ("Chi2", lambda df: D.Chi2(df).rsample((2,)), ([0.8, 5.0],)),
    ("Gamma", lambda a, r: D.Gamma(a, r).rsample((2,)), ([0.6, 3.0], [1.5, 0.7])),
    ("Beta", lambda a, b: D.Beta(a, b).rsample((2,)), ([0.8, 3.0], [2.0, 0.9])),
    ("Dirichlet", lambda c: D.Dirichlet(c).rsample(), ([1.5, 0.7, 3.0],)),
    ("StudentT", lambda df, m: D.StudentT(df, m, 2.0).rsample(), ([3.0, 6.0], [0.1, 0.2])),
    ("MultivariateNormal", lambda m, L: D.MultivariateNormal(m, scale_tril=L.tril()).rsample(),
     ([0.3, -1.0], [[1.5, 0.0], [0.3, 0.8]])),
    ("LowRankMultivariateNormal",
     lambda m, W, d: D.LowRankMultivariateNormal(m, W, d).rsample((2,)),
     ([0.3, -1.0], [[0.5], [1.0]], [1.0, 2.0])),
    ("RelaxedBernoulli", lambda p: D.RelaxedBernoulli(_t(0.5), p).rsample(), ([0.3, 0.6],)),
    ("RelaxedOneHotCategorical", lambda p: D.RelaxedOneHotCategorical(_t(0.5), p).rsample(),
     ([0.3, 0.6, 0.1],)),
])
def test_rsample_gradients_by_finite_differences(name, sampler, args):
    assert gradcheck(_seeded(sampler), tuple(_p(a) for a in args), atol=1e-5, rtol=1e-3), name


@pytest.mark.parametrize("name,fn,args", [
    ("Gamma", lambda a, r: D.Gamma(a, r).log_prob(_t([0.4, 2.0])), ([0.6, 3.0], [1.5, 0.7])),
    ("Gamma.cdf", lambda a, r: D.Gamma(a, r).cdf(_t([0.4, 2.0])), ([0.6, 3.0], [1.5, 0.7])),
    ("Beta", lambda a, b: D.Beta(a, b).log_prob(_t([0.3, 0.9])), ([0.8, 3.0], [2.0, 0.9])),
    ("StudentT", lambda df, s: D.StudentT(df, 0.0, s).log_prob(_t([0.3, -2.0])),
     ([3.0, 1.5], [1.0, 2.0])),
    ("VonMises", lambda m, k: D.VonMises(m, k).log_prob(_t([0.3, -2.0])), ([0.1, 1.0], [0.5, 8.0])),
    ("MultivariateNormal", lambda m, L: D.MultivariateNormal(m, scale_tril=L.tril()).log_prob(
        _t([[0.3, 0.2], [1.0, -1.0]])), ([0.3, -1.0], [[1.5, 0.0], [0.3, 0.8]])),
    ("LowRankMultivariateNormal", lambda W, d: D.LowRankMultivariateNormal(
        _t([0.0, 1.0]), W, d).log_prob(_t([0.3, 0.2])), ([[0.5], [1.0]], [1.0, 2.0])),
    ("Categorical", lambda lg: D.Categorical(logits=lg).log_prob(_t([2, 0]).long()),
     ([0.3, -1.0, 2.0],)),
    ("Binomial", lambda p: D.Binomial(5, p).log_prob(_t([1.0, 4.0])), ([0.3, 0.6],)),
    ("MixtureSameFamily", lambda w, m: D.MixtureSameFamily(
        D.Categorical(w), D.Normal(m, _t(1.0))).log_prob(_t([0.1, 2.0])), ([0.3, 0.7], [0.0, 2.0])),
    ("KL(Gamma||Gamma)", lambda a, r: D.kl_divergence(D.Gamma(a, r), D.Gamma(_t(2.0), _t(1.0))),
     ([0.6, 3.0], [1.5, 0.7])),
])
def test_log_prob_gradients_by_finite_differences(name, fn, args):
    assert gradcheck(fn, tuple(_p(a) for a in args), atol=1e-5, rtol=1e-3), name


def _moments(samples):
    x = samples.double().numpy()
    return x.mean(0), x.var(0)


@pytest.mark.parametrize("name,d", [
    ("Gamma", lambda: D.Gamma(_t([0.4, 3.0]), _t([1.0, 2.0]))),
    ("Beta", lambda: D.Beta(_t([0.5, 3.0]), _t([2.0, 1.0]))),
    ("Dirichlet", lambda: D.Dirichlet(_t([0.5, 2.0, 3.0]))),
    ("StudentT", lambda: D.StudentT(_t([5.0]), _t(1.0), _t(2.0))),
    ("Poisson", lambda: D.Poisson(_t([0.5, 6.0]))),
    ("Binomial", lambda: D.Binomial(7, _t([0.2, 0.9]))),
    ("Geometric", lambda: D.Geometric(_t([0.3, 0.7]))),
    ("OneHotCategorical", lambda: D.OneHotCategorical(_t([0.2, 0.5, 0.3]))),
    ("Multinomial", lambda: D.Multinomial(5, _t([0.2, 0.5, 0.3]))),
    ("Laplace", lambda: D.Laplace(_t([0.5]), _t([3.0]))),
    ("MultivariateNormal", lambda: D.MultivariateNormal(
        _t([1.0, -1.0]), covariance_matrix=_t([[2.0, 0.5], [0.5, 1.0]]))),
])
def test_sample_moments(name, d):
    jitorch.manual_seed(3)
    dist = d()
    n = 20000
    samples = dist.sample((n,))
    assert dist.support.check(samples).all()
    mean, var = _moments(samples)
    want_mean, want_var = dist.mean.numpy(), dist.variance.numpy()
    # 5 standard errors of the mean; the variance within 10%
    np.testing.assert_allclose(mean, want_mean, atol=5 * np.sqrt(want_var.max() / n) + 1e-12)
    np.testing.assert_allclose(var, want_var, rtol=0.1, atol=1e-3)


def test_von_mises_samples_have_its_circular_moments():
    jitorch.manual_seed(3)
    d = D.VonMises(_t([0.5, -2.0]), _t([3.0, 0.4]))
    x = d.sample((20000,))
    assert ((x >= -math.pi) & (x < math.pi)).all()
    # E[cos(x - loc)] = I1(k) / I0(k) = 1 - variance (PyTorch's circular variance)
    np.testing.assert_allclose(jitorch.cos(x - d.loc).mean(0).numpy(),
                               1 - d.variance.numpy(), atol=0.02)
    np.testing.assert_allclose(jitorch.sin(x - d.loc).mean(0).numpy(), 0.0, atol=0.02)


def test_seeding_reproduces_samples_and_the_implicit_gradient_is_unbiased():
    jitorch.manual_seed(11)
    a = D.Gamma(_t([0.5, 2.0]), _t(1.0)).sample((4,))
    jitorch.manual_seed(11)
    assert (a == D.Gamma(_t([0.5, 2.0]), _t(1.0)).sample((4,))).all()
    # E[d x / d alpha] = d E[x] / d alpha = 1 / rate for x ~ Gamma(alpha, rate)
    alpha = _p([0.3, 2.0])
    D.Gamma(alpha, _t(2.0)).rsample((4000,)).sum().backward()
    np.testing.assert_allclose(alpha.grad.numpy() / 4000, [0.5, 0.5], rtol=0.1)


def test_kl_against_monte_carlo():
    jitorch.manual_seed(5)
    pairs = [(D.Normal(_t(0.3), _t(1.2)), D.Laplace(_t(-0.2), _t(0.8))),
             (D.Gamma(_t(2.0), _t(1.5)), D.Normal(_t(1.0), _t(2.0))),
             (D.MultivariateNormal(_t([0.0, 1.0]), _t([[1.0, 0.3], [0.3, 2.0]])),
              D.LowRankMultivariateNormal(_t([0.5, 0.0]), _t([[1.0], [0.5]]), _t([0.5, 1.0])))]
    for p, q in pairs:
        x = p.sample((40000,))
        mc = (p.log_prob(x) - q.log_prob(x)).numpy()
        exact = float(D.kl_divergence(p, q))
        assert abs(mc.mean() - exact) < 5 * mc.std() / 200, (type(p), type(q))


def test_register_kl_dispatches_to_the_most_specific_pair():
    class MyNormal(D.Normal):
        pass

    with pytest.raises(NotImplementedError,
                       match="No KL\\(p \\|\\| q\\) is implemented for p type Poisson and q "
                             "type Normal"):
        D.kl_divergence(D.Poisson(_t(1.0)), D.Normal(_t(0.0), _t(1.0)))
    p, q = MyNormal(_t(0.0), _t(1.0)), D.Normal(_t(1.0), _t(1.0))
    assert float(D.kl_divergence(p, q)) == pytest.approx(0.5)

    @D.register_kl(MyNormal, D.Normal)
    def _kl_mine(p, q):
        return _t(42.0)

    assert float(D.kl_divergence(p, q)) == 42.0
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


def test_transforms_invert_and_their_jacobians_match_autograd():
    T = D.transforms
    x = _t([[-0.7, 0.2, 1.3]])
    for t in [T.ExpTransform(), T.SigmoidTransform(), T.TanhTransform(),
              T.AffineTransform(_t(1.0), _t(-2.0)), T.PowerTransform(_t(3.0)),
              T.ComposeTransform([T.AffineTransform(0.5, 2.0), T.ExpTransform()])]:
        xi = x.exp() if isinstance(t, T.PowerTransform) else x
        y = t(xi)
        np.testing.assert_allclose(t.inv(y).numpy(), xi.numpy(), rtol=1e-10, err_msg=repr(t))
        xg = xi.clone().requires_grad_()
        (dy,) = jitorch.autograd.grad(t(xg).sum(), xg)  # elementwise: the diagonal
        np.testing.assert_allclose(t.log_abs_det_jacobian(xi, y).numpy(),
                                   np.log(np.abs(dy.numpy())), rtol=1e-8, err_msg=repr(t))
    sb = T.StickBreakingTransform()
    y = sb(x)
    assert tuple(y.shape) == (1, 4) and abs(float(y.sum()) - 1) < 1e-12
    np.testing.assert_allclose(sb.inv(y).numpy(), x.numpy(), rtol=1e-10)
    # the Jacobian of the first K-1 coordinates (the last is 1 minus their sum)
    jac = jitorch.autograd.functional.jacobian(lambda v: sb(v)[..., :-1], x[0])
    np.testing.assert_allclose(float(sb.log_abs_det_jacobian(x, y)[0]),
                               np.log(abs(np.linalg.det(jac.numpy()))), rtol=1e-8)
    assert abs(float(T.SoftmaxTransform()(x).sum()) - 1) < 1e-12
    assert T.ExpTransform().inv.inv == T.ExpTransform()
    for c in [D.constraints.positive, D.constraints.greater_than(2.0),
              D.constraints.less_than(-1.0), D.constraints.interval(-3.0, 5.0),
              D.constraints.unit_interval, D.constraints.simplex, D.constraints.real_vector]:
        for registry in (D.biject_to, D.transform_to):
            assert c.check(registry(c)(x)).all(), (c, registry)
    with pytest.raises(NotImplementedError, match="Cannot transform _Boolean constraints"):
        D.biject_to(D.constraints.boolean)


def test_distribution_api_details():
    d = D.Normal(_t([0.0, 1.0]), _t([1.0, 2.0]))
    assert repr(d) == "Normal(loc: jitorch.Size([2]), scale: jitorch.Size([2]))"
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert tuple(D.Normal(0.0, 1.0).sample((5, 2)).shape) == (5, 2)
    b = D.Bernoulli(logits=_t([0.0, 2.0]))
    assert "probs" not in b.__dict__ and b.probs is b.__dict__["probs"]  # derived lazily
    assert tuple(b.enumerate_support().shape) == (2, 2)
    assert tuple(D.Binomial(3, _t([0.5, 0.2])).enumerate_support().shape) == (4, 2)
    lr = D.LowRankMultivariateNormal(_t([0.0, 1.0]), _t([[1.0], [0.5]]), _t([1.0, 2.0]))
    mvn = D.MultivariateNormal(_t([0.0, 1.0]), lr.covariance_matrix)
    np.testing.assert_allclose(lr.scale_tril.numpy(), mvn.scale_tril.numpy(), rtol=1e-10)
    np.testing.assert_allclose(lr.precision_matrix.numpy(), mvn.precision_matrix.numpy(),
                               rtol=1e-10)
    assert D.Normal.arg_constraints["scale"] is D.constraints.positive
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        perplexity = float(D.Normal(0.0, 1.0).perplexity())
    assert perplexity == pytest.approx(math.sqrt(2 * math.pi * math.e))


def test_constraints_check_events_and_print_as_pytorch():
    C = D.constraints
    m = _t([[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.3], [0.3, -1.0]]])
    cases = [(C.lower_triangular, m, [True, False]), (C.lower_cholesky, m, [True, False]),
             (C.symmetric, m, [False, True]), (C.square, m, [True, True]),
             (C.positive_definite, _t([[2.0, 0.5], [0.5, 1.0]]), True),
             (C.positive_semidefinite, _t([[1.0, 1.0], [1.0, 1.0]]), True),
             (C.corr_cholesky, _t([[1.0, 0.0], [0.6, 0.8]]), True),
             (C.simplex, _t([[0.2, 0.8], [0.5, 0.6]]), [True, False]),
             (C.one_hot, _t([[0.0, 1.0], [1.0, 1.0]]), [True, False]),
             (C.integer_interval(0, 3), _t([0.0, 3.0, 1.5, 4.0]), [True, True, False, False]),
             (C.half_open_interval(0.0, 1.0), _t([0.0, 1.0]), [True, False]),
             (C.cat([C.positive, C.real], 0, [1, 2]), _t([-1.0, -2.0, 3.0]),
              [False, True, True]),
             (C.stack([C.positive, C.real], -1), _t([[1.0, -1.0], [-1.0, 1.0]]),
              [[True, True], [False, True]])]
    for constraint, value, want in cases:
        np.testing.assert_array_equal(constraint.check(value).numpy(), want,
                                      err_msg=repr(constraint))
    assert repr(C.independent(C.positive, 1)) == \
        "IndependentConstraint(GreaterThan(lower_bound=0.0), 1)"
    assert repr(C.half_open_interval(0.0, 1.0)) == \
        "HalfOpenInterval(lower_bound=0.0, upper_bound=1.0)"
    assert repr(C.nonnegative_integer) == "IntegerGreaterThan(lower_bound=0)"
    assert C.is_dependent(D.Uniform.support) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(_t(1.0))
