"""Random numbers: generators and seeding (reproducibility, state round trips), the random
factories and in-place samplers checked by statistics at n = 1e5, dtypes and shapes, and
PyTorch's errors (types and messages taken from PyTorch 2.13).
"""
import math

import numpy as np
import pytest

import jitorch

N = 100_000


@pytest.fixture(autouse=True)
def _seeded():
    jitorch.manual_seed(1234)
    yield


def _np(t):
    return t.numpy().astype(np.float64) if not t.is_complex() else t.numpy()


# --- generators and seeding ----------------------------------------------------------------------
def test_same_seed_same_numbers():
    draws = [
        lambda: jitorch.rand(5),
        lambda: jitorch.randn(2, 3, dtype=jitorch.float64),
        lambda: jitorch.randint(0, 100, (6,)),
        lambda: jitorch.randperm(8),
        lambda: jitorch.normal(0.0, 1.0, (4,)),
        lambda: jitorch.bernoulli(jitorch.full((6,), 0.5)),
        lambda: jitorch.multinomial(jitorch.ones(5), 3),
        lambda: jitorch.poisson(jitorch.full((4,), 3.0)),
        lambda: jitorch.empty(4).uniform_(-1, 1),
        lambda: jitorch.empty(4).normal_(),
        lambda: jitorch.empty(4).exponential_(),
        lambda: jitorch.empty(4, dtype=jitorch.int64).random_(),
        lambda: jitorch.rand_like(jitorch.ones(3)),
        lambda: jitorch.randint_like(jitorch.ones(3), 10),
    ]
    for draw in draws:
        jitorch.manual_seed(7)
        a = draw()
        jitorch.manual_seed(7)
        b = draw()
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a.dtype is b.dtype


def test_different_seeds_differ_and_stream_advances():
    jitorch.manual_seed(1)
    a, b = jitorch.rand(8), jitorch.rand(8)
    jitorch.manual_seed(2)
    c = jitorch.rand(8)
    assert not np.array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), c.numpy())


def test_generator_argument_is_independent_of_default():
    g = jitorch.Generator().manual_seed(5)
    jitorch.manual_seed(0)
    x = jitorch.rand(4, generator=g)
    y = jitorch.rand(4)  # the default stream was not consumed by the draw from g
    jitorch.manual_seed(0)
    np.testing.assert_array_equal(y.numpy(), jitorch.rand(4).numpy())
    g2 = jitorch.Generator().manual_seed(5)
    np.testing.assert_array_equal(x.numpy(), jitorch.rand(4, generator=g2).numpy())


@pytest.mark.parametrize("draw", [
    lambda g: jitorch.randn(3, generator=g),
    lambda g: jitorch.randint(10, (3,), generator=g),
    lambda g: jitorch.randperm(5, generator=g),
    lambda g: jitorch.normal(jitorch.zeros(3), jitorch.ones(3), generator=g),
    lambda g: jitorch.bernoulli(jitorch.full((3,), 0.3), generator=g),
    lambda g: jitorch.multinomial(jitorch.ones(4), 2, generator=g),
    lambda g: jitorch.poisson(jitorch.ones(3), g),
    lambda g: jitorch.empty(3).uniform_(generator=g),
    lambda g: jitorch.empty(3).normal_(generator=g),
    lambda g: jitorch.empty(3).bernoulli_(0.5, generator=g),
    lambda g: jitorch.empty(3).exponential_(generator=g),
    lambda g: jitorch.empty(3).random_(10, generator=g),
    lambda g: jitorch.empty(3).geometric_(0.5, generator=g),
    lambda g: jitorch.empty(3).log_normal_(generator=g),
    lambda g: jitorch.empty(3).cauchy_(generator=g),
])
def test_every_sampler_takes_a_generator(draw):
    a = draw(jitorch.Generator().manual_seed(11))
    b = draw(jitorch.Generator().manual_seed(11))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_fresh_generators_start_from_pytorchs_default_seed():
    g = jitorch.Generator()
    assert g.initial_seed() == 67280421310721
    assert g.device == jitorch.device("cpu")
    np.testing.assert_array_equal(jitorch.rand(3, generator=g).numpy(),
                                  jitorch.rand(3, generator=jitorch.Generator()).numpy())


