"""OpInfo entries for reductions: sum-like, max/min, moments/norms, boolean and counts."""
import numpy as np

import jitorch
from opinfo import ALL_REAL, FLOATS, OpInfo, Sample
from opinfos._reduce_helpers import BOOL, COMPLEX, arr, ax, distinct, float_or_default


def _dims_samples(dtype, rng, dims=(None, 0, 1, -1, (0, 1), ()), empty=True):
    out = [Sample((arr(dtype, rng, 3, 4),), {"dim": d}, name=f"dim={d}") for d in dims]
    out += [
        Sample((arr(dtype, rng, 2, 3, 4),), {"dim": 1, "keepdim": True}, name="keepdim"),
        Sample((arr(dtype, rng, 2, 3, 4),), {"dim": (0, 2), "keepdim": True}, name="tuple-keep"),
        Sample((arr(dtype, rng),), {}, name="0d"),
        Sample((arr(dtype, rng),), {"dim": 0}, name="0d-dim"),
    ]
    if empty:
        out.append(Sample((arr(dtype, rng, 0, 3),), {"dim": 0}, name="empty"))
    return out


def _sum_ref(x, dim=None, keepdim=False, dtype=None):
    acc = np.int64 if x.dtype.kind in "biu" else None
    r = np.sum(x, axis=ax(dim), keepdims=keepdim, dtype=acc)
    return np.asarray(r)


def _mean_ref(x, dim=None, keepdim=False):
    with np.errstate(invalid="ignore", divide="ignore"):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(np.mean(x, axis=ax(dim) if x.ndim else None, keepdims=keepdim))


def _with_nans(dtype, rng):
    out = _dims_samples(dtype, rng, empty=False)
    if np.dtype(dtype).kind == "f":
        for s in out:
            a = s.args[0]
            if a.ndim:
                a.reshape(-1)[::5] = np.nan
    return out


def _nansum_ref(x, dim=None, keepdim=False, dtype=None):
    acc = np.int64 if x.dtype.kind in "biu" else None
    return np.asarray(np.nansum(x, axis=ax(dim), keepdims=keepdim, dtype=acc))


def _nonempty(gen):
    """The samples of gen without empty tensors (finite differences need elements)."""
    def samples(dtype, rng):
        return [s for s in gen(dtype, rng)
                if all(not isinstance(a, np.ndarray) or a.size for a in s.args)]
    return samples


def _nanmean_ref(x, dim=None, keepdim=False):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.asarray(np.nanmean(x, axis=ax(dim), keepdims=keepdim))


def _prod_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 4, low=-3, high=4),), {}, name="all"),
            Sample((arr(dtype, rng, 3, 4, low=-3, high=4), 1), name="dim1"),
            Sample((arr(dtype, rng, 3, 4, low=-3, high=4), 0, True), name="keepdim"),
            Sample((arr(dtype, rng),), name="0d"),
            Sample((arr(dtype, rng, 0, 2), 0), name="empty")]


def _prod_grad_samples(dtype, rng):
    a = arr(dtype, rng, 3, 4)
    a[0, 1] = 0  # one zero in row 0
    a[2, 0] = a[2, 3] = 0  # two zeros in row 2
    return [Sample((arr(dtype, rng, 3, 4),), name="all"),
            Sample((a, 1), name="zeros"), Sample((a.copy(), 0, True), name="zeros-col"),
            Sample((np.array([1.5, 0.0, 2.0]),), name="one-zero")]


def _prod_ref(x, dim=None, keepdim=False):
    acc = np.int64 if x.dtype.kind in "biu" else None
    if dim is None:
        return np.asarray(np.prod(x, dtype=acc))
    return np.asarray(np.prod(x, axis=dim, keepdims=keepdim, dtype=acc))


def _extreme_samples(dtype, rng):
    return [s for s in _dims_samples(dtype, rng, empty=False)
            if s.kwargs.get("dim", 0) is not None] + [
        Sample((arr(dtype, rng, 0, 3),), {"dim": 1}, name="empty-kept")]


