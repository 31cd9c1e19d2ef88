"""OpInfo entries for 3-D convolutions and pools (nn_conv.py, nn_pool.py at rank 3),
ctc_loss (nn_ctc.py), triangular solves and LU (linalg_lu.py), eig (linalg_eig.py),
Tensor.unfold, isin, gcd, lcm, heaviside, nextafter (compat_more.py), igamma, igammac
(compat_aliases.py) and as_strided (compat_runtime.py): the ops added by issue 19.

References: the rank-generic loop references of tests/opinfos/nn_conv.py; CTC by enumerating
every alignment path (tiny T and C); SciPy's triangular solve and LU; LAPACK's geev for eig.
Samples are few and small: each traced sample compiles.
"""
import itertools

import numpy as np
import scipy.linalg as sla
import scipy.special as sla_special

import jitorch
import jitorch.nn.functional as F
from opinfo import INTS, OpInfo, Sample
from opinfos.nn_conv import _adaptive_ref, _avg_pool_ref, _conv_ref, _conv_t_ref, _max_pool_ref

LA = jitorch.linalg


def _r(dtype, rng, *shape):
    return rng.standard_normal(shape).astype(dtype)


# --- 3-D convolutions and pools ------------------------------------------------------------------
def _conv3d_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(1, 2, 3, 4, 3), r(4, 1, 2, 2, 2), r(4)),
                   {"stride": (1, 2, 1), "padding": 1, "groups": 2}, name="groups"),
            Sample((r(2, 3, 3, 3), r(2, 2, 2, 1, 2)), {"dilation": (1, 2, 1)},
                   name="unbatched")]


def _convt3d_samples(dtype, rng):
    r = lambda *s: _r(dtype, rng, *s)  # noqa: E731
    return [Sample((r(1, 2, 2, 3, 2), r(2, 2, 2, 2, 2), r(4)),
                   {"stride": 2, "padding": (0, 1, 0), "output_padding": 1, "groups": 2})]


def _pool3d_samples(dtype, rng):
    return [Sample((_r(dtype, rng, 1, 2, 4, 5, 3), 2), {"stride": 2, "padding": 1,
                                                        "ceil_mode": True})]


def _adaptive3d_samples(dtype, rng):
    return [Sample((_r(dtype, rng, 2, 5, 4, 3), (2, 3, None)))]


# --- ctc_loss ------------------------------------------------------------------------------------
def _log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(-1, keepdims=True))


def _ctc_brute(lp, target, blank):
    """-log of the summed probability of every path that collapses to the target."""
    t_len, c = lp.shape
    total = 0.0
    for path in itertools.product(range(c), repeat=t_len):
        out, prev = [], None
        for k in path:
            if k != prev and k != blank:
                out.append(k)
            prev = k
        if out == list(target):
            total += np.exp(sum(lp[t, k] for t, k in enumerate(path)))
    return -np.log(total)


def _ctc_ref(logits, targets, input_lengths, target_lengths, blank=0, reduction="mean"):
    lp = _log_softmax(logits.astype(np.float64))
    losses = np.array([_ctc_brute(lp[:input_lengths[i], i], targets[i, :target_lengths[i]],
                                  blank) for i in range(lp.shape[1])])
    if reduction == "mean":
        return (losses / np.maximum(target_lengths, 1)).mean().astype(logits.dtype)
    if reduction == "sum":
        return losses.sum().astype(logits.dtype)
    return losses.astype(logits.dtype)


def _ctc(logits, targets, input_lengths, target_lengths, blank=0, reduction="mean"):
    # through log_softmax: PyTorch's CTC gradient is the logits' gradient (see nn_ctc.py)
    return jitorch.ctc_loss(logits.log_softmax(-1), targets, input_lengths, target_lengths,
                            blank, reduction)


def _ctc_samples(dtype, rng):
    tg = np.array([[1, 2], [2, 2], [1, 0]])
    return [Sample((_r(dtype, rng, 4, 3, 3), tg, (4, 4, 3), (2, 2, 1)), name="mean"),
            Sample((_r(dtype, rng, 3, 2, 3), tg[:2] % 2, (3, 2), (2, 1)),
                   {"blank": 2, "reduction": "none"}, name="blank-none")]


