"""jitorch.fft eagerly: values against numpy.fft, dtypes, PyTorch's argument errors, gradients by
finite differences (complex inputs through view_as_real / complex), the sample frequencies and
shifts, the window functions and stft/istft against closed forms."""
import numpy as np
import pytest

import jitorch
from jitorch import fft as F
from jitorch.autograd import gradcheck

RNG = np.random.default_rng(11)
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
TWO_D = ("fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2")
N_D = ("fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn")
ALL = ONE_D + TWO_D + N_D
REAL_IN = ("rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn")
DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def _c(shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _ref(name, a, norm=None, **kw):
    """numpy.fft's value of jitorch.fft.<name> (NumPy has hfft/ihfft in 1-D only: the N-D
    forms are defined as PyTorch does, by conjugation around irfftn/rfftn with the dual norm)."""
    if name in ("hfft2", "hfftn"):
        f = np.fft.irfft2 if name == "hfft2" else np.fft.irfftn
        return f(np.conj(a), norm=DUAL[norm], **kw)
    if name in ("ihfft2", "ihfftn"):
        f = np.fft.rfft2 if name == "ihfft2" else np.fft.rfftn
        return np.conj(f(a, norm=DUAL[norm], **kw))
    return getattr(np.fft, name)(a, norm=norm, **kw)


def _size_kwargs(name):
    if name in ONE_D:
        return [{}, {"n": 7}, {"n": 3, "dim": 0}, {"dim": -2}]
    if name in TWO_D:
        return [{}, {"s": (3, 6)}, {"dim": (0, 2)}, {"s": (2, 9), "dim": (2, 1)}]
    return [{}, {"s": (3, 6)}, {"dim": (0, 2)}, {"s": (5, 2, 4)}, {"dim": (1,)}]


def _np_kw(name, kw):
    out = dict(kw)
    if "dim" in out:
        out["axis" if name in ONE_D else "axes"] = out.pop("dim")
    elif "s" in out:  # (NumPy 2 wants the axes spelled out with s: the last len(s) dims)
        out["axes"] = tuple(range(-len(out["s"]), 0))
    return out


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("norm", [None, "backward", "forward", "ortho"])
def test_values_match_numpy(name, norm):
    a = RNG.standard_normal((4, 6, 5)) if name in REAL_IN else _c((4, 6, 5))
    for kw in _size_kwargs(name):
        r = getattr(F, name)(jitorch.tensor(a), norm=norm, **kw)
        e = _ref(name, a, norm, **_np_kw(name, kw))
        assert tuple(r.shape) == e.shape, (kw, r.shape, e.shape)
        np.testing.assert_allclose(r.numpy(), e, atol=1e-10, err_msg=str(kw))


@pytest.mark.parametrize("name", ALL)
def test_dtypes(name):
    real_out = name.startswith(("irfft", "hfft"))
    for src, c, r in ((jitorch.float32, jitorch.complex64, jitorch.float32),
                      (jitorch.float64, jitorch.complex128, jitorch.float64),
                      (jitorch.int64, jitorch.complex64, jitorch.float32),
                      (jitorch.bool, jitorch.complex64, jitorch.float32)):
        x = jitorch.ones(4, 4, dtype=src)
        assert getattr(F, name)(x).dtype is (r if real_out else c), src
    if name not in REAL_IN:
        x = jitorch.ones(4, 4, dtype=jitorch.complex64)
        assert getattr(F, name)(x).dtype is (jitorch.float32 if real_out else jitorch.complex64)
    jitorch.set_default_dtype(jitorch.float64)
    try:  # integers promote to the default float dtype
        out = getattr(F, name)(jitorch.ones(4, 4, dtype=jitorch.int32)).dtype
        assert out is (jitorch.float64 if real_out else jitorch.complex128)
    finally:
        jitorch.set_default_dtype(jitorch.float32)


def test_float32_precision_is_kept():
    x = RNG.standard_normal(1024).astype(np.float32)
    r = F.rfft(jitorch.tensor(x))
    assert r.dtype is jitorch.complex64
    np.testing.assert_allclose(r.numpy(), np.fft.rfft(x.astype(np.float64)), rtol=1e-4,
                               atol=1e-3)


def test_real_input_to_complex_transforms_is_promoted():
    x = RNG.standard_normal((3, 8))
    np.testing.assert_allclose(F.fft(jitorch.tensor(x)).numpy(), np.fft.fft(x))
    np.testing.assert_allclose(F.irfft(jitorch.tensor(x)).numpy(), np.fft.irfft(x))


def _raises(exc, match, f):
    with pytest.raises(exc, match=match):
        f()


def test_errors_are_pytorchs():
    r, c = jitorch.randn(4), jitorch.randn(4, dtype=jitorch.complex64)
    _raises(RuntimeError, 'Invalid normalization mode: "bad"', lambda: F.fft(r, norm="bad"))
    _raises(RuntimeError, r"Invalid number of data points \(0\) specified", lambda: F.fft(r, n=0))
    _raises(RuntimeError, r"Invalid number of data points \(0\)", lambda: F.irfft(c[:1]))
    _raises(RuntimeError, r"Invalid number of data points \(0\)", lambda: F.fft(jitorch.randn(0)))
    _raises(IndexError, "Dimension out of range", lambda: F.fft(r, dim=3))
    _raises(IndexError, "Dimension out of range", lambda: F.fft2(r))
    _raises(IndexError, "tensor has no dimensions", lambda: F.fft(jitorch.tensor(1.0)))
    _raises(RuntimeError, "dim and shape arguments must have the same length",
            lambda: F.fftn(r, s=(2, 2), dim=(0,)))
    _raises(RuntimeError, "FFT dims must be unique", lambda: F.fftn(jitorch.randn(3, 3),
                                                                    dim=(0, 0)))
    _raises(RuntimeError, "Got shape with 3 values but input tensor only has 2 dimensions",
            lambda: F.fftn(jitorch.randn(3, 3), s=(2, 3, 3)))
    _raises(RuntimeError, "rfft expects a real input tensor, but got ComplexFloat",
            lambda: F.rfft(c))
    _raises(RuntimeError, "ihfft expects a real input tensor, but got ComplexFloat",
            lambda: F.ihfft(c))
    _raises(RuntimeError, "Unsupported dtype Half", lambda: F.fft(r.half()))
    _raises(IndexError, "Dimension out of range", lambda: F.fftshift(r, dim=5))
    _raises(TypeError, "must be Tensor", lambda: F.fft([1.0, 2.0]))


def test_s_minus_one_means_the_input_size():
    x = _c((3, 5))
    np.testing.assert_allclose(F.fftn(jitorch.tensor(x), s=(2, -1)).numpy(),
                               np.fft.fftn(x, s=(2, 5), axes=(0, 1)))


# --- gradients -----------------------------------------------------------------------------------
def _leaf(a):
    return jitorch.tensor(a).requires_grad_(True)


def _out(y):
    return jitorch.view_as_real(y) if y.is_complex() else y


@pytest.mark.parametrize("name", ALL)
def test_vjp_matches_finite_differences(name):
    f = getattr(F, name)
    re, im = _leaf(RNG.standard_normal((3, 4, 5))), _leaf(RNG.standard_normal((3, 4, 5)))
    kws = [{"norm": "ortho"}, {"norm": "forward"}] + _size_kwargs(name)
    for kw in kws:
        assert gradcheck(lambda a: _out(f(a, **kw)), (re,)), kw
        if name not in REAL_IN:  # complex input: the full real Jacobian of (re, im)
            assert gradcheck(lambda a, b: _out(f(jitorch.complex(a, b), **kw)), (re, im)), kw


def test_real_input_gets_a_real_gradient():
    x = _leaf(RNG.standard_normal(8))
    F.fft(x).abs().sum().backward()
    assert x.grad.dtype is jitorch.float64


def test_gradient_of_a_complex_leaf():
    z = jitorch.tensor(_c(8)).requires_grad_(True)
    (jitorch.view_as_real(F.fft(z)) ** 2).sum().backward()
    # |fft(z)|^2 summed = n |z|^2 (Parseval): its gradient (dL/dRe + i dL/dIm) is 2 n z
    np.testing.assert_allclose(z.grad.numpy(), 2 * 8 * z.detach().numpy(), rtol=1e-10)


def test_jvp_matches_finite_differences():
    x = _leaf(RNG.standard_normal((3, 6)))
    for name in ("hfft", "irfft", "irfft2", "hfftn"):
        f = getattr(F, name)
        assert gradcheck(lambda a: f(a), (x,), check_forward_ad=True), name


def test_gradients_of_gradients():
    from jitorch.autograd import gradgradcheck
    x = _leaf(RNG.standard_normal(6))
    assert gradgradcheck(lambda a: F.irfft(a, n=10), (x,))
    assert gradgradcheck(lambda a: F.hfft(a), (x,))


# --- frequencies and shifts ----------------------------------------------------------------------
def test_fftfreq_and_rfftfreq():
    for n, d in ((5, 1.0), (8, 0.1), (1, 2.0)):
        np.testing.assert_allclose(F.fftfreq(n, d).numpy(), np.fft.fftfreq(n, d), rtol=1e-6)
        np.testing.assert_allclose(F.rfftfreq(n, d).numpy(), np.fft.rfftfreq(n, d), rtol=1e-6)
    assert F.fftfreq(4).dtype is jitorch.float32
    assert F.fftfreq(4, dtype=jitorch.float64).dtype is jitorch.float64
    t = F.rfftfreq(6, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    _raises(RuntimeError, "requires a floating point or complex dtype",
            lambda: F.fftfreq(4, dtype=jitorch.int64))
    _raises(RuntimeError, "negative dimension", lambda: F.fftfreq(-1))
    assert F.fftfreq(0).shape == (0,) and np.isnan(F.rfftfreq(0).numpy()).all()  # as PyTorch
    o = jitorch.empty(2)
    assert F.fftfreq(5, out=o) is o and o.shape == (5,)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1), (1, 1), -1, ()])
