"""Normalisation functions of `jitorch.nn.functional`: layer_norm, rms_norm, group_norm,
batch_norm (running statistics updated in place when training) and normalize.

All are composites of registry ops (mean, sub, mul, rsqrt, ...), as PyTorch's decompositions
write them: autograd and forward AD come from the primitives, and the compiler's row fusion sees
the last-dim `mean(keepdim=True)` chains of layer_norm / rms_norm. Statistics use two passes
(mean, then the mean of squared deviations), which is numerically sound for any input scale.
Shape errors use PyTorch's messages.
"""
from __future__ import annotations

from typing import List, Optional

from .. import _autocast
from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd import grad_mode
from .composite import Unsupported, body_helper, composite, expose

__all__: list = []  # reached through jitorch.nn.functional


def _shape_list(shape) -> list:
    if isinstance(shape, int):
        return [shape]
    return [int(s) for s in shape]


# --- the bodies (script subset; the statics are closure constants) ------------------------------
@body_helper
def _sizes_differ(t: Tensor, shape: List[int], trailing: bool) -> bool:
    """`t`'s sizes are not `shape`: its last len(shape) sizes (`trailing`: t may have more
    dims before them), or all of them."""
    k = len(shape)
    differ = t.dim() < k if trailing else t.dim() != k
    for j in range(k):
        if not differ:
            if t.size(j - k) != shape[j]:
                differ = True
    return differ


@body_helper
def _check_normalized(input: Tensor, shape: List[int], inner: str) -> None:
    """PyTorch's check of a norm's input against `normalized_shape` (`inner`: its sizes as
    the message writes them)."""
    if _sizes_differ(input, shape, True):
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape "
                           f"[*, {inner}], but got input of size{list(input.shape)}")


@body_helper
def _check_affine(t: Tensor, name: str, shape: List[int]) -> None:
    """PyTorch's check of a norm's `weight` or `bias` (`name`) against `normalized_shape`."""
    if _sizes_differ(t, shape, False):
        raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got "
                           f"{name} of shape {list(t.shape)} and normalized_shape = {shape}")


def _norm_dims(normalized_shape):
    shape = _shape_list(normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    return -1 if len(shape) == 1 else tuple(range(-len(shape), 0))


@composite(static=("normalized_shape", "eps"))
def _layer_norm(normalized_shape, eps):
    dims = _norm_dims(normalized_shape)
    shape = _shape_list(normalized_shape)
    k = len(shape)
    inner = ", ".join(str(s) for s in shape)
    eps = float(eps)

    def body(input, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None):
        # the checks live in the body, so eager, interpreted and compiled code raise alike
        _check_normalized(input, shape, inner)
        if weight is not None:
            _check_affine(weight, "weight", shape)
        if bias is not None:
            _check_affine(bias, "bias", shape)
        mean = input.mean(dims, True)
        xc = input - mean
        y = xc * ((xc * xc).mean(dims, True) + eps).rsqrt()
        if weight is not None:
            y = y * weight
        if bias is not None:
            y = y + bias
        return y
    return body


@composite(static=("normalized_shape", "eps"))
def _rms_norm(normalized_shape, eps):
    dims = _norm_dims(normalized_shape)
    shape = _shape_list(normalized_shape)
    inner = ", ".join(str(s) for s in shape)
    if eps is None:  # the input dtype's epsilon: eager resolves it before the body
        raise Unsupported("rms_norm(eps=None)")
    eps = float(eps)

    def body(input, weight: Optional[Tensor] = None):
        _check_normalized(input, shape, inner)
        if weight is not None:
            _check_affine(weight, "weight", shape)
        y = input * ((input * input).mean(dims, True) + eps).rsqrt()
        if weight is not None:
            y = y * weight
        return y
    return body


@composite(static=("num_groups", "eps"))
def _group_norm(num_groups, eps):
    if isinstance(num_groups, bool) or not isinstance(num_groups, int):
        raise TypeError(f"group_norm(): argument 'num_groups' (position 2) must be int, not "
                        f"{type(num_groups).__name__}")
    if num_groups <= 0:
        raise RuntimeError(f"Expected num_groups to be positive, got num_groups={num_groups}")
    eps = float(eps)

    def body(input, weight: Optional[Tensor] = None, bias: Optional[Tensor] = None):
        if input.dim() < 2:
            raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                               f"{input.dim()}")
        # (N, C, *) viewed as (N, G, m) and (N, C, m): no branch on the rank
        n = input.size(0)
        c = input.size(1)
        if c % num_groups != 0:
            raise RuntimeError(f"Expected number of channels in input to be divisible by "
                               f"num_groups, but got input of shape {list(input.shape)} and "
                               f"num_groups={num_groups}")
        if weight is not None:
            if weight.dim() != 1 or weight.size(0) != c:
                raise RuntimeError(f"Expected weight to be a vector of size equal to the number "
                                   f"of channels in input, but got weight of shape "
                                   f"{list(weight.shape)} and input of shape {list(input.shape)}")
        if bias is not None:
            if bias.dim() != 1 or bias.size(0) != c:
                raise RuntimeError(f"Expected bias to be a vector of size equal to the number "
                                   f"of channels in input, but got bias of shape "
                                   f"{list(bias.shape)} and input of shape {list(input.shape)}")
        x = input.reshape([n, num_groups, -1])
        xc = x - x.mean(-1, True)
        y = (xc * ((xc * xc).mean(-1, True) + eps).rsqrt()).reshape([n, c, -1])
        if weight is not None:
            y = y * weight.reshape([1, c, 1])
        if bias is not None:
            y = y + bias.reshape([1, c, 1])
        return y.reshape_as(input)
    return body


