"""View and reshape ops (view, reshape, expand, transpose, permute, squeeze, diagonal, narrow,
select, movedim, flatten, atleast_nd, ...): declarations for the registry.

View ops (`view=True`) return NumPy views, so the result shares storage and version counter with
its base, as in PyTorch; ops that are views only when strides allow it (reshape, flatten, ravel)
are declared `view="maybe"`. Gradients of ops that pick part of a tensor (narrow, select,
diagonal) scatter into zeros through small internal ops that are themselves differentiable.
Joining and splitting ops live in `join.py`; copying rearrangements (flip, roll, repeat, ...) in
`reorder.py`.
"""
from __future__ import annotations

import operator
import warnings

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .. import _dtype as dt
from .._tensor import _LEGACY_NAMES, Size, Tensor
from ._util import ON_ARRAYS, wrap_dim
from . import infer
from .registry import _norm_varargs, _pt_name, defop
from .batching import FLAT, LEADING, LIKE_SHAPE, PERMUTE, SQUEEZE, dims, sizes

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"
_SQUEEZE = "the result's rank depends on run-time sizes (which dims are 1): no CPU lowering"

__all__ = ["reshape", "broadcast_to", "broadcast_tensors", "broadcast_shapes", "flatten",
           "unflatten", "ravel", "squeeze", "unsqueeze", "permute", "transpose", "swapaxes",
           "swapdims", "movedim", "moveaxis", "t", "adjoint", "diagonal", "narrow", "select",
           "atleast_1d", "atleast_2d", "atleast_3d"]


# --- argument helpers ----------------------------------------------------------------------------
def _index(x, what: str = "argument") -> int:
    """An int argument (Python int, NumPy integer or one-element integer tensor)."""
    if isinstance(x, bool) or isinstance(x, (float, np.floating)):
        raise TypeError(f"{what} must be int, not {type(x).__name__}")
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"{what} must be int, not {type(x).__name__}") from None


def _ints(x, what: str = "argument") -> tuple:
    """An int-or-sequence-of-ints argument as a tuple."""
    if isinstance(x, (list, tuple, Size)):
        return tuple(_index(v, what) for v in x)
    if isinstance(x, Tensor) and x.ndim == 1:
        return tuple(int(v) for v in x._data)
    return (_index(x, what),)


def _dup_check(wrapped) -> None:
    seen = set()
    for d in wrapped:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)


def _legacy(arr) -> str:
    return _LEGACY_NAMES[dt.from_numpy_dtype(arr.dtype)]


# --- reshape / view ------------------------------------------------------------------------------
def _infer_shape(shape, numel: int) -> tuple:
    """PyTorch's infer_size: at most one -1, no other negative sizes, product must match."""
    if len(shape) == 1 and shape[0] == -1:  # the common flatten, `view(-1)`: always valid
        return (numel,)
    n = 1
    neg = None
    for i, s in enumerate(shape):  # the common cases: valid sizes, at most one -1
        if s >= 0:
            n *= s
        elif s == -1 and neg is None:
            neg = i
        else:
            break
    else:
        if neg is None:
            if n == numel:
                return tuple(shape)
        elif n and not numel % n:  # (`view(1, -1)`: the -1 as the checks below infer it)
            shape = list(shape)
            shape[neg] = numel // n
            return tuple(shape)
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    for i, s in enumerate(shape):
        if s < -1:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {shape}")
    known = 1
    for s in shape:
        if s != -1:
            known *= s
    if neg:
        if known == 0:
            if numel == 0:
                raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {shape} "
                                   "because the unspecified dimension size -1 can be any value "
                                   "and is ambiguous")
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
        if numel % known:
            raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError(f"shape '{shape}' is invalid for input of size {numel}")
    return tuple(shape)


def _reshape(input, shape):
    # sizes with no -1 to infer: NumPy's reshape first. When it gives exactly `shape`, every
    # size was valid (none negative, their product the size: the case where `_infer_shape`
    # returns `shape` itself), so its checks are skipped (~10% of a small reshape); otherwise
    # (NumPy infers any negative size; an error) `_infer_shape` decides, in PyTorch's words
    if -1 not in shape:
        try:
            r = input.reshape(shape)
        except Exception:  # noqa: BLE001  (any array type's error: the checks below raise)
            r = None
        if r is not None and r.shape == shape:
            return r
    return input.reshape(_infer_shape(shape, input.size))


