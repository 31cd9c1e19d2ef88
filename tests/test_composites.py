"""Composites written once (_ops/composite): the body eager runs is the body @script inlines.

The mechanism (a factory that checks the statics once and returns the body; a scripted call of
the public function compiles that body, or stays a Python call that raises eager's error), and
cases where the compiled form used to differ from eager because it was a separate twin: an empty
batch through BatchNorm, a zero vector's gradient through normalize, dropout in eval mode.
"""
import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F


def _scaled_public():
    from jitorch._ops.composite import composite, expose

    @composite(static=("k",))
    def _scaled(k):
        if isinstance(k, (int, float)) and k < 0:
            raise ValueError(f"k must be >= 0, got {k}")

        def body(input):
            return input * k + 1.0
        return body

    def scaled(input, k=2.0):
        return _scaled.body(k)(input)
    scaled._jitorch_ignore = True  # a library-style callable: the frontend asks for a composite
    expose(_scaled, scaled)
    return _scaled, scaled


def test_factory_runs_once_per_statics_and_keeps_int_and_float_apart():
    comp, scaled = _scaled_public()
    assert comp.body(2.0) is comp.body(2.0)
    assert comp.body(2) is not comp.body(2.0)
    assert comp.body((1, 2)) is comp.body([1, 2])  # lists are keyed as tuples
    with pytest.raises(ValueError, match="k must be >= 0"):
        scaled(jitorch.ones(2), -1.0)


def test_scripted_call_compiles_the_body_or_raises_eagers_error():
    _, scaled = _scaled_public()

    def f(x):
        return scaled(x, 3.0)

    def bad(x):
        return scaled(x, -1.0)
    fs, bads = jitorch.jit.script(f), jitorch.jit.script(bad)
    x = jitorch.randn(5)
    # (a compiled x * k + 1 may round once where eager rounds twice: near 0, atol says so)
    np.testing.assert_allclose(fs(x).numpy(), f(x).numpy(), rtol=1e-6, atol=1e-6)
    g = str(fs.graph)
    assert "prim::CallFunction[fn=@scaled, composite=@scaled]" in g  # the body, specialised
    assert "prim::PythonOp" not in g  # when the inline pass inlines it
    assert not fs.stats["interpreted"]
    with pytest.raises(ValueError, match="k must be >= 0, got -1.0"):
        bads(x)  # the factory rejected the statics: a Python call, eager's error at run time


def test_public_functions_are_exposed_composites():
    from jitorch._ops.composite import composite_of
    for fn in (F.softmax, F.log_softmax, F.softmin, jitorch.softmax, F.layer_norm, F.rms_norm,
               F.group_norm, F.batch_norm, F.normalize, F.linear, F.dropout, F.embedding,
               F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.nll_loss,
               F.cross_entropy, F.multi_head_attention_forward):
        assert composite_of(fn) is not None, fn.__name__


def test_scripted_batchnorm_eval_takes_an_empty_batch():
    bn = nn.BatchNorm2d(3).eval()
    s = jitorch.jit.script(bn)
    for n in (2, 0):
        x = jitorch.randn(n, 3, 2, 2)
        with jitorch.no_grad():
            np.testing.assert_allclose(s(x).numpy(), bn(x).numpy(), rtol=1e-5, atol=1e-6)
    y = s(jitorch.randn(0, 3, 2, 2))
    assert tuple(y.shape) == (0, 3, 2, 2)
    y.sum().backward()  # the weight gets a (zero) gradient through the compiled backward
    assert bn.weight.grad is not None


def test_scripted_normalize_gradient_of_a_zero_vector_is_eagers():
    @jitorch.jit.script
    def f(x):
        return F.normalize(x, 2.0, 1)
    x = jitorch.randn(3, 4)
    x[1] = 0.0
    w = jitorch.arange(12.0).reshape(3, 4)
    xs, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
    (f(xs) * w).sum().backward()
    (F.normalize(xe, 2.0, 1) * w).sum().backward()
    assert np.isfinite(xs.grad.numpy()).all()
    np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-4)
    np.testing.assert_allclose(xe.grad.numpy()[1], w.numpy()[1] / 1e-12, rtol=1e-5)


def test_scripted_eval_dropout_in_place_compiles():
    @jitorch.jit.script
    def f(x):
        return F.dropout(x, 0.5, False, True) * 2.0
    x = jitorch.randn(4)
    np.testing.assert_allclose(f(x).numpy(), (x * 2.0).numpy())
    assert not f.stats["interpreted"]


@pytest.mark.parametrize("dtype", ["float64", "float16"])
def test_cross_entropy_keeps_the_input_dtype(dtype):
    d = getattr(jitorch, dtype)
    x = jitorch.randn(4, 3).to(d).requires_grad_()
    t = jitorch.tensor([0, 2, -100, 1])
    for kw in ({}, {"reduction": "none"}, {"weight": jitorch.rand(3).to(d)}):
        loss = F.cross_entropy(x, t, **kw)
        assert loss.dtype == d  # the class weights of the body are the input's dtype
        loss.sum().backward()
        assert x.grad.dtype == d
        x.grad = None
