"""`jitorch.nn.functional`: errors (PyTorch's types and messages) and behaviours the OpInfo
table cannot express (in-place forms, dropout's randomness, running statistics, padding_idx
gradients, the implicit softmax dim, legacy reduction flags, scripting). Values of every op are
checked against NumPy references in `opinfos/nn.py`.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F


def _t(a, **kw):
    return jitorch.tensor(np.asarray(a), **kw)


X = np.array([[-2.0, -0.5, 0.0, 0.5, 3.0], [1.0, -1.0, 2.0, -3.0, 0.25]])
TARGET = np.array([1, 4])


# --- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,kernel", [
    (F.leaky_relu, "leaky_relu_cpu"), (F.elu, "elu_cpu"), (F.selu, "elu_cpu"),
    (F.celu, "elu_cpu"), (F.gelu, "GeluKernelImpl"), (F.silu, "silu_cpu"),
    (F.mish, "mish_cpu"), (F.hardsigmoid, "hardsigmoid_cpu"), (F.hardswish, "hardswish_cpu"),
    (F.softplus, "softplus_cpu"), (F.logsigmoid, "log_sigmoid_cpu"),
    (F.softshrink, "softshrink_check"), (F.hardshrink, "hardshrink_cpu"),
])
def test_float_only_activations_reject_integers(fn, kernel):
    with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Long\''):
        fn(_t([1, 2]))


def test_integer_activations_keep_dtype_and_bool_errors():
    x = _t([-2, 0, 7])
    assert F.relu(x).dtype is jitorch.int64 and F.relu(x).tolist() == [0, 0, 7]
    assert F.relu6(x).tolist() == [0, 0, 6]
    assert F.hardtanh(x).tolist() == [-1, 0, 1]
    assert F.threshold(x, 0, 5).tolist() == [5, 5, 7]
    assert F.softsign(x).dtype is jitorch.float32  # a composite in PyTorch: int -> float
    b = _t([True, False])
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        F.relu(b)
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        F.relu6(b)
    with pytest.raises(NotImplementedError, match='"threshold_cpu" not implemented for'):
        F.threshold(b, 0, 1)


def test_activation_argument_errors():
    x = _t(X)
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(x, approximate="fast")
    with pytest.raises(RuntimeError, match=r"lambda must be in range \[0, 1.79769e\+308\] for "
                                           r"input dtype Double, but found -1"):
        F.softshrink(x, -1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(x, 0.0)


def test_softmax_errors_and_implicit_dim():
    with pytest.raises(NotImplementedError, match='"softmax_lastdim_kernel_impl" not '
                                                  'implemented for \'Long\''):
        F.softmax(_t([1, 2]), 0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range "
                                         r"of \[-2, 1\], but got 2\)"):
        F.log_softmax(_t(X), 2)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        r = F.softmax(_t(X))
    np.testing.assert_allclose(r.numpy(), F.softmax(_t(X), 1).numpy())
    r = F.softmax(_t([1, 2, 3]), 0, dtype=jitorch.float64)  # dtype= casts first
    assert r.dtype is jitorch.float64
    assert F.log_softmax(_t(X), 1, dtype=jitorch.float32).dtype is jitorch.float32


def test_reduction_and_target_errors():
    x, t = _t(X), _t(TARGET)
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="foo")
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        F.cross_entropy(x, t, reduction="foo")
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Float"):
        F.nll_loss(x, jitorch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Float"):
        F.cross_entropy(x, jitorch.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got "
                                           "Int"):
        F.cross_entropy(x, t.int())
    with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target "
                                         r"batch_size \(3\)"):
        F.cross_entropy(x, _t([0, 1, 2]))
    with pytest.raises(IndexError, match="Target 7 is out of bounds."):
        F.cross_entropy(x, _t([1, 7]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds."):
        F.nll_loss(x, _t([-3, 0]))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: "
                                           "1.5"):
        F.cross_entropy(x, t, label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point "
                                           "target"):
        F.cross_entropy(x, F.softmax(x, 1), ignore_index=1)
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 5 "
                                           "classes or no classes"):
        F.cross_entropy(x, t, weight=_t([1.0, 2.0]))


def test_pointwise_loss_errors_and_warnings():
    x = _t(X)
    with pytest.warns(UserWarning, match=r"Using a target size \(jitorch.Size\(\[2, 1\]\)\) "
                                         r"that is different to the input size"):
        F.mse_loss(x, x[:, :1])
    with pytest.raises(ValueError, match="Using a target size .* is deprecated"):
        F.binary_cross_entropy(x.sigmoid(), x[:, :1].sigmoid())
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(x, x.sigmoid())
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values "
                                           "for beta."):
        F.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values "
                                           "for delta."):
        F.huber_loss(x, x, delta=0.0)
    with pytest.warns(UserWarning, match="reduction: 'mean' divides the total loss"):
        F.kl_div(x, x.exp())
    with pytest.raises(RuntimeError, match="margin_ranking_loss : All input tensors should "
                                           "have same dimension"):
        F.margin_ranking_loss(x, x, _t([1.0, -1.0]))


def test_misc_errors():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        F.dropout(_t(X), 1.5)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type "
                                           "LongTensor."):
        F.one_hot(_t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(_t([1, 5]), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(_t([1, -1]))
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(_t([1, 5]), _t(X))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with "
                                           r"shape \[\*, 4\], but got input of size\[2, 5\]"):
        F.layer_norm(_t(X), (4,))
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be "
                                           "divisible by num_groups"):
        F.group_norm(_t(np.zeros((2, 6, 3))), 4)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when "
                                         "training"):
        F.batch_norm(_t(np.zeros((1, 3))), None, None, training=True)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(2x5 and 4x3\)"):
        F.linear(_t(X), _t(np.zeros((3, 4))))


def test_pad_errors():
    x = _t(X)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(x, (1,))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two "
                                           "times the input dimension but got padding length 6 "
                                           "and input of dimension 2"):
        F.pad(x, (1,) * 6)
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding "
                                           r"input dimension, but got: padding \(5, 5\) at "
                                           r"dimension 1 of input \[2, 5\]"):
        F.pad(x, (5, 5), mode="reflect")
    with pytest.raises(RuntimeError, match='Padding mode "reflect" doesn\'t take in value'):
        F.pad(x, (1, 1), mode="reflect", value=1.0)
    with pytest.raises(NotImplementedError, match="Padding size 4 is not supported for 2D input "
                                                  "tensor."):
        F.pad(x, (1, 1, 1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than "
                                           "once."):
        F.pad(x, (6, 0), mode="circular")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode foo"):
        F.pad(x, (1, 1), mode="foo")


# --- behaviours --------------------------------------------------------------------------------
def test_inplace_activations_write_into_the_input():
    for fn, kw, ref in [
            (F.relu, {}, lambda a: np.maximum(a, 0)),
            (F.leaky_relu, {"negative_slope": 0.2}, lambda a: np.where(a > 0, a, 0.2 * a)),
            (F.hardtanh, {"min_val": -1.0, "max_val": 0.5}, lambda a: np.clip(a, -1, 0.5)),
            (F.elu, {"alpha": 0.5}, lambda a: np.where(a > 0, a, 0.5 * np.expm1(a))),
            (F.threshold, {"threshold": 0.1, "value": 9.0}, lambda a: np.where(a > 0.1, a, 9))]:
        x = _t(X)
        r = fn(x, **kw, inplace=True)
        assert r is x, fn.__name__
        np.testing.assert_allclose(x.numpy(), ref(X), err_msg=fn.__name__)
    x = _t(X)
    assert F.relu_(x) is x and x.numpy().min() == 0
    y = _t(X)
    assert y.relu_() is y and np.array_equal(y.numpy(), np.maximum(X, 0))
    np.testing.assert_allclose(jitorch.relu(_t(X)).numpy(), np.maximum(X, 0))
    np.testing.assert_allclose(_t(X).relu().numpy(), np.maximum(X, 0))


def test_inplace_activation_autograd_matches_out_of_place():
    a = _t(X, requires_grad=True)
    F.leaky_relu(a.clone(), 0.3, inplace=True).sum().backward()
    b = _t(X, requires_grad=True)
    F.leaky_relu(b, 0.3).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_public_softmax_forms_agree():
    x = _t(X)
    want = np.exp(X) / np.exp(X).sum(1, keepdims=True)
    for r in (jitorch.softmax(x, 1), x.softmax(1), F.softmax(x, dim=1),
              jitorch.log_softmax(x, 1).exp(), x.log_softmax(-1).exp()):
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-12)


def test_dropout_identity_cases_return_the_input():
    x = _t(X)
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 1.0).numpy().tolist() == np.zeros_like(X).tolist()


def test_dropout_statistics_scaling_and_seed():
    x = jitorch.ones(200, 100, dtype=jitorch.float64)
    jitorch.manual_seed(0)
    r = F.dropout(x, 0.3).numpy()
    kept = r != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(r[kept], 1 / 0.7)
    jitorch.manual_seed(0)
    assert np.array_equal(F.dropout(x, 0.3).numpy(), r)  # the default generator drives it
    y = x.clone()
    jitorch.manual_seed(0)
    assert F.dropout(y, 0.3, inplace=True) is y and np.array_equal(y.numpy(), r)


def test_dropout_gradient_uses_the_same_mask():
    x = jitorch.ones(50, 40, dtype=jitorch.float64, requires_grad=True)
    r = F.dropout(x, 0.5)
    r.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), r.detach().numpy())


def test_batch_norm_updates_running_stats_in_training():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 3, 2))
    rm, rv = _t(np.zeros(3)), _t(np.ones(3))
    out = F.batch_norm(_t(a), rm, rv, training=True, momentum=0.2)
    mean = a.mean((0, 2))
    var_u = a.var((0, 2), ddof=1)
    np.testing.assert_allclose(rm.numpy(), 0.2 * mean)
    np.testing.assert_allclose(rv.numpy(), 0.8 + 0.2 * var_u)
    want = (a - mean[None, :, None]) / np.sqrt(a.var((0, 2))[None, :, None] + 1e-5)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10)
    # eval: the running statistics normalise, and are left alone
    out = F.batch_norm(_t(a), rm, rv)
    np.testing.assert_allclose(out.numpy(), (a - rm.numpy()[None, :, None])
                               / np.sqrt(rv.numpy()[None, :, None] + 1e-5))
    np.testing.assert_allclose(rm.numpy(), 0.2 * mean)


def test_batch_norm_running_stats_do_not_join_the_graph():
    x = _t(np.random.default_rng(1).standard_normal((4, 2)), requires_grad=True)
    rm, rv = _t(np.zeros(2)), _t(np.ones(2))
    F.batch_norm(x, rm, rv, training=True).pow(2).sum().backward()
    assert not rm.requires_grad and not rv.requires_grad and x.grad is not None


def test_embedding_padding_idx_row_gets_no_gradient():
    w = _t(np.arange(12.0).reshape(4, 3), requires_grad=True)
    idx = _t([[0, 2], [2, 3]])
    out = F.embedding(idx, w, padding_idx=2)
    np.testing.assert_array_equal(out.detach().numpy()[0, 1], [6.0, 7.0, 8.0])  # value kept
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[1] * 3, [0] * 3, [0] * 3, [1] * 3])
    w.grad = None
    F.embedding(idx, w, padding_idx=-2).sum().backward()  # negative: counted from the end
    np.testing.assert_array_equal(w.grad.numpy()[2], [0, 0, 0])


def test_cross_entropy_all_ignored_is_nan_and_legacy_flags():
    x, t = _t(X), _t([-100, -100])
    assert np.isnan(F.cross_entropy(x, t).item())
    assert F.cross_entropy(x, t, reduction="sum").item() == 0
    y = _t(X[::-1].copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = F.mse_loss(x, y, size_average=False)
        n = F.mse_loss(x, y, reduce=False)
    assert s.item() == pytest.approx(((X - X[::-1]) ** 2).sum())
    assert tuple(n.shape) == X.shape


def test_nn_linear_uses_functional_linear():
    m = nn.Linear(5, 3, dtype=jitorch.float64)
    x = _t(X)
    want = X @ m.weight.detach().numpy().T + m.bias.detach().numpy()
    np.testing.assert_allclose(m(x).detach().numpy(), want)
    np.testing.assert_allclose(F.linear(x, m.weight, m.bias).detach().numpy(), want)


def test_scripted_function_compiles_activation_calls_to_ops():
    @jitorch.jit.script
    def f(x):
        return F.leaky_relu(F.relu6(x), 0.2) + F.hardtanh(x, -0.5, 0.5) + F.silu(x)
    x = _t(X)
    np.testing.assert_allclose(f(x).numpy(), (F.leaky_relu(F.relu6(x), 0.2)
                                              + F.hardtanh(x, -0.5, 0.5) + F.silu(x)).numpy(),
                               rtol=1e-12)
    ops = {n.op for n in f.graph.nodes()}
    assert {"relu6", "leaky_relu", "hardtanh", "silu"} <= ops