def test_fftshift_and_ifftshift(dim):
    a = np.arange(35.0).reshape(5, 7)
    axes = dim if dim != () else ()
    np.testing.assert_array_equal(F.fftshift(jitorch.tensor(a), dim).numpy(),
                                  np.fft.fftshift(a, axes) if dim != () else a)
    np.testing.assert_array_equal(F.ifftshift(jitorch.tensor(a), dim).numpy(),
                                  np.fft.ifftshift(a, axes) if dim != () else a)
    x = _leaf(RNG.standard_normal((5, 4)))
    assert gradcheck(lambda t: F.fftshift(t, dim), (x,))
    assert gradcheck(lambda t: F.ifftshift(t, dim), (x,))


def test_shift_undoes_itself():
    x = jitorch.randn(5, 6)
    assert jitorch.equal(F.ifftshift(F.fftshift(x)), x)


# --- windows ------------------------------------------------------------------------------------
def _periodic(np_fn, n):
    return np_fn(n + 1)[:-1]


WINDOWS = {
    "hann_window": np.hanning, "hamming_window": np.hamming,
    "blackman_window": np.blackman, "bartlett_window": np.bartlett,
    "kaiser_window": lambda m: np.kaiser(m, 12.0),
}


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_windows_match_closed_forms(name):
    f, ref = getattr(jitorch, name), WINDOWS[name]
    for n in (2, 5, 8, 33):
        np.testing.assert_allclose(f(n, periodic=False, dtype=jitorch.float64).numpy(), ref(n),
                                   atol=1e-12)
        np.testing.assert_allclose(f(n, dtype=jitorch.float64).numpy(), _periodic(ref, n),
                                   atol=1e-12)
    assert f(0).shape == (0,) and f(1).tolist() == [1.0]
    assert f(8).dtype is jitorch.float32
    assert f(8, requires_grad=True).requires_grad
    _raises(RuntimeError, "expects floating point dtypes", lambda: f(4, dtype=jitorch.int64))
    _raises(RuntimeError, "requires non-negative window_length", lambda: f(-1))


