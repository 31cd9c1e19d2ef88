"""Resampling: `interpolate` (nearest, nearest-exact, linear, bilinear, bicubic, trilinear,
area), `pixel_shuffle` and `pixel_unshuffle`.

Each is a composite of registry ops, so autograd, tracing and `@script` (a Python op there)
come from those ops. Interpolation is separable: along each spatial dim the output is
`sum_k x.index_select(d, idx_k) * w_k`, with the source indices and weights fixed by the sizes,
computed here in NumPy exactly as PyTorch's CPU kernels compute them (in the input's floating
dtype: float32 coordinates for float32 input, so nearest's floor lands where PyTorch's does),
with the kernels' shortcuts (a linear-mode dim of unchanged size is copied, whatever the scale;
2-D nearest copies an unchanged dim and halves indices for an exact doubling); nearest modes
are a single `index_select`. Gathering rather than multiplying by a dense
interpolation matrix keeps an inf or NaN where PyTorch puts it (a dense row would spread it).
"""
from __future__ import annotations

import math

import numpy as np

from .. import _autocast
from .._tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle"]

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_RANK = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution constant


def _coord_dtype(dtype):
    return np.float64 if dtype == np.float64 else np.float32


def _scale(in_size, out_size, scale, ct):
    """PyTorch's compute_scales_value: 1 / scale_factor when one was given, else in / out."""
    if scale is not None and scale > 0:
        return ct(1.0 / scale)
    return ct(in_size) / ct(out_size)


def _area_scale(in_size, out_size, align_corners, scale, ct):
    if align_corners:
        return ct(in_size - 1) / ct(out_size - 1) if out_size > 1 else ct(0)
    return _scale(in_size, out_size, scale, ct)


def _source(scale, out_size, align_corners, cubic, ct):
    dst = np.arange(out_size, dtype=ct)
    if align_corners:
        return scale * dst
    src = scale * (dst + ct(0.5)) - ct(0.5)
    return src if cubic else np.maximum(src, ct(0))


def _nearest_index(in_size, out_size, scale, exact, ct, shortcuts=False):
    if shortcuts and not exact:  # PyTorch's 2-D nearest kernel (nearest_idx); 1-D/3-D have none
        if out_size == in_size:
            return np.arange(out_size)
        if out_size == 2 * in_size:
            return np.arange(out_size) >> 1
    s = _scale(in_size, out_size, scale, ct)
    dst = np.arange(out_size, dtype=ct)
    src = np.floor((dst + ct(0.5)) * s) if exact else np.floor(dst * s)
    return np.minimum(src.astype(np.int64), in_size - 1)


def _linear_taps(in_size, out_size, align_corners, scale, ct):
    s = _area_scale(in_size, out_size, align_corners, scale, ct)
    src = _source(s, out_size, align_corners, False, ct)
    i0 = src.astype(np.int64)
    i1 = i0 + (i0 < in_size - 1)
    lam1 = np.clip(src - i0.astype(ct), 0, 1).astype(ct)
    return [(i0, (ct(1) - lam1).astype(ct)), (i1, lam1)]


