"""Window functions at the top level, as PyTorch: hann, hamming, blackman, bartlett, kaiser.

Each is a factory (no tensor input) computed in float64 with PyTorch's formula and cast to the
requested dtype. `periodic=True` (the default) computes a window of `window_length + 1` points
and drops the last, so the window is one period of a periodic function (what `stft` wants).
`stft`/`istft` live in `fft_stft.py`.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window", "stft", "istft"]


def _options(name, dtype, device):
    d = dt.get_default_dtype() if dtype is None else dtype
    if not isinstance(d, dt.dtype) or d.category != dt.FLOAT:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {d}")
    if device is not None:
        from .._device import device as _device
        if _device(device).type != "cpu":
            raise RuntimeError(f"{name}: only the cpu device is available, got {device}")
    return d


def _window(name, formula, window_length, periodic, dtype, device, requires_grad):
    if isinstance(window_length, bool) or not isinstance(window_length, (int, np.integer)):
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}")
    d = _options(name, dtype, device)
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if window_length <= 1:
        w = np.ones(window_length)
    else:
        m = window_length + 1 if periodic else window_length
        w = formula(np.arange(window_length, dtype=np.float64), m)
    t = Tensor._make(np.ascontiguousarray(w.astype(d.np)), d)
    return t.requires_grad_(True) if requires_grad else t


def _cosine(*coeffs):
    def f(n, m):
        x = 2 * np.pi * n / (m - 1)
        return sum(c * np.cos(k * x) for k, c in enumerate(coeffs))
    return f


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """w[n] = 0.5 - 0.5 cos(2 pi n / (N - 1)), N = window_length (+ 1 when periodic)."""
    return _window("hann_window", _cosine(0.5, -0.5), window_length, periodic, dtype, device,
                   requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """w[n] = alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", _cosine(alpha, -beta), window_length, periodic, dtype,
                   device, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """w[n] = 0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", _cosine(0.42, -0.5, 0.08), window_length, periodic, dtype,
                   device, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """w[n] = 1 - |2 n / (N - 1) - 1|."""
    return _window("bartlett_window", lambda n, m: 1 - np.abs(2 * n / (m - 1) - 1),
                   window_length, periodic, dtype, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """w[n] = I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta)."""
    def f(n, m):
        r = 2 * n / (m - 1) - 1
        return np.i0(beta * np.sqrt(np.clip(1 - r * r, 0, None))) / np.i0(beta)
    return _window("kaiser_window", f, window_length, periodic, dtype, device, requires_grad)


for _f in (hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window):
    _f.__module__ = "jitorch"
del _f

from .fft_stft import istft, stft  # noqa: E402  (after the windows: stft's default window)
