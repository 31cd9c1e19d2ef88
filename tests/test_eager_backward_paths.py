"""Cheaper eager backward paths that keep values: a float matmul with inner size 1 (a Linear's
weight gradient for one sample) is an elementwise product, signed zeros as PyTorch; nll_loss's
first-order input gradient is NumPy arithmetic (_ops/nn_loss.py `_nll_loss_grad`), the same
operations as its differentiable rule, which create_graph keeps; a rule its declaration marks
ON_ARRAYS (tanh, sigmoid, relu, div, ...) runs on the arrays in a first-order CPU backward (no
op dispatched: autograd/graph.py `_array_call`), the rule's ops under create_graph or a
profiler."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import jitorch as jt
from jitorch._ops import nn_loss

F = jt.nn.functional


def test_outer_product_matmul_keeps_the_sign_of_zero_products():
    a = jt.tensor([[-1.0], [0.0], [2.0]])
    b = jt.tensor([[0.0, -3.0, 5.0]])
    r = (a @ b).numpy()  # PyTorch: [[-0., 3., -5.], [0., -0., 0.], [0., -6., 10.]]
    np.testing.assert_array_equal(r, [[0.0, 3.0, -5.0], [0.0, 0.0, 0.0], [0.0, -6.0, 10.0]])
    np.testing.assert_array_equal(np.signbit(r), [[True, False, True], [False, True, False],
                                                  [False, True, False]])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_first_order_gradient_is_numpy(reduction, monkeypatch):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((4, 5)).astype(np.float32)
    target = jt.tensor([1, 2, 2, 4])
    weight = jt.tensor(rng.random(5).astype(np.float32))
    x = jt.tensor(x_np, requires_grad=True)
    loss = F.nll_loss(x, target, weight=weight, ignore_index=4, reduction=reduction)
    g = rng.standard_normal(tuple(loss.shape)).astype(np.float32)
    # create_graph: the rule's ops (the gradient depends on a g that requires grad)
    (gx_graph,) = jt.autograd.grad(loss, x, jt.tensor(g, requires_grad=True), create_graph=True)

    def boom(*a, **k):
        raise AssertionError("a first-order nll_loss backward ran the rule's tensor ops")
    monkeypatch.setattr(nn_loss, "where", boom)
    x2 = jt.tensor(x_np, requires_grad=True)
    F.nll_loss(x2, target, weight=weight, ignore_index=4, reduction=reduction).backward(
        jt.tensor(g))
    np.testing.assert_array_equal(x2.grad.numpy(), gx_graph.detach().numpy())
    assert x2.grad.dtype == jt.float32 and gx_graph.requires_grad


def test_fan_in_gradients_summed_without_the_add_op(monkeypatch):
    """Two gradients reaching one output are summed in NumPy in a first-order backward (the
    same `np.add` the op runs); create_graph sums them with the op, which records."""
    from jitorch._tensor import Tensor
    x = jt.tensor([1.0, -2.0, 0.5], requires_grad=True)
    (gx,) = jt.autograd.grad((x * 3).sum() + (x * x).sum(), x, create_graph=True)
    np.testing.assert_array_equal(gx.detach().numpy(), [5.0, -1.0, 4.0])
    (ggx,) = jt.autograd.grad(gx.sum(), x)
    np.testing.assert_array_equal(ggx.numpy(), [2.0, 2.0, 2.0])

    def boom(*a, **k):
        raise AssertionError("a first-order backward summed gradients with the add op")
    y = (x * 3).sum() + (x * x).sum()
    monkeypatch.setattr(Tensor, "__add__", boom)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, -1.0, 4.0])


def _ops_called(fn) -> list:
    """The names of the dispatched ops (the registry's generated op functions) `fn()` calls."""
    seen = []

    def prof(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith("<jitorch op "):
            seen.append(frame.f_code.co_filename[12:-1])
    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


_ON_ARRAYS = {"tanh": jt.tanh, "sigmoid": jt.sigmoid, "relu": F.relu,
              "div": lambda x: x / (x * x + 1),  # (both operands' gradients, one broadcast)
              "hardtanh": lambda x: F.hardtanh(x, -0.5, 0.25)}


@pytest.mark.parametrize("name", sorted(_ON_ARRAYS))
def test_on_arrays_rules_dispatch_no_op_first_order_and_keep_double_backward(name):
    f = _ON_ARRAYS[name]
    rng = np.random.default_rng(1)
    x_np = rng.uniform(-1, 1, (3, 4))
    x_np[0, 0] = 0.125  # (away from relu's and hardtanh's kinks: finite differences hold)
    g = jt.tensor(rng.standard_normal((3, 4)))
    x = jt.tensor(x_np, requires_grad=True)
    y = f(x)
    assert _ops_called(lambda: y.backward(g)) == []  # the rule on the arrays
    # create_graph: the rule's ops, the same arithmetic (bit-equal), and their own graph
    x2 = jt.tensor(x_np, requires_grad=True)
    (gx,) = jt.autograd.grad(f(x2), x2, g, create_graph=True)
    np.testing.assert_array_equal(x.grad.numpy(), gx.detach().numpy())
    assert jt.autograd.gradcheck(f, (x2,)) and jt.autograd.gradgradcheck(f, (x2,))
    # under the profiler the rule's ops run, and show
    x3 = jt.tensor(x_np.astype(np.float32), requires_grad=True)
    y3 = f(x3)
    with jt.autograd.profiler.profile():
        ran = _ops_called(lambda: y3.backward(g.float()))
    assert ran and x3.grad.dtype == jt.float32
    x4 = jt.tensor(x_np.astype(np.float32), requires_grad=True)
    f(x4).backward(g.float())
    np.testing.assert_array_equal(x4.grad.numpy(), x3.grad.numpy())


def test_on_arrays_rule_checks_versions_and_runs_hooks():
    x = jt.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = jt.tanh(x)
    y.add_(1)  # tanh saved its output: the backward must refuse
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(jt.ones(3))
    seen = []
    y = jt.sigmoid(x)
    x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    y.backward(jt.ones(3))
    s = 1 / (1 + np.exp(-np.array([0.5, -1.0, 2.0], np.float32)))
    np.testing.assert_allclose(seen[0], s * (1 - s), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 2 * s * (1 - s), rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pass_where_is_where_bit_for_bit(dtype):
    from jitorch._ops._util import pass_where
    a = np.array([[-0.0, 0.0, np.inf, -np.inf], [np.nan, -1.5, 2.0, 1e-45]], dtype)
    for arr in (a, a.T, a[:, ::2]):  # (strided views)
        mask = np.random.default_rng(0).random(arr.shape) > 0.5
        r = pass_where(mask, arr)
        assert r.dtype == dtype and r.shape == arr.shape
        ref = np.where(mask, arr, dtype(0))
        np.testing.assert_array_equal(r.view(np.uint8), ref.view(np.uint8))


def test_basic_index_backward_frees_without_searching_its_index(monkeypatch):
    """A basic index (ints, slices) never holds a tensor (its declaration's `plain_attrs`): a
    backward that frees saved tensors does not search it, and the node, which saved none, runs
    again in a second backward as before."""
    from jitorch.autograd import graph
    x = jt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    y = x[1, 1:] * 1.0  # (warm: the op's names are found once)
    y.sum().backward()

    def boom(v):
        raise AssertionError("searched a basic index for tensors")
    monkeypatch.setattr(graph, "_holds_tensor", boom)
    v = x[0, ::2]
    v.sum().backward()
    v.sum().backward()  # (the index node kept its shape and index: it runs again)
    np.testing.assert_array_equal(x.grad.numpy(), [[2.0, 0.0, 2.0], [0.0, 1.0, 1.0]])
