"""What an FFT call means: its argument checks and the canonical plan every layer reads.

A transform call `fft_<name>(input, n|s, dim, norm)` is reduced here, once, to a `Plan`: the
wrapped transform dims, the signal size along each (the input is zero-padded or cropped to it,
as NumPy and PyTorch do), the normalization mode and the result dtype. The op implementations
(`fft_ops.py`), their VJPs, their type rules and the compiler's lowering
(`script/targets/cpu/lower_fft.py`) all read the same plan, so they agree on PyTorch's argument
errors and on which size each dim has.

Families (PyTorch's three internal kernels): `c2c` (fft/ifft), `r2c` (rfft, and ihfft, which is
the conjugate of an rfft with the dual norm), `c2r` (irfft, and hfft, an irfft of the conjugate
with the dual norm).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _dtype as dt
from ._util import wrap_dim

NORMS = ("backward", "forward", "ortho")
# the adjoint of a transform scaled by 1/n (or 1) is the opposite transform scaled by 1 (or 1/n)
DUAL = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


@dataclass(frozen=True)
class Spec:
    """One public transform: its family, direction, arity ('1', '2', 'n') and NumPy name."""
    name: str      # public name in jitorch.fft
    family: str    # "c2c" | "r2c" | "c2r"
    forward: bool  # the exponent's sign: fft/rfft/ihfft-as-rfft are forward
    arity: str     # "1" (n, dim), "2" (s, dim=(-2, -1)), "n" (s, dim=None)
    hermitian: bool = False  # hfft*/ihfft*: conj and the dual norm around an r2c/c2r


@dataclass(frozen=True)
class Plan:
    dims: tuple    # wrapped transform dims, in call order (the last one is the half dim)
    sizes: tuple   # signal size per dim (c2r: the real output size along the last dim)
    norm: str
    out_dtype: object  # jitorch dtype of the result


def norm_mode(norm) -> str:
    if norm is None:
        return "backward"
    if not isinstance(norm, str) or norm not in NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _ints(v, what):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),)
    if isinstance(v, (list, tuple)):
        out = []
        for x in v:
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
                raise TypeError(f"{what} must be a sequence of ints, got an element of type "
                                f"{type(x).__name__}")
            out.append(int(x))
        return tuple(out)
    if hasattr(v, "__index__") and not isinstance(v, bool):
        return (int(v.__index__()),)
    raise TypeError(f"{what} must be an int or a sequence of ints, not {type(v).__name__}")


def dims_and_sizes(spec: Spec, ndim: int, s, dim):
    """(dims, requested sizes or None per dim) with PyTorch's checks and messages."""
    if spec.arity == "1":
        if ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        d = wrap_dim(_ints(dim, "dim")[0] if not isinstance(dim, (list, tuple)) else dim, ndim)
        n = None if s is None else _ints(s, "n")[0]
        return (d,), (n,)
    if dim is None and spec.arity == "n":
        if s is None:
            dims = tuple(range(ndim))
        else:
            s = _ints(s, "s")
            if len(s) > ndim:
                raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                                   f"{ndim} dimensions.")
            dims = tuple(range(ndim - len(s), ndim))
    else:
        if dim is None:
            dim = (-2, -1)
        raw = _ints(dim, "dim")
        if ndim == 0 and raw:
            raise IndexError(f"Dimension specified as {raw[0]} but tensor has no dimensions")
        dims = tuple(wrap_dim(d, ndim) for d in raw)
        if s is not None and len(_ints(s, "s")) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    sizes = (None,) * len(dims) if s is None else tuple(
        None if x == -1 else x for x in _ints(s, "s"))
    return dims, sizes


def input_dtype(spec: Spec, d):
    """The dtype the input is computed in (PyTorch promotes integers to the default float dtype
    and real inputs of complex-input transforms to complex); errors as PyTorch's."""
    if d in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"Unsupported dtype {'Half' if d is dt.float16 else 'BFloat16'}")
    if d.category < dt.FLOAT:
        d = dt.get_default_dtype()
    if spec.family == "r2c":
        if d.category == dt.COMPLEX:
            kind = "ihfft" if spec.hermitian else "rfft"
            from .registry import _pt_name
            raise RuntimeError(f"{kind} expects a real input tensor, but got {_pt_name(d)}")
        return d
    return d.to_complex()


def plan(spec: Spec, shape: tuple, dtype, s, dim, norm) -> Plan:
    """The canonical plan of one call on an input of `shape` and jitorch `dtype`."""
    mode = norm_mode(norm)
    cd = input_dtype(spec, dtype)
    ndim = len(shape)
    dims, req = dims_and_sizes(spec, ndim, s, dim)
    sizes = []
    for k, (d, n) in enumerate(zip(dims, req)):
        last = k == len(dims) - 1
        if n is None:
            n = 2 * (shape[d] - 1) if spec.family == "c2r" and last else shape[d]
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
        sizes.append(n)
    out = cd.to_real() if spec.family == "c2r" else cd.to_complex()
    return Plan(dims, tuple(sizes), mode, out)


def out_dtype(spec: Spec, dtype):
    """The result dtype alone (the compiler's type rule)."""
    cd = input_dtype(spec, dtype)
    return cd.to_real() if spec.family == "c2r" else cd.to_complex()

