"""`matrix_exp` (`torch.matrix_exp`, `linalg.matrix_exp`, `Tensor.matrix_exp`) and the
composite `dist` (`torch.dist`, `Tensor.dist`), and the composite `linalg.householder_product`.

matrix_exp evaluates with SciPy's scaling-and-squaring Padé `expm` per matrix; its gradient is
PyTorch's: for cotangent G, the upper-right block of exp([[A^H, G], [0, A^H]]), built from
jitorch ops so that it is itself differentiable. `dist` is `vector_norm(input - other, p)`, so
its gradient is the norm's. matrix_exp's forward-mode derivative is the upper-right block of
exp([[A, E], [0, A]]) for tangent E.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._tensor import Tensor
from ._linalg_util import pt
from .registry import defop

__all__ = ["matrix_exp", "dist"]  # householder_product: `linalg` only


def _matrix_exp(input):
    a = input
    if a.ndim < 2:
        raise RuntimeError("linalg.matrix_exp: The input tensor A must have at least 2 "
                           "dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices, but they "
                           f"are {a.shape[-2]} by {a.shape[-1]} matrices")
    if dt.from_numpy_dtype(a.dtype).category < dt.FLOAT:
        raise RuntimeError("linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {pt(a)}")
    import scipy.linalg  # (imported on use: it is heavy for `import jitorch`)
    work = a.astype(np.result_type(a.dtype, np.float32))
    flat = work.reshape((-1,) + a.shape[-2:])
    out = np.empty_like(flat)
    for i in range(flat.shape[0]):
        out[i] = scipy.linalg.expm(flat[i]) if a.shape[-1] else flat[i]
    return out.reshape(a.shape).astype(a.dtype)


def _matrix_exp_vjp(g, input):
    from .join import cat
    n = input.shape[-1]
    ah = input.mH
    top = cat([ah, g], -1)
    bottom = cat([g.new_zeros(g.shape), ah], -1)
    big = cat([top, bottom], -2).matrix_exp()
    return big[..., :n, n:]


def _matrix_exp_jvp(t_input, input):
    """The directional derivative: the upper-right block of exp([[A, E], [0, A]])."""
    from .join import cat
    n = input.shape[-1]
    top = cat([input, t_input], -1)
    bottom = cat([t_input.new_zeros(t_input.shape), input], -1)
    return cat([top, bottom], -2).matrix_exp()[..., :n, n:]


matrix_exp = defop("matrix_exp", _matrix_exp, kind="linalg",
                   vjp=_matrix_exp_vjp, jvp=_matrix_exp_jvp,
                   interpreted="matrix exponential runs SciPy's expm per matrix (no lowering)")


def dist(input, other, p=2):
    """`torch.dist`: the p-norm of `input - other` (broadcast), a 0-d tensor."""
    from .linalg_norm import vector_norm
    return vector_norm(input - other, p)


Tensor.dist = dist


def householder_product(A, tau, *, out=None):
    """`linalg.householder_product`: the first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H
    with v_i column i of A below the diagonal and 1 on it (LAPACK's orgqr). Composite, so its
    gradient is that of the products."""
    from .._creation import eye
    from .registry import _write_out
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.householder_product: input must have at least 2 "
                           "dimensions.")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    k = tau.shape[-1]
    if n < k:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    V = A.tril(-1) + eye(m, n, dtype=A.dtype)
    Q = eye(m, dtype=A.dtype).expand(*A.shape[:-2], m, m)
    for i in range(k):
        v = V[..., :, i:i + 1]
        Q = Q - (Q @ v) * tau[..., i:i + 1].unsqueeze(-1) @ v.mH
    Q = Q[..., :, :n]
    return Q if out is None else _write_out(out, Q)
