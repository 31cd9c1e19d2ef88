"""Random numbers as PyTorch's: after `manual_seed(s)` jitorch draws PyTorch's numbers bit for
bit (the cases and PyTorch 2.13's values are in tests/random_refs.json, recorded by
tests/gen_random_refs.py: first values exactly and a SHA-256 of every byte), `Generator`
objects and `generator=` arguments, `jitorch.random` (`fork_rng`, states), and PyTorch's errors
for a bad state.
"""
import hashlib
import json
import math
import os

import numpy as np
import pytest

import jitorch

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "random_refs.json")) as _f:
    REFS = json.load(_f)
EXACT = [name for name, case in REFS["cases"].items() if case["exact"]]


def _draw(expr, seed):
    jitorch.manual_seed(seed)
    env = {"T": jitorch, "math": math, "nn": jitorch.nn, "F": jitorch.nn.functional}
    v = eval(expr, env)
    return v if isinstance(v, tuple) else (v,)


def _bytes(t):
    a = t.view(jitorch.int16).numpy() if t.dtype is jitorch.bfloat16 else t.numpy()
    return np.ascontiguousarray(a)


@pytest.mark.parametrize("name", EXACT)
def test_draws_are_pytorchs(name):
    case = REFS["cases"][name]
    for seed, rec in case["by_seed"].items():
        parts = _draw(case["expr"], int(seed))
        assert len(parts) == len(rec["parts"])
        digest = hashlib.sha256()
        for t, want in zip(parts, rec["parts"]):
            assert str(t.dtype).replace("jitorch.", "") == want["dtype"]
            assert list(t.shape) == want["shape"]
            a = _bytes(t)
            flat = a.ravel()[:len(want["head"])]
            if a.dtype.kind == "c":
                got = [[float(z.real).hex(), float(z.imag).hex()] for z in flat]
            elif a.dtype.kind == "f":
                got = [float(x).hex() for x in flat]
            else:
                got = [int(x) for x in flat]
            assert got == want["head"], (name, seed)
            digest.update(a.tobytes())
        assert digest.hexdigest() == rec["sha256"], (name, seed)


# --- Generator objects ---------------------------------------------------------------------------
def test_generator_api():
    g = jitorch.Generator(device="cpu")
    assert str(g.device) == "cpu"
    assert g.initial_seed() == 67280421310721  # PyTorch's default seed
    assert g.manual_seed(5) is g and g.initial_seed() == 5
    assert g.manual_seed(-1).initial_seed() == 2 ** 64 - 1  # wraps, as PyTorch
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        g.manual_seed(2 ** 64)
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2 ** 64
    st = g.get_state()
    assert st.dtype is jitorch.uint8 and st.shape == (5056,)
    assert jitorch.default_generator is jitorch.random.default_generator
    for name in ("fork_rng", "get_rng_state", "set_rng_state", "manual_seed", "seed",
                 "initial_seed"):
        assert callable(getattr(jitorch.random, name))
    for name in ("get_rng_state", "set_rng_state", "initial_seed", "seed", "manual_seed"):
        assert getattr(jitorch, name) is getattr(jitorch.random, name)
    jitorch.manual_seed(9)
    assert jitorch.initial_seed() == 9 == jitorch.default_generator.initial_seed()


# every sampler taking generator=: seeded alike, a generator draws what the default one does
_WITH_GEN = [
    lambda g: jitorch.rand(20, generator=g),
    lambda g: jitorch.randn(20, generator=g),
    lambda g: jitorch.randint(0, 9, (20,), generator=g),
    lambda g: jitorch.randperm(20, generator=g),
    lambda g: jitorch.normal(0.0, 2.0, (20,), generator=g),
    lambda g: jitorch.normal(jitorch.zeros(20), 2.0, generator=g),
    lambda g: jitorch.bernoulli(jitorch.full((20,), 0.5), generator=g),
    lambda g: jitorch.multinomial(jitorch.ones(4, 6), 3, generator=g),
    lambda g: jitorch.rand_like(jitorch.zeros(20), generator=g),
    lambda g: jitorch.randn_like(jitorch.zeros(20), generator=g),
    lambda g: jitorch.randint_like(jitorch.zeros(20), 7, generator=g),
    lambda g: jitorch.empty(20).normal_(1.0, 2.0, generator=g),
    lambda g: jitorch.empty(20).uniform_(-1.0, 1.0, generator=g),
    lambda g: jitorch.empty(20, dtype=jitorch.int64).random_(generator=g),
    lambda g: jitorch.empty(20).exponential_(generator=g),
    lambda g: jitorch.empty(20).bernoulli_(0.3, generator=g),
    lambda g: jitorch.empty(20).geometric_(0.3, generator=g),
    lambda g: jitorch.empty(20).cauchy_(generator=g),
    lambda g: jitorch.empty(20).log_normal_(generator=g),
]