def _reshape_vjp(g, input_shape):
    # (an array's reshape in a first-order CPU backward: the declarations' ON_ARRAYS)
    return g.reshape(input_shape)


reshape = defop("reshape", _reshape, kind="shape", view="maybe", varargs="shape",
                vjp=_reshape_vjp, extra=ON_ARRAYS,
                jvp=lambda t_input, shape: t_input.reshape(shape), infer=infer.sized(),
                batch=sizes("shape"))


_VIEW_SHAPES: dict = {}  # (size, numel) -> `_infer_shape(size, numel)` (valid sizes only)
_MEMO_MAX = 4096  # entries kept by this module's memos (beyond them: computed per call)


def _view(input, size):
    # `view(-1)`, the common flatten, is always valid and NumPy infers its -1 as PyTorch does:
    # no `_infer_shape` call (~5% of a small view)
    if size == (-1,):
        shape = size
    elif type(size) is tuple:  # (the sizes `_infer_shape` made of valid ones, memoised:
        n = input.size         # `view(1, -1)` in a loop)
        shape = _VIEW_SHAPES.get((size, n))
        if shape is None:
            shape = _infer_shape(size, n)
            if len(_VIEW_SHAPES) < _MEMO_MAX:
                _VIEW_SHAPES[(size, n)] = shape
    else:  # (a list: the compiler's sizes)
        shape = _infer_shape(size, input.size)
    if type(input) is np.ndarray:
        # the plain method is the cheapest reshape; its result is a view exactly when its base
        # is the owner of input's memory (see registry._is_view_of); else `copy=False` decides
        r = input.reshape(shape)
        b = r.base
        if b is input or b is input.base and b is not None:
            return r
    try:
        if type(input) is np.ndarray:  # the method skips np.reshape's dispatch layer
            return input.reshape(shape, copy=False)  # raises instead of copying
        return np.reshape(input, shape, copy=False)
    except ValueError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None


def _view_args(input, size, kwargs, name):
    """`Tensor.view`'s arguments other than plain int sizes (the registry's `varargs_norm`):
    a dtype answers the call (`x.view(dtype)`: the same bytes as another dtype), anything
    else is normalised as every varargs op's sizes are."""
    if len(size) == 1 and isinstance(size[0], dt.dtype) and not kwargs:
        return _view_dtype(input, size[0])
    if not size and set(kwargs) == {"dtype"}:
        return _view_dtype(input, kwargs["dtype"])
    return _norm_varargs(size, kwargs, name)


_view_shape = defop("view", _view, kind="shape", view=True, varargs="size", function=False,
                    method=False, vjp=_reshape_vjp,
                    jvp=lambda t_input, size: t_input.reshape(size), infer=infer.sized(),
                    batch=sizes("size"), extra={"varargs_norm": _view_args, **ON_ARRAYS},
                    doc="`Tensor.view(*shape)` (a view with a new shape) or `Tensor.view(dtype)` "
                        "(the same bytes).")


def _view_dtype_impl(input, dtype):
    src = dt.from_numpy_dtype(input.dtype)
    if dtype.itemsize != src.itemsize:
        what = f"to view {_pt_name(src)} as {_pt_name(dtype)} (different element sizes)"
        if input.ndim == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        stride = input.strides[-1] // src.itemsize
        if stride != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {stride}")
        if dtype.itemsize > src.itemsize:
            ratio = dtype.itemsize // src.itemsize
            if input.shape[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                                   f"{input.shape[-1]}")
            for i in range(input.ndim - 1):
                st = input.strides[i] // src.itemsize
                if st % ratio:
                    raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, "
                                       f"but got {st}")
    return input.view(dtype.np)


# reinterpreting bits is not differentiable (PyTorch: view.dtype has no derivative)
_view_dtype = defop("_view_dtype", _view_dtype_impl, kind="shape", view=True, nondiff=True,
                    method=False, interpreted=_NOT_YET,
                    batch=LEADING)


def _view_as(input, other):
    return _view(input, other.shape)


