"""jitorch.autocast / jitorch.amp (issue 11 part 7): CPU autocast's op lists, casts and their
gradients, the state API, GradScaler, float32 matmul precision, scripted calls inside autocast.

Expected values are NumPy computations on bfloat16-rounded inputs (ml_dtypes), the closed form of
what PyTorch's CPU autocast computes: lower-precision ops round their float32 inputs to bf16,
accumulate in float32 and round the result to bf16."""
import threading
import warnings

import ml_dtypes
import numpy as np
import pytest

import jitorch as torch
import jitorch.nn.functional as F
from jitorch import _autocast, _profiling

BF16 = ml_dtypes.bfloat16


def bf(a):
    """float32 -> bf16 -> float32 (the rounding a lower-precision cast does)."""
    return np.asarray(a, np.float32).astype(BF16).astype(np.float32)


@pytest.fixture
def xw():
    rng = np.random.default_rng(0)
    return rng.standard_normal((5, 7)).astype(np.float32), \
        rng.standard_normal((7, 3)).astype(np.float32)


# --- op lists ----------------------------------------------------------------------------------
def test_mm_matmul_in_bf16_values(xw):
    x, w = xw
    tx, tw = torch.tensor(x), torch.tensor(w)
    expect = (bf(x) @ bf(w)).astype(BF16)
    with torch.autocast("cpu"):
        for r in (torch.mm(tx, tw), tx @ tw, torch.matmul(tx, tw)):
            assert r.dtype is torch.bfloat16
            np.testing.assert_array_equal(r.numpy(), expect)
    assert torch.mm(tx, tw).dtype is torch.float32  # outside: float32 again


def test_float16_autocast_and_addmm_bmm(xw):
    x, w = xw
    tx, tw = torch.tensor(x), torch.tensor(w)
    b = np.ones((5, 3), np.float32) * 0.1
    with torch.autocast("cpu", dtype=torch.float16):
        r = torch.addmm(torch.tensor(b), tx, tw)
        assert r.dtype is torch.float16
        h = lambda a: a.astype(np.float16).astype(np.float32)  # noqa: E731
        np.testing.assert_allclose(r.numpy().astype(np.float32), h(h(b) + h(x) @ h(w)),
                                   rtol=1e-3, atol=1e-3)
        bm = torch.bmm(tx[None], tw[None])
        assert bm.dtype is torch.float16


def test_linear_with_bias_and_conv2d_are_bf16(xw):
    x, w = xw
    bias = np.linspace(-1, 1, 3).astype(np.float32)
    with torch.autocast("cpu"):
        r = F.linear(torch.tensor(x), torch.tensor(w.T.copy()), torch.tensor(bias))
        c = F.conv2d(torch.ones(1, 2, 4, 4), torch.ones(3, 2, 3, 3), torch.zeros(3))
        lin = torch.nn.Linear(7, 3)(torch.tensor(x))
    assert r.dtype is torch.bfloat16 and c.dtype is torch.bfloat16 and lin.dtype is torch.bfloat16
    # the bias is cast too (PyTorch casts every argument of linear), so one bf16 rounding of
    # the float32 sum of bf16 products and the bf16 bias
    np.testing.assert_allclose(r.numpy().astype(np.float32), bf(bf(x) @ bf(w) + bf(bias)),
                               rtol=1e-2, atol=1e-2)
    np.testing.assert_array_equal(c.numpy().astype(np.float32), np.full((1, 3, 2, 2), 18.0))


def test_fp32_list_ops_return_float32_for_bf16_inputs():
    a = torch.tensor([[0.5, 1.5], [2.0, 3.0]]).bfloat16()
    t = torch.tensor([[1.0, 1.0], [1.0, 2.0]]).bfloat16()
    with torch.autocast("cpu"):
        mse = F.mse_loss(a, t)
        prod = torch.prod(a)
        ce = F.cross_entropy(a, torch.tensor([0, 1]))
        tr = torch.trace(a)
        inv = torch.inverse(a)
        spec = torch.fft.rfft(a[0])
        dist = torch.cdist(a, t)
    assert spec.dtype is torch.complex64
    np.testing.assert_allclose(spec.numpy(), np.fft.rfft(a[0].float().numpy()), rtol=1e-6)
    for r in (mse, prod, ce, tr, inv, dist):
        assert r.dtype is torch.float32
    av, tv = a.float().numpy(), t.float().numpy()
    np.testing.assert_allclose(mse.item(), ((av - tv) ** 2).mean(), rtol=1e-6)
    np.testing.assert_allclose(prod.item(), av.prod(), rtol=1e-6)
    lse = np.log(np.exp(av).sum(1))
    np.testing.assert_allclose(ce.item(), (lse - av[[0, 1], [0, 1]]).mean(), rtol=1e-5)
    np.testing.assert_allclose(inv.numpy(), np.linalg.inv(av), rtol=1e-5)


