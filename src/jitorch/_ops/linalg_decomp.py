"""Square-matrix linear algebra: inverse, det, slogdet, logdet, solve, cholesky, qr, eigh and
eigvalsh (the `jitorch.linalg` functions and PyTorch's top-level aliases).

Values come from numpy.linalg (LAPACK, like PyTorch's CPU backend, so e.g. eigenvector and QR
signs agree). Failures raise `LinAlgError` (a RuntimeError) with PyTorch's wording, including
the batch element and LAPACK's `info` (found with scipy's getrf/potrf). VJP/JVP rules are the
standard matrix-calculus formulas written with jitorch ops (matmul, solve, tril, ...), so they
compose to higher order; autograd reduces broadcast batch dims.
"""
from __future__ import annotations

import numpy as np

from .. import return_types
from .._tensor import Tensor
from ._linalg_util import (LinAlgError, batch_prefix, check_linalg, const,
                           first_bad, jt, pt, skew, solve_either_side)
from .linalg_diag import _linalg_diagonal
from .registry import _write_out, defop
from .batching import LEADING, LOOP

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_LAPACK = "a LAPACK factorisation: no Numba lowering yet"

__all__ = ["inverse", "det", "logdet", "slogdet", "cholesky", "qr"]

_slogdet_t = return_types.make("slogdet", ("sign", "logabsdet"))
_linalg_slogdet_t = return_types.make("linalg_slogdet", ("sign", "logabsdet"))
_qr_t = return_types.make("qr", ("Q", "R"))
_linalg_qr_t = return_types.make("linalg_qr", ("Q", "R"))
_linalg_eigh_t = return_types.make("linalg_eigh", ("eigenvalues", "eigenvectors"))


def _getrf_info(m) -> int:
    from scipy.linalg import get_lapack_funcs  # (only on a failure: scipy.linalg is heavy)
    getrf, = get_lapack_funcs(("getrf",), (m,))
    return getrf(m)[2]


def _potrf_info(m) -> int:
    from scipy.linalg import get_lapack_funcs
    potrf, = get_lapack_funcs(("potrf",), (m,))
    return potrf(m, lower=True)[1]


def _real(a: np.ndarray):
    return jt(a).to_real().np


def _offdiag(n: int, like: Tensor) -> Tensor:
    return const(1 - np.eye(n), like)


def _safe(e: Tensor) -> Tensor:
    """E with exact zeros (its diagonal, repeated eigenvalues) replaced by 1, so that dividing a
    matrix whose entries there are masked or zero stays finite."""
    return e + const(e._data == 0, e)


# --- inverse ----------------------------------------------------------------------------------
def _inverse(input):
    check_linalg("linalg.inv", input)
    if input.size == 0:
        return np.array(input, copy=True)
    try:
        with np.errstate(all="ignore"):
            return np.linalg.inv(input).astype(input.dtype, copy=False)
    except np.linalg.LinAlgError:
        pass
    i, info = first_bad(input, _getrf_info)
    what = f"The diagonal element {info} is zero, the" if info else "The"
    raise LinAlgError(f"linalg.inv: {batch_prefix(input, i or 0)}{what} inversion could not be "
                      "completed because the input matrix is singular.")


inverse = defop("inverse", _inverse, kind="linalg",
                vjp=lambda g, result: -(result.mT @ g @ result.mT),
                jvp=lambda t_input, result: -(result @ t_input @ result), interpreted=_LAPACK,
                batch=LEADING, autocast={"cpu": "fp32"})


def _inv_or_nan(a: Tensor) -> Tensor:
    """A^{-1} for the log-det rules; NaN for a singular matrix (its gradient is infinite)."""
    try:
        return inverse(a)
    except LinAlgError:
        return const(np.full(a.shape, np.nan), a)


# --- det / slogdet / logdet -------------------------------------------------------------------
def _det(input):
    check_linalg("linalg.det", input, kernel="lu_cpu")
    with np.errstate(all="ignore"):
        return np.asarray(np.linalg.det(input)).astype(input.dtype)


