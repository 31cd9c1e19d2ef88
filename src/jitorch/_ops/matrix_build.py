"""Matrices built from tensors: `block_diag`, `cartesian_prod`, `cov`, `corrcoef` (issue 19).

Compositions of registry ops (pad, cat, meshgrid, matmul, ...) with PyTorch's argument rules
and errors, so autograd, forward AD and tracing follow from those ops.
"""
from __future__ import annotations

import warnings

from .. import _dtype as dt
from .._tensor import Tensor

__all__ = ["block_diag", "cartesian_prod", "cov", "corrcoef"]


def block_diag(*tensors):
    """The block-diagonal matrix of 0-, 1- or 2-D tensors (a 1-D one is a row)."""
    from .. import _ops
    from .nn_misc import pad
    blocks = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.dim()} dimensions")
        blocks.append(t.reshape(1, 1) if t.dim() == 0 else t.reshape(1, -1) if t.dim() == 1
                      else t)
    if not blocks:
        return _ops.cat([_empty_2d()], 0)
    d = dt.promote_types(blocks[0]._dtype, blocks[0]._dtype)
    for b in blocks[1:]:
        d = dt.promote_types(d, b._dtype)
    cols = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        w = b.shape[1]
        rows.append(pad(b.to(d), (left, cols - left - w)))
        left += w
    return _ops.cat(rows, 0)


def _empty_2d():
    from .._creation import empty
    return empty((1, 0))


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D tensors: (prod of sizes, len(tensors)) (one tensor: itself)."""
    from .. import _ops
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    grids = _ops.meshgrid(*tensors, indexing="ij")
    return _ops.stack([g.reshape(-1) for g in grids], 1)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of `input` (observations in
    columns); PyTorch's weights and correction."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    if x._dtype.category < dt.FLOAT:
        x = x.to(dt.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if wt.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but "
                               f"got {name} with {wt.dim()} dimensions")
        if wt.numel() != n_obs:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are "
                               f"observations in the input but got {wt.numel()} != {n_obs}")
        if name == "fweights" and wt._dtype.category >= dt.FLOAT:
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got "
                               f"fweights with {_type_name(wt)} dtype")
        if name == "aweights" and wt._dtype.category < dt.FLOAT:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got "
                               f"aweights with {_type_name(wt)} dtype")
        if bool((wt < 0).any()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
        w = wt if w is None else w * wt
    if w is None:
        avg = x.mean(1)
        w_sum = n_obs
        norm = w_sum - correction
    else:
        w = w.to(x._dtype) if w._dtype.category < dt.FLOAT else w
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        norm = w_sum - correction if aweights is None else \
            w_sum - correction * (w * aweights).sum() / w_sum
    small = bool(norm <= 0) if isinstance(norm, Tensor) else norm <= 0
    if small:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", stacklevel=2)
        norm = norm * 0 if isinstance(norm, Tensor) else 0
    xm = x - avg.unsqueeze(1)
    xw = xm if w is None else xm * w
    c = xm @ xw.mT.conj() if x._dtype.category == dt.COMPLEX else xm @ xw.mT
    return (c / norm).squeeze()


def _type_name(t):
    return str(t._dtype).replace("jitorch.", "")


def corrcoef(input):
    """Pearson correlation coefficients of the rows of `input`, clipped to [-1, 1]."""
    from .. import _ops
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = _ops.diagonal(c)
    std = (d.real if c._dtype.category == dt.COMPLEX else d).sqrt()
    c = c / std.unsqueeze(1)
    c = c / std.unsqueeze(0)
    if c._dtype.category == dt.COMPLEX:
        return _ops.complex(c.real.clip(-1, 1), c.imag.clip(-1, 1))
    return c.clip(-1, 1)


Tensor.cov = cov
Tensor.corrcoef = corrcoef
