"""The compositions of `_ops/compat_more.py` (issue 19) against NumPy: unravel_index,
combinations, trapezoid / cumulative_trapezoid, vander, diagflat, deg2rad, addr, renorm, the
*_scatter functions, sum_to_size, fill_diagonal_, resize_, the predicates and the top-level
in-place forms; gradients where PyTorch has them (finite differences)."""
import itertools

import numpy as np
import pytest

import jitorch as jt


def test_index_and_combination_helpers():
    r, c = jt.unravel_index(jt.tensor([5, 7, -1]), (2, 4))
    np.testing.assert_array_equal(np.stack([r.numpy(), c.numpy()]),
                                  np.unravel_index([5, 7, 7], (2, 4)))
    with pytest.raises(ValueError, match="out-of-bounds"):
        jt.unravel_index(jt.tensor([8]), (2, 4))
    got = jt.combinations(jt.tensor([4, 5, 6]), 2).numpy()
    np.testing.assert_array_equal(got, list(itertools.combinations([4, 5, 6], 2)))
    got = jt.combinations(jt.tensor([1, 2]), 3, with_replacement=True).numpy()
    np.testing.assert_array_equal(got, list(itertools.combinations_with_replacement([1, 2], 3)))
    np.testing.assert_array_equal(jt.split_with_sizes(jt.arange(5), [2, 3])[1].numpy(), [2, 3, 4])


def test_integration_and_matrix_builders():
    y = np.array([[1.0, 2, 4], [0, 1, 3]])
    x = np.array([0.0, 1, 3])
    np.testing.assert_allclose(jt.trapezoid(jt.tensor(y), jt.tensor(x)).numpy(),
                               np.trapezoid(y, x))
    np.testing.assert_allclose(jt.trapz(jt.tensor(y), dx=0.5, dim=0).numpy(),
                               np.trapezoid(y, dx=0.5, axis=0))
    np.testing.assert_allclose(jt.cumulative_trapezoid(jt.tensor(y), jt.tensor(x)).numpy(),
                               np.cumsum((y[:, 1:] + y[:, :-1]) / 2 * np.diff(x), -1))
    np.testing.assert_array_equal(jt.vander(jt.tensor([1, 2, 3]), N=4).numpy(),
                                  np.vander([1, 2, 3], 4))
    np.testing.assert_array_equal(jt.diagflat(jt.tensor([[1, 2]]), -1).numpy(),
                                  np.diagflat([1, 2], -1))
    np.testing.assert_allclose(jt.deg2rad(jt.tensor([180, 90])).numpy(), [np.pi, np.pi / 2])
    a = jt.tensor(np.ones((2, 3)), requires_grad=True)
    v1 = jt.tensor([1.0, 2.0], requires_grad=True)
    out = jt.addr(a, v1, jt.tensor([3.0, 4.0, 5.0]), beta=2, alpha=3)
    np.testing.assert_allclose(out.detach().numpy(), 2 + 3 * np.outer([1, 2], [3, 4, 5]))
    out.sum().backward()
    np.testing.assert_allclose(v1.grad.numpy(), [36.0, 36.0])


def test_renorm_values_and_gradient():
    x = np.arange(6.0).reshape(2, 3)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    want = x * np.where(norms > 3, 3 / (norms + 1e-7), 1)
    t = jt.tensor(x, requires_grad=True)
    out = jt.renorm(t, 2, 0, 3.0)
    np.testing.assert_allclose(out.detach().numpy(), want)
    out.pow(2).sum().backward()
    eps = 1e-6
    fd = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        f = [(jt.renorm(jt.tensor(x + s * d), 2, 0, 3.0) ** 2).sum().item() for s in (1, -1)]
        fd[i] = (f[0] - f[1]) / (2 * eps)
    np.testing.assert_allclose(t.grad.numpy(), fd, atol=1e-5)