def _extreme_grad_samples(dtype, rng):
    return [Sample((distinct(dtype, rng, 3, 4),), {"dim": d}) for d in ((), 1, (0, 1))] + \
        [Sample((distinct(dtype, rng, 2, 3),), {"dim": 0, "keepdim": True})]


def _amax_ref(np_fn):
    def ref(x, dim=(), keepdim=False):
        return np.asarray(np_fn(x, axis=ax(dim) if np.ndim(x) else None, keepdims=keepdim))
    return ref


def _max_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 4),), name="full"),
            Sample((arr(dtype, rng, 3, 4), 1), name="dim1"),
            Sample((arr(dtype, rng, 3, 4), 0, True), name="keepdim"),
            Sample((arr(dtype, rng, 3, 4),), {"dim": -1}, name="kw"),
            Sample((arr(dtype, rng),), name="0d"),
            Sample((arr(dtype, rng), 0), name="0d-dim"),
            Sample((arr(dtype, rng, 2, 0), 0), name="empty")]


def _max_grad_samples(dtype, rng):
    return [Sample((distinct(dtype, rng, 3, 4),)), Sample((distinct(dtype, rng, 3, 4), 1)),
            Sample((distinct(dtype, rng, 3, 4), 0, True))]


def _max_ref(np_fn, np_arg):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            return np.asarray(np_fn(x))
        if x.ndim == 0:
            return x.copy(), np.asarray(0)
        idx = np.expand_dims(np_arg(x, axis=dim), dim)
        v = np.take_along_axis(x, idx, dim)
        if not keepdim:
            v, idx = np.squeeze(v, dim), np.squeeze(idx, dim)
        return v, idx.astype(np.int64)
    return ref


def _arg_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 4),), name="flat"),
            Sample((arr(dtype, rng, 3, 4), 1), name="dim1"),
            Sample((arr(dtype, rng, 3, 4), 0, True), name="keepdim"),
            Sample((arr(dtype, rng, 3, 4),), {"keepdim": True}, name="flat-keep"),
            Sample((arr(dtype, rng),), name="0d")]


def _arg_ref(np_arg):
    def ref(x, dim=None, keepdim=False):
        if dim is None:
            r = np.asarray(np_arg(x.reshape(-1)))
            return r.reshape((1,) * x.ndim) if keepdim else r
        return np.asarray(np_arg(x, axis=dim, keepdims=keepdim))
    return ref


def _var_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 4),), name="all"),
            Sample((arr(dtype, rng, 3, 4), 1), name="dim1"),
            Sample((arr(dtype, rng, 3, 4), 0, False, True), name="dim-unbiased-keepdim"),
            Sample((arr(dtype, rng, 3, 4), False), name="unbiased-positional"),
            Sample((arr(dtype, rng, 3, 4),), {"dim": (0, 1), "correction": 0}, name="corr0"),
            Sample((arr(dtype, rng, 2, 5),), {"dim": 1, "correction": 2, "keepdim": True},
                   name="corr2"),
            Sample((arr(dtype, rng, 3, 4),), {"unbiased": False, "dim": -1}, name="kw")]


def _var_ref(root, with_mean=False):
    def ref(x, dim=None, unbiased=None, keepdim=False, correction=None):
        if isinstance(dim, bool):
            dim, unbiased = None, dim
        c = correction if correction is not None else (0 if unbiased is False else 1)
        v = np.var(x, axis=ax(dim), ddof=c, keepdims=keepdim)
        v = np.sqrt(v) if root else v
        if with_mean:
            return np.asarray(v), np.asarray(np.mean(x, axis=ax(dim), keepdims=keepdim))
        return np.asarray(v)
    return ref


def _to_real(d):
    return d.to_real()


def _norm_samples(dtype, rng):
    x = arr(dtype, rng, 3, 4)
    return [Sample((x,), name="fro"), Sample((x, 1), name="p1"), Sample((x, 3, 1), name="p3"),
            Sample((x, float("inf")), name="inf"), Sample((x, -float("inf"), 0), name="-inf"),
            Sample((x, 0), name="p0"), Sample((x, 2, (0, 1), True), name="p2-keep"),
            Sample((x,), {"p": "fro", "dim": 1, "keepdim": True}, name="fro-dim"),
            Sample((x, 1.5, -1), name="p1.5"),
            Sample((np.zeros((2, 3), x.dtype),), name="zeros"),
            Sample((arr(dtype, rng, 0, 3),), name="empty")]


