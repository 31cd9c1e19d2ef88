"""OpInfo entries for the indexing ops (src/jitorch/_ops/indexing.py and scatter.py).

References are written independently of the implementation: explicit loops over the index
(scatter*, index_add/copy, put, masked_scatter) or NumPy's own indexing (take_along_axis,
boolean masks, argwhere). Scatter-like samples that overwrite use indices without repeats, since
which write wins is unspecified in PyTorch (and finite differences would disagree with it).
"""
import numpy as np

import jitorch
from opinfo import ALL_REAL, OpInfo, Sample


def _r(dtype, rng, *shape):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) > 0.5)
    if dtype.kind in "iu":
        return rng.integers(-9, 10, size=shape).astype(dtype)
    return np.asarray(rng.standard_normal(shape)).astype(dtype)


def _num(dtype, x: float):
    """A Python number of the sample dtype's kind."""
    return int(x) if np.dtype(dtype).kind in "iu" else float(x)


def _idx(rng, high, *shape, dtype=np.int64):
    return rng.integers(0, high, size=shape).astype(dtype)


def _unique_along(rng, shape, dim, size):
    """An index of `shape` whose entries along `dim` never repeat within a fiber."""
    out = np.empty(shape, np.int64)
    moved = np.moveaxis(out, dim, -1)
    for p in np.ndindex(*moved.shape[:-1]):
        moved[p] = rng.permutation(size)[:shape[dim]]
    return out


def _fibers(idx, dim):
    """(position in idx, position it addresses) pairs of a gather/scatter index."""
    i1 = np.atleast_1d(idx)
    for p in np.ndindex(*i1.shape):
        q = list(p)
        q[dim] = int(i1[p])
        yield p, tuple(q)


# --- references --------------------------------------------------------------------------------
def _ref_index_select(x, dim, idx):
    if x.ndim == 0:
        return x.copy()
    return np.take(x, idx.reshape(-1), axis=dim)


def _ref_gather(x, dim, idx):
    x1, i1 = np.atleast_1d(x), np.atleast_1d(idx)
    d = dim % x1.ndim
    out = np.empty(i1.shape, x.dtype)
    for p, q in _fibers(i1, d):
        out[p] = x1[q]
    return out.reshape(idx.shape)


def _ref_scatter(x, dim, idx, src=None, value=None, reduce=None):
    out = np.array(x, copy=True)
    o1 = out.reshape(np.atleast_1d(x).shape)
    d = dim % o1.ndim
    s1 = np.atleast_1d(src) if isinstance(src, np.ndarray) else None
    fill = value if src is None else src
    for p, q in _fibers(idx, d):
        v = s1[p] if s1 is not None else fill
        if reduce is None:
            o1[q] = v
        elif reduce == "add":
            o1[q] += v
        else:
            o1[q] *= v
    return out


def _ref_scatter_add(x, dim, idx, src):
    return _ref_scatter(x, dim, idx, src, reduce="add")


def _ref_scatter_reduce(x, dim, idx, src, reduce, include_self=True):
    x1, s1 = np.atleast_1d(x), np.atleast_1d(src)
    d = dim % x1.ndim
    groups = {}
    for p, q in _fibers(idx, d):
        groups.setdefault(q, []).append(s1[p].item())
    out = np.array(x1, copy=True)
    is_int = x.dtype.kind in "iu"
    for q, vals in groups.items():
        vs = ([x1[q].item()] if include_self else []) + vals
        if reduce == "sum":
            r = sum(vs)
        elif reduce == "prod":
            r = float(np.prod(vs)) if not is_int else int(np.prod(vs))
        elif reduce == "mean":
            r = sum(vs) // len(vs) if is_int else sum(vs) / len(vs)
        elif reduce == "amax":
            r = max(vs)
        else:
            r = min(vs)
        out[q] = r
    return out.reshape(x.shape)


def _ref_index_add(x, dim, idx, src, alpha=1):
    out = np.array(x, copy=True)
    o1, s1 = out.reshape(np.atleast_1d(x).shape), np.atleast_1d(src)
    d = dim % o1.ndim
    for k, i in enumerate(idx.reshape(-1)):
        sl = [slice(None)] * o1.ndim
        sk = list(sl)
        sl[d], sk[d] = int(i), k
        o1[tuple(sl)] += (s1[tuple(sk)] * alpha).astype(x.dtype)
    return out


