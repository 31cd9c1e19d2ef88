"""Loss functions of `jitorch.nn.functional`: mse, l1, smooth_l1, huber, nll, cross_entropy
(class indices with weight / ignore_index / label_smoothing, or class probabilities), binary
cross entropy (with and without logits, pos_weight), kl_div, cosine_embedding and margin_ranking.

Each is a composite of registry ops (as PyTorch's decompositions write them), so gradients,
forward AD and the compiler come from the primitives; the numerically delicate parts use stable
primitives: cross_entropy goes through the max-shifted log_softmax, the logits BCE through
logsigmoid, BCE clamps its logs at -100 like PyTorch. `reduction` is 'mean' | 'sum' | 'none'
(plus the legacy `size_average` / `reduce` flags); errors use PyTorch's types and messages.
"""
from __future__ import annotations

import warnings

import numpy as np
from typing import Optional

from .. import _dtype as dt
from .._creation import arange
from .._tensor import Tensor
from . import infer
from .composite import composite, expose
from .nn_activation import _max_shift, log_softmax, logsigmoid
from .registry import FAST_TYPES, _mode_state, _modes_on, _pt_name, defop
from ..autograd.graph import plain_grad
from .batching import CLASS_INDEX
from .ternary import where
from .. import _autocast

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__: list = []  # reached through jitorch.nn.functional


def legacy_reduction(size_average, reduce, reduction):
    """PyTorch's `_Reduction.legacy_get_string`: the deprecated flags override `reduction`."""
    if size_average is None and reduce is None:
        return reduction
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='mean' instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _check_reduction(reduction):
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _reduce(loss, reduction):
    # (eager only: the composites' bodies write this tail out, because a plain function called
    # from a body is a Python op there, which the compiler does not differentiate)
    _check_reduction(reduction)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _check_tensor(fn, name, x, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _pointwise(fn, input, target, reduction, weight=None):
    _check_tensor(fn, "input", input, 1)
    _check_tensor(fn, "target", target, 2)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due "
                      f"to broadcasting. Please ensure they have the same size.", UserWarning,
                      stacklevel=3)


def _weighted(loss, weight, reduction):
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


# --- regression losses (one body each: _ops/composite) -------------------------------------------
@composite(static=("reduction",))
def _mse_loss(reduction):
    _check_reduction(reduction)

    def body(input, target, weight: Optional[Tensor] = None):
        d = input - target
        loss = d * d
        if weight is not None:
            loss = loss * weight
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@composite(static=("reduction",))
def _l1_loss(reduction):
    _check_reduction(reduction)

    def body(input, target, weight: Optional[Tensor] = None):
        loss = (input - target).abs()
        if weight is not None:
            loss = loss * weight
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@composite(static=("reduction", "beta"))
def _smooth_l1_loss(reduction, beta):
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")

    def body(input, target):
        d = (input - target).abs()
        loss = d
        if beta != 0:
            loss = where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta)
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@composite(static=("reduction", "delta"))
def _huber_loss(reduction, delta):
    _check_reduction(reduction)
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")

    def body(input, target, weight: Optional[Tensor] = None):
        d = (input - target).abs()
        loss = where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
        if weight is not None:
            loss = loss * weight
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@_autocast.policy("fp32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _pointwise("mse_loss", input, target, reduction)
    return _mse_loss.body(reduction)(input, target, weight)


@_autocast.policy("fp32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _pointwise("l1_loss", input, target, reduction)
    return _l1_loss.body(reduction)(input, target, weight)


@_autocast.policy("fp32")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    reduction = legacy_reduction(size_average, reduce, reduction)
    _pointwise("smooth_l1_loss", input, target, reduction)
    return _smooth_l1_loss.body(reduction, beta)(input, target)


@_autocast.policy("fp32")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    _pointwise("huber_loss", input, target, reduction)
    return _huber_loss.body(reduction, delta)(input, target, weight)


# --- classification losses ---------------------------------------------------------------------
def _check_class_target(input, target):
    if target.dtype is not dt.int64 and target.dtype is not dt.uint8:
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got "
                           f"{_pt_name(target.dtype)}")
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    batch_in = input.shape[0] if input.ndim > 1 else None
    batch_t = target.shape[0] if target.ndim else None
    if input.ndim > 1 and batch_in != batch_t:
        raise ValueError(f"Expected input batch_size ({batch_in}) to match target batch_size "
                         f"({batch_t}).")
    want = tuple(input.shape[:1]) + tuple(input.shape[2:]) if input.ndim > 1 else ()
    if tuple(target.shape) != want:
        raise RuntimeError(f"Expected target size {list(want)}, got {list(target.shape)}")


_FLOAT_TARGET = ("cross_entropy with class-probability (floating point) targets inside "
                 "scripted code is not supported yet: call it outside the scripted function, "
                 "or pass class indices")


def _class_index_impl(input, target, weight, ignore_index, loss):
    """The class-index target of `loss` ('nll_loss' or 'cross_entropy': their bodies), checked
    as PyTorch checks it, in its order: dtype and shape against `input`, `weight`'s size, then
    every target not equal to `ignore_index` in
    [0, C) ("Target N is out of bounds.", the first bad one). Returns a copy of `target`
    (compiled code returns the array itself: the bodies only read it)."""
    c = input.shape[1 if input.ndim > 1 else 0] if input.ndim else 0
    if loss == "cross_entropy":
        _check_weight_arr(weight, c)
        if target.dtype.kind == "f" and target.shape == input.shape:
            raise NotImplementedError(_FLOAT_TARGET)
    _check_class_target(Tensor._make(input), Tensor._make(target))
    if loss != "cross_entropy":
        _check_weight_arr(weight, c)
    bad = (target != ignore_index) & ((target < 0) | (target >= c))
    if bad.any():
        raise IndexError(f"Target {int(target[bad].reshape(-1)[0])} is out of bounds.")
    return target.copy()


def _check_weight_arr(weight, c):
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != c):
        raise RuntimeError(f"weight tensor should be defined either for all {c} classes or no "
                           f"classes but got weight tensor of shape: {list(weight.shape)}")