def test_ops_outside_the_lists_keep_their_dtype():
    a = torch.tensor([1.0, 2.0]).bfloat16()
    with torch.autocast("cpu"):
        assert (a + a).dtype is torch.bfloat16  # add: no policy
        assert torch.softmax(a, 0).dtype is torch.bfloat16  # not on PyTorch's CPU fp32 list
        assert (torch.ones(2) * 2).dtype is torch.float32


def test_promote_ops_and_float64_untouched():
    f32 = torch.ones(2)
    b16 = torch.ones(2).bfloat16()
    f64 = torch.ones(2, 2, dtype=torch.float64)
    with torch.autocast("cpu"):
        assert torch.cat([b16, f32]).dtype is torch.float32
        assert torch.stack([b16, b16]).dtype is torch.bfloat16
        assert torch.mm(f64, f64).dtype is torch.float64  # float64 is never cast
        with pytest.raises(RuntimeError, match="same dtype"):
            torch.mm(torch.ones(2, 2), f64)  # f32 -> bf16 meets f64, as in PyTorch
        assert torch.mm(torch.ones(2, 2, dtype=torch.int64),
                        torch.ones(2, 2, dtype=torch.int64)).dtype is torch.int64


def test_every_declared_policy_is_valid_and_the_lists_are_declared():
    from jitorch._ops.registry import OPS
    pol = {n: _autocast.policy_on(op.autocast, "cpu") for n, op in OPS.items()}
    assert set(pol.values()) <= {"lower", "fp32", "promote", None}
    for n in ("mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "conv1d", "conv2d",
              "conv_transpose1d", "conv_transpose2d", "_linalg_vecdot"):
        assert pol[n] == "lower", n
    for n in ("prod", "quantile", "trace", "inverse", "cholesky", "_linalg_svd"):
        assert pol[n] == "fp32", n
    for n in ("cat", "stack", "index_copy"):
        assert pol[n] == "promote", n
    cpu = {f: _autocast.policy_on(f.autocast, "cpu") for f in (
        F.linear, F.mse_loss, F.prelu, F.soft_margin_loss, torch.cdist, torch.cholesky_solve)}
    assert list(cpu.values()) == ["lower", "fp32", "lower", "fp32", "fp32", "fp32"]
    with pytest.raises(ValueError, match="unknown autocast policy"):
        _autocast.policy("fp64")


# --- autograd -----------------------------------------------------------------------------------
def test_grads_flow_through_casts_in_leaf_dtype(xw):
    x, w = xw
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    with torch.autocast("cpu"):
        y = torch.mm(tx, tw)
        loss = y.float().sum()
    loss.backward()
    assert tx.grad.dtype is torch.float32 and tw.grad.dtype is torch.float32
    g = np.ones((5, 3), np.float32)
    np.testing.assert_array_equal(tx.grad.numpy(), bf(g @ bf(w).T))
    np.testing.assert_array_equal(tw.grad.numpy(), bf(bf(x).T @ g))


def test_weight_cast_cache_reuses_one_cast_and_grads_accumulate(xw):
    x, w = xw
    tw = torch.tensor(w, requires_grad=True)
    tx = torch.tensor(x)
    with torch.autocast("cpu"):
        a = torch.mm(tx, tw)
        b = torch.mm(tx, tw)
        assert len(_autocast._state.cache) == 1
        (a.float().sum() + b.float().sum()).backward()
    assert len(_autocast._state.cache) == 0  # cleared when the outermost region exits
    np.testing.assert_array_equal(tw.grad.numpy(), 2 * bf(bf(x).T @ np.ones((5, 3), np.float32)))
    with torch.autocast("cpu", cache_enabled=False):
        torch.mm(tx, tw)
        assert len(_autocast._state.cache) == 0


# --- the state API ------------------------------------------------------------------------------
def test_state_functions_nesting_and_decorator():
    assert not torch.is_autocast_enabled("cpu")
    assert torch.get_autocast_dtype("cpu") is torch.bfloat16
    with torch.autocast("cpu", dtype=torch.float16):
        assert torch.is_autocast_enabled("cpu") and torch.is_autocast_cpu_enabled()
        assert torch.get_autocast_dtype("cpu") is torch.float16
        assert not torch.is_autocast_enabled()  # no argument: CUDA's state
        with torch.autocast("cpu", enabled=False):
            assert not torch.is_autocast_enabled("cpu")
            assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype is torch.float32
        assert torch.is_autocast_enabled("cpu")
    assert torch.get_autocast_dtype("cpu") is torch.bfloat16

    @torch.amp.autocast("cpu")
    def f(a):
        return torch.mm(a, a)
    assert f(torch.ones(2, 2)).dtype is torch.bfloat16
    assert _profiling.intercept[0] is None  # nothing left installed in dispatch


