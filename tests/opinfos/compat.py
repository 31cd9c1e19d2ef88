"""OpInfo entries for the ops of issue 11's compatibility gaps: the special functions
(`_ops/special_fns.py`, `jitorch.special`), distances, meshgrid, cholesky_solve, pixel shuffle,
interpolation and instance norm.

References are independent: SciPy's special functions and closed forms, NumPy formulas, and
`scipy.ndimage.map_coordinates` (order 1, edge-clamped) at PyTorch's source coordinates for the
linear interpolation modes. Bicubic is checked against PyTorch-generated numbers in
tests/test_nn_new_layers.py (SciPy's cubic is a B-spline, not PyTorch's cubic convolution).
"""
import math

import numpy as np
import scipy.ndimage as ndi
import scipy.special as sps

import jitorch
import jitorch.nn.functional as F
import jitorch.special as S
from opinfo import ALL_REAL, FLOATS, OpInfo, Sample


def _f64(a):
    return a.astype(np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a


def _ref64(fn):
    def ref(*args, **kwargs):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[_f64(a) for a in args], **kwargs))
    return ref


def _float_rule(d):
    return d if d.is_floating_point else jitorch.get_default_dtype()


def _uni(lo, hi, ints=(1, 5), edge=()):
    def gen(dtype, rng):
        dtype = np.dtype(dtype)

        def r(*shape):
            if dtype.kind in "iu":
                return rng.integers(ints[0], ints[1] + 1, size=shape).astype(dtype)
            return np.asarray(rng.uniform(lo, hi, size=shape)).astype(dtype)
        out = [Sample((r(3, 4),), name="2d"), Sample((r(),), name="0d"),
               Sample((r(0, 2),), name="empty")]
        if edge and dtype.kind == "f":
            out.append(Sample((np.array(edge, dtype),), name="edge"))
        return out
    return gen


def _grad(lo, hi, kwargs=None):
    def gen(dtype, rng):
        return [Sample((rng.uniform(lo, hi, size=(2, 3)),), dict(kwargs or {}), "2d")]
    return gen


def _special(name, op, ref, lo, hi, glo, ghi, edge=(), method=False, **kw):
    return OpInfo(name, _ref64(ref), _uni(lo, hi, edge=edge), dtypes=ALL_REAL,
                  out_dtype=_float_rule, op=op, method=method,
                  grad_samples=_grad(glo, ghi), **kw)


def _entr(x):  # -x log x; 0 at 0; -inf below; NaN stays NaN
    r = np.where(x > 0, -x * np.log(np.where(x > 0, x, 1)), np.where(x == 0, 0.0, -np.inf))
    return np.where(np.isnan(x), x, r)


def _two(lo, hi, olo, ohi, kwargs=None):
    def gen(dtype, rng):
        dtype = np.dtype(dtype)
        if dtype.kind in "iu":
            a = rng.integers(0, 4, size=(3, 4)).astype(dtype)
            return [Sample((a, rng.integers(1, 4, size=(4,)).astype(dtype)), name="bcast")]
        a = rng.uniform(lo, hi, size=(3, 4)).astype(dtype)
        b = rng.uniform(olo, ohi, size=(4,)).astype(dtype)
        return [Sample((a, b), dict(kwargs or {}), "bcast")]
    return gen


def _xlog1py_ref(x, y):
    return np.where(x == 0, 0.0, x * np.log1p(y))


def _polygamma_op(input, n):
    return jitorch.polygamma(n, input)


def _mvlgamma_ref(x, p):
    return sum(sps.gammaln(x - i / 2) for i in range(p)) + p * (p - 1) / 4 * math.log(math.pi)


