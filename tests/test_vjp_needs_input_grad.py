"""VJP rules with a `needs_input_grad` parameter (_ops/registry.py `_rule_params`) skip the
gradients no input takes: eager autograd passes one flag per tensor slot from the node's edges
(autograd/graph.py `Node.apply`), as PyTorch's `needs_input_grad`; mul, div, sub, matmul, the
fused linear and the convolutions use it. The gradients that are taken stay the same."""
from __future__ import annotations

import numpy as np
import pytest

import jitorch as jt
from jitorch._ops import nn_conv
from jitorch._ops.registry import OPS, _rule_params


def test_rule_gets_one_flag_per_slot():
    g, a, b = jt.ones(2), jt.tensor([2.0, 3.0]), jt.tensor([4.0, 5.0])
    ga, gb = OPS["mul"].vjp(g, input=a, other=b, needs_input_grad=(True, False))
    assert gb is None and ga.tolist() == [4.0, 5.0]
    ga, gb = OPS["div"].vjp(g, input=a, other=b, rounding_mode=None,
                            needs_input_grad=(False, True))
    assert ga is None
    np.testing.assert_allclose(gb.numpy(), [-2.0 / 16, -3.0 / 25], rtol=1e-6)
    # a caller that passes no flags (compiled backwards) gets every gradient
    assert all(r is not None for r in OPS["mul"].vjp(g, input=a, other=b))


def test_first_conv_layer_skips_its_input_gradient(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("computed the gradient of an input that takes none")
    rng = np.random.default_rng(0)
    x = jt.tensor(rng.standard_normal((2, 1, 6, 6)).astype(np.float32))  # data: no grad
    conv = jt.nn.Conv2d(1, 2, 3)
    ref = conv(x.requires_grad_(True))
    ref.sum().backward()
    gw = conv.weight.grad.numpy().copy()
    conv.weight.grad = None
    monkeypatch.setattr(nn_conv, "_conv_nd_input_grad", boom)
    conv(x.detach()).sum().backward()
    np.testing.assert_array_equal(conv.weight.grad.numpy(), gw)


def test_gradients_with_scalar_and_constant_operands_and_twice_differentiated():
    a = jt.tensor([1.0, -2.0, 3.0], requires_grad=True)
    w = jt.tensor([0.5, 4.0, -1.0])  # no grad
    y = (a * w + 2.0 * a / w - a / 3.0 + w / a).sum()
    (ga,) = jt.autograd.grad(y, a, create_graph=True)
    an, wn = a.detach().numpy(), w.numpy()
    np.testing.assert_allclose(ga.detach().numpy(), wn + 2.0 / wn - 1 / 3.0 - wn / an ** 2,
                               rtol=1e-6)
    (gga,) = jt.autograd.grad(ga.sum(), a)
    np.testing.assert_allclose(gga.numpy(), 2 * wn / an ** 3, rtol=1e-6)


def test_needs_input_grad_must_be_the_last_rule_parameter():
    def rule(g, needs_input_grad, input):
        return g
    with pytest.raises(TypeError, match="needs_input_grad must be its last parameter"):
        _rule_params(rule, ("input",), (), skip_first=True)


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 4)), ((3,), (3, 4)), ((2, 3), (3,)), ((3,), (3,)),
                                   ((2, 2, 3), (3, 4))])
def test_matmul_computes_only_the_gradients_taken(sa, sb):
    rng = np.random.default_rng(0)
    a, b = (jt.tensor(rng.standard_normal(s).astype(np.float32)) for s in (sa, sb))
    g = jt.ones((a @ b).shape)
    ga, gb = OPS["matmul"].vjp(g, input=a, other=b)
    only_a = OPS["matmul"].vjp(g, input=a, other=b, needs_input_grad=(True, False))
    only_b = OPS["matmul"].vjp(g, input=a, other=b, needs_input_grad=(False, True))
    assert only_a[1] is None and only_b[0] is None
    np.testing.assert_array_equal(only_a[0].numpy(), ga.numpy())
    np.testing.assert_array_equal(only_b[1].numpy(), gb.numpy())


def test_sub_negates_only_for_an_other_that_takes_a_gradient():
    g = jt.tensor([1.0, -2.0])
    ga, gb = OPS["sub"].vjp(g, alpha=1, needs_input_grad=(True, False))
    assert gb is None and ga.tolist() == [1.0, -2.0]
    ga, gb = OPS["sub"].vjp(g, alpha=2, needs_input_grad=(True, True))
    assert gb.tolist() == [-2.0, 4.0]
