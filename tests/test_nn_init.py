"""jitorch.nn.init: exact values for the deterministic initialisers, statistics for the random
ones, and PyTorch 2.13's errors and warnings (expected strings produced by PyTorch)."""
import math
import re
import warnings

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from jitorch.nn import init as I


def raises(exc, msg):
    return pytest.raises(exc, match="^" + re.escape(msg) + "$")


def arr(t):
    return t.numpy(force=True)


def test_calculate_gain():
    assert I.calculate_gain("linear") == 1 and I.calculate_gain("conv2d") == 1
    assert I.calculate_gain("sigmoid") == 1
    assert I.calculate_gain("tanh") == 1.6666666666666667
    assert I.calculate_gain("relu") == 1.4142135623730951
    assert I.calculate_gain("leaky_relu") == 1.4141428569978354
    assert I.calculate_gain("selu") == 0.75
    assert I.calculate_gain("leaky_relu", 0.2) == 1.3867504905630728
    assert I.calculate_gain("leaky_relu", 1) == 1.0
    with raises(ValueError, "negative_slope True not a valid number"):
        I.calculate_gain("leaky_relu", True)
    with raises(ValueError, "Unsupported nonlinearity foo"):
        I.calculate_gain("foo")


def test_fans_and_errors():
    assert I._calculate_fan_in_and_fan_out(jitorch.empty(3, 4, 5, 6)) == (120, 90)
    msg = "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
    with raises(ValueError, msg):
        I._calculate_fan_in_and_fan_out(jitorch.empty(3))
    with raises(ValueError, msg):
        I.xavier_uniform_(jitorch.empty(2))
    with raises(ValueError, "Mode fan_avg not supported, please use one of ['fan_in', "
                            "'fan_out']"):
        I.kaiming_uniform_(jitorch.empty(3, 4), mode="fan_avg")
    for fn, shape in ((I.kaiming_uniform_, (0, 4)), (I.kaiming_normal_, (3, 0))):
        t = jitorch.empty(*shape)
        with pytest.warns(UserWarning, match="^Initializing zero-element tensors is a no-op$"):
            assert fn(t) is t
    with raises(ValueError, "Only tensors with 2 dimensions are supported"):
        I.eye_(jitorch.empty(2))
    with raises(ValueError, "Only tensors with 3, 4, or 5 dimensions are supported"):
        I.dirac_(jitorch.empty(3, 2))
    with raises(ValueError, "dim 0 must be divisible by groups"):
        I.dirac_(jitorch.empty(3, 2, 2), groups=2)
    with raises(ValueError, "Only tensors with 2 or more dimensions are supported"):
        I.orthogonal_(jitorch.empty(3))
    with raises(ValueError, "Only tensors with 2 dimensions are supported"):
        I.sparse_(jitorch.empty(3), 0.1)
    with pytest.warns(UserWarning, match=re.escape(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of "
            "values may be incorrect.")):
        out = I.trunc_normal_(jitorch.empty(50), mean=10.0)
    assert arr(out).min() >= -2.0 and arr(out).max() <= 2.0
    with pytest.warns(FutureWarning, match=re.escape(
            "`nn.init.uniform` is now deprecated in favor of `nn.init.uniform_`.")):
        assert I.uniform(jitorch.empty(1), 0.0, 0.0).tolist() == [0.0]


def test_deterministic_initialisers():
    assert I.eye_(jitorch.empty(2, 3)).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert I.dirac_(jitorch.empty(2, 2, 3)).tolist() == [[[0, 1, 0], [0, 0, 0]],
                                                          [[0, 0, 0], [0, 1, 0]]]
    d = I.dirac_(jitorch.empty(4, 2, 3, 3), groups=2)
    assert d[:, :, 1, 1].tolist() == [[1, 0], [0, 1], [1, 0], [0, 1]]
    assert d.sum().item() == 4
    assert I.dirac_(jitorch.empty(2, 2, 3, 3, 3))[1, 1, 1, 1, 1].item() == 1
    assert I.constant_(jitorch.empty(2), 3.5).tolist() == [3.5, 3.5]
    assert I.ones_(jitorch.empty(2)).tolist() == [1, 1]
    assert I.zeros_(jitorch.ones(2)).tolist() == [0, 0]
    # on a parameter: in place, under no_grad (still a leaf, no grad_fn)
    p = nn.Parameter(jitorch.ones(3))
    assert I.normal_(p) is p
    assert p.requires_grad and p.grad_fn is None and p.is_leaf
    I.eye_(nn.Parameter(jitorch.empty(2, 2)))