SPECIAL = [
    _special("i0", None, sps.i0, -3.0, 3.0, -2.0, 2.0, (0.0, np.inf, -np.inf, np.nan),
             method=True),
    _special("special.i0e", S.i0e, sps.i0e, -3.0, 3.0, -2.0, 2.0, (0.0, np.inf, np.nan)),
    _special("special.i1", S.i1, sps.i1, -3.0, 3.0, -2.0, 2.0, (0.0, np.nan)),
    _special("special.i1e", S.i1e, sps.i1e, -3.0, 3.0, -2.0, 2.0, (0.0, np.inf, np.nan)),
    _special("special.bessel_j0", S.bessel_j0, sps.j0, -6.0, 6.0, -5.0, 5.0, (0.0, np.nan)),
    _special("special.bessel_j1", S.bessel_j1, sps.j1, -6.0, 6.0, -5.0, 5.0, (0.0, np.nan)),
    _special("special.ndtr", S.ndtr, lambda x: 0.5 * sps.erfc(-x / math.sqrt(2)), -4.0, 4.0,
             -3.0, 3.0, (np.inf, -np.inf, np.nan, 0.0)),
    _special("special.ndtri", S.ndtri, lambda x: -math.sqrt(2) * sps.erfcinv(2 * x), 0.01, 0.99,
             0.05, 0.95, (0.0, 1.0, 0.5, 1.5, np.nan), rtol=1e-3),
    _special("special.log_ndtr", S.log_ndtr, lambda x: np.log(0.5 * sps.erfc(-x / math.sqrt(2))),
             -5.0, 4.0, -4.0, 3.0, (np.inf, np.nan)),
    _special("sinc", None, lambda x: np.where(x == 0, 1.0, np.sin(np.pi * x) /
                                              np.where(x == 0, 1.0, np.pi * x)),
             -3.0, 3.0, -2.5, 2.5, (0.0, np.nan), method=True),
    _special("special.entr", S.entr, _entr, 0.01, 3.0, 0.1, 3.0, (0.0, -1.0, np.inf, np.nan)),
    _special("special.erfcx", S.erfcx,
             lambda x: np.where(x == np.inf, 0.0, np.exp(x * x) * sps.erfc(x)), -2.0, 5.0,
             -1.5, 4.0, (np.inf, np.nan, 0.0)),
    OpInfo("special.xlog1py", _ref64(_xlog1py_ref), _two(-2.0, 2.0, -0.9, 3.0), dtypes=ALL_REAL,
           out_dtype=_float_rule, op=S.xlog1py, method=False),
    OpInfo("special.zeta", _ref64(sps.zeta), _two(1.2, 4.0, 0.5, 3.0), dtypes=FLOATS,
           op=S.zeta, method=False, jvp=False, skip_grad_args=(0,), rtol=1e-3),
    OpInfo("polygamma", _ref64(lambda x, n: sps.polygamma(n, x)),
           lambda dtype, rng: [Sample((rng.uniform(0.3, 4.0, size=(3, 4)).astype(dtype),),
                                      {"n": n}, f"n{n}") for n in (0, 1, 3)],
           op=_polygamma_op, method=False, rtol=1e-3,
           grad_samples=lambda dtype, rng: [Sample((rng.uniform(0.5, 3.0, size=(2, 3)),),
                                                   {"n": n}, f"n{n}") for n in (0, 2)]),
    OpInfo("mvlgamma", _ref64(_mvlgamma_ref),
           lambda dtype, rng: [Sample((rng.uniform(2.0, 5.0, size=(3, 4)).astype(dtype),),
                                      {"p": p}, f"p{p}") for p in (1, 3)],
           dtypes=ALL_REAL, out_dtype=_float_rule),
]


# --- distances, meshgrid, cholesky_solve -------------------------------------------------------
def _cdist_ref(a, b, p=2.0, compute_mode=None):
    d = np.abs(a[..., :, None, :] - b[..., None, :, :])
    if p == 0:
        return (d != 0).sum(-1).astype(a.dtype)
    if p == np.inf:
        return d.max(-1)
    return (d ** p).sum(-1) ** (1.0 / p)


