"""`stft` and `istft` (also Tensor methods), with PyTorch's signatures, defaults and errors.

Both are composites of registry ops, so autograd comes from the ops' VJPs: `stft` frames the
(centre-padded) signal with one `index_select` into a (..., n_fft, n_frames) layout, multiplies
by the window and transforms along dim -2 (`rfft` when onesided, else `fft`), so the transform
is the last op and its complex result needs no transpose. `istft` inverts along dim -2
(`irfft`/`ifft`), multiplies by the window and overlap-adds with `index_add`, dividing by the
overlap-added squared window (the envelope), as PyTorch does.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from .. import _autocast


def _fft(name):
    from .fft_ops import PUBLIC_FFT
    return PUBLIC_FFT[name]


def _window_for(name, window, win_length, n_fft, dtype):
    """The window padded centrally to n_fft (a rectangular one when None)."""
    from .._creation import ones, zeros
    from .join import cat
    if window is None:
        window = ones(win_length, dtype=dtype.to_real())
    elif window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{name}: expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        right = n_fft - win_length - left
        window = cat([zeros(left, dtype=window.dtype), window,
                      zeros(right, dtype=window.dtype)])
    return window


def _frame_index(n_fft: int, hop: int, n_frames: int) -> Tensor:
    """idx[k, t] = t * hop + k, flattened (the (n_fft, n_frames) frame layout)."""
    idx = np.arange(n_fft)[:, None] + hop * np.arange(n_frames)[None, :]
    return Tensor._make(idx.reshape(-1).astype(np.int64))


def _check_lengths(name, n_fft, hop_length, win_length, length=None):
    if isinstance(n_fft, bool) or not isinstance(n_fft, (int, np.integer)):
        raise TypeError(f"{name}(): argument 'n_fft' must be int, not {type(n_fft).__name__}")
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win = n_fft if win_length is None else int(win_length)
    if hop <= 0:
        raise RuntimeError(f"{name}: expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise RuntimeError(f"{name}: expected 0 < win_length <= n_fft, but got "
                           f"win_length={win}")
    return hop, win


@_autocast.policy({"cpu": "fp32"})
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """Short-time Fourier transform: (..., n_fft // 2 + 1 or n_fft, n_frames) frequencies by
    frames of `input` (1-D or 2-D: a batch of signals). `align_to_window=True` (center=False
    only) starts frame t at the window's first sample, t * hop_length (PyTorch 2.6+)."""
    from .complex_ops import view_as_real
    from .nn_misc import pad
    if not isinstance(input, Tensor):
        raise TypeError(f"stft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    complex_in = input.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    elif not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.", UserWarning, stacklevel=2)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D tensor")
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    hop, win = _check_lengths("stft", n_fft, hop_length, win_length)
    x = input if input.dtype.category >= dt.FLOAT else input.to(dt.get_default_dtype())
    if center:
        p = n_fft // 2
        x2 = x.unsqueeze(0) if x.ndim == 1 else x
        x2 = pad(x2.unsqueeze(1), (p, p), mode=pad_mode).squeeze(1)
        x = x2.squeeze(0) if x.ndim == 1 else x2
    length = x.shape[-1]
    if n_fft <= 0 or n_fft > length:
        raise RuntimeError(f"stft: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    onesided = (not complex_in) if onesided is None else bool(onesided)
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    w = _window_for("stft", window, win, n_fft, x.dtype)
    n_frames = 1 + (length - n_fft) // hop
    if align_to_window and win < n_fft:
        # the window (centred in the n_fft frame) starts at t * hop: frames start `left` early,
        # reading zeros outside the signal; the window's length decides how many fit
        left = (n_fft - win) // 2
        n_frames = 1 + (length - win) // hop
        right = max(0, (n_frames - 1) * hop + n_fft - left - length)
        x = pad(x, (left, right))
    frames = x.index_select(-1, _frame_index(n_fft, hop, n_frames))
    frames = frames.reshape(tuple(x.shape[:-1]) + (n_fft, n_frames)) * w.unsqueeze(-1)
    norm = "ortho" if normalized else "backward"
    out = (_fft("rfft") if onesided else _fft("fft"))(frames, None, -2, norm)
    return out if return_complex else view_as_real(out)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """Inverse of `stft` by overlap-add: the signal (..., length) from (..., freq, n_frames)."""
    from .._creation import zeros
    if not isinstance(input, Tensor):
        raise TypeError(f"istft(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, but got "
                           f"{input.ndim}")
    hop, win = _check_lengths("istft", n_fft, hop_length, win_length)
    fft_size, n_frames = input.shape[-2], input.shape[-1]
    onesided = (fft_size != n_fft) if onesided is None else bool(onesided)
    if onesided:
        if fft_size != n_fft // 2 + 1:
            raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of "
                               f"the input tensor to match n_fft / 2 + 1 when onesided=True, "
                               f"but got {fft_size}")
        if return_complex:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
    elif fft_size != n_fft:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft when onesided=False, but got "
                           f"{fft_size}")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion lossless.To "
                      "suppress this warning and use a rectangular window, explicitly set "
                      "`window=torch.ones(n_fft, device=<device>)`.", UserWarning, stacklevel=2)
    w = _window_for("istft", window, win, n_fft, input.dtype.to_real())
    norm = "ortho" if normalized else "backward"
    if onesided:
        frames = _fft("irfft")(input, n_fft, -2, norm)
    else:
        frames = _fft("ifft")(input, n_fft, -2, norm)
        if not return_complex:
            frames = frames.real
    frames = frames * w.unsqueeze(-1)
    total = n_fft + hop * (n_frames - 1)
    idx = _frame_index(n_fft, hop, n_frames)
    batch = tuple(input.shape[:-2])
    y = zeros(batch + (total,), dtype=frames.dtype).index_add(
        -1, idx, frames.reshape(batch + (n_fft * n_frames,)))
    env = zeros(total, dtype=w.dtype).index_add(
        0, idx, (w * w).unsqueeze(-1).expand(n_fft, n_frames).reshape(-1))
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + int(length)
    end = min(end, total)
    env = env[start:end]
    if env.numel() and float(env.abs().min()) < 1e-11:
        raise RuntimeError(f"istft: window overlap add min: {float(env.abs().min()):g}")
    y = y[..., start:end] / env
    if length is not None and y.shape[-1] < length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        from .join import cat
        y = cat([y, zeros(batch + (int(length) - y.shape[-1],), dtype=y.dtype)], -1)
    return y


for _f in (stft, istft):
    _f.__module__ = "jitorch"
    setattr(Tensor, _f.__name__, _f)
del _f
