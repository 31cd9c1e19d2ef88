"""Triangular solves and LU: `linalg.solve_triangular`, `triangular_solve`, `linalg.lu_factor`
(`_ex`), `linalg.lu`, `lu_unpack`, `linalg.lu_solve`, and PyTorch's top-level `lu` /
`lu_solve` (issue 19).

Values: LAPACK's getrf through scipy (partial pivoting, 1-based int32 pivots as PyTorch) and
NumPy's batched solve on the triangle. Autograd:
- `_solve_triangular` (one op, upper / left / unitriangular as attributes): VJP and JVP are the
  solve's, with the matrix gradient projected on the triangle that was read;
- `_lu_factor`: the VJP of A = P L U for square A (PyTorch's formula
  gA = P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H), reading L, U from the packed factor;
- `lu_unpack` is linear in the packed factor (its VJP packs tril(gL, -1) + triu(gU));
- `linalg.lu` and `linalg.lu_solve` are compositions of those ops, so differentiable through
  them.
"""
from __future__ import annotations

import numpy as np

from .. import return_types
from .._tensor import Tensor
from ._linalg_util import (LinAlgError, batch_prefix, check_float, check_matrix, pt,
                           solve_either_side)
from .registry import _write_out, defop
from .batching import LOOP

_LAPACK = "a LAPACK factorisation: no Numba lowering yet"

__all__ = ["triangular_solve", "lu", "lu_solve", "lu_unpack"]

_lu_factor_t = return_types.make("linalg_lu_factor", ("LU", "pivots"))
_lu_factor_ex_t = return_types.make("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_lu_t = return_types.make("linalg_lu", ("P", "L", "U"))
_lu_unpack_t = return_types.make("lu_unpack", ("P", "L", "U"))
_triangular_solve_t = return_types.make("triangular_solve", ("solution", "cloned_coefficient"))


# --- solve_triangular ---------------------------------------------------------------------------
def _tri_np(A, upper, unitriangular):
    T = np.triu(A) if upper else np.tril(A)
    if unitriangular:
        idx = np.arange(A.shape[-1])
        T = T.copy()
        T[..., idx, idx] = 1
    return T


def _solve_triangular_impl(A, B, upper, left=True, unitriangular=False):
    check_matrix("linalg.solve_triangular", A)
    check_float("linalg.solve_triangular", A)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, "
                           f"but found A of type {pt(A)} and B of type {pt(B)} instead")
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    def solve(T, Bb):
        try:
            return np.linalg.solve(T, Bb)
        except np.linalg.LinAlgError:
            # a zero on the diagonal gives inf/nan, as LAPACK's trtrs does for PyTorch
            return _substitute(T, Bb, upper != (not left))

    X = solve_either_side(_tri_np(A, upper, unitriangular), B, left, solve)
    return np.ascontiguousarray(X).astype(A.dtype, copy=False)


def _substitute(T, B, upper):
    """Back/forward substitution (for singular triangles: IEEE infs and nans, no error)."""
    n = T.shape[-1]
    X = np.zeros(np.broadcast_shapes(T.shape[:-1], B.shape[:-1]) + B.shape[-1:],
                 np.result_type(T, B))
    order = range(n - 1, -1, -1) if upper else range(n)
    for i in order:
        acc = B[..., i, :] - np.einsum("...k,...kj->...j", T[..., i, :], X)
        X[..., i, :] = acc / T[..., i, i][..., None]
    return X


def _tri_grad(G, upper, unitriangular):
    G = G.triu() if upper else G.tril()
    if unitriangular:
        G = G - G.diagonal(0, -2, -1).diag_embed()
    return G


def _solve_triangular_vjp(g, A, result, upper, left, unitriangular):
    X = result
    gB = _solve_triangular(A.mH, g, not upper, left, unitriangular)
    gA = -(gB @ X.mH) if left else -(X.mH @ gB)
    return _tri_grad(gA, upper, unitriangular), gB


def _solve_triangular_jvp(t_A, t_B, A, result, upper, left, unitriangular):
    dA = _tri_grad(t_A, upper, unitriangular)
    rhs = t_B - (dA @ result if left else result @ dA)
    return _solve_triangular(A, rhs, upper, left, unitriangular)


_solve_triangular = defop(
    "_solve_triangular", _solve_triangular_impl, tensors=("A", "B"), kind="linalg",
    method=False, vjp=_solve_triangular_vjp, jvp=_solve_triangular_jvp, interpreted=_LAPACK,
    batch=LOOP, autocast={"cpu": "fp32"})


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """`linalg.solve_triangular`: X with AX = B (left) or XA = B, A upper or lower triangular
    (the other triangle is not read; unitriangular: the diagonal is taken as ones)."""
    r = _solve_triangular(A, B, upper, left, unitriangular)
    return r if out is None else _write_out(out, r)


