"""The connectionist temporal classification loss: `ctc_loss` (torch.ctc_loss, F.ctc_loss).

NumPy kernels, vectorised over the batch and the extended label sequence (blank, l1, blank,
l2, ..., blank): the forward (alpha) and backward (beta) recursions in log space, one Python
step per time step. The VJP is PyTorch's: d/d log_probs[t, c] =
exp(log_probs[t, c]) - exp(log sum_{s: l'_s = c} alpha_t(s) beta_t(s) + nll - log_probs[t, c]),
which is the loss's gradient with respect to the *logits* when log_probs = log_softmax(logits)
(the extra exp(log_probs) term vanishes through log_softmax's backward); so a leaf
`log_probs.grad` reads as PyTorch's. The backward op is not differentiable again, as PyTorch's.
"""
from __future__ import annotations

import numpy as np

from .registry import defop
from .batching import LOOP

_WHY = "dynamic-programming recursion over time steps: runs in NumPy"

__all__ = ["ctc_loss"]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum", "none": "none", "mean": "mean", "sum": "sum"}


def _lengths(v, name):
    """A 1-D int tensor, list or tuple of lengths -> tuple of ints."""
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, (int, np.integer)):
        v = [v]
    return tuple(int(x) for x in v)


def _setup(log_probs, targets, input_lengths, target_lengths, blank, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"ctc_loss(): Expected a 2-D (unbatched) or 3-D (batched) "
                           f"log_probs tensor, but got {log_probs.ndim}-D")
    if targets.dtype.kind not in "iu":
        raise RuntimeError("ctc_loss(): targets must be an integer tensor")
    unbatched = log_probs.ndim == 2
    lp = log_probs[:, None] if unbatched else log_probs
    t_max, n, c = lp.shape
    in_len = _lengths(input_lengths, "input_lengths")
    tg_len = _lengths(target_lengths, "target_lengths")
    if len(in_len) != n:
        raise RuntimeError(f"input_lengths must be of size batch_size, but got "
                           f"{len(in_len)} and {n}")
    if len(tg_len) != n:
        raise RuntimeError(f"target_lengths must be of size batch_size, but got "
                           f"{len(tg_len)} and {n}")
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    for i, t in enumerate(in_len):
        if t > t_max or t < 0:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got "
                               f"value {t} (while checking arguments for ctc_loss_cpu)")
    tg = targets[None] if unbatched and targets.ndim == 1 else targets
    labels = []
    if tg.ndim == 1:  # concatenated targets
        off = np.concatenate([[0], np.cumsum(tg_len)])
        labels = [tg[off[i]:off[i + 1]] for i in range(n)]
    else:
        for i in range(n):
            if tg_len[i] > tg.shape[1]:
                raise RuntimeError(f"Expected tensor to have size at least {tg_len[i]} at "
                                   f"dimension 1, but got size {tg.shape[1]} for argument "
                                   f"#2 'targets' (while checking arguments for ctc_loss_cpu)")
            labels.append(tg[i, :tg_len[i]])
    return unbatched, lp, in_len, tg_len, labels


def _lse(*xs):
    m = np.maximum.reduce(xs)
    safe = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return safe + np.log(sum(np.exp(x - safe) for x in xs))


def _recursions(lp, in_len, labels, blank, need_beta):
    """(alpha, beta or None, ext labels, nll per sample) in float64."""
    t_max, n, _ = lp.shape
    s_max = 2 * max((len(lab) for lab in labels), default=0) + 1
    ext = np.full((n, s_max), blank, np.int64)
    for i, lab in enumerate(labels):
        ext[i, 1:2 * len(lab) + 1:2] = lab
    s_len = np.array([2 * len(lab) + 1 for lab in labels])
    skip = np.zeros((n, s_max), bool)
    skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2])
    y = np.take_along_axis(lp.astype(np.float64), np.broadcast_to(ext[None], (t_max, n, s_max)),
                           axis=2)
    neg = np.full((n, 1), -np.inf)
    alpha = np.full((t_max, n, s_max), -np.inf)
    if t_max:
        alpha[0, :, 0] = y[0, :, 0]
        if s_max > 1:
            alpha[0, :, 1] = np.where(s_len > 1, y[0, :, 1], -np.inf)
    for t in range(1, t_max):
        a = alpha[t - 1]
        a1 = np.concatenate([neg, a[:, :-1]], 1)
        a2 = np.where(skip, np.concatenate([neg, neg, a[:, :-2]], 1)[:, :s_max], -np.inf)
        alpha[t] = _lse(a, a1, a2) + y[t]
    rows = np.arange(n)
    last = np.array(in_len) - 1
    end = alpha[np.maximum(last, 0), rows, s_len - 1]
    end2 = np.where(s_len > 1, alpha[np.maximum(last, 0), rows, np.maximum(s_len - 2, 0)],
                    -np.inf)
    nll = -_lse(end, end2)
    nll = np.where(last < 0, np.where(s_len == 1, 0.0, np.inf), nll)
    beta = None
    if need_beta:
        beta = np.full((t_max, n, s_max), -np.inf)
        s_idx = np.arange(s_max)[None]
        init = (s_idx == (s_len - 1)[:, None]) | ((s_idx == (s_len - 2)[:, None])
                                                  & (s_len > 1)[:, None])
        nxt = np.full((n, s_max), -np.inf)
        for t in range(t_max - 1, -1, -1):
            b1 = np.concatenate([nxt[:, 1:], neg], 1)
            b2 = np.where(np.concatenate([skip[:, 2:], np.zeros((n, 2), bool)], 1)[:, :s_max],
                          np.concatenate([nxt[:, 2:], neg, neg], 1)[:, :s_max], -np.inf)
            rec = _lse(nxt, b1, b2) + y[t]
            at_end = (t == last)[:, None]
            cur = np.where(at_end, np.where(init, y[t], -np.inf),
                           np.where((t < last)[:, None], rec, -np.inf))
            beta[t] = cur
            nxt = cur
    return alpha, beta, ext, nll


