"""OpInfo entries for sorting, order statistics, quantiles, unique and searching."""
import itertools

import numpy as np

from opinfo import ALL_REAL, FLOATS, INTS, OpInfo, Sample
from opinfos._reduce_helpers import BOOL, along, arr, distinct, sort_key_order


def _line_samples(dtype, rng, extra=()):
    return [Sample((arr(dtype, rng, 3, 5),) + tuple(extra), name="default"),
            Sample((arr(dtype, rng, 4, 3), 0) + tuple(extra[1:]), name="dim0"),
            Sample((arr(dtype, rng, 2, 3, 4),), {"dim": 1}, name="3d-kw"),
            Sample((np.array([2, 1, 2, 5, 2, 1], dtype),), name="ties")]


def _distinct_samples(dtype, rng):
    return [Sample((distinct(dtype, rng, 3, 5),), name="default"),
            Sample((distinct(dtype, rng, 4, 3), 0), name="dim0")]


def _with_nan(dtype, rng, out):
    if np.dtype(dtype).kind == "f":
        out.append(Sample((np.array([np.nan, 1, np.nan, 0, 3], dtype),), name="nan"))
    return out


# --- sort / argsort / msort / topk / kthvalue ---------------------------------------------------
def _sort_samples(dtype, rng):
    out = _line_samples(dtype, rng)
    out += [Sample((arr(dtype, rng, 3, 5), 1, True), name="desc"),
            Sample((np.array([2, 1, 2, 5, 2, 1], dtype),), {"descending": True}, name="desc-ties"),
            Sample((arr(dtype, rng, 3, 4),), {"dim": 0, "stable": True}, name="stable"),
            Sample((arr(dtype, rng), 0), name="0d"), Sample((arr(dtype, rng, 0, 2),), name="empty")]
    return _with_nan(dtype, rng, out)


def _order(x, dim, descending):
    if x.ndim == 0:
        return np.asarray(0)
    moved = np.moveaxis(x, dim, -1)
    out = np.zeros(moved.shape, np.int64)
    for pos in np.ndindex(*moved.shape[:-1]):
        out[pos] = sort_key_order(moved[pos], descending)
    return np.moveaxis(out, -1, dim)


def _sort_ref(x, dim=-1, descending=False, stable=False):
    idx = _order(x, dim, descending)
    return (x.copy() if x.ndim == 0 else np.take_along_axis(x, idx, dim)), idx


def _argsort_ref(x, dim=-1, descending=False, stable=False):
    return _order(x, dim, descending)


def _msort_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 4, 3),)), Sample((arr(dtype, rng, 5),)),
            Sample((np.array([2, 1, 2, 5], dtype),), name="ties")]


def _msort_ref(x):
    return _sort_ref(x, 0)[0]


def _topk_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 5), 2), name="k2"),
            Sample((arr(dtype, rng, 4, 3), 3, 0), name="dim0"),
            Sample((arr(dtype, rng, 3, 5), 2, -1, False), name="smallest"),
            Sample((arr(dtype, rng, 3, 5),), {"k": 0}, name="k0"),
            Sample((arr(dtype, rng, 2, 4), 4), {"largest": True, "sorted": True}, name="all"),
            Sample((arr(dtype, rng), 1), name="0d")]


def _topk_ref(x, k, dim=-1, largest=True, sorted=True):
    idx = _order(x, dim, largest)
    if x.ndim == 0:
        return x.copy(), idx
    idx = np.take(idx, np.arange(k), axis=dim)
    return np.take_along_axis(x, idx, dim), idx


def _kth_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 5), 2), name="k2"),
            Sample((arr(dtype, rng, 4, 3), 4, 0), name="dim0"),
            Sample((arr(dtype, rng, 3, 5), 1, -1, True), name="keepdim"),
            Sample((np.array([3, 1, 2, 1], dtype), 2), name="ties"),
            Sample((arr(dtype, rng), 1), name="0d")]


def _kth_grad_samples(dtype, rng):
    return [Sample((distinct(dtype, rng, 3, 5), 2)), Sample((distinct(dtype, rng, 4, 3), 4, 0)),
            Sample((distinct(dtype, rng, 3, 5), 1, -1, True))]


def _kth_ref(x, k, dim=-1, keepdim=False):
    def line(v):
        i = sort_key_order(v)[k - 1]
        return v[i], np.int64(i)
    return along(line, x, dim, keepdim)


