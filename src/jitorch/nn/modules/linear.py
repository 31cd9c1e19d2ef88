"""`Identity`, `Linear` and `Bilinear` with PyTorch's default initialisation and printed form."""
from __future__ import annotations

import math

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ...script.frontend.lang import is_scripting
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """y = x W^T + b, W of shape (out_features, in_features)."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_jt.empty((out_features, in_features), device=device,
                                          dtype=dtype))
        if bias:
            self.bias = Parameter(_jt.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # kaiming_uniform_ with a=sqrt(5) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as PyTorch
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        # in compiled code the matmul's own size check reports (the layer check reads
        # numel() through a Python call that the autodiff pass does not take yet)
        # read once: a parametrized weight (nn.utils.parametrize) is computed on each read
        weight = self.weight
        if not is_scripting() and input.dim() >= 1 and \
                input.shape[-1] != weight.shape[-1]:
            # PyTorch's matmul message, prefixed with the layer (issue 4: errors name the layer)
            rows = input.numel() // max(input.shape[-1], 1) if input.dim() > 1 else 1
            raise RuntimeError(
                f"{self!r}: mat1 and mat2 shapes cannot be multiplied ({rows}x{input.shape[-1]} "
                f"and {weight.shape[1]}x{weight.shape[0]})")
        return F.linear(input, weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """y = x1^T A x2 + b, A of shape (out_features, in1_features, in2_features)."""

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_jt.empty((out_features, in1_features, in2_features),
                                          device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_jt.empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class NonDynamicallyQuantizableLinear(Linear):
    """A `Linear` under PyTorch's name and path (`nn.modules.linear`) for attention's output
    projection, so printed forms and imports match."""
