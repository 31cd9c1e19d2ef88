"""`Conv1d/2d/3d`, `ConvTranspose1d/2d/3d` and their `Lazy*` forms: PyTorch's arguments,
checks, init.

The arithmetic is `F.conv*d` / `F.conv_transpose*d`; these modules own the parameters
(PyTorch's kaiming-uniform init), the non-zero padding modes (an explicit `F.pad` before an
unpadded convolution, as PyTorch does), `padding='same'/'valid'`, and channel-mismatch errors
that name the layer.
"""
from __future__ import annotations

import math
from typing import List, Optional

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ...script.frontend.lang import ignore, is_scripting
from ...script.runtime.loadable import loadable
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_STRINGS = ("same", "valid")
_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(x, n: int) -> tuple:
    if isinstance(x, (tuple, list)):
        return tuple(x)
    return (x,) * n


class _ConvNd(Module):
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode",
                     "output_padding", "in_channels", "out_channels", "kernel_size"]
    _dims = 0
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None) -> None:
        super().__init__()
        n = self._dims
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size = _ntuple(kernel_size, n)
        stride = _ntuple(stride, n)
        dilation = _ntuple(dilation, n)
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'same', 'valid'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, n)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {{'zeros', 'reflect', 'replicate', "
                             f"'circular'}}, but got padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, n)
        self.groups = groups
        self.padding_mode = padding_mode
        # F.pad order: last dim first, (left, right) per dim
        if isinstance(padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * n
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(n - 1, -1, -1)):
                    total = d * (k - 1)
                    left = total // 2
                    self._reversed_padding_repeated_twice[2 * i] = left
                    self._reversed_padding_repeated_twice[2 * i + 1] = total - left
        else:
            self._reversed_padding_repeated_twice = [p for p in reversed(padding)
                                                     for _ in range(2)]
        if self._transposed:
            shape = (in_channels, out_channels // groups) + kernel_size
        else:
            shape = (out_channels, in_channels // groups) + kernel_size
        self.weight = Parameter(_jt.empty(shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(_jt.empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # PyTorch: kaiming_uniform_(a=sqrt(5)) == U(-1/sqrt(fan_in), 1/sqrt(fan_in))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _check_channels(self, input: Tensor) -> None:
        """PyTorch's channel-mismatch message, prefixed with the layer (issue 4 errors)."""
        n = self._dims
        if input.dim() not in (n + 1, n + 2):
            return  # the functional op reports the rank error
        expected = self.in_channels
        got = input.shape[input.dim() - n - 1]
        if got != expected:
            shape = list(input.shape) if input.dim() == n + 2 else [1] + list(input.shape)
            kind = "transposed=1" if self._transposed else f"groups={self.groups}"
            want = self.weight.shape[0] if self._transposed else \
                self.weight.shape[1] * self.groups
            raise RuntimeError(
                f"{self!r}: Given {kind}, weight of size {list(self.weight.shape)}, expected "
                f"input{shape} to have {want} channels, but got {got} channels instead")

    def extra_repr(self) -> str:
        n = self._dims
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _fn = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, 0,
                         groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            return fn(F.pad(input, self._reversed_padding_repeated_twice,
                            mode=self.padding_mode),
                      weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        # compiled code checks shapes inside the conv op itself (the layer check reads
        # shapes through Python calls that the autodiff pass does not take yet)
        if not is_scripting():
            self._check_channels(input)
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) or (C_in, L)."""
    _dims = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) or (C_in, H, W)."""
    _dims = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) or (C_in, D, H, W)."""
    _dims = 3
    _fn = staticmethod(F.conv3d)


@loadable  # pure: a jit.load'ed ConvTranspose may call it (script/runtime/loadable.py)
@ignore  # shape arithmetic on a Python list: stays Python inside scripted code
def _output_padding(input: Tensor, output_size, dims: int, stride, padding, dilation,
                    kernel_size):
    """output_padding that makes the output `output_size` (PyTorch's rule and errors)."""
    n = dims
    output_size = list(output_size)
    if len(output_size) == n + 2 or (len(output_size) == n + 1 and input.dim() == n + 1):
        output_size = output_size[-n:]
    if len(output_size) != n:
        raise ValueError(f"ConvTranspose{n}D: for {input.dim()}D input, output_size must "
                         f"have {n} or {n + 2} elements (got {len(output_size)})")
    result = []
    for d in range(n):
        dim_size = input.shape[input.dim() - n + d]
        min_size = ((dim_size - 1) * stride[d] - 2 * padding[d]
                    + dilation[d] * (kernel_size[d] - 1) + 1)
        max_size = min_size + stride[d] - 1
        if not min_size <= output_size[d] <= max_size:
            raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                             f"range from {min_size} to {max_size} (for an input of "
                             f"{list(input.shape)[2:]})")
        result.append(output_size[d] - min_size)
    return tuple(result)


class _ConvTranspose(_ConvNd):
    _transposed = True
    _fn = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{self.__class__.__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{self.__class__.__name__} does not support string padding")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def forward(self, input: Tensor, output_size: Optional[List[int]] = None) -> Tensor:
        self._check_channels(input)
        if output_size is None:
            output_padding = self.output_padding
        else:
            output_padding = _output_padding(input, output_size, self._dims, self.stride,
                                             self.padding, self.dilation, self.kernel_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding,
                              output_padding, self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """Transposed 1-D convolution; weight (C_in, C_out / groups, k)."""
    _dims = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """Transposed 2-D convolution; weight (C_in, C_out / groups, kh, kw)."""
    _dims = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """Transposed 3-D convolution; weight (C_in, C_out / groups, kd, kh, kw)."""
    _dims = 3
    _fn = staticmethod(F.conv_transpose3d)


_ConvTransposeNd = _ConvTranspose  # PyTorch's name for the transposed convolutions' base