defop("view_as", _view_as, tensors=("input", "other"), kind="shape", view=True,
      function=False, vjp=lambda g, input_shape: (g.reshape(input_shape), None),
      jvp=lambda t_input, other_shape: t_input.reshape(other_shape), infer=infer.like(),
      batch=LIKE_SHAPE, shape_only=("other",))


def _reshape_as(input, other):
    return input.reshape(other.shape)


defop("reshape_as", _reshape_as, tensors=("input", "other"), kind="shape", view="maybe",
      function=False, vjp=lambda g, input_shape: (g.reshape(input_shape), None),
      jvp=lambda t_input, other_shape: t_input.reshape(other_shape), infer=infer.like(),
      batch=LIKE_SHAPE, shape_only=("other",))


# --- broadcasting views -------------------------------------------------------------------------
# `_expand`'s common call memoised: (shape, strides, itemsize, size) of a contiguous, non-empty
# array -> the result's (shape, strides, read-only): `expand` in a Python loop (a CRF's
# `view(1, -1).expand(1, n)`) repeats a few calls, whose checks cost more than the view itself
_EXPANDS: dict = {}


def _expand(input, size):
    if type(input) is np.ndarray:
        key = (input.shape, input.strides, input.itemsize, size)
        try:
            hit = _EXPANDS.get(key)
        except TypeError:  # (an unhashable size, a list: not memoised)
            hit = key = None
        if hit is not None:
            target, strides, ro = hit
            try:  # (`_broadcast_view`, inline)
                out = np.ndarray(target, input.dtype, input, 0, strides)
            except (TypeError, ValueError, BufferError):
                pass
            else:
                if ro:
                    out.setflags(write=False)
                return out
    else:
        key = None
    if type(input) is np.ndarray and input.size and input.flags.c_contiguous:
        # the common call (valid sizes, a -1 only on an existing dim): the target size and
        # strides in one pass, as the checks below and `np.broadcast_to` make them; anything
        # else (an error, a size 0) falls through to them
        lead = len(size) - input.ndim
        if lead >= 0:
            strides, ro = [0] * lead, False
            for s in size[:lead]:
                if s < 1:
                    break
                ro = ro or s > 1
            else:
                for n, s, st in zip(input.shape, size[lead:], input.strides):
                    if s == n or s == -1:
                        strides.append(0 if n == 1 else st)
                    elif n == 1 and s > 0:
                        strides.append(0)
                        ro = True
                    else:
                        break
                else:
                    target = size if -1 not in size else tuple(
                        n if s == -1 else s for n, s in zip((0,) * lead + input.shape, size))
                    out = _broadcast_view(input, target, strides, ro)
                    if out is not None:
                        if key is not None and len(_EXPANDS) < _MEMO_MAX:
                            _EXPANDS[key] = (target, tuple(strides), ro)
                        return out
    nd = len(size)
    if nd < input.ndim:
        raise RuntimeError(f"expand({_legacy(input)}{{{list(input.shape)}}}, size={list(size)}): "
                           f"the number of sizes provided ({nd}) must be greater or equal to the "
                           f"number of dimensions in the tensor ({input.ndim})")
    lead = nd - input.ndim
    target = [0] * nd
    for i in range(nd - 1, -1, -1):  # PyTorch checks (and reports) from the last dim
        s = size[i]
        cur = input.shape[i - lead] if i >= lead else None
        if s == -1:
            if cur is None:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a "
                                   f"leading, non-existing dimension {i}")
            s = cur
        elif s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
        elif cur is not None and cur != 1 and cur != s:
            raise RuntimeError(f"The expanded size of the tensor ({s}) must match the existing "
                               f"size ({cur}) at non-singleton dimension {i}.  Target sizes: "
                               f"{list(size)}.  Tensor sizes: {list(input.shape)}")
        target[i] = s
    target = tuple(target)
    out = np.broadcast_to(input, target)
    # NumPy makes every broadcast read-only; PyTorch only refuses in-place writes where elements
    # overlap (a stride-0 dim longer than 1), so keep the other expansions writable
    if all(st or n <= 1 for st, n in zip(out.strides, out.shape)):
        out = as_strided(input, out.shape, out.strides, writeable=True)
    return out


