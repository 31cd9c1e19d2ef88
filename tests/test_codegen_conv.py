"""Convolutions and pooling compiled inside @script (targets/cpu/lower_conv.py, lower_pool.py):
forward AND backward run as compiled programs (no interpreted reason recorded), values and
gradients equal eager's, a new batch size does not recompile, and wrong shapes raise PyTorch's
error from compiled code. Several configurations share one program per test (compiles are slow).
"""
import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F
from jitorch import jit


def convs2d(x, w, wg, w4, b, xu):
    a = F.conv2d(x, w, b, 1, 1)                              # the padded-grid path, bias
    c = F.conv2d(x, w, None, (2, 1), (0, 2), (1, 2))         # strided, dilated: general path
    d = F.conv2d(x, wg, None, 1, "same", 1, 2)               # groups, "same"
    e = F.conv2d(x, w4, b, 1, "same", (2, 1))                # even kernel: asymmetric "same"
    f = F.conv2d(xu, w, b, 2, "valid")                       # unbatched
    return a, c, d, e, f


def convs1d(x, w, wg, b, xu):
    a = F.conv1d(x, w, b, 1, 2)
    c = F.conv1d(x, w, None, 3, 1, 2)
    d = F.conv1d(x, wg, None, 1, "same", 2, 2)
    e = F.conv1d(xu, w, None)
    return a, c, d, e


def pools(x, y, xu):
    a = F.max_pool2d(x, 2)                                   # the 2x2 fast path
    c = F.max_pool2d(x, 3, 2, 1, ceil_mode=True)
    d = F.max_pool2d(x, (2, 3), (1, 2), 0, (2, 1))
    e = F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)
    f = F.avg_pool2d(x, 2, 1, 1, divisor_override=3)
    g = F.adaptive_avg_pool2d(x, (3, 2)) + F.adaptive_avg_pool2d(x, 1)
    h = F.max_pool1d(y, 3, 2, 1) + F.avg_pool1d(y, 3, 2, 1)
    k = F.adaptive_avg_pool1d(y, 4)
    m = F.max_pool2d(xu, 2, 1)                               # unbatched
    return a, c, d, e, f, g, h, k, m


def conv_relu_pool(x, w):
    return F.avg_pool2d(F.relu(F.conv2d(x, w, None, 1, 1)), 2)


def conv_plain(x, w):
    return F.conv2d(x, w, None, 1, 1)


def pool_plain(x):
    return F.max_pool2d(x, 2, 1)


convs2d_s, convs1d_s, pools_s = jit.script(convs2d), jit.script(convs1d), jit.script(pools)


def _stats():
    s = jit.stats()
    return s["interpreted_runs"], s["compiles"], dict(s["interpreted_reasons"])


def _leaves(gen, shapes, dtype=jitorch.float32):
    return [jitorch.randn(*s, generator=gen, dtype=dtype).requires_grad_(True) for s in shapes]


