"""Tracing a factory whose sizes come from a traced tensor (`zeros(x.size(0), 3)`,
`x.new_zeros(x.shape[0], 3)`, `ones(x.shape)`, `zeros_like(x)`, `empty(x.shape).fill_(v)`)
records the factory with those sizes as graph values, so the trace runs on other batch sizes
(PyTorch records `aten::zeros`); a factory it cannot record (`randn`) gives a TracerWarning
instead of baking silently."""
import warnings

import numpy as np
import pytest

import jitorch
from jitorch.jit import TracerWarning


def _f(x):
    a = jitorch.zeros(x.size(0), 3) + x
    b = x.new_zeros(x.shape[0], 3) + 1
    c = jitorch.ones(x.shape) * x
    d = jitorch.zeros_like(x) - 1
    e = jitorch.arange(x.size(0)).unsqueeze(1) * x
    f = jitorch.full((x.size(0) * 1, 3), 2.0)
    g = jitorch.eye(x.size(0)).sum(1, keepdim=True)
    h = jitorch.empty(x.shape).fill_(0.5) + x.new_empty(x.shape[0], 1).zero_()
    return a + b + c + d + e + f + g + h


def test_factory_sizes_follow_the_batch():
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracerWarning)
        traced = jitorch.jit.trace(_f, (jitorch.randn(4, 3),))
    x = jitorch.randn(7, 3)
    got = traced(x)
    assert got.shape == (7, 3)
    np.testing.assert_allclose(got.numpy(), _f(x).numpy(), rtol=1e-6)


def test_unrecorded_factory_warns():
    def g(x):
        return x + jitorch.randn(x.size(0), 3)
    with pytest.warns(TracerWarning, match="randn.*size read from a traced tensor"):
        jitorch.jit.trace(g, (jitorch.randn(4, 3),), check_trace=False)