def _adjugate_np(a: np.ndarray) -> np.ndarray:
    """adj(A) = det(U) det(Vh) Vh^H diag(prod_{j != i} s_j) U^H, valid for singular A too."""
    u, s, vh = np.linalg.svd(a)
    n = s.shape[-1]
    prods = np.stack([np.prod(np.delete(s, i, axis=-1), axis=-1) for i in range(n)], -1)
    sign = np.linalg.det(u) * np.linalg.det(vh)
    return sign[..., None, None] * (np.conj(np.swapaxes(vh, -1, -2)) * prods[..., None, :]) \
        @ np.conj(np.swapaxes(u, -1, -2))


def _adj_t(input: Tensor, result: Tensor) -> Tensor:
    """The cofactor matrix adj(A)^T = det(A) A^{-T}: differentiable when A is invertible; a
    constant from the SVD when it is singular (first-order exact)."""
    with np.errstate(all="ignore"):
        if np.all(result._data != 0):
            try:
                return (result.unsqueeze(-1).unsqueeze(-1) * inverse(input)).mT
            except LinAlgError:
                pass
        return const(np.swapaxes(_adjugate_np(input._data), -1, -2), input)


det = defop("det", _det, kind="linalg",
            vjp=lambda g, input, result: g.unsqueeze(-1).unsqueeze(-1) * _adj_t(input, result),
            jvp=lambda t_input, input, result: (_adj_t(input, result) * t_input).sum((-2, -1)),
            interpreted=_LAPACK,
            batch=LEADING)


def _slogdet(input):
    check_linalg("linalg.slogdet", input)
    with np.errstate(all="ignore"):
        sign, lad = np.linalg.slogdet(input)
    return np.asarray(sign).astype(input.dtype), np.asarray(lad).astype(_real(input))


def _slogdet_vjp(grads, input):
    g_lad = grads[1]
    return g_lad.unsqueeze(-1).unsqueeze(-1) * _inv_or_nan(input).mT


def _slogdet_jvp(t_input, input, result):
    return result[0] * 0, (_inv_or_nan(input).mT * t_input).sum((-2, -1))


_slogdet_op = defop("_slogdet", _slogdet, kind="linalg", method=False, vjp=_slogdet_vjp,
                    jvp=_slogdet_jvp, interpreted=_LAPACK,
                    batch=LEADING)


def slogdet(input, *, out=None):
    """`(sign, logabsdet)` of det(input): the log-magnitude stays finite for huge/tiny dets."""
    r = _slogdet_t(*_slogdet_op(input))
    return r if out is None else _write_out(out, r)


def linalg_slogdet(A, *, out=None):
    r = _linalg_slogdet_t(*_slogdet_op(A))
    return r if out is None else _write_out(out, r)


def _logdet(input):
    check_linalg("logdet", input)
    with np.errstate(all="ignore"):
        sign, lad = np.linalg.slogdet(input)
        if np.iscomplexobj(input):
            return np.asarray(np.log(sign) + lad).astype(input.dtype)
        return np.asarray(np.where(sign < 0, np.nan, lad)).astype(input.dtype)


logdet = defop("logdet", _logdet, kind="linalg",
               vjp=lambda g, input: g.unsqueeze(-1).unsqueeze(-1) * _inv_or_nan(input).mT,
               jvp=lambda t_input, input: (_inv_or_nan(input).mT * t_input).sum((-2, -1)),
               interpreted=_LAPACK,
               batch=LEADING)


# --- solve --------------------------------------------------------------------------------------
def _is_vector_rhs(sa, sb) -> bool:
    """PyTorch treats B as (a batch of) vectors when it is 1-D or A's shape minus the last dim."""
    return len(sb) == 1 or (len(sb) == len(sa) - 1 and tuple(sb) == tuple(sa[:-1]))