def _broadcast_view(input: np.ndarray, target: tuple, strides: list, ro: bool):
    """`_expand`'s result made directly over a contiguous input's buffer (np.broadcast_to and
    as_strided cost microseconds in Python), with the strides np.broadcast_to gives (0 for new
    and for size-1 dims): read-only exactly where `_expand` makes it so (`ro`: a stride-0 dim
    longer than 1); None when NumPy refuses the buffer (then the general way)."""
    try:  # (positional arguments: NumPy parses keywords to the constructor slowly)
        out = np.ndarray(target, input.dtype, input, 0, strides)
    except (TypeError, ValueError, BufferError):
        return None
    if ro:
        out.setflags(write=False)
    return out  # (a read-only input's buffer already gives a read-only array)


# the gradient of a broadcast is summed back to the input's shape by autograd itself
defop("expand", _expand, kind="shape", view=True, varargs="size", function=False,
      vjp=lambda g: g, jvp=lambda t_input, size: t_input.expand(size), infer=infer.sized(),
      batch=sizes("size", "expand"))


def _expand_as(input, other):
    return _expand(input, other.shape)


defop("expand_as", _expand_as, tensors=("input", "other"), kind="shape", view=True,
      function=False, vjp=lambda g: (g, None),
      jvp=lambda t_input, other_shape: t_input.expand(other_shape), infer=infer.like(),
      batch=LIKE_SHAPE, shape_only=("other",))


def _broadcast_to(input, size):
    return _expand(input, _ints(size, "size"))


broadcast_to = defop("broadcast_to", _broadcast_to, kind="shape", view=True, vjp=lambda g: g,
                     jvp=lambda t_input, size: t_input.broadcast_to(size), infer=infer.sized(),
                     batch=sizes("size", "expand"))


def broadcast_shapes(*shapes) -> Size:
    """The shape all `shapes` (ints or sequences) broadcast to, without making tensors."""
    shapes = [_ints(s, "shape") for s in shapes]
    result = [1] * max((len(s) for s in shapes), default=0)
    for k, shape in enumerate(shapes):
        for i in range(-1, -len(shape) - 1, -1):
            if shape[i] < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension "
                                   f"({shape[i]}): ({shape[i]})")
            if shape[i] == 1 or shape[i] == result[i]:
                continue
            if result[i] != 1:
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} "
                                   f"at {i}! Mismatching argument at index {k} had {shape}; but "
                                   f"expected shape should be broadcastable to {result}")
            result[i] = shape[i]
    return Size(result)


def _infer_size(shapes) -> tuple:
    """Pairwise broadcast with PyTorch's tensor-a/tensor-b message (used by broadcast_tensors)."""
    out = ()
    for shape in shapes:
        n = max(len(out), len(shape))
        a = (1,) * (n - len(out)) + tuple(out)
        b = (1,) * (n - len(shape)) + tuple(shape)
        res = []
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y and x != 1 and y != 1:
                raise RuntimeError(f"The size of tensor a ({x}) must match the size of tensor b "
                                   f"({y}) at non-singleton dimension {i}")
            res.append(y if x == 1 else x)
        out = tuple(res)
    return out