# --- triangular solves, LU, eig ------------------------------------------------------------------
def _well(dtype, rng, *shape):
    return (_r(dtype, rng, *shape) + 3 * np.eye(shape[-1])).astype(dtype)


def _tri_ref(A, B, upper, left=True, unitriangular=False):
    T = np.triu(A) if upper else np.tril(A)
    if unitriangular:
        T = T - np.diag(np.diag(T)) + np.eye(T.shape[-1])
    return (np.linalg.solve(T, B) if left else np.linalg.solve(T.T, B.T).T).astype(A.dtype)


def _tri_samples(dtype, rng):
    return [Sample((_well(dtype, rng, 3, 3), _r(dtype, rng, 3, 2)), {"upper": True}),
            Sample((_well(dtype, rng, 3, 3), _r(dtype, rng, 2, 3)),
                   {"upper": False, "left": False, "unitriangular": True}, name="right-unit")]


def _lu_factor_ref(A):
    lu, piv = sla.lu_factor(A)
    return lu.astype(A.dtype), (piv + 1).astype(np.int32)


def _lu_ref(A):
    P, L, U = sla.lu(A)
    return P.astype(A.dtype), L.astype(A.dtype), U.astype(A.dtype)


def _square_samples(dtype, rng):
    return [Sample((_r(dtype, rng, 3, 3),))]


def _lu_solve_ref(LU, piv, B, left=True, adjoint=False):
    n = LU.shape[-1]
    L = np.tril(LU, -1) + np.eye(n)
    U = np.triu(LU)
    perm = np.arange(n)
    for i, j in enumerate(piv - 1):
        perm[i], perm[j] = perm[j], perm[i]
    P = np.eye(n)[:, perm]
    A = P @ L @ U
    A = A.conj().T if adjoint else A
    return (np.linalg.solve(A, B) if left else np.linalg.solve(A.T, B.T).T).astype(LU.dtype)


def _lu_solve_samples(dtype, rng):
    out = []
    for kw in ({}, {"left": False, "adjoint": True}):
        lu, piv = _lu_factor_ref(_r(dtype, rng, 3, 3))
        out.append(Sample((lu, piv, _r(dtype, rng, 3, 3)), kw))
    return out


def _eig_ref(A):
    # the same LAPACK routine (geev): same order and phases; tests/test_linalg_lu_eig.py checks
    # the eigen-equation and the gradients
    w, v = np.linalg.eig(A)
    c = np.complex64 if A.dtype == np.float32 else np.complex128
    return w.astype(c), v.astype(c)


def _eig_samples(dtype, rng):
    return [Sample((_r(dtype, rng, 4, 4),))]


# --- compat_more.py: Tensor.unfold and the NumPy-kernel elementwise ops ---------------------------
def _unfold_ref(x, dimension, size, step):
    x = np.moveaxis(x, dimension, -1)
    n = (x.shape[-1] - size) // step + 1
    win = np.stack([x[..., i * step:i * step + size] for i in range(n)], -2)
    return np.moveaxis(win, -2, dimension % (x.ndim) if dimension >= 0 else dimension - 1)


def _unfold_samples(dtype, rng):
    return [Sample((_r(dtype, rng, 2, 7), 1, 3, 2)), Sample((_r(dtype, rng, 5, 2), 0, 2, 1))]


def _int_pair(dtype, rng):
    a = rng.integers(-20, 20, (3, 4)).astype(dtype)
    return [Sample((a, rng.integers(1, 15, (4,)).astype(dtype)))]


def _float_pair(dtype, rng):
    a = np.array([-1.5, 0.0, 2.0, 0.0, 3.0], dtype)
    return [Sample((a, np.array([0.5, 0.25, 1.0, -1.0, 3.0], dtype)))]


def _isin_samples(dtype, rng):
    return [Sample((np.array([[1, 5], [3, 2]], dtype), np.array([2, 3, 9], dtype))),
            Sample((np.array([1, 5, 3], dtype), np.array([5], dtype)), {"invert": True})]