def _solve(A, B, left=True):
    check_linalg("linalg.solve", A, kernel="lu_cpu")
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {pt(A)} and B of type {pt(B)} instead")
    vec = _is_vector_rhs(A.shape, B.shape)
    Bm = B[..., None] if vec else B
    n = A.shape[-1]
    if Bm.ndim < 2 or (Bm.shape[-2] if left else Bm.shape[-1]) != n:
        sb = f"{Bm.shape[-2]}x{Bm.shape[-1]}" if Bm.ndim >= 2 else f"{Bm.shape[-1]}"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{n} and {sb})")
    X = solve_either_side(A, Bm, left, _lu_solve_or_raise)
    return (X[..., 0] if vec else X).astype(A.dtype, copy=False)


def _lu_solve_or_raise(A, B):
    try:
        return np.linalg.solve(A, B)
    except np.linalg.LinAlgError:
        i, _ = first_bad(A, _getrf_info)
        raise LinAlgError(f"torch.linalg.solve: {batch_prefix(A, i or 0)}The solver failed "
                          "because the input matrix is singular.") from None


def _as_matrix(vec: bool, *ts):
    return [t.unsqueeze(-1) if vec else t for t in ts]


def _drop_last(t: Tensor) -> Tensor:
    return t.reshape(tuple(t.shape[:-1]))


def _solve_vjp(g, A, B, result, left):
    vec = _is_vector_rhs(A.shape, B.shape)
    X, G = _as_matrix(vec, result, g)
    if left:  # X = A^{-1} B
        gB = _linalg_solve(A.mT, G)
        gA = -(gB @ X.mT)
    else:  # X = B A^{-1}
        gB = _linalg_solve(A.mT, G, left=False)
        gA = -(X.mT @ gB)
    return gA, _drop_last(gB) if vec else gB


def _solve_jvp(t_A, t_B, A, B, result, left):
    vec = _is_vector_rhs(A.shape, B.shape)
    X, tB = _as_matrix(vec, result, t_B)
    if left:
        r = _linalg_solve(A, tB - t_A @ X)
    else:
        r = _linalg_solve(A, tB - X @ t_A, left=False)
    return _drop_last(r) if vec else r


_linalg_solve = defop("_linalg_solve", _solve, tensors=("A", "B"), kind="linalg", method=False,
                      vjp=_solve_vjp, jvp=_solve_jvp, interpreted=_LAPACK,
                      batch=LOOP, autocast={"cpu": "fp32"})


def solve(A, B, *, left=True, out=None):
    """`linalg.solve`: X with AX = B (left=True) or XA = B; B may be a (batch of) vector(s)."""
    r = _linalg_solve(A, B, left)
    return r if out is None else _write_out(out, r)


# --- cholesky -----------------------------------------------------------------------------------
def _chol(input, upper, name):
    if input.size == 0:
        return np.array(input, copy=True)
    try:
        with np.errstate(all="ignore"):
            L = np.linalg.cholesky(input)
    except np.linalg.LinAlgError:
        i, info = first_bad(input, _potrf_info)
        raise LinAlgError(f"{name}: {batch_prefix(input, i or 0)}The factorization could not be "
                          "completed because the input is not positive-definite (the leading "
                          f"minor of order {info} is not positive-definite).") from None
    L = L.astype(input.dtype, copy=False)
    return np.conj(np.swapaxes(L, -1, -2)) if upper else L


def _cholesky(input, upper=False):
    check_linalg("cholesky", input, kernel="cholesky_cpu", ints_too=True)
    return _chol(input, upper, "cholesky")


def _linalg_cholesky_impl(input, upper=False):
    check_linalg("linalg.cholesky", input, kernel="cholesky_cpu")
    return _chol(input, upper, "linalg.cholesky")


def _cholesky_vjp(g, result, upper):
    # Murray (2016): gA = L^{-H} Phi(L^H gL) L^{-1}, returned symmetric as PyTorch does
    L, gL = (result.mT, g.mT) if upper else (result, g)
    P = (L.mT @ gL).tril()
    P = 0.5 * (P + P.tril(-1).mT)
    return _linalg_solve(L, _linalg_solve(L.mT, P), left=False)