# --- median / nanmedian / mode -------------------------------------------------------------------
def _median_samples(dtype, rng):
    out = [Sample((arr(dtype, rng, 3, 5),), name="full"),
           Sample((arr(dtype, rng, 3, 4),), name="full-even"),
           Sample((arr(dtype, rng, 3, 5), 1), name="dim1"),
           Sample((arr(dtype, rng, 4, 3), 0, True), name="keepdim"),
           Sample((np.array([1, 2, 2, 1], dtype), 0), name="ties"),
           Sample((arr(dtype, rng),), name="0d"), Sample((arr(dtype, rng), 0), name="0d-dim")]
    if np.dtype(dtype).kind == "f":
        out += [Sample((np.array([3, np.nan, 1, np.nan, 2, 5], dtype),), name="nan-full"),
                Sample((np.array([[3, np.nan, 1, np.nan, 2, 5], [1, 2, 3, 4, 5, 6]], dtype), 1),
                       name="nan-dim"),
                Sample((np.array([np.nan, np.nan], dtype), 0), name="all-nan"),
                Sample((np.zeros(0, dtype),), name="empty")]
    return out


def _median_grad_samples(dtype, rng):
    return [Sample((distinct(dtype, rng, 3, 5),)), Sample((distinct(dtype, rng, 3, 4),)),
            Sample((distinct(dtype, rng, 3, 5), 1)), Sample((distinct(dtype, rng, 4, 3), 0, True))]


def _median_ref(ignore_nan):
    def line(v):
        nan = np.isnan(v) if v.dtype.kind == "f" else np.zeros(len(v), bool)
        if nan.any() and not ignore_nan:
            i = int(np.argmax(nan))
            return v[i], np.int64(i)
        keep = [i for i in sort_key_order(v) if not nan[i]]
        if not keep:
            return np.asarray(np.nan, v.dtype), np.int64(0)
        i = keep[(len(keep) - 1) // 2]
        return v[i], np.int64(i)

    def ref(x, dim=None, keepdim=False):
        if dim is None:
            v = line(x.reshape(-1))[0] if x.size else np.asarray(np.nan, x.dtype)
            return np.asarray(v, x.dtype)
        return along(line, x, dim, keepdim)
    return ref


def _mode_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 7, low=0, high=3),), name="default"),
            Sample((arr(dtype, rng, 6, 3, low=0, high=3), 0, True), name="dim0-keep"),
            Sample((np.array([3, 1, 1, 3, 3, 1], dtype),), name="ties-smallest"),
            Sample((arr(dtype, rng, 5),), name="distinct"),
            Sample((arr(dtype, rng),), name="0d")]


def _mode_grad_samples(dtype, rng):
    # distinct values: a repeated mode is not differentiable (a perturbation breaks the tie)
    return [Sample((distinct(dtype, rng, 2, 4),)), Sample((distinct(dtype, rng, 4, 2), 0, True))]


def _mode_ref(x, dim=-1, keepdim=False):
    def line(v):
        vals = [e.item() for e in v]
        best = max(sorted(set(vals)), key=vals.count)  # first max: smallest value
        last = max(i for i, e in enumerate(vals) if e == best)
        return np.asarray(best, v.dtype), np.int64(last)
    return along(line, x, dim, keepdim)


# --- quantile / nanquantile ----------------------------------------------------------------------
def _quantile_samples(dtype, rng):
    q2 = np.array([0.2, 0.5, 1.0], dtype)
    out = [Sample((arr(dtype, rng, 3, 5), 0.3), name="scalar-q"),
           Sample((arr(dtype, rng, 3, 5), q2), name="vector-q"),
           Sample((arr(dtype, rng, 3, 5), q2, 1), name="vector-q-dim"),
           Sample((arr(dtype, rng, 3, 5), 0.75, 0, True), name="keepdim"),
           Sample((arr(dtype, rng, 4, 3), q2), {"dim": 0, "keepdim": True}, name="vec-keep"),
           Sample((arr(dtype, rng, 3, 4), np.asarray(0.4, dtype), 1), name="0d-q"),
           Sample((arr(dtype, rng, 2, 3), q2), {"keepdim": True}, name="flat-keep"),
           Sample((arr(dtype, rng), 0.5), name="0d")]
    for m in ("lower", "higher", "midpoint", "nearest"):  # ranks 0.75, 2.25, 3.6: no .5 ties
        out.append(Sample((arr(dtype, rng, 3, 6), np.array([0.15, 0.45, 0.72], dtype), 1),
                          {"interpolation": m}, name=m))
    return out


def _quantile_nan_samples(dtype, rng):
    out = _quantile_samples(dtype, rng)
    x = arr(dtype, rng, 3, 5)
    x[0, 1] = x[1, 0] = x[1, 4] = np.nan
    x[2] = np.nan
    out.append(Sample((x, np.array([0.0, 0.5, 0.9], dtype), 1), name="nan"))
    return out


