"""`jitorch.nn.functional`: PyTorch's functional API (signatures, defaults, errors).

A facade: the ops are declared once in the registry families `_ops/nn_activation.py`,
`_ops/nn_norm.py`, `_ops/nn_loss.py` and `_ops/nn_misc.py`. This module adds PyTorch's
calling conventions on top: the `inplace=` flag of activations (an in-place dispatch of the same
op), `softmax(dim=None)`'s implicit dim, the legacy `size_average` / `reduce` flags.

Wrappers around an op carry `__wrapped__` = the op's function, so the scripting frontend
compiles `F.leaky_relu(x, 0.2)` to the op itself when the call binds to the op's signature.
"""
from __future__ import annotations

import warnings

from .. import _ops
from .._ops import nn_activation as _act
from .._ops.nn_activation import log_softmax as _log_softmax, softmax as _softmax
from .._ops.nn_activation import _log_softmax_fused, _run_softmax, _softmax_fused
from .._profiling import autocast_hook as _ac_hook
from .._ops.nn_loss import (binary_cross_entropy, binary_cross_entropy_with_logits,  # noqa: F401
                            cosine_embedding_loss, cross_entropy, huber_loss, kl_div, l1_loss,
                            margin_ranking_loss, mse_loss, nll_loss, smooth_l1_loss)
from .._ops.nn_misc import dropout, embedding as _embedding, linear, one_hot, pad  # noqa: F401,E501
from .._ops.nn_norm import (batch_norm, group_norm, layer_norm, normalize,  # noqa: F401
                            rms_norm)
from .._ops.composite import composite, expose
from .._ops.registry import OPS, inplace_dispatch
from .._tensor import Tensor
from . import _functional_conv
from .._ops.nn_activation_extra import channel_shuffle, glu, prelu  # noqa: F401,E402
from .._ops.nn_distance import cosine_similarity, pairwise_distance, pdist  # noqa: F401,E402
from .._ops.nn_loss_extra import (gaussian_nll_loss, hinge_embedding_loss,  # noqa: F401,E402
                                  multilabel_soft_margin_loss, poisson_nll_loss,
                                  soft_margin_loss, triplet_margin_loss)
from .._ops.nn_grid_sample import affine_grid, grid_sample  # noqa: F401,E402
from .._ops.nn_instance_norm import instance_norm  # noqa: F401,E402
from .._ops.nn_resample import (interpolate, pixel_shuffle, pixel_unshuffle,  # noqa: F401,E402
                                upsample, upsample_bilinear, upsample_nearest)
from ._functional_conv import *  # noqa: F401,F403  (conv / pool / unfold / fold)
from ._functional_attention import (multi_head_attention_forward,  # noqa: F401
                                    scaled_dot_product_attention)
from .._ops.nn_ctc import ctc_loss as _ctc_loss  # noqa: E402

__all__ = [
    "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_",
    "celu", "celu_", "gelu", "silu", "mish", "hardtanh", "hardtanh_", "hardsigmoid",
    "hardswish", "softplus", "softsign", "tanhshrink", "threshold", "threshold_", "logsigmoid",
    "softshrink", "hardshrink", "sigmoid", "tanh", "softmax", "log_softmax", "softmin",
    "linear", "dropout", "layer_norm", "rms_norm", "group_norm", "batch_norm", "normalize",
    "one_hot", "embedding", "pad", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
    "cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "kl_div", "cosine_embedding_loss", "margin_ranking_loss",
] + _functional_conv.__all__ + ["scaled_dot_product_attention",
                                 "multi_head_attention_forward"]
__all__ += ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
            "pixel_unshuffle", "instance_norm", "cosine_similarity", "pairwise_distance", "pdist",
            "glu", "prelu", "channel_shuffle", "triplet_margin_loss", "hinge_embedding_loss",
            "soft_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
            "multilabel_soft_margin_loss", "affine_grid", "grid_sample", "dropout1d", "dropout2d", "dropout3d",
            "alpha_dropout"]