def broadcast_tensors(*tensors) -> tuple:
    """Expand every tensor to their common broadcast shape (views of the inputs)."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got "
                            f"{type(t).__name__}")
    shape = _infer_size([t.shape for t in tensors])
    return tuple(t.expand(shape) for t in tensors)


# --- flatten / unflatten / ravel / squeeze / unsqueeze --------------------------------------------
def _flatten(input, start_dim=0, end_dim=-1):
    nd = input.ndim
    s, e = wrap_dim(start_dim, nd), wrap_dim(end_dim, nd)
    if nd == 0:
        return input.reshape(1)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input.view()
    n = 1
    for k in input.shape[s:e + 1]:
        n *= k
    return input.reshape(input.shape[:s] + (n,) + input.shape[e + 1:])


flatten = defop("flatten", _flatten, kind="shape", view="maybe",
                vjp=lambda g, input_shape: g.reshape(input_shape),
                jvp=lambda t_input, start_dim, end_dim: t_input.flatten(start_dim, end_dim),
                infer=infer.flatten,
                batch=dims("start_dim", "end_dim"))


def _unflatten(input, dim, sizes):
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, input.ndim)
    sizes = _ints(sizes, "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[d]
    if -1 in sizes:
        sizes = _infer_shape(sizes, n)
    else:
        prod = 1
        for s in sizes:
            prod *= s
        if prod != n:
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                               f"size of dim {d} ({n}) in the input tensor")
    return input.reshape(input.shape[:d] + tuple(sizes) + input.shape[d + 1:])


unflatten = defop("unflatten", _unflatten, kind="shape", view="maybe",
                  vjp=lambda g, input_shape: g.reshape(input_shape),
                  jvp=lambda t_input, dim, sizes: t_input.unflatten(dim, sizes),
                  interpreted=_NOT_YET,
                  batch=dims("dim"))

ravel = defop("ravel", lambda input: input.reshape(-1), kind="shape", view="maybe",
              vjp=lambda g, input_shape: g.reshape(input_shape),
              jvp=lambda t_input: t_input.ravel(), infer=infer.ranked(1),
              batch=FLAT)


def _squeeze(input, dim=None):
    nd = input.ndim
    if dim is None:
        axes = tuple(i for i, s in enumerate(input.shape) if s == 1)
    else:
        dims = _ints(dim, "dim")
        axes = tuple(wrap_dim(d, nd) for d in dims)
        _dup_check(axes)
        if nd == 0:
            return input.view()
        # dims whose size is not 1 are left alone, as in PyTorch
        axes = tuple(a for a in axes if input.shape[a] == 1)
    return np.squeeze(input, axis=axes)


squeeze = defop("squeeze", _squeeze, kind="shape", view=True,
                vjp=lambda g, input_shape: g.reshape(input_shape),
                jvp=lambda t_input, dim: t_input.squeeze(dim),
                interpreted=_SQUEEZE,
                batch=SQUEEZE)


def _unsqueeze(input, dim):
    return np.expand_dims(input, wrap_dim(dim, input.ndim + 1))


unsqueeze = defop("unsqueeze", _unsqueeze, kind="shape", view=True,
                  vjp=lambda g, input_shape: g.reshape(input_shape),
                  jvp=lambda t_input, dim: t_input.unsqueeze(dim), infer=infer.rank_delta(1),
                  batch=dims("dim", extra=1))


# --- dimension reordering -------------------------------------------------------------------------
def _transpose(input, dim0, dim1):
    if input.ndim == 0:
        wrap_dim(dim0, 0), wrap_dim(dim1, 0)
        return input.view()
    return np.swapaxes(input, wrap_dim(dim0, input.ndim), wrap_dim(dim1, input.ndim))


_TRANSPOSE = dict(kind="shape", view=True,
                  vjp=lambda g, dim0, dim1: g.transpose(dim0, dim1),
                  jvp=lambda t_input, dim0, dim1: t_input.transpose(dim0, dim1))
transpose = defop("transpose", _transpose, **_TRANSPOSE, infer=infer.same,
                  batch=dims("dim0", "dim1"))
swapaxes = defop("swapaxes", lambda input, axis0, axis1: _transpose(input, axis0, axis1),
                 kind="shape", view=True,
                 vjp=lambda g, axis0, axis1: g.transpose(axis0, axis1),
                 jvp=lambda t_input, axis0, axis1: t_input.transpose(axis0, axis1),
                 interpreted=_NOT_YET,
                 batch=dims("axis0", "axis1"))
swapdims = defop("swapdims", _transpose, **_TRANSPOSE, interpreted=_NOT_YET,
                 batch=dims("dim0", "dim1"))


def _permute(input, dims):
    if len(dims) != input.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {input.ndim} is not equal to len(dims) = {len(dims)}")
    axes = [wrap_dim(d, input.ndim) for d in dims]
    if len(set(axes)) != len(axes):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return np.transpose(input, axes)


def _permute_vjp(g, dims):
    n = len(dims)
    inv = [0] * n
    for i, d in enumerate(dims):
        inv[d % n] = i
    return g.permute(inv)


permute = defop("permute", _permute, kind="shape", view=True, varargs="dims",
                vjp=_permute_vjp, jvp=lambda t_input, dims: t_input.permute(dims), infer=infer.same,
                batch=PERMUTE)


def _movedim(input, source, destination):
    src, dst = _ints(source, "source"), _ints(destination, "destination")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    nd = input.ndim
    s = [wrap_dim(d, nd) for d in src]
    d = [wrap_dim(k, nd) for k in dst]
    if len(set(s)) != len(s):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(d)) != len(d):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if nd == 0:
        return input.view()
    return np.moveaxis(input, s, d)


movedim = defop("movedim", _movedim, kind="shape", view=True,
                vjp=lambda g, source, destination: g.movedim(destination, source),
                jvp=lambda t_input, source, destination: t_input.movedim(source, destination),
                interpreted=_NOT_YET,
                batch=dims("source", "destination"))
moveaxis = defop("moveaxis", _movedim, kind="shape", view=True,
                 vjp=lambda g, source, destination: g.movedim(destination, source),
                 jvp=lambda t_input, source, destination: t_input.movedim(source, destination),
                 interpreted=_NOT_YET,
                 batch=dims("source", "destination"))


def _t(input):
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                           f"{input.ndim}D")
    return input.T if input.ndim == 2 else input.view()


t = defop("t", _t, kind="shape", view=True, vjp=lambda g: g.t(), jvp=lambda t_input: t_input.t(),
          infer=infer.same,
          batch=FLAT)


def _adjoint(input):
    if input.ndim == 1:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           "matrices. Got 1-D tensor.")
    if input.ndim == 0:
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().",
                      UserWarning, stacklevel=3)
        r = input.view()
    else:
        r = np.swapaxes(input, -1, -2)
    # no lazy conjugate bit here: complex inputs get a conjugated copy
    return r.conj() if r.dtype.kind == "c" else r


adjoint = defop("adjoint", _adjoint, kind="shape", view="maybe", vjp=lambda g: g.adjoint(),
                jvp=lambda t_input: t_input.adjoint(), interpreted=_NOT_YET,
                batch=LEADING)


# --- picking part of a tensor -----------------------------------------------------------------
def _diag_view(a, offset, dim1, dim2):
    """A writable strided view of the diagonal (NumPy's own `diagonal` is read-only)."""
    nd = a.ndim
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n1, n2 = a.shape[d1], a.shape[d2]
    if offset >= 0:
        length, start = max(0, min(n1, n2 - offset)), (0, offset)
    else:
        length, start = max(0, min(n1 + offset, n2)), (-offset, 0)
    if length:
        idx = [slice(None)] * nd
        idx[d1], idx[d2] = slice(start[0], None), slice(start[1], None)
        a = a[tuple(idx)]
    keep = [i for i in range(nd) if i not in (d1, d2)]
    shape = tuple(a.shape[i] for i in keep) + (length,)
    strides = tuple(a.strides[i] for i in keep) + (a.strides[d1] + a.strides[d2],)
    return as_strided(a, shape, strides, writeable=True)


def _diagonal(input, offset=0, dim1=0, dim2=1):
    return _diag_view(input, _index(offset, "offset"), dim1, dim2)


def _diagonal_backward_impl(grad, input_shape, offset, dim1, dim2):
    out = np.zeros(input_shape, grad.dtype)
    _diag_view(out, offset, dim1, dim2)[...] = grad
    return out


_diagonal_backward = defop(
    "_diagonal_backward", _diagonal_backward_impl, tensors=("grad",), kind="shape",
    method=False,
    vjp=lambda g, offset, dim1, dim2: g.diagonal(offset, dim1, dim2),
    jvp=lambda t_grad, input_shape, offset, dim1, dim2:
    _diagonal_backward(t_grad, input_shape, offset, dim1, dim2), interpreted=_NOT_YET,
    batch=dims("dim1", "dim2", extra=1, shape="input_shape"))

diagonal = defop("diagonal", _diagonal, kind="shape", view=True,
                 vjp=lambda g, input_shape, offset, dim1, dim2:
                 _diagonal_backward(g, input_shape, offset, dim1, dim2),
                 jvp=lambda t_input, offset, dim1, dim2: t_input.diagonal(offset, dim1, dim2),
                 interpreted=_NOT_YET,
                 batch=dims("dim1", "dim2"))


def _narrow_backward_impl(grad, input_shape, dim, start):
    out = np.zeros(input_shape, grad.dtype)
    idx = [slice(None)] * len(input_shape)
    idx[dim] = slice(start, start + grad.shape[dim])
    out[tuple(idx)] = grad
    return out


# zeros of input_shape with grad written at [start, start + len) along dim
_narrow_backward = defop(
    "_narrow_backward", _narrow_backward_impl, tensors=("grad",), kind="shape", method=False,
    vjp=lambda g, grad_shape, dim, start: g.narrow(dim, start, grad_shape[dim]),
    jvp=lambda t_grad, input_shape, dim, start:
    _narrow_backward(t_grad, input_shape, dim, start), infer=infer.same,
    batch=dims("dim", shape="input_shape"))


def _narrow_start(shape, dim, start):
    n = shape[dim]
    start = _index(start, "start")
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got "
                         f"{start})")
    return start % n if start < 0 else start