def test_state_restored_after_an_exception():
    with pytest.raises(ZeroDivisionError):
        with torch.autocast("cpu"):
            1 / 0
    assert not torch.is_autocast_enabled("cpu") and _profiling.intercept[0] is None


def test_autocast_is_thread_local():
    seen = []
    with torch.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append(
            (torch.is_autocast_enabled("cpu"), torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype)))
        t.start()
        t.join()
    assert seen == [(False, torch.float32)]


def test_errors_and_warnings_as_pytorch():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        torch.autocast(0)
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        torch.autocast("foo")
    with pytest.warns(UserWarning, match="target dtype is not supported. Disabling autocast"):
        ac = torch.autocast("cpu", dtype=torch.float32)
    with ac:
        assert not torch.is_autocast_enabled("cpu")
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        ac = torch.cpu.amp.autocast()
    with ac:
        assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype is torch.bfloat16
    with pytest.raises(TypeError, match="requires a callable"):
        torch.autocast("cpu")(3)


# --- GradScaler ---------------------------------------------------------------------------------
def _model():
    p = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    return p, torch.optim.SGD([p], lr=0.1)


def test_grad_scaler_scale_unscale_step_update():
    p, opt = _model()
    s = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    loss = (p * p).sum()
    scaled = s.scale(loss)
    np.testing.assert_allclose(scaled.item(), 1024.0 * 5.0)
    scaled.backward()
    np.testing.assert_allclose(p.grad.numpy(), 1024.0 * np.array([2.0, -4.0]))
    s.unscale_(opt)
    np.testing.assert_allclose(p.grad.numpy(), [2.0, -4.0])
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        s.unscale_(opt)
    s.step(opt)
    np.testing.assert_allclose(p.detach().numpy(), [0.8, -1.6], rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called"):
        s.step(opt)
    s.update()
    assert s.get_scale() == 1024.0 and s._get_growth_tracker() == 1
    opt.zero_grad()
    s.scale((p * p).sum()).backward()
    s.step(opt)
    s.update()  # second clean step: growth_interval reached, the scale doubles
    assert s.get_scale() == 2048.0 and s._get_growth_tracker() == 0


def test_grad_scaler_skips_inf_steps_and_backs_off():
    p, opt = _model()
    s = torch.amp.GradScaler("cpu", init_scale=8.0)
    s.scale((p * p).sum()).backward()
    p.grad.data[0] = float("inf")
    before = p.detach().numpy().copy()
    assert s.step(opt) is None
    np.testing.assert_array_equal(p.detach().numpy(), before)  # the step was skipped
    s.update()
    assert s.get_scale() == 4.0
    assert s.state_dict() == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                              "growth_interval": 2000, "_growth_tracker": 0}
    s2 = torch.amp.GradScaler("cpu")
    s2.load_state_dict(s.state_dict())
    assert s2.get_scale() == 4.0
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        torch.amp.GradScaler("cpu", growth_factor=1.0)


@pytest.mark.skipif(torch.cuda.is_available(),
                    reason="asserts what a process without CUDA answers (with CUDA: "
                           "tests/test_autocast_cuda.py)")
def test_cuda_autocast_and_grad_scaler_disable_themselves_without_cuda():
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ac = torch.autocast("cuda")
    with ac:
        assert not torch.is_autocast_enabled("cuda")
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling"):
        s = torch.amp.GradScaler()
    loss = torch.tensor(3.0)
    assert not s.is_enabled() and s.scale(loss) is loss and s.get_scale() == 1.0


def test_grad_scaler_bf16_loss_keeps_dtype():
    s = torch.amp.GradScaler("cpu")
    assert s.scale(torch.tensor([1.5]).bfloat16()).dtype is torch.bfloat16
    with pytest.raises(AssertionError, match="_scale is None"):
        torch.amp.GradScaler("cpu").unscale_(_model()[1])


# --- float32 matmul precision -------------------------------------------------------------------
def test_float32_matmul_precision_levels(xw):
    x, w = xw
    assert torch.get_float32_matmul_precision() == "highest"
    ref = torch.mm(torch.tensor(x), torch.tensor(w)).numpy()
    try:
        for level in ("high", "medium"):
            torch.set_float32_matmul_precision(level)
            assert torch.get_float32_matmul_precision() == level
            # every level stays exact float32 here (README "Mixed precision")
            np.testing.assert_array_equal(torch.mm(torch.tensor(x), torch.tensor(w)).numpy(),
                                          ref)
        with pytest.warns(UserWarning, match="is not one of 'highest', 'high', or 'medium'"):
            torch.set_float32_matmul_precision("HIGH")
        assert torch.get_float32_matmul_precision() == "medium"
        with pytest.raises(RuntimeError, match="expects a str, but got int"):
            torch.set_float32_matmul_precision(3)
    finally:
        torch.set_float32_matmul_precision("highest")


