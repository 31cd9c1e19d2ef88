"""Shared helpers of the linear algebra families: argument checks with PyTorch's messages,
`LinAlgError`, half-precision compute, constant (non-differentiable) tensors for VJP rules.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from .registry import _pt_name

# The C++ scalar names PyTorch prints in some dtype-mismatch messages ("long int != float")
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "int64": "long int", "int32": "int",
            "int16": "short int", "int8": "signed char", "uint8": "unsigned char", "bool": "bool",
            "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


class LinAlgError(RuntimeError):
    """`jitorch.linalg.LinAlgError`: a decomposition failed (singular, not positive-definite).

    A RuntimeError subclass, as in PyTorch, so `except RuntimeError` still catches it.
    """


def jt(a: np.ndarray) -> dt.dtype:
    """The jitorch dtype of an array."""
    return dt.from_numpy_dtype(a.dtype)


def pt(a: np.ndarray) -> str:
    """PyTorch's scalar type name of an array's dtype ("Float", "Long", ...)."""
    return _pt_name(jt(a))


def c_name(a: np.ndarray) -> str:
    return _C_NAMES[jt(a).name]


def no_bool(a: np.ndarray, kernel: str) -> None:
    if a.dtype == np.bool_:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def up(a: np.ndarray) -> np.ndarray:
    """Half types compute in float32 (PyTorch's CPU opmath)."""
    return a.astype(np.float32) if dt.is_half_np(a.dtype) else a


def down(r, like: np.ndarray) -> np.ndarray:
    """Cast a result computed by `up` back to the operands' dtype."""
    r = np.asarray(r)
    return r.astype(like.dtype) if r.dtype != like.dtype else r


def matmul_arrays(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return down(np.matmul(up(a), up(b)), a)


def scalar_for(x, a: np.ndarray):
    """A Python scalar coefficient (alpha/beta) as the arrays' dtype sees it: integer tensors
    truncate it, real tensors reject complex values (PyTorch's checked scalar conversion)."""
    if isinstance(x, Tensor):
        x = x.item()
    kind = np.dtype(a.dtype).kind
    if isinstance(x, complex) and kind != "c":
        raise RuntimeError(f"value cannot be converted to type {c_name(a)} without overflow")
    if kind in "iub":
        return int(x)
    return x


def check_float(name: str, a: np.ndarray, half: bool = False, kernel: str | None = None,
                ints_too: bool = False) -> None:
    """Decompositions accept float32/64 and complex only. PyTorch words the rejection by where
    it happens: a dtype check ("name: Expected a floating point ...") or, with `kernel`, a
    missing CPU kernel (NotImplementedError '"kernel" not implemented for ...')."""
    d = jt(a)
    low = not half and d in (dt.float16, dt.bfloat16)
    if kernel is not None and (low or ints_too and d.category < dt.FLOAT):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_pt_name(d)}\'')
    if d.category < dt.FLOAT:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_pt_name(d)}")
    if low:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {_pt_name(d)}")


def check_matrix(name: str, a: np.ndarray, square: bool = True) -> None:
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")


def check_linalg(name: str, a: np.ndarray, square: bool = True, kernel: str | None = None,
                 ints_too: bool = False) -> None:
    check_matrix(name, a, square)
    check_float(name, a, kernel=kernel, ints_too=ints_too)


def batch_prefix(a: np.ndarray, idx: int) -> str:
    """PyTorch names the failing matrix of a batch: "(Batch element 3): "."""
    return f"(Batch element {idx}): " if a.ndim > 2 else ""


def first_bad(a: np.ndarray, test) -> tuple:
    """(flat batch index, info) of the first matrix where `test(matrix)` returns info > 0."""
    flat = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(flat):
        info = test(m)
        if info:
            return i, info
    return None, 0


def const(arr: np.ndarray, like: Tensor) -> Tensor:
    """A constant tensor (no history) with `like`'s dtype, for masks and identities in rules."""
    from .._device.transfer import constant
    return constant(np.asarray(arr).astype(like._dtype.np), like._dtype, like._device)


def eye_like(t: Tensor, n: int | None = None, m: int | None = None) -> Tensor:
    n = t.shape[-1] if n is None else n
    return const(np.eye(n, n if m is None else m), t)


def sym(x: Tensor) -> Tensor:
    return x + x.mT


def skew(x: Tensor) -> Tensor:
    return x - x.mT


def broadcast_shape(sa, sb) -> tuple:
    """Broadcast two shapes with PyTorch's message naming the mismatching output dim."""
    n = max(len(sa), len(sb))
    out = []
    for i in range(n):
        a = sa[i - n + len(sa)] if i - n + len(sa) >= 0 else 1
        b = sb[i - n + len(sb)] if i - n + len(sb) >= 0 else 1
        if a != b and a != 1 and b != 1:
            raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b "
                               f"({b}) at non-singleton dimension {i}")
        out.append(b if a == 1 else a)
    return tuple(out)


def solve_either_side(A, B, left: bool, solve):
    """X with AX = B (`left`) or XA = B for NumPy stacks of matrices: batch dims broadcast,
    XA = B solved as A^T X^T = B^T, and `solve(A, B)` (the left-side solver, run with float
    warnings off) called unless the system is empty (then X is zeros)."""
    batch = broadcast_shape(A.shape[:-2], B.shape[:-2])
    Ab = np.broadcast_to(A, batch + A.shape[-2:])
    Bb = np.broadcast_to(B, batch + B.shape[-2:])
    if not left:  # XA = B  <=>  A^T X^T = B^T
        Ab, Bb = np.swapaxes(Ab, -1, -2), np.swapaxes(Bb, -1, -2)
    if Ab.size == 0 or Bb.size == 0:
        X = np.zeros(Bb.shape, A.dtype)
    else:
        with np.errstate(all="ignore"):
            X = solve(Ab, Bb)
    return X if left else np.swapaxes(X, -1, -2)
