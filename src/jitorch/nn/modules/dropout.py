"""`Dropout`, `Dropout1d`, `Dropout2d`, `Dropout3d` and `AlphaDropout` (train-mode only; identity in eval).

`Dropout` is `F.dropout`; the channel-wise variants draw one keep/drop decision per (sample,
channel) and broadcast it over the spatial dims, as PyTorch's `dropout1d` / `dropout2d`.
"""
from __future__ import annotations

import math
import warnings

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    __constants__ = ["p", "inplace"]

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


def _channel_dropout(input: Tensor, p: float, training: bool, inplace: bool,
                     batched: bool) -> Tensor:
    """Zero whole channels with probability p and scale the kept ones by 1/(1-p)."""
    if not training or p == 0:
        return input
    lead = 2 if batched else 1
    mask_shape = tuple(input.shape[:lead]) + (1,) * (input.dim() - lead)
    if p == 1:
        mask = _jt.zeros(mask_shape, dtype=input.dtype)
    else:
        mask = (_jt.rand(mask_shape) >= p).to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


class Dropout(_DropoutNd):
    """Zeroes each element with probability p in training mode, scaling the rest by 1/(1-p)."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout(input, self.p, self.training, self.inplace)


class Dropout1d(_DropoutNd):
    """Channel-wise dropout on (N, C, L) or (C, L) inputs."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (2, 3):
            raise RuntimeError(
                f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. "
                "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
                "spatial dimension, a channel dimension, and an optional batch dimension (i.e. "
                "2D or 3D inputs).")
        return _channel_dropout(input, self.p, self.training, self.inplace,
                                batched=input.dim() == 3)


class Dropout2d(_DropoutNd):
    """Channel-wise dropout on (N, C, H, W) or (C, H, W) inputs."""

    def forward(self, input: Tensor) -> Tensor:
        ndim = input.dim()
        if ndim not in (3, 4):
            warnings.warn(
                f"dropout2d: Received a {ndim}-D input to dropout2d, which is deprecated and "
                "will result in an error in a future release. To retain the behavior and "
                "silence this warning, please use dropout instead. Note that dropout2d exists "
                "to provide channel-wise dropout on inputs with 2 spatial dimensions, a channel "
                "dimension, and an optional batch dimension (i.e. 3D or 4D inputs).",
                stacklevel=2)
        if ndim == 3:
            warnings.warn(
                "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D "
                "dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
                "is the channel dim. This behavior will change in a future release to interpret "
                "the input as one without a batch dimension, i.e. shape (C, H, W). To maintain "
                "the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
                stacklevel=2)
        # PyTorch's feature_dropout: dim 0 is the batch, dim 1 the channel, for every rank
        return _channel_dropout(input, self.p, self.training, self.inplace, batched=ndim >= 2)


class Dropout3d(_DropoutNd):
    """Channel-wise dropout on (N, C, D, H, W) or unbatched (C, D, H, W) inputs."""

    def forward(self, input: Tensor) -> Tensor:
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's self-normalising mean and variance (PyTorch's formula)."""
    _feature = False

    def forward(self, input: Tensor) -> Tensor:
        p = self.p
        if not self.training or p == 0:
            return input
        if p == 1:
            out = input * 0.0
            return input.copy_(out) if self.inplace else out
        alpha = 1.7580993408473766
        a = 1.0 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
        # FeatureAlphaDropout: one draw per (sample, channel), as PyTorch's feature noise
        shape = (tuple(input.shape[:2]) + (1,) * (input.dim() - 2) if self._feature
                 else tuple(input.shape))
        keep = (_jt.rand(shape) >= p).to(input.dtype)
        b = (keep - 1.0) * (alpha * a) + alpha * a * p
        out = input * (keep * a) + b
        return input.copy_(out) if self.inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """`F.dropout1d`: channel-wise dropout of (N, C, L) or unbatched (C, L) input."""
    _check_p(p)
    if input.dim() not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.dim()}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension (i.e. "
            "2D or 3D inputs).")
    return _channel_dropout(input, p, training, inplace, batched=input.dim() == 3)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """`F.dropout2d`: the module's channel-wise dropout (and warnings) as a function."""
    return _module_as_function(Dropout2d, input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """`F.dropout3d`: channel-wise dropout of (N, C, D, H, W) or unbatched (C, D, H, W)."""
    _check_p(p)
    ndim = input.dim()
    if ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {ndim}-D input to dropout3d, which is deprecated and will "
            "result in an error in a future release. To retain the behavior and silence this "
            "warning, please use dropout instead. Note that dropout3d exists to provide "
            "channel-wise dropout on inputs with 3 spatial dimensions, a channel dimension, and "
            "an optional batch dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    return _channel_dropout(input, p, training, inplace, batched=ndim == 5)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """`F.alpha_dropout`: the module's SELU-preserving dropout as a function."""
    return _module_as_function(AlphaDropout, input, p, training, inplace)


class FeatureAlphaDropout(AlphaDropout):
    """Alpha dropout of whole channels (one mask value per sample and channel)."""
    _feature = True


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """`F.feature_alpha_dropout`: channel-wise alpha dropout as a function."""
    return _module_as_function(FeatureAlphaDropout, input, p, training, inplace)


def _module_as_function(module_cls, input, p, training, inplace):
    """The functional form of a dropout module: one call of a `module_cls(p, inplace)` in the
    given training mode, so the function and the module share their checks and warnings."""
    _check_p(p)
    m = module_cls(p, inplace)
    m.training = training
    return m(input)


def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
