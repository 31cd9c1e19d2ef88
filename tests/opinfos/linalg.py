"""OpInfo entries for linear algebra: products, einsum/tensordot, triangular/diagonal ops,
decompositions and norms (top-level ops and the `jitorch.linalg` namespace).

References are NumPy. Decompositions whose LAPACK routine reads one triangle (cholesky, eigh)
are tested through a symmetrising wrapper, as PyTorch's own OpInfos do, so that finite
differences see the same function autograd differentiates.
"""
import numpy as np

import jitorch
from opinfo import ALL_REAL, FLOATS, OpInfo, Sample

CFLOATS = FLOATS + (jitorch.complex128,)
PRODUCT_DTYPES = ALL_REAL + (jitorch.complex128,)
LA = jitorch.linalg


def _r(dtype, rng, *shape):
    dtype = np.dtype(dtype)
    a = np.asarray(rng.standard_normal(shape))
    if dtype.kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    if dtype.kind in "iu":
        a = np.round(a * 2)
    return np.asarray(a.astype(dtype))  # 0-d results of NumPy ops are scalars


def _well(dtype, rng, *shape):
    """Well-conditioned square matrices (diagonally dominant)."""
    n = shape[-1]
    return (_r(dtype, rng, *shape) + 3 * np.eye(n)).astype(dtype)


def _spd(dtype, rng, *shape):
    a = _r(dtype, rng, *shape)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


# --- products ---------------------------------------------------------------------------------
def _matmul_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [
        Sample((r(2, 3), r(3, 4)), name="mm"),
        Sample((r(3), r(3)), name="dot"),
        Sample((r(2, 3), r(3)), name="mv"),
        Sample((r(3), r(3, 2)), name="vm"),
        Sample((r(2, 2, 3), r(3, 2)), name="batched-mat"),
        Sample((r(2, 1, 2, 3), r(3, 3, 2)), name="broadcast-batch"),
        Sample((r(3), r(2, 3, 2)), name="vec-batched"),
        Sample((r(2, 2, 3), r(3)), name="batched-vec"),
        Sample((r(0, 3), r(3, 2)), name="empty"),
    ]


def _mm_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3), r(3, 4))), Sample((r(1, 1), r(1, 2))), Sample((r(0, 2), r(2, 3)),
                                                                            name="empty")]


def _bmm_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 2, 3), r(2, 3, 2))), Sample((r(1, 1, 2), r(1, 2, 1)))]


def _mv_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3), r(3))), Sample((r(0, 3), r(3)), name="empty")]


def _dot_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(4), r(4))), Sample((r(0), r(0)), name="empty")]


def _inner_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3), r(3))), Sample((r(2, 3), r(4, 3))), Sample((r(), r(2, 2)), name="0d")]


def _outer_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3), r(2))), Sample((r(1), r(0)), name="empty")]


def _coef(dtype, x):
    return x if np.dtype(dtype).kind in "fc" else int(round(x))


def _addmm_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    b, a = _coef(dtype, 0.5), _coef(dtype, 2.0)
    return [Sample((r(2, 4), r(2, 3), r(3, 4))),
            Sample((r(4), r(2, 3), r(3, 4)), {"beta": b, "alpha": a}, name="broadcast-input"),
            Sample((r(2, 4), r(2, 3), r(3, 4)), {"beta": 0}, name="beta0")]


def _addmm_ref(input, m1, m2, beta=1, alpha=1):
    prod = np.matmul(m1, m2)
    return ((prod * alpha if beta == 0 else beta * input + alpha * prod)).astype(m1.dtype)


def _addmv_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2), r(2, 3), r(3))),
            Sample((r(), r(2, 3), r(3)), {"beta": _coef(dtype, 2.0), "alpha": _coef(dtype, 3.0)},
                   name="scalar-input")]


def _addbmm_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 4), r(3, 2, 3), r(3, 3, 4))),
            Sample((r(4), r(2, 2, 3), r(2, 3, 4)), {"beta": _coef(dtype, 2.0),
                                                     "alpha": _coef(dtype, 0.5) or 1})]