def _compare(fn, fn_s, shapes, gen, dtype=jitorch.float32, tol=1e-4):
    """Scripted vs eager outputs and gradients of sum(out * r) for random r."""
    args = _leaves(gen, shapes, dtype)
    ref_args = [a.detach().requires_grad_(True) for a in args]
    outs, refs = fn_s(*args), fn(*ref_args)
    loss = loss_ref = 0
    for o, r in zip(outs, refs):
        np.testing.assert_allclose(o.detach().numpy(), r.detach().numpy(), rtol=tol, atol=tol)
        wgt = jitorch.randn(*r.shape, generator=gen, dtype=dtype)
        loss = loss + (o * wgt).sum()
        loss_ref = loss_ref + (r * wgt).sum()
    loss.backward()
    loss_ref.backward()
    for a, r in zip(args, ref_args):
        np.testing.assert_allclose(a.grad.numpy(), r.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("fn,fn_s,shapes", [
    (convs2d, convs2d_s, lambda n: [(n, 4, 7, 6), (3, 4, 3, 3), (6, 2, 3, 3), (3, 4, 2, 4),
                                    (3,), (4, 7, 6)]),
    (convs1d, convs1d_s, lambda n: [(n, 4, 9), (3, 4, 3), (6, 2, 3), (3,), (4, 8)]),
    (pools, pools_s, lambda n: [(n, 3, 7, 8), (n, 3, 9), (3, 7, 8)]),
], ids=["conv2d", "conv1d", "pool"])
def test_compiled_values_and_grads_across_batch_sizes(fn, fn_s, shapes):
    from jitorch.script.runtime import stats
    stats.reset()  # (the counters are process-wide: other tests' fallbacks are not this one's)
    gen = jitorch.Generator().manual_seed(0)
    _compare(fn, fn_s, shapes(2), gen)
    before = _stats()
    assert not before[2], before[2]  # forward and backward both compiled
    _compare(fn, fn_s, shapes(3), gen)
    if fn is pools:
        assert _stats() == before  # a new batch size: no compile, nothing interpreted
    else:
        # a grouped conv's backward is keyed by exact shapes (autodiff's size-perturbation
        # check cannot keep the channels divisible by the groups): a compile, never interpreted
        assert _stats()[0] == before[0] and not _stats()[2]


def convs_plain(x, w, b):
    return F.conv2d(x, w, b, 1, 1), F.conv2d(x, w, None, (2, 1), 0, 2)


convs_plain_s = jit.script(convs_plain)


def conv_bias_and_not(x, w, b):
    return F.conv2d(x, w, b, 1, 1) * F.conv2d(x, w, None, 1, 1)


def test_conv_library_compiled_once_per_dtype():
    """conv.py's functions are called through symbols: a convolution with a bias, one without,
    and the stride-1 input gradient (a forward convolution inside) share ONE compile of the
    forward per dtype (not one per bias case, nor a copy inside the gradient's)."""
    from numba import types
    from jitorch.script.targets.cpu import conv
    gen = jitorch.Generator().manual_seed(3)
    x, w, b = (jitorch.randn(*s, generator=gen) for s in [(2, 3, 6, 5), (4, 3, 3, 3), (4,)])
    xs, xe = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    ys, ye = conv_bias_and_not_s(xs, w, b), conv_bias_and_not(xe, w, b)
    ys.sum().backward()
    ye.sum().backward()
    np.testing.assert_allclose(ys.detach().numpy(), ye.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(xs.grad.numpy(), xe.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert not _stats()[2]  # forward and backward compiled
    f32 = [sig for sig in conv._forward_unit_stride.overloads if sig[0].dtype == types.float32]
    assert len(f32) == 1, f32
    assert any(sig[0].dtype == types.float32 for sig in conv._input_grad_unit_stride.overloads)


def test_constant_strides_call_only_their_method():
    """A program whose strides are constants calls the unit-stride or the strided kernel of
    conv.py by name (only that one is compiled), its backward too."""
    gen = jitorch.Generator().manual_seed(3)
    # (convs_plain: a stride-1 and a (2, 1)-strided convolution; the sizes of the test below)
    _compare(convs_plain, convs_plain_s, [(2, 3, 12, 10), (2, 3, 3, 3), (2,)], gen)
    code = convs_plain_s.code  # (the forward's and the backward's programs)
    for op in ("conv2d_forward", "conv2d_input_grad", "conv2d_weight_grad"):
        assert f"{op}_unit_stride(" in code and f"{op}_strided(" in code, op
        assert f"{op}(" not in code, op  # (no run-time strides: never the picking kernel)


def _kernel_calls():
    """njit functions calling conv.py's kernels by symbol: each method, and the kernel that
    picks one by the run-time stride."""
    from numba import njit
    from jitorch.script.targets.cpu import conv as c

    @njit
    def forward(x, w, b, s, p, q, d):
        return (c.conv2d_forward_unit_stride(x, w, b, True, 1, 1, p, p, q, q, d, d, 1),
                c.conv2d_forward_strided(x, w, b, True, s, s, p, p, q, q, d, d, 1),
                c.conv2d_forward(x, w, b, True, s, s, p, p, q, q, d, d, 1))

    @njit
    def grads(x, w, gy, s, p, d):
        h, wd, kh, kw = x.shape[2], x.shape[3], w.shape[2], w.shape[3]
        return (c.conv2d_input_grad_unit_stride(gy, w, h, wd, 1, 1, p, p, d, d, 1),
                c.conv2d_input_grad_strided(gy, w, h, wd, s, s, p, p, d, d, 1),
                c.conv2d_input_grad(gy, w, h, wd, s, s, p, p, d, d, 1),
                c.conv2d_weight_grad_unit_stride(x, gy, kh, kw, 1, 1, p, p, d, d, 1),
                c.conv2d_weight_grad_strided(x, gy, kh, kw, s, s, p, p, d, d, 1),
                c.conv2d_weight_grad(x, gy, kh, kw, s, s, p, p, d, d, 1))
    return forward, grads


def test_conv_methods_agree_for_any_sizes():
    """The unit-stride grid kernels and the general im2col ones are two methods of one
    function: at stride 1 they agree, for consistent sizes and for gradients of any other
    size too (the grid holds every window and every input pixel), and the run-time picking
    kernel gives the same."""
    forward, grads = _kernel_calls()
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    for trial in range(12):
        n, cin, cout = rng.integers(1, 4), rng.integers(1, 4), rng.integers(1, 4)
        h, wd, k = rng.integers(3, 9), rng.integers(3, 9), rng.integers(1, 4)
        p, q, d = rng.integers(0, 3), rng.integers(0, 3), rng.integers(1, 3)
        if h + p + q < d * (k - 1) + 1 or wd + p + q < d * (k - 1) + 1:
            continue
        x, w, b = f(n, cin, h, wd), f(cout, cin, k, k), f(cout)
        for s in (1, 2):  # (at stride 2: the picking kernel against the strided one)
            ys = forward(x, w, b, s, p, q, d)
            for y in ys[1 if s == 1 else 2:]:
                np.testing.assert_allclose(y, ys[0 if s == 1 else 1], rtol=1e-5, atol=1e-5)
            oh, ow = ys[0 if s == 1 else 1].shape[2:]
            for dh in (0, rng.integers(-2, 3)):  # the forward's size, then another one
                gy = f(n, cout, max(1, oh + dh), max(1, ow + dh))
                out = grads(x, w, gy, s, p, d)
                for ref, got in ((0, 1), (0, 2), (3, 4), (3, 5)) if s == 1 else ((1, 2), (4, 5)):
                    np.testing.assert_allclose(out[got], out[ref], rtol=1e-4, atol=1e-4,
                                               err_msg=f"trial {trial}, stride {s}")


def test_unit_stride_input_grad_crops_where_a_pad_would_be_negative():
    """The unit-stride input gradient is the flipped kernel's forward convolution padded by
    (k-1)*d - p; where that is negative (p > (k-1)*d: a 1x1 kernel with padding, a wide
    padding) or the gradient has another size, it pads by 0 and crops. Against the general
    im2col method."""
    _, grads = _kernel_calls()
    rng = np.random.default_rng(5)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    for k, p, d, grow in [(1, 1, 1, 0), (1, 2, 2, 0), (3, 3, 1, 0), (2, 2, 1, 1), (3, 1, 2, -1),
                          (3, 0, 1, -2), (2, 0, 2, 2)]:
        x, w = f(2, 3, 6, 5), f(4, 3, k, k)
        oh, ow = 6 + 2 * p - d * (k - 1), 5 + 2 * p - d * (k - 1)
        gy = f(2, 4, oh + grow, ow + grow)
        out = grads(x, w, gy, 1, p, d)
        np.testing.assert_allclose(out[0], out[1], rtol=1e-4, atol=1e-4, err_msg=str((k, p, d)))


def test_unit_stride_input_grad_agrees_with_im2col_for_random_groups_and_sizes():
    """A small fuzz of the cropped flipped-forward method against the general im2col one:
    groups, dilations, paddings and gradients one size off, the sizes drawn at random."""
    from numba import njit
    from jitorch.script.targets.cpu import conv as c

    @njit
    def both(gy, w, h, wd, p, d, g):
        return (c.conv2d_input_grad_unit_stride(gy, w, h, wd, 1, 1, p, p, d, d, g),
                c.conv2d_input_grad_strided(gy, w, h, wd, 1, 1, p, p, d, d, g))
    rng = np.random.default_rng(7)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    done = 0
    while done < 60:
        g, n, cg, og = (int(v) for v in rng.integers(1, 4, 4))
        h, wd, k = (int(v) for v in rng.integers(1, 7, 3))
        p, d = int(rng.integers(0, 3)), int(rng.integers(1, 3))
        oh, ow = h + 2 * p - d * (k - 1), wd + 2 * p - d * (k - 1)
        if oh < 1 or ow < 1:
            continue
        grow = int(rng.integers(-1, 2))
        gy, w = f(n, og * g, max(1, oh + grow), max(1, ow + grow)), f(og * g, cg, k, k)
        a, b = both(gy, w, h, wd, p, d, g)
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4,
                                   err_msg=str((g, n, cg, og, h, wd, k, p, d, grow)))
        done += 1


conv_bias_and_not_s = jit.script(conv_bias_and_not)


def test_new_batch_size_does_not_recompile():
    gen = jitorch.Generator().manual_seed(3)
    # (sizes that keep every output size >= 2 when autodiff's check grows each size by 1 and 2)
    _compare(convs_plain, convs_plain_s, [(2, 3, 12, 10), (2, 3, 3, 3), (2,)], gen)
    before = _stats()
    assert not before[2], before[2]
    _compare(convs_plain, convs_plain_s, [(3, 3, 13, 10), (2, 3, 3, 3), (2,)], gen)
    assert _stats() == before


def test_float64_conv_and_pool():
    gen = jitorch.Generator().manual_seed(1)
    f = jit.script(conv_relu_pool)
    x = jitorch.randn(2, 2, 6, 6, generator=gen, dtype=jitorch.float64)
    w = jitorch.randn(3, 2, 3, 3, generator=gen, dtype=jitorch.float64)
    with jitorch.no_grad():
        out = f(x, w)
    ref = F.avg_pool2d(F.relu(F.conv2d(x, w, None, 1, 1)), 2)
    assert out.dtype == jitorch.float64
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    assert not _stats()[2]
    # the convolution's call has no loop around it: it is lowered in the entry, not as a
    # kernel of its own (kernel._library_call); the relu and the average pool are kernels
    entry, *kernels = f.code.split("# --- kernel ")
    assert "conv2d_forward_unit_stride(" in entry
    assert not any("conv2d_forward" in k for k in kernels)
    assert kernels


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(4, 6, 3, padding="same", bias=False), nn.ReLU(),
                                 nn.AvgPool2d(2), nn.Flatten(), nn.Linear(6 * 2 * 2, 5))
        self.c1 = nn.Conv1d(2, 5, 3, padding=1)

    def forward(self, x, s, y):
        logits = self.net(x) + self.c1(s).mean(2)
        return F.cross_entropy(logits, y)


def test_scripted_cnn_train_step_compiled_and_equal_to_eager():
    jitorch.manual_seed(0)
    model = CNN()
    scripted = jit.script(model)
    gen = jitorch.Generator().manual_seed(2)
    for n in (3, 4):
        x = jitorch.randn(n, 1, 8, 8, generator=gen)
        s = jitorch.randn(n, 2, 5, generator=gen)
        y = jitorch.randint(0, 5, (n,), generator=gen)
        model.zero_grad()
        loss = scripted(x, s, y)
        loss.backward()
        grads = [p.grad.numpy().copy() for p in model.parameters()]
        model.zero_grad()
        ref = model(x, s, y)
        ref.backward()
        np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-5)
        for g, p in zip(grads, model.parameters()):
            np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-4, atol=1e-6)
        assert not _stats()[2], _stats()[2]