def test_manual_seed_returns_generator_and_wraps_negative_seeds():
    g = jitorch.manual_seed(3)
    assert g is jitorch.default_generator and jitorch.initial_seed() == 3
    assert jitorch.manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert jitorch.manual_seed(2 ** 64 - 1).initial_seed() == 2 ** 64 - 1
    assert jitorch.manual_seed(1.5).initial_seed() == 1
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        jitorch.manual_seed(2 ** 64)
    with pytest.raises(ValueError):
        jitorch.manual_seed("a")
    h = jitorch.Generator()
    assert h.manual_seed(9) is h and h.initial_seed() == 9


def test_seed_is_nondeterministic_and_recorded():
    s = jitorch.seed()
    assert isinstance(s, int) and 0 <= s < 2 ** 64
    assert jitorch.initial_seed() == s
    g = jitorch.Generator()
    assert g.seed() == g.initial_seed()


def test_state_round_trip():
    g = jitorch.Generator().manual_seed(42)
    jitorch.rand(3, generator=g)
    state = g.get_state()
    assert state.dtype is jitorch.uint8 and state.dim() == 1
    a = jitorch.randn(5, generator=g)
    g.set_state(state)
    np.testing.assert_array_equal(a.numpy(), jitorch.randn(5, generator=g).numpy())
    assert g.initial_seed() == 42
    # a state moves between generators
    h = jitorch.Generator().set_state(state)
    np.testing.assert_array_equal(a.numpy(), jitorch.randn(5, generator=h).numpy())
    # get_state returns a copy: drawing more leaves it unchanged
    snapshot = state.numpy().copy()
    jitorch.rand(3, generator=g)
    np.testing.assert_array_equal(state.numpy(), snapshot)


def test_default_rng_state_round_trip():
    st = jitorch.get_rng_state()
    a = jitorch.rand(4)
    jitorch.set_rng_state(st)
    np.testing.assert_array_equal(a.numpy(), jitorch.rand(4).numpy())


def test_fork_rng_restores_default_state():
    from jitorch._random import fork_rng
    st = jitorch.get_rng_state()
    with fork_rng():
        jitorch.rand(10)
    np.testing.assert_array_equal(st.numpy(), jitorch.get_rng_state().numpy())


def test_state_errors():
    g = jitorch.Generator()
    with pytest.raises(RuntimeError, match="but found the input RNG state size to be 3"):
        g.set_state(jitorch.zeros(3, dtype=jitorch.uint8))
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        g.set_state(jitorch.zeros(3))
    with pytest.raises(TypeError, match="expected a torch.ByteTensor, but got list"):
        g.set_state([1])
    with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
        jitorch.set_rng_state(jitorch.zeros(3))
    with pytest.raises(TypeError, match="generator"):
        jitorch.rand(2, generator=3)


# --- factories: statistics, dtypes, shapes ------------------------------------------------------
def test_rand_uniform_statistics_and_range():
    x = jitorch.rand(N)
    assert x.dtype is jitorch.float32 and x.shape == (N,)
    a = _np(x)
    assert a.min() >= 0.0 and a.max() < 1.0
    assert abs(a.mean() - 0.5) < 0.01 and abs(a.std() - 1 / math.sqrt(12)) < 0.01


@pytest.mark.parametrize("d", [jitorch.float16, jitorch.bfloat16, jitorch.float64],
                         ids=lambda d: d.name)
def test_rand_half_open_in_every_dtype(d):
    x = jitorch.rand(N, dtype=d)
    assert x.dtype is d and x._data.dtype == d.np
    a = _np(x)
    assert a.min() >= 0.0 and a.max() < 1.0 and abs(a.mean() - 0.5) < 0.01


def test_rand_and_randn_size_forms():
    assert jitorch.rand(2, 3).shape == (2, 3)
    assert jitorch.rand((2, 3)).shape == (2, 3)
    assert jitorch.rand([2, 3]).shape == (2, 3)
    assert jitorch.rand(size=(4,)).shape == (4,)
    assert jitorch.randn(()).shape == ()
    assert jitorch.randn(0, 3).shape == (0, 3)
    assert jitorch.randn(2, dtype=jitorch.float64).dtype is jitorch.float64
    t = jitorch.rand(3, requires_grad=True)
    assert t.requires_grad and t.is_leaf


