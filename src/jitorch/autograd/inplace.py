"""In-place ops under autograd: `x.add_(y)`, `x[i] = v`, `x.copy_(y)`.

Owns PyTorch's in-place rules: a leaf that requires grad (or a view of one) cannot be modified in
place while grad mode is on; the written tensor takes the op's node as its new history; writing
through a view rebases the view's base onto a `copy_slices` node, so gradients reach both the
old base value and the written source. Every in-place write bumps the shared version counter.
An elementwise write with no history to record skips the result tensor (`_write_direct`).
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt, _profiling
from .._tensor import Tensor
from . import grad_mode


def check_inplace_allowed(self: Tensor) -> None:
    if not grad_mode._state.enabled:
        return
    if self._grad_fn is None and self._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    b = self._base
    if b is not None and b._grad_fn is None and b._requires_grad:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")


def apply_inplace(op, self: Tensor, slots: tuple, attrs: dict) -> Tensor:
    check_inplace_allowed(self)
    tracking = grad_mode._state.enabled and op.vjp is not None and any(
        isinstance(s, Tensor) and s._requires_grad for s in slots)
    if not tracking and op.kind == "elementwise" and _write_direct(op, self, slots, attrs):
        return self
    # (imported here, after the direct write: an import statement costs ~1 us per call, an
    # optimizer's step makes several in-place calls per parameter)
    from .._ops.registry import dispatch
    if tracking and self._requires_grad and any(k == "slot" and n == op.tensors[0]
                                               for k, n in op.vjp_params):
        # the rule reads the old value of self: give it a copy that keeps self's history
        slots = (self.clone(),) + tuple(slots[1:])
    r = dispatch(op, slots, attrs)
    write_result(self, r, op.name)
    if tracking and r._requires_grad:
        rebase_history(self, r)
    if r._tangent is not None:
        self._tangent = r._tangent
    return self


_REG = None  # jitorch._ops.registry


def _write_direct(op, self: Tensor, slots: tuple, attrs: dict) -> bool:
    """`self.op_(...)` of an elementwise op with no history to record, written straight into
    self's array: with the op's declared `extra["into"]` (its impl with NumPy `out=`: no result
    array, no copy) where the operands are already of self's dtype, else its impl's result
    cast as `dispatch` casts it, then copied in. The same values, version bump and aliasing as
    the general path (NumPy buffers operands that overlap `out`); False, having written
    nothing, where the general path must run it: another dtype or shape of result (it raises
    the errors), a read-only (expanded) self, operands other than plain tensors and numbers,
    or any profiler, autocast, dispatch mode, device placement or forward-AD level."""
    global _REG
    if _REG is None:  # (the registry imports this module: imported at first use)
        from .._ops import registry
        _REG = registry
    reg = _REG
    FAST_TYPES = reg.FAST_TYPES
    if _profiling.slow[0] or type(self) not in FAST_TYPES:  # (the fast path's one switch)
        return False
    for s in slots:
        if type(s) not in FAST_TYPES and type(s) is not float and type(s) is not int:
            return False
    dst = self._data
    if not dst.flags.writeable:
        return False
    out_dtype, arrays = reg._elementwise_args(op, slots, attrs)
    if out_dtype is not self._dtype:
        return False
    shape, same = dst.shape, True
    for a in arrays:
        if type(a) is np.ndarray:
            if a.shape != shape and a.ndim:
                return False  # (a broadcast result shape: the general path checks it)
            same = same and a.dtype == dst.dtype
    into = op.extra.get("into")
    try:
        if into is not None and same:
            into(dst, *arrays, **attrs)
        else:
            res = reg._finish_elementwise(op.impl(*arrays, **attrs), out_dtype, arrays)
            if res.shape != shape:
                return False
            dst[...] = res
    except ValueError:  # (checked before any write) the general path raises PyTorch's error
        return False
    self._version[0] += 1
    return True


def write_result(self: Tensor, r: Tensor, name: str) -> None:
    if not dt.can_cast(r._dtype, self._dtype):
        from .._ops.registry import _pt_name  # (the error only: an import costs ~1 us a call)
        raise RuntimeError(f"result type {_pt_name(r._dtype)} can't be cast to the desired "
                           f"output type {_pt_name(self._dtype)}")
    if r._data.shape != self._data.shape:
        raise RuntimeError(f"output with shape {list(self._data.shape)} doesn't match the "
                           f"broadcast shape {list(r._data.shape)}")
    if getattr(self, "_vlevel", 0) or getattr(r, "_vlevel", 0):
        from ..func._vmap import write_into  # vmap: write the batched (physical) storage
        return write_into(self, r, name)
    check_writable(self)
    self._data[...] = r._data
    self._version[0] += 1


def check_writable(self: Tensor) -> None:
    """An expanded tensor has elements that share memory: writing to it is ambiguous."""
    if not self._data.flags.writeable:
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")


def rebase_history(self: Tensor, r: Tensor) -> None:
    """Make `self` (just overwritten with r's values) carry r's history."""
    base = self._base
    if base is None or self._view_fn is None:
        self._grad_fn, self._output_nr, self._requires_grad = r._grad_fn, r._output_nr, True
        return
    from .._ops.conversion import copy_slices
    from .._device.transfer import same_device
    old = same_device(Tensor._make(base._data, base._dtype), base)
    old._grad_fn, old._output_nr = base._grad_fn, base._output_nr
    old._requires_grad = base._requires_grad
    old._accum = base._accum
    new_base = copy_slices(old, r, self._view_fn)
    base._grad_fn, base._output_nr, base._requires_grad = new_base._grad_fn, 0, True
    v = self._view_fn(base)
    self._grad_fn, self._output_nr, self._requires_grad = v._grad_fn, v._output_nr, True
