"""`InstanceNorm1d/2d/3d`: PyTorch's instance-norm layers (affine off and no running statistics
by default; unbatched input accepted; the math is `F.instance_norm`)."""
from __future__ import annotations

import warnings

from ..._tensor import Tensor
from .. import functional as F
from .batchnorm import _NormBase

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_NormBase):
    _no_batch_dim = 0  # the rank of an unbatched input (C, *spatial)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        _check_input(input, self._no_batch_dim, self.num_features, self.affine)
        # one call, with the unbatched case handled inside: (not a method named `_apply`,
        # which is Module's own, used by .to() / .double())
        return _instance_norm(input, self._no_batch_dim, self.running_mean, self.running_var,
                              self.weight, self.bias,
                              self.training or not self.track_running_stats,
                              self.momentum if self.momentum is not None else 0.0, self.eps)


def _instance_norm(input, no_batch_dim: int, running_mean, running_var, weight, bias,
                   use_input_stats: bool, momentum: float, eps: float):
    """F.instance_norm, an unbatched input (rank `no_batch_dim`) as a batch of one."""
    if input.dim() == no_batch_dim:
        return F.instance_norm(input.unsqueeze(0), running_mean, running_var, weight, bias,
                               use_input_stats, momentum, eps).squeeze(0)
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def _check_input(input, no_batch_dim: int, num_features: int, affine: bool) -> None:
    """PyTorch's rank check and channel-count check (a warning without affine parameters); a
    plain function, so a scripted forward calls it as a Python op."""
    if input.dim() not in (no_batch_dim, no_batch_dim + 1):
        raise ValueError(f"expected {no_batch_dim}D or {no_batch_dim + 1}D input (got "
                         f"{input.dim()}D input)")
    feature_dim = input.dim() - no_batch_dim
    if input.size(feature_dim) != num_features:
        if affine:
            raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                             f"({num_features}), but got: {input.size(feature_dim)}.")
        warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can "
                      f"silence this warning by not passing in num_features, which is not used "
                      f"because affine=False", stacklevel=3)


class InstanceNorm1d(_InstanceNorm):
    """Over (N, C, L) or unbatched (C, L)."""
    _no_batch_dim = 2


class InstanceNorm2d(_InstanceNorm):
    """Over (N, C, H, W) or unbatched (C, H, W)."""
    _no_batch_dim = 3


class InstanceNorm3d(_InstanceNorm):
    """Over (N, C, D, H, W) or unbatched (C, D, H, W)."""
    _no_batch_dim = 4
