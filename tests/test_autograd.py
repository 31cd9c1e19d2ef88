"""Autograd semantics: backward/grad, grad modes, hooks, custom Functions, in-place safety,
higher order, forward mode. Values are checked against closed forms."""
import numpy as np
import pytest

import jitorch as torch
from jitorch.autograd import forward_ad as fwAD


def leaf(values, dtype=torch.float64):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


def test_backward_accumulates_into_leaf_grad():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 4, 6])
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5, 7, 9])
    assert x.grad.dtype is torch.float64 and x.grad.shape == x.shape


def test_broadcast_gradients_are_reduced_to_input_shape():
    a = leaf([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = leaf([10.0, 20.0, 30.0])
    (a * b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), [5, 7, 9])
    np.testing.assert_allclose(a.grad.numpy(), [[10, 20, 30], [10, 20, 30]])


def test_leaf_and_grad_fn_attributes():
    x = leaf([1.0])
    y = x.exp()
    assert x.is_leaf and not y.is_leaf
    assert x.grad_fn is None
    assert y.grad_fn.name() == "ExpBackward0"
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    assert y.requires_grad


def test_non_scalar_backward_needs_gradient():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (x * 2).backward()
    (x * 2).backward(torch.tensor([1.0, 0.5], dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2, 1])


def test_backward_twice_raises_unless_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [4, 8])
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_backward_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.tensor([1.0]).sum().backward()


def test_autograd_grad_and_allow_unused():
    x, z = leaf([1.0, 2.0]), leaf([3.0])
    y = (x.exp()).sum()
    (gx,) = torch.autograd.grad(y, x, retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), np.exp([1.0, 2.0]))
    assert x.grad is None  # grad() does not accumulate
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        torch.autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = torch.autograd.grad(y, [x, z], allow_unused=True)
    assert gz is None


def test_higher_order_gradients_with_create_graph():
    x = leaf([2.0])
    y = x * x * x
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [12.0])  # 3x^2
    (g2,) = torch.autograd.grad(g.sum(), x, create_graph=True)
    np.testing.assert_allclose(g2.detach().numpy(), [12.0])  # 6x
    (g3,) = torch.autograd.grad(g2.sum(), x)
    np.testing.assert_allclose(g3.numpy(), [6.0])


def test_grad_of_intermediate_non_leaf():
    x = leaf([1.0, 2.0])
    h = x * 3
    y = (h * h).sum()
    (gh,) = torch.autograd.grad(y, h)
    np.testing.assert_allclose(gh.numpy(), [6.0, 12.0])


def test_no_grad_enable_grad_set_grad_enabled():
    x = leaf([1.0])
    with torch.no_grad():
        y = x * 2
        assert not y.requires_grad and not torch.is_grad_enabled()
        with torch.enable_grad():
            assert (x * 2).requires_grad
    assert torch.is_grad_enabled()

    @torch.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad

    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    torch.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        torch.set_grad_enabled(True)


def test_inference_mode():
    x = leaf([1.0])
    with torch.inference_mode():
        assert not (x * 2).requires_grad
        assert torch.is_inference_mode_enabled()
    assert not torch.is_inference_mode_enabled()


def test_grad_mode_is_thread_local():
    import threading
    seen = []
    with torch.no_grad():
        t = threading.Thread(target=lambda: seen.append(torch.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_detach_shares_storage_and_stops_gradient():
    x = leaf([1.0, 2.0])
    d = x.detach()
    assert not d.requires_grad and d.is_leaf
    d.numpy()[0] = 5.0
    assert x.detach().numpy()[0] == 5.0
    y = (x * d).sum()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.0, 2.0])


def test_requires_grad_rules():
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2]).requires_grad_()
    x = leaf([1.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="leaf variables"):
        y.requires_grad_(False)


def test_retain_grad_and_nonleaf_grad_warning():
    x = leaf([1.0, 2.0])
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward()
    np.testing.assert_allclose(h.grad.numpy(), [4.0, 8.0])
    h2 = x * 2
    with pytest.warns(UserWarning, match="not a leaf"):
        assert h2.grad is None


def test_tensor_hooks_observe_and_replace_gradients():
    x = leaf([1.0, 2.0])
    seen = []
    x.register_hook(lambda g: seen.append(g.numpy().copy()))
    h = x * 3
    handle = h.register_hook(lambda g: g * 10)
    h.sum().backward()
    np.testing.assert_allclose(seen[0], [30.0, 30.0])
    np.testing.assert_allclose(x.grad.numpy(), [30.0, 30.0])
    handle.remove()
    x.grad = None
    h2 = x * 3
    h2.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


class Cube(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return g * 3 * x * x * ctx.k, None


def test_custom_function():
    x = leaf([1.0, 2.0])
    y = Cube.apply(x, 2.0)
    np.testing.assert_allclose(y.detach().numpy(), [2.0, 16.0])
    assert y.grad_fn.name() == "CubeBackward"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0, 24.0])


def test_custom_function_mark_non_differentiable():
    class SortLike(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            idx = torch.tensor([1, 0])
            out = x * 1
            ctx.mark_non_differentiable(idx)
            return out, idx

        @staticmethod
        def backward(ctx, g, gi):
            return g

    x = leaf([1.0, 2.0])
    out, idx = SortLike.apply(x)
    assert out.requires_grad and not idx.requires_grad


def test_custom_function_setup_context_style():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf([3.0])
    Square.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6.0])