def test_uniform_normal_and_generator():
    x = jitorch.empty(200, 300)
    g = jitorch.Generator().manual_seed(0)
    a = arr(I.uniform_(x, -2, 3, generator=g))
    assert a.min() >= -2 and a.max() < 3 and abs(a.mean() - 0.5) < 0.03
    a = arr(I.normal_(x, 1, 2))
    assert abs(a.mean() - 1) < 0.03 and abs(a.std() - 2) < 0.03
    r1 = arr(I.normal_(jitorch.empty(4), generator=jitorch.Generator().manual_seed(3))).copy()
    r2 = arr(I.normal_(jitorch.empty(4), generator=jitorch.Generator().manual_seed(3)))
    assert np.array_equal(r1, r2)
    r1 = arr(I.kaiming_uniform_(jitorch.empty(3, 4),
                                generator=jitorch.Generator().manual_seed(5))).copy()
    r2 = arr(I.kaiming_uniform_(jitorch.empty(3, 4),
                                generator=jitorch.Generator().manual_seed(5)))
    assert np.array_equal(r1, r2)


def test_trunc_normal():
    x = jitorch.empty(200, 300)
    a = arr(I.trunc_normal_(x, 0, 1, -1, 1.5))
    # mean of N(0,1) truncated to [-1, 1.5]: (phi(-1) - phi(1.5)) / (Phi(1.5) - Phi(-1))
    assert a.min() >= -1 and a.max() <= 1.5 and abs(a.mean() - 0.1452) < 0.01
    a = arr(I.trunc_normal_(x, 0, 1, 2, 2.5))  # narrow window: the uniform-proposal sampler
    phi = lambda v: math.exp(-v * v / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda v: (1 + math.erf(v / math.sqrt(2))) / 2  # noqa: E731
    expect = (phi(2) - phi(2.5)) / (cdf(2.5) - cdf(2))
    assert a.min() >= 2 and a.max() <= 2.5 and abs(a.mean() - expect) < 0.01
    a = arr(I.trunc_normal_(jitorch.empty(20000), mean=3.0, std=0.5, a=2.0, b=4.0))
    assert a.min() >= 2 and a.max() <= 4 and abs(a.mean() - 3.0) < 0.02


def test_xavier_kaiming_statistics():
    x = jitorch.empty(200, 300)
    a = arr(I.xavier_uniform_(x, gain=2))
    bound = 2 * math.sqrt(6 / 500)
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.99 * bound
    a = arr(I.xavier_normal_(x))
    assert abs(a.std() - math.sqrt(2 / 500)) < 0.002 and abs(a.mean()) < 0.002
    a = arr(I.kaiming_uniform_(x, a=math.sqrt(5)))
    assert np.abs(a).max() <= 1 / math.sqrt(300) and np.abs(a).max() > 0.99 / math.sqrt(300)
    a = arr(I.kaiming_normal_(x, mode="fan_out", nonlinearity="relu"))
    assert abs(a.std() - math.sqrt(2 / 200)) < 0.003
    a = arr(I.kaiming_normal_(jitorch.empty(64, 16, 3, 3)))  # fan_in = 16 * 9
    assert abs(a.std() - I.calculate_gain("leaky_relu") / 12) < 0.005


def test_orthogonal_and_sparse():
    w = I.orthogonal_(jitorch.empty(3, 5), gain=2)  # rows < cols: orthonormal rows
    assert np.allclose(arr(w) @ arr(w).T, 4 * np.eye(3), atol=1e-5)
    w = I.orthogonal_(jitorch.empty(6, 2, 2)).reshape(6, 4)  # trailing dims flattened
    assert np.allclose(arr(w).T @ arr(w), np.eye(4), atol=1e-5)
    w = I.orthogonal_(jitorch.empty(4, 4, dtype=jitorch.float64))
    assert np.allclose(arr(w).T @ arr(w), np.eye(4), atol=1e-12)
    s = arr(I.sparse_(jitorch.empty(10, 6), 0.3, std=2.0))
    assert ((s == 0).sum(0) == 3).all()  # ceil(0.3 * 10) zeros per column
    big = arr(I.sparse_(jitorch.empty(1000, 4), 0.5, std=2.0))
    assert abs(big[big != 0].std() - 2.0) < 0.15


def test_no_warning_for_regular_init():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.Linear(3, 2)
        I.kaiming_normal_(jitorch.empty(3, 2))