def test_randn_statistics():
    a = _np(jitorch.randn(N))
    assert abs(a.mean()) < 0.02 and abs(a.std() - 1) < 0.02


def test_complex_rand_and_randn():
    u = jitorch.rand(N, dtype=jitorch.complex64)
    assert u.dtype is jitorch.complex64
    a = u.numpy()
    for part in (a.real, a.imag):
        assert part.min() >= 0 and part.max() < 1 and abs(part.mean() - 0.5) < 0.01
    z = jitorch.randn(N, dtype=jitorch.complex128).numpy()
    # unit total variance: each part has variance 1/2
    assert abs(z.real.var() - 0.5) < 0.02 and abs(z.imag.var() - 0.5) < 0.02
    assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.02


def test_like_factories():
    base = jitorch.ones(3, 4, dtype=jitorch.float64)
    r = jitorch.rand_like(base)
    assert r.shape == (3, 4) and r.dtype is jitorch.float64
    n = jitorch.randn_like(base, dtype=jitorch.float32)
    assert n.shape == (3, 4) and n.dtype is jitorch.float32
    i = jitorch.randint_like(jitorch.ones(N, dtype=jitorch.int32), 3, 7)
    assert i.dtype is jitorch.int32 and set(np.unique(i.numpy())) == {3, 4, 5, 6}
    f = jitorch.randint_like(jitorch.ones(4), 5)
    assert f.dtype is jitorch.float32 and f.numpy().min() >= 0 and f.numpy().max() <= 4
    assert jitorch.randint_like(jitorch.ones(4), high=5).numpy().max() <= 4
    assert jitorch.randint_like(jitorch.ones(4), low=1, high=2).tolist() == [1.0] * 4


def test_randint_range_dtype_and_uniformity():
    x = jitorch.randint(2, 7, (N,))
    assert x.dtype is jitorch.int64 and x.shape == (N,)
    counts = np.bincount(x.numpy(), minlength=7)[2:]
    assert counts.sum() == N and np.all(np.abs(counts / N - 0.2) < 0.01)
    assert jitorch.randint(5, (2, 3)).shape == (2, 3)
    assert jitorch.randint(high=5, size=(3,)).numpy().max() < 5
    assert jitorch.randint(low=2, high=3, size=(3,)).tolist() == [2, 2, 2]
    f = jitorch.randint(5, (3,), dtype=jitorch.float32)
    assert f.dtype is jitorch.float32
    assert jitorch.randint(-5, 0, (100,), dtype=jitorch.int8).numpy().max() < 0
    big = jitorch.randint(0, 2 ** 62, (1000,))
    assert big.numpy().max() > 2 ** 55


def test_randperm_is_a_permutation():
    p = jitorch.randperm(1000)
    assert p.dtype is jitorch.int64
    assert sorted(p.tolist()) == list(range(1000)) and p.tolist() != list(range(1000))
    assert jitorch.randperm(0).shape == (0,)
    assert jitorch.randperm(5, dtype=jitorch.float32).dtype is jitorch.float32
    assert sorted(jitorch.randperm(256, dtype=jitorch.uint8).tolist()) == list(range(256))


