"""`BatchNorm1d` and `BatchNorm2d`: running statistics, momentum, train/eval behaviour.

The normalisation (and the in-place running-stat update) is `F.batch_norm`; these modules own
the buffers (`running_mean`, `running_var`, `num_batches_tracked`, PyTorch's names and dtypes),
the cumulative average of `momentum=None`, and PyTorch's input-rank checks. An eager call
that updates no running statistics (evaluation mode, or training without tracked statistics)
runs its functional call compiled where eligible (`_eager_compiled.functional`); training with
running statistics keeps the eager path (their in-place update is outside the script subset).
"""
from __future__ import annotations

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ...script.frontend.lang import is_scripting
from . import _eager_compiled
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _NormBase(Module):
    """Parameters, running statistics and state-dict handling shared by batch and instance norm
    (PyTorch's `_NormBase`); the forward is each family's."""
    _version = 2
    __constants__ = ["track_running_stats", "momentum", "eps", "num_features", "affine"]

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(_jt.empty(num_features, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(_jt.empty(num_features, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _jt.zeros(num_features, device=device,
                                                           dtype=dtype))
            self.register_buffer("running_var", _jt.ones(num_features, device=device,
                                                         dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 _jt.tensor(0, dtype=_jt.long, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        # checkpoints from before num_batches_tracked existed (version < 2) load it as 0
        version = local_metadata.get("version", None)
        if (version is None or version < 2) and self.track_running_stats:
            key = prefix + "num_batches_tracked"
            if key not in state_dict:
                state_dict[key] = _jt.tensor(0, dtype=_jt.long)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys,
                                      unexpected_keys, error_msgs)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        if input.dim() >= 2 and input.shape[1] != self.num_features:
            # issue 4: shape errors name the layer and both shapes
            raise RuntimeError(f"{self!r}: expected input with {self.num_features} channels "
                               f"(dim 1), but got input of size {list(input.shape)}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        mean = self.running_mean if use_stats else None
        var = self.running_var if use_stats else None
        if not is_scripting():
            res = None
            # an eager call that updates no running statistics (evaluation, or training without
            # them; a single value per channel in training: eager's error) runs compiled where
            # eligible: F.batch_norm's in-place update stays outside the script subset
            if not bn_training or mean is None and var is None and \
                    input.numel() > input.size(1):
                res = _eager_compiled.functional(
                    self, "batch_norm", ("input", "running_mean", "running_var", "weight",
                                         "bias"), (input, mean, var, self.weight, self.bias),
                    ("training", "eps"), (bn_training, self.eps))
            if res is not None:
                return res
        return F.batch_norm(input, mean, var, self.weight, self.bias, bn_training, factor,
                            self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) inputs."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) inputs."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")
