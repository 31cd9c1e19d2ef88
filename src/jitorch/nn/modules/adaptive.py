"""`AdaptiveLogSoftmaxWithLoss` (Grave et al.'s adaptive softmax), as PyTorch's module.

A head `Linear` scores the shortlist (the most frequent classes) and one logit per tail
cluster; each cluster's classes are scored by a two-layer low-rank projection. The log
probability of a tail class is its cluster's head log-probability plus its log-probability
within the cluster. Written with jitorch ops only (autograd follows).
"""
from __future__ import annotations

from collections import namedtuple

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor
from .. import functional as F
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """forward(input, target) -> (output: target log-probabilities, loss: their mean NLL)."""

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             "n_classes-1")
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        targ_dim = target_.dim()
        if targ_dim == 1:
            if input_.size(0) != target_.size(0):
                raise RuntimeError("Input and target should have the same size in the batch "
                                   "dimension.")
            if input_.dim() != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        elif targ_dim == 0:
            if input_.dim() != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found "
                                   f"inputs with size {input_.size()}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = targ_dim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        n = target.size(0)
        output = input.new_zeros(n)
        gather_inds = target.clone()  # head column per row: the class or its cluster's logit
        used = 0
        bounds = [0] + self.cutoffs
        for i in range(len(bounds) - 1):
            lo, hi = bounds[i], bounds[i + 1]
            mask = (target >= lo) & (target < hi)
            rows = mask.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            if i > 0:
                rel = target[mask] - lo
                logp = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
                gather_inds = gather_inds.index_fill(0, rows, self.shortlist_size + i - 1)
                output = output.index_copy(0, rows, logp.gather(1, rel.unsqueeze(1)).squeeze(1))
            used += rows.numel()
        if used != n:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{target.min().item()}, "
                               f"{target.max().item()}] were found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, gather_inds.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob
                         + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return _jt.cat(parts, dim=1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class, (N, n_classes) or (n_classes,)."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class per row (the full distribution only where the head's best
        logit is a cluster)."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        head_output = self.head(x)
        output = _jt.argmax(head_output, dim=1)
        tail = output >= self.shortlist_size
        if bool(tail.any()):
            rows = tail.nonzero().reshape(-1)
            best = _jt.argmax(self._get_full_log_prob(x.index_select(0, rows),
                                                      head_output.index_select(0, rows)), dim=1)
            output = output.index_copy(0, rows, best)
        return output if batched else output.squeeze(0)

    def extra_repr(self) -> str:
        return ""