def test_gradcheck_and_gradgradcheck():
    x = leaf([[0.3, -1.2], [0.5, 2.0]])
    assert torch.autograd.gradcheck(lambda t: (t.tanh() * t).sum(dim=1), (x,))
    assert torch.autograd.gradgradcheck(lambda t: (t.exp() * t), (x,))

    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        torch.autograd.gradcheck(Wrong.apply, (x,))
    assert not torch.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False)


# --- in-place semantics -----------------------------------------------------------------------
def test_inplace_on_leaf_requiring_grad_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with torch.no_grad():
        x.add_(1)  # allowed: e.g. an optimizer step
    np.testing.assert_allclose(x.detach().numpy(), [2.0])


def test_inplace_on_view_of_leaf_raises():
    x = leaf([[1.0, 2.0]])
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        x.transpose(0, 1).mul_(2)


def test_modifying_saved_tensor_raises_at_backward():
    x = leaf([1.0, 2.0])
    y = x.exp()  # saves its result
    z = y * 1
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: .*version 1; "
                                           r"expected version 0"):
        (z + y).sum().backward()
    assert y._version_value == 1


def test_inplace_rebases_history():
    x = leaf([1.0, 2.0])
    y = x * 2
    y.mul_(x)  # y = 2x * x
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [4.0, 8.0])


def test_inplace_through_view_reaches_base_and_source():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    w = leaf([10.0, 20.0])
    y = x * 1
    view = y.unsqueeze(0)  # a view sharing y's storage
    view.mul_(w)  # y = x * w (broadcast along the last dim)
    np.testing.assert_allclose(y.detach().numpy(), [[10.0, 40.0], [30.0, 80.0]])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[10.0, 20.0], [10.0, 20.0]])
    np.testing.assert_allclose(w.grad.numpy(), [4.0, 6.0])


def test_version_counter_shared_by_views():
    x = torch.zeros(2, 3)
    v = x.transpose(0, 1)
    v.add_(1)
    assert x._version_value == v._version_value == 1
    np.testing.assert_allclose(x.numpy(), np.ones((2, 3)))


def test_inplace_cast_error():
    x = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        x.add_(1.5)


def test_complex_autograd_is_a_clear_error():
    # ops whose VJPs are not written for complex gradients refuse them
    z = torch.tensor([1 + 2j], requires_grad=True)
    with pytest.raises(NotImplementedError, match="complex"):
        z.exp().backward(torch.tensor([1 + 0j]))


def test_complex_gradients_of_arithmetic():
    # PyTorch's convention: z.grad = dL/dRe(z) + i dL/dIm(z); d(z * z) pulls back g to
    # 2 conj(z) g, and a real operand gets the real part
    z = torch.tensor([1 + 2j], requires_grad=True)
    (z * z).backward(torch.tensor([1 + 0j]))
    assert z.grad.tolist() == [2 - 4j]
    x = torch.tensor([3.0], requires_grad=True)
    w = torch.tensor([1 + 2j], requires_grad=True)
    y = (w * x + w - x).abs()  # |4 + 8j - ... |: real loss through mul, add, sub, abs
    y.backward()
    v = 3 * (1 + 2j) + (1 + 2j) - 3
    assert abs(x.grad.item() - ((1 + 2j).conjugate() * v / abs(v) - v / abs(v)).real) < 1e-6
    assert x.grad.dtype is torch.float32


# --- forward mode -----------------------------------------------------------------------------
def test_forward_ad_dual_numbers():
    x = torch.tensor([0.5, 1.0], dtype=torch.float64)
    v = torch.tensor([1.0, 2.0], dtype=torch.float64)
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        y = (d.exp() * d).sum()
        p, t = fwAD.unpack_dual(y)
    expected = (np.exp(x.numpy()) * (1 + x.numpy()) * v.numpy()).sum()
    np.testing.assert_allclose(t.numpy(), expected)
    np.testing.assert_allclose(p.numpy(), (np.exp(x.numpy()) * x.numpy()).sum())
    assert fwAD.unpack_dual(y).tangent is None  # tangents are gone after the level


def test_forward_ad_requires_level():
    with pytest.raises(RuntimeError, match="dual level"):
        fwAD.make_dual(torch.zeros(2), torch.zeros(2))


def test_fresh_grad_has_the_parameters_layout():
    # PyTorch's gradient layout contract: the matmul VJP gives a Linear weight's grad as a
    # transposed view; .grad must still have the (C-contiguous) parameter's strides
    m = torch.nn.Linear(5, 3)
    m(torch.randn(4, 5)).sum().backward()
    assert m.weight.grad.stride() == m.weight.stride() == (5, 1)
    w = torch.randn(3, 4).t().detach().requires_grad_(True)  # an F-ordered leaf keeps F
    (w * 2).sum().backward()
    assert w.grad.stride() == w.stride()


def test_forward_ad_through_an_op_without_a_forward_rule_raises_instead_of_a_zero_tangent():
    # the mechanism (registry.dispatch): a differentiable op with no JVP rule refuses a tangent
    # as PyTorch does; before, the tangent was dropped and the result read as zero
    x = torch.tensor([2.0, 3.0], dtype=torch.float64)
    q = torch.tensor([1.0, 2.0], dtype=torch.float64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.ones_like(x))
        with pytest.raises(NotImplementedError, match="forward AD with special_zeta"):
            torch.special.zeta(dual, q)
        torch.special.zeta(x, fwAD.make_dual(q, torch.zeros_like(q)).detach())  # no tangent