def _addbmm_ref(input, b1, b2, beta=1, alpha=1):
    return (beta * input + alpha * np.matmul(b1, b2).sum(0)).astype(b1.dtype)


def _baddbmm_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 2, 4), r(2, 2, 3), r(2, 3, 4))),
            Sample((r(4), r(2, 2, 3), r(2, 3, 4)), {"beta": _coef(dtype, 2.0),
                                                     "alpha": _coef(dtype, 3.0)})]


def _kron_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3), r(2, 2))), Sample((r(2), r(3, 2)), name="ranks"),
            Sample((r(), r(3)), name="0d")]


def _cross_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3), r(2, 3)), {"dim": 1}), Sample((r(3, 2), r(3, 2)), {"dim": 0}),
            Sample((r(2, 3), r(1, 3)), {"dim": -1}, name="broadcast")]


def _cross_ref(a, b, dim=-1):
    return np.cross(a, b, axis=dim).astype(a.dtype)


def _multi_dot_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample(([r(2, 3), r(3, 4), r(4, 2)],)), Sample(([r(3), r(3, 2)],), name="vec-first"),
            Sample(([r(3), r(3, 2), r(2)],), name="vec-both")]


def _matrix_power_samples(dtype, rng):
    out = [Sample((_well(dtype, rng, 3, 3), 3)), Sample((_well(dtype, rng, 2, 2, 2), 0)),
           Sample((_well(dtype, rng, 2, 2), 1))]
    if np.dtype(dtype).kind in "fc":
        out.append(Sample((_well(dtype, rng, 2, 2), -2), name="negative"))
    return out


def _matrix_power_ref(a, n):
    if n == 0:
        return np.broadcast_to(np.eye(a.shape[-1], dtype=a.dtype), a.shape).copy()
    return np.linalg.matrix_power(a, n).astype(a.dtype)


def _matrix_exp_samples(dtype, rng):
    r = lambda *s: 0.5 * _r(dtype, rng, *s)  # noqa: E731  (moderate norms: expm well-conditioned)
    return [Sample((r(3, 3),)), Sample((r(2, 2, 2),), name="batched"),
            Sample((r(1, 1),), name="1x1")]


def _matrix_exp_ref(a):
    from scipy.linalg import expm
    out = np.stack([expm(m) for m in a.reshape(-1, *a.shape[-2:])]) if a.size else a.copy()
    return out.reshape(a.shape).astype(a.dtype)


def _vecdot_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3), r(3))), Sample((r(3, 2), r(3, 2)), {"dim": 0})]


# --- einsum / tensordot ---------------------------------------------------------------------------
def _einsum_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [
        Sample(("ij,jk->ik", r(2, 3), r(3, 2)), name="matmul"),
        Sample(("ij,jk", [r(2, 3), r(3, 2)]), name="list-implicit"),
        Sample(("ii->i", r(3, 3)), name="diagonal"),
        Sample(("iij,j->i", r(2, 2, 3), r(3)), name="diagonal-contract"),
        Sample(("i,j->ij", r(3), r(2)), name="outer"),
        Sample(("bij,bjk->bik", r(2, 2, 3), r(2, 3, 2)), name="batched"),
        Sample(("...ij,...j->...i", r(2, 2, 3), r(3)), name="ellipsis"),
        Sample(("ij->", r(2, 3)), name="sum"),
        Sample(("ij,k->ik", r(2, 3), r(2)), name="summed-only-in-one"),
        Sample(("ij,jk,kl->il", r(2, 3), r(3, 2), r(2, 2)), name="three"),
    ]


def _einsum_ref(eq, *ops):
    if len(ops) == 1 and isinstance(ops[0], list):
        ops = ops[0]
    r = np.asarray(np.einsum(eq, *ops))
    labels = set(eq.split("->")[0].replace(".", "").replace(",", ""))
    if len(ops) == 1 and r.dtype.kind in "iu" and r.ndim < len(labels):
        r = r.astype(np.int64)  # a one-operand reduction sums in int64, as torch.sum
    return r.astype(ops[0].dtype) if r.dtype.kind == "f" else r