def test_normal_overloads():
    m = jitorch.full((N,), 3.0)
    x = jitorch.normal(m, 2.0)
    assert x.shape == (N,) and x.dtype is jitorch.float32
    a = _np(x)
    assert abs(a.mean() - 3) < 0.05 and abs(a.std() - 2) < 0.05
    y = _np(jitorch.normal(-1.0, jitorch.full((N,), 0.5, dtype=jitorch.float64)))
    assert abs(y.mean() + 1) < 0.02 and abs(y.std() - 0.5) < 0.02
    z = jitorch.normal(jitorch.zeros(2, 1), jitorch.ones(3))
    assert z.shape == (2, 3)
    w = jitorch.normal(5.0, 0.5, (N,))
    assert w.dtype is jitorch.float32 and abs(_np(w).mean() - 5) < 0.01
    assert jitorch.normal(0, 1, size=(2,), dtype=jitorch.float64).dtype is jitorch.float64
    assert jitorch.normal(mean=jitorch.zeros(2), std=jitorch.ones(2)).shape == (2,)
    # the dtype comes from mean when it is a tensor, else from std
    assert jitorch.normal(jitorch.zeros(2), jitorch.ones(2, dtype=jitorch.float64)).dtype \
        is jitorch.float32
    assert jitorch.normal(1.0, jitorch.ones(2, dtype=jitorch.float64)).dtype is jitorch.float64
    assert jitorch.normal(jitorch.zeros(2, dtype=jitorch.float16), 1.0).dtype is jitorch.float16
    # zero std gives the mean exactly
    assert jitorch.normal(jitorch.tensor([1.5, -2.0]), 0.0).tolist() == [1.5, -2.0]


def test_bernoulli_forms():
    p = jitorch.full((N,), 0.3, dtype=jitorch.float64)
    b = jitorch.bernoulli(p)
    assert b.dtype is jitorch.float64 and set(np.unique(b.numpy())) <= {0.0, 1.0}
    assert abs(b.numpy().mean() - 0.3) < 0.01
    assert jitorch.bernoulli(jitorch.tensor([0.0, 1.0])).tolist() == [0.0, 1.0]
    c = jitorch.bernoulli(jitorch.zeros(N, dtype=jitorch.int64), 0.75)
    assert c.dtype is jitorch.int64 and abs(c.numpy().mean() - 0.75) < 0.01
    assert jitorch.bernoulli(jitorch.zeros(3, dtype=jitorch.bool), p=1.0).tolist() == [True] * 3
    assert jitorch.full((3,), 0.5).bernoulli().shape == (3,)


def test_multinomial():
    probs = jitorch.tensor([0.1, 0.2, 0.7])
    s = jitorch.multinomial(probs, N, replacement=True)
    assert s.dtype is jitorch.int64 and s.shape == (N,)
    freq = np.bincount(s.numpy(), minlength=3) / N
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.01)
    # unnormalised weights and 2-D input
    rows = jitorch.multinomial(jitorch.tensor([[1.0, 3.0], [0.0, 5.0]]), 2000, True)
    assert rows.shape == (2, 2000)
    assert abs(rows.numpy()[0].mean() - 0.75) < 0.05 and rows.numpy()[1].min() == 1
    # without replacement: distinct indices, zero-probability ones last
    for _ in range(20):
        k = jitorch.multinomial(jitorch.tensor([1.0, 0.0, 2.0, 0.0, 3.0]), 3)
        assert sorted(k.tolist()) == [0, 2, 4]
    first = [jitorch.multinomial(jitorch.tensor([1.0, 9.0]), 2).tolist()[0]
             for _ in range(2000)]
    assert abs(np.mean(first) - 0.9) < 0.03  # sequential sampling without replacement
    assert probs.multinomial(2).shape == (2,)


def test_poisson():
    r = jitorch.full((N,), 4.0)
    x = jitorch.poisson(r)
    assert x.dtype is jitorch.float32
    a = _np(x)
    assert np.all(a == np.round(a)) and abs(a.mean() - 4) < 0.05 and abs(a.var() - 4) < 0.1
    assert jitorch.poisson(jitorch.zeros(3)).tolist() == [0.0] * 3
    assert jitorch.poisson(jitorch.ones(2, dtype=jitorch.float64)).dtype is jitorch.float64


# --- in-place samplers ---------------------------------------------------------------------------
def test_uniform_():
    t = jitorch.empty(N)
    assert t.uniform_(2, 5) is t
    a = _np(t)
    assert a.min() >= 2 and a.max() < 5 and abs(a.mean() - 3.5) < 0.02
    c = jitorch.zeros(4, dtype=jitorch.complex64).uniform_(1, 2).numpy()
    assert np.all((c.real >= 1) & (c.real < 2) & (c.imag >= 1) & (c.imag < 2))
    assert jitorch.zeros(3).uniform_(jitorch.tensor(1.0), 2).numpy().min() >= 1