def _cubic_taps(in_size, out_size, align_corners, scale, ct):
    s = _area_scale(in_size, out_size, align_corners, scale, ct)
    src = _source(s, out_size, align_corners, True, ct)
    i = np.floor(src).astype(np.int64)
    t = (src - i.astype(ct)).astype(ct)
    a = ct(_CUBIC_A)

    def conv1(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def conv2(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    one = ct(1)
    weights = [conv2(t + one), conv1(t), conv1(one - t), conv2(one - t + one)]
    return [(np.clip(i - 1 + j, 0, in_size - 1), weights[j].astype(ct)) for j in range(4)]


def _gather_sum(x, dim, taps):
    from .._creation import tensor
    shape = [1] * x.ndim
    shape[dim] = -1
    out = None
    for idx, w in taps:
        term = x.index_select(dim, tensor(idx, device=x.device)) * tensor(
            w, device=x.device).to(x.dtype).reshape(shape)
        out = term if out is None else out + term
    return out


def _output_size(input, size, scale_factor, nd):
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (list, tuple)):
            if len(size) != nd:
                raise ValueError(
                    f"Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {spatial} and output size of "
                    f"{tuple(size)}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                    f"format and output size in (o1, o2, ...,oK) format.")
            out = [int(s) for s in size]
        else:
            out = [int(size)] * nd
        return out, [None] * nd
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, (list, tuple)):
        if len(scale_factor) != nd:
            raise ValueError(
                f"Input and scale_factor must have the same number of spatial dimensions, but "
                f"got input with spatial dimensions of {spatial} and scale_factor of shape "
                f"{tuple(scale_factor)}. Please provide input tensor in (N, C, d1, d2, ...,dK) "
                f"format and scale_factor in (s1, s2, ...,sK) format.")
        scales = [float(s) for s in scale_factor]
    else:
        scales = [float(scale_factor)] * nd
    return [int(math.floor(float(n) * s)) for n, s in zip(spatial, scales)], scales


@_autocast.policy({"cuda": "fp32"})
def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize the spatial dims (all but N and C) of `input`, as `torch.nn.functional.
    interpolate`."""
    if not isinstance(input, Tensor):
        raise TypeError(f"interpolate(): argument 'input' must be Tensor, not "
                        f"{type(input).__name__}")
    if mode not in _MODES:
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the "
            f"modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
            f"(got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("jitorch: interpolate(antialias=True) is not implemented "
                                  "(antialias=False only)")
    nd = input.ndim - 2
    if nd < 1 or nd > 3 or (mode in _RANK and _RANK[mode] != nd):
        want = {1: "3D", 2: "4D", 3: "5D"}
        if mode in _RANK and nd in (1, 2, 3):
            raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs "
                                      f"{want[_RANK[mode]]} input")
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for the "
            f"modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
            f"(got {mode})")
    out_sizes, scales = _output_size(input, size, scale_factor, nd)
    if recompute_scale_factor:
        if size is not None:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        scales = [None] * nd
    if mode != "area" and any(s <= 0 for s in out_sizes):  # area pools to an empty output
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(str(s) for s in input.shape[2:])}) and output "
                           f"({', '.join(str(s) for s in out_sizes)})")
    if not input.is_floating_point() and mode not in ("nearest", "nearest-exact"):
        from .registry import _pt_name
        raise NotImplementedError(f'"upsample_{mode}" not implemented for '
                                  f"'{_pt_name(input.dtype)}'")
    if mode == "area":
        from .nn_pool import adaptive_avg_pool1d, adaptive_avg_pool2d
        if nd == 3:
            raise NotImplementedError("jitorch: interpolate(mode='area') of 5-D input needs "
                                      "adaptive_avg_pool3d, which is not implemented")
        pool = adaptive_avg_pool1d if nd == 1 else adaptive_avg_pool2d
        return pool(input, out_sizes[0] if nd == 1 else tuple(out_sizes))
    ct = _coord_dtype(input.dtype.np)
    x = input
    for k in range(nd):
        dim, n, m = 2 + k, input.shape[2 + k], out_sizes[k]
        if mode in ("nearest", "nearest-exact"):
            from .._creation import tensor
            idx = _nearest_index(n, m, scales[k], mode == "nearest-exact", ct, nd == 2)
            x = x.index_select(dim, tensor(idx, device=x.device))
        elif n == m and mode != "bicubic":
            continue  # PyTorch's linear kernels copy a dim whose size does not change
        elif mode == "bicubic":
            x = _gather_sum(x, dim, _cubic_taps(n, m, align_corners, scales[k], ct))
        else:
            x = _gather_sum(x, dim, _linear_taps(n, m, align_corners, scales[k], ct))
    return x


def _deprecated(name):
    import warnings
    warnings.warn(f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` "
                  f"instead.", UserWarning, stacklevel=3)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
             recompute_scale_factor=None):
    """The deprecated names of `interpolate` (PyTorch warns; the result is the same)."""
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor)


def upsample_nearest(input, size=None, scale_factor=None):
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# --- pixel shuffle -----------------------------------------------------------------------------
def _check_shuffle(name, input, factor, what):
    if not isinstance(factor, int) or isinstance(factor, bool):
        raise TypeError(f"{name}(): argument '{what}' must be int, not {type(factor).__name__}")
    if input.ndim < 3:
        raise RuntimeError(f"{name} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{name} expects {what} to be greater than 0, but got: {factor}")


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r): channel blocks become r x r pixel blocks."""
    r = upscale_factor
    _check_shuffle("pixel_shuffle", input, r, "upscale_factor")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle."""
    r = downscale_factor
    _check_shuffle("pixel_unshuffle", input, r, "downscale_factor")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, "
                           f"but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, "
                           f"but input.size(-1)={w} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
