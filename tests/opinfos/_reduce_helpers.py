"""Sample-array helpers shared by the reduction, scan and sort OpInfo files."""
import numpy as np

import jitorch

BOOL = (jitorch.bool,)
COMPLEX = (jitorch.complex64,)


def arr(dtype, rng, *shape, low=-5, high=5):
    """A random array of the given NumPy dtype: normal floats, small ints, random bools."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        a = rng.random(shape) > 0.5
    elif dtype.kind in "iu":
        a = rng.integers(low, high, shape)
    elif dtype.kind == "c":
        a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    else:
        a = rng.standard_normal(shape)
    return np.asarray(a).astype(dtype)


def distinct(dtype, rng, *shape):
    """Floats without ties (safe for finite differences of max/sort/median...)."""
    n = int(np.prod(shape)) if shape else 1
    a = (rng.permutation(n) - n / 2) * 0.37 + rng.random(n) * 0.1
    return np.asarray(a.reshape(shape)).astype(dtype)


def ax(dim):
    """A PyTorch dim argument as NumPy's axis (None and () both mean every axis)."""
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return None
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def float_or_default(d):
    return d if d.is_floating_point or d.is_complex else jitorch.get_default_dtype()


def sort_key_order(line, descending=False):
    """Stable order of a 1-D array, NaN largest (pure Python: an independent reference)."""
    def key(i):
        v = line[i]
        nan = bool(np.isnan(v)) if np.asarray(v).dtype.kind in "fc" else False
        val = 0 if nan else v.item()
        return (nan, val) if not descending else (not nan, -val)
    return sorted(range(len(line)), key=key)


def along(fn, x, axis, keepdim=False):
    """Apply fn(1-D line) -> tuple of scalars to every line of x along axis."""
    x = np.asarray(x)
    if x.ndim == 0:
        return tuple(np.asarray(v) for v in fn(x.reshape(1)))
    moved = np.moveaxis(x, axis, -1)
    lead = moved.shape[:-1]
    outs = None
    for pos in np.ndindex(*lead):
        vals = fn(moved[pos])
        if outs is None:
            outs = [np.empty(lead, dtype=np.asarray(v).dtype) for v in vals]
        for o, v in zip(outs, vals):
            o[pos] = v
    if outs is None:  # no lines
        outs = [np.empty(lead, x.dtype), np.empty(lead, np.int64)]
    if keepdim:
        outs = [np.expand_dims(o, axis) for o in outs]
    return tuple(outs)