def _tensordot_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3, 2), r(3, 2, 2)), {"dims": 2}),
            Sample((r(2, 3, 2), r(2, 3, 2)), {"dims": ([1, 2], [1, 0])}, name="lists"),
            Sample((r(2, 3), r(2)), {"dims": 0}, name="outer")]


def _tensordot_ref(a, b, dims=2):
    return np.tensordot(a, b, axes=dims)


# --- triangular / diagonal ----------------------------------------------------------------------
def _tri_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3, 4),)), Sample((r(2, 3, 3),), {"diagonal": -1}),
            Sample((r(3, 2),), {"diagonal": 1}), Sample((r(0, 2),), name="empty")]


def _diag_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3),)), Sample((r(3),), {"diagonal": -1}), Sample((r(3, 4),)),
            Sample((r(3, 4),), {"diagonal": 2}), Sample((r(3, 4),), {"diagonal": 5}, name="far")]


def _diag_ref(a, diagonal=0):
    return np.diag(a, diagonal).copy()


def _diag_embed_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3),)), Sample((r(2, 3),), {"offset": 1, "dim1": 0, "dim2": 2}),
            Sample((r(3),), {"offset": -1})]


def _diag_embed_ref(a, offset=0, dim1=-2, dim2=-1):
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    idx = np.arange(a.shape[-1])
    rows, cols = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    out[..., rows, cols] = a
    nd = a.ndim + 1
    d1, d2 = dim1 % nd, dim2 % nd
    rest = [k for k in range(nd) if k not in (d1, d2)]
    perm = [0] * nd
    for k, src in zip(rest, range(nd - 2)):
        perm[k] = src
    perm[d1], perm[d2] = nd - 2, nd - 1
    return np.transpose(out, perm)


def _trace_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3, 3),)), Sample((r(2, 4),)), Sample((r(0, 3),), name="empty")]


def _trace_ref(a):
    return np.asarray(np.trace(a))


def _ldiag_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3, 4),)), Sample((r(2, 3, 4),), {"offset": 1, "dim1": 0, "dim2": 2})]


def _ldiag_ref(a, offset=0, dim1=-2, dim2=-1):
    return np.diagonal(a, offset, dim1, dim2).copy()


# --- decompositions -----------------------------------------------------------------------------
def _square_samples(dtype, rng):
    return [Sample((_well(dtype, rng, 3, 3),)), Sample((_well(dtype, rng, 2, 2, 2),),
                                                       name="batch"),
            Sample((_well(dtype, rng, 1, 1),), name="1x1")]


def _det_samples(dtype, rng):
    out = _square_samples(dtype, rng)
    sing = np.array([[1.0, 2.0], [2.0, 4.0]], dtype=dtype)
    return out + [Sample((sing,), name="singular")]


def _slogdet_ref(a):
    s, la = np.linalg.slogdet(a)
    return np.asarray(s).astype(a.dtype), np.asarray(la).astype(a.real.dtype)


def _logdet_samples(dtype, rng):
    return [Sample((_spd(dtype, rng, 3, 3),)), Sample((_spd(dtype, rng, 2, 2, 2),))]


def _logdet_ref(a):
    s, la = np.linalg.slogdet(a)
    return np.asarray(np.where(s < 0, np.nan, la)).astype(a.dtype)


def _solve_samples(dtype, rng):
    A = _well(dtype, rng, 3, 3)
    return [Sample((A, _r(dtype, rng, 3, 2))), Sample((A, _r(dtype, rng, 3)), name="vector"),
            Sample((_well(dtype, rng, 2, 3, 3), _r(dtype, rng, 3, 1)), name="broadcast"),
            Sample((A, _r(dtype, rng, 2, 3)), {"left": False}, name="right")]