def _narrow(input, dim, start, length):
    if input.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim)
    s = _narrow_start(input.shape, d, start)
    length = _index(length, "length")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if s + length > input.shape[d]:
        raise RuntimeError(f"start ({s}) + length ({length}) exceeds dimension size "
                           f"({input.shape[d]}).")
    idx = [slice(None)] * input.ndim
    idx[d] = slice(s, s + length)
    return input[tuple(idx)]


def _narrow_vjp(g, input_shape, dim, start):
    d = wrap_dim(dim, len(input_shape))
    return _narrow_backward(g, input_shape, d, _narrow_start(input_shape, d, start))


narrow = defop("narrow", _narrow, kind="shape", view=True, vjp=_narrow_vjp,
               jvp=lambda t_input, dim, start, length: t_input.narrow(dim, start, length),
               infer=infer.same,
               batch=dims("dim"))


def _select_index(shape, dim, index):
    n = shape[dim]
    index = _index(index, "index")
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(shape)} at dimension {dim}")
    return index % n


def _select(input, dim, index):
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, input.ndim)
    i = _select_index(input.shape, d, index)
    # the trailing Ellipsis keeps a 0-d result an array (a view), not a NumPy scalar
    return input[(slice(None),) * d + (i, Ellipsis)]


def _select_vjp(g, input_shape, dim, index):
    # zeros of the input's shape with g written at row `index`, by ops that take the index as
    # a value: the rule never converts it, so a run-time index (an int argument, a loop
    # counter) stays one in a compiled backward instead of being baked by the trace
    from .factories import zeros
    from .index_write import _select_write
    return _select_write(zeros(input_shape, g.dtype), g, dim, index)


