"""jitorch.fft inside `@jitorch.script`: every transform compiles (rocket-fft's np.fft in njit)
and equals eager; sizes given at run time are checked as eager checks them; complex arrays flow
through compiled programs (arguments, fused + - * loops) and whatever a program cannot do with
them runs interpreted, never wrongly; without rocket-fft the ops run interpreted with a reason."""
import numpy as np
import pytest

import jitorch
from jitorch import fft as F
from jitorch.script.targets.cpu import lower_fft

RNG = np.random.default_rng(5)


def _compiled(fn) -> bool:
    return not fn.code.startswith("# runs interpreted")


def _same(got, want, atol=1e-5):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype is w.dtype and tuple(g.shape) == tuple(w.shape), (g.dtype, w.dtype)
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), atol=atol,
                                   rtol=1e-5)


def _c(*shape):
    return jitorch.complex(jitorch.randn(*shape), jitorch.randn(*shape))


def c2c(x, n: int):
    return (F.fft(x), F.ifft(x, n=n, dim=0, norm="ortho"), F.fft2(x, s=(3, 7)),
            F.ifft2(x, norm="forward"), F.fftn(x, dim=(1,)), F.ifftn(x, s=(2, -1)))


def real(x, n: int):
    return (F.rfft(x, n=n), F.rfft2(x, norm="ortho"), F.rfftn(x, s=(4, 6)),
            F.irfft(x, n=n), F.irfft2(x, s=(3, 8), norm="forward"), F.irfftn(x, dim=(0,)))


def herm(x, n: int):
    return (F.hfft(x, n=n), F.hfft2(x, norm="ortho"), F.hfftn(x, s=(2, 6)),
            F.ihfft(x), F.ihfft2(x, s=(3, 4)), F.ihfftn(x, norm="forward"))


@pytest.mark.parametrize("body", [c2c, real, herm], ids=["c2c", "r2c_c2r", "hermitian"])
def test_every_transform_compiles_and_equals_eager(body):
    f = jitorch.script(body)
    x = jitorch.randn(5, 6)
    _same(f(x, 9), body(x, 9))
    assert _compiled(f), f.code[:300]
    y = jitorch.randn(4, 10, dtype=jitorch.float64)  # another dtype: another specialisation
    _same(f(y, 3), body(y, 3), atol=1e-12)
    if body is c2c:
        z = _c(5, 6)
        _same(f(z, 4), body(z, 4))
        assert _compiled(f)
        i = jitorch.arange(30).reshape(5, 6)  # integers promote to the default float dtype
        _same(f(i, 5), body(i, 5), atol=1e-4)


def test_run_time_sizes_are_checked_as_eager():
    @jitorch.script
    def f(x, n: int):
        return F.irfft(F.rfft(x), n=n)
    x = jitorch.randn(3, 16)
    _same(f(x, 16), F.irfft(F.rfft(x), n=16))
    assert _compiled(f)
    for n in (0, -3):
        with pytest.raises(RuntimeError, match=rf"Invalid number of data points \({n}\)"):
            f(x, n)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\)"):
        f(jitorch.randn(3, 0), 4)


def test_static_argument_errors_are_eagers():
    @jitorch.script
    def f(x):
        return F.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        f(jitorch.randn(4))


def test_shifts_compile():
    def body(x):
        return F.fftshift(x), F.ifftshift(x, dim=(0, 0)), F.fftshift(x, dim=-1)
    f = jitorch.script(body)
    for x in (jitorch.randn(5, 4), _c(3, 7), jitorch.arange(12).reshape(3, 4)):
        _same(f(x), body(x))
    assert _compiled(f)


def test_denoise_with_a_mask_compiles():
    def body(x, mask):
        return F.irfft(F.rfft(x) * mask, n=x.shape[-1])
    f = jitorch.script(body)
    x = jitorch.randn(4, 64)
    mask = (jitorch.arange(33) < 6).to(jitorch.float32)
    _same(f(x, mask), body(x, mask))
    assert _compiled(f)


def test_spectral_gate_compiles():
    def body(x, t: float):
        X = F.rfft(x)
        return F.irfft(X * (X.abs() > t), n=x.shape[-1]), X.abs()
    f = jitorch.script(body)
    x = jitorch.randn(3, 32)
    _same(f(x, 3.0), body(x, 3.0))
    assert _compiled(f)


# --- complex arrays in compiled programs ---------------------------------------------------------
COMPLEX_PROGRAMS = {
    "arith": (lambda x, y: x * y + 2 * x - y, True),
    "alpha": (lambda x, y: jitorch.add(x, y, alpha=3) - x * 0.5, True),
    "real_times_complex": (lambda x, y: x * y.abs() - jitorch.conj_physical(y), True),
    "views": (lambda x, y: x.t()[1:] + y.t()[1:], None),
    "div": (lambda x, y: x / y, False),  # Numba raises on complex / 0: never fused
    "sum": (lambda x, y: (x * y).sum(1), False),
    "exp": (lambda x, y: x.exp() + y, False),
    "matmul": (lambda x, y: x @ y.t(), False),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_PROGRAMS))