def test_wrong_channels_raise_from_compiled_code():
    f = jit.script(conv_plain)
    with jitorch.no_grad():
        f(jitorch.randn(1, 2, 5, 5), jitorch.randn(3, 2, 3, 3))
        # eager's message in every tier (the runtime reruns a failed program call in the
        # interpreter: docs/compilation.md, "Errors")
        with pytest.raises(RuntimeError, match=r"expected input\[1, 4, 5, 5\] to have 2 "
                                               r"channels, but got 4 channels instead"):
            f(jitorch.randn(1, 4, 5, 5), jitorch.randn(3, 2, 3, 3))
        with pytest.raises(RuntimeError, match="Kernel size can't be greater than actual input"):
            f(jitorch.randn(1, 2, 1, 1), jitorch.randn(3, 2, 5, 5))
    assert not _stats()[2]


def test_max_pool_nan_and_ties_route_like_eager():
    f = jit.script(pool_plain)
    x = jitorch.tensor([[[[1.0, 1.0, 0.0], [float("nan"), 2.0, 2.0], [0.0, 2.0, 1.0]]]],
                       requires_grad=True)
    xr = x.detach().requires_grad_(True)
    out, ref = f(x), F.max_pool2d(xr, 2, 1)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), xr.grad.numpy())


def pool_2x2(x):
    return F.max_pool2d(x, 2)


