"""General (non-symmetric) eigendecomposition: `linalg.eig`, `linalg.eigvals` (issue 19).

Values: numpy.linalg.eig (LAPACK geev, as PyTorch's CPU backend: unit-norm eigenvectors in the
same order and phase); results are always complex (complex64 for float32 input), as PyTorch.
Autograd (PyTorch's formulas; the rules take complex gradients):
  eig:     gA = V^-H (diag(gL) + (V^H gV - V^H V re(diag(V^H gV))) / conj(L_j - L_i)) V^H
  eigvals: gA = V^-H diag(gL) V^H
and a real A receives the real part (autograd's rule for real inputs of complex ops).
"""
from __future__ import annotations

import numpy as np

from .. import return_types
from ._linalg_util import check_linalg
from .registry import _write_out, defop
from .batching import LEADING

_LAPACK = "a LAPACK eigendecomposition (complex results): no Numba lowering"

__all__: list = []

_linalg_eig_t = return_types.make("linalg_eig", ("eigenvalues", "eigenvectors"))


def _complex_of(a):
    return np.complex64 if a.dtype in (np.float32, np.complex64) else np.complex128


def _eig_np(A):
    check_linalg("linalg.eig", A, kernel="linalg_eig_cpu", ints_too=True)
    c = _complex_of(A)
    if A.size == 0:
        return np.zeros(A.shape[:-1], c), np.zeros(A.shape, c)
    if not np.isfinite(A).all():
        raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
    with np.errstate(all="ignore"):
        w, v = np.linalg.eig(A)
    return w.astype(c), v.astype(c)


def _eigvals_np(A):
    return _eig_np(A)[0]


def _diag_of(M):
    return M.diagonal(0, -2, -1)


def _eig_backward(gL, gV, L, V):
    Vh = V.mH
    if gV is None:
        inner = gL.diag_embed()
    else:
        VhgV = Vh @ gV
        inner = VhgV - Vh @ (V * _diag_of(VhgV).real.to(V.dtype).unsqueeze(-2))
        Lc = L.conj()
        E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1)
        n = L.shape[-1]
        from .._creation import eye
        eye_n = eye(n, dtype=E.dtype)
        E = E * (1 - eye_n) + eye_n  # ones on the diagonal: the division leaves it alone
        inner = inner / E * (1 - eye_n)
        if gL is not None:
            inner = inner + gL.diag_embed()
    from .linalg_decomp import solve
    return solve(Vh, inner @ Vh)


def _eig_vjp(grads, result):
    gL, gV = grads
    L, V = result
    return _eig_backward(gL, gV, L, V)


_linalg_eig = defop("_linalg_eig", _eig_np, tensors=("A",), kind="linalg", method=False,
                    vjp=_eig_vjp, interpreted=_LAPACK, batch=LEADING,
                    extra={"complex_grad": True}, autocast={"cpu": "fp32"})


def _eigvals_vjp(g, A):
    L, V = _linalg_eig(A.detach())
    return _eig_backward(g, None, L, V)


_linalg_eigvals = defop("_linalg_eigvals", _eigvals_np, tensors=("A",), kind="linalg",
                        method=False, vjp=_eigvals_vjp, interpreted=_LAPACK, batch=LEADING,
                        extra={"complex_grad": True}, autocast={"cpu": "fp32"})


def eig(A, *, out=None):
    """`linalg.eig`: complex eigenvalues and unit-norm eigenvectors (A V = V diag(L))."""
    r = _linalg_eig_t(*_linalg_eig(A))
    return r if out is None else _write_out(out, r)


def eigvals(A, *, out=None):
    """`linalg.eigvals`: the complex eigenvalues of a square matrix (batch)."""
    r = _linalg_eigvals(A)
    return r if out is None else _write_out(out, r)