def _norm_grad_samples(dtype, rng):
    return [s for s in _norm_samples(dtype, rng)
            if s.name not in ("zeros", "inf", "-inf", "empty")] + [
        Sample((distinct(dtype, rng, 3, 4), float("inf"), 1), name="inf"),
        Sample((distinct(dtype, rng, 3, 4), -float("inf")), name="-inf")]


def _norm_ref(x, p="fro", dim=None, keepdim=False):
    a = np.abs(x).astype(np.float64)
    axis = ax(dim)
    if p == "fro":
        p = 2
    if p == float("inf"):
        r = np.max(a, axis=axis, keepdims=keepdim)
    elif p == -float("inf"):
        r = np.min(a, axis=axis, keepdims=keepdim)
    elif p == 0:
        r = np.sum(a != 0, axis=axis, keepdims=keepdim).astype(np.float64)
    else:
        r = np.sum(a ** p, axis=axis, keepdims=keepdim) ** (1 / p)
    return np.asarray(r)


def _lse_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 4), 1), name="dim1"),
            Sample((arr(dtype, rng, 3, 4), (0, 1)), name="all"),
            Sample((arr(dtype, rng, 3, 4), 0, True), name="keepdim"),
            Sample((np.asarray(arr(dtype, rng) * 3), 0), name="0d"),
            Sample((np.array([1000.0, 1000.0, -np.inf]).astype(dtype)
                    if np.dtype(dtype).kind == "f" else arr(dtype, rng, 3), 0), name="big"),
            Sample((arr(dtype, rng, 0, 3), 0), name="empty")]


def _lse_grad_samples(dtype, rng):
    return [s for s in _lse_samples(dtype, rng) if s.name not in ("big", "empty")]


def _lse_ref(x, dim, keepdim=False):
    from scipy.special import logsumexp
    x = x.astype(np.float64)
    return np.asarray(logsumexp(x, axis=ax(dim), keepdims=keepdim))


def _bool_samples(dtype, rng):
    def z(*shape):
        a = arr(dtype, rng, *shape)
        a.reshape(-1)[::3] = 0
        return a
    return [Sample((z(3, 4),), name="all"), Sample((z(3, 4), 1), name="dim1"),
            Sample((z(3, 4), 0, True), name="keepdim"),
            Sample((z(3, 4),), {"dim": (0, 1)}, name="tuple"),
            Sample((np.ones((2, 3), dtype),), name="ones"),
            Sample((arr(dtype, rng, 0, 2),), name="empty"),
            Sample((z(),), name="0d")]


def _all_ref(np_fn):
    def ref(x, dim=None, keepdim=False):
        return np.asarray(np_fn(x != 0, axis=ax(dim), keepdims=keepdim))
    return ref


def _count_samples(dtype, rng):
    return [Sample(s.args[:2], {k: v for k, v in s.kwargs.items() if k == "dim"}, s.name)
            for s in _bool_samples(dtype, rng) if len(s.args) < 3]


def _count_ref(x, dim=None):
    return np.asarray(np.count_nonzero(x, axis=ax(dim))).astype(np.int64)


def _aminmax_samples(dtype, rng):
    return [Sample((arr(dtype, rng, 3, 4),), name="all"),
            Sample((arr(dtype, rng, 3, 4),), {"dim": 1}, name="dim1"),
            Sample((arr(dtype, rng, 3, 4),), {"dim": 0, "keepdim": True}, name="keepdim"),
            Sample((arr(dtype, rng, 3, 4),), {"keepdim": True}, name="all-keep"),
            Sample((arr(dtype, rng),), name="0d")]