def test_complex_arrays_compile_or_fall_back_but_equal_eager(name):
    body, must_compile = COMPLEX_PROGRAMS[name]
    f = jitorch.jit.trace(body, (_c(3, 4), _c(3, 4)), check_trace=False)
    x, y = _c(3, 4), _c(3, 4)
    y[0, 0] = 0  # complex division by zero: nan + nan j in eager
    with np.errstate(all="ignore"):
        _same(f(x, y), body(x, y))
    if must_compile is not None:
        assert _compiled(f) == must_compile, f.code[:200]


def test_complex_division_by_zero_follows_eager():
    f = jitorch.jit.trace(lambda x, y: F.fft(x) / y, (_c(4), _c(4)), check_trace=False)
    x, y = _c(4), jitorch.zeros(4, dtype=jitorch.complex64)
    with np.errstate(all="ignore"):
        _same(f(x, y), F.fft(x) / y)


# --- without rocket-fft --------------------------------------------------------------------------
def test_without_rocket_fft_the_ops_run_interpreted_with_the_reason(monkeypatch):
    monkeypatch.setattr(lower_fft, "rocket_fft_available", lambda: False)

    @jitorch.script
    def f(x):
        return F.irfft(F.rfft(x) * 0.5)
    x = jitorch.randn(2, 8)
    _same(f(x), F.irfft(F.rfft(x) * 0.5))
    assert not _compiled(f)
    assert "rocket-fft" in f.code.splitlines()[0]


# --- gradients -----------------------------------------------------------------------------------
def test_gradients_through_scripted_transforms_equal_eager():
    def body(x, m):
        y = F.irfft(F.fftshift(F.rfft(x, norm="ortho"), dim=0) * m, n=8) * x
        return (y + F.hfft(F.ihfft(x) * 0.5, n=8) * y).sum()
    f = jitorch.script(body)
    x1 = jitorch.randn(3, 8, dtype=jitorch.float64).requires_grad_(True)
    m1 = jitorch.randn(5, dtype=jitorch.float64).requires_grad_(True)
    x2, m2 = (t.detach().clone().requires_grad_(True) for t in (x1, m1))
    f(x1, m1).backward()
    body(x2, m2).backward()
    _same(x1.grad, x2.grad, atol=1e-12)
    _same(m1.grad, m2.grad, atol=1e-12)


def test_the_vjp_helper_ops_compile():
    from jitorch._ops.fft_ops import _fft_fold, _fft_resize

    def body(x):
        return _fft_resize(x, (0, 1), (5, 2)), _fft_fold(x, 1, 7), _fft_fold(x, 0, 6)
    for x in (jitorch.randn(3, 4), _c(3, 4)):
        f = jitorch.jit.trace(body, (x,), check_trace=False)
        _same(f(x), body(x))
        assert _compiled(f), f.code[:200]
    np.testing.assert_array_equal(_fft_fold(jitorch.ones(1, 5), 1, 7).numpy(),
                                  [[1, 2, 2, 2, 1]])  # n = 7: bins 1 .. 3 have mirror images
    np.testing.assert_array_equal(_fft_fold(jitorch.ones(1, 4), 1, 6).numpy(),
                                  [[1, 2, 2, 1]])  # n = 6: bins 1, 2 (3 is its own mirror)


def test_a_scripted_module_with_transforms_saves_and_loads():
    import io

    class LowPass(jitorch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", (jitorch.arange(9) < 3).float())

        def forward(self, x):
            return F.irfft(F.rfft(x, norm="ortho") * self.mask, n=16, norm="ortho")
    m = jitorch.jit.script(LowPass())
    buf = io.BytesIO()
    jitorch.jit.save(m, buf)
    buf.seek(0)
    loaded = jitorch.jit.load(buf)
    x = jitorch.randn(2, 16)
    _same(loaded(x), LowPass()(x))


def test_strided_and_empty_inputs():
    def body(x):
        return F.fft(x), F.rfft2(x), F.irfft(x)

    def last(x):
        return F.fft(x), F.irfft(x)
    f, g = jitorch.script(body), jitorch.script(last)
    for x in (jitorch.randn(8, 6).t(), jitorch.randn(6, 8)[:, ::2]):
        _same(f(x), body(x))
    empty = jitorch.randn(0, 8)  # (rfft2 of an empty dim raises, as eager)
    _same(g(empty), last(empty))
    assert _compiled(f) and _compiled(g)
