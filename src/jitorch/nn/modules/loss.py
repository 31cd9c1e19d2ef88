"""Loss modules (`MSELoss` ... `MarginRankingLoss`): PyTorch's arguments, buffers and reduction.

Each forwards to the `jitorch.nn.functional` loss of the same name; an eager call of the losses
whose composite compiles runs that call compiled where eligible (`_eager_compiled.functional`;
the input shapes all equal, else eager's warning and broadcast). Like PyTorch, class weights
(`weight`, `pos_weight`) are buffers, so they follow `.to()` / `.double()` and, when given,
appear in `state_dict`; the legacy `size_average` / `reduce` flags map to `reduction` with
PyTorch's deprecation warning.
"""
from __future__ import annotations

import warnings

from ..._tensor import Tensor
from .. import functional as F
from ...script.frontend.lang import is_scripting
from . import _eager_compiled
from .module import Module

_IT = ("input", "target")  # the functional parameters of the tensors ...
_PAIR = ("input1", "input2", "target")
_R = ("reduction",)  # ... and of the configuration, of the compiled calls below

__all__ = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "CosineEmbeddingLoss",
           "MarginRankingLoss", "TripletMarginLoss", "HingeEmbeddingLoss", "SoftMarginLoss",
           "PoissonNLLLoss", "GaussianNLLLoss", "MultiLabelSoftMarginLoss"]
__all__ += ["CTCLoss"]  # issue 19


def _legacy_get_string(size_average, reduce, emit_warning: bool = True) -> str:
    """PyTorch's `_Reduction.legacy_get_string`."""
    if size_average is None:
        size_average = True
    if reduce is None:
        reduce = True
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    if emit_warning:
        warnings.warn(f"size_average and reduce args will be deprecated, please use "
                      f"reduction='{ret}' instead.", stacklevel=3)
    return ret


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            self.reduction = _legacy_get_string(size_average, reduce)
        else:
            self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    __constants__ = ["reduction"]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "l1_loss", _IT, (input, target),
                _R, (self.reduction,), 2)
            if res is not None:
                return res
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    __constants__ = ["reduction"]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "mse_loss", _IT, (input, target),
                _R, (self.reduction,), 2)
            if res is not None:
                return res
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "smooth_l1_loss", _IT, (input, target),
                ("reduction", "beta"), (self.reduction, self.beta), 2)
            if res is not None:
                return res
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    __constants__ = ["reduction", "delta"]

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "huber_loss", _IT, (input, target),
                ("reduction", "delta"), (self.reduction, self.delta), 2)
            if res is not None:
                return res
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    __constants__ = ["ignore_index", "reduction"]

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    __constants__ = ["ignore_index", "reduction", "label_smoothing"]

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    __constants__ = ["reduction"]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean", pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)
        self.weight: Tensor | None
        self.pos_weight: Tensor | None

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "binary_cross_entropy_with_logits", _IT + ("weight", "pos_weight"),
                (input, target, self.weight, self.pos_weight),
                _R, (self.reduction,), 2)
            if res is not None:
                return res
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    __constants__ = ["reduction"]

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = None
            if self.reduction != "mean":  # (eager warns at every call)
                res = _eager_compiled.functional(
                    self, "kl_div", _IT, (input, target),
                    ("reduction", "log_target"), (self.reduction, self.log_target), 2)
            if res is not None:
                return res
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineEmbeddingLoss(_Loss):
    __constants__ = ["margin", "reduction"]

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "cosine_embedding_loss", _PAIR, (input1, input2, target),
                ("margin", "reduction"), (self.margin, self.reduction), 2)
            if res is not None:
                return res
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class MarginRankingLoss(_Loss):
    __constants__ = ["margin", "reduction"]

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "margin_ranking_loss", _PAIR, (input1, input2, target),
                ("margin", "reduction"), (self.margin, self.reduction), 3)
            if res is not None:
                return res
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class TripletMarginLoss(_Loss):
    __constants__ = ["margin", "p", "eps", "swap", "reduction"]

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class HingeEmbeddingLoss(_Loss):
    __constants__ = ["margin", "reduction"]

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "hinge_embedding_loss", _IT, (input, target),
                ("margin", "reduction"), (self.margin, self.reduction), 2)
            if res is not None:
                return res
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class SoftMarginLoss(_Loss):
    __constants__ = ["reduction"]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "soft_margin_loss", _IT, (input, target),
                _R, (self.reduction,), 2)
            if res is not None:
                return res
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    __constants__ = ["log_input", "full", "eps", "reduction"]

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "poisson_nll_loss", _IT, (log_input, target),
                ("log_input", "full", "eps", "reduction"),
                (self.log_input, self.full, self.eps, self.reduction), 2)
            if res is not None:
                return res
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    __constants__ = ["full", "eps", "reduction"]

    def __init__(self, *, full: bool = False, eps: float = 1e-6,
                 reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    __constants__ = ["reduction"]

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        if not is_scripting():  # an eager call: its compiled function where eligible
            res = _eager_compiled.functional(
                self, "multilabel_soft_margin_loss", _IT + ("weight",),
                (input, target, self.weight),
                _R, (self.reduction,), 2)
            if res is not None:
                return res
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class CTCLoss(_Loss):
    """The connectionist temporal classification loss (`F.ctc_loss`)."""
    __constants__ = ["blank", "reduction"]

    def __init__(self, blank: int = 0, reduction: str = "mean",
                 zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths,
                target_lengths) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                          self.reduction, self.zero_infinity)
