"""Distances: `cosine_similarity`, `pairwise_distance` and `cdist`, composites of registry ops
written as PyTorch's ATen composites are (so values, broadcasting and gradients follow).

- cosine_similarity: sum((x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps)), dim) on the broadcast
  pair, PyTorch's current formula (each side normalised first, for range).
- pairwise_distance: ||x1 - x2 + eps||_p over the last dim of the broadcast pair.
- pdist: the p-norm of the differences of the row pairs i < j of one matrix.
- cdist: the p-norm of every row pair; for p = 2 with `compute_mode` choosing the matrix form
  (always, or when either side has more than 25 rows, PyTorch's threshold) it is PyTorch's
  `_euclidean_dist`: sqrt(clamp_min(|a|^2 + |b|^2 - 2 a.b, 1e-30)) from one matmul.
"""
from __future__ import annotations

import math

from .. import _dtype as dt
from .composite import composite, expose
from .. import _autocast

__all__ = ["cosine_similarity", "pairwise_distance", "cdist", "pdist"]

_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
          "donot_use_mm_for_euclid_dist")


@composite(static=("dim", "eps"))
def _cosine_similarity(dim, eps):
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"cosine_similarity(): argument 'dim' must be int, not "
                        f"{type(dim).__name__}")
    eps2 = float(eps) * float(eps)  # sqrt(max(s, eps^2)) == max(sqrt(s), eps)

    def body(x1, x2):
        # PyTorch's checks, in the body so that compiled code makes them (the dtype test folds)
        if not (x1.is_floating_point() or x1.is_complex() or x2.is_floating_point()
                or x2.is_complex()):
            raise RuntimeError(f"expected common dtype to be floating point, yet common dtype "
                               f"is {_common_name(x1, x2)}")
        both = x1 * x2  # the broadcast shape (PyTorch broadcasts before the norms)
        a = x1.expand_as(both)
        b = x2.expand_as(both)
        na = (a * a).sum(dim, True).clamp_min(eps2).sqrt()
        nb = (b * b).sum(dim, True).clamp_min(eps2).sqrt()
        return ((a / na) * (b / nb)).sum(dim)
    return body


@_autocast.policy({"cuda": "fp32"})
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum((x1 / max(|x1|, eps)) * (x2 / max(|x2|, eps)), dim) on the broadcast pair."""
    return _cosine_similarity.body(dim, eps)(x1, x2)  # (its checks included)


def _common_name(x1, x2) -> str:
    """The legacy name of the two tensors' common dtype (a message part)."""
    return _legacy(dt.promote_types(x1.dtype, x2.dtype))


def _legacy(d):
    return {dt.int64: "Long", dt.int32: "Int", dt.int16: "Short", dt.int8: "Char",
            dt.uint8: "Byte", dt.bool: "Bool"}.get(d, d.name)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    from .linalg_norm import vector_norm
    nd = max(x1.ndim, x2.ndim)
    diff = x1 - x2 + eps
    if not diff.is_floating_point():
        diff = diff.to(dt.get_default_dtype())
    if nd == 0:
        return vector_norm(diff, p)
    return vector_norm(diff, p, dim=nd - 1, keepdim=keepdim)


@_autocast.policy("fp32")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    from .linalg_norm import vector_norm
    if compute_mode not in _MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D")
    if x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if not x1.is_floating_point():
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: "
                           f"{_legacy(x1.dtype)}")
    if not x2.is_floating_point():
        raise RuntimeError(f"cdist only supports floating-point dtypes, X2 got: "
                           f"{_legacy(x2.dtype)}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    r1, r2 = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == "use_mm_for_euclid_dist_if_necessary" and (r1 > 25 or r2 > 25)))
    if use_mm:
        return _euclidean_dist(x1, x2)
    d = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # (..., P, R, M)
    if d.shape[-1] == 0:
        return d.sum(-1) * 0
    return vector_norm(d, math.inf if p == math.inf else p, dim=-1)


def _euclidean_dist(x1, x2):
    from .._creation import ones_like
    from .join import cat
    n1 = x1.pow(2).sum(-1, keepdim=True)
    n2 = x2.pow(2).sum(-1, keepdim=True)
    a = cat([x1 * -2, n1, ones_like(n1)], -1)
    b = cat([x2, ones_like(n2), n2], -1)
    return a.matmul(b.transpose(-2, -1)).clamp_min(1e-30).sqrt()


expose(_cosine_similarity, cosine_similarity)


@_autocast.policy({"cuda": "fp32"})
def pdist(input, p=2.0):
    """The p-distances of the row pairs i < j of an (N, M) input, in row-major order
    (N (N - 1) / 2 values), from the gathered row differences."""
    import numpy as np
    from .._creation import tensor
    from .linalg_norm import vector_norm
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    i, j = np.triu_indices(input.shape[0], 1)
    d = input.index_select(0, tensor(i.astype(np.int64), device=input.device)) - \
        input.index_select(0, tensor(j.astype(np.int64), device=input.device))
    if d.shape[-1] == 0:
        return d.sum(-1) * 0
    return vector_norm(d, p, dim=-1)