def _class_target(a):
    """The type of a class-index target: int64 or uint8, as eager requires; other dtypes stay
    unknown, so the interpreter raises eager's error."""
    t = a.tensor(1)
    if t.dtype not in (dt.int64, dt.uint8):
        raise infer.Unknown("not a class-index dtype")
    return t


# lowered with its checks by targets/cpu/lower_gather.py
_class_index = defop("_class_index", _class_index_impl,
                     tensors=("input", "target", "weight"), kind="index", nondiff=True,
                     method=False, function=False, infer=_class_target,
                     batch=CLASS_INDEX)


def _class_dim(input):
    return 1 if input.ndim > 1 else 0


@composite(static=("ignore_index", "reduction"))
def _nll_loss(ignore_index, reduction):
    _check_reduction(reduction)

    def body(input, target, weight: Optional[Tensor] = None):
        nd = input.dim()
        n = input.size(0) if nd > 1 else 1
        c = input.size(1) if nd > 1 else input.size(0)
        m = 1  # the dims after the class dim: reshape cannot infer a -1 for an empty batch
        for d in range(2, nd):
            m = m * input.size(d)
        # eager's target checks (out-of-range targets raise), then the classes as a mask;
        # (n, m, C) with the classes last: rows for the compiler, and NumPy's inner loops are
        # the classes, not a dim of size 1
        t = _class_index(input, target, weight, ignore_index, "nll_loss").reshape([n, m])
        mask = t != ignore_index
        safe = where(mask, t, 0)
        x = input.reshape([n, c, m]).transpose(1, 2)
        loss = -where(safe.unsqueeze(2) == arange(c, device=x.device), x, 0.0).sum(-1)
        w = mask.to(input.dtype)
        if weight is not None:
            w = w * weight[safe]
        loss = loss * w
        if reduction == "none":
            return loss.reshape_as(target)
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / w.sum()
    return body


