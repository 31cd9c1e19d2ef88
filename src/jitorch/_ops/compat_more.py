"""PyTorch's remaining commonly used top-level functions and Tensor methods (issue 19,
measured by bench/api_coverage.py): `Tensor.unfold`, `isin`, `gcd`/`lcm`, `heaviside`,
`nextafter`, `frexp` (registry ops); and compositions of registry ops with PyTorch's rules:
`unravel_index`, `combinations`, `trapezoid`/`trapz`/`cumulative_trapezoid`, `vander`,
`diagflat`, `deg2rad`/`rad2deg`, `addr`, `renorm`, the `*_scatter` functions,
`split_with_sizes`, `sum_to_size`, `fill_diagonal_`, `resize_`/`resize_as_`, the predicates
(`is_nonzero`, `is_same_size`, `is_signed`, ...), and the top-level in-place forms
(`torch.abs_(x)`) of the Tensor methods that exist.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .. import _dtype as dt, return_types
from .._tensor import Tensor
from .binary import kernel_rule
from .batching import LOOP
from .registry import _write_out, defop
from .ternary import real_only_rule

_NUMPY = "a NumPy kernel: no Numba lowering yet"

__all__ = ["isin", "gcd", "lcm", "heaviside", "nextafter", "frexp", "unravel_index",
           "combinations", "trapezoid", "trapz", "cumulative_trapezoid", "vander", "diagflat",
           "deg2rad", "rad2deg", "addr", "renorm", "select_scatter", "slice_scatter",
           "diagonal_scatter", "split_with_sizes", "is_nonzero", "is_same_size", "is_signed",
           "is_neg", "is_inference", "resolve_neg", "fill", "detach"]


# --- Tensor.unfold: sliding windows along one dim ------------------------------------------------
def _wrap(dim, ndim):
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return dim % n


def _unfold_impl(input, dimension, size, step):
    """Windows of `size` every `step` along `dimension`: that dim becomes the window count and
    a last dim of length `size` is appended (a copy; PyTorch returns a view)."""
    x = input if input.ndim else input.reshape(1)
    d = _wrap(dimension, x.ndim)
    if size > x.shape[d]:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {x.shape[d]} but size "
                           f"is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    n = (x.shape[d] - size) // step + 1
    shape = x.shape[:d] + (n,) + x.shape[d + 1:] + (size,)
    strides = x.strides[:d] + (x.strides[d] * step,) + x.strides[d + 1:] + (x.strides[d],)
    out = np.lib.stride_tricks.as_strided(x, shape, strides, writeable=False)
    return np.ascontiguousarray(out if input.ndim else out.reshape((n, size)[1:] or ()))


def _unfold_backward_impl(grad, input_size, dimension, size, step):
    """The adjoint of `unfold`: each window's gradient added back at its place."""
    input_size = tuple(input_size)
    out = np.zeros(input_size or (1,), grad.dtype)
    d = _wrap(dimension, len(out.shape))
    g = grad if input_size else grad.reshape((-1, size))
    moved = np.moveaxis(out, d, -1)
    gm = np.moveaxis(g, d, -2)  # (..., n, size)
    for k in range(size):
        moved[..., k:k + step * (gm.shape[-2] - 1) + 1:step] += gm[..., k]
    return out.reshape(input_size)


unfold_op = defop(
    "unfold", _unfold_impl, kind="other", function=False, interpreted=_NUMPY, batch=LOOP,
    vjp=lambda g, input_shape, dimension, size, step: _unfold_backward(
        g, tuple(input_shape), dimension, size, step),
    jvp=lambda t_input, dimension, size, step: unfold_op(t_input, dimension, size, step))
_unfold_backward = defop(
    "_unfold_backward", _unfold_backward_impl, tensors=("grad",), kind="other", method=False,
    interpreted=_NUMPY, batch=LOOP,
    vjp=lambda g, dimension, size, step: unfold_op(g, dimension, size, step),
    jvp=lambda t_grad, input_size, dimension, size, step: _unfold_backward(
        t_grad, input_size, dimension, size, step))


