"""Copying rearrangements (flip, fliplr, flipud, roll, rot90, repeat, tile, repeat_interleave):
declarations for the registry.

Unlike the views in `shape.py`, these always return new storage, as in PyTorch (NumPy's flip and
rot90 are views, so the results are copied). Gradients are the inverse rearrangement, or a sum
over the copies for the repeating ops.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from ._util import wrap_dim
from .registry import _pt_name, defop
from .batching import FLAT, LOOP, ROLL, dims, sizes
from .shape import _dup_check, _index, _ints

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__ = ["flip", "fliplr", "flipud", "roll", "rot90", "tile", "repeat_interleave"]


# --- flips ----------------------------------------------------------------------------------------
def _flip(input, dims):
    axes = tuple(wrap_dim(d, input.ndim) for d in dims)
    _dup_check(axes)
    if input.ndim == 0 or not axes:
        return input.copy()
    return np.flip(input, axes).copy()


flip = defop("flip", _flip, kind="shape", varargs="dims",
             vjp=lambda g, dims: g.flip(dims), jvp=lambda t_input, dims: t_input.flip(dims),
             interpreted=_NOT_YET,
             batch=dims("dims"))


def _fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input[:, ::-1].copy()


def _flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input[::-1].copy()


fliplr = defop("fliplr", _fliplr, kind="shape", vjp=lambda g: g.fliplr(),
               jvp=lambda t_input: t_input.fliplr(), interpreted=_NOT_YET,
               batch=FLAT)
flipud = defop("flipud", _flipud, kind="shape", vjp=lambda g: g.flipud(),
               jvp=lambda t_input: t_input.flipud(), interpreted=_NOT_YET,
               batch=FLAT)


# --- roll / rot90 ---------------------------------------------------------------------------------
def _roll(input, shifts, dims=None):
    shifts = _ints(shifts, "shifts")
    dims = () if dims is None else _ints(dims, "dims")
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:
        # no dims: roll the flattened tensor and restore the shape
        return np.roll(input.reshape(-1), shifts[0]).reshape(input.shape)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    axes = tuple(wrap_dim(d, input.ndim) for d in dims)
    if input.ndim == 0:
        return input.copy()
    return np.roll(input, shifts, axes)


def _neg_shifts(shifts):
    return tuple(-s for s in _ints(shifts, "shifts"))


roll = defop("roll", _roll, kind="shape",
             vjp=lambda g, shifts, dims: g.roll(_neg_shifts(shifts), dims),
             jvp=lambda t_input, shifts, dims: t_input.roll(shifts, dims), interpreted=_NOT_YET,
             batch=ROLL)


def _rot90(input, k=1, dims=(0, 1)):
    dims = _ints(dims, "dims")
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = wrap_dim(dims[0], input.ndim), wrap_dim(dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    return np.ascontiguousarray(np.rot90(input, _index(k, "k"), (d0, d1)))


rot90 = defop("rot90", _rot90, kind="shape",
              vjp=lambda g, k, dims: g.rot90(-k, dims),
              jvp=lambda t_input, k, dims: t_input.rot90(k, dims), interpreted=_NOT_YET)


# --- repeat / tile --------------------------------------------------------------------------------
def _check_reps(reps, shape):
    for r in reps:
        if r < 0:
            out = [s * r for s, r in zip((1,) * (len(reps) - len(shape)) + tuple(shape), reps)]
            raise RuntimeError(f"Trying to create tensor with negative dimension {min(out)}: "
                               f"{out}")


def _repeat(input, repeats):
    if len(repeats) < input.ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    _check_reps(repeats, input.shape)
    return np.tile(input, repeats) if repeats else input.copy()


def _repeat_vjp(g, input_shape, reps):
    """Sum the copies: view the grad as (r0, s0, r1, s1, ...) and reduce the r axes."""
    lead = len(reps) - len(input_shape)
    shape = (1,) * lead + tuple(input_shape)
    inter = []
    for r, s in zip(reps, shape):
        inter += [r, s]
    axes = tuple(range(0, 2 * len(reps), 2))
    if axes:
        g = g.reshape(inter).sum(dim=axes)
    return g.reshape(input_shape)


def _tile_reps(dims, ndim):
    dims = _ints(dims, "dims")
    return (1,) * (ndim - len(dims)) + dims


defop("repeat", _repeat, kind="shape", varargs="repeats", function=False,
      vjp=lambda g, input_shape, repeats: _repeat_vjp(g, input_shape, repeats),
      jvp=lambda t_input, repeats: t_input.repeat(repeats), interpreted=_NOT_YET,
      batch=sizes("repeats", "repeat"))


def _tile(input, dims):
    return _repeat(input, _tile_reps(dims, input.ndim))


tile = defop("tile", _tile, kind="shape",
             vjp=lambda g, input_shape, dims:
             _repeat_vjp(g, input_shape, _tile_reps(dims, len(input_shape))),
             jvp=lambda t_input, dims: t_input.tile(dims), interpreted=_NOT_YET,
             batch=sizes("dims", "tile"))


# --- repeat_interleave ----------------------------------------------------------------------------
def _ri_repeats(repeats, n):
    """Per-element repeat counts (an int array of length n) from an int or an index tensor."""
    if isinstance(repeats, np.ndarray):
        if repeats.dtype.kind not in "iu":
            raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for '
                                      f"'{_pt_name(dt.from_numpy_dtype(repeats.dtype))}'")
        if repeats.ndim > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats.size == 1:
            repeats = np.full(n, repeats.reshape(()), np.int64)
        elif repeats.shape[0] != n:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {repeats.shape[0]} and input.size(0) = {n}")
        if np.any(repeats < 0):
            raise RuntimeError("repeats can not be negative")
        return repeats.astype(np.int64)
    r = _index(repeats, "repeats")
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    return np.full(n, r, np.int64)


def _repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:
        # the one-argument form: input holds the counts; repeat each position's index
        counts = _ri_repeats(input.reshape(-1) if input.ndim == 0 else input, input.size)
        return np.repeat(np.arange(counts.size, dtype=input.dtype), counts)
    if dim is None:
        input, d = input.reshape(-1), 0
    else:
        d = wrap_dim(dim, input.ndim)
        if input.ndim == 0:
            input = input.reshape(1)
    counts = _ri_repeats(repeats, input.shape[d])
    out = np.repeat(input, counts, axis=d)
    if output_size is not None and out.shape[d] != output_size:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {out.shape[d]} "
                           f"but got {output_size}")
    return out


def _segment_sum_impl(grad, repeats, dim, n):
    counts = _ri_repeats(repeats, n)
    g = np.moveaxis(grad, dim, 0)
    out = np.zeros((n,) + g.shape[1:], grad.dtype)
    nz = counts > 0
    if g.shape[0]:
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[nz]
        out[nz] = np.add.reduceat(g, starts, axis=0)
    return np.moveaxis(out, 0, dim)


# sums each run of `repeats` consecutive entries along dim: the adjoint of repeat_interleave
_segment_sum = defop(
    "_segment_sum", _segment_sum_impl, tensors=("grad", "repeats"), kind="shape", method=False,
    vjp=lambda g, repeats, dim: (g.repeat_interleave(repeats, dim), None),
    jvp=lambda t_grad, repeats, dim, n: _segment_sum(t_grad, repeats, dim, n), interpreted=_NOT_YET,
    batch=LOOP)


def _repeat_interleave_vjp(g, input_shape, repeats, dim):
    if dim is None:
        return _segment_sum(g, repeats, 0, max(int(np.prod(input_shape)), 1)).reshape(
            input_shape), None
    d = wrap_dim(dim, len(input_shape))
    n = input_shape[d] if input_shape else 1
    return _segment_sum(g, repeats, d, n).reshape(input_shape), None


repeat_interleave = defop(
    "repeat_interleave", _repeat_interleave, tensors=("input", "repeats"), kind="shape",
    vjp=_repeat_interleave_vjp,
    jvp=lambda t_input, repeats, dim, output_size:
    t_input.repeat_interleave(repeats, dim, output_size=output_size), interpreted=_NOT_YET,
    batch=LOOP)