__all__ += ["ctc_loss", "bilinear"]  # issue 19
from ._functional_more import *  # noqa: F401,F403,E402  (issue 19)
from ._functional_more import __all__ as _more_all  # noqa: E402
__all__ += _more_all + ["feature_alpha_dropout"]

sigmoid = _ops.sigmoid
tanh = _ops.tanh


def _inplace(name, input, attrs):
    op = OPS[name]
    return inplace_dispatch(op, input, (input,), attrs)


def _wraps(op_name):
    """Mark a wrapper as PyTorch's form of an op: `__wrapped__` lets the frontend find it."""
    def deco(fn):
        fn.__wrapped__ = OPS[op_name].fn
        return fn
    return deco


# --- activations -------------------------------------------------------------------------------
@_wraps("relu")
def relu(input, inplace=False):
    return _inplace("relu", input, {}) if inplace else _act.relu(input)


def relu_(input):
    return _inplace("relu", input, {})


@_wraps("relu6")
def relu6(input, inplace=False):
    return _inplace("relu6", input, {}) if inplace else _act.relu6(input)


@_wraps("leaky_relu")
def leaky_relu(input, negative_slope=0.01, inplace=False):
    attrs = {"negative_slope": negative_slope}
    return _inplace("leaky_relu", input, attrs) if inplace else \
        _act.leaky_relu(input, negative_slope)


def leaky_relu_(input, negative_slope=0.01):
    return _inplace("leaky_relu", input, {"negative_slope": negative_slope})


@_wraps("elu")
def elu(input, alpha=1.0, inplace=False):
    return _inplace("elu", input, {"alpha": alpha}) if inplace else _act.elu(input, alpha)


def elu_(input, alpha=1.0):
    return _inplace("elu", input, {"alpha": alpha})


@_wraps("selu")
def selu(input, inplace=False):
    return _inplace("selu", input, {}) if inplace else _act.selu(input)


def selu_(input):
    return _inplace("selu", input, {})


@_wraps("celu")
def celu(input, alpha=1.0, inplace=False):
    return _inplace("celu", input, {"alpha": alpha}) if inplace else _act.celu(input, alpha)


def celu_(input, alpha=1.0):
    return _inplace("celu", input, {"alpha": alpha})


@_wraps("gelu")
def gelu(input, approximate="none"):
    # attribute-free ops in traces (fusible); the `gelu` op checks `approximate` eagerly
    if approximate == "none" and isinstance(input, Tensor):
        return _act._gelu_erf(input)
    if approximate == "tanh" and isinstance(input, Tensor):
        return _act._gelu_tanh(input)
    return _act.gelu(input, approximate)


@_wraps("silu")
def silu(input, inplace=False):
    return _inplace("silu", input, {}) if inplace else _act.silu(input)


@_wraps("mish")
def mish(input, inplace=False):
    return _inplace("mish", input, {}) if inplace else _act.mish(input)