def test_the_2x2_max_pool_calls_its_own_kernels_with_eagers_choice():
    """A constant 2x2 / stride-2 max pool calls pool.py's `_2x2` kernels (the program compiles
    neither the general loops nor `_argmax_window`), and routes values and gradients like
    eager: ties, a NaN (the first in window order), an inf beside a -inf (their sum is NaN,
    no element is), odd sizes (the last row and column are in no window)."""
    f = jit.script(pool_2x2)
    a = np.array([[1.0, 1.0, 0.0, 5.0, 7.0], [np.nan, 2.0, 2.0, np.nan, 1.0],
                  [np.inf, -np.inf, 3.0, 3.0, 0.0], [1.0, np.inf, 3.0, -1.0, 2.0],
                  [0.0, 9.0, 9.0, 0.0, 4.0]], np.float32)[None, None].repeat(2, 1)
    a[0, 1] *= -1
    x, xr = jitorch.tensor(a, requires_grad=True), jitorch.tensor(a, requires_grad=True)
    out, ref = f(x), F.max_pool2d(xr, 2)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    g = np.arange(1, 1 + out.numel(), dtype=np.float32).reshape(tuple(out.shape))
    out.backward(jitorch.tensor(g))
    ref.backward(jitorch.tensor(g))
    np.testing.assert_array_equal(x.grad.numpy(), xr.grad.numpy())
    from test_eager_max_pool_kernels import _reference  # the window-by-window rule
    rv, _, rg = _reference(a, g, (2, 2), (2, 2), (0, 0), (1, 1), False)
    np.testing.assert_array_equal(out.detach().numpy(), rv)
    np.testing.assert_array_equal(x.grad.numpy(), rg)
    assert not _stats()[2]
    code = f.code
    assert "max_pool2d_forward_2x2(" in code and "max_pool2d_backward_2x2(" in code
    assert "max_pool2d_forward(" not in code and "max_pool2d_backward(" not in code