@composite(static=("ignore_index", "reduction", "label_smoothing"))
def _cross_entropy(ignore_index, reduction, label_smoothing):
    """Class-index targets (class probabilities: eager's `_cross_entropy_probs`)."""
    _check_reduction(reduction)
    ls = float(label_smoothing)
    if not 0.0 <= ls <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {ls:g}")

    def body(input, target, weight: Optional[Tensor] = None):
        nd = input.dim()
        n = input.size(0) if nd > 1 else 1
        c = input.size(1) if nd > 1 else input.size(0)
        m = 1  # the dims after the class dim: reshape cannot infer a -1 for an empty batch
        for d in range(2, nd):
            m = m * input.size(d)
        # (n, m, C): the classes last (rows); an (n, C) input stays 2-d (the rank is static
        # in a compiled program, where rank-2 kernels compile cheaper than rank-3 ones)
        rows = [n] if nd == 2 else [n, m]
        x = input if nd == 2 else input.reshape([n, c, m]).transpose(1, 2)
        s = x - _max_shift(x, -1, True)
        logp = s - s.exp().sum(-1, True).log()
        # eager's target checks (out-of-range targets raise), then the classes as a mask
        t = _class_index(input, target, weight, ignore_index, "cross_entropy").reshape(rows)
        mask = t != ignore_index
        safe = where(mask, t, 0)
        loss = -where(safe.unsqueeze(-1) == arange(c, device=logp.device), logp, 0.0).sum(-1)
        w = mask.to(logp.dtype)
        if weight is not None:
            w = w * weight[safe]
        loss = loss * w
        if ls > 0:
            lp = logp
            if weight is not None:
                lp = logp * weight
            smooth = where(mask, -lp.sum(-1), 0.0)
            loss = loss * (1 - ls) + smooth * (ls / c)
        if reduction == "none":
            return loss.reshape_as(target)
        if reduction == "sum":
            return loss.sum()
        return loss.sum() / w.sum()
    return body


# Eager nll_loss as one op: the composite records ~15 ops (~130 us per call on a 1x18 input,
# PyTorch ~5). The common eager call (a float32/float64 input of rank 1 or 2 with elements, an
# int64 target, a weight of the input's dtype that needs no gradient or none, no dispatch mode
# such as a tracer or vmap) runs `_nll_loss_fused`: the composite's checks (`_class_index`) and
# arithmetic in NumPy, one autograd node. Scripted and traced code keep the composite.
def _nll_loss_fused_impl(input, target, weight, ignore_index, reduction):
    t = _class_index_impl(input, target, weight, ignore_index, "nll_loss").reshape(-1)
    mask = t != ignore_index
    safe = np.where(mask, t, 0)
    picked = input.reshape(t.shape[0], -1)[np.arange(t.shape[0]), safe]
    w = mask.astype(input.dtype)
    if weight is not None:
        w = w * weight[safe]
    loss = -picked * w
    if reduction == "none":
        return loss.reshape(target.shape)
    if reduction == "sum":
        return np.asarray(np.add.reduce(loss))
    return np.asarray(np.add.reduce(loss) / np.add.reduce(w))


def _nll_loss_fused_vjp(g, input, target, weight, ignore_index, reduction):
    if plain_grad(g) and all(type(x) in FAST_TYPES and x._device is Tensor._device
                             for x in (input, target, weight) if x is not None):
        # a first-order backward on the CPU: the rule's arithmetic below in NumPy (the same
        # operations) rather than ~12 ops; a graph (create_graph) or tangents take the ops
        return Tensor._make(_nll_loss_grad(g._data, input._data, target._data,
                                           None if weight is None else weight._data,
                                           ignore_index, reduction), input._dtype), None, None
    t = target.reshape(-1)
    mask = t != ignore_index
    safe = where(mask, t, 0)
    w = mask.to(input.dtype)
    if weight is not None:
        w = w * weight[safe]
    gl = g.reshape(-1) if reduction == "none" else g if reduction == "sum" else g / w.sum()
    hit = safe.unsqueeze(1) == arange(input.shape[-1], device=g.device)
    return where(hit, (-(w * gl)).unsqueeze(1), 0.0).reshape(input.shape), None, None


def _nll_loss_grad(g, input, target, weight, ignore_index, reduction):
    """`_nll_loss_fused_vjp`'s input gradient on arrays, operation for operation."""
    t = target.reshape(-1)
    mask = t != ignore_index
    safe = np.where(mask, t, 0)
    w = mask.astype(input.dtype)
    if weight is not None:
        w = w * weight[safe]
    gl = g.reshape(-1) if reduction == "none" else g if reduction == "sum" else \
        np.true_divide(g, np.add.reduce(w))
    hit = safe[:, None] == np.arange(input.shape[-1])
    return np.where(hit, np.negative(w * gl)[:, None], 0.0).reshape(input.shape)


