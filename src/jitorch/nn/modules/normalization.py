"""`LayerNorm`, `GroupNorm` and `RMSNorm`: PyTorch's parameters, initialisation and printed form.

The arithmetic is the registry ops behind `F.layer_norm` / `F.group_norm` / `F.rms_norm`;
these modules own the learnable affine parameters and PyTorch's constructor checks. An eager
call runs the functional call compiled where eligible (`_eager_compiled.functional`).
"""
from __future__ import annotations

import numbers

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ...script.frontend.lang import is_scripting
from . import _eager_compiled
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm"]


def _shape_tuple(normalized_shape) -> tuple:
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(int(s) for s in normalized_shape)


class _TrailingNorm(Module):
    """Base of the norms over trailing dims: the input-shape check naming the layer."""

    def _check_trailing(self, input: Tensor) -> None:
        """PyTorch's normalized_shape message, prefixed with the layer (issue 4 errors).
        Written so scripted code compiles it: the loop over the static tuple unrolls, the
        rank tests fold per specialisation and the message is constant text plus ints."""
        n = len(self.normalized_shape)
        bad = input.dim() < n
        if not bad:
            i = 0
            for s in self.normalized_shape:
                # the index F.layer_norm's check reads: scripted, CSE merges the two checks
                if input.shape[i - n] != s:
                    bad = True
                i += 1
        if bad:
            shape = list(self.normalized_shape)
            raise RuntimeError(f"{self!r}: Given normalized_shape={shape}, expected input "
                               f"with shape [*, {str(shape)[1:-1]}], but got input of size"
                               f"{list(input.shape)}")


class LayerNorm(_TrailingNorm):
    """Normalises over the trailing `normalized_shape` dims; weight=1, bias=0 initially."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_jt.empty(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(_jt.empty(self.normalized_shape, device=device,
                                                dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        self._check_trailing(input)
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "layer_norm", ("input", "weight", "bias"), (input, self.weight, self.bias),
                ("normalized_shape", "eps"), (self.normalized_shape, self.eps))
            if res is not None:
                return res
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        # PyTorch prints `bias=` from the bias Parameter's presence (False when not affine)
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class GroupNorm(Module):
    """Normalises each of `num_groups` channel groups; per-channel affine weight=1, bias=0."""

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        if affine:
            self.weight = Parameter(_jt.empty(num_channels, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(_jt.empty(num_channels, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() >= 2 and input.shape[1] != self.num_channels:
            # issue 4: shape errors name the layer and both shapes
            raise RuntimeError(f"{self!r}: expected input with {self.num_channels} channels "
                               f"(dim 1), but got input of size {list(input.shape)}")
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "group_norm", ("input", "weight", "bias"), (input, self.weight, self.bias),
                ("num_groups", "eps"), (self.num_groups, self.eps))
            if res is not None:
                return res
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        bias = self.bias is not None if self.affine else False
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={bias}")


class RMSNorm(_TrailingNorm):
    """x / sqrt(mean(x^2) + eps) * weight over the trailing dims (eps=None: dtype's eps)."""

    __constants__ = ["normalized_shape", "eps", "elementwise_affine"]

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape_tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(_jt.empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        self._check_trailing(x)
        if not is_scripting():  # an eager call: its compiled function where eligible
            eps = self.eps  # (None: F.rms_norm's default, which the compiled call needs given)
            if eps is None and x.dtype.is_floating_point:
                eps = _jt.finfo(x.dtype).eps
            res = _eager_compiled.functional(
                self, "rms_norm", ("input", "weight"), (x, self.weight),
                ("normalized_shape", "eps"), (self.normalized_shape, eps))
            if res is not None:
                return res
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
