"""The rest of `jitorch.nn.functional` that real code uses (issue 19): local_response_norm,
max_unpool1d/2d/3d, multi_margin_loss, multilabel_margin_loss,
triplet_margin_with_distance_loss, gumbel_softmax, rrelu, the adaptive max pools'
`*_with_indices` forms, native_channel_shuffle. PyTorch's definitions, written with registry
ops (re-exported by functional.py).
"""
from __future__ import annotations

import math
import warnings

import numpy as np

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from .._ops.nn_activation_extra import channel_shuffle as native_channel_shuffle  # noqa: F401
from .._ops.nn_pool import (_adaptive_max1, _adaptive_max2, _adaptive_max3,  # noqa: F401
                            avg_pool2d, avg_pool3d, fractional_max_pool2d,
                            fractional_max_pool3d)

__all__ = ["local_response_norm", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "multi_margin_loss", "multilabel_margin_loss", "triplet_margin_with_distance_loss",
           "gumbel_softmax", "rrelu", "rrelu_", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
           "native_channel_shuffle", "embedding_bag", "fractional_max_pool2d",
           "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices", "conv_tbc"]

def embedding_bag(*args, **kwargs):
    """`F.embedding_bag` (nn/modules/sparse.py owns it, with EmbeddingBag)."""
    from .modules.sparse import embedding_bag as fn
    return fn(*args, **kwargs)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution of (time, batch, channel) input with weight (k, C_in, C_out)."""
    out = _jt.nn.functional.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias,
                                   padding=pad)
    return out.permute(2, 0, 1)


adaptive_max_pool1d_with_indices = _adaptive_max1
adaptive_max_pool2d_with_indices = _adaptive_max2
adaptive_max_pool3d_with_indices = _adaptive_max3


def _reduce(loss, reduction):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction")


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Normalisation over `size` neighbouring channels (AlexNet's LRN)."""
    from .._ops.nn_misc import pad
    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality                          "
                         f"input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(sizes)
    return input / (div * alpha + k).pow(beta)


def _unpool(nd, input, indices, kernel_size, stride, padding, output_size):
    from .._ops.nn_conv import _tup
    k = _tup(kernel_size, nd, "kernel_size", "pooling")
    s = k if stride is None else _tup(stride, nd, "stride", "pooling")
    p = _tup(padding, nd, "padding", "pooling")
    default = [(input.shape[input.dim() - nd + d] - 1) * s[d] + k[d] - 2 * p[d]
               for d in range(nd)]
    if output_size is None:
        size = default
    else:
        size = list(output_size)
        if len(size) == nd + 2:
            size = size[2:]
        if len(size) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                             f"elements, but it has a length of '{len(size)}'")
        for d in range(nd):
            lo, hi = default[d] - s[d], default[d] + s[d]
            if not lo < size[d] < hi:
                raise ValueError(f'invalid output_size "{list(output_size)}" (dim {d} must be '
                                 f'between {lo} and {hi})')
    if indices.shape != input.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    lead = tuple(input.shape[:input.dim() - nd])
    plane = math.prod(size)
    if indices.numel() and (bool((indices < 0).any()) or bool((indices >= plane).any())):
        raise RuntimeError(f"Found an invalid max index: {int(indices.max())} (output volumes "
                           f"are of size {'x'.join(map(str, size))}")
    out = _jt.zeros(lead + (plane,), dtype=input.dtype)
    out = out.scatter(-1, indices.reshape(lead + (-1,)), input.reshape(lead + (-1,)))
    return out.reshape(lead + tuple(size))


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: values put back at their indices, zeros elsewhere."""
    return _unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: values put back at their indices, zeros elsewhere."""
    return _unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d: values put back at their indices, zeros elsewhere."""
    return _unpool(3, input, indices, kernel_size, stride, padding, output_size)


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """Multi-class hinge loss: sum_{i != y} max(0, margin - x[y] + x[i])^p / C."""
    from .._ops.nn_loss import legacy_reduction
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if input.dim() > 2 or input.dim() < 1:
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    c = x.shape[1]
    if t.numel() != x.shape[0]:
        raise RuntimeError(f"inconsistent target size, expected {x.shape[0]} but got "
                           f"{list(target.shape)}")
    xy = x.gather(1, t.unsqueeze(1))
    m = (x - xy + margin).clamp_min(0)
    if p == 2:
        m = m * m
    if weight is not None:
        m = m * weight.gather(0, t).unsqueeze(1)
    other = 1 - _jt.nn.functional.one_hot(t, c).to(x.dtype)
    loss = (m * other).sum(1) / c
    if input.dim() == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target labels j (listed until the first -1) and non-targets i of
    max(0, 1 - (x[j] - x[i])) / C."""
    from .._ops.nn_loss import legacy_reduction
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce, reduction)
    if input.dim() > 2 or input.shape != target.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{list(input.shape)}")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    tg = target.reshape(x.shape).numpy()
    n, c = x.shape
    is_target = np.zeros((n, c), bool)
    for r in range(n):
        for j in tg[r]:
            if j < 0:
                break
            is_target[r, j] = True
    mask = np.zeros((n, c, c), bool)  # (row, target j, other i)
    mask[:] = is_target[:, :, None] & ~is_target[:, None, :]
    pair = (1 - (x.unsqueeze(2) - x.unsqueeze(1))).clamp_min(0)
    loss = (pair * _jt.tensor(mask).to(x.dtype)).sum((1, 2)) / c
    if input.dim() == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """The triplet loss with any distance function (pairwise_distance by default)."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {anchor.dim()}D, "
                           f"positive {positive.dim()}D, and negative {negative.dim()}D inputs")
    dist = distance_function or _jt.pairwise_distance
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = _jt.minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """A sample of the Gumbel-softmax distribution (straight-through one-hot if hard)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -_jt.empty_like(logits).exponential_().log()
    y_soft = ((logits + gumbels) / tau).softmax(dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = _jt.zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomised leaky ReLU: slopes ~ U(lower, upper) when training, their mean otherwise."""
    if not training:
        out = _jt.nn.functional.leaky_relu(input, (lower + upper) / 2)
    else:
        slope = _jt.empty_like(input).uniform_(lower, upper)
        out = _jt.where(input >= 0, input, input * slope)
    return input.copy_(out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(input, lower, upper, training, inplace=True)