def _quantile_grad_samples(dtype, rng):
    return [Sample((distinct(dtype, rng, *s.args[0].shape),) + s.args[1:], s.kwargs, s.name)
            for s in _quantile_samples(dtype, rng)]


def _quantile_ref(np_fn):
    def ref(x, q, dim=None, keepdim=False, interpolation="linear"):
        with np.errstate(invalid="ignore"):
            import warnings
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return np.asarray(np_fn(x.astype(np.float64), np.asarray(q, np.float64),
                                        axis=dim, keepdims=keepdim, method=interpolation))
    return ref


# --- unique / unique_consecutive ----------------------------------------------------------------
def _unique_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 5, low=0, high=4),), name="default"),
            Sample((arr(dtype, rng, 3, 5, low=0, high=4),),
                   {"return_inverse": True, "return_counts": True}, name="inverse-counts"),
            Sample((arr(dtype, rng, 6, low=0, high=3), True, False, True), name="counts"),
            Sample((np.array([[1, 2], [1, 2], [0, 5]], dtype),),
                   {"dim": 0, "return_inverse": True, "return_counts": True}, name="dim0"),
            Sample((np.array([[3, 1, 3], [2, 0, 2]], dtype),), {"dim": 1}, name="dim1"),
            Sample((arr(dtype, rng),), {"return_inverse": True}, name="0d"),
            Sample((arr(dtype, rng, 0),), {"return_counts": True}, name="empty")]


def _unique_ref(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    out, inv, cnt = np.unique(x, return_inverse=True, return_counts=True, axis=dim)
    inv = inv.reshape(x.shape) if dim is None else inv.reshape(-1)
    res = (out,) + ((inv.astype(np.int64),) if return_inverse else ()) + \
        ((cnt.astype(np.int64),) if return_counts else ())
    return res[0] if len(res) == 1 else res


def _unique_consecutive_samples(dtype, rng):
    return [Sample((np.array([1, 1, 2, 2, 3, 1, 1], dtype),), name="default"),
            Sample((arr(dtype, rng, 3, 4, low=0, high=2),),
                   {"return_inverse": True, "return_counts": True}, name="2d"),
            Sample((np.array([[1, 2], [1, 2], [0, 5], [1, 2]], dtype),),
                   {"dim": 0, "return_counts": True}, name="dim0"),
            Sample((np.array([[1, 1, 2], [3, 3, 4]], dtype), True, True, 1), name="dim1")]


def _unique_consecutive_ref(x, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        items = list(x.reshape(-1))
    else:
        items = [np.take(x, i, axis=dim) for i in range(x.shape[dim])]
    groups, inv = [], []
    for key, grp in itertools.groupby(range(len(items)), key=lambda i: items[i].tobytes()):
        g = list(grp)
        groups.append(g)
        inv += [len(groups) - 1] * len(g)
    reps = [items[g[0]] for g in groups]
    out = np.array(reps, x.dtype) if dim is None else np.stack(reps, axis=dim)
    inv = np.array(inv, np.int64).reshape(x.shape if dim is None else -1)
    cnt = np.array([len(g) for g in groups], np.int64)
    res = (out,) + ((inv,) if return_inverse else ()) + ((cnt,) if return_counts else ())
    return res[0] if len(res) == 1 else res


# --- searchsorted / bucketize / bincount / histc -------------------------------------------------
def _search_samples(dtype, rng):
    seq = np.sort(arr(dtype, rng, 6))
    rows = np.sort(arr(dtype, rng, 3, 5), axis=-1)
    return [Sample((seq, arr(dtype, rng, 4)), name="1d"),
            Sample((seq, arr(dtype, rng, 2, 3)), {"right": True}, name="right"),
            Sample((seq, seq.copy()), {"side": "right"}, name="side-ties"),
            Sample((seq, seq.copy()), name="left-ties"),
            Sample((rows, arr(dtype, rng, 3, 2)), name="batched"),
            Sample((seq, arr(dtype, rng, 4)), {"out_int32": True}, name="int32"),
            Sample((seq[::-1].copy(), arr(dtype, rng, 4)),
                   {"sorter": np.arange(5, -1, -1)}, name="sorter"),
            Sample((seq, arr(dtype, rng)), name="0d-value")]


def _search_ref(seq, v, out_int32=False, right=False, side=None, sorter=None):
    side = side or ("right" if right else "left")
    if sorter is not None:
        seq = seq[sorter]
    if seq.ndim == 1:
        r = np.searchsorted(seq, v, side=side)
    else:
        r = np.stack([np.searchsorted(a, b, side=side) for a, b in zip(seq, v)])
    return np.asarray(r).astype(np.int32 if out_int32 else np.int64)


def _bucketize_samples(dtype, rng):
    b = np.sort(arr(dtype, rng, 5))
    return [Sample((arr(dtype, rng, 3, 4), b), name="2d"),
            Sample((b.copy(), b), {"right": True}, name="right-ties"),
            Sample((b.copy(), b), name="left-ties"),
            Sample((arr(dtype, rng, 4), b), {"out_int32": True}, name="int32")]


def _bucketize_ref(x, b, out_int32=False, right=False):
    r = np.searchsorted(b, x, side="right" if right else "left")
    return np.asarray(r).astype(np.int32 if out_int32 else np.int64)


def _bincount_samples(dtype, rng):
    x = arr(dtype, rng, 8, low=0, high=5)
    return [Sample((x,), name="plain"), Sample((x,), {"minlength": 9}, name="minlength"),
            Sample((x, rng.standard_normal(8).astype(np.float32)), name="w32"),
            Sample((x, rng.standard_normal(8)), {"minlength": 2}, name="w64"),
            Sample((np.zeros(0, dtype),), name="empty")]


def _bincount_ref(x, weights=None, minlength=0):
    r = np.bincount(x, weights=weights, minlength=minlength)
    return r.astype(np.float32) if weights is not None and weights.dtype == np.float32 else r


def _histc_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 20),), {"bins": 5}, name="auto-range"),
            Sample((arr(dtype, rng, 4, 5), 4, -1, 1), name="range"),
            Sample((np.array([0, 1, 2, 3, 3], dtype), 3, 0, 3), name="top-edge"),
            Sample((np.array([2, 2], dtype),), {"bins": 4}, name="constant"),
            Sample((np.array([1, np.nan, 2], dtype), 3, 0, 2), name="nan-ignored")]


