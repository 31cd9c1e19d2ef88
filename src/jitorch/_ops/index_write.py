"""The functional write ops of scripted code: `_index_write` and `_select_write`.

`x[idx] = v` is functional in the IR (script/frontend/index.py): the new value of `x` is
`_index_write(x, v, basic)` for a static basic index, and `_select_write(x, v, dim, i)` for a
row picked by a run-time int (a loop counter). Both return a copy of `x` with the region
overwritten (the compiled program writes in place where the alias analysis allows it:
script/runtime/alias.py). `_select_write` is also how `select`'s VJP writes the grad into zeros,
with the index taken as a value, so a run-time index stays one in a compiled backward. Lowered by
script/targets/cpu/lower_write.py.
"""
from __future__ import annotations

import numpy as np

from . import infer
from .indexing import _np_basic, check_expand
from .registry import defop
from .shape import _legacy
from .batching import LOOP

_WHOLE = (None, None, None)


def _check_basic(shape: tuple, basic: tuple) -> None:
    """PyTorch's IndexErrors for a static basic index on a tensor of `shape`."""
    d = 0
    for b in basic:
        if b is None:
            continue
        if d >= len(shape):
            raise IndexError(f"too many indices for tensor of dimension {len(shape)}")
        if isinstance(b, int) and not -shape[d] <= b < shape[d]:
            raise IndexError(f"index {b} is out of bounds for dimension {d} with size "
                             f"{shape[d]}")
        d += 1


def _index_write_impl(input, values, basic, cast_check=False):
    """A copy of `input` with `input[basic] = values` applied (values broadcast like
    `Tensor.__setitem__`: leading size-1 dims dropped, then expanded; cast to input's dtype).
    `cast_check`: the write is an in-place op's result (`x.add_(y)`), which PyTorch refuses to
    cast to a lower dtype category (float into an integer tensor)."""
    _check_basic(input.shape, basic)
    if cast_check:
        _check_cast(np.asarray(values).dtype, input.dtype)
    if not isinstance(values, np.ndarray):  # a number: `fill_`'s checked conversion
        from .. import _dtype as dt
        from .._creation import _convert_scalar
        values = _convert_scalar(values, dt.from_numpy_dtype(input.dtype))
    out = np.array(input, copy=True)
    region = out[_np_basic(basic)]
    vals = np.asarray(values)
    k = 0
    while k < vals.ndim and vals.shape[k] == 1:  # as Tensor.__setitem__ drops them
        k += 1
    if k:
        vals = vals.reshape(vals.shape[k:])
    check_expand(vals.shape, region.shape, lambda: _legacy(vals))  # eager's errors
    if vals.dtype.kind == "c" and out.dtype.kind != "c":
        raise RuntimeError(f"result type ComplexFloat can't be cast to the desired output type "
                           f"{out.dtype.name}")
    region[...] = vals
    return out


def _check_cast(src, dst) -> None:
    from .. import _dtype as dt
    from .registry import _pt_name
    a, b = dt.from_numpy_dtype(src), dt.from_numpy_dtype(dst)
    if not dt.can_cast(a, b):
        raise RuntimeError(f"result type {_pt_name(a)} can't be cast to the desired output "
                           f"type {_pt_name(b)}")


def _index_write_vjp(g, basic):
    # the overwritten region gets no gradient; the values get the region's (autograd reduces
    # it to their shape when they were broadcast)
    return _index_write(g, 0, basic), _index_write_region(g, basic)


def _index_write_region(g, basic):
    from .indexing import _index_view
    return _index_view(g, basic) if basic else g


_index_write = defop(
    "_index_write", _index_write_impl, tensors=("input", "values"), kind="index",
    method=False, vjp=_index_write_vjp, infer=infer.same,
    jvp=lambda t_input, t_values, basic: _index_write(t_input, t_values, basic),
    batch=LOOP)


def _select_write_impl(input, values, dim, index):
    """A copy of `input` with `input.select(dim, index) = values` (index known at run time)."""
    # plain ints first: the autodiff tracer passes stand-ins that refuse comparisons
    dim, index = int(dim), int(index)
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    if not -input.ndim <= dim < input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-input.ndim}, {input.ndim - 1}], but got {dim})")
    dim %= input.ndim
    size = input.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}")
    return _index_write_impl(input, values, (_WHOLE,) * dim + (index,))


_select_write = defop(
    "_select_write", _select_write_impl, tensors=("input", "values"), kind="index",
    method=False, extra={"runtime_attrs": ("dim", "index")},
    vjp=lambda g, dim, index: (_select_write(g, 0, dim, index), g.select(dim, index)),
    jvp=lambda t_input, t_values, dim, index: _select_write(t_input, t_values, dim, index),
    infer=infer.same,
    batch=LOOP)
