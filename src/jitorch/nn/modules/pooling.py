"""Pooling modules: `MaxPool1d/2d/3d`, `AvgPool1d/2d/3d`, `AdaptiveAvgPool1d/2d/3d`,
`AdaptiveMaxPool1d/2d/3d`, `LPPool1d/2d/3d`.

Thin holders of PyTorch's hyper-parameters (and printed form) over the `F.*pool*` registry ops;
`return_indices=True` selects the `max_pool*_with_indices` op.
"""
from __future__ import annotations

from ..._tensor import Tensor
from .. import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxPool3d",
           "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
           "LPPool3d"]


class _MaxPoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding", "dilation", "return_indices",
                     "ceil_mode"]
    _fn = _fn_indices = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor):
        args = (input, self.kernel_size, self.stride, self.padding, self.dilation,
                self.ceil_mode)
        if self.return_indices:
            return type(self)._fn_indices(*args)
        return type(self)._fn(*args)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool1d)
    _fn_indices = staticmethod(F.max_pool1d_with_indices)


class MaxPool2d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool2d)
    _fn_indices = staticmethod(F.max_pool2d_with_indices)


class MaxPool3d(_MaxPoolNd):
    _fn = staticmethod(F.max_pool3d)
    _fn_indices = staticmethod(F.max_pool3d_with_indices)


def _single(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class _AvgPoolNd(Module):
    """The base of the average pools (PyTorch's class, for isinstance checks)."""


class AvgPool1d(_AvgPoolNd):
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        # PyTorch stores AvgPool1d's arguments as 1-tuples (and prints them so)
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _AvgPoolDivisor(_AvgPoolNd):
    """AvgPool2d and AvgPool3d: PyTorch keeps their arguments as given."""
    __constants__ = ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                     "divisor_override"]

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if (stride is not None) else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding,
                              self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolDivisor):
    _fn = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolDivisor):
    _fn = staticmethod(F.avg_pool3d)


class _LPPoolNd(Module):
    __constants__ = ["norm_type", "kernel_size", "stride", "ceil_mode"]
    _fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                              self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    _fn = staticmethod(F.lp_pool3d)


class _AdaptivePool(Module):
    __constants__ = ["output_size"]
    _fn = None

    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def forward(self, input: Tensor):
        return type(self)._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class _AdaptiveAvgPoolNd(_AdaptivePool):
    """The base of the adaptive average pools (PyTorch's name)."""


class AdaptiveAvgPool1d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(F.adaptive_avg_pool1d)


class AdaptiveAvgPool2d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(F.adaptive_avg_pool2d)


class AdaptiveAvgPool3d(_AdaptiveAvgPoolNd):
    _fn = staticmethod(F.adaptive_avg_pool3d)


class _AdaptiveMaxPool(_AdaptivePool):
    __constants__ = ["output_size", "return_indices"]

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, input: Tensor):
        return type(self)._fn(input, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    _fn = staticmethod(F.adaptive_max_pool1d)


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    _fn = staticmethod(F.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    _fn = staticmethod(F.adaptive_max_pool3d)


_AdaptiveMaxPoolNd = _AdaptiveMaxPool  # PyTorch's name for the adaptive max pools' base