def _ref_index_copy(x, dim, idx, src):
    out = np.array(x, copy=True)
    o1, s1 = out.reshape(np.atleast_1d(x).shape), np.atleast_1d(src)
    d = dim % o1.ndim
    for k, i in enumerate(idx.reshape(-1)):
        sl = [slice(None)] * o1.ndim
        sk = list(sl)
        sl[d], sk[d] = int(i), k
        o1[tuple(sl)] = s1[tuple(sk)]
    return out


def _ref_index_fill(x, dim, idx, value):
    out = np.array(x, copy=True)
    o1 = out.reshape(np.atleast_1d(x).shape)
    sl = [slice(None)] * o1.ndim
    sl[dim % o1.ndim] = idx.reshape(-1)
    o1[tuple(sl)] = value
    return out


def _ref_masked_fill(x, mask, value):
    return np.where(mask, np.asarray(value).astype(x.dtype), x).astype(x.dtype)


def _ref_masked_select(x, mask):
    xb, mb = np.broadcast_arrays(x, mask)
    return xb[mb]


def _ref_masked_scatter(x, mask, src):
    xb, mb = np.broadcast_arrays(x, mask)
    out = np.array(xb, copy=True)
    n = int(mb.sum())
    out[mb] = src.reshape(-1)[:n]
    return out


def _ref_take(x, idx):
    return x.reshape(-1)[idx]


def _ref_put(x, idx, src, accumulate=False):
    out = np.array(x, copy=True)
    flat = out.reshape(-1)
    for i, v in zip(idx.reshape(-1), src.reshape(-1)):
        if accumulate:
            flat[i] += v
        else:
            flat[i] = v
    return out


def _ref_take_along_dim(x, idx, dim=None):
    if dim is None:
        return x.reshape(-1)[idx.reshape(-1)]
    d = dim % x.ndim
    common = np.broadcast_shapes(tuple(1 if k == d else s for k, s in enumerate(x.shape)),
                                 tuple(1 if k == d else s for k, s in enumerate(idx.shape)))
    xs, is_ = list(common), list(common)
    xs[d], is_[d] = x.shape[d], idx.shape[d]
    return np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(idx, is_), axis=d)


def _ref_index_put(x, indices, values, accumulate=False):
    out = np.array(x, copy=True)
    if accumulate:
        np.add.at(out, tuple(indices), values)
    else:
        out[tuple(indices)] = values
    return out


def _ref_nonzero(x, as_tuple=False):
    if as_tuple:
        return tuple(a.astype(np.int64) for a in np.nonzero(np.atleast_1d(x)))
    return np.argwhere(x).astype(np.int64)


def _ref_argwhere(x):
    return np.argwhere(x).astype(np.int64)


# --- samples -------------------------------------------------------------------------------
def _s_index_select(dtype, rng):
    return [Sample((_r(dtype, rng, 3, 4), 0, np.array([0, 2, 0])), name="dim0-repeat"),
            Sample((_r(dtype, rng, 3, 4), 1, np.array([3, 1], np.int32)), name="int32"),
            Sample((_r(dtype, rng, 2, 3, 2), -1, np.array([1])), name="3d-neg-dim"),
            Sample((_r(dtype, rng, 3, 4), 0, np.array(1)), name="0d-index"),
            Sample((_r(dtype, rng), 0, np.array([0])), name="0d-input"),
            Sample((_r(dtype, rng, 3, 4), 1, np.zeros(0, np.int64)), name="empty-index")]


def _s_gather(dtype, rng):
    return [Sample((_r(dtype, rng, 3, 4), 1, _idx(rng, 4, 3, 2)), name="dim1"),
            Sample((_r(dtype, rng, 3, 4), 0, _idx(rng, 3, 2, 4)), name="dim0"),
            Sample((_r(dtype, rng, 2, 3, 4), 2, _idx(rng, 4, 2, 3, 5)), name="3d-wider"),
            Sample((_r(dtype, rng, 3, 4), -1, _idx(rng, 4, 2, 2)), name="smaller-index"),
            Sample((_r(dtype, rng), 0, np.array(0)), name="0d"),
            Sample((_r(dtype, rng, 3, 4), 1, np.zeros((0, 2), np.int64)), name="empty")]