# --- elementwise NumPy kernels without gradients -------------------------------------------------
def _isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element of `elements` is in `test_elements`."""
    return np.isin(elements, test_elements, assume_unique=assume_unique, invert=invert)


isin = defop("isin", _isin, tensors=("elements", "test_elements"), kind="other",
             nondiff=True, method=False, interpreted=_NUMPY, batch=LOOP)


def _int_kernel(name, fn):
    def impl(input, other):
        return fn(input, other)
    impl.__name__ = name
    impl.__doc__ = f"Elementwise {name} of integer tensors."
    return defop(name, impl, tensors=("input", "other"), kind="elementwise", nondiff=True,
                 inplace=True, dtype=_integer_rule(name), interpreted=_NUMPY)


def _integer_rule(name):
    def rule(d):
        if d.category != dt.INT:
            raise RuntimeError(f'"{name}_cpu" not implemented for '
                               f"'{_type_word(d)}'")
        return d, d
    return rule


def _type_word(d):
    from .registry import _pt_name
    return _pt_name(d)


gcd = _int_kernel("gcd", np.gcd)
lcm = _int_kernel("lcm", np.lcm)


def _heaviside(input, values):
    """0 where input < 0, 1 where > 0, `values` where input == 0."""
    return np.heaviside(input, values)


heaviside = defop("heaviside", _heaviside, tensors=("input", "values"), kind="elementwise",
                  nondiff=True, inplace=True,
                  dtype=real_only_rule("heaviside is not yet implemented for complex tensors."),
                  interpreted=_NUMPY)


def _nextafter(input, other):
    """The next representable float after input towards other."""
    return np.nextafter(input, other)


nextafter = defop("nextafter", _nextafter, tensors=("input", "other"), kind="elementwise",
                  nondiff=True, inplace=True, dtype=kernel_rule("nextafter_cpu", bool_ok=False,
                                                                int_ok=False, complex_ok=False),
                  interpreted=_NUMPY)


def _frexp(input):
    """(mantissa in (-1, 1), int32 exponent) with input = mantissa * 2 ** exponent."""
    if input.dtype.kind != "f":
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(input)
    return m.astype(input.dtype), e.astype(np.int32)


_frexp_t = return_types.make("frexp", ("mantissa", "exponent"))
_frexp_op = defop("frexp", _frexp, kind="other", nondiff=True, function=False, method=False,
                  interpreted=_NUMPY, batch=LOOP)


def frexp(input, *, out=None):
    """(mantissa, exponent) with input = mantissa * 2 ** exponent."""
    r = _frexp_t(*_frexp_op(input))
    return r if out is None else _write_out(out, r)


Tensor.frexp = frexp


# --- compositions ---------------------------------------------------------------------------------
def _ops():
    import jitorch  # the public namespace, read at call time (no import cycle)
    return jitorch


def unravel_index(indices, shape):
    """The coordinates (a tuple of tensors) of flat `indices` in a tensor of `shape`."""
    ops = _ops()
    if not isinstance(indices, Tensor):
        indices = ops.tensor(indices) if hasattr(ops, "tensor") else _tensor(indices)
    if indices._dtype.category != dt.INT:
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    total = math.prod(shape)
    if indices.numel() and (bool((indices >= total).any()) or bool((indices < -total).any())):
        raise ValueError("'indices' must be in range [-{0}, {1}), but got out-of-bounds "
                         "values".format(total, total))
    flat = ops.remainder(indices, total) if total else indices
    out = []
    for i in range(len(shape)):
        stride = math.prod(shape[i + 1:])
        out.append(ops.remainder(ops.floor_divide(flat, stride), shape[i]))
    return tuple(out)


def _tensor(data):
    from .._creation import tensor
    return tensor(data)


def combinations(input, r=2, with_replacement=False):
    """The length-r combinations of a 1-D tensor's elements, one per row."""
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    gen = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(gen(range(input.shape[0]), r))
    if r == 0:
        return input.new_empty(0)
    if not rows:
        return input.new_empty((0, r))
    idx = _tensor(np.array(rows, np.int64))
    return input.index_select(0, idx.reshape(-1)).reshape(len(rows), r)


def _diffs(t, dim):
    n = t.shape[dim]
    return t.narrow(dim, 1, n - 1) - t.narrow(dim, 0, n - 1)


def _pair_sum(t, dim):
    n = t.shape[dim]
    return t.narrow(dim, 1, n - 1) + t.narrow(dim, 0, n - 1)