def test_window_parameters():
    np.testing.assert_allclose(
        jitorch.hamming_window(6, False, 0.5, 0.5, dtype=jitorch.float64).numpy(),
        np.hanning(6), atol=1e-12)
    np.testing.assert_allclose(
        jitorch.kaiser_window(7, False, 3.0, dtype=jitorch.float64).numpy(), np.kaiser(7, 3.0),
        atol=1e-12)


# --- stft / istft -------------------------------------------------------------------------------
def _stft_ref(x, n_fft, hop, window, center=True, mode="reflect", normalized=False,
              onesided=True):
    if center:
        p = n_fft // 2
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(p, p)], mode=mode)
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., t * hop:t * hop + n_fft] * window for t in range(n_frames)], -1)
    f = np.fft.rfft if onesided else np.fft.fft
    return f(frames, axis=-2, norm="ortho" if normalized else None)


@pytest.mark.parametrize("kw", [{}, {"center": False}, {"normalized": True},
                                {"onesided": False}, {"pad_mode": "constant"},
                                {"hop_length": 3, "win_length": 10}])
def test_stft_matches_framed_rfft(kw):
    x = RNG.standard_normal((2, 64))
    n_fft, hop = 16, kw.get("hop_length", 4)
    win = kw.get("win_length", n_fft)
    w = np.hanning(win + 1)[:-1]
    wp = np.pad(w, ((n_fft - win) // 2, n_fft - win - (n_fft - win) // 2))
    r = jitorch.stft(jitorch.tensor(x), n_fft, window=jitorch.tensor(w), return_complex=True,
                     **kw)
    e = _stft_ref(x, n_fft, hop, wp, kw.get("center", True), kw.get("pad_mode", "reflect"),
                  kw.get("normalized", False), kw.get("onesided", True))
    assert tuple(r.shape) == e.shape
    np.testing.assert_allclose(r.numpy(), e, atol=1e-10)
    one = jitorch.stft(jitorch.tensor(x[0]), n_fft, window=jitorch.tensor(w),
                       return_complex=True, **kw)
    np.testing.assert_allclose(one.numpy(), e[0], atol=1e-10)


def test_stft_align_to_window():
    x = RNG.standard_normal(40)
    w = np.hanning(9)[:-1]
    wp = np.pad(w, 4)
    r = jitorch.stft(jitorch.tensor(x), 16, hop_length=4, win_length=8, window=jitorch.tensor(w),
                     center=False, align_to_window=True, return_complex=True)
    # frame t reads x[4 t - 4 : 4 t + 12], zeros outside: the window starts at 4 t
    xp = np.pad(x, (4, 12))
    e = np.stack([np.fft.rfft(xp[4 * t:4 * t + 16] * wp) for t in range(9)], -1)
    assert tuple(r.shape) == e.shape
    np.testing.assert_allclose(r.numpy(), e, atol=1e-10)
    _raises(RuntimeError, "align_to_window should only be set when center = false",
            lambda: jitorch.stft(jitorch.tensor(x), 16, align_to_window=True,
                                 return_complex=True))


def test_stft_istft_round_trip():
    x = jitorch.tensor(RNG.standard_normal((3, 100)))
    w = jitorch.hann_window(32, dtype=jitorch.float64)
    X = jitorch.stft(x, 32, hop_length=8, window=w, return_complex=True)
    np.testing.assert_allclose(jitorch.istft(X, 32, hop_length=8, window=w, length=100).numpy(),
                               x.numpy(), atol=1e-10)
    y = X.istft(32, hop_length=8, window=w)  # the Tensor method; length from the frames
    np.testing.assert_allclose(y.numpy(), x.numpy()[:, :y.shape[-1]], atol=1e-10)
    Xn = jitorch.stft(x, 32, hop_length=8, window=w, normalized=True, onesided=False,
                      return_complex=True)
    yn = jitorch.istft(Xn, 32, hop_length=8, window=w, normalized=True, onesided=False,
                       length=100)
    np.testing.assert_allclose(yn.numpy(), x.numpy(), atol=1e-10)
    assert x.stft(32, window=w, return_complex=True).shape == (3, 17, 13)


def test_stft_return_complex_false_is_view_as_real():
    x = jitorch.randn(40)
    with pytest.warns(UserWarning, match="return_complex=False is deprecated"):
        r = jitorch.stft(x, 8, return_complex=False)
    assert r.shape == (5, 21, 2)
    np.testing.assert_allclose(r.numpy(), jitorch.view_as_real(
        jitorch.stft(x, 8, return_complex=True)).numpy())


def test_stft_errors():
    x = jitorch.randn(20)
    _raises(RuntimeError, "requires the return_complex parameter", lambda: jitorch.stft(x, 8))
    _raises(RuntimeError, r"expected 0 < n_fft < 20, but got n_fft=30",
            lambda: jitorch.stft(x, 30, center=False, return_complex=True))
    _raises(RuntimeError, "expected hop_length > 0",
            lambda: jitorch.stft(x, 8, hop_length=0, return_complex=True))
    _raises(RuntimeError, "expected 0 < win_length <= n_fft",
            lambda: jitorch.stft(x, 8, win_length=9, return_complex=True))
    _raises(RuntimeError, "expected a 1D window tensor of size equal to win_length=8",
            lambda: jitorch.stft(x, 8, window=jitorch.ones(5), return_complex=True))
    _raises(RuntimeError, "expected a 1D or 2D tensor",
            lambda: jitorch.stft(jitorch.randn(2, 2, 20), 8, return_complex=True))
    X = jitorch.stft(x, 8, window=jitorch.hann_window(8), return_complex=True)
    _raises(RuntimeError, "istft requires a complex-valued input", lambda: jitorch.istft(
        X.real, 8))
    _raises(RuntimeError, "window overlap add min", lambda: jitorch.istft(
        X, 8, window=jitorch.zeros(8)))
    _raises(RuntimeError, "to match n_fft when onesided=False", lambda: jitorch.istft(
        X, 8, window=jitorch.hann_window(8), onesided=False))


def test_stft_and_istft_gradients():
    s = _leaf(RNG.standard_normal(40))
    w = _leaf(np.hanning(9)[:-1])
    assert gradcheck(lambda a, b: jitorch.view_as_real(
        jitorch.stft(a, 8, window=b, return_complex=True)), (s, w))
    X = jitorch.stft(s.detach(), 8, window=w.detach(), return_complex=True)
    re, im = _leaf(X.real.numpy().copy()), _leaf(X.imag.numpy().copy())
    win = jitorch.tensor(np.hanning(9)[:-1])
    assert gradcheck(lambda a, b: jitorch.istft(jitorch.complex(a, b), 8, window=win),
                     (re, im))


def test_results_do_not_depend_on_the_thread_count():
    x = jitorch.tensor(_c((16, 8, 30)).astype(np.complex64))
    before = jitorch.get_num_threads()
    try:
        jitorch.set_num_threads(1)
        one = [F.fftn(x).numpy(), F.irfft2(x).numpy(), F.rfft(x.real).numpy()]
        jitorch.set_num_threads(3)
        three = [F.fftn(x).numpy(), F.irfft2(x).numpy(), F.rfft(x.real).numpy()]
    finally:
        jitorch.set_num_threads(before)
    for a, b in zip(one, three):
        np.testing.assert_array_equal(a, b)


def test_gradients_through_a_spectral_filter():
    # complex gradients through mul / add / sub / abs between the transforms (a learnable
    # filter): every input's gradient against finite differences
    x = _leaf(RNG.standard_normal((2, 12)))
    m = _leaf(RNG.standard_normal(7))
    re, im = _leaf(RNG.standard_normal(7)), _leaf(RNG.standard_normal(7))

    def f(x, m, re, im):
        X = F.rfft(x)
        Y = X * m + X * jitorch.complex(re, im) - 0.5 * X
        return F.irfft(Y, n=12) + F.rfft(x, norm="ortho").abs().sum(-1, keepdim=True)
    assert gradcheck(f, (x, m, re, im))