def _bn_in_place(training, eps, has_mean, has_var):
    if training and (has_mean or has_var):
        return "running statistics updated in place"
    return None


@composite(static=("training", "eps", "running_mean?", "running_var?"),
           script_unsupported=_bn_in_place)
def _batch_norm(training, eps, has_mean, has_var):
    """Training with running statistics: the body also returns the batch mean and (biased)
    variance, from which eager updates the statistics in place (outside the script subset)."""
    if not training and not (has_mean and has_var):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    stats = bool(training) and (has_mean or has_var)
    eps = float(eps)

    def body(input, running_mean: Optional[Tensor], running_var: Optional[Tensor],
             weight: Optional[Tensor] = None, bias: Optional[Tensor] = None):
        # (N, C, *) viewed as (N, C, m): per-channel shapes without a branch on the rank
        n = input.size(0)
        c = input.size(1)
        m = 1  # not -1: reshape cannot infer it for an empty batch
        for d in range(2, input.dim()):
            m = m * input.size(d)
        x = input.reshape([n, c, m])
        if training:
            mean = x.mean((0, 2), True)
            xc = x - mean
            var = (xc * xc).mean((0, 2), True)
        else:
            mean = running_mean.reshape([1, c, 1])
            xc = x - mean
            var = running_var.reshape([1, c, 1])
        y = xc * (var + eps).rsqrt()
        if weight is not None:
            y = y * weight.reshape([1, c, 1])
        if bias is not None:
            y = y + bias.reshape([1, c, 1])
        if stats:
            return y.reshape_as(input), mean, var
        return y.reshape_as(input)
    return body


# --- the public functions: the checks that need the tensors, then the body ---------------------
@_autocast.policy({"cuda": "fp32"})
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims
    (biased variance)."""
    return _layer_norm.body(normalized_shape, eps)(input, weight, bias)  # (checks included)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) * weight over the last len(normalized_shape) dims; eps=None
    means the input dtype's machine epsilon."""
    if eps is None:
        eps = dt.finfo(input.dtype).eps if input.dtype.is_floating_point else \
            dt.finfo(dt.get_default_dtype()).eps
    return _rms_norm.body(normalized_shape, eps)(input, weight)


@_autocast.policy({"cuda": "fp32"})
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalise (N, C, *) over groups of C // num_groups channels (and all spatial dims)."""
    return _group_norm.body(num_groups, eps)(input, weight, bias)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalise (N, C, *) per channel C: with batch statistics when `training` (updating the
    running statistics in place: running = (1 - momentum) * running + momentum * batch, with the
    unbiased batch variance), else with the running statistics."""
    if input.ndim < 2:
        raise ValueError(f"Expected 2D or 3D input (got {input.ndim}D input)")
    c = input.shape[1]
    has_mean, has_var = running_mean is not None, running_var is not None
    count = input.numel() // max(c, 1)
    if training:
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {input.shape}")
    else:
        if not (has_mean and has_var):
            raise RuntimeError("running_mean and running_var must be defined in evaluation "
                               "mode")
        for name, t in (("running_mean", running_mean), ("running_var", running_var)):
            if t.numel() != c:
                raise RuntimeError(f"{name} should contain {c} elements not {t.numel()}")
    body = _batch_norm.body(bool(training), eps, has_mean, has_var)
    if not (training and (has_mean or has_var)):
        return body(input, running_mean, running_var, weight, bias)
    y, mean, var = body(input, running_mean, running_var, weight, bias)
    with grad_mode.no_grad():
        if has_mean:
            running_mean.mul_(1 - momentum).add_(mean.detach().reshape(c) * momentum)
        if has_var:
            unbiased = var.detach().reshape(c) * (count / (count - 1))
            running_var.mul_(1 - momentum).add_(unbiased * momentum)
    return y


expose(_layer_norm, layer_norm)
expose(_rms_norm, rms_norm)
expose(_group_norm, group_norm)
expose(_batch_norm, batch_norm, ignore=("momentum",))  # read only where eager updates in place


def _other_p(p, dim, eps):
    if p not in (1, 2):
        return "a p without a clamp-safe sum form (the norm op is not compiled)"
    return None


@composite(static=("p", "dim", "eps"), script_unsupported=_other_p)
def _normalize(p, dim, eps):
    """x / max(||x||_p, eps). p = 1 and 2 as sums whose clamp comes before the root (for p = 2,
    sqrt(max(s, eps^2)) = max(sqrt(s), eps)), so a zero vector's gradient is g / eps as in
    PyTorch, not 0 * inf; other p through the norm op (eager)."""
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"normalize(): argument 'p' must be float, not {type(p).__name__}")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"normalize(): argument 'dim' must be int, not {type(dim).__name__}")
    if p == 2:
        eps2 = float(eps) * float(eps)

        def body(input):
            nrm = (input * input).sum(dim, True).clamp_min(eps2).sqrt()
            return input / nrm.expand_as(input)
    elif p == 1:
        def body(input):
            return input / input.abs().sum(dim, True).clamp_min(eps).expand_as(input)
    else:
        def body(input):  # (eager only: script_unsupported)
            return input / input.norm(p, dim, True).clamp_min(eps).expand_as(input)
    return body


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(||x||_p, eps) along `dim`."""
    from .registry import _write_out
    r = _normalize.body(p, dim, eps)(input)
    return r if out is None else _write_out(out, r)


expose(_normalize, normalize)