def _solve_ref(A, B, left=True):
    if not left:
        return np.swapaxes(np.linalg.solve(np.swapaxes(A, -1, -2), np.swapaxes(B, -1, -2)),
                           -1, -2)
    if B.ndim == 1:
        return np.linalg.solve(A, B[:, None])[:, 0]
    return np.linalg.solve(A, B)


def _gram(x):
    """A symmetric positive-definite function of an arbitrary matrix."""
    n = x.shape[-1]
    return x @ x.mT + jitorch.tensor(np.eye(n) * n, dtype=x.dtype, device=x.device)


def _gram_np(x):
    return (x @ np.swapaxes(x, -1, -2) + x.shape[-1] * np.eye(x.shape[-1])).astype(x.dtype)


def _sym(x):
    return x + x.mT


def _sym_np(x):
    return x + np.swapaxes(x, -1, -2)


def _general_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3, 3),)), Sample((r(2, 3, 3),), name="batch")]


def _rect_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3, 3),)), Sample((r(4, 2),), name="tall"), Sample((r(2, 4),), name="wide"),
            Sample((r(2, 3, 2),), name="batch")]


def _cholesky_ref(a, upper=False):
    L = np.linalg.cholesky(_gram_np(a))
    return np.conj(np.swapaxes(L, -1, -2)) if upper else L


def _chol_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3, 3),)), Sample((r(2, 2, 2),), {"upper": True}, name="upper")]


def _qr_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3, 3),)), Sample((r(4, 2),), name="tall"), Sample((r(2, 4),), name="wide"),
            Sample((r(2, 3, 2),), name="batch"), Sample((r(2, 4),), {"mode": "complete"},
                                                        name="complete-wide")]


def _qr_ref(a, mode="reduced"):
    return np.linalg.qr(a, mode=mode)


def _svd_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3, 3),)), Sample((r(4, 2),), {"full_matrices": False}, name="tall"),
            Sample((r(2, 4),), {"full_matrices": False}, name="wide"),
            Sample((r(2, 3, 2),), name="full-batch")]


def _svd_grad_samples(dtype, rng):
    """The extra columns of a complete SVD of a non-square matrix are arbitrary: no gradient."""
    return [s for s in _svd_samples(dtype, rng)
            if not s.kwargs.get("full_matrices", True) or s.args[0].shape[-1] ==
            s.args[0].shape[-2]]


def _svd_ref(a, full_matrices=True):
    return np.linalg.svd(a, full_matrices=full_matrices)


def _old_svd_ref(a, some=True):
    u, s, vh = np.linalg.svd(a, full_matrices=not some)
    return u, s, np.swapaxes(vh, -1, -2)


def _old_svd_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3, 3),)), Sample((r(4, 2),), name="tall"),
            Sample((r(2, 4),), {"some": True}, name="wide")]


def _pinv_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(3, 3),)), Sample((r(4, 2),), name="tall"), Sample((r(2, 4),), name="wide"),
            Sample((r(2, 2, 3),), name="batch")]


def _lstsq_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(4, 2), r(4, 3))), Sample((r(4, 2), r(4)), name="vector"),
            Sample((r(2, 4), r(2, 2)), name="underdetermined"),
            Sample((r(4, 2), r(4, 1)), {"driver": "gelsd"}, name="gelsd")]


def _lstsq_ref(A, B, rcond=None, driver=None):
    x, res, rank, sv = np.linalg.lstsq(A, B, rcond=rcond)
    real = A.real.dtype
    m, n = A.shape
    if driver in ("gelsd", "gelss"):
        res = res.astype(real) if m > n and rank == n else np.zeros(0, real)
    else:
        res, sv = np.zeros(0, real), np.zeros(0, real)
    return x.astype(A.dtype), res, np.asarray(rank, np.int64), sv.astype(real)


def _lstsq_grad_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(4, 2), r(4, 2))), Sample((r(2, 3), r(2, 1)), name="underdetermined"),
            Sample((r(4, 2), r(4, 1)), {"driver": "gelsd"}, name="residuals")]