def test_normal_():
    a = _np(jitorch.empty(N, dtype=jitorch.float64).normal_(1.0, 3.0))
    assert abs(a.mean() - 1) < 0.05 and abs(a.std() - 3) < 0.05
    h = jitorch.empty(10, dtype=jitorch.float16).normal_()
    assert h.dtype is jitorch.float16


def test_bernoulli_():
    t = jitorch.empty(N, dtype=jitorch.int64).bernoulli_(0.25)
    assert t.dtype is jitorch.int64 and abs(t.numpy().mean() - 0.25) < 0.01
    p = jitorch.tensor([0.0, 1.0, 1.0])
    assert jitorch.zeros(3).bernoulli_(p).tolist() == [0.0, 1.0, 1.0]
    assert jitorch.zeros(2, 3).bernoulli_(p).tolist() == [[0.0, 1.0, 1.0]] * 2  # broadcast
    assert jitorch.zeros(3).bernoulli_(jitorch.tensor(1.0)).tolist() == [1.0] * 3
    assert jitorch.zeros(3, dtype=jitorch.bool).bernoulli_(1.0).tolist() == [True] * 3


def test_exponential_geometric_log_normal_cauchy():
    e = _np(jitorch.empty(N).exponential_(2.0))
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01
    assert jitorch.empty(3).exponential_(lambd=2.0).shape == (3,)
    g = _np(jitorch.empty(N).geometric_(0.25))
    assert g.min() >= 1 and np.all(g == np.round(g)) and abs(g.mean() - 4) < 0.1
    gi = jitorch.empty(5, dtype=jitorch.int64).geometric_(0.5)
    assert gi.dtype is jitorch.int64 and gi.numpy().min() >= 1
    ln = _np(jitorch.empty(N, dtype=jitorch.float64).log_normal_(0.5, 0.25))
    assert ln.min() > 0 and abs(np.log(ln).mean() - 0.5) < 0.01
    assert abs(np.log(ln).std() - 0.25) < 0.01
    c = _np(jitorch.empty(N, dtype=jitorch.float64).cauchy_(2.0, 0.5))
    assert abs(np.median(c) - 2) < 0.02
    q = np.percentile(c, [25, 75])
    np.testing.assert_allclose(q, [1.5, 2.5], atol=0.03)  # quartiles at median -/+ sigma


@pytest.mark.parametrize("d,lo,hi", [
    (jitorch.bool, 0, 1), (jitorch.uint8, 0, 255), (jitorch.int8, 0, 127),
    (jitorch.int16, 0, 32767), (jitorch.int32, 0, 2 ** 31 - 1), (jitorch.float16, 0, 2 ** 11),
    (jitorch.bfloat16, 0, 2 ** 8), (jitorch.float32, 0, 2 ** 24),
], ids=lambda x: getattr(x, "name", str(x)))
def test_random_default_range(d, lo, hi):
    a = _np(jitorch.empty(N, dtype=d).random_())
    assert a.min() >= lo and a.max() <= hi and np.all(a == np.round(a))
    assert a.max() > lo + (hi - lo) * 0.9  # spans the range


def test_random_to_and_from_to():
    a = jitorch.empty(N).random_(5).numpy()
    assert set(np.unique(a)) == {0.0, 1.0, 2.0, 3.0, 4.0}
    b = jitorch.empty(N, dtype=jitorch.int64).random_(-3, 2).numpy()
    assert set(np.unique(b)) == {-3, -2, -1, 0, 1}
    big = jitorch.empty(100, dtype=jitorch.int64).random_().numpy()
    assert big.min() >= 0 and big.max() > 2 ** 60


def test_inplace_samplers_bump_version_and_write_through_views():
    base = jitorch.zeros(4, 5)
    v = base.transpose(0, 1)
    before = base._version[0]
    v.uniform_(1, 2)
    assert base._version[0] > before
    assert base.numpy().min() >= 1  # the view shares storage with base


def test_inplace_samplers_respect_autograd_rules():
    w = jitorch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        w.uniform_()
    with jitorch.no_grad():  # how nn.init fills parameters
        w.normal_()
        w.uniform_(-1, 1)
    assert w.requires_grad and w.is_leaf and w.grad_fn is None
    x = jitorch.ones(3, requires_grad=True)
    y = x * 2
    y.exponential_()
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]  # overwritten values carry no gradient


