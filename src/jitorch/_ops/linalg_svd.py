"""SVD-based linear algebra: svd (new and old API), svdvals, pinv/pinverse, lstsq and
matrix_rank.

The SVD VJP is PyTorch's formula (complete-matrix extra columns of U/Vh are ignored, as they
are not unique); svdvals has its own op whose rule needs no division by singular-value gaps, so
it stays finite for repeated singular values. pinv's rules are the closed-form derivative of
the pseudo-inverse (valid where the rank is locally constant); lstsq differentiates through it.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .. import return_types
from .._tensor import Tensor
from ._linalg_util import LinAlgError, broadcast_shape, check_linalg, const, jt, pt, skew, sym
from .linalg_decomp import _offdiag, _safe
from .linalg_diag import _linalg_diagonal
from .registry import _write_out, defop
from .batching import LEADING, LOOP

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_LAPACK = "a LAPACK routine (SVD, least squares): no Numba lowering yet"

__all__ = ["svd", "pinverse"]

_svd_t = return_types.make("svd", ("U", "S", "V"))
_linalg_svd_t = return_types.make("linalg_svd", ("U", "S", "Vh"))
_lstsq_t = return_types.make("linalg_lstsq", ("solution", "residuals", "rank",
                                              "singular_values"))

_FLOAT_TYPES = (dt.float32, dt.float64, dt.complex64, dt.complex128)


def _real(a: np.ndarray):
    return jt(a).to_real().np


def _ct(a: np.ndarray) -> np.ndarray:
    return np.conj(np.swapaxes(a, -1, -2))


def np_svd(a: np.ndarray, full_matrices: bool):
    """numpy.linalg.svd, plus the empty cases LAPACK is not asked about (PyTorch's shapes) and
    PyTorch's refusal of non-finite input."""
    m, n = a.shape[-2:]
    k = min(m, n)
    if a.size == 0:
        batch = a.shape[:-2]
        u = np.broadcast_to(np.eye(m, m if full_matrices else k, dtype=a.dtype), batch + (
            m, m if full_matrices else k)).copy()
        vh = np.broadcast_to(np.eye(n if full_matrices else k, n, dtype=a.dtype), batch + (
            n if full_matrices else k, n)).copy()
        return u, np.zeros(batch + (k,), _real(a)), vh
    if not np.isfinite(a).all():
        # LAPACK's gesdd may loop forever on nan/inf (the process hangs); PyTorch refuses them
        raise LinAlgError("linalg.svd: The algorithm failed to converge because the input "
                          "matrix contained non-finite values.")
    with np.errstate(all="ignore"):
        u, s, vh = np.linalg.svd(a, full_matrices=full_matrices)
    return (u.astype(a.dtype, copy=False), s.astype(_real(a), copy=False),
            vh.astype(a.dtype, copy=False))


# --- svd ----------------------------------------------------------------------------------------
def _svd(A, full_matrices=True):
    check_linalg("linalg.svd", A, square=False, kernel="linalg_svd_cpu")
    return np_svd(A, full_matrices)


def _narrow_uv(A, U, Vh, gU, gVh, full_matrices):
    """The extra columns of a complete SVD are arbitrary: only the first k carry gradient."""
    m, n = A.shape[-2:]
    k = min(m, n)
    if full_matrices and m != n:
        Em = const(np.eye(m)[:, :k], A)
        En = const(np.eye(n)[:k, :], A)
        U, Vh = U @ Em, En @ Vh
        gU = None if gU is None else gU @ Em
        gVh = None if gVh is None else En @ gVh
    return U, Vh, gU, gVh


def _svd_vjp(grads, A, result, full_matrices):
    # gA = U [(skew(U^H gU) / E) S + S (skew(V^H gV) / E) + diag(gS)] V^H
    #      + (I_m - UU^H) gU S^{-1} V^H + U S^{-1} gV^H (I_n - VV^H),   E_jk = s_k^2 - s_j^2
    gU, gS, gVh = grads
    U, S, Vh = result
    U, Vh, gU, gVh = _narrow_uv(A, U, Vh, gU, gVh, full_matrices)
    m, n = A.shape[-2:]
    V, gV = Vh.mT, gVh.mT
    S2 = S * S
    E = _safe(S2.unsqueeze(-2) - S2.unsqueeze(-1))
    inner = (skew(U.mT @ gU) / E) * S.unsqueeze(-2) + S.unsqueeze(-1) * (skew(V.mT @ gV) / E)
    gA = U @ (inner + gS.diag_embed()) @ Vh
    if m > n:
        gUS = gU / S.unsqueeze(-2)
        gA = gA + (gUS - U @ (U.mT @ gUS)) @ Vh
    elif m < n:
        gVS = gV / S.unsqueeze(-2)
        gA = gA + U @ (gVS - V @ (V.mT @ gVS)).mT
    return gA


def _svd_jvp(t_A, A, result, full_matrices):
    # dP = U^H dA V; dS = diag(dP); dU = U (sym(dP S) / E) + (I - UU^H) dA V S^{-1}; same for V
    U, S, Vh = result
    m, n = A.shape[-2:]
    if full_matrices and m != n:
        raise NotImplementedError("linalg.svd: forward AD with full_matrices=True is only "
                                  "supported for square matrices")
    V = Vh.mT
    dP = U.mT @ t_A @ V
    S2 = S * S
    E = _safe(S2.unsqueeze(-2) - S2.unsqueeze(-1))
    off = _offdiag(S.shape[-1], S)
    dU = U @ (sym(dP * S.unsqueeze(-2)) / E * off)
    dV = V @ (sym(S.unsqueeze(-1) * dP) / E * off)
    if m > n:
        dAV = t_A @ V
        dU = dU + (dAV - U @ (U.mT @ dAV)) / S.unsqueeze(-2)
    elif m < n:
        dAU = t_A.mT @ U
        dV = dV + (dAU - V @ (V.mT @ dAU)) / S.unsqueeze(-2)
    return dU, _linalg_diagonal(dP, 0, -2, -1), dV.mT


_linalg_svd = defop("_linalg_svd", _svd, tensors=("A",), kind="linalg", method=False,
                    vjp=_svd_vjp, jvp=_svd_jvp, interpreted=_LAPACK,
                    batch=LEADING, autocast={"cpu": "fp32"})


def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    """`linalg.svd`: A = U diag(S) Vh, singular values descending."""
    if driver is not None:
        raise RuntimeError("torch.linalg.svd: keyword argument `driver=` is only supported on "
                           "CUDA inputs with cuSOLVER backend.")
    r = _linalg_svd_t(*_linalg_svd(A, full_matrices))
    return r if out is None else _write_out(out, r)


def _svdvals(A):
    check_linalg("linalg.svd", A, square=False, kernel="linalg_svd_cpu")
    return np_svd(A, False)[1]


def _svdvals_vjp(g, A):
    U, _, Vh = _linalg_svd(A, False)
    return (U * g.unsqueeze(-2)) @ Vh


def _svdvals_jvp(t_A, A):
    U, _, Vh = _linalg_svd(A, False)
    return _linalg_diagonal(U.mT @ t_A @ Vh.mT, 0, -2, -1)


_linalg_svdvals = defop("_linalg_svdvals", _svdvals, tensors=("A",), kind="linalg",
                        method=False, vjp=_svdvals_vjp, jvp=_svdvals_jvp, interpreted=_LAPACK,
                        batch=LEADING, autocast={"cpu": "fp32"})


def svdvals(A, *, driver=None, out=None):
    r = _linalg_svdvals(A)
    return r if out is None else _write_out(out, r)


def svd(input, some=True, compute_uv=True, *, out=None):
    """Deprecated `torch.svd`: returns V (not Vh); some=True is the reduced SVD; without
    compute_uv, U and V are zero-filled full-size matrices."""
    if compute_uv:
        U, S, Vh = _linalg_svd(input, not some)
        r = _svd_t(U, S, Vh.mT)
    else:
        S = _linalg_svdvals(input)
        m, n = input.shape[-2:]
        batch = tuple(input.shape[:-2])
        z = np.zeros
        r = _svd_t(Tensor._make(z(batch + (m, m), input._dtype.np), input._dtype), S,
                   Tensor._make(z(batch + (n, n), input._dtype.np), input._dtype))
    return r if out is None else _write_out(out, r)


# --- tolerances shared by pinv and matrix_rank --------------------------------------------------
def _arr(x):
    return None if x is None else np.asarray(x._data if isinstance(x, Tensor) else x)


def _tol(smax, atol, rtol, a):
    """max(atol, rtol * smax); rtol defaults to eps * max(m, n) unless a positive atol is given."""
    atol, rtol = _arr(atol), _arr(rtol)
    if rtol is None:
        pos_atol = atol is not None and np.any(atol > 0)
        rtol = 0.0 if pos_atol else np.finfo(_real(a)).eps * max(a.shape[-2:])
    if atol is None:
        atol = 0.0
    return np.maximum(atol, rtol * smax)


def _spectrum(a, hermitian):
    """(u, s, vh) with A = u diag(s) vh; for hermitian input via eigh (s may be negative)."""
    if hermitian:
        if a.size == 0:
            return np_svd(a, False)
        with np.errstate(all="ignore"):
            w, v = np.linalg.eigh(a)
        return v, w.astype(_real(a)), _ct(v)
    return np_svd(a, False)


# --- pinv ---------------------------------------------------------------------------------------
def _pinv(input, atol=None, rtol=None, hermitian=False):
    if jt(input) not in _FLOAT_TYPES or input.ndim < 2:
        raise RuntimeError(f"linalg.pinv({pt(input)}{{{list(input.shape)}}}): expected a tensor "
                           "with 2 or more dimensions of float, double, cfloat or cdouble types")
    if hermitian:
        check_linalg("linalg.eigh", input)
    u, s, vh = _spectrum(input, hermitian)
    tol = _tol(np.abs(s).max(-1, initial=0), atol, rtol, input)
    batch = np.broadcast_shapes(tol.shape, s.shape[:-1])
    s = np.broadcast_to(s, batch + s.shape[-1:])
    with np.errstate(all="ignore"):
        sinv = np.where(np.abs(s) > np.asarray(tol)[..., None], 1 / s, 0).astype(s.dtype)
        r = (_ct(vh) * sinv[..., None, :]) @ _ct(u)
    return np.asarray(r).astype(input.dtype, copy=False)


def _pinv_vjp(g, input, result):
    return pinv_backward(g, result, input)


def pinv_backward(g, pinvA, A):
    """PyTorch's closed form (products kept as small as the shape allows)."""
    m, n = A.shape[-2:]
    pinvAh, gh = pinvA.mT, g.mT
    if m <= n:
        K = gh @ pinvA
        KpinvAh = K @ pinvAh
        return (-(pinvA @ K).mT + KpinvAh - (A @ pinvA) @ KpinvAh
                + (pinvAh @ pinvA) @ (gh - K @ A))
    K = pinvA @ gh
    pinvAhK = pinvAh @ K
    return (-(K @ pinvA).mT + (gh - A @ K) @ pinvA @ pinvAh + pinvAhK
            - pinvAhK @ pinvA @ A)


def _pinv_jvp(t_input, input, result):
    # dA+ = -A+ dA A+ + A+ A+^H dA^H (I - A A+) + (I - A+ A) dA^H A+^H A+
    P, A, dA = result, input, t_input
    m, n = A.shape[-2:]
    Im, In = const(np.eye(m), A), const(np.eye(n), A)
    return (-(P @ dA @ P) + P @ P.mT @ dA.mT @ (Im - A @ P)
            + (In - P @ A) @ dA.mT @ P.mT @ P)


_linalg_pinv = defop("_linalg_pinv", _pinv, kind="linalg", method=False, vjp=_pinv_vjp,
                     jvp=_pinv_jvp, interpreted=_LAPACK,
                     batch=LEADING, autocast={"cpu": "fp32"})


def pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """`linalg.pinv`: the Moore-Penrose pseudo-inverse; singular values at or below
    max(atol, rtol * largest) count as zero. A positional `rcond` is the old name of rtol."""
    if rcond is not None:
        rtol = rcond
    r = _linalg_pinv(A, atol, rtol, hermitian)
    return r if out is None else _write_out(out, r)


def pinverse(input, rcond=1e-15):
    """`torch.pinverse`: `linalg.pinv` with a relative cutoff."""
    return _linalg_pinv(input, None, rcond, False)


# --- matrix_rank ----------------------------------------------------------------------------
def _matrix_rank(A, atol=None, rtol=None, hermitian=False):
    if jt(A) not in _FLOAT_TYPES:
        raise RuntimeError("This function doesn't handle types other than float and double")
    check_linalg("linalg.eigh" if hermitian else "linalg.svd", A, square=hermitian)
    s = np.abs(_spectrum(A, hermitian)[1])
    tol = _tol(s.max(-1, initial=0), atol, rtol, A)
    return np.asarray((s > np.asarray(tol)[..., None]).sum(-1), dtype=np.int64)


_linalg_matrix_rank = defop("_linalg_matrix_rank", _matrix_rank, tensors=("A",), kind="linalg",
                            method=False, nondiff=True, interpreted=_LAPACK,
                            batch=LEADING, autocast={"cpu": "fp32"})


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """`linalg.matrix_rank`: the number of singular values above the tolerance (int64). A
    positional `tol` is the old name of atol."""
    if tol is not None:
        atol = tol
    r = _linalg_matrix_rank(A, atol, rtol, hermitian)
    return r if out is None else _write_out(out, r)


# --- lstsq ----------------------------------------------------------------------------------
_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq(A, B, rcond=None, driver=None):
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A.dtype != B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {pt(A)} and other's dtype {pt(B)}")
    if jt(A) not in _FLOAT_TYPES:
        raise RuntimeError("This function doesn't handle types other than float and double")
    driver = "gelsy" if driver is None else driver
    if driver not in _DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, "
                           "gelsy, gelsd, gelss)")
    vec = B.ndim == A.ndim - 1
    Bm = B[..., None] if vec else B
    if A.shape[-2] != Bm.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    batch = broadcast_shape(A.shape[:-2], Bm.shape[:-2])
    m, n = A.shape[-2:]
    Ab = np.broadcast_to(A, batch + (m, n))
    Bb = np.broadcast_to(Bm, batch + Bm.shape[-2:])
    u, s, vh = np_svd(Ab, False)
    if rcond is None:
        rcond = np.finfo(_real(A)).eps * max(m, n)
    keep = s > rcond * s.max(-1, initial=0)[..., None]
    rank = keep.sum(-1)
    with np.errstate(all="ignore"):
        sinv = np.where(keep, 1 / s, 0).astype(s.dtype)
        X = _ct(vh) @ (sinv[..., :, None] * (_ct(u) @ Bb))
        real = _real(A)
        if m > n and driver != "gelsy" and np.all(rank == n) and X.size:
            res = (np.abs(Ab @ X - Bb) ** 2).sum(-2).astype(real)
        else:
            res = np.zeros((0,), real)
    rank = np.zeros((0,), np.int64) if driver == "gels" else rank.astype(np.int64)
    sv = s if driver in ("gelsd", "gelss") else np.zeros((0,), real)
    X = X.astype(A.dtype, copy=False)
    return (X[..., 0] if vec else X), res, rank, sv.astype(real, copy=False)


