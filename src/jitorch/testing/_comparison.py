"""`assert_close`: PyTorch's `torch.testing.assert_close`.

Inputs pair up recursively: sequences item by item, mappings key by key, tensors (or NumPy
arrays) by their attributes (shape, dtype unless `check_dtype=False`, then values), Python
numbers by type and value, None and booleans by identity. Values are close where
`|actual - expected| <= atol + rtol * |expected|`; NaN equals NaN only with `equal_nan`.
The default tolerances come from the dtype (PyTorch's table below); a mismatch message says how
many elements differ and where the greatest absolute and relative differences are, in
PyTorch's format, so logs read the same.
"""
from __future__ import annotations

import collections.abc
import math

import numpy as np

from .. import _dtype as dt
from .._tensor import Size, Tensor

__all__ = ["assert_close"]

# dtype -> (rtol, atol): PyTorch's defaults; every other dtype compares exactly
_TOLERANCES = {
    dt.float16: (1e-3, 1e-5), dt.bfloat16: (1.6e-2, 1e-5), dt.float32: (1.3e-6, 1e-5),
    dt.float64: (1e-7, 1e-7), dt.complex64: (1.3e-6, 1e-5), dt.complex128: (1e-7, 1e-7),
}


class _Mismatch(Exception):
    """A failed pair: its message and the exception type PyTorch raises for it."""

    def __init__(self, msg, kind=AssertionError):
        super().__init__(msg)
        self.msg, self.kind = msg, kind