def _spacings(x, y, dim):
    """The gaps between the sample points `x` along `dim` of `y`: a 1-D `x` is laid along
    `dim`, a full `x` is differenced along it."""
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[dim] = -1
        return _diffs(x, 0).reshape(shape)
    return _diffs(x, dim)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule along `dim`: sample points `x` or a constant spacing `dx`."""
    if x is not None and dx is not None:
        raise TypeError("trapezoid() received an invalid combination of arguments")
    if y.shape[dim] == 0:
        return y.sum(dim)
    if x is None:
        return _pair_sum(y, dim).sum(dim) * (0.5 * (1 if dx is None else dx))
    if not isinstance(x, Tensor):
        return trapezoid(y, dx=x, dim=dim)
    return (_spacings(x, y, dim) * _pair_sum(y, dim)).sum(dim) * 0.5


def trapz(y, x=None, *, dx=None, dim=-1):
    """PyTorch's older name of `trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral along `dim` (one element shorter)."""
    if x is not None and not isinstance(x, Tensor):
        dx, x = x, None
    if x is None:
        parts = _pair_sum(y, dim) * (0.5 * (1 if dx is None else dx))
    else:
        parts = _spacings(x, y, dim) * _pair_sum(y, dim) * 0.5
    return parts.cumsum(dim)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix of a 1-D tensor: columns x^(N-1) ... x^0 (or increasing)."""
    ops = _ops()
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    if n == 0:
        return x.new_empty((x.shape[0], 0))
    xp = x if x._dtype.category != dt.BOOL else x.to(dt.int64)
    cols = [ops.ones_like(xp)]
    for _ in range(1, n):
        cols.append(cols[-1] * xp)
    out = ops.stack(cols, 1)
    return out if increasing else out.flip(1)


def diagflat(input, offset=0):
    """A 2-D matrix with the flattened input on diagonal `offset`."""
    return _ops().diag(input.reshape(-1), offset)


def _float_of(t):
    return t if t._dtype.category >= dt.FLOAT else t.to(dt.get_default_dtype())


def deg2rad(input):
    """Degrees to radians."""
    return _float_of(input) * (math.pi / 180.0)


def rad2deg(input):
    """Radians to degrees."""
    return _float_of(input) * (180.0 / math.pi)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta * input + alpha * outer(vec1, vec2)."""
    if vec1.dim() != 1 or vec2.dim() != 1:
        raise RuntimeError(f"addr: Expected 1-D argument vec1, but got {vec1.dim()}-D"
                           if vec1.dim() != 1 else
                           f"addr: Expected 1-D argument vec2, but got {vec2.dim()}-D")
    outer = _ops().outer(vec1, vec2)
    outer = outer if alpha == 1 else outer * alpha
    if beta == 0:
        return outer + input * 0 if input.shape != outer.shape else outer.clone()
    return (input if beta == 1 else input * beta) + outer


def renorm(input, p, dim, maxnorm):
    """Each slice along `dim` rescaled to p-norm at most `maxnorm`."""
    if input.dim() <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           f"dimensions")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    d = _wrap(dim, input.dim())
    others = tuple(i for i in range(input.dim()) if i != d)
    norms = input.abs().pow(p).sum(others, keepdim=True).pow(1.0 / p)
    factor = _ops().where(norms > maxnorm, maxnorm / (norms + 1e-7), _ops().ones_like(norms))
    return input * factor


def select_scatter(input, src, dim, index):
    """A copy of input with `src` written at index `index` of `dim`."""
    out = input.clone()
    d = _wrap(dim, input.dim())
    out[(slice(None),) * d + (index,)] = src
    return out


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with `src` written at the slice start:end:step of `dim`."""
    out = input.clone()
    d = _wrap(dim, input.dim())
    out[(slice(None),) * d + (slice(start, end, step),)] = src
    return out


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with `src` written on its diagonal (offset, dim1, dim2)."""
    ops = _ops()
    d1, d2 = _wrap(dim1, input.dim()), _wrap(dim2, input.dim())
    expected = list(ops.diagonal(input, offset, d1, d2).shape)
    if list(src.shape) != expected:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src "
                           f"size = {list(src.shape)}, slice size = {expected}")
    k = np.arange(expected[-1])
    idx = [slice(None)] * input.dim()
    idx[d1] = _tensor(k - min(offset, 0))
    idx[d2] = _tensor(k + max(offset, 0))
    # NumPy's rule for the two index arrays' dim: in place when adjacent, else first
    pos = min(d1, d2) if abs(d1 - d2) == 1 else 0
    out = input.clone()
    out[tuple(idx)] = src.movedim(-1, pos)
    return out