# --- scripted code and the profiler -------------------------------------------------------------
@torch.jit.script
def _scripted(x, w, b):
    y = F.linear(x, w, b)
    return y, F.mse_loss(y, x), torch.mm(x, w)


def test_scripted_call_inside_autocast_matches_eager():
    rng = np.random.default_rng(1)
    x = torch.tensor(rng.standard_normal((4, 4)).astype(np.float32), requires_grad=True)
    w = torch.tensor(rng.standard_normal((4, 4)).astype(np.float32))
    b = torch.tensor(rng.standard_normal(4).astype(np.float32))
    assert [t.dtype for t in _scripted(x, w, b)] == [torch.float32] * 3
    # the policy wrappers keep F.linear / F.mse_loss composites (not Python calls) when scripted
    assert "PythonOp" not in _scripted.code and "Python call" not in _scripted.code
    with torch.autocast("cpu"):
        got = _scripted(x, w, b)
        want = (F.linear(x, w, b), F.mse_loss(F.linear(x, w, b), x), torch.mm(x, w))
    assert [t.dtype for t in got] == [torch.bfloat16, torch.float32, torch.bfloat16]
    for g_, w_ in zip(got, want):
        assert g_.dtype is w_.dtype
        np.testing.assert_array_equal(g_.detach().float().numpy(), w_.detach().float().numpy())
    assert "autocast" in _scripted.autocast_reason
    gx, = torch.autograd.grad(got[1], x)
    ex, = torch.autograd.grad(want[1], x)
    assert gx.dtype is torch.float32
    np.testing.assert_array_equal(gx.numpy(), ex.numpy())


def test_profiler_and_autocast_together():
    from jitorch.profiler import profile
    a = torch.ones(3, 3)
    with profile() as prof:
        with torch.autocast("cpu"):
            r = torch.mm(a, a)
    assert r.dtype is torch.bfloat16
    names = {e.key for e in prof.key_averages()}
    assert "aten::mm" in names and "aten::_to_dtype" in names
    assert _profiling.intercept[0] is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with torch.autocast("cpu"):
            with profile() as prof:
                torch.mm(a, a)
            assert _profiling.intercept[0] is _autocast.dispatch_hook
        assert _profiling.intercept[0] is None


def test_with_autocast_inside_scripted_code():
    @torch.jit.script
    def f(x, w):
        a = torch.mm(x, w)
        with torch.autocast("cpu"):
            b = torch.mm(x, w)
            with torch.autocast("cpu", enabled=False):
                c = torch.mm(x, w)
            d = F.mse_loss(b, a.bfloat16())
        return a, b, c, d

    rng = np.random.default_rng(2)
    xn = rng.standard_normal((3, 4)).astype(np.float32)
    wn = rng.standard_normal((4, 2)).astype(np.float32)
    x = torch.tensor(xn, requires_grad=True)
    a, b, c, d = f(x, torch.tensor(wn))
    assert [t.dtype for t in (a, b, c, d)] == [torch.float32, torch.bfloat16, torch.float32,
                                               torch.float32]
    np.testing.assert_array_equal(b.detach().numpy(), (bf(xn) @ bf(wn)).astype(BF16))
    assert not torch.is_autocast_enabled("cpu")  # the region closed with the call
    b.float().sum().backward()
    assert x.grad.dtype is torch.float32
    np.testing.assert_array_equal(x.grad.numpy(), bf(np.ones((3, 2), np.float32) @ bf(wn).T))


def test_scripted_autocast_region_closed_by_an_error_and_refusals():
    @torch.jit.script
    def g(x):
        with torch.autocast("cpu"):
            y = torch.mm(x, x).view(100)
        return y
    with pytest.raises(RuntimeError, match="invalid for input of size 9"):
        g(torch.ones(3, 3))
    assert not torch.is_autocast_enabled("cpu") and _profiling.intercept[0] is None

    def h(x):
        with torch.autocast("cpu"):
            return torch.mm(x, x)
    with pytest.raises(Exception, match="'return' inside a scripted autocast region"):
        torch.jit.script(h)


def test_deprecated_cpu_amp_autocast_region_in_scripted_code():
    @torch.jit.script
    def f(x):
        with torch.cpu.amp.autocast(True, torch.float16):
            y = torch.mm(x, x)
        return y
    assert f(torch.ones(2, 2)).dtype is torch.float16