def test_scatter_functions_write_a_copy_and_route_gradients():
    base = jt.zeros(3, 4, requires_grad=True)
    src = jt.ones(3, 2, requires_grad=True)
    out = jt.slice_scatter(base, src, 1, 0, 4, 2)
    np.testing.assert_array_equal(out.detach().numpy(), np.tile([1.0, 0, 1, 0], (3, 1)))
    (out * jt.arange(12.0).reshape(3, 4)).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [[0, 2], [4, 6], [8, 10]])
    np.testing.assert_array_equal(base.grad.numpy(), np.tile([0, 1, 0, 1], (3, 1))
                                  * np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(jt.select_scatter(jt.zeros(2, 3), jt.ones(2), 1, 2).numpy(),
                                  [[0, 0, 1], [0, 0, 1]])
    got = jt.diagonal_scatter(jt.zeros(2, 3, 4), jt.ones(2, 2) * 7, -1, 1, 2).numpy()
    want = np.zeros((2, 3, 4))
    want[:, [1, 2], [0, 1]] = 7
    np.testing.assert_array_equal(got, want)
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice"):
        jt.diagonal_scatter(jt.zeros(3, 3), jt.ones(3), 1)


def test_in_place_helpers_and_predicates():
    np.testing.assert_array_equal(jt.zeros(5, 2).fill_diagonal_(1.0, wrap=True).numpy(),
                                  [[1, 0], [0, 1], [0, 0], [1, 0], [0, 1]])
    t = jt.arange(3.0)
    assert t.resize_(2, 2) is t and t.shape == (2, 2)
    np.testing.assert_array_equal(t.numpy().ravel()[:3], [0, 1, 2])
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        jt.ones(2, requires_grad=True).resize_(3)
    np.testing.assert_array_equal(jt.ones(2, 3).sum_to_size(1, 3).numpy(), [[2, 2, 2]])
    assert jt.is_nonzero(jt.tensor([2])) and not jt.is_signed(jt.tensor([1], dtype=jt.uint8))
    assert jt.is_same_size(jt.ones(2), jt.zeros(2)) and not jt.is_neg(jt.ones(1))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        jt.is_nonzero(jt.ones(2))
    x = jt.tensor([-1.0, 4.0])
    assert jt.abs_(x) is x and jt.sqrt_(x) is x
    np.testing.assert_array_equal(x.numpy(), [1, 2])
    np.testing.assert_array_equal(jt.frexp(jt.tensor([8.0])).exponent.numpy(), [4])


def test_top_level_functional_forms_and_copies():
    x = jt.tensor([[1.0, -2.0, 3.0]])
    np.testing.assert_allclose(jt.layer_norm(x, (3,)).numpy(),
                               jt.nn.functional.layer_norm(x, (3,)).numpy())
    w = jt.eye(3)
    np.testing.assert_array_equal(jt.embedding(w, jt.tensor([2, 0])).numpy(), np.eye(3)[[2, 0]])
    np.testing.assert_allclose(  # reduction 2 = 'sum'
        jt.kl_div(jt.zeros(2), jt.ones(2) * 0.5, 2).item(), 2 * 0.5 * np.log(0.5))
    y = jt.convolution(jt.ones(1, 1, 4), jt.ones(1, 1, 2), None, [1], [0], [1], True, [0], 1)
    np.testing.assert_array_equal(y.numpy(), [[[1, 2, 2, 2, 1]]])
    np.testing.assert_array_equal(jt.rsub(jt.ones(2), 5, alpha=2).numpy(), [3, 3])
    src = jt.arange(6.0).reshape(2, 3)
    c = jt.permute_copy(src, (1, 0))
    c[0, 0] = 9.0
    assert src[0, 0].item() == 0.0 and c.shape == (3, 2)
    np.testing.assert_array_equal(jt.slice_copy(jt.arange(6), 0, 1, 5, 2).numpy(), [1, 3])
    hist, edges = jt.histogram(jt.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
    np.testing.assert_array_equal(hist.numpy(), [0, 2, 1, 0])
    np.testing.assert_allclose(edges.numpy(), np.linspace(0, 3, 5))
    a = np.array([[4.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(jt.cholesky_inverse(jt.tensor(np.linalg.cholesky(a))).numpy(),
                               np.linalg.inv(a))
    assert jt.typename(jt.ones(1)) == "torch.FloatTensor"
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        np.testing.assert_array_equal(jt.range(1, 4).numpy(), [1, 2, 3, 4])
    with pytest.raises(RuntimeError, match="deprecated since version 1.9 and is now removed"):
        jt.symeig(jt.eye(2))
    t = jt.ones(2, 3)
    assert t.unsqueeze_(0) is t and t.shape == (1, 2, 3)
    with pytest.raises(NotImplementedError, match="t_ on a tensor that requires grad"):
        jt.ones(2, 2, requires_grad=True).t_()
    np.testing.assert_array_equal(jt.tensor([1.0, 2.0]).apply_(lambda v: v * 10).numpy(),
                                  [10, 20])


def test_gradient_cells_and_runtime_settings():
    f = np.array([[1.0, 4, 9, 16], [2, 3, 5, 8]])
    for kw, np_args in (({}, {}), ({"spacing": 2.0, "dim": 1, "edge_order": 2},
                                   {"axis": 1, "edge_order": 2})):
        got = jt.gradient(jt.tensor(f), **kw)
        want = np.gradient(f, *([2.0] if "spacing" in kw else []), **np_args)
        want = list(want) if isinstance(want, (list, tuple)) else [want]
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w)
    x = np.array([0.0, 1, 3, 4])
    np.testing.assert_allclose(jt.gradient(jt.tensor(f), spacing=(jt.tensor(x),), dim=1)[0],
                               np.gradient(f, x, axis=1))
    rng = np.random.default_rng(5)
    inp, h = rng.standard_normal((2, 3)), rng.standard_normal((2, 4))
    wi, wh = rng.standard_normal((4, 3)), rng.standard_normal((4, 4))
    np.testing.assert_allclose(
        jt.rnn_tanh_cell(jt.tensor(inp), jt.tensor(h), jt.tensor(wi), jt.tensor(wh)).numpy(),
        np.tanh(inp @ wi.T + h @ wh.T))
    cell = jt.nn.LSTMCell(3, 4).double()
    want = cell(jt.tensor(inp), (jt.tensor(h), jt.tensor(h)))
    got = jt.lstm_cell(jt.tensor(inp), (jt.tensor(h), jt.tensor(h)), cell.weight_ih,
                       cell.weight_hh, cell.bias_ih, cell.bias_hh)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy())
    jt.set_num_interop_threads(3)
    assert jt.get_num_interop_threads() == 3
    jt.set_warn_always(True)
    assert jt.is_warn_always_enabled()
    jt.set_warn_always(False)
    with pytest.raises(RuntimeError, match="now removed"):
        jt.ones(2, 2).symeig()
    y = jt.as_strided_scatter(jt.zeros(6), jt.ones(2, 2), (2, 2), (3, 1), 1)
    np.testing.assert_array_equal(y.numpy(), [0, 1, 1, 0, 1, 1])


def test_conv_tbc_is_conv1d_over_time_batch_channel():
    rng = np.random.default_rng(6)
    x, w, b = rng.standard_normal((7, 2, 3)), rng.standard_normal((3, 3, 4)), np.ones(4)
    got = jt.nn.functional.conv_tbc(jt.tensor(x), jt.tensor(w), jt.tensor(b), 1).numpy()
    xp = np.pad(x, ((1, 1), (0, 0), (0, 0)))
    want = np.stack([np.einsum("kbc,kco->bo", xp[t:t + 3], w) + 1 for t in range(7)])
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_index_reduce_nonzero_static_renorm_and_control_flow():
    x = jt.ones(4, 3) * 2
    src = jt.arange(12.0).reshape(4, 3)
    got = x.index_reduce(0, jt.tensor([0, 2, 0, 3]), src, "amax", include_self=False).numpy()
    np.testing.assert_array_equal(got, [[6, 7, 8], [2, 2, 2], [3, 4, 5], [9, 10, 11]])
    got = x.index_reduce(0, jt.tensor([0, 2, 0, 3]), src, "mean").numpy()
    np.testing.assert_allclose(got[0], (2 + np.array([0, 1, 2]) + [6, 7, 8]) / 3)
    np.testing.assert_array_equal(jt.nonzero_static(jt.tensor([0, 3, 0, 4]), size=3).numpy(),
                                  [[1], [3], [-1]])
    w = jt.arange(12.0).reshape(4, 3)
    jt.embedding_renorm_(w, jt.tensor([1, 3]), 5.0, 2.0)
    np.testing.assert_allclose(np.linalg.norm(w.numpy()[[1, 3]], axis=1), [5, 5], rtol=1e-6)
    np.testing.assert_array_equal(w.numpy()[0], [0, 1, 2])
    assert jt.cond(jt.tensor(False), lambda a: a + 1, lambda a: a - 1, (jt.ones(1),)).item() == 0
    i, s = jt.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2),
                         (jt.tensor(0), jt.ones(2)))
    assert i.item() == 3 and s.tolist() == [8.0, 8.0]


def test_factory_kwargs():
    assert jt.nn.factory_kwargs({"dtype": jt.float64, "factory_kwargs": {"device": "cpu"}}) \
        == {"dtype": jt.float64, "device": "cpu"}
    with pytest.raises(TypeError, match="unexpected kwargs"):
        jt.nn.factory_kwargs({"bias": True})