def _reduce_losses(nll, tg_len, reduction):
    red = _REDUCTIONS[reduction]
    if red == "mean":
        return (nll / np.maximum(np.array(tg_len, np.float64), 1)).mean()
    if red == "sum":
        return nll.sum()
    return nll


def _ctc_impl(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
              zero_infinity=False):
    """CTC loss of (T, N, C) (or unbatched (T, C)) log-probabilities against padded (N, S) or
    concatenated targets; reduction 'none' | 'mean' (per-target-length mean) | 'sum'."""
    unbatched, lp, in_len, tg_len, labels = _setup(log_probs, targets, input_lengths,
                                                   target_lengths, blank, reduction)
    _, _, _, nll = _recursions(lp, in_len, labels, blank, need_beta=False)
    if zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    res = _reduce_losses(nll, tg_len, reduction)
    if unbatched and _REDUCTIONS[reduction] == "none":
        res = res[0]
    return np.asarray(res, dtype=log_probs.dtype)


def _ctc_backward_impl(grad, log_probs, targets, input_lengths, target_lengths, blank,
                       reduction, zero_infinity):
    unbatched, lp, in_len, tg_len, labels = _setup(log_probs, targets, input_lengths,
                                                   target_lengths, blank, reduction)
    t_max, n, c = lp.shape
    alpha, beta, ext, nll = _recursions(lp, in_len, labels, blank, need_beta=True)
    red = _REDUCTIONS[reduction]
    g = np.broadcast_to(np.asarray(grad, np.float64), (n,) if red == "none" else ())
    if red == "mean":
        g = g / np.maximum(np.array(tg_len, np.float64), 1) / n
    g = np.broadcast_to(g, (n,))
    ab = alpha + beta
    m = np.max(ab, axis=2, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    acc = np.zeros((t_max, n, c))
    idx = np.broadcast_to(ext[None], ab.shape)
    np.add.at(acc, (np.arange(t_max)[:, None, None], np.arange(n)[None, :, None], idx),
              np.exp(ab - m))
    with np.errstate(divide="ignore"):
        lcab = np.log(acc) + m
    lp64 = lp.astype(np.float64)
    res = (np.exp(lp64) - np.exp(lcab + nll[None, :, None] - lp64)) * g[None, :, None]
    live = np.arange(t_max)[:, None] < np.array(in_len)[None, :]
    res = np.where(live[:, :, None], res, 0.0)
    if zero_infinity:
        res = np.where(np.isinf(nll)[None, :, None], 0.0, res)
    res = res.astype(log_probs.dtype)
    return res[:, 0] if unbatched else res


def _ctc_backward_vjp(gg):
    raise NotImplementedError("the derivative of ctc_loss_backward is not implemented (as in "
                              "PyTorch: ctc_loss is differentiable once)")


_ctc_loss_backward = defop(
    "_ctc_loss_backward", _ctc_backward_impl, tensors=("grad", "log_probs", "targets"),
    kind="other", method=False, vjp=_ctc_backward_vjp, interpreted=_WHY, batch=LOOP)


def _ctc_vjp(g, log_probs, targets, input_lengths, target_lengths, blank, reduction,
             zero_infinity):
    return (_ctc_loss_backward(g, log_probs, targets, input_lengths, target_lengths, blank,
                               reduction, zero_infinity), None)


_ctc_impl.__name__ = "ctc_loss"
ctc_loss = defop("ctc_loss", _ctc_impl, tensors=("log_probs", "targets"), kind="other",
                 method=False, vjp=_ctc_vjp, interpreted=_WHY, batch=LOOP, autocast="fp32")