def _rank_samples(dtype, rng):
    low = _r(dtype, rng, 4, 1) @ _r(dtype, rng, 1, 3)
    return [Sample((_r(dtype, rng, 3, 3),)), Sample((low,), name="rank1"),
            Sample((_r(dtype, rng, 2, 4, 2),), name="batch")]


def _rank_ref(a):
    return np.asarray(np.linalg.matrix_rank(a), np.int64)


# --- norms ----------------------------------------------------------------------------------------
def _vnorm_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3),)), Sample((r(2, 3),), {"ord": 1, "dim": 1}),
            Sample((r(2, 3),), {"ord": float("inf"), "dim": 0, "keepdim": True}),
            Sample((r(2, 3),), {"ord": -float("inf")}), Sample((r(4),), {"ord": 3}),
            Sample((r(4),), {"ord": 0}), Sample((r(2, 3),), {"ord": 0.5, "dim": (0, 1)}),
            Sample((r(),), name="0d"), Sample((r(0, 2),), name="empty")]


def _vnorm_ref(x, ord=2, dim=None, keepdim=False):
    a = np.abs(x).astype(np.float64)
    ax = dim if dim is None or isinstance(dim, tuple) else (dim,)
    if ord == float("inf"):
        r = a.max(axis=ax, keepdims=keepdim)
    elif ord == -float("inf"):
        r = a.min(axis=ax, keepdims=keepdim)
    elif ord == 0:
        r = (a != 0).sum(axis=ax, keepdims=keepdim)
    else:
        r = (a ** ord).sum(axis=ax, keepdims=keepdim) ** (1 / ord)
    return np.asarray(r).astype(x.real.dtype)


def _mnorm_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    out = [Sample((r(3, 4),), {"ord": o}, name=str(o))
           for o in ("fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf"))]
    return out + [Sample((r(2, 3, 2),), {"ord": 1, "dim": (0, 2), "keepdim": True}, name="dims")]


def _mnorm_ref(A, ord="fro", dim=(-2, -1), keepdim=False):
    return np.asarray(np.linalg.norm(A, ord, axis=dim, keepdims=keepdim)).astype(A.real.dtype)


def _norm_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(2, 3, 2),)), Sample((r(3, 3),), {"ord": 2}), Sample((r(4),), {"ord": 1}),
            Sample((r(2, 3),), {"dim": 1}), Sample((r(2, 3),), {"ord": "nuc", "dim": (0, 1)})]


def _norm_ref(A, ord=None, dim=None, keepdim=False):
    if dim is None and ord is None:
        return np.asarray(np.linalg.norm(A.ravel())).astype(A.real.dtype)
    return np.asarray(np.linalg.norm(A, ord, axis=dim, keepdims=keepdim)).astype(A.real.dtype)


def _nonempty(gen):
    """Gradient samples: gradcheck perturbs elements, so empty tensors have nothing to check."""
    def samples(dtype, rng):
        return [s for s in gen(dtype, rng) if not any(
            isinstance(a, np.ndarray) and a.size == 0 for a in s.args)]
    return samples


def _tol(atol=1e-4, rtol=1e-3):
    return {"atol": atol, "rtol": rtol}


