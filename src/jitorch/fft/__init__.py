"""`jitorch.fft`: PyTorch's (and NumPy's) discrete Fourier transforms.

The transforms and fftshift/ifftshift are registry ops declared in `jitorch/_ops/fft_ops.py`
(eager: pocketfft through scipy.fft; inside `@script`: np.fft through rocket-fft, without the
GIL); this module re-exports them and defines the sample-frequency factories.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._ops.fft_ops import PUBLIC_FFT
from .._tensor import Tensor

globals().update(PUBLIC_FFT)

__all__ = sorted(PUBLIC_FFT) + ["fftfreq", "rfftfreq"]


def _freq(name, values, n, d, out, dtype, layout, device, requires_grad):
    from .._device import device as _device
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if device is not None and _device(device).type != "cpu":
        raise RuntimeError(f"{name}: only the cpu device is available, got {device}")
    d_ = dt.get_default_dtype() if dtype is None else dtype
    if d_.category < dt.FLOAT:
        raise RuntimeError(f"{name} requires a floating point or complex dtype")
    if d_.category == dt.COMPLEX:
        from .._ops.registry import _pt_name
        raise NotImplementedError(f'"arange_cpu" not implemented for \'{_pt_name(d_)}\'')
    # PyTorch: arange in the result dtype, times 1 / (n * d) (n == 0: rfftfreq gives [nan])
    scale = 1.0 / (n * d) if n * d else float("inf")
    with np.errstate(invalid="ignore", over="ignore"):
        r = (values(n).astype(d_.np) * d_.np.type(scale)).astype(d_.np)
    t = Tensor._make(r, d_)
    if requires_grad:
        t.requires_grad_(True)
    if out is not None:
        from .._ops.registry import _write_out
        return _write_out(out, t)  # resize-and-copy, PyTorch's cast check
    return t


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False):
    """The sample frequencies of `fft(x)` for a signal of size n and sample spacing d:
    [0, 1, ..., ceil(n/2) - 1, -floor(n/2), ..., -1] / (d * n)."""
    return _freq("fftfreq", lambda m: np.concatenate([np.arange((m - 1) // 2 + 1),
                                                      np.arange(-(m // 2), 0)]),
                 n, d, out, dtype, layout, device, requires_grad)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """The sample frequencies of `rfft(x)`: [0, 1, ..., n // 2] / (d * n)."""
    return _freq("rfftfreq", lambda m: np.arange(m // 2 + 1), n, d, out, dtype, layout,
                 device, requires_grad)