# --- errors (PyTorch's types and messages) ------------------------------------------------------
ERRORS = [
    (lambda: jitorch.rand(2, dtype=jitorch.int64), NotImplementedError,
     '"check_uniform_bounds" not implemented for \'Long\''),
    (lambda: jitorch.rand_like(jitorch.ones(2, dtype=jitorch.int64)), NotImplementedError,
     '"check_uniform_bounds" not implemented for \'Long\''),
    (lambda: jitorch.randn(2, dtype=jitorch.int32), NotImplementedError,
     '"normal_kernel_cpu" not implemented for \'Int\''),
    (lambda: jitorch.rand(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda: jitorch.randn(2, -1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [2, -1]"),
    (lambda: jitorch.randint(5, (-1,)), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda: jitorch.randint(5, 5, (3,)), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    (lambda: jitorch.randint(5, 3), TypeError,
     "randint(): argument 'size' (position 2) must be tuple of ints, not int"),
    (lambda: jitorch.randint(3, (2,), dtype=jitorch.bool), RuntimeError,
     "to - 1 is out of bounds for bool"),
    (lambda: jitorch.randint(0, 300, (3,), dtype=jitorch.uint8), RuntimeError,
     "to - 1 is out of bounds for unsigned char"),
    (lambda: jitorch.randint(-1, 3, (3,), dtype=jitorch.uint8), RuntimeError,
     "from is out of bounds for unsigned char"),
    (lambda: jitorch.randint(5.5, (3,)), TypeError,
     "randint(): argument 'high' (position 1) must be int, not float"),
    (lambda: jitorch.randint(0, 2 ** 63, (2,)), ValueError, "Overflow when unpacking long long"),
    (lambda: jitorch.randperm(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda: jitorch.randperm(300, dtype=jitorch.uint8), RuntimeError,
     "value cannot be converted to type uint8_t without overflow"),
    (lambda: jitorch.randperm(5, dtype=jitorch.bool), NotImplementedError,
     '"randperm" not implemented for \'Bool\''),
    (lambda: jitorch.randperm(2.5), TypeError,
     "randperm(): argument 'n' (position 1) must be int, not float"),
    (lambda: jitorch.normal(0.0, -1.0, (2,)), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    (lambda: jitorch.normal(jitorch.zeros(2), -1.0), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    (lambda: jitorch.normal(jitorch.zeros(2), jitorch.tensor([1.0, -1.0])), RuntimeError,
     "normal expects all elements of std >= 0.0"),
    (lambda: jitorch.normal(0.0, 1.0), TypeError, None),
    (lambda: jitorch.normal(jitorch.zeros(2), 1.0, (3,)), TypeError, None),
    (lambda: jitorch.normal(jitorch.zeros(2, dtype=jitorch.int64), 1.0), NotImplementedError,
     '"normal_kernel_cpu" not implemented for \'Long\''),
    (lambda: jitorch.normal(jitorch.zeros(3), jitorch.ones(2)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton "
     "dimension 0"),
    (lambda: jitorch.bernoulli(jitorch.full((3,), 1.5)), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
     "be improved?  If so, please report an enhancement request to PyTorch.)"),
    (lambda: jitorch.bernoulli(jitorch.tensor([float("nan")])), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false."),
    (lambda: jitorch.bernoulli(jitorch.zeros(3), p=2.0), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=2"),
    (lambda: jitorch.bernoulli(jitorch.ones(3, dtype=jitorch.int64)), NotImplementedError,
     '"bernoulli_tensor_cpu_p_" not implemented for \'Long\''),
    (lambda: jitorch.multinomial(jitorch.tensor([0.2, 0.8]), 3), RuntimeError,
     "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    (lambda: jitorch.multinomial(jitorch.tensor([0.2, -0.8]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: jitorch.multinomial(jitorch.tensor([1.0, float("inf")]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: jitorch.multinomial(jitorch.tensor([1.0, float("nan")]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda: jitorch.multinomial(jitorch.tensor([0.0, 0.0]), 1), RuntimeError,
     "invalid multinomial distribution (sum of probabilities <= 0)"),
    (lambda: jitorch.multinomial(jitorch.ones(2, 3, 4), 2), RuntimeError,
     "prob_dist must be 1 or 2 dim"),
    (lambda: jitorch.multinomial(jitorch.tensor(1.0), 1), RuntimeError,
     "prob_dist must be 1 or 2 dim"),
    (lambda: jitorch.multinomial(jitorch.ones(3), 0), RuntimeError,
     "cannot sample n_sample <= 0 samples"),
    (lambda: jitorch.multinomial(jitorch.ones(3, dtype=jitorch.int64), 1), RuntimeError,
     "multinomial only supports floating-point dtypes for input, got: Long"),
    (lambda: jitorch.poisson(jitorch.tensor([-1.0])), RuntimeError,
     "invalid Poisson rate, expected rate to be non-negative"),
    (lambda: jitorch.poisson(jitorch.tensor([1, 2])), NotImplementedError,
     '"poisson_cpu" not implemented for \'Long\''),
    (lambda: jitorch.zeros(3, dtype=jitorch.int64).uniform_(), NotImplementedError,
     '"check_uniform_bounds" not implemented for \'Long\''),
    (lambda: jitorch.zeros(3).uniform_(3, 2), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=3 > to=2"),
    (lambda: jitorch.zeros(3).normal_(0, -1), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    (lambda: jitorch.zeros(3, dtype=jitorch.int64).normal_(), NotImplementedError,
     '"normal_kernel_cpu" not implemented for \'Long\''),
    (lambda: jitorch.zeros(3).bernoulli_(1.5), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    (lambda: jitorch.zeros(3).bernoulli_(jitorch.tensor([0.0, 1.0])), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
     "dimension 0.  Target sizes: [3].  Tensor sizes: [2]"),
    (lambda: jitorch.zeros(3).exponential_(-1), RuntimeError,
     "exponential_ expects lambda > 0.0, but found lambda=-1"),
    (lambda: jitorch.zeros(3).exponential_(0), RuntimeError,
     "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda: jitorch.zeros(3, dtype=jitorch.int64).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a "
     "floating point but you specified Long"),
    (lambda: jitorch.zeros(3).random_(5, 2), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    (lambda: jitorch.zeros(3, dtype=jitorch.uint8).random_(300), RuntimeError,
     "to - 1 is out of bounds for unsigned char"),
    (lambda: jitorch.zeros(3, dtype=jitorch.bool).random_(2, 5), RuntimeError,
     "from is out of bounds for bool"),
    (lambda: jitorch.zeros(3, dtype=jitorch.int8).random_(-2 ** 40, 5), RuntimeError,
     "from is out of bounds for signed char"),
    (lambda: jitorch.zeros(3, dtype=jitorch.int16).random_(-2 ** 40, 5), RuntimeError,
     "from is out of bounds for short int"),
    (lambda: jitorch.zeros(3, dtype=jitorch.float16).random_(-2 ** 40, 5), RuntimeError,
     "from is out of bounds for c10::Half"),
    (lambda: jitorch.zeros(3).geometric_(0), RuntimeError,
     "geometric_ expects p to be in (0, 1), but got p=0"),
    (lambda: jitorch.zeros(3).geometric_(1.5), RuntimeError,
     "geometric_ expects p to be in (0, 1), but got p=1.5"),
    (lambda: jitorch.zeros(3).log_normal_(1, -1), RuntimeError,
     "log_normal_ expects std > 0.0, but found std=-1"),
    (lambda: jitorch.zeros(3, dtype=jitorch.int64).log_normal_(), NotImplementedError,
     '"log_normal_cpu" not implemented for \'Long\''),
    (lambda: jitorch.zeros(3).cauchy_(0, -1), RuntimeError,
     "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    (lambda: jitorch.zeros(3, dtype=jitorch.int64).cauchy_(0, 1), RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a floating "
     "point but you specified long int"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_match_pytorch(call, exc, msg):
    with pytest.raises(exc) as info:
        call()
    if msg is not None:
        assert str(info.value).startswith(msg)


def test_inplace_samplers_refuse_expanded_tensors():
    t = jitorch.zeros(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        t.uniform_()
