"""`Embedding` and `EmbeddingBag`: lookup tables with PyTorch's init, checks and printed form.

`Embedding` is `F.embedding` (padding_idx rows get no gradient). `EmbeddingBag` reduces bags of
looked-up rows (sum / mean / max); a 1-D input with `offsets` is turned into a padded
(bags, longest bag) index matrix plus a validity mask, so the whole reduction is ordinary
differentiable tensor ops (gradients reach `weight` and `per_sample_weights`).
"""
from __future__ import annotations

from typing import Optional

import jitorch as _jt  # public ops, looked up at call time (no import cycle)
from ..._tensor import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ...script.frontend.lang import ignore
from ...script.runtime.loadable import loadable
from .module import Module

__all__ = ["Embedding", "EmbeddingBag"]


def _norm_padding_idx(padding_idx, num_embeddings):
    if padding_idx is None:
        return None
    if padding_idx > 0:
        if padding_idx >= num_embeddings:
            raise AssertionError("Padding_idx must be within num_embeddings")
    elif padding_idx < 0:
        if padding_idx < -num_embeddings:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = num_embeddings + padding_idx
    return padding_idx


class _EmbeddingBase(Module):
    def _init_weight(self, num_embeddings, embedding_dim, _weight, _freeze, device, dtype):
        if _weight is None:
            self.weight = Parameter(_jt.empty((num_embeddings, embedding_dim), device=device,
                                              dtype=dtype), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        self._fill_padding_idx_with_zero()

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            with _jt.no_grad():
                self.weight[self.padding_idx].fill_(0)


class Embedding(_EmbeddingBase):
    """A (num_embeddings, embedding_dim) table indexed by integer tensors; weight ~ N(0, 1)."""

    __constants__ = ["num_embeddings", "embedding_dim", "padding_idx", "max_norm", "norm_type",
                     "scale_grad_by_freq", "sparse"]

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight=None, _freeze: bool = False, device=None, dtype=None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _norm_padding_idx(padding_idx, num_embeddings)
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        self._init_weight(num_embeddings, embedding_dim, _weight, _freeze, device, dtype)

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        if self.sparse is not False:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx=None,
                        max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> "Embedding":
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze,
                   padding_idx=padding_idx, max_norm=max_norm, norm_type=norm_type,
                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


@loadable  # pure: a jit.load'ed EmbeddingBag may call it (script/runtime/loadable.py)
@ignore  # offsets -> padded bag matrix is Python list work (runs in Python under script)
def _bags(input: Tensor, offsets, include_last_offset: bool):
    """(indices (B, L), valid mask (B, L) bool, per-element positions or None)."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is "
                             "treated is a mini-batch of fixed length sequences. However, "
                             f"found offsets of type {type(offsets)}")
        return input, _jt.ones_like(input, dtype=_jt.bool), None
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    n = input.shape[0]
    starts = [int(o) for o in offsets.tolist()]
    if starts and starts[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                           f"mini-batch has to start from position 0. However, got "
                           f"{starts[0]}")
    if include_last_offset:
        bounds = list(zip(starts[:-1], starts[1:]))
    else:
        bounds = list(zip(starts, starts[1:] + [n]))
    for a, b in bounds:
        if not 0 <= a <= b <= n:
            raise RuntimeError(f"offsets must be non-decreasing and within the input size "
                               f"{n}, but got offsets {starts}")
    width = max([b - a for a, b in bounds] + [1])
    pos = [[a + j if a + j < b else n for j in range(width)] for a, b in bounds]
    # position n points at a dummy slot (index 0, masked out)
    pos_t = _jt.tensor(pos, dtype=_jt.long).reshape(len(bounds), width)
    padded_input = _jt.cat([input, _jt.zeros(1, dtype=input.dtype)])
    return padded_input[pos_t], pos_t < n, pos_t

@loadable
@ignore
def _check_bag_args(input: Tensor, per_sample_weights, mode: str, max_norm) -> None:
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature "
            "request on GitHub.")
    if max_norm is not None:
        raise NotImplementedError("EmbeddingBag(max_norm=...) is not supported yet")
    if per_sample_weights is not None and per_sample_weights.shape != input.shape:
        raise ValueError(f"embedding_bag: If per_sample_weights "
                         f"({list(per_sample_weights.shape)}) is not None, then it must "
                         f"have the same shape as the input ({list(input.shape)})")


class EmbeddingBag(_EmbeddingBase):
    """Sums / averages / maxes bags of embeddings without materialising them per element."""

    __constants__ = ["num_embeddings", "embedding_dim", "max_norm", "norm_type",
                     "scale_grad_by_freq", "mode", "sparse", "include_last_offset",
                     "padding_idx"]

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx=None, device=None, dtype=None) -> None:
        super().__init__()
        if mode not in ("sum", "mean", "max"):
            raise ValueError("mode has to be one of sum, mean or max")
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.padding_idx = _norm_padding_idx(padding_idx, num_embeddings)
        self.mode = mode
        self.sparse = sparse
        self.include_last_offset = include_last_offset
        self._init_weight(num_embeddings, embedding_dim, _weight, False, device, dtype)

    def forward(self, input: Tensor, offsets: Optional[Tensor] = None,
                per_sample_weights: Optional[Tensor] = None) -> Tensor:
        return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                             self.scale_grad_by_freq, self.mode, self.sparse,
                             per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq is not False:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None) -> "EmbeddingBag":
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings,
                  max_norm=max_norm, norm_type=norm_type,
                  scale_grad_by_freq=scale_grad_by_freq, mode=mode, sparse=sparse,
                  include_last_offset=include_last_offset, padding_idx=padding_idx)
        bag.weight.requires_grad = not freeze
        return bag


def embedding_bag(input: Tensor, weight: Tensor, offsets: Optional[Tensor] = None,
                  max_norm: Optional[float] = None, norm_type: float = 2.0,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Optional[Tensor] = None,
                  include_last_offset: bool = False,
                  padding_idx: Optional[int] = None) -> Tensor:
    """`F.embedding_bag`: sums / means / maxes of bags of rows of `weight` (the module's
    forward; 2-D input: fixed-length bags, 1-D input: bags starting at `offsets`)."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    _check_bag_args(input, per_sample_weights, mode, max_norm)
    idx, valid, pos = _bags(input, offsets, include_last_offset)
    if padding_idx is not None:
        valid = valid & (idx != padding_idx)
    emb = F.embedding(idx, weight)  # (B, L, D)
    if per_sample_weights is not None:
        if pos is not None:
            psw = _jt.cat([per_sample_weights,
                           _jt.zeros(1, dtype=per_sample_weights.dtype)])[pos]
        else:
            psw = per_sample_weights
        emb = emb * psw.unsqueeze(-1)
    mask = valid.unsqueeze(-1)
    if mode == "max":
        filled = emb.masked_fill(~mask, float("-inf"))
        out = filled.max(1)[0] if idx.shape[1] > 0 else emb.sum(1)
        # an empty bag gives zeros, as PyTorch
        return out.masked_fill(~valid.any(1).unsqueeze(-1), 0.0)
    total = (emb * mask.to(emb.dtype)).sum(1)
    if mode == "sum":
        return total
    count = valid.sum(1).clamp(min=1).to(emb.dtype).unsqueeze(-1)
    return total / count
