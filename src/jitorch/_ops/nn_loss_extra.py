"""The losses beyond `nn_loss.py`: triplet margin, hinge embedding, soft margin, Poisson NLL,
Gaussian NLL and multilabel soft margin, composites of registry ops with PyTorch's formulas
(aten's composite implementations and `torch.nn.functional`'s Python ones), checks and
`reduction` handling (including the deprecated `size_average` / `reduce`)."""
from __future__ import annotations

import math
from typing import Optional

from .._tensor import Tensor
from .composite import composite, expose
from .nn_activation import logsigmoid
from .nn_loss import _check_reduction, _reduce, legacy_reduction
from .ternary import where
from .. import _autocast

__all__: list = []  # reached through jitorch.nn.functional


@_autocast.policy("fp32")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0), d the pairwise p-distance (with `swap`, d(a, n) is
    min(d(a, n), d(p, n)))."""
    from .nn_distance import pairwise_distance
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: expected margin to be greater than 0, got "
                         f"{margin} instead")
    a, po, n = anchor.ndim, positive.ndim, negative.ndim
    if not (a == po == n):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {a}D, positive {po}D, "
                           f"and negative {n}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


@composite(static=("margin", "reduction"))
def _hinge_embedding_loss(margin, reduction):
    _check_reduction(reduction)

    def body(input, target):
        zeros = input * 0
        margin_part = where(target != 1, (margin - input).clamp_min(0), zeros)
        self_part = where(target != -1, input, zeros)
        loss = margin_part + self_part
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@_autocast.policy("fp32")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """x where target == 1, max(0, margin - x) where target == -1 (both terms elsewhere)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _hinge_embedding_loss.body(margin, reduction)(input, target)


@composite(static=("reduction",))
def _soft_margin_loss(reduction):
    _check_reduction(reduction)

    def body(input, target):
        loss = (-input * target).exp().log1p()
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@_autocast.policy("fp32")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input))."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _soft_margin_loss.body(reduction)(input, target)


@composite(static=("log_input", "full", "eps", "reduction"))
def _poisson_nll_loss(log_input, full, eps, reduction):
    _check_reduction(reduction)

    def body(input, target):
        if log_input:
            loss = input.exp() - target * input
        else:
            loss = input - target * (input + eps).log()
        if full:
            safe = where(target > 1, target, target * 0 + 2)  # no log(0) in the masked-out terms
            stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
            loss = loss + where(target > 1, stirling, stirling * 0)
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@_autocast.policy("fp32")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """exp(x) - t x (log_input) or x - t log(x + eps); `full` adds Stirling's term where t > 1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _poisson_nll_loss.body(log_input, full, eps, reduction)(input, target)


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) when
    `full`); the clamp passes gradients through unchanged, as PyTorch's in-place clamp under
    no_grad does."""
    if not isinstance(var, Tensor):
        from .._creation import full_like
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = full_like(input, float(var))
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)  # homoscedastic: one variance per sample
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError("var is of incorrect size")
    _check_reduction(reduction)
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@composite(static=("reduction",))
def _multilabel_soft_margin_loss(reduction):
    _check_reduction(reduction)

    def body(input, target, weight: Optional[Tensor] = None):
        loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
        if weight is not None:
            loss = loss * weight
        class_dim = input.dim() - 1
        loss = loss.sum(class_dim) / input.size(class_dim)
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-mean over classes of t log sigmoid(x) + (1 - t) log sigmoid(-x) (weighted)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _multilabel_soft_margin_loss.body(reduction)(input, target, weight)


expose(_hinge_embedding_loss, hinge_embedding_loss)
expose(_soft_margin_loss, soft_margin_loss)
expose(_poisson_nll_loss, poisson_nll_loss)
expose(_multilabel_soft_margin_loss, multilabel_soft_margin_loss)
