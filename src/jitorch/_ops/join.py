"""Joining and splitting ops (cat, stack, hstack, ..., split, chunk, tensor_split, unbind, ...):
declarations for the registry.

Joins take a list slot (`tensors`); their result dtype is the promotion of all inputs, and their
VJP splits the gradient back into one piece per input. Splits return a tuple of views of the
input; their VJP receives a tuple of gradients (zeros for unused pieces) and concatenates them.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd.graph import plain_grad
from ._util import wrap_dim
from . import infer
from .registry import _pt_name, defop
from .batching import dims
from .shape import _index, _ints, _narrow_backward

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_ALIAS_CAT = "an alias of cat, not in the lowering table yet"
_SPLITS = ("a list of views whose length is known only at run time: no CPU lowering yet (chunk "
           "is lowered)")
_NOT_YET = "no CPU lowering yet (cat and stack are lowered)"

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
           "column_stack", "unbind", "split", "chunk", "tensor_split", "hsplit", "vsplit",
           "dsplit"]


# --- joins ----------------------------------------------------------------------------------------
def _check_list(tensors, name: str, fn_name: str | None = None):
    if isinstance(tensors, np.ndarray):
        raise TypeError(f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not Tensor")
    if not len(tensors):
        if fn_name:
            raise ValueError(f"{fn_name or name}(): expected a non-empty list of Tensors")
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    return dt.from_numpy_dtype(tensors[0].dtype) if len(tensors) == 1 else _promote(tensors)


def _promote(arrays) -> dt.dtype:
    d0 = arrays[0].dtype
    for a in arrays:
        if a.dtype != d0:
            break
    else:  # the common case: one dtype
        return dt.from_numpy_dtype(d0)
    d = dt.from_numpy_dtype(d0)
    for a in arrays[1:]:
        d = dt.promote_types(d, dt.from_numpy_dtype(a.dtype))
    return d


def _skipped(shape) -> bool:
    # PyTorch's legacy rule: 1-D empty tensors are ignored by cat whatever their shape
    return len(shape) == 1 and shape[0] == 0


def _cat_arrays(arrays, dim, out_dtype):
    """Concatenate with PyTorch's checks and messages (arrays are already non-empty)."""
    nd = arrays[0].ndim
    for a in arrays:  # the common case: no 0-d, no skipped (1-D empty) array, one rank
        if a.ndim != nd or nd == 0 or (nd == 1 and not a.shape[0]):
            break
    else:
        try:
            return np.concatenate(arrays, axis=wrap_dim(dim, nd), dtype=out_dtype.np)
        except ValueError:
            pass  # sizes that do not match: the checks below word PyTorch's error
    for i, a in enumerate(arrays):
        if a.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    keep = [(i, a) for i, a in enumerate(arrays) if not _skipped(a.shape)]
    if not keep:
        return np.zeros((0,), out_dtype.np)
    ref = keep[0][1]
    d = wrap_dim(dim, ref.ndim)
    for i, a in keep[1:]:
        if a.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} "
                               f"and {a.ndim}")
        for k in range(ref.ndim):
            if k != d and a.shape[k] != ref.shape[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref.shape[k]} but got size {a.shape[k]} "
                                   f"for tensor number {i} in the list.")
    return np.concatenate([a for _, a in keep], axis=d, dtype=out_dtype.np)


def _join_impl(name: str, argname: str):
    """The impl of a join op named `name` (cat, concat; concatenate's `axis` through concat's):
    the common join (a list of NumPy arrays of one dtype and an int dim, which NumPy then joins
    as PyTorch would: for rank >= 1 a skipped 1-D empty array joins as nothing) straight to
    NumPy, in this one frame (a helper call was ~0.1 of cat's ~1.2 us on small tensors); else,
    or on NumPy's refusal (ranks or sizes that differ, 0-d arrays, a dim out of range), the
    checks of `_check_list` and `_cat_arrays`, which word PyTorch's errors."""
    def impl(tensors, dim=0):
        if type(tensors) is list and type(dim) is int and tensors and type(tensors[0]) is _nd:
            try:  # casting="no": NumPy refuses (TypeError) arrays of different dtypes, which
                # PyTorch promotes by its own rules (in C: ~0.1 us less than a Python loop)
                return _concatenate_np(tensors, dim, casting="no")
            except (ValueError, TypeError):  # ValueError: also NumPy's AxisError
                pass
        return _cat_arrays(tensors, _index(dim, argname), _check_list(tensors, name,
                                                                       "torch.cat"))
    return impl