def _histc_ref(x, bins=100, min=0, max=0):
    lo, hi = (min, max) if min != max else (np.nanmin(x), np.nanmax(x))
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    x = x[~np.isnan(x)]
    return np.histogram(x, bins, range=(lo, hi))[0].astype(x.dtype)


OPINFOS = [
    OpInfo("sort", _sort_ref, _sort_samples, dtypes=ALL_REAL + BOOL,
           grad_samples=_distinct_samples),
    OpInfo("argsort", _argsort_ref, _sort_samples, dtypes=ALL_REAL + BOOL, grad=False,
           jvp=False),
    OpInfo("msort", _msort_ref, _msort_samples, dtypes=ALL_REAL + BOOL,
           grad_samples=lambda d, r: [Sample((distinct(d, r, 4, 3),))]),
    OpInfo("topk", _topk_ref, _topk_samples, dtypes=ALL_REAL,
           grad_samples=lambda d, r: [Sample((distinct(d, r, 3, 5), 2)),
                                      Sample((distinct(d, r, 4, 3), 2, 0, False))]),
    OpInfo("kthvalue", _kth_ref, _kth_samples, dtypes=ALL_REAL, grad_samples=_kth_grad_samples),
    OpInfo("median", _median_ref(False), _median_samples, dtypes=ALL_REAL,
           grad_samples=_median_grad_samples),
    OpInfo("nanmedian", _median_ref(True), _median_samples, dtypes=ALL_REAL,
           grad_samples=_median_grad_samples),
    OpInfo("mode", _mode_ref, _mode_samples, dtypes=ALL_REAL + BOOL,
           grad_samples=_mode_grad_samples),
    OpInfo("quantile", _quantile_ref(np.quantile), _quantile_nan_samples,
           grad_samples=_quantile_grad_samples, skip_grad_args=(1,)),
    OpInfo("nanquantile", _quantile_ref(np.nanquantile), _quantile_nan_samples,
           grad_samples=_quantile_grad_samples, skip_grad_args=(1,)),
    OpInfo("unique", _unique_ref, _unique_samples, dtypes=ALL_REAL + BOOL, grad=False,
           jvp=False),
    OpInfo("unique_consecutive", _unique_consecutive_ref, _unique_consecutive_samples,
           dtypes=ALL_REAL, grad=False, jvp=False),
    OpInfo("searchsorted", _search_ref, _search_samples, dtypes=ALL_REAL, grad=False,
           jvp=False, method=False),
    OpInfo("bucketize", _bucketize_ref, _bucketize_samples, dtypes=ALL_REAL, grad=False,
           jvp=False, method=False),
    OpInfo("bincount", _bincount_ref, _bincount_samples, dtypes=INTS, grad=False, jvp=False),
    OpInfo("histc", _histc_ref, _histc_samples, dtypes=FLOATS, grad=False, jvp=False),
]