def test_generator_argument_is_an_independent_stream():
    for draw in _WITH_GEN:
        g = jitorch.Generator().manual_seed(123)
        jitorch.manual_seed(7)
        before = jitorch.get_rng_state()
        a = draw(g)
        assert np.array_equal(jitorch.get_rng_state().numpy(), before.numpy())  # untouched
        jitorch.manual_seed(123)
        np.testing.assert_array_equal(a.numpy(), draw(None).numpy())
        b = draw(g)  # g advanced
        assert not np.array_equal(a.numpy(), b.numpy())


def test_two_generators_do_not_share_a_stream():
    g1, g2 = jitorch.Generator().manual_seed(1), jitorch.Generator().manual_seed(1)
    a = jitorch.rand(5, generator=g1)
    jitorch.rand(5, generator=g1)
    np.testing.assert_array_equal(a.numpy(), jitorch.rand(5, generator=g2).numpy())


def test_state_round_trip_keeps_the_normal_cache():
    g = jitorch.Generator().manual_seed(3)
    jitorch.randn(3, dtype=jitorch.float64, generator=g)  # odd count: one cached sample
    st = g.get_state()
    a = jitorch.randn(5, dtype=jitorch.float64, generator=g)
    h = jitorch.Generator()
    assert h.set_state(st) is h
    assert h.initial_seed() == 3
    np.testing.assert_array_equal(a.numpy(), jitorch.randn(5, dtype=jitorch.float64,
                                                          generator=h).numpy())
    np.testing.assert_array_equal(g.get_state().numpy(), h.get_state().numpy())


def test_fork_rng_restores_the_state():
    jitorch.manual_seed(11)
    with jitorch.random.fork_rng():
        inside = jitorch.rand(4)
        jitorch.manual_seed(99)
        jitorch.randn(30)
    np.testing.assert_array_equal(inside.numpy(), jitorch.rand(4).numpy())
    assert jitorch.initial_seed() == 11
    jitorch.manual_seed(11)
    with jitorch.random.fork_rng(enabled=False):
        jitorch.rand(4)
    assert not np.array_equal(inside.numpy(), jitorch.rand(4).numpy())


def test_set_rng_state_replays():
    jitorch.manual_seed(2)
    st = jitorch.get_rng_state()
    a = (jitorch.rand(3), jitorch.randn(20), jitorch.randperm(6))
    jitorch.set_rng_state(st)
    b = (jitorch.rand(3), jitorch.randn(20), jitorch.randperm(6))
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_dropout_stream_survives_a_state_round_trip():
    # the dropout masks' Philox offset rides in the state (jitorch/_philox.py)
    F = jitorch.nn.functional
    jitorch.manual_seed(4)
    F.dropout(jitorch.ones(64), 0.5)
    st = jitorch.get_rng_state()
    m1 = F.dropout(jitorch.ones(64), 0.5)
    jitorch.set_rng_state(st)
    np.testing.assert_array_equal(m1.numpy(), F.dropout(jitorch.ones(64), 0.5).numpy())


# --- errors, as PyTorch's ------------------------------------------------------------------------
def test_bad_states():
    g = jitorch.Generator()
    with pytest.raises(RuntimeError, match=r"^Expected a CPUGeneratorImplState of size 5056 "
                                           r"but found the input RNG state size to be 10$"):
        g.set_state(jitorch.zeros(10, dtype=jitorch.uint8))
    with pytest.raises(TypeError, match="^RNG state must be a torch.ByteTensor$"):
        g.set_state(jitorch.zeros(5056))
    with pytest.raises(TypeError, match="^expected a torch.ByteTensor, but got list$"):
        g.set_state([1, 2])
    with pytest.raises(RuntimeError, match="^Invalid mt19937 state$"):
        g.set_state(jitorch.zeros(5056, dtype=jitorch.uint8))
    st = g.get_state()
    with pytest.raises(RuntimeError, match="^RNG state must be contiguous$"):
        g.set_state(jitorch.cat([st, st])[::2])
    with pytest.raises(RuntimeError, match="size to be 3$"):
        jitorch.set_rng_state(jitorch.zeros(3, dtype=jitorch.uint8))
    with pytest.raises(TypeError, match="argument 'generator' must be torch.Generator, not int"):
        jitorch.rand(3, generator=5)