_concatenate_np = np.concatenate
_nd = np.ndarray
_cat = _join_impl("cat", "dim")
_concat = _join_impl("concat", "dim")
_concat_axis = _join_impl("concatenate", "axis")


def _concatenate(tensors, axis=0):
    return _concat_axis(tensors, axis)


def _split_back(g, shapes, targets, d):
    """One gradient per joined input: its narrow of g along d, in its input's shape. Narrows
    (not one `split`) because narrow lowers with run-time offsets and sizes, so a compiled
    backward stays compiled and size-generic."""
    grads, off = [], 0
    if plain_grad(g):  # a first-order CPU backward: narrow's slices of the array, no dispatch
        a, dtype, lead = g._data, g._dtype, (slice(None),) * d
        for s, t in zip(shapes, targets):
            size = 0 if _skipped(t) else t[d]
            piece = a[lead + (slice(off, off + size),)]
            grads.append(Tensor._make(piece if t is s and not _skipped(t) else piece.reshape(s),
                                      dtype))
            off += size
        return grads
    for s, t in zip(shapes, targets):
        size = 0 if _skipped(t) else t[d]
        piece = g.narrow(d, off, size)
        # a lifted (hstack & co.) or skipped input gets its own shape back
        grads.append(piece if t is s and not _skipped(t) else piece.reshape(s))
        off = off + size
    return grads


def _cat_vjp(g, tensors_shape, dim):
    keep = [s for s in tensors_shape if not _skipped(s)]
    d = wrap_dim(dim, len(keep[0])) if keep else 0
    return _split_back(g, tensors_shape, tensors_shape, d)


# every join is cat in PyTorch (CompositeImplicit), which autocast promotes
_CAT = dict(lists=("tensors",), tensors=(), kind="shape", method=False,
            autocast="promote")
cat = defop("cat", _cat, vjp=_cat_vjp, jvp=lambda t_tensors, dim: cat(t_tensors, dim), **_CAT,
            infer=infer.join(0),
            batch=dims("dim", expand=True))
concat = defop("concat", _concat, vjp=_cat_vjp, jvp=lambda t_tensors, dim: cat(t_tensors, dim),
               **_CAT, interpreted=_ALIAS_CAT,
               batch=dims("dim", expand=True))
concatenate = defop("concatenate", _concatenate,
                    vjp=lambda g, tensors_shape, axis: _cat_vjp(g, tensors_shape, axis),
                    jvp=lambda t_tensors, axis: cat(t_tensors, axis), **_CAT,
                    interpreted=_ALIAS_CAT,
                    batch=dims("axis", expand=True))


def _stack(tensors, dim=0):
    out_dtype = _check_list(tensors, "stack")
    ref = tensors[0].shape
    for i, a in enumerate(tensors[1:], 1):
        if a.shape != ref:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(ref)} "
                               f"at entry 0 and {list(a.shape)} at entry {i}")
    d = wrap_dim(dim, len(ref) + 1)
    return np.stack(tensors, axis=d, dtype=out_dtype.np)


def _stack_vjp(g, tensors_shape, dim):
    # input k's grad is g's k-th slice along the new dim (select lowers; split does not)
    d = wrap_dim(dim, len(tensors_shape[0]) + 1)
    return [g.select(d, k) for k in range(len(tensors_shape))]


stack = defop("stack", _stack, vjp=_stack_vjp,
              jvp=lambda t_tensors, dim: stack(t_tensors, dim), **_CAT, infer=infer.join(1),
              batch=dims("dim", extra=1, expand=True))


# hstack & co: lift every input to a minimum rank, then concatenate along a fixed dim
def _lift_1d(s):
    return s if len(s) >= 1 else (1,)


def _lift_2d(s):
    return s if len(s) >= 2 else (1,) * (2 - len(s)) + s


def _lift_3d(s):
    return s if len(s) >= 3 else {0: (1, 1, 1), 1: (1,) + s + (1,)}.get(len(s), s + (1,))


