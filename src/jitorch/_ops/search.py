"""Set and search ops: unique, unique_consecutive, searchsorted, bucketize, bincount, histc.

None is differentiable (all declared `nondiff`). `unique` always sorts (PyTorch's CPU kernel
does too, whatever `sorted=` says) and keeps NaNs distinct; its public function returns a single
tensor or a tuple according to `return_inverse` / `return_counts`, like PyTorch.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ._reduce_common import compute_array, one_dim, pt_name, public
from .registry import defop
from .batching import LOOP

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"
_DATA_SIZE = "the output size depends on the data: no CPU lowering"

__all__ = ["unique", "unique_consecutive", "searchsorted", "bucketize", "bincount", "histc"]


def _no_complex(name, input):
    if input.dtype.kind == "c":
        raise NotImplementedError(f'"{name}" not implemented for \'{pt_name(input.dtype)}\'')


def _select(out, inverse, counts, return_inverse, return_counts):
    res = (out,) + ((inverse,) if return_inverse else ()) + ((counts,) if return_counts else ())
    return res[0] if len(res) == 1 else res


# --- unique --------------------------------------------------------------------------------------
def _unique_dim_check(input, axis):
    for i, s in enumerate(input.shape):
        if s == 0 and i != axis:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                               "unique cannot be applied")


def _unique_impl(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    _no_complex("unique", input)
    x = compute_array(input)
    if dim is None:
        flat = x.reshape(-1)
        out, inv, cnt = np.unique(flat, return_inverse=True, return_counts=True,
                                  equal_nan=False)
        inv = inv.reshape(input.shape)
    else:
        axis = one_dim(dim, input.ndim, "unique")
        _unique_dim_check(input, axis)
        if x.shape[axis] == 0:
            return input.copy(), np.zeros(0, np.int64), np.zeros(0, np.int64)
        out, inv, cnt = np.unique(x, return_inverse=True, return_counts=True, axis=axis)
        inv = inv.reshape(-1)
    return out.astype(input.dtype), inv.astype(np.int64), cnt.astype(np.int64)


_unique = defop("unique", _unique_impl, kind="other", nondiff=True, function=False,
                method=False, interpreted=_DATA_SIZE)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """`torch.unique`: the sorted unique elements (or slices along dim), optionally with the
    inverse indices and the counts."""
    out, inv, cnt = _unique(input, sorted, return_inverse, return_counts, dim)
    return _select(out, inv, cnt, return_inverse, return_counts)


public(unique)


def _unique_consecutive_impl(input, return_inverse=False, return_counts=False, dim=None):
    _no_complex("unique_consecutive", input)
    if dim is None:
        x = input.reshape(-1)
        new = np.ones(x.shape, bool)
        new[1:] = x[1:] != x[:-1]
        out = x[new]
        inv = (np.cumsum(new) - 1).reshape(input.shape)
    else:
        axis = one_dim(dim, input.ndim, "unique_consecutive")
        _unique_dim_check(input, axis)
        x = np.moveaxis(input, axis, 0)
        new = np.ones(x.shape[0], bool)
        if x.shape[0] > 1:
            new[1:] = (x[1:] != x[:-1]).reshape(x.shape[0] - 1, -1).any(1)
        out = np.moveaxis(x[new], 0, axis)
        inv = np.cumsum(new) - 1
    starts = np.flatnonzero(new)
    cnt = np.diff(np.append(starts, new.shape[0]))
    return np.ascontiguousarray(out), inv.astype(np.int64), cnt.astype(np.int64)


_unique_consecutive = defop("unique_consecutive", _unique_consecutive_impl, kind="other",
                            nondiff=True, function=False, method=False, interpreted=_DATA_SIZE)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """`torch.unique_consecutive`: collapse runs of equal consecutive elements (or slices)."""
    out, inv, cnt = _unique_consecutive(input, return_inverse, return_counts, dim)
    return _select(out, inv, cnt, return_inverse, return_counts)


public(unique_consecutive)


# --- searchsorted / bucketize --------------------------------------------------------------------
def _side(right, side):
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to "
                               "opposites, got side of left while right was True")
        return side
    return "right" if right else "left"


def _search(seq, values, side, sorter, out_int32):
    if sorter is not None:
        seq = np.take_along_axis(seq, sorter.astype(np.intp), -1)
    scalar = not isinstance(values, np.ndarray)
    v = np.asarray(values)
    seq_c, v_c = compute_array(seq), compute_array(v)
    if seq.ndim == 1:
        r = np.searchsorted(seq_c, v_c, side=side)
    else:
        if scalar:
            raise RuntimeError("torch.searchsorted(): input value can be a scalar only when "
                               f"boundaries tensor dimension is 1, but we got boundaries "
                               f"tensor dim({seq.ndim}) and input value's dim(0) numel(1)")
        if seq.shape[:-1] != v.shape[:-1]:
            raise RuntimeError(
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                "N-1 dimensions of boundaries tensor and input value tensor must match, but we "
                f"got boundaries tensor {list(seq.shape)} and input value tensor "
                f"{list(v.shape)}")
        s2 = seq_c.reshape(-1, seq.shape[-1])
        v2 = v_c.reshape(-1, v.shape[-1] if v.ndim else 1)
        r = np.stack([np.searchsorted(a, b, side=side) for a, b in zip(s2, v2)]) \
            if s2.shape[0] else np.zeros(v2.shape, np.int64)
        r = r.reshape(v.shape)
    return np.asarray(r).astype(np.int32 if out_int32 else np.int64)


def _searchsorted_impl(sorted_sequence, input, sorter, out_int32, right, side):
    if sorted_sequence.ndim == 0:
        v = np.asarray(input)
        raise RuntimeError("torch.searchsorted(): input value can be a scalar only when "
                           "boundaries tensor dimension is 1, but we got boundaries tensor "
                           f"dim(0) and input value's dim({v.ndim}) numel({v.size})")
    return _search(sorted_sequence, input, _side(right, side), sorter, out_int32)


_searchsorted = defop("searchsorted", _searchsorted_impl,
                      tensors=("sorted_sequence", "input", "sorter"), kind="other",
                      nondiff=True, function=False, method=False, interpreted=_NOT_YET,
                      batch=LOOP)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                 sorter=None, out=None):
    """`torch.searchsorted`: insertion indices of input into the innermost sorted rows."""
    return _searchsorted(sorted_sequence, input, sorter, out_int32, right, side, out=out)


public(searchsorted, method=False)


def _bucketize(input, boundaries, *, out_int32=False, right=False):
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return _search(boundaries, input, "right" if right else "left", None, out_int32)


bucketize = defop("bucketize", _bucketize, tensors=("input", "boundaries"), kind="other",
                  nondiff=True, method=False, scalar_first=True, interpreted=_NOT_YET,
                  batch=LOOP)


# --- bincount / histc ----------------------------------------------------------------------------
def _bincount(input, weights=None, minlength=0):
    if input.dtype.kind not in "iu":
        if input.dtype.kind == "b" or input.dtype.kind in "fcV":
            raise NotImplementedError(f'"bincount_cpu" not implemented for '
                                      f"'{pt_name(input.dtype)}'")
    if input.ndim != 1 or (input.size and input.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    if weights is None:
        return np.bincount(input, minlength=minlength).astype(np.int64)
    out = np.float32 if weights.dtype == np.float32 else np.float64
    return np.bincount(input, weights=weights.astype(np.float64),
                       minlength=minlength).astype(out)


bincount = defop("bincount", _bincount, tensors=("input", "weights"), kind="other",
                 nondiff=True, interpreted=_DATA_SIZE)


def _histc(input, bins=100, min=0, max=0):
    if input.dtype.kind not in "f" and not dt.is_bfloat16_np(input.dtype):
        raise NotImplementedError(f'"histogram_cpu" not implemented for '
                                  f"'{pt_name(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for "
                           "dimension 0")
    x = compute_array(input).reshape(-1).astype(np.float64)
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_fmt(lo)}, {_fmt(hi)}] is not finite")
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    keep = (x >= lo) & (x <= hi)  # NaN fails both tests and is ignored
    x = x[keep]
    idx = np.floor((x - lo) * bins / (hi - lo)).astype(np.int64)
    idx = np.minimum(idx, bins - 1)  # the top edge belongs to the last bin
    return np.bincount(idx, minlength=bins).astype(input.dtype)


def _fmt(v):
    if np.isnan(v):
        return "-nan"
    return "inf" if v == np.inf else "-inf" if v == -np.inf else f"{v:g}"


histc = defop("histc", _histc, kind="other", nondiff=True, interpreted=_NOT_YET)