def _lstsq_vjp(grads, A, B, result):
    # X = A+ B (the minimum-norm solution); residuals ||AX - B||^2 are stationary in X
    gX, gRes = grads[0], grads[1]
    X, res = result[0], result[1]
    if X.numel() == 0:
        return None, None
    vec = B.ndim == A.ndim - 1
    Xm, Gm, Bm = [t.unsqueeze(-1) if vec else t for t in (X, gX, B)]
    pA = _linalg_pinv(A, None, None, False)
    gB = pA.mT @ Gm
    gA = pinv_backward(Gm @ Bm.mT, pA, A)
    if res.numel() and gRes is not None:
        r = (A @ Xm - Bm) * gRes.unsqueeze(-2)
        gA = gA + 2 * r @ Xm.mT
        gB = gB - 2 * r
    if result[3].numel() and grads[3] is not None:  # singular values (gelsd/gelss drivers)
        gA = gA + _svdvals_vjp(grads[3], A)
    return gA, (gB.reshape(tuple(gB.shape[:-1])) if vec else gB)


def _lstsq_jvp(t_A, t_B, A, B, result):
    X, res, _, sv = result
    vec = B.ndim == A.ndim - 1
    Xm, tBm, Bm = [t.unsqueeze(-1) if vec else t for t in (X, t_B, B)]
    pA = _linalg_pinv(A, None, None, False)
    dX = _pinv_jvp(t_A, A, pA) @ Bm + pA @ tBm
    dX = dX.reshape(tuple(X.shape))
    d_res = None
    if res.numel():  # residuals are stationary in X: only A and B move them
        d_res = (2 * (A @ Xm - Bm) * (t_A @ Xm - tBm)).sum(-2)
    d_sv = _svdvals_jvp(t_A, A) if sv.numel() else None
    return dX, d_res, None, d_sv


_linalg_lstsq = defop("_linalg_lstsq", _lstsq, tensors=("A", "B"), kind="linalg",
                      method=False, vjp=_lstsq_vjp, jvp=_lstsq_jvp, interpreted=_LAPACK,
                      batch=LOOP, autocast={"cpu": "fp32"})


def lstsq(A, B, rcond=None, *, driver=None):
    """`linalg.lstsq`: (solution, residuals, rank, singular_values); which extras are filled
    depends on the LAPACK driver as in PyTorch (default 'gelsy': rank only)."""
    return _lstsq_t(*_linalg_lstsq(A, B, rcond, driver))


Tensor.svd = svd
Tensor.pinverse = pinverse