def _lift_col(s):
    return s if len(s) >= 2 else s + (1,) if s else (1, 1)


def _hstack_dim(targets):
    return 0 if len(targets[0]) == 1 else 1


_STACKS = {
    # name: (lift each shape, concatenation dim from the lifted shapes)
    "hstack": (_lift_1d, _hstack_dim),
    "vstack": (_lift_2d, lambda targets: 0),
    "row_stack": (_lift_2d, lambda targets: 0),
    "dstack": (_lift_3d, lambda targets: 2),
    "column_stack": (_lift_col, lambda targets: 1),
}


def _declare_stack(name):
    lift, dim_of = _STACKS[name]

    def impl(tensors):
        # row_stack is vstack's deprecated alias, and says so in its messages
        out_dtype = _check_list(tensors, "vstack" if name == "row_stack" else name)
        arrays = [a.reshape(lift(a.shape)) for a in tensors]
        return _cat_arrays(arrays, dim_of([a.shape for a in arrays]), out_dtype)

    def vjp(g, tensors_shape):
        targets = [lift(s) for s in tensors_shape]
        return _split_back(g, tensors_shape, targets, dim_of(targets))

    def jvp(t_tensors):
        return op_fn[0](t_tensors)

    impl.__name__ = "_" + name
    op_fn = [defop(name, impl, vjp=vjp, jvp=jvp, **_CAT, interpreted=_NOT_YET)]
    return op_fn[0]


hstack = _declare_stack("hstack")
vstack = _declare_stack("vstack")
row_stack = _declare_stack("row_stack")
dstack = _declare_stack("dstack")
column_stack = _declare_stack("column_stack")


# --- splits ---------------------------------------------------------------------------------------
def _pieces(a, d, bounds):
    """Views a[..., lo:hi, ...] along d for consecutive (lo, hi) bounds."""
    head = (slice(None),) * d
    return tuple(a[head + (slice(lo, hi),)] for lo, hi in bounds)


def _sized(a, d, sizes):
    bounds, lo = [], 0
    for s in sizes:
        bounds.append((lo, lo + s))
        lo += s
    return _pieces(a, d, bounds)


def _join_grads(g, dim):
    """VJP of a split: concatenate the pieces' gradients (g is a Tensor for a single piece)."""
    return cat([g] if isinstance(g, Tensor) else list(g), dim)


def _split(tensor, split_size_or_sections, dim=0):
    if tensor.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, (list, tuple)):
        sizes = _ints(split_size_or_sections, "split_size")
        if any(s < 0 for s in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative "
                               f"entries, but got split_sizes={list(sizes)}")
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {dim}), but got "
                               f"split_sizes={list(sizes)}")
        return _sized(tensor, d, sizes)
    s = _index(split_size_or_sections, "split_size")
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension "
                           f"size of {n}")
    count = max(-(-n // s), 1) if s else 1
    return _sized(tensor, d, [s] * (count - 1) + [n - s * (count - 1)])


split = defop("split", _split, tensors=("tensor",), kind="shape", view=True,
              vjp=lambda g, dim: _join_grads(g, dim),
              jvp=lambda t_tensor, split_size_or_sections, dim:
              t_tensor.split(split_size_or_sections, dim), interpreted=_SPLITS,
              batch=dims("dim"))


def _chunk(input, chunks, dim=0):
    if input.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    chunks = _index(chunks, "chunks")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim(dim, input.ndim)
    n = input.shape[d]
    size = -(-n // chunks)
    if n == 0:
        return _sized(input, d, [0] * chunks)
    return _split(input, size, d)


chunk = defop("chunk", _chunk, kind="shape", view=True, vjp=lambda g, dim: _join_grads(g, dim),
              jvp=lambda t_input, chunks, dim: t_input.chunk(chunks, dim), infer=infer.list_of_same,
              batch=dims("dim"))


def _tensor_split_bounds(n, indices_or_sections):
    """(lo, hi) bounds: n sections (the first n % k one longer) or Python-slice index cuts."""
    ios = indices_or_sections
    if isinstance(ios, Tensor):
        if ios._dtype is not dt.int64:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype "
                               f"of long, but got {_pt_name(ios._dtype)}")
        if ios.ndim > 1:
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to be a "
                               f"zero-dimensional or one-dimensional tensor, but got a tensor "
                               f"with {ios.ndim} dims")
        ios = int(ios._data) if ios.ndim == 0 else [int(v) for v in ios._data]
    if isinstance(ios, (list, tuple)):
        cuts = [0] + list(_ints(ios, "indices")) + [n]
        return [tuple(slice(lo, hi).indices(n)[:2]) for lo, hi in zip(cuts[:-1], cuts[1:])]
    k = _index(ios, "sections")
    if k <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {k}")
    base, extra = divmod(n, k)
    bounds, lo = [], 0
    for i in range(k):
        hi = lo + base + (1 if i < extra else 0)
        bounds.append((lo, hi))
        lo = hi
    return bounds


def _tensor_split(input, indices_or_sections, dim=0):
    if input.ndim == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a "
                           "tensor with 0 dims")
    d = wrap_dim(dim, input.ndim)
    return _pieces(input, d, _tensor_split_pieces(input.shape[d], indices_or_sections))


