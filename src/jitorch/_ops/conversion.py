"""Conversion and copy ops: dtype casts, clone, contiguous, copy_, fill_, zero_, and the
`copy_slices` node that in-place writes through views use (see autograd/inplace.py)."""
from __future__ import annotations

import warnings

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ..autograd import grad_mode
from ..autograd.inplace import check_inplace_allowed, check_writable, rebase_history, \
    write_result
from . import infer
from .registry import defop
from .batching import ELEMENTWISE, sizes

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_NOT_YET = "no CPU lowering yet"

__all__ = ["clone"]


def _to_dtype_impl(input, dtype):
    if input.dtype.kind == "c" and dtype is dt.bool:
        return input != 0  # nonzero test on both parts, silently, as in PyTorch
    if input.dtype.kind == "c" and dtype.category != dt.COMPLEX:
        warnings.warn("Casting complex values to real discards the imaginary part",
                      UserWarning, stacklevel=4)
        input = input.real
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is silent in PyTorch
        return input.astype(dtype.np)


_to_dtype = defop("_to_dtype", _to_dtype_impl, method=False,
                  vjp=lambda g, input_dtype: g.to(input_dtype),
                  jvp=lambda t_input, dtype: t_input.to(dtype), infer=infer.to_dtype,
                  batch=ELEMENTWISE)


def _to_device_impl(input, source, target):
    from .._device.transfer import move_array
    return move_array(input, source, target)


def _moved(t, device):
    from .._device.transfer import move
    return move(t, device)


# `Tensor.to(device)`: the one op whose result lives on another device than its operand
# (`_device/transfer.move` tags it); differentiable, its VJP moves the gradient back
_to_device = defop("_to_device", _to_device_impl, method=False,
                   vjp=lambda g, source: _moved(g, source),
                   jvp=lambda t_input, target: _moved(t_input, target),
                   extra={"transfer": True}, infer=infer.same,
                   interpreted="moves data between devices (eager only until the CUDA target)")


def _clone_impl(input, *, memory_format=None):
    return np.array(input, copy=True, order="C")


clone = defop("clone", _clone_impl, kind="elementwise", dtype="promote",
              vjp=lambda g: g, jvp=lambda t_input: t_input, scalar="{input}")


# `with no_grad():` in scripted code (script/frontend/grad_blocks.py): a tensor the block computed,
# as a value without gradient history (nondiff); elementwise, so fusion makes it free
defop("_no_grad_value", _clone_impl, kind="elementwise", dtype="promote", method=False,
      nondiff=True, scalar="{input}")
# an in-place write inside such a block (script/frontend/alias.py): the tensor it writes through
# (nondiff: the write records no history; the in-place run, script/runtime/alias.py, makes it an
# alias of the tensor's memory without autograd, as eager writes under no_grad) ...
defop("_no_grad_target", _clone_impl, kind="elementwise", dtype="promote", method=False,
      nondiff=True, scalar="{input}")


def _no_grad_write_impl(old, new):
    return np.array(new, copy=True, order="C")


# ... and the written tensor after it: the new values, with the old value's autograd identity
# (gradient passes to `old` unchanged, nothing to `new`), as an eager tensor written under
# no_grad keeps its history
defop("_no_grad_write", _no_grad_write_impl, tensors=("old", "new"), kind="elementwise",
      method=False, vjp=lambda g: (g, None), jvp=lambda t_old: t_old, scalar="{new}")


def _contiguous_impl(input, memory_format=None):
    # not np.ascontiguousarray: it turns a 0-d array into shape (1,)
    return np.asarray(input, order="C")


defop("contiguous", _contiguous_impl, function=False, view="maybe",
      vjp=lambda g: g, jvp=lambda t_input: t_input, infer=infer.same,
      batch=ELEMENTWISE)


def _expand_copy_impl(src, shape, dtype):
    return np.broadcast_to(src, shape).astype(dtype.np)


_expand_copy = defop("_expand_copy", _expand_copy_impl, tensors=("src",), method=False,
                     vjp=lambda g: g, jvp=lambda t_src, shape, dtype: t_src.expand(shape)
                     .to(dtype), interpreted=_NOT_YET,
                     batch=sizes("shape", "expand"))


def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """`Tensor.copy_(src)`: broadcast src into self and cast to self's dtype (any cast)."""
    if not isinstance(src, Tensor):
        src = Tensor._make(np.asarray(src))
    if src._device is not self._device:  # copy_ is the one op that crosses devices itself
        from .._device.transfer import move
        src = move(src, self._device)
    check_inplace_allowed(self)
    check_writable(self)  # an expanded self: PyTorch's error, not NumPy's read-only one
    try:
        np.broadcast_shapes(src._data.shape, self._data.shape)
    except ValueError:
        raise RuntimeError(f"The size of tensor a ({list(self.shape)}) must match the size of "
                           f"tensor b ({list(src.shape)}) for copy_") from None
    if np.broadcast_shapes(src._data.shape, self._data.shape) != self._data.shape:
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast "
                           f"shape {list(np.broadcast_shapes(src._data.shape, self._data.shape))}")
    r = _expand_copy(src, self._data.shape, self._dtype)
    if getattr(r, "_vlevel", 0):  # vmap: a batched source cannot go into an unbatched self
        from ..func._vmap import write_into
        write_into(self, r, "copy")
    self._data[...] = r._data
    self._version[0] += 1
    if grad_mode._state.enabled and r._requires_grad:
        rebase_history(self, r)
    elif grad_mode._state.enabled and self._requires_grad and self._grad_fn is not None:
        # overwritten with a constant: no gradient flows to the old value
        rebase_history(self, _detached_zero_history(self))
    if r._tangent is not None:
        self._tangent = r._tangent
    return self


def _detached_zero_history(self: Tensor) -> Tensor:
    return _mul_zero(self)


_mul_zero = defop("_mul_zero", lambda input: np.zeros_like(input), method=False,
                  vjp=lambda g: g * 0, interpreted=_NOT_YET,
                  batch=ELEMENTWISE)


def fill_(self: Tensor, value) -> Tensor:
    """`Tensor.fill_(value)`: value is a number or a 0-dim tensor."""
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {value.dim()} dimensions.")
        return copy_(self, value)
    check_inplace_allowed(self)
    from .._creation import _convert_scalar
    value = _convert_scalar(value, self._dtype)  # PyTorch's overflow check and message
    check_writable(self)
    self._data[...] = value
    self._version[0] += 1
    if grad_mode._state.enabled and self._requires_grad and self._grad_fn is not None:
        rebase_history(self, _detached_zero_history(self))
    return self


def zero_(self: Tensor) -> Tensor:
    return fill_(self, 0)


def _copy_slices_impl(base, src, view_fn):
    return base


def _copy_slices_vjp(g, view_fn):
    # zero the overwritten region with an op, not by writing a clone's data: double backward
    # must see that the base's gradient does not depend on g there
    from .._device.transfer import full
    region = full(g._data.shape, False, dt.bool, g._device)
    view_fn(region)._data[...] = True
    return g.masked_fill(region, 0), view_fn(g)


copy_slices = defop("_copy_slices", _copy_slices_impl, tensors=("base", "src"), method=False,
                    vjp=_copy_slices_vjp, interpreted=_NOT_YET)

Tensor.copy_ = copy_
Tensor.fill_ = fill_
Tensor.zero_ = zero_
