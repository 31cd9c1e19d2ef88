"""Range and structured-matrix factories: `arange`, `linspace`, `logspace`, `eye`,
`tril_indices`, `triu_indices` (re-exported by `_creation`).

Invariants: dtype rules and errors follow PyTorch (arange: int64 for all-integer arguments,
else the default dtype; linspace/logspace: the default dtype, or the default complex one for
complex endpoints; endpoints converted to the output type with PyTorch's overflow checks).
Values follow PyTorch's CPU kernels, including their fused multiply-adds and half-type rounding
(arange: start + i * step in double; linspace: both endpoints exact, computed in the output
type; logspace: the power taken in double). PyTorch's vectorised loops can still differ in the
last bit on long float32 outputs, depending on the CPU's vector width.
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from . import _dtype as dt
from ._creation import _convert_scalar, _dtype_arg, _finish, _index_like, _num, _write_out, \
    trace_hook
from ._layout import factory_layout
from ._device import as_device
from ._device.transfer import factory as _on_device
from ._tensor import Tensor

__all__ = ["arange", "linspace", "logspace", "eye", "tril_indices", "triu_indices"]


@_on_device()
def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, requires_grad=False,
        pin_memory=False) -> Tensor:
    """`torch.eye`: an n x m (default n x n) identity matrix."""
    as_device(device)
    factory_layout("eye", layout)
    for name, v, pos in (("n", n, 1), ("m", m, 2)):
        if v is not None and _index_like(v) is None:
            raise TypeError(f"eye(): argument '{name}' (position {pos}) must be int, not "
                            f"{type(v).__name__}")
    n_arg, m_arg = n, m  # as given: a trace records them (`trace_hook`)
    n = _index_like(n)
    m = n if m is None else _index_like(m)
    if n < 0:
        raise RuntimeError(f"n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"m must be greater or equal to 0, got {m}")
    dtype = _dtype_arg(dtype, "eye")
    d = dtype or (out._dtype if out is not None else dt.get_default_dtype())
    arr = np.eye(n, m, dtype=d.np)
    if out is not None:
        return _write_out(out, arr, dtype, "eye")
    r = _finish(arr, d, requires_grad)
    if trace_hook[0] is not None:
        trace_hook[0]("eye", r, requires_grad, {"n": n_arg, "m": m_arg})
    return r


def _tri_indices(fname, tri, row, col, offset, dtype):
    for name, v, pos in (("row", row, 1), ("col", col, 2), ("offset", offset, 3)):
        if _index_like(v) is None:
            raise TypeError(f"{fname}(): argument '{name}' (position {pos}) must be int, not "
                            f"{type(v).__name__}")
    row, col, offset = _index_like(row), _index_like(col), _index_like(offset)
    d = _dtype_arg(dtype, fname) or dt.int64
    if d not in (dt.int32, dt.int64):
        raise _not_implemented(fname, d, suffix="")
    if row < 0 or col < 0:
        raise RuntimeError(f"row must be non-negative, got{row}" if row < 0 else
                           f"col must be non-negative, got{col}")
    r, c = tri(row, offset, col)
    return _finish(np.stack([r, c]).astype(d.np).reshape(2, -1), d, False)


@_on_device()
def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """`torch.tril_indices`: 2 x N (row, column) indices of the lower triangle, row-major."""
    as_device(device)
    factory_layout("tril_indices", layout)
    return _tri_indices("tril_indices", np.tril_indices, row, col, offset, dtype)


@_on_device()
def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """`torch.triu_indices`: 2 x N (row, column) indices of the upper triangle, row-major."""
    as_device(device)
    factory_layout("triu_indices", layout)
    return _tri_indices("triu_indices", np.triu_indices, row, col, offset, dtype)


def _range_scalar(v, fname: str):
    if isinstance(v, Tensor):
        if v.numel() != 1:
            raise RuntimeError(f"{fname}(): a Tensor with {v.numel()} elements cannot be "
                               "converted to Scalar")
        return v.item()
    if isinstance(v, np.generic):
        return v.item()
    if not isinstance(v, (builtins.int, builtins.float, builtins.complex)):
        raise TypeError(f"{fname}(): argument must be Number, not {type(v).__name__}")
    return v


def _not_implemented(fname: str, d: dt.dtype, suffix: str = "_cpu"):
    from ._ops.registry import _pt_name
    return NotImplementedError(f'"{fname}{suffix}" not implemented for \'{_pt_name(d)}\'')


@_on_device()
def arange(start=0, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           requires_grad=False) -> Tensor:
    """`torch.arange`: int64 when start/end/step are all integers, else the default dtype.
    The length is ceil((end - start) / step) in double; values are start + i * step."""
    as_device(device)
    factory_layout("arange", layout)
    if end is None:
        start, end = 0, start
    vals = [_range_scalar(v, "arange") for v in (start, end, step)]
    if any(isinstance(v, builtins.complex) for v in vals):
        raise RuntimeError("value cannot be converted to type double without overflow")
    dtype = _dtype_arg(dtype, "arange")
    d = dtype or (out._dtype if out is not None else None)
    if d is None:
        d = dt.int64 if all(isinstance(v, builtins.int) for v in vals) \
            else dt.get_default_dtype()
    if d is dt.bool or d.category == dt.COMPLEX:
        raise _not_implemented("arange", d)
    s, e, st = vals
    if st == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(s) and math.isfinite(e)):
        raise RuntimeError(f"unsupported range: {_num(s)} -> {_num(e)}")
    if not ((st > 0 and e >= s) or (st < 0 and e <= s)):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    if d is dt.int64:
        # int64 then steps with the arguments truncated (its accumulate type is int64)
        s, e, st = (builtins.int(x) for x in (s, e, st))
        if st == 0:
            raise ValueError("step must be nonzero")
    if d is dt.int64:
        sgn = (st > 0) - (st < 0)
        n = (e - s + st - sgn) // st  # C++ integer division; the quotient is >= 0 here
    else:
        n = math.ceil((float(vals[1]) - float(vals[0])) / float(vals[2]))
    n = max(n, 0)
    if d.category == dt.INT:
        # other integer dtypes size the range in double but step by the truncated values
        arr = (builtins.int(s) + builtins.int(st) * np.arange(n, dtype=np.int64)).astype(d.np)
    else:
        with np.errstate(over="ignore"):  # PyTorch casts to inf silently
            arr = (s + st * np.arange(n, dtype=np.float64)).astype(d.np)
    if out is not None:
        return _write_out(out, arr, dtype, "arange")
    r = _finish(arr, d, requires_grad)
    if trace_hook[0] is not None:
        trace_hook[0]("arange", r, requires_grad, {"start": start, "end": end, "step": step})
    return r


def _range_endpoints(start, end, steps, fname):
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, Tensor) and v.dim() != 0:
            raise RuntimeError(f"{fname} only supports 0-dimensional start and end tensors, "
                               f"but got {name} with {v.dim()} dimension(s).")
    if _index_like(steps) is None:
        raise TypeError(f"{fname}(): argument 'steps' (position 3) must be int, not "
                        f"{type(steps).__name__}")
    steps = _index_like(steps)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    s, e = _range_scalar(start, fname), _range_scalar(end, fname)
    return s, e, steps


_WIDER = {np.dtype(np.float32): np.float64, np.dtype(np.float64): np.longdouble,
          np.dtype(np.complex64): np.complex128, np.dtype(np.complex128): np.clongdouble}


def _spaced(s, e, steps: int, ct: np.dtype, r=None, step=None) -> np.ndarray:
    """PyTorch's linspace kernel on endpoints already in the step type `ct`: start + step*i for
    the first half, end - step*(n-1-i) for the rest, so both endpoints are exact. PyTorch's CPU
    build contracts `a + b*c` into a fused multiply-add; computing it in a wider type and
    rounding once reproduces that. `r` instead rounds after every operation (c10::Half and
    c10::BFloat16 arithmetic, which can't fuse); `step` overrides the computed step."""
    idx = np.arange(steps)
    fused = r is None
    if fused:
        def r(x):
            return np.asarray(x, dtype=ct)
    s, e = r(s), r(e)
    if steps == 1:
        return np.asarray([s], dtype=ct)
    with np.errstate(all="ignore"):
        step = r(r(e - s) / r(steps - 1)) if step is None else r(step)
        k_lo, k_hi = idx, steps - 1 - idx
        if fused:
            w = _WIDER[np.dtype(ct)]
            lo = (s.astype(w) + step.astype(w) * k_lo.astype(w)).astype(ct)
            hi = (e.astype(w) - step.astype(w) * k_hi.astype(w)).astype(ct)
        else:
            lo = r(s + r(step * r(k_lo)))
            hi = r(e - r(step * r(k_hi)))
    return np.where(idx < steps // 2, lo, hi).astype(ct)


def _range_result(arr, d, out, dtype, requires_grad, fname):
    if out is not None:
        return _write_out(out, arr, _dtype_arg(dtype), fname)
    return _finish(arr, d, requires_grad)


def _half_rounding(d: dt.dtype):
    def r(x):
        return np.asarray(x, dtype=np.float32).astype(d.np).astype(np.float32)
    return r


def _range_dtype(s, e, dtype, out, fname):
    d = _dtype_arg(dtype, fname) or (out._dtype if out is not None else None)
    if d is None:
        d = dt.default_complex() if isinstance(s, builtins.complex) or isinstance(
            e, builtins.complex) else dt.get_default_dtype()
    if d is dt.bool:
        raise _not_implemented(fname, d)
    if d.category != dt.COMPLEX and (isinstance(s, builtins.complex)
                                     or isinstance(e, builtins.complex)):
        from ._ops.registry import _pt_name
        inner = "double" if dt.default_complex() is dt.complex128 else "float"
        raise RuntimeError(f"torch.{fname}(): inferred dtype c10::complex<{inner}> can't be "
                           f"safely cast to passed dtype {_pt_name(d)}")
    return d


@_on_device()
def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """`torch.linspace`: `steps` evenly spaced values from start to end inclusive."""
    as_device(device)
    factory_layout("linspace", layout)
    s, e, steps = _range_endpoints(start, end, steps, "linspace")
    d = _range_dtype(s, e, dtype, out, "linspace")
    if steps <= 1:  # PyTorch fills start (a checked conversion) without the kernel
        p = [] if steps == 0 else [_convert_scalar(s, d)]
        return _range_result(np.array(p, dtype=d.np), d, out, dtype, requires_grad, "linspace")
    # the endpoints become the output type first, with PyTorch's overflow checks; integer
    # outputs step in double
    s, e = (_convert_scalar(v, d) for v in (s, e))
    if d.category == dt.INT:
        vals = _spaced(s, e, steps, np.dtype(np.float64))
    elif d.compute != d.np:
        vals = _spaced(s, e, steps, np.dtype(np.float32), _half_rounding(d))
    else:
        vals = _spaced(s, e, steps, d.np)
    with np.errstate(all="ignore"):
        arr = np.trunc(vals).astype(d.np) if d.category == dt.INT else vals.astype(d.np)
    if out is not None:
        return _write_out(out, arr, _dtype_arg(dtype), "linspace")
    return _finish(arr, d, requires_grad)


@_on_device()
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False) -> Tensor:
    """`torch.logspace`: base ** linspace(start, end, steps); the power is taken in double."""
    as_device(device)
    factory_layout("logspace", layout)
    s, e, steps = _range_endpoints(start, end, steps, "logspace")
    d = _range_dtype(s, e, dtype, out, "logspace")
    base = _range_scalar(base, "logspace")
    if steps <= 1:
        # PyTorch fills base ** start (taken in double) with a checked conversion
        p = [] if steps == 0 else [_convert_scalar(complex(base) ** s if d.category == dt.COMPLEX
                                                   else float(base.real) ** float(s.real), d)]
        return _range_result(np.array(p, dtype=d.np), d, out, dtype, requires_grad, "logspace")
    # exponents: the endpoints become the output type (with checks), stepping in double for
    # integer outputs and in float32 for half types
    s, e = (_convert_scalar(v, d) for v in (s, e))
    if d.category == dt.INT:
        expo = _spaced(float(s), float(e), steps, np.dtype(np.float64))
    else:
        if d.compute != d.np:
            # measured against PyTorch: end - start in half arithmetic, the rest in float32
            h = _half_rounding(d)
            s, e = h(s), h(e)
            step = h(e - s) / np.float32(steps - 1)
            expo = _spaced(s, e, steps, np.dtype(np.float32), step=step)
        else:
            expo = _spaced(s, e, steps, d.compute if d.category == dt.FLOAT else d.np)
    with np.errstate(all="ignore"):
        if d.category == dt.COMPLEX:
            vals = np.power(np.complex128(base), expo.astype(np.complex128))
        else:
            vals = np.power(np.float64(base.real if isinstance(base, builtins.complex)
                                       else base), expo.astype(np.float64))
        arr = np.trunc(vals).astype(d.np) if d.category == dt.INT else vals.astype(d.np)
    if out is not None:
        return _write_out(out, arr, _dtype_arg(dtype), "logspace")
    return _finish(arr, d, requires_grad)