def _tensor_split_pieces(n, indices_or_sections):
    # a slice [lo:hi] with hi < lo is empty: keep the piece's start at lo
    return [(lo, max(lo, hi)) for lo, hi in _tensor_split_bounds(n, indices_or_sections)]


def _tensor_split_vjp(g, input_shape, indices_or_sections, dim):
    """Index cuts may go backwards (pieces overlap): then scatter-add each piece's gradient."""
    d = wrap_dim(dim, len(input_shape))
    bounds = _tensor_split_pieces(input_shape[d], indices_or_sections)
    if all(a[1] == b[0] for a, b in zip(bounds, bounds[1:])) and bounds[-1][1] == input_shape[d]:
        return _join_grads(g, d)
    total = None
    for gi, (lo, _) in zip([g] if isinstance(g, Tensor) else g, bounds):
        part = _narrow_backward(gi, input_shape, d, lo)
        total = part if total is None else total + part
    return total


tensor_split = defop("tensor_split", _tensor_split, kind="shape", view=True,
                     vjp=_tensor_split_vjp,
                     jvp=lambda t_input, indices_or_sections, dim:
                     t_input.tensor_split(indices_or_sections, dim), interpreted=_SPLITS,
                     batch=dims("dim"))


def _declare_xsplit(name, min_dims, dim_of):
    def impl(input, indices_or_sections):
        if input.ndim < min_dims:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} "
                               f"dimension, but got a tensor with {input.ndim} dimensions!")
        d = dim_of(input.ndim)
        if not isinstance(indices_or_sections, (list, tuple, Tensor)):
            k = _index(indices_or_sections, "sections")
            if k == 0 or input.shape[d] % k:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but "
                                   f"the size of the dimension {input.shape[d]} is not "
                                   f"divisible by the split_size {k}!")
        return _tensor_split(input, indices_or_sections, d)

    def vjp(g, input_shape, indices_or_sections):
        return _tensor_split_vjp(g, input_shape, indices_or_sections, dim_of(len(input_shape)))

    def jvp(t_input, indices_or_sections):
        return getattr(t_input, name)(indices_or_sections)

    impl.__name__ = "_" + name
    return defop(name, impl, kind="shape", view=True, vjp=vjp, jvp=jvp, interpreted=_SPLITS)


hsplit = _declare_xsplit("hsplit", 1, lambda nd: 1 if nd >= 2 else 0)
vsplit = _declare_xsplit("vsplit", 2, lambda nd: 0)
dsplit = _declare_xsplit("dsplit", 3, lambda nd: 2)


def _unbind(input, dim=0):
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, input.ndim)
    head = (slice(None),) * d
    # the trailing Ellipsis keeps 0-d pieces arrays (views), not NumPy scalars
    return tuple(input[head + (i, Ellipsis)] for i in range(input.shape[d]))


unbind = defop("unbind", _unbind, kind="shape", view=True,
               vjp=lambda g, dim: stack([g] if isinstance(g, Tensor) else list(g), dim),
               jvp=lambda t_input, dim: t_input.unbind(dim), interpreted=_SPLITS,
               batch=dims("dim"))