def _cdist_samples(dtype, rng):
    def r(*s):
        return rng.uniform(-2, 2, size=s).astype(dtype)
    out = []
    for p in (1.0, 2.0, 3.0, np.inf, 0.0):
        out.append(Sample((r(4, 3), r(5, 3)), {"p": p}, f"p{p}"))
    out.append(Sample((r(2, 1, 3, 2), r(4, 5, 2)), {}, "batched"))
    out.append(Sample((r(30, 3), r(6, 3)), {}, "mm"))  # > 25 rows: the matmul form
    out.append(Sample((r(3, 3), r(4, 3)), {"compute_mode": "use_mm_for_euclid_dist"}, "mm2"))
    return out


def _cdist_grad(dtype, rng):
    return [s for s in _cdist_samples(dtype, rng) if s.name != "pp0.0"
            and s.kwargs.get("p") not in (0.0, np.inf)]


def _cos_ref(a, b, dim=1, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(np.sqrt((a * a).sum(dim, keepdims=True)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(dim, keepdims=True)), eps)
    return ((a / na) * (b / nb)).sum(dim)


def _pair_ref(a, b, p=2.0, eps=1e-6, keepdim=False):
    d = np.abs(a - b + eps)
    return (d ** p).sum(-1, keepdims=keepdim) ** (1.0 / p)


def _pair_samples(dtype, rng):
    def r(*s):
        return rng.uniform(-2, 2, size=s).astype(dtype)
    return [Sample((r(3, 4), r(3, 4)), {}, "2d"), Sample((r(3, 4), r(4)), {"p": 1.0}, "bcast"),
            Sample((r(2, 3, 4), r(3, 4)), {"p": 3.0, "keepdim": True}, "keepdim")]


def _cos_samples(dtype, rng):
    def r(*s):
        return rng.uniform(-2, 2, size=s).astype(dtype)
    return [Sample((r(3, 4), r(3, 4)), {}, "dim1"), Sample((r(2, 3, 4), r(3, 4)), {"dim": -1},
                                                           "bcast"),
            Sample((r(4), r(4)), {"dim": 0}, "1d")]


def _meshgrid_op(*tensors, indexing=None):
    return jitorch.meshgrid(*tensors, indexing=indexing)


def _meshgrid_ref(*arrays, indexing=None):
    return tuple(np.meshgrid(*arrays, indexing=indexing))


def _meshgrid_samples(dtype, rng):
    def r(n):
        return rng.uniform(-2, 2, size=n).astype(dtype) if np.dtype(dtype).kind == "f" else \
            rng.integers(-3, 4, size=n).astype(dtype)
    return [Sample((r(3), r(2)), {"indexing": "ij"}, "ij"),
            Sample((r(3), r(2), r(4)), {"indexing": "xy"}, "xy"),
            Sample((r(3),), {"indexing": "xy"}, "one")]


def _chol_samples(dtype, rng):
    def spd_factor(n):
        m = rng.uniform(-1, 1, size=(n, n))
        return np.linalg.cholesky(m @ m.T + n * np.eye(n)).astype(dtype)
    b = rng.uniform(-2, 2, size=(3, 2)).astype(dtype)
    lb = np.stack([spd_factor(3), spd_factor(3)])
    return [Sample((b, spd_factor(3)), {}, "lower"),
            Sample((b, np.ascontiguousarray(spd_factor(3).T)), {"upper": True}, "upper"),
            Sample((rng.uniform(-2, 2, size=(2, 3, 1)).astype(dtype), lb), {}, "batched")]


def _chol_ref(b, f, upper=False):
    fh = np.swapaxes(f, -1, -2)
    a = fh @ f if upper else f @ fh
    return np.linalg.solve(a, b)


DIST = [
    OpInfo("cdist", _ref64(_cdist_ref), _cdist_samples, method=False, grad_samples=_cdist_grad),
    OpInfo("cosine_similarity", _ref64(_cos_ref), _cos_samples, op=F.cosine_similarity,
           method=False),
    OpInfo("pairwise_distance", _ref64(_pair_ref), _pair_samples, op=F.pairwise_distance,
           method=False),
    OpInfo("meshgrid", _meshgrid_ref, _meshgrid_samples, dtypes=FLOATS + (jitorch.int64,),
           op=_meshgrid_op, method=False),
    OpInfo("cholesky_solve", _ref64(_chol_ref), _chol_samples, method=False, rtol=1e-3),
]


# --- pixel shuffle, interpolation, instance norm -----------------------------------------------
def _shuffle_ref(x, upscale_factor):
    r = upscale_factor
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    k = len(lead)
    y = np.moveaxis(y, (k + 1, k + 2), (k + 2, k + 4))  # (.., C, H, r, W, r)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def _unshuffle_ref(x, downscale_factor):
    r = downscale_factor
    *lead, c, h, w = x.shape
    k = len(lead)
    y = x.reshape(*lead, c, h // r, r, w // r, r)
    y = np.moveaxis(y, (k + 2, k + 4), (k + 1, k + 2))  # (.., C, r, r, H, W)
    return y.reshape(*lead, c * r * r, h // r, w // r)


def _shuffle_samples(dtype, rng):
    return [Sample((rng.uniform(-2, 2, size=(2, 8, 2, 3)).astype(dtype), 2), {}, "4d"),
            Sample((rng.uniform(-2, 2, size=(9, 1, 2)).astype(dtype), 3), {}, "3d")]


def _unshuffle_samples(dtype, rng):
    return [Sample((rng.uniform(-2, 2, size=(2, 2, 4, 6)).astype(dtype), 2), {}, "4d"),
            Sample((rng.uniform(-2, 2, size=(1, 3, 3)).astype(dtype), 3), {}, "3d")]


def _src_coords(n_in, n_out, align_corners, scale=None):
    """PyTorch's source coordinate of each output index for the linear modes (float64)."""
    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        return dst * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    s = 1.0 / scale if scale else n_in / n_out
    return np.maximum((dst + 0.5) * s - 0.5, 0.0)


def _interp_ref(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    nd = x.ndim - 2
    sizes = list(size) if isinstance(size, (tuple, list)) else (
        [size] * nd if size is not None else None)
    scales = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else (
        [scale_factor] * nd if scale_factor is not None else [None] * nd)
    if sizes is None:
        sizes = [int(math.floor(n * s)) for n, s in zip(x.shape[2:], scales)]
    if mode == "nearest":  # integer scale factors only: each input repeated
        out = x
        for k in range(nd):
            out = np.repeat(out, sizes[k] // x.shape[2 + k], axis=2 + k)
        return out
    coords = np.meshgrid(*[_src_coords(n, m, bool(align_corners), s)
                           for n, m, s in zip(x.shape[2:], sizes, scales)], indexing="ij")
    out = np.empty(x.shape[:2] + tuple(sizes))
    for i in np.ndindex(*x.shape[:2]):
        out[i] = ndi.map_coordinates(x[i], coords, order=1, mode="nearest")
    return out


def _interp_op(x, **kw):
    return F.interpolate(x, **kw)


def _interp_samples(dtype, rng):
    def r(*s):
        return rng.uniform(-2, 2, size=s).astype(dtype)
    return [Sample((r(2, 3, 4),), {"scale_factor": 2, "mode": "nearest"}, "nearest1d"),
            Sample((r(1, 2, 2, 3),), {"size": (4, 9), "mode": "nearest"}, "nearest2d"),
            Sample((r(2, 2, 5),), {"size": 8, "mode": "linear"}, "linear"),
            Sample((r(2, 2, 5),), {"scale_factor": 1.5, "mode": "linear",
                                   "align_corners": True}, "linear_ac"),
            Sample((r(1, 2, 3, 4),), {"size": (5, 3), "mode": "bilinear"}, "bilinear"),
            Sample((r(1, 2, 3, 4),), {"scale_factor": (2.0, 1.5), "mode": "bilinear",
                                      "align_corners": True}, "bilinear_ac"),
            Sample((r(1, 1, 2, 3, 3),), {"size": (3, 4, 2), "mode": "trilinear"}, "trilinear")]


def _instance_norm_ref(x, running_mean=None, running_var=None, weight=None, bias=None,
                       use_input_stats=True, momentum=0.1, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    m = x.mean(axes, keepdims=True)
    v = x.var(axes, keepdims=True)
    y = (x - m) / np.sqrt(v + eps)
    shape = (1, -1) + (1,) * (x.ndim - 2)
    if weight is not None:
        y = y * weight.reshape(shape)
    if bias is not None:
        y = y + bias.reshape(shape)
    return y


def _instance_norm_samples(dtype, rng):
    def r(*s):
        return rng.uniform(-2, 2, size=s).astype(dtype)
    return [Sample((r(2, 3, 5),), {}, "1d"),
            Sample((r(2, 3, 2, 3), None, None, r(3), r(3)), {}, "affine2d")]


def _pdist_ref(x, p=2.0):
    i, j = np.triu_indices(x.shape[0], 1)
    d = np.abs(x[i] - x[j])
    return d.max(-1) if p == np.inf else (d ** p).sum(-1) ** (1.0 / p)


def _prelu_ref(x, w):
    shape = (-1,) + (1,) * (x.ndim - 2) if w.size > 1 else ()
    return np.where(x > 0, x, w.reshape(shape) * x)


def _glu_ref(x, dim=-1):
    a, b = np.split(x, 2, axis=dim)
    return a / (1 + np.exp(-b))


def _channel_shuffle_ref(x, groups):
    n, c = x.shape[:2]
    return x.reshape(n, groups, c // groups, *x.shape[2:]).swapaxes(1, 2).reshape(x.shape)


def _rand_samples(*specs):
    """Samples from (shapes, kwargs, name) specs: uniform [-2, 2] arrays (never exactly 0)."""
    def gen(dtype, rng):
        return [Sample(tuple(rng.uniform(-2, 2, size=sh).astype(dtype) if isinstance(sh, tuple)
                             else sh for sh in shapes), kw, name) for shapes, kw, name in specs]
    return gen


LAYERS = [
    OpInfo("pdist", _ref64(_pdist_ref), _rand_samples((((5, 3),), {}, "p2"),
                                                      (((4, 2),), {"p": 1.0}, "p1"),
                                                      (((4, 3),), {"p": 3.0}, "p3")),
           method=False),
    OpInfo("prelu", _ref64(_prelu_ref), _rand_samples((((2, 3, 4), (3,)), {}, "channels"),
                                                      (((3, 2), (1,)), {}, "shared")),
           method=False),
    OpInfo("glu", _ref64(_glu_ref), _rand_samples((((2, 4, 3),), {"dim": 1}, "dim1"),
                                                  (((3, 6),), {}, "last")),
           op=F.glu, method=False),
    OpInfo("channel_shuffle", _channel_shuffle_ref,
           _rand_samples((((2, 6, 2), 3), {}, "3d"), (((1, 4, 2, 2), 2), {}, "4d")),
           method=False),
    OpInfo("pixel_shuffle", _shuffle_ref, _shuffle_samples, op=F.pixel_shuffle, method=False,
           dtypes=FLOATS + (jitorch.int64,)),
    OpInfo("pixel_unshuffle", _unshuffle_ref, _unshuffle_samples, op=F.pixel_unshuffle,
           method=False, dtypes=FLOATS + (jitorch.int64,)),
    OpInfo("interpolate", _ref64(_interp_ref), _interp_samples, op=_interp_op, method=False),
    OpInfo("instance_norm", _ref64(_instance_norm_ref), _instance_norm_samples,
           op=F.instance_norm, method=False, atol=1e-4),
]

OPINFOS = SPECIAL + DIST + LAYERS