select = defop("select", _select, kind="shape", view=True, vjp=_select_vjp,
               extra={"runtime_attrs": ("dim", "index")},
               jvp=lambda t_input, dim, index: t_input.select(dim, index),
               infer=infer.rank_delta(-1),
               batch=dims("dim"))


# --- atleast_nd (composites of reshape: views of their inputs) -----------------------------------
def _atleast(tensors, n, lift):
    seq = len(tensors) == 1 and isinstance(tensors[0], (list, tuple))
    if seq:
        tensors = tuple(tensors[0])  # a sequence argument always gives a tuple back
    for x in tensors:
        if not isinstance(x, Tensor):
            raise TypeError(f"atleast_{n}d(): argument 'tensors' must be tuple of Tensors, "
                            f"not {type(x).__name__}")
    out = tuple(x if x.ndim >= n else x.reshape(lift(tuple(x.shape))) for x in tensors)
    return out[0] if len(out) == 1 and not seq else out


def atleast_1d(*tensors):
    """Tensors with fewer than 1 dim become shape (1,); others are returned as they are."""
    return _atleast(tensors, 1, lambda s: (1,))


def atleast_2d(*tensors):
    """0-d -> (1, 1), 1-d (n,) -> (1, n); others are returned as they are."""
    return _atleast(tensors, 2, lambda s: (1,) * (2 - len(s)) + s)


def atleast_3d(*tensors):
    """0-d -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1), like NumPy."""
    return _atleast(tensors, 3, lambda s: {0: (1, 1, 1), 1: (1,) + s + (1,)}.get(len(s), s + (1,)))


Tensor.view = _view_shape  # also `x.view(dtype)`: _view_args