def _aminmax_grad_samples(dtype, rng):
    return [Sample((distinct(dtype, rng, 3, 4),)),
            Sample((distinct(dtype, rng, 3, 4),), {"dim": 1})]


def _aminmax_ref(x, dim=None, keepdim=False):
    if dim is None and keepdim:
        return (np.min(x).reshape((1,) * x.ndim), np.max(x).reshape((1,) * x.ndim))
    return (np.asarray(np.min(x, axis=dim, keepdims=keepdim)),
            np.asarray(np.max(x, axis=dim, keepdims=keepdim)))


def _sum_rule(d):
    return jitorch.int64 if not (d.is_floating_point or d.is_complex) else d


OPINFOS = [
    OpInfo("sum", _sum_ref, _dims_samples, dtypes=ALL_REAL + BOOL + COMPLEX, out_dtype=_sum_rule,
           grad_samples=_nonempty(_dims_samples)),
    OpInfo("mean", _mean_ref, _dims_samples, dtypes=FLOATS + COMPLEX, out_dtype=lambda d: d,
           grad_samples=_nonempty(_dims_samples)),
    OpInfo("nansum", _nansum_ref, _with_nans, dtypes=ALL_REAL, out_dtype=_sum_rule,
           grad_samples=lambda d, r: _dims_samples(d, r, empty=False)),
    OpInfo("nanmean", _nanmean_ref, _with_nans, dtypes=FLOATS, out_dtype=lambda d: d,
           grad_samples=lambda d, r: _dims_samples(d, r, empty=False)),
    OpInfo("prod", _prod_ref, _prod_samples, dtypes=ALL_REAL + COMPLEX, out_dtype=_sum_rule,
           grad_samples=_prod_grad_samples),
    OpInfo("amax", _amax_ref(np.max), _extreme_samples, dtypes=ALL_REAL + BOOL,
           out_dtype=lambda d: d, grad_samples=_extreme_grad_samples),
    OpInfo("amin", _amax_ref(np.min), _extreme_samples, dtypes=ALL_REAL + BOOL,
           out_dtype=lambda d: d, grad_samples=_extreme_grad_samples),
    OpInfo("max", _max_ref(np.max, np.argmax), _max_samples, dtypes=ALL_REAL + BOOL,
           grad_samples=_max_grad_samples),
    OpInfo("min", _max_ref(np.min, np.argmin), _max_samples, dtypes=ALL_REAL + BOOL,
           grad_samples=_max_grad_samples),
    OpInfo("argmax", _arg_ref(np.argmax), _arg_samples, dtypes=ALL_REAL, grad=False, jvp=False),
    OpInfo("argmin", _arg_ref(np.argmin), _arg_samples, dtypes=ALL_REAL, grad=False, jvp=False),
    OpInfo("var", _var_ref(False), _var_samples, dtypes=FLOATS + COMPLEX, out_dtype=_to_real),
    OpInfo("std", _var_ref(True), _var_samples, dtypes=FLOATS + COMPLEX, out_dtype=_to_real),
    OpInfo("var_mean", _var_ref(False, True), _var_samples, method=False),
    OpInfo("std_mean", _var_ref(True, True), _var_samples, method=False),
    OpInfo("norm", _norm_ref, _norm_samples, dtypes=FLOATS + COMPLEX, out_dtype=_to_real,
           grad_samples=_norm_grad_samples),
    OpInfo("logsumexp", _lse_ref, _lse_samples, dtypes=ALL_REAL,
           out_dtype=float_or_default, grad_samples=_lse_grad_samples),
    OpInfo("all", _all_ref(np.all), _bool_samples, dtypes=ALL_REAL + BOOL, grad=False,
           jvp=False),
    OpInfo("any", _all_ref(np.any), _bool_samples, dtypes=ALL_REAL + BOOL, grad=False,
           jvp=False),
    OpInfo("count_nonzero", _count_ref, _count_samples, dtypes=ALL_REAL + BOOL, grad=False,
           jvp=False),
    OpInfo("aminmax", _aminmax_ref, _aminmax_samples, dtypes=ALL_REAL + BOOL,
           grad_samples=_aminmax_grad_samples),
]