def _s_scatter(dtype, rng):
    return [Sample((_r(dtype, rng, 3, 4), 0, _unique_along(rng, (2, 3), 0, 3),
                    _r(dtype, rng, 2, 4)), name="src-larger"),
            Sample((_r(dtype, rng, 3, 4), 1, _unique_along(rng, (3, 2), 1, 4),
                    _r(dtype, rng, 3, 2)), name="dim1"),
            Sample((_r(dtype, rng, 3, 4), 0, _unique_along(rng, (3, 4), 0, 3), _num(dtype, 2.5)),
                   name="number"),
            Sample((_r(dtype, rng, 3, 4), -1, _unique_along(rng, (2, 2), 1, 4)),
                   {"value": _num(dtype, -1.5)}, name="value-kw"),
            Sample((_r(dtype, rng), 0, np.array(0), _r(dtype, rng)), name="0d"),
            Sample((_r(dtype, rng, 3, 4), 0, np.zeros((0, 4), np.int64), _r(dtype, rng, 1, 4)),
                   name="empty-index")]


def _s_scatter_reduce_kw(dtype, rng):
    return [Sample((_r(dtype, rng, 3, 4), 0, _idx(rng, 3, 4, 4), _r(dtype, rng, 4, 4)),
                   {"reduce": "add"}, name="reduce-add"),
            Sample((_r(dtype, rng, 3, 4), 1, _idx(rng, 4, 3, 3), _num(dtype, 2)),
                   {"reduce": "multiply"}, name="reduce-multiply-number")]


def _s_scatter_all(dtype, rng):
    return _s_scatter(dtype, rng) + _s_scatter_reduce_kw(dtype, rng)


def _s_scatter_add(dtype, rng):
    return [Sample((_r(dtype, rng, 3, 4), 0, _idx(rng, 3, 4, 4), _r(dtype, rng, 4, 4)),
                   name="repeats"),
            Sample((_r(dtype, rng, 3, 4), 1, _idx(rng, 4, 2, 6), _r(dtype, rng, 3, 7)),
                   name="src-larger"),
            Sample((_r(dtype, rng, 2, 3, 2), -2, _idx(rng, 3, 2, 5, 2), _r(dtype, rng, 2, 5, 2)),
                   name="3d"),
            Sample((_r(dtype, rng), 0, np.array([0]), _r(dtype, rng, 1)), name="0d"),
            Sample((_r(dtype, rng, 3, 4), 0, np.zeros((0, 4), np.int64), _r(dtype, rng, 1, 4)),
                   name="empty-index")]


def _s_scatter_reduce(dtype, rng):
    out = []
    for red in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            out.append(Sample((_r(dtype, rng, 3, 4), 0, _idx(rng, 3, 4, 4), _r(dtype, rng, 4, 5),
                               red), {"include_self": inc}, name=f"{red}-{inc}"))
    out.append(Sample((_r(dtype, rng, 2, 3), 1, _idx(rng, 3, 2, 4), _r(dtype, rng, 2, 4),
                       "mean"), name="mean-dim1"))
    return out


def _g_scatter_reduce(dtype, rng):
    out = _s_scatter_reduce(dtype, rng)
    # exact zeros in prod: one and two zeros in a group, and a zero in self
    x = rng.uniform(0.5, 2, (2, 3))
    x[0, 1] = 0
    src = rng.uniform(0.5, 2, (3, 3))
    src[0, 0] = src[1, 0] = src[2, 2] = 0
    idx = np.array([[0, 0, 1], [0, 1, 1], [1, 0, 0]])
    out += [Sample((x, 0, idx, src, "prod"), {"include_self": inc}, name=f"prod-zeros-{inc}")
            for inc in (True, False)]
    return out


def _s_index_add(dtype, rng):
    return [Sample((_r(dtype, rng, 3, 4), 0, np.array([0, 2, 0]), _r(dtype, rng, 3, 4)),
                   name="repeats"),
            Sample((_r(dtype, rng, 3, 4), 1, np.array([3, 3], np.int32), _r(dtype, rng, 3, 2)),
                   {"alpha": _num(dtype, 2)}, name="alpha-int32"),
            Sample((_r(dtype, rng, 2, 3, 2), -1, np.array(1), _r(dtype, rng, 2, 3, 1)),
                   name="0d-index"),
            Sample((_r(dtype, rng), 0, np.array([0]), _r(dtype, rng)), name="0d"),
            Sample((_r(dtype, rng, 3, 4), 0, np.zeros(0, np.int64), _r(dtype, rng, 0, 4)),
                   name="empty")]