OPINFOS = [
    # products
    OpInfo("matmul", np.matmul, _matmul_samples, dtypes=PRODUCT_DTYPES,
           grad_samples=_nonempty(_matmul_samples)),
    OpInfo("mm", np.matmul, _mm_samples, dtypes=PRODUCT_DTYPES,
           grad_samples=_nonempty(_mm_samples)),
    OpInfo("bmm", np.matmul, _bmm_samples, dtypes=PRODUCT_DTYPES),
    OpInfo("mv", np.matmul, _mv_samples, dtypes=PRODUCT_DTYPES,
           grad_samples=_nonempty(_mv_samples)),
    OpInfo("dot", lambda a, b: np.asarray(np.dot(a, b)), _dot_samples, dtypes=PRODUCT_DTYPES,
           grad_samples=_nonempty(_dot_samples)),
    OpInfo("vdot", lambda a, b: np.asarray(np.vdot(a, b)), _dot_samples, dtypes=PRODUCT_DTYPES,
           grad_samples=_nonempty(_dot_samples)),
    OpInfo("inner", lambda a, b: np.asarray(np.inner(a, b)), _inner_samples,
           dtypes=PRODUCT_DTYPES),
    OpInfo("outer", np.outer, _outer_samples, dtypes=PRODUCT_DTYPES,
           grad_samples=_nonempty(_outer_samples)),
    OpInfo("ger", np.outer, _outer_samples, dtypes=PRODUCT_DTYPES,
           grad_samples=_nonempty(_outer_samples)),
    OpInfo("addmm", _addmm_ref, _addmm_samples, dtypes=ALL_REAL),
    OpInfo("addmv", _addmm_ref, _addmv_samples, dtypes=ALL_REAL),
    OpInfo("addbmm", _addbmm_ref, _addbmm_samples, dtypes=ALL_REAL),
    OpInfo("baddbmm", _addmm_ref, _baddbmm_samples, dtypes=ALL_REAL),
    OpInfo("kron", np.kron, _kron_samples, dtypes=PRODUCT_DTYPES),
    OpInfo("cross", _cross_ref, _cross_samples, dtypes=PRODUCT_DTYPES),
    OpInfo("linalg.cross", _cross_ref, _cross_samples, op=LA.cross, method=False),
    OpInfo("linalg.vecdot", lambda x, y, dim=-1: np.sum(np.conj(x) * y, axis=dim),
           _vecdot_samples, dtypes=CFLOATS, op=LA.vecdot, method=False),
    OpInfo("linalg.multi_dot", lambda ts: np.asarray(np.linalg.multi_dot(ts)),
           _multi_dot_samples, dtypes=PRODUCT_DTYPES, op=LA.multi_dot, method=False),
    OpInfo("chain_matmul", lambda *ts: np.linalg.multi_dot(ts),
           lambda d, rng: [Sample(tuple(s.args[0])) for s in _multi_dot_samples(d, rng)[:1]],
           method=False),
    OpInfo("matrix_power", _matrix_power_ref, _matrix_power_samples, dtypes=ALL_REAL, **_tol()),
    OpInfo("matrix_exp", _matrix_exp_ref, _matrix_exp_samples, dtypes=FLOATS, **_tol()),
    OpInfo("linalg.matrix_power", _matrix_power_ref, _matrix_power_samples,
           op=LA.matrix_power, method=False, **_tol()),
    OpInfo("linalg.matmul", np.matmul, _mm_samples, op=LA.matmul, method=False,
           grad_samples=_nonempty(_mm_samples)),
    OpInfo("einsum", _einsum_ref, _einsum_samples, dtypes=PRODUCT_DTYPES, method=False),
    OpInfo("tensordot", _tensordot_ref, _tensordot_samples, dtypes=PRODUCT_DTYPES,
           method=False),
    # triangular / diagonal
    OpInfo("tril", lambda a, diagonal=0: np.tril(a, diagonal), _tri_samples,
           dtypes=PRODUCT_DTYPES, grad_samples=_nonempty(_tri_samples)),
    OpInfo("triu", lambda a, diagonal=0: np.triu(a, diagonal), _tri_samples,
           dtypes=PRODUCT_DTYPES, grad_samples=_nonempty(_tri_samples)),
    OpInfo("diag", _diag_ref, _diag_samples, dtypes=PRODUCT_DTYPES),
    OpInfo("diag_embed", _diag_embed_ref, _diag_embed_samples, dtypes=PRODUCT_DTYPES),
    OpInfo("trace", _trace_ref, _trace_samples, dtypes=PRODUCT_DTYPES,
           grad_samples=_nonempty(_trace_samples)),
    OpInfo("linalg.diagonal", _ldiag_ref, _ldiag_samples, dtypes=PRODUCT_DTYPES,
           op=LA.diagonal, method=False),
    # decompositions
    OpInfo("inverse", np.linalg.inv, _square_samples, dtypes=CFLOATS, **_tol()),
    OpInfo("linalg.inv", np.linalg.inv, _square_samples, dtypes=CFLOATS, op=LA.inv,
           method=False, **_tol()),
    OpInfo("det", lambda a: np.asarray(np.linalg.det(a)), _det_samples, dtypes=CFLOATS,
           **_tol()),
    OpInfo("linalg.det", lambda a: np.asarray(np.linalg.det(a)), _det_samples, dtypes=CFLOATS,
           op=LA.det, method=False, **_tol()),
    OpInfo("slogdet", _slogdet_ref, _square_samples, dtypes=CFLOATS, **_tol()),
    OpInfo("linalg.slogdet", _slogdet_ref, _square_samples, dtypes=CFLOATS, op=LA.slogdet,
           method=False, **_tol()),
    OpInfo("logdet", _logdet_ref, _logdet_samples, **_tol()),
    OpInfo("linalg.solve", _solve_ref, _solve_samples, dtypes=CFLOATS, op=LA.solve,
           method=False, **_tol()),
    OpInfo("cholesky", _cholesky_ref, _chol_samples, method=False,
           op=lambda a, upper=False: jitorch.cholesky(_gram(a), upper), **_tol()),
    OpInfo("linalg.cholesky", _cholesky_ref, _chol_samples, method=False,
           op=lambda a, upper=False: LA.cholesky(_gram(a), upper=upper), **_tol()),
    OpInfo("qr", lambda a, some=True: np.linalg.qr(a, "reduced" if some else "complete"),
           lambda d, rng: _qr_samples(d, rng)[:4], **_tol()),
    OpInfo("linalg.qr", _qr_ref, _qr_samples, op=LA.qr, method=False, **_tol()),
    OpInfo("linalg.eigh", lambda a, UPLO="L": np.linalg.eigh(_sym_np(a), UPLO),
           _general_samples, op=lambda a, UPLO="L": LA.eigh(_sym(a), UPLO), method=False,
           **_tol()),
    OpInfo("linalg.eigvalsh", lambda a, UPLO="L": np.linalg.eigvalsh(_sym_np(a), UPLO),
           _general_samples, op=lambda a, UPLO="L": LA.eigvalsh(_sym(a), UPLO), method=False,
           **_tol()),
    OpInfo("linalg.svd", _svd_ref, _svd_samples, op=LA.svd, method=False,
           grad_samples=_svd_grad_samples, **_tol()),
    OpInfo("svd", _old_svd_ref, _old_svd_samples, **_tol()),
    OpInfo("linalg.svdvals", lambda a: np.linalg.svd(a, compute_uv=False), _rect_samples,
           op=LA.svdvals, method=False, **_tol()),
    OpInfo("linalg.pinv", np.linalg.pinv, _pinv_samples, op=LA.pinv, method=False, **_tol()),
    OpInfo("pinverse", np.linalg.pinv, _pinv_samples, **_tol()),
    OpInfo("linalg.lstsq", _lstsq_ref, _lstsq_samples, op=LA.lstsq, method=False,
           grad_samples=_lstsq_grad_samples, **_tol()),
    OpInfo("linalg.matrix_rank", _rank_ref, _rank_samples, op=LA.matrix_rank, method=False,
           grad=False, jvp=False),
    # norms
    OpInfo("linalg.vector_norm", _vnorm_ref, _vnorm_samples, dtypes=CFLOATS,
           op=LA.vector_norm, method=False, grad_samples=_nonempty(_vnorm_samples), **_tol()),
    OpInfo("linalg.matrix_norm", _mnorm_ref, _mnorm_samples, op=LA.matrix_norm, method=False,
           **_tol()),
    OpInfo("linalg.norm", _norm_ref, _norm_samples, op=LA.norm, method=False, **_tol()),
]