def triangular_solve(b, A, upper=True, transpose=False, unitriangular=False, *, out=None):
    """PyTorch's legacy form: (solution of op(A) X = b, a copy of A); op(A) = A^T if
    transpose."""
    M = A.mT if transpose else A
    r = _triangular_solve_t(_solve_triangular(M, b, upper != transpose, True, unitriangular),
                            A.clone())
    return r if out is None else _write_out(out, r)


# --- LU factorisation ---------------------------------------------------------------------------
def _getrf(m):
    from scipy.linalg import get_lapack_funcs  # (scipy.linalg: imported where used)
    getrf, = get_lapack_funcs(("getrf",), (m,))
    lu, piv, info = getrf(m)
    return lu, piv, info


def _lu_factor_impl(A, pivot=True):
    """(packed LU, 1-based int32 pivots, info) of A = P L U (getrf), over any batch."""
    check_matrix("linalg.lu_factor", A, square=False)
    check_float("linalg.lu_factor", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the "
                           "CPU")
    m, n = A.shape[-2:]
    k = min(m, n)
    flat = A.reshape((-1, m, n))
    LU = np.empty_like(flat)
    piv = np.empty((flat.shape[0], k), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    for i, a in enumerate(flat):
        if a.size == 0:
            LU[i] = a
            continue
        lu, p, inf = _getrf(a)
        LU[i], piv[i], info[i] = lu, p[:k] + 1, inf
    batch = A.shape[:-2]
    return LU.reshape(A.shape), piv.reshape(batch + (k,)), info.reshape(batch)


def _lu_factor_vjp(grads, A, result, pivot):
    gLU = grads[0]
    LU, piv = result[0], result[1]
    m, n = LU.shape[-2], LU.shape[-1]
    if m != n:
        raise NotImplementedError("the gradient of linalg.lu_factor for non-square matrices "
                                  "is not implemented in jitorch")
    P, L, U = lu_unpack(LU, piv)
    # A = P L U:  gA = P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H, gL / gU read from the
    # packed gradient (tril(-1) / triu parts)
    inner = (L.mH @ gLU.tril(-1)).tril(-1) + (gLU.triu() @ U.mH).triu()
    inner = _solve_triangular(U.mH, inner, False, False, False)
    inner = _solve_triangular(L.mH, inner, True, True, True)
    return P @ inner


_lu_factor = defop("_lu_factor", _lu_factor_impl, tensors=("A",), kind="linalg", method=False,
                   vjp=_lu_factor_vjp, interpreted=_LAPACK, batch=LOOP,
                   autocast={"cpu": "fp32"})


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """`linalg.lu_factor_ex`: (LU, pivots, info); info > 0 names a zero pivot of U."""
    LU, piv, info = _lu_factor(A, pivot)
    if check_errors:
        _raise_singular(info)
    r = _lu_factor_ex_t(LU, piv, info)
    return r if out is None else _write_out(out, r)


def _raise_singular(info):
    arr = info._data.reshape(-1)
    bad = np.flatnonzero(arr > 0)
    if bad.size:
        i = int(bad[0])
        j = int(arr[i])
        pre = batch_prefix(info._data.reshape(info.shape + (1, 1)), i)
        raise LinAlgError(f"torch.linalg.lu_factor: {pre}U[{j},{j}] is zero and using it on "
                          f"lu_solve would result in a division by zero. If you still want to "
                          f"perform the factorization, consider calling linalg.lu(A, pivot) or "
                          f"linalg.lu_factor_ex(A, pivot)")


def lu_factor(A, *, pivot=True, out=None):
    """`linalg.lu_factor`: (LU, pivots) of A = P L U; errors on a singular U."""
    LU, piv, info = _lu_factor(A, pivot)
    _raise_singular(info)
    r = _lu_factor_t(LU, piv)
    return r if out is None else _write_out(out, r)


def lu(A, pivot=True, get_infos=False, out=None):
    """PyTorch's top-level `lu`: (LU, pivots) or, with get_infos, (LU, pivots, infos)."""
    LU, piv, info = _lu_factor(A, pivot)
    if not get_infos:  # PyTorch checks the factorisation unless the infos are returned
        _raise_singular(info)
    r = (LU, piv, info) if get_infos else (LU, piv)
    return r if out is None else _write_out(out, r)


# --- lu_unpack ----------------------------------------------------------------------------------
def _perm_matrix(piv, m, dtype):
    """P (batch, m, m) with A = P L U from 1-based LAPACK row swaps."""
    batch = piv.shape[:-1]
    flat = piv.reshape((-1, piv.shape[-1]))
    P = np.zeros((flat.shape[0], m, m), dtype)
    for b, p in enumerate(flat):
        perm = np.arange(m)
        for i, j in enumerate(p - 1):
            perm[i], perm[j] = perm[j], perm[i]
        P[b, perm, np.arange(m)] = 1
    return P.reshape(batch + (m, m))


def _lu_unpack_impl(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    if LU_pivots.dtype != np.int32:
        raise RuntimeError("lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype. Note: this function is intended to be used "
                           "with the output produced by torch.linalg.lu_factor")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    empty = np.zeros((0,), LU_data.dtype)
    if unpack_data:
        L = np.tril(LU_data[..., :, :k], -1)
        idx = np.arange(k)
        L[..., idx, idx] = 1
        U = np.triu(LU_data[..., :k, :])
    else:
        L = U = empty
    P = _perm_matrix(LU_pivots, m, LU_data.dtype) if unpack_pivots else empty
    return P, np.ascontiguousarray(L), np.ascontiguousarray(U)


def _lu_unpack_vjp(grads, LU_data_shape, unpack_data):
    _, gL, gU = grads
    if not unpack_data:
        return None, None
    m, n = LU_data_shape[-2], LU_data_shape[-1]
    k = min(m, n)
    # the packed gradient: tril(gL, -1) on the first k columns, triu(gU) on the first k rows
    from .nn_misc import pad
    g = pad(gL.tril(-1), (0, n - k)) + pad(gU.triu(), (0, 0, 0, m - k))
    return g, None


def _lu_unpack_jvp(t_LU_data, LU_data, unpack_data):
    if not unpack_data:  # (P is a constant: no tangent)
        return None, None, None
    k = min(LU_data.shape[-2], LU_data.shape[-1])
    return None, t_LU_data[..., :, :k].tril(-1), t_LU_data[..., :k, :].triu()


lu_unpack_op = defop("lu_unpack", _lu_unpack_impl, tensors=("LU_data", "LU_pivots"),
                     kind="linalg", method=False, function=False, vjp=_lu_unpack_vjp,
                     jvp=_lu_unpack_jvp, interpreted=_LAPACK, batch=LOOP)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """(P, L, U) from `lu_factor`'s packed result: A = P L U."""
    r = _lu_unpack_t(*lu_unpack_op(LU_data, LU_pivots, unpack_data, unpack_pivots))
    return r if out is None else _write_out(out, r)


def linalg_lu(A, *, pivot=True, out=None):
    """`linalg.lu`: (P, L, U) with A = P L U."""
    LU, piv, _ = _lu_factor(A, pivot)
    r = _lu_t(*lu_unpack_op(LU, piv))
    return r if out is None else _write_out(out, r)


# --- lu_solve -----------------------------------------------------------------------------------
def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """`linalg.lu_solve`: X with A X = B (left) or X A = B, A^H with adjoint, from A's
    `lu_factor`; differentiable in LU and B (triangular solves and a permutation)."""
    if LU.shape[-1] != LU.shape[-2]:
        raise RuntimeError(f"linalg.lu_solve: A must be batches of square matrices, but they "
                           f"are {LU.shape[-2]} by {LU.shape[-1]} matrices")
    P, L, U = lu_unpack_op(LU, pivots)
    if left and not adjoint:  # P L U X = B
        X = _solve_triangular(U, _solve_triangular(L, P.mT @ B, False, True, True), True, True,
                              False)
    elif left:  # U^H L^H P^T X = B
        Y = _solve_triangular(L.mH, _solve_triangular(U.mH, B, False, True, False), True, True,
                              True)
        X = P @ Y
    elif not adjoint:  # X P L U = B
        Y = _solve_triangular(L, _solve_triangular(U, B, True, False, False), False, False,
                              True)
        X = Y @ P.mT
    else:  # X U^H L^H P^T = B
        X = _solve_triangular(U.mH, _solve_triangular(L.mH, B @ P, True, False, True), False,
                              False, False)
    return X if out is None else _write_out(out, X)


def lu_solve(b, LU_data, LU_pivots, *, out=None):
    """PyTorch's legacy `lu_solve(b, LU_data, LU_pivots)`."""
    return linalg_lu_solve(LU_data, LU_pivots, b, out=out)


Tensor.lu = lu
Tensor.lu_solve = lu_solve
Tensor.triangular_solve = triangular_solve


# --- the `_ex` forms, cond, tensorinv, tensorsolve, vander (compositions) ------------------------
_ex_t = {name: return_types.make(f"linalg_{name}_ex", fields) for name, fields in (
    ("inv", ("inverse", "info")), ("cholesky", ("L", "info")),
    ("solve", ("result", "info")))}


def _info_of(A, fn, check_errors, lapack=None):
    """(fn(A), info): info 0, or, when the factorisation fails and errors are not checked,
    a NaN result and info > 0 (LAPACK's, from getrf or `lapack`) per batch element."""
    from .. import _creation
    batch = tuple(A.shape[:-2])
    try:
        return fn(), _creation.zeros(batch, dtype=_int32())
    except LinAlgError:
        if check_errors:
            raise
        flat = A.detach()._data.reshape((-1,) + tuple(A.shape[-2:]))
        info_of = lapack or (lambda m: _getrf(m)[2])
        infos = np.array([max(info_of(m), 0) for m in flat], np.int32).reshape(batch)
        from .._creation import tensor
        return None, tensor(infos)


def _int32():
    from .. import _dtype as dt
    return dt.int32


def inv_ex(A, *, check_errors=False, out=None):
    """`linalg.inv_ex`: (inverse, info) without raising on a singular matrix."""
    from .linalg_decomp import inverse
    r, info = _info_of(A, lambda: inverse(A), check_errors)
    r = A * float("nan") if r is None else r
    res = _ex_t["inv"](r, info)
    return res if out is None else _write_out(out, res)


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """`linalg.cholesky_ex`: (L, info) without raising on a non-positive-definite matrix."""
    from .linalg_decomp import _potrf_info, linalg_cholesky
    r, info = _info_of(A, lambda: linalg_cholesky(A, upper=upper), check_errors, _potrf_info)
    r = A * float("nan") if r is None else r
    res = _ex_t["cholesky"](r, info)
    return res if out is None else _write_out(out, res)


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """`linalg.solve_ex`: (X, info) without raising on a singular A."""
    from .linalg_decomp import solve
    r, info = _info_of(A, lambda: solve(A, B, left=left), check_errors)
    r = B * float("nan") if r is None else r
    res = _ex_t["solve"](r, info)
    return res if out is None else _write_out(out, res)


def cond(A, p=None, *, out=None):
    """`linalg.cond`: the condition number in norm p (2-norm / -2 by singular values)."""
    from .linalg_decomp import inverse
    from .linalg_norm import matrix_norm
    from .linalg_svd import svdvals
    if p is None or p in (2, -2):
        s = svdvals(A)
        r = s[..., 0] / s[..., -1] if p != -2 else s[..., -1] / s[..., 0]
    else:
        r = matrix_norm(A, p) * matrix_norm(inverse(A), p)
    return r if out is None else _write_out(out, r)


def tensorinv(A, ind=2, *, out=None):
    """`linalg.tensorinv`: the inverse of A read as a prod(shape[:ind]) square matrix."""
    import math
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    left, right = tuple(A.shape[:ind]), tuple(A.shape[ind:])
    if math.prod(left) != math.prod(right):
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           "prod(self.shape[:ind]), but got "
                           f"{math.prod(right)} != {math.prod(left)}")
    from .linalg_decomp import inverse
    r = inverse(A.reshape(math.prod(left), math.prod(right))).reshape(right + left)
    return r if out is None else _write_out(out, r)


def tensorsolve(A, B, dims=None, *, out=None):
    """`linalg.tensorsolve`: X with tensordot(A, X, X.ndim) = B."""
    import math
    from .linalg_decomp import solve
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        rest = [d for d in range(A.dim()) if d not in dims]
        A = A.permute(rest + dims)
    xshape = tuple(A.shape[B.dim():])
    r = solve(A.reshape(math.prod(B.shape), math.prod(xshape)), B.reshape(-1)).reshape(xshape)
    return r if out is None else _write_out(out, r)


def linalg_vander(x, *, N=None):
    """`linalg.vander`: increasing powers x^0 ... x^(N-1) along a new last dim."""
    import jitorch
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n <= 1 and N is not None and n < 1:
        raise RuntimeError("N must be greater than 1.")
    cols = [jitorch.ones_like(x)]
    for _ in range(1, n):
        cols.append(cols[-1] * x)
    return jitorch.stack(cols, -1)
