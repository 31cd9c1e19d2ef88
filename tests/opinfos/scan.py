"""OpInfo entries for scans along a dim: cumsum, cumprod, cummax, cummin, logcumsumexp, diff."""
import numpy as np

from opinfo import ALL_REAL, FLOATS, OpInfo, Sample
from opinfos._reduce_helpers import BOOL, COMPLEX, arr, distinct


def _scan_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 4, low=-3, high=4), 1), name="dim1"),
            Sample((arr(dtype, rng, 3, 4, low=-3, high=4), 0), name="dim0"),
            Sample((arr(dtype, rng, 2, 3, 2, low=-3, high=4), -2), name="dim-2"),
            Sample((arr(dtype, rng, 5), 0), name="1d"),
            Sample((arr(dtype, rng), 0), name="0d"),
            Sample((arr(dtype, rng, 0, 3), 0), name="empty")]


def _nonempty(dtype, rng):
    return [s for s in _scan_samples(dtype, rng) if s.args[0].size]


def _cumprod_grad_samples(dtype, rng):
    a = arr(dtype, rng, 3, 5)
    a[0, 1] = 0  # one zero
    a[1, 0] = a[1, 3] = 0  # two zeros
    a[2, 4] = 0  # a zero at the end
    return _nonempty(dtype, rng) + [Sample((a, 1), name="zeros")]


def _int64_acc(x):
    return np.int64 if x.dtype.kind in "biu" else None


def _cumsum_ref(x, dim, dtype=None):
    return np.cumsum(x.reshape(1) if x.ndim == 0 else x, axis=dim,
                     dtype=_int64_acc(x)).reshape(x.shape)


def _cumprod_ref(x, dim, dtype=None):
    return np.cumprod(x.reshape(1) if x.ndim == 0 else x, axis=dim,
                      dtype=_int64_acc(x)).reshape(x.shape)


def _cum_extreme_ref(bigger):
    def isnan(e):
        return np.asarray(e).dtype.kind == "f" and bool(np.isnan(e))

    def line(v):
        """Running extremum, latest index on ties; a NaN sticks but a later NaN moves the index."""
        vals, idx = np.empty_like(v), np.empty(len(v), np.int64)
        if not len(v):
            return vals, idx
        best, bi = v[0], 0
        for i, e in enumerate(v):
            if isnan(e) or (not isnan(best) and (bigger(e, best) or e == best)):
                best, bi = e, i
            vals[i], idx[i] = best, bi
        return vals, idx

    def ref(x, dim):
        if x.ndim == 0:
            return x.copy(), np.asarray(0)
        moved = np.moveaxis(x, dim, -1)
        vals, idx = np.empty_like(moved), np.empty(moved.shape, np.int64)
        for pos in np.ndindex(*moved.shape[:-1]):
            vals[pos], idx[pos] = line(moved[pos])
        return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)
    return ref


def _cum_extreme_samples(dtype, rng):
    out = _scan_samples(dtype, rng)
    if np.dtype(dtype).kind == "f":
        out.append(Sample((np.array([1, np.nan, 2, np.nan, 3], dtype), 0), name="nan"))
    out.append(Sample((np.array([3, 3, 1, 3, 0], dtype), 0), name="ties"))
    return out


def _cum_extreme_grad_samples(dtype, rng):
    return [Sample((distinct(dtype, rng, 3, 4), 1)), Sample((distinct(dtype, rng, 3, 4), 0)),
            Sample((distinct(dtype, rng), 0))]


def _lcse_samples(dtype, rng):
    out = _scan_samples(dtype, rng)
    out.append(Sample((np.array([-np.inf, -np.inf, 0.0, 800.0, 1.0], dtype), 0), name="inf-big"))
    return out


def _lcse_ref(x, dim):
    if x.ndim == 0:
        return x.copy()
    return np.logaddexp.accumulate(x.astype(np.float64), axis=dim)


def _diff_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 5),), name="default"),
            Sample((arr(dtype, rng, 3, 5), 2), name="n2"),
            Sample((arr(dtype, rng, 4, 3), 1, 0), name="dim0"),
            Sample((arr(dtype, rng, 3, 4), 1, -1, arr(dtype, rng, 3, 2), arr(dtype, rng, 3, 1)),
                   name="prepend-append"),
            Sample((arr(dtype, rng, 3, 4), 2, 0, None, arr(dtype, rng, 2, 4)), name="append"),
            Sample((arr(dtype, rng, 3, 4),), {"n": 2, "dim": 0}, name="kw"),
            Sample((arr(dtype, rng, 4),), {"n": 0}, name="n0"),
            Sample((arr(dtype, rng, 3),), {"n": 5}, name="n-too-big")]


def _diff_ref(x, n=1, dim=-1, prepend=None, append=None):
    kw = {}
    if prepend is not None:
        kw["prepend"] = prepend
    if append is not None:
        kw["append"] = append
    return np.diff(x, n, axis=dim, **kw)


OPINFOS = [
    OpInfo("cumsum", _cumsum_ref, _scan_samples, dtypes=ALL_REAL + BOOL + COMPLEX,
           grad_samples=_nonempty),
    OpInfo("cumprod", _cumprod_ref, _scan_samples, dtypes=ALL_REAL + BOOL + COMPLEX,
           grad_samples=_cumprod_grad_samples),
    OpInfo("cummax", _cum_extreme_ref(np.greater), _cum_extreme_samples, dtypes=ALL_REAL + BOOL,
           grad_samples=_cum_extreme_grad_samples),
    OpInfo("cummin", _cum_extreme_ref(np.less), _cum_extreme_samples, dtypes=ALL_REAL + BOOL,
           grad_samples=_cum_extreme_grad_samples),
    OpInfo("logcumsumexp", _lcse_ref, _lcse_samples, dtypes=FLOATS,
           grad_samples=lambda d, r: [s for s in _nonempty(d, r)]),
    OpInfo("diff", _diff_ref, _diff_samples, dtypes=ALL_REAL + BOOL),
]