def _cholesky_jvp(t_input, result, upper):
    # dL = L Phi(L^{-1} dA L^{-H}), Phi = lower triangle with the diagonal halved
    L = result.mT if upper else result
    Linv = inverse(L)
    phi = Linv @ t_input @ Linv.mT
    phi = phi.tril() - 0.5 * _linalg_diagonal(phi, 0, -2, -1).diag_embed()
    dL = L @ phi
    return dL.mT if upper else dL


cholesky = defop("cholesky", _cholesky, kind="linalg", vjp=_cholesky_vjp, jvp=_cholesky_jvp,
                 interpreted=_LAPACK,
                 batch=LEADING, autocast={"cpu": "fp32"})
_linalg_cholesky = defop("_linalg_cholesky", _linalg_cholesky_impl, kind="linalg",
                         method=False, vjp=_cholesky_vjp, jvp=_cholesky_jvp, interpreted=_LAPACK,
                         batch=LEADING, autocast={"cpu": "fp32"})


def linalg_cholesky(A, *, upper=False, out=None):
    """`linalg.cholesky`: L with A = L L^H (or U = L^H with upper=True)."""
    r = _linalg_cholesky(A, upper)
    return r if out is None else _write_out(out, r)


# --- qr -------------------------------------------------------------------------------------------
def _qr(A, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    check_linalg("linalg.qr", A, square=False, kernel="geqrf_cpu")
    m, n = A.shape[-2:]
    k = min(m, n)
    if A.size == 0:
        batch = A.shape[:-2]
        qc = m if mode == "complete" else k
        Q = np.broadcast_to(np.eye(m, qc, dtype=A.dtype), batch + (m, qc)).copy()
        R = np.zeros(batch + (qc, n), A.dtype)
    else:
        with np.errstate(all="ignore"):
            if mode == "r":
                R = np.linalg.qr(A, mode="r")
            else:
                Q, R = np.linalg.qr(A, mode=mode)
    if mode == "r":
        Q = np.zeros((0,), A.dtype)
    return Q.astype(A.dtype, copy=False), R.astype(A.dtype, copy=False)


def _qr_check_diff(mode, m, n):
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")


def _qr_back_tall(gQ, gR, Q, R):
    # m >= n: gA = (gQ + Q copyutl(M)) R^{-H},  M = gR R^H - Q^H gQ
    M = gR @ R.mT - Q.mT @ gQ
    N = M.triu() + M.triu(1).mT
    return _linalg_solve(R.mT, gQ + Q @ N, left=False)


def _qr_selectors(n, m, like):
    e = np.eye(n)
    return const(e[:, :m], like), const(e[:, m:], like)


def _qr_vjp(grads, A, result, mode):
    gQ, gR = grads
    Q, R = result
    m, n = A.shape[-2:]
    _qr_check_diff(mode, m, n)
    if m >= n:
        return _qr_back_tall(gQ, gR, Q, R)
    # wide: A = [X | Y] with X = Q U square; Y = Q V only moves through Q
    E1, E2 = _qr_selectors(n, m, A)
    Y, U, gU, gV = A @ E2, R @ E1, gR @ E1, gR @ E2
    gX = _qr_back_tall(gQ + Y @ gV.mT, gU, Q, U)
    return gX @ E1.mT + (Q @ gV) @ E2.mT


def _qr_jvp_tall(dA, Q, R):
    X = Q.mT @ _linalg_solve(R, dA, left=False)  # Q^H dA R^{-1}
    low = X.tril(-1)
    XmC = X - (low - low.mT)  # dR R^{-1}: upper triangular
    return _linalg_solve(R, dA, left=False) - Q @ XmC, XmC @ R


def _qr_jvp(t_A, A, result, mode):
    Q, R = result
    m, n = A.shape[-2:]
    _qr_check_diff(mode, m, n)
    if m >= n:
        return _qr_jvp_tall(t_A, Q, R)
    E1, E2 = _qr_selectors(n, m, A)
    dQ, dU = _qr_jvp_tall(t_A @ E1, Q, R @ E1)
    dV = dQ.mT @ (A @ E2) + Q.mT @ (t_A @ E2)
    return dQ, dU @ E1.mT + dV @ E2.mT


_linalg_qr = defop("_linalg_qr", _qr, tensors=("A",), kind="linalg", method=False,
                   vjp=_qr_vjp, jvp=_qr_jvp, interpreted=_LAPACK,
                   batch=LEADING, autocast={"cpu": "fp32"})


def qr(input, some=True, *, out=None):
    """Deprecated `torch.qr`: `some=True` is mode='reduced', False is 'complete'."""
    r = _qr_t(*_linalg_qr(input, "reduced" if some else "complete"))
    return r if out is None else _write_out(out, r)


def linalg_qr(A, mode="reduced", *, out=None):
    r = _linalg_qr_t(*_linalg_qr(A, mode))
    return r if out is None else _write_out(out, r)


# --- eigh / eigvalsh ------------------------------------------------------------------------------
def _eigh_np(A, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    check_linalg("linalg.eigh", A, kernel="linalg_eigh_cpu", ints_too=True)
    if A.size == 0:
        return np.zeros(A.shape[:-1], _real(A)), np.array(A, copy=True)
    with np.errstate(all="ignore"):
        w, v = np.linalg.eigh(A, UPLO)
    return w.astype(_real(A), copy=False), v.astype(A.dtype, copy=False)


def _eigh_vjp(grads, result):
    # gA = V (diag(gL) + skew(V^H gV) / 2E) V^H,  E_ij = L_j - L_i off the diagonal: V^H gV is
    # projected on the skew matrices (the tangent space of the orthogonal group), so gA comes
    # out symmetric, as in PyTorch
    gL, gV = grads
    L, V = result
    E = _safe(L.unsqueeze(-2) - L.unsqueeze(-1))
    inner = 0.5 * skew(V.mT @ gV) / E * _offdiag(L.shape[-1], L) + gL.diag_embed()
    return V @ inner @ V.mT


def _eigh_jvp(t_A, result):
    L, V = result
    P = V.mT @ t_A @ V
    E = _safe(L.unsqueeze(-2) - L.unsqueeze(-1))
    return _linalg_diagonal(P, 0, -2, -1), V @ (P / E * _offdiag(L.shape[-1], L))


_linalg_eigh = defop("_linalg_eigh", _eigh_np, tensors=("A",), kind="linalg", method=False,
                     vjp=_eigh_vjp, jvp=_eigh_jvp, interpreted=_LAPACK,
                     batch=LEADING, autocast={"cpu": "fp32"})


def eigh(A, UPLO="L", *, out=None):
    """Eigenvalues (ascending) and orthonormal eigenvectors of a symmetric/Hermitian matrix,
    read from its lower (UPLO='L') or upper triangle."""
    r = _linalg_eigh_t(*_linalg_eigh(A, UPLO))
    return r if out is None else _write_out(out, r)


def _eigvalsh_impl(A, UPLO="L"):
    return _eigh_np(A, UPLO)[0]


def _eigvalsh_vjp(g, A, UPLO):
    V = _linalg_eigh(A, UPLO)[1]
    return (V * g.unsqueeze(-2)) @ V.mT


def _eigvalsh_jvp(t_A, A, UPLO):
    V = _linalg_eigh(A, UPLO)[1]
    return _linalg_diagonal(V.mT @ t_A @ V, 0, -2, -1)


_linalg_eigvalsh = defop("_linalg_eigvalsh", _eigvalsh_impl, tensors=("A",), kind="linalg",
                         method=False, vjp=_eigvalsh_vjp, jvp=_eigvalsh_jvp, interpreted=_LAPACK,
                         batch=LEADING, autocast={"cpu": "fp32"})


def eigvalsh(A, UPLO="L", *, out=None):
    r = _linalg_eigvalsh(A, UPLO)
    return r if out is None else _write_out(out, r)


def linalg_inv(A, *, out=None):
    return inverse(A, out=out)


def linalg_det(A, *, out=None):
    return det(A, out=out)


Tensor.slogdet = slogdet
Tensor.qr = qr
