"""`make_tensor`: a tensor of the given shape and dtype filled with random values in
[low, high), as PyTorch's `torch.testing.make_tensor` (integers in [low, high), booleans
either value), from jitorch's default generator."""
from __future__ import annotations

import math

from .. import _dtype as dt

__all__ = ["make_tensor"]

# PyTorch's default ranges per kind of dtype
_FLOAT_RANGE = (-9.0, 9.0)
_INT_RANGE = (-9, 10)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    from .._random import rand, randint
    from .._device import as_device
    device = as_device(device)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    shape = tuple(int(s) for s in shape)
    if low is not None and high is not None and low > high:
        raise ValueError(f"`low` must be less than or equal to `high`, but got {low} > {high}")
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if dtype is dt.bool:
        t = randint(0, 2, shape, dtype=dt.int64, device=device).to(dt.bool)
    elif dtype.is_floating_point or dtype.is_complex:
        lo = _FLOAT_RANGE[0] if low is None else low
        hi = _FLOAT_RANGE[1] if high is None else high
        real = dt.float32 if dtype is dt.complex64 else (
            dt.float64 if dtype is dt.complex128 else dtype)
        if dtype.is_complex:
            t = (rand(*shape, dtype=real, device=device) * (hi - lo) + lo) + 1j * (
                rand(*shape, dtype=real, device=device) * (hi - lo) + lo)
            t = t.to(dtype)
        else:
            t = rand(*shape, dtype=dt.float64, device=device) * (hi - lo) + lo
            t = t.to(dtype)
        if exclude_zero:
            tiny = dt.finfo(real).tiny
            t = t.masked_fill(t == 0, tiny)
    else:
        lo = _INT_RANGE[0] if low is None else int(math.ceil(low))
        hi = _INT_RANGE[1] if high is None else int(math.ceil(high)) if high != low else lo + 1
        info = dt.iinfo(dtype)
        lo, hi = max(lo, info.min), min(hi, info.max + 1)
        t = randint(lo, hi, shape, dtype=dt.int64, device=device).to(dtype)
        if exclude_zero:
            t = t.masked_fill(t == 0, 1)
    if requires_grad:
        t.requires_grad_(True)
    return t