def _gamma_samples(dtype, rng):
    return [Sample((rng.uniform(0.5, 3, (2, 3)).astype(dtype),
                    rng.uniform(0.2, 4, (3,)).astype(dtype)))]


def _gamma_grad(dtype, rng):
    return [Sample((rng.uniform(0.5, 3, (2, 3)), rng.uniform(0.2, 4, (3,))))]


def _as_strided_ref(x, size, stride, storage_offset=0):
    return np.lib.stride_tricks.as_strided(x.ravel()[storage_offset:], size,
                                           [s * x.itemsize for s in stride]).copy()


def _as_strided_samples(dtype, rng):
    x = _r(dtype, rng, 3, 4)
    return [Sample((x, (2, 3), (4, 1), 1), name="window"),
            Sample((x, (3, 3), (1, 3)), name="overlapping-transpose")]


OPINFOS = [
    OpInfo("conv3d", _conv_ref, _conv3d_samples, method=False),
    OpInfo("conv_transpose3d", _conv_t_ref, _convt3d_samples, method=False),
    OpInfo("max_pool3d", _max_pool_ref(3), _pool3d_samples, method=False),
    OpInfo("avg_pool3d", _avg_pool_ref(3), _pool3d_samples, op=F.avg_pool3d, method=False),
    OpInfo("adaptive_avg_pool3d", _adaptive_ref(3, "avg"), _adaptive3d_samples,
           op=F.adaptive_avg_pool3d, method=False),
    OpInfo("adaptive_max_pool3d", _adaptive_ref(3, "max"), _adaptive3d_samples,
           op=F.adaptive_max_pool3d, method=False),
    # its input is a log_softmax, whose eager and compiled arithmetic (exp_f32) the
    # interpreter's NumPy does not share to the last bit: see opinfos/nn.py's SOFTMAX
    OpInfo("ctc_loss", _ctc_ref, _ctc_samples, op=_ctc, method=False, jvp=False,
           skip_grad_args=(1,), interpreted_exact=False),
    OpInfo("linalg.solve_triangular", _tri_ref, _tri_samples, op=LA.solve_triangular,
           method=False),
    OpInfo("linalg.lu_factor", _lu_factor_ref, _square_samples, op=LA.lu_factor,
           method=False, jvp=False),
    OpInfo("linalg.lu", _lu_ref, _square_samples, op=LA.lu, method=False, jvp=False),
    OpInfo("linalg.lu_solve", _lu_solve_ref, _lu_solve_samples, op=LA.lu_solve, method=False,
           skip_grad_args=(1,)),
    OpInfo("linalg.eig", _eig_ref, _eig_samples, op=LA.eig, method=False, grad=False,
           jvp=False),
    OpInfo("Tensor.unfold", _unfold_ref, _unfold_samples, op=lambda x, *a: x.unfold(*a),
           method=False),
    OpInfo("isin", lambda a, b, invert=False: np.isin(a, b, invert=invert), _isin_samples,
           dtypes=INTS + (jitorch.float32,), method=False, grad=False, jvp=False),
    OpInfo("gcd", np.gcd, _int_pair, dtypes=INTS, grad=False, jvp=False),
    OpInfo("lcm", np.lcm, _int_pair, dtypes=INTS, grad=False, jvp=False),
    OpInfo("heaviside", np.heaviside, _float_pair, grad=False, jvp=False),
    OpInfo("nextafter", np.nextafter, _float_pair, grad=False, jvp=False),
    # (PyTorch differentiates only the second argument; the first is not checked)
    OpInfo("igamma", lambda a, x: sla_special.gammainc(a, x), _gamma_samples,
           grad_samples=_gamma_grad, skip_grad_args=(0,)),
    OpInfo("igammac", lambda a, x: sla_special.gammaincc(a, x), _gamma_samples,
           grad_samples=_gamma_grad, skip_grad_args=(0,)),
    OpInfo("as_strided", _as_strided_ref, _as_strided_samples),
]