def _tolerances(dtypes, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _number_dtype(x):
    if isinstance(x, complex):
        return dt.complex128
    if isinstance(x, float):
        return dt.float64
    return dt.int64


def _close(a: np.ndarray, e: np.ndarray, rtol, atol, equal_nan):
    """Elementwise matches, as torch.isclose: infinities match only themselves."""
    with np.errstate(invalid="ignore", over="ignore"):
        if a.dtype.kind in "biu" and e.dtype.kind in "biu":
            if rtol == 0 and atol == 0:
                return a == e
        a64, e64 = a.astype(np.complex128 if "c" in a.dtype.kind + e.dtype.kind
                            else np.float64), e.astype(np.complex128 if "c" in a.dtype.kind
                                                       + e.dtype.kind else np.float64)
        eq = a64 == e64
        fin = np.isfinite(a64) & np.isfinite(e64)
        ok = eq | (fin & (np.abs(a64 - e64) <= atol + rtol * np.abs(e64)))
        if equal_nan:
            ok |= np.isnan(a64) & np.isnan(e64)
        return ok


def _fmt_index(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _diff_lines(abs_d, rel_d, at_abs, at_rel, rtol, atol, exact):
    up_a = "" if exact else f" (up to {atol} allowed)"
    up_r = "" if exact else f" (up to {rtol} allowed)"
    return (f"Greatest absolute difference: {abs_d}{at_abs}{up_a}\n"
            f"Greatest relative difference: {rel_d}{at_rel}{up_r}")


def _scalar_msg(actual, expected, rtol, atol, exact):
    kind = "equal" if exact else "close"
    abs_d = abs(actual - expected)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel_d = float(np.float64(abs_d) / np.float64(abs(expected))) if expected != 0 else (
            math.inf if abs_d != 0 else math.nan)
    up_a = "" if exact else f" (up to {atol} allowed)"
    up_r = "" if exact else f" (up to {rtol} allowed)"
    return (f"Scalars are not {kind}!\n\nExpected {expected} but got {actual}.\n"
            f"Absolute difference: {abs_d}{up_a}\nRelative difference: {rel_d}{up_r}")


def _tensor_msg(a: np.ndarray, e: np.ndarray, ok: np.ndarray, rtol, atol, exact):
    kind = "equal" if exact else "close"
    n, bad = a.size, int((~ok).sum())
    af, ef, okf = a.reshape(-1), e.reshape(-1), ok.reshape(-1)
    if af.dtype.kind in "biu":  # PyTorch upcasts integers to int64 before subtracting
        af, ef = af.astype(np.int64), ef.astype(np.int64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        abs_diff = np.abs(af - ef)
        abs_diff[okf] = 0
        # the relative difference is a true division: integers divide in the default dtype
        rdt = abs_diff.dtype if abs_diff.dtype.kind == "f" else np.float32
        rel_diff = abs_diff.astype(rdt) / np.abs(ef).astype(rdt)
        rel_diff[okf] = 0
    ia, ir = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    return (f"Tensor-likes are not {kind}!\n\nMismatched elements: {bad} / {n} ({bad / n:.1%})\n"
            + _diff_lines(abs_diff[ia].item(), rel_diff[ir].item(),
                          f" at index {_fmt_index(ia, a.shape)}",
                          f" at index {_fmt_index(ir, a.shape)}", rtol, atol, exact))


def _compare_arrays(actual, expected, rtol, atol, equal_nan, check_dtype):
    is_t = isinstance(actual, Tensor)
    a = actual.detach().numpy() if is_t else np.asarray(actual)
    e = expected.detach().numpy() if is_t else np.asarray(expected)
    a_dt = actual.dtype if is_t else dt.from_numpy_dtype(a.dtype)
    e_dt = expected.dtype if is_t else dt.from_numpy_dtype(e.dtype)
    if a.shape != e.shape:
        size = (lambda s: repr(Size(s))) if is_t else str
        raise _Mismatch(f"The values for attribute 'shape' do not match: {size(a.shape)} != "
                        f"{size(e.shape)}.")
    # the default tolerances are the looser of the two dtypes' (before any promotion)
    rtol, atol = _tolerances((a_dt, e_dt), rtol, atol)
    if a_dt != e_dt:
        if check_dtype:
            raise _Mismatch(f"The values for attribute 'dtype' do not match: {_dname(a_dt)} != "
                            f"{_dname(e_dt)}.")
        common = dt.promote_types(a_dt, e_dt)
        a, e = a.astype(common.np), e.astype(common.np)
    ok = _close(a, e, rtol, atol, equal_nan)
    if ok.all():
        return
    exact = rtol == 0 and atol == 0
    if a.ndim == 0:
        raise _Mismatch(_scalar_msg(a.item(), e.item(), rtol, atol, exact))
    raise _Mismatch(_tensor_msg(a, e, ok, rtol, atol, exact))


def _dname(d):
    return repr(d)  # jitorch.float32, where PyTorch's reads torch.float32


_NUMBER = (bool, int, float, complex)


def _compare(actual, expected, rtol, atol, equal_nan, check_dtype, path):
    try:
        if actual is None or expected is None:
            if actual is not expected:
                raise _Mismatch(f"None mismatch: {actual} is not {expected}")
            return
        if isinstance(actual, Tensor) and isinstance(expected, Tensor) or (
                isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray)):
            return _compare_arrays(actual, expected, rtol, atol, equal_nan, check_dtype)
        if isinstance(actual, bool) and isinstance(expected, bool):
            if actual is not expected:
                raise _Mismatch(f"Booleans mismatch: {actual} is not {expected}")
            return
        if isinstance(actual, _NUMBER) and isinstance(expected, _NUMBER) and not (
                isinstance(actual, bool) or isinstance(expected, bool)):
            return _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype)
    except _Mismatch as m:
        if path:
            raise _Mismatch(f"{m.msg}\n\nThe failure occurred for item "
                            f"{''.join(f'[{p!r}]' for p in path)}", m.kind) from None
        raise
    seqs = (collections.abc.Sequence,)
    if isinstance(actual, seqs) and isinstance(expected, seqs) and not isinstance(
            actual, str) and not isinstance(expected, str):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != "
                            f"{len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, rtol, atol, equal_nan, check_dtype, path + (i,))
        return
    maps = collections.abc.Mapping
    if isinstance(actual, maps) and isinstance(expected, maps):
        ka, ke = set(actual), set(expected)
        if ka != ke:
            raise _Mismatch("The keys of the mappings do not match:\n"
                            + (f"Missing keys in the actual mapping: {sorted(ke - ka)}\n"
                               if ke - ka else "")
                            + (f"Additional keys in the actual mapping: {sorted(ka - ke)}"
                               if ka - ke else "").rstrip("\n"))
        for k in expected:
            _compare(actual[k], expected[k], rtol, atol, equal_nan, check_dtype, path + (k,))
        return
    raise _Mismatch(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                    f"{type(expected)}.", TypeError)


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    rtol, atol = _tolerances((_number_dtype(actual), _number_dtype(expected)), rtol, atol)
    ok = _close(np.asarray(actual), np.asarray(expected), rtol, atol, equal_nan)
    if not ok.all():
        raise _Mismatch(_scalar_msg(actual, expected, rtol, atol, rtol == 0 and atol == 0))


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise AssertionError unless `actual` and `expected` are close (see the module doc).
    `msg`: a string replacing the message, or a callable mapping it to one."""
    if (rtol is None) != (atol is None):
        _tolerances((), rtol, atol)  # raises PyTorch's ValueError
    try:
        _compare(actual, expected, rtol, atol, equal_nan, check_dtype, ())
    except _Mismatch as m:
        text = m.msg
        if m.kind is AssertionError and msg is not None:
            text = msg(text) if callable(msg) else msg
        raise m.kind(text) from None
