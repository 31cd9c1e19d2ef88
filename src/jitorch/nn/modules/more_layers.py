"""The remaining layers of `torch.nn` that real code uses (issue 19): LocalResponseNorm,
CrossMapLRN2d, RReLU, MaxUnpool1/2/3d, FractionalMaxPool2d/3d, MultiMarginLoss,
MultiLabelMarginLoss, TripletMarginWithDistanceLoss, the deprecated NLLLoss2d and Container. Holders of PyTorch's
hyper-parameters over the functions of `nn/_functional_more.py`.
"""
from __future__ import annotations

import warnings

from ..._tensor import Tensor
from .. import functional as F
from .loss import NLLLoss, _Loss, _WeightedLoss
from .module import Module

__all__ = ["LocalResponseNorm", "CrossMapLRN2d", "RReLU", "MaxUnpool1d", "MaxUnpool2d",
           "MaxUnpool3d", "MultiMarginLoss", "MultiLabelMarginLoss",
           "TripletMarginWithDistanceLoss", "NLLLoss2d", "Container", "FractionalMaxPool2d",
           "FractionalMaxPool3d", "factory_kwargs"]


class LocalResponseNorm(Module):
    __constants__ = ["size", "alpha", "beta", "k"]

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75,
                 k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """LRN across the channels of 4-D input (the Lua-torch layer's name)."""

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D "
                             f"instead.")
        return super().forward(input)


class RReLU(Module):
    __constants__ = ["lower", "upper", "inplace"]

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
                 inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace
                                                            else "")


class _MaxUnpoolNd(Module):
    __constants__ = ["kernel_size", "stride", "padding"]
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    _fn = staticmethod(F.max_unpool3d)


class MultiMarginLoss(_WeightedLoss):
    __constants__ = ["p", "margin", "reduction"]

    def __init__(self, p: int = 1, margin: float = 1.0, weight=None, size_average=None,
                 reduce=None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        if weight is not None and weight.dim() != 1:
            raise ValueError(f"MultiMarginLoss: expected weight to be None or 1D tensor, got "
                             f"{weight.dim()}D instead")
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    __constants__ = ["reduction"]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = distance_function
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """Deprecated: NLLLoss handles (N, C, H, W) input."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:
        warnings.warn("NLLLoss2d has been deprecated. Please use NLLLoss instead as a drop-in "
                      "replacement and see https://pytorch.org/docs/main/nn.html#torch.nn."
                      "NLLLoss for more details.", stacklevel=2)
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class Container(Module):
    """Deprecated: a Module whose keyword arguments become submodules."""

    def __init__(self, **kwargs) -> None:
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now "
                      "implemented in nn.Module. Subclass that instead.", stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)


class _FractionalMaxPoolNd(Module):
    __constants__ = ["kernel_size", "return_indices", "output_size", "output_ratio"]
    _nd = 0
    _fn = None

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None) -> None:
        super().__init__()
        nd, name = self._nd, type(self).__name__
        tup = (lambda v: tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd)
        self.kernel_size = tup(kernel_size)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = tup(output_size) if output_size is not None else None
        self.output_ratio = tup(output_ratio) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a "
                             f"pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                              self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    _nd = 2
    _fn = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    _nd = 3
    _fn = staticmethod(F.fractional_max_pool3d)


def factory_kwargs(kwargs):
    """The device / dtype / memory_format keywords of `kwargs` (and of its `factory_kwargs`
    entry) as one dict for factory functions; unexpected keys are a TypeError (PyTorch's)."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r