@_wraps("hardtanh")
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    attrs = {"min_val": min_val, "max_val": max_val}
    return _inplace("hardtanh", input, attrs) if inplace else \
        _act.hardtanh(input, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _inplace("hardtanh", input, {"min_val": min_val, "max_val": max_val})


@_wraps("hardsigmoid")
def hardsigmoid(input, inplace=False):
    return _inplace("hardsigmoid", input, {}) if inplace else _act.hardsigmoid(input)


@_wraps("hardswish")
def hardswish(input, inplace=False):
    return _inplace("hardswish", input, {}) if inplace else _act.hardswish(input)


softplus = _act.softplus  # softplus(input, beta=1.0, threshold=20.0)
softsign = _act.softsign
tanhshrink = _act.tanhshrink
logsigmoid = _act.logsigmoid
softshrink = _act.softshrink  # softshrink(input, lambd=0.5)
hardshrink = _act.hardshrink


@_wraps("threshold")
def threshold(input, threshold, value, inplace=False):
    attrs = {"threshold": threshold, "value": value}
    return _inplace("threshold", input, attrs) if inplace else \
        _act.threshold(input, threshold, value)


def threshold_(input, threshold, value):
    return _inplace("threshold", input, {"threshold": threshold, "value": value})


# --- softmax family ----------------------------------------------------------------------------
def _get_softmax_dim(name, ndim, stacklevel):
    """PyTorch's implicit dim (deprecated): 0 for 0-, 1- and 3-d inputs, else 1."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  f"to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.ndim, _stacklevel)
    if _ac_hook[0] is None:  # no autocast: `_softmax`'s wrapper has no work
        return _run_softmax(_act._softmax, input, dim, dtype, _softmax_fused)
    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.ndim, _stacklevel)
    if _ac_hook[0] is None:
        return _run_softmax(_act._log_softmax, input, dim, dtype, _log_softmax_fused)
    return _log_softmax(input, dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmin", input.ndim, _stacklevel)
    return _act.softmin(input, dim, dtype=dtype)


# inside @script the calls are the composites' bodies (a dim=None call stays a Python call:
# the factory rejects the implicit dim, whose warning eager gives)
expose(_act._softmax, softmax, ignore=("_stacklevel",))
expose(_act._log_softmax, log_softmax, ignore=("_stacklevel",))
expose(_act._softmin, softmin, ignore=("_stacklevel",))


# --- embedding ---------------------------------------------------------------------------------
@composite(static=("padding_idx", "max_norm", "scale_grad_by_freq", "sparse"))
def _embedding_form(padding_idx, max_norm, scale_grad_by_freq, sparse):
    if max_norm is not None:
        raise NotImplementedError("embedding(max_norm=...) is not supported yet")
    if scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(scale_grad_by_freq/sparse) is not supported yet")
    if padding_idx is not None and (isinstance(padding_idx, bool) or
                                    not isinstance(padding_idx, int)):
        raise TypeError(f"embedding(): argument 'padding_idx' must be int, not "
                        f"{type(padding_idx).__name__}")

    def body(input, weight):
        return _embedding(input, weight, padding_idx)
    return body


@_wraps("embedding")
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    if padding_idx is not None:
        n = weight.shape[0]
        if padding_idx > 0 and padding_idx >= n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -n:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = n + padding_idx
    return _embedding_form.body(padding_idx, max_norm, scale_grad_by_freq, sparse)(input,
                                                                                 weight)


expose(_embedding_form, embedding, ignore=("norm_type",))  # norm_type: only with max_norm


def __getattr__(name):
    # the channel-wise dropouts live with their modules (nn/modules/dropout.py), which import
    # this module: bound on first use, not at import
    if name in ("dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                "feature_alpha_dropout"):
        from .modules import dropout as _dropout_mod
        return getattr(_dropout_mod, name)
    raise AttributeError(f"module 'jitorch.nn.functional' has no attribute '{name}'")


# --- issue 19 ------------------------------------------------------------------------------------
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The CTC loss of (T, N, C) log-probabilities (the `ctc_loss` op; lengths as tuples)."""
    return _ctc_loss(log_probs, targets, tuple(int(v) for v in _as_list(input_lengths)),
                     tuple(int(v) for v in _as_list(target_lengths)), blank, reduction,
                     zero_infinity)


def _as_list(v):
    return v.tolist() if isinstance(v, Tensor) else list(v) if isinstance(v, (list, tuple)) \
        else [v]


ctc_loss.__wrapped__ = _ctc_loss


def bilinear(input1, input2, weight, bias=None):
    """y = x1^T A x2 + b over the last dims; weight (out, in1, in2)."""
    if input1.dim() != input2.dim():
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.dim()} "
                           f"and {input2.dim()}")
    for i in range(input1.dim() - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: "
                               f"got {input1.shape[i]} and {input2.shape[i]}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {weight.shape[2]}")
    out = _ops.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