def _s_index_copy(dtype, rng):
    return [Sample((_r(dtype, rng, 3, 4), 0, np.array([2, 0]), _r(dtype, rng, 2, 4)),
                   name="dim0"),
            Sample((_r(dtype, rng, 3, 4), 1, np.array([3, 1, 0]), _r(dtype, rng, 3, 3)),
                   name="dim1"),
            Sample((_r(dtype, rng, 2, 3, 2), -2, np.array([1]), _r(dtype, rng, 2, 1, 2)),
                   name="3d"),
            Sample((_r(dtype, rng), 0, np.array([0]), _r(dtype, rng)), name="0d")]


def _s_index_fill(dtype, rng):
    return [Sample((_r(dtype, rng, 3, 4), 1, np.array([2, 0]), _num(dtype, 3.5)),
                   name="number"),
            Sample((_r(dtype, rng, 3, 4), 0, np.array([-1, 0, 0]), _r(dtype, rng)),
                   name="tensor-value-repeat"),
            Sample((_r(dtype, rng, 2, 3, 2), 2, np.array(1), _num(dtype, -2)), name="0d-index"),
            Sample((_r(dtype, rng), 0, np.array([0]), _num(dtype, 7)), name="0d")]


def _s_masked_fill(dtype, rng):
    return [Sample((_r(dtype, rng, 2, 3), rng.random((2, 3)) > 0.5, _num(dtype, -1.5)),
                   name="number"),
            Sample((_r(dtype, rng, 2, 3), np.array([True, False, True]), _r(dtype, rng)),
                   name="tensor-value-broadcast-mask"),
            Sample((_r(dtype, rng, 3), rng.random((2, 3)) > 0.5, _num(dtype, 4)),
                   name="mask-broadcasts-input"),
            Sample((_r(dtype, rng), np.array(True), _num(dtype, 2)), name="0d"),
            Sample((_r(dtype, rng, 0, 3), np.ones(3, bool), _num(dtype, 2)), name="empty")]


def _s_masked_select(dtype, rng):
    return [Sample((_r(dtype, rng, 2, 3), rng.random((2, 3)) > 0.5), name="same"),
            Sample((_r(dtype, rng, 2, 3), np.array([True, False, True])), name="broadcast-mask"),
            Sample((_r(dtype, rng, 3), rng.random((2, 3)) > 0.5), name="broadcast-input"),
            Sample((_r(dtype, rng), np.array(True)), name="0d"),
            Sample((_r(dtype, rng, 0, 3), np.ones(3, bool)), name="empty")]


def _s_masked_scatter(dtype, rng):
    return [Sample((_r(dtype, rng, 2, 3), rng.random((2, 3)) > 0.5, _r(dtype, rng, 8)),
                    name="longer-source"),
            Sample((_r(dtype, rng, 2, 3), np.array([True, False, True]), _r(dtype, rng, 2, 2)),
                   name="broadcast-mask-2d-source"),
            Sample((_r(dtype, rng, 3), np.array([[True, False, True], [False, True, True]]),
                    _r(dtype, rng, 4)), name="broadcast-input"),
            Sample((_r(dtype, rng), np.array(True), _r(dtype, rng, 1)), name="0d")]


def _s_take(dtype, rng):
    return [Sample((_r(dtype, rng, 2, 3), np.array([[0, 5], [-1, 2]])), name="2d-neg"),
            Sample((_r(dtype, rng, 2, 3), np.array([4, 4, 0])), name="repeat"),
            Sample((_r(dtype, rng, 2, 3), np.array(1)), name="0d-index"),
            Sample((_r(dtype, rng), np.array([0, 0])), name="0d-input"),
            Sample((_r(dtype, rng, 2, 3), np.zeros(0, np.int64)), name="empty")]


def _s_put(dtype, rng):
    return [Sample((_r(dtype, rng, 2, 3), np.array([0, 5, -2]), _r(dtype, rng, 3)),
                   name="unique"),
            Sample((_r(dtype, rng, 2, 3), np.array([[0, 0], [5, 1]]), _r(dtype, rng, 4)),
                   {"accumulate": True}, name="accumulate-repeat"),
            Sample((_r(dtype, rng, 2, 3), np.array([1, 2]), _r(dtype, rng, 2, 1)),
                   name="source-shape"),
            Sample((_r(dtype, rng), np.array(0), _r(dtype, rng)), name="0d")]


