"""Normalisation functions of `jitorch.nn.functional`: layer_norm, rms_norm, group_norm,
batch_norm (running statistics updated in place when training) and normalize.

All are composites of registry ops (mean, sub, mul, rsqrt, ...), as PyTorch's decompositions
write them: autograd and forward AD come from the primitives, and the compiler's row fusion sees
the last-dim `mean(keepdim=True)` chains of layer_norm / rms_norm. Statistics use two passes
(mean, then the mean of squared deviations), which is numerically sound for any input scale.
Shape errors use PyTorch's messages.
"""
from __future__ import annotations

from .. import _dtype as dt
from ..autograd import grad_mode

__all__: list = []  # reached through jitorch.nn.functional


def _shape_list(shape) -> list:
    if isinstance(shape, int):
        return [shape]
    return [int(s) for s in shape]


def _check_affine(name, t, shape):
    if t is not None and list(t.shape) != shape:
        raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                           f"{name} of shape {list(t.shape)} and normalized_shape = {shape}")


def _check_normalized(input, normalized_shape):
    shape = _shape_list(normalized_shape)
    k = len(shape)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    if input.ndim < k or list(input.shape[input.ndim - k:]) != shape:
        inner = ", ".join(str(s) for s in shape)
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape "
                           f"[*, {inner}], but got input of size{list(input.shape)}")
    return shape, tuple(range(-k, 0))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims
    (biased variance)."""
    shape, dims = _check_normalized(input, normalized_shape)
    _check_affine("weight", weight, shape)
    _check_affine("bias", bias, shape)
    dims = dims if len(dims) > 1 else -1
    mean = input.mean(dims, True)
    xc = input - mean
    y = xc * ((xc * xc).mean(dims, True) + eps).rsqrt()
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the last len(normalized_shape) dims; eps=None
    means the input dtype's machine epsilon."""
    shape, dims = _check_normalized(input, normalized_shape)
    _check_affine("weight", weight, shape)
    if eps is None:
        eps = dt.finfo(input.dtype).eps if input.dtype.is_floating_point else \
            dt.finfo(dt.get_default_dtype()).eps
    dims = dims if len(dims) > 1 else -1
    y = input * ((input * input).mean(dims, True) + eps).rsqrt()
    return y if weight is None else y * weight


def _channel_shape(input):
    return (1, -1) + (1,) * (input.ndim - 2)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, *) over groups of C // num_groups channels (and all spatial dims)."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.shape[0] != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} "
                               f"and input of shape {list(input.shape)}")
    x = input.reshape(n, num_groups, -1)
    mean = x.mean(-1, True)
    xc = x - mean
    y = (xc * ((xc * xc).mean(-1, True) + eps).rsqrt()).reshape(input.shape)
    if weight is not None:
        y = y * weight.reshape(_channel_shape(input))
    if bias is not None:
        y = y + bias.reshape(_channel_shape(input))
    return y


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise (N, C, *) per channel C: with batch statistics when `training` (updating the
    running statistics in place: running = (1 - momentum) * running + momentum * batch, with the
    unbiased batch variance), else with the running statistics."""
    if input.ndim < 2:
        raise ValueError(f"Expected 2D or 3D input (got {input.ndim}D input)")
    c = input.shape[1]
    dims = (0,) + tuple(range(2, input.ndim))
    shape = _channel_shape(input)
    if training:
        count = input.numel() // max(c, 1)
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.shape}")
        mean = input.mean(dims, True)
        xc = input - mean
        var = (xc * xc).mean(dims, True)
        if running_mean is not None or running_var is not None:
            with grad_mode.no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach().reshape(c) * momentum)
                if running_var is not None:
                    unbiased = var.detach().reshape(c) * (count / (count - 1))
                    running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation "
                               "mode")
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t.numel() != c:
                raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
        mean = running_mean.reshape(shape)
        var = running_var.reshape(shape)
        xc = input - mean
    y = xc * (var + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p, eps) along `dim`."""
    from .registry import _write_out
    denom = input.norm(p, dim, True).clamp_min(eps).expand_as(input)
    r = input / denom
    return r if out is None else _write_out(out, r)