def _nll_loss_fused_jvp(t_input, target, weight, ignore_index, reduction):
    # the loss is linear in the input: its tangent is the loss of the input's tangent
    return _nll_loss.body(ignore_index, reduction)(t_input, target, weight)


_nll_loss_fused = defop("_nll_loss_fused", _nll_loss_fused_impl,
                        tensors=("input", "target", "weight"), vjp=_nll_loss_fused_vjp,
                        jvp=_nll_loss_fused_jvp, method=False, function=False,
                        interpreted="eager form of nll_loss; scripted code inlines the composite")
_FUSED_DTYPES = (dt.float32, dt.float64)


def _nll_fusable(input, target, weight, ignore_index) -> bool:
    """Whether an eager nll_loss (or cross_entropy's nll part) is the common call above."""
    return (type(input) in FAST_TYPES and type(target) in FAST_TYPES
            and (not _modes_on[0] or not _mode_state.stack)  # (the count: no thread-local read)
            and input._dtype in _FUSED_DTYPES and target._dtype is dt.int64
            and 1 <= input._data.ndim <= 2 and input._data.size > 0
            and type(ignore_index) is int
            and (weight is None or type(weight) in FAST_TYPES and weight._dtype is input._dtype
                 and not weight._requires_grad))


@_autocast.policy("fp32")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[n, target[n]] * weight[target[n]], ignoring `ignore_index`; 'mean' divides by
    the summed weights of the counted targets."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_tensor("nll_loss", "input", input, 1)
    _check_reduction(reduction)
    if _nll_fusable(input, target, weight, ignore_index):
        return _nll_loss_fused(input, target, weight, ignore_index, reduction)
    return _nll_loss.body(ignore_index, reduction)(input, target, weight)


@_autocast.policy("fp32")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """log_softmax over the class dim, then nll_loss (class indices) or -sum(p * log q)
    (class probabilities, a float target of the input's shape)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_tensor("cross_entropy", "input", input, 1)
    _check_tensor("cross_entropy", "target", target, 2)
    _check_reduction(reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing:g}")
    cd = _class_dim(input)
    c = input.shape[cd] if input.ndim else 0
    _check_weight_arr(weight, c)
    if target.dtype.is_floating_point and tuple(target.shape) == tuple(input.shape):
        return _cross_entropy_probs(input, target, weight, ignore_index, reduction,
                                    label_smoothing, cd, c)
    if label_smoothing == 0 and _nll_fusable(input, target, weight, ignore_index):
        # the composite's arithmetic as two eager ops (log_softmax's, then nll_loss's)
        return _nll_loss_fused(log_softmax(input, cd), target, weight, ignore_index, reduction)
    return _cross_entropy.body(ignore_index, reduction, label_smoothing)(input, target, weight)


expose(_mse_loss, mse_loss)
expose(_l1_loss, l1_loss)
expose(_smooth_l1_loss, smooth_l1_loss)
expose(_huber_loss, huber_loss)
expose(_nll_loss, nll_loss)
expose(_cross_entropy, cross_entropy)


def _wshape(input):
    return (1, -1) + (1,) * (input.ndim - 2) if input.ndim > 1 else (-1,)


def _cross_entropy_probs(input, target, weight, ignore_index, reduction, ls, cd, c):
    if ignore_index != -100:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if ls > 0:
        target = target * (1 - ls) + ls / c
    lp = log_softmax(input, cd)
    if weight is not None:
        lp = lp * weight.reshape(_wshape(input))
    loss = -(lp * target).sum(cd)
    if reduction == "mean":
        n = input.numel() // max(c, 1)
        return loss.sum() / n
    return _reduce(loss, reduction)


def _check_same_size(fn, input, target):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         f"size.")


def _unit_interval_impl(input):
    if input.size and ((input < 0) | (input > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    return input


# identity that checks BCE's input range eagerly and in the interpreter; its scalar template
# (identity) lets the compiler fuse it, so compiled code does not check (values outside [0, 1]
# then give nan, as the formula does)
_unit_interval = defop("_unit_interval", _unit_interval_impl, kind="elementwise", method=False,
                       vjp=lambda g: g, jvp=lambda t_input: t_input, scalar="{input}")


@_autocast.policy({"cpu": "fp32", "cuda": "banned"})
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-(t log x + (1 - t) log(1 - x)), the logs clamped at -100 as in PyTorch."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_tensor("binary_cross_entropy", "input", input, 1)
    _check_reduction(reduction)
    _check_same_size("binary_cross_entropy", input, target)
    input = _unit_interval(input)
    loss = -(target * input.log().clamp_min(-100) + (1 - target) * (1 - input).log()
             .clamp_min(-100))
    return _weighted(loss, weight, reduction)


@composite(static=("reduction",))
def _binary_cross_entropy_with_logits(reduction):
    _check_reduction(reduction)

    def body(input, target, weight: Optional[Tensor] = None,
             pos_weight: Optional[Tensor] = None):
        ls = logsigmoid(input)
        if pos_weight is not None:
            loss = (1 - target) * input - (1 + (pos_weight - 1) * target) * ls
        else:
            loss = (1 - target) * input - ls
        if weight is not None:
            loss = loss * weight
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@_autocast.policy("fp32")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """(1 - t) x - (1 + (pos_weight - 1) t) logsigmoid(x): stable for any logit."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_tensor("binary_cross_entropy_with_logits", "input", input, 1)
    _check_reduction(reduction)
    _check_same_size("binary_cross_entropy_with_logits", input, target)
    return _binary_cross_entropy_with_logits.body(reduction)(input, target, weight, pos_weight)