def _s_take_along_dim(dtype, rng):
    return [Sample((_r(dtype, rng, 2, 3), _idx(rng, 3, 2, 4), 1), name="dim1"),
            Sample((_r(dtype, rng, 2, 3), _idx(rng, 2, 1, 3), 0), name="broadcast-index"),
            Sample((_r(dtype, rng, 2, 1, 3), _idx(rng, 3, 1, 4, 2), 2), name="broadcast-both"),
            Sample((_r(dtype, rng, 2, 3), np.array([[0, -1], [-3, 2]]), -1), name="neg"),
            Sample((_r(dtype, rng, 2, 3), np.array([[5, 0], [3, 1]])), name="flat"),
            Sample((_r(dtype, rng, 2, 3), np.array([[0, 1]])), {"dim": None}, name="dim-none-kw")]


def _s_index_put(dtype, rng):
    mask = rng.random((3, 4)) > 0.5
    return [Sample((_r(dtype, rng, 3, 4), [np.array([2, 0])], _r(dtype, rng, 4)),
                   name="rows-broadcast-values"),
            Sample((_r(dtype, rng, 3, 4), [np.array([0, 1, 2]), np.array([3, 3, 0])],
                    _r(dtype, rng, 3)), name="points"),
            Sample((_r(dtype, rng, 3, 4), [mask], _r(dtype, rng, int(mask.sum()))), name="mask"),
            Sample((_r(dtype, rng, 3, 4), [np.array([0, 0, 2]), np.array([1, 1, 1])],
                    _r(dtype, rng, 3)), {"accumulate": True}, name="accumulate-repeat"),
            Sample((_r(dtype, rng, 3, 4), [np.array([1], np.int32)], _r(dtype, rng)),
                   name="0d-values")]


def _s_nonzero(dtype, rng, kwargs=None):
    kw = kwargs or {}

    def z(*shape):
        a = _r(dtype, rng, *shape)
        return np.where(rng.random(shape) > 0.5, a, 0).astype(dtype)
    return [Sample((z(3, 4),), dict(kw), name="2d"), Sample((z(2, 3, 2),), dict(kw), name="3d"),
            Sample((np.ones((), dtype),), dict(kw), name="0d-one"),
            Sample((np.zeros((), dtype),), dict(kw), name="0d-zero"),
            Sample((z(0, 3),), dict(kw), name="empty")]


def _s_nonzero_all(dtype, rng):
    return _s_nonzero(dtype, rng) + _s_nonzero(dtype, rng, {"as_tuple": True})


WITH_BOOL = ALL_REAL + (jitorch.bool,)
OPINFOS = [
    OpInfo("index_select", _ref_index_select, _s_index_select, dtypes=WITH_BOOL),
    OpInfo("gather", _ref_gather, _s_gather, dtypes=WITH_BOOL),
    OpInfo("scatter", _ref_scatter, _s_scatter_all, dtypes=ALL_REAL, grad_samples=_s_scatter),
    OpInfo("scatter_add", _ref_scatter_add, _s_scatter_add, dtypes=ALL_REAL),
    OpInfo("scatter_reduce", _ref_scatter_reduce, _s_scatter_reduce, dtypes=ALL_REAL,
           grad_samples=_g_scatter_reduce),
    OpInfo("index_add", _ref_index_add, _s_index_add, dtypes=ALL_REAL),
    OpInfo("index_copy", _ref_index_copy, _s_index_copy, dtypes=ALL_REAL),
    OpInfo("index_fill", _ref_index_fill, _s_index_fill, dtypes=ALL_REAL),
    OpInfo("masked_fill", _ref_masked_fill, _s_masked_fill, dtypes=WITH_BOOL),
    OpInfo("masked_select", _ref_masked_select, _s_masked_select, dtypes=WITH_BOOL),
    OpInfo("masked_scatter", _ref_masked_scatter, _s_masked_scatter, dtypes=ALL_REAL),
    OpInfo("take", _ref_take, _s_take, dtypes=WITH_BOOL),
    OpInfo("put", _ref_put, _s_put, dtypes=ALL_REAL),
    OpInfo("take_along_dim", _ref_take_along_dim, _s_take_along_dim, dtypes=ALL_REAL),
    OpInfo("index_put", _ref_index_put, _s_index_put, dtypes=ALL_REAL),
    OpInfo("nonzero", _ref_nonzero, _s_nonzero_all, dtypes=WITH_BOOL, grad=False, jvp=False),
    OpInfo("argwhere", _ref_argwhere, _s_nonzero, dtypes=WITH_BOOL, grad=False, jvp=False),
]
