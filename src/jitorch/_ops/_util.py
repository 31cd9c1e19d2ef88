"""Small helpers shared by op families: dim normalisation, reduction bookkeeping, and the
arithmetic of first-order CPU backwards on arrays."""
from __future__ import annotations

import numpy as np

# `extra=` of a declaration whose VJP is written in operators and methods NumPy arrays and tensors
# share: a first-order CPU backward runs it on the arrays (autograd/graph.py's `_array_call`)
ON_ARRAYS = {"array_vjp": True}


def pass_where(mask, a):
    """`np.where(mask, a, 0)` (a's dtype; +0.0 where the mask is False) bit for bit, for a
    float32/float64 array and a bool mask array of its shape without np.where's branch per
    element (~10x slower on a mask that is True at random: a relu's): the mask widened to a's
    integer width and negated (all ones where True) selects a's bits by AND. np.where for
    anything else."""
    it = _INT_OF.get(a.dtype)
    if it is None or type(mask) is not np.ndarray or mask.dtype != np.bool_ or \
            mask.shape != a.shape:
        return np.where(mask, a, np.zeros((), a.dtype))
    k = mask.view(np.uint8).astype(it)
    np.negative(k, out=k)
    np.bitwise_and(k, a.view(it), out=k)
    return k.view(a.dtype)


_INT_OF = {np.dtype(np.float32): np.dtype(np.int32), np.dtype(np.float64): np.dtype(np.int64)}


def wrap_dim(dim: int, ndim: int) -> int:
    """PyTorch's dim wrapping (a 0-d tensor accepts dims -1 and 0), IndexError when out of range."""
    n = max(ndim, 1)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return int(dim) % n


def reduce_dims(dim, ndim: int) -> tuple:
    """`dim` of a reduction (None, int, or sequence) as a sorted tuple of axes; () means all."""
    if type(dim) is int and -ndim <= dim < ndim:  # the common call: one dim, in range
        return (dim % ndim,)
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        return tuple(range(ndim))  # PyTorch: dim=[] reduces every dim, like dim=None
    if isinstance(dim, (list, tuple)):
        axes = tuple(sorted(wrap_dim(d, ndim) for d in dim))
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dim {axes[0]} appears multiple times in the list of dims")
        return axes if axes or ndim else ()
    return (wrap_dim(dim, ndim),)


def np_axes(axes: tuple, ndim: int):
    """NumPy axis argument for reduced axes (a 0-d array has no axes to reduce)."""
    return None if ndim == 0 else axes


def unreduce(g, input_shape, dim, keepdim: bool):
    """Gradient of a reduction: reinsert reduced dims (if dropped) and broadcast back."""
    ndim = len(input_shape)
    axes = reduce_dims(dim, ndim)
    if not keepdim and ndim:
        shape = list(g.shape)
        for a in axes:
            shape.insert(a, 1)
        g = g.reshape(shape)
    return g.expand(input_shape)