expose(_binary_cross_entropy_with_logits, binary_cross_entropy_with_logits)


def _kl_div_mean(reduction, log_target):
    if reduction == "mean":
        return "reduction='mean' warns at every call (eager)"
    return None


@composite(static=("reduction", "log_target"), script_unsupported=_kl_div_mean)
def _kl_div(reduction, log_target):
    if reduction != "batchmean":
        _check_reduction(reduction)

    def body(input, target):
        if log_target:
            loss = target.exp() * (target - input)
        else:
            loss = target.xlogy(target) - target * input
        if reduction == "batchmean":
            return loss.sum() / (input.size(0) if input.dim() > 0 else 1)
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@_autocast.policy("fp32")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target * (log target - input) pointwise ('batchmean': the sum over the batch size)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    _check_tensor("kl_div", "input", input, 1)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", UserWarning, stacklevel=2)
    return _kl_div.body(reduction, log_target)(input, target)


expose(_kl_div, kl_div)


# --- embedding / ranking losses ----------------------------------------------------------------
@composite(static=("margin", "reduction"))
def _cosine_embedding_loss(margin, reduction):
    _check_reduction(reduction)

    def body(input1, input2, target):
        nd = input1.dim()
        if nd != input2.dim() or nd != 1 and nd != 2 or target.dim() != nd - 1:
            raise RuntimeError(f"cosine_embedding_loss : All input tensors should have same "
                               f"dimension but got sizes: input1: {input1.shape}, input2: "
                               f"{input2.shape}, target: {target.shape} ")
        eps = 1e-12
        prod = (input1 * input2).sum(-1)
        mag1 = (input1 * input1).sum(-1) + eps
        mag2 = (input2 * input2).sum(-1) + eps
        cos = prod / (mag1 * mag2).sqrt()
        zeros = cos * 0
        pos = where(target == 1, 1 - cos, zeros)
        neg = where(target == -1, (cos - margin).clamp_min(0), zeros)
        loss = pos + neg
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@_autocast.policy("fp32")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _cosine_embedding_loss.body(margin, reduction)(input1, input2, target)


expose(_cosine_embedding_loss, cosine_embedding_loss)


@composite(static=("margin", "reduction"))
def _margin_ranking_loss(margin, reduction):
    _check_reduction(reduction)

    def body(input1, input2, target):
        if not (input1.dim() == input2.dim() and input2.dim() == target.dim()):
            raise RuntimeError(f"margin_ranking_loss : All input tensors should have same "
                               f"dimension but got sizes: input1: {input1.shape}, input2: "
                               f"{input2.shape}, target: {target.shape} ")
        loss = (-target * (input1 - input2) + margin).clamp_min(0)
        if reduction == "mean":
            return loss.mean()
        if reduction == "sum":
            return loss.sum()
        return loss
    return body


@_autocast.policy("fp32")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (x1 - x2) + margin)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    return _margin_ranking_loss.body(margin, reduction)(input1, input2, target)


expose(_margin_ranking_loss, margin_ranking_loss)