def split_with_sizes(input, split_sizes, dim=0):
    """`split` by a list of sizes (PyTorch's explicit form)."""
    if sum(split_sizes) != input.shape[dim]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[dim]} (input tensor's size at dimension {dim}), but "
                           f"got split_sizes={list(split_sizes)}")
    return input.split(list(split_sizes), dim)


def is_nonzero(input):
    """The truth of a one-element tensor (errors otherwise, as PyTorch)."""
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def is_same_size(input, other):
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input):
    return input._dtype.is_signed


def is_neg(input):
    return False  # no lazy negation bit in jitorch


def is_inference(input):
    return False  # no inference tensors in jitorch (inference_mode makes ordinary ones)


def resolve_neg(input):
    return input


def _sum_to_size(self, *size):
    """The sum of this tensor down to `size` (which it must broadcast from)."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    lead = self.dim() - len(size)
    if lead < 0 or any(s != 1 and s != self.shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, self.shape))}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and self.shape[lead + i] != 1)
    out = self.sum(dims, keepdim=True) if dims else self
    return out.reshape(size)


def _fill_diagonal_(self, fill_value, wrap=False):
    """Fill the main diagonal in place (all dims equal beyond 2-D; `wrap` repeats it down a
    tall matrix every n + 1 rows, as NumPy)."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = np.zeros(tuple(self.shape), bool)
    if self.dim() == 2:
        np.fill_diagonal(mask, True, wrap=wrap)
    else:
        idx = np.arange(self.shape[0])
        mask[(idx,) * self.dim()] = True
    return self.masked_fill_(_tensor(mask), fill_value)


def _resize_(self, *sizes, memory_format=None):
    """Resize in place, keeping the leading elements (new ones are uninitialised: zeros)."""
    size = tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) \
        else tuple(sizes)
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    flat = self._data.reshape(-1)
    n = math.prod(size)
    new = np.zeros(n, flat.dtype)
    new[:min(n, flat.size)] = flat[:min(n, flat.size)]
    self._data = new.reshape(size)
    self._version[0] += 1
    return self


def _resize_as_(self, other, memory_format=None):
    return _resize_(self, tuple(other.shape))


def _addr_(self, vec1, vec2, *, beta=1, alpha=1):
    return self.copy_(addr(self, vec1, vec2, beta=beta, alpha=alpha))


def _renorm_(self, p, dim, maxnorm):
    return self.copy_(renorm(self, p, dim, maxnorm))


def _deg2rad_(self):
    return self.copy_(deg2rad(self))


def _rad2deg_(self):
    return self.copy_(rad2deg(self))


for _name, _fn in (("diagflat", diagflat), ("deg2rad", deg2rad),
                   ("rad2deg", rad2deg), ("addr", addr), ("renorm", renorm),
                   ("select_scatter", select_scatter), ("slice_scatter", slice_scatter),
                   ("diagonal_scatter", diagonal_scatter),
                   ("split_with_sizes", split_with_sizes), ("is_nonzero", is_nonzero),
                   ("is_same_size", is_same_size), ("is_neg", is_neg),
                   ("is_inference", is_inference), ("resolve_neg", resolve_neg),
                   ("sum_to_size", _sum_to_size), ("fill_diagonal_", _fill_diagonal_),
                   ("resize_", _resize_), ("resize_as_", _resize_as_), ("addr_", _addr_),
                   ("renorm_", _renorm_), ("deg2rad_", _deg2rad_), ("rad2deg_", _rad2deg_)):
    setattr(Tensor, _name, _fn)


def fill(input, value):
    """A tensor like input filled with value (torch.fill, the out-of-place fill_)."""
    return _ops().full_like(input, value)


def detach(input):
    return input.detach()


def _inplace_aliases() -> dict:
    """torch.<name>_(x, ...) for each in-place Tensor method PyTorch also exports at the top
    level (abs_, sigmoid_, clamp_, zero_, ...)."""
    names = ("abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ "
             "asinh_ atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ conj_physical_ cos_ "
             "cosh_ deg2rad_ erf_ erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ frac_ i0_ log10_ "
             "log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ reciprocal_ round_ "
             "rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_ "
             "gcd_ lcm_ detach_").split()
    out = {}
    for n in names:
        meth = getattr(Tensor, n, None)
        if meth is not None:
            out[n] = meth
    return out


_ALIASES = _inplace_aliases()
globals().update(_ALIASES)
__all__ += sorted(_ALIASES)
