"""Sorting, order statistics, quantiles, unique and searching: semantics beyond the OpInfo
table (named tuples, NaN ordering, ties, overloads, error types and messages, dtype rules)."""
import numpy as np
import pytest

import jitorch
from jitorch._ops.registry import PUBLIC

T = jitorch.tensor
nan = float("nan")


def _check(t, values, dtype, shape=None):
    assert isinstance(t, jitorch.Tensor)
    assert t.dtype is dtype, (t.dtype, dtype)
    want = np.asarray(values)
    assert tuple(t.shape) == (want.shape if shape is None else tuple(shape))
    np.testing.assert_allclose(t.detach().numpy().astype(np.float64),
                               want.astype(np.float64), rtol=1e-5, atol=1e-6, equal_nan=True)


# --- sort / argsort / msort -----------------------------------------------------------------------
def test_sort_named_tuple_and_stable_descending_ties():
    r = jitorch.sort(T([3.0, 1.0, 3.0, 1.0]), descending=True)
    assert isinstance(r, jitorch.return_types.sort) and r._fields == ("values", "indices")
    _check(r.values, [3, 3, 1, 1], jitorch.float32)
    _check(r.indices, [0, 2, 1, 3], jitorch.int64)
    _check(T([2, 1, 2, 1]).sort(stable=True).indices, [1, 3, 0, 2], jitorch.int64)


def test_nan_sorts_largest():
    x = T([nan, 1.0, nan, 0.0])
    r = jitorch.sort(x)
    _check(r.values, [0, 1, nan, nan], jitorch.float32)
    _check(r.indices, [3, 1, 0, 2], jitorch.int64)
    _check(jitorch.sort(x, descending=True).indices, [0, 2, 1, 3], jitorch.int64)
    _check(jitorch.topk(x, 2).indices, [0, 2], jitorch.int64)
    _check(jitorch.argsort(x, descending=True), [0, 2, 1, 3], jitorch.int64)


def test_sort_dims_and_dtypes():
    m = T([[3, 1], [0, 2]])
    _check(jitorch.sort(m, 0).values, [[0, 1], [3, 2]], jitorch.int64)
    _check(jitorch.sort(T([True, False])).values, [False, True], jitorch.bool)
    _check(jitorch.sort(T(3.0)).values, 3.0, jitorch.float32, ())
    _check(jitorch.argsort(m, dim=0, descending=True), [[0, 1], [1, 0]], jitorch.int64)
    _check(jitorch.msort(m), [[0, 1], [3, 2]], jitorch.int64)
    _check(m.msort(), [[0, 1], [3, 2]], jitorch.int64)
    with pytest.raises(RuntimeError, match="Sort does not support complex"):
        jitorch.sort(T([1j]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        jitorch.sort(m, 2)


def test_sort_gradient_goes_through_the_permutation():
    x = T([3.0, 1.0, 2.0], requires_grad=True)
    v = jitorch.sort(x).values
    (v * T([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [100, 1, 10])
    assert not jitorch.sort(x).indices.requires_grad


# --- topk / kthvalue ------------------------------------------------------------------------------
def test_topk():
    x = T([[1.0, 5.0, 2.0], [4.0, 0.0, 7.0]])
    r = jitorch.topk(x, 2)
    assert isinstance(r, jitorch.return_types.topk)
    _check(r.values, [[5, 2], [7, 4]], jitorch.float32)
    _check(r.indices, [[1, 2], [2, 0]], jitorch.int64)
    r = x.topk(1, 0, largest=False)
    _check(r.values, [[1, 0, 2]], jitorch.float32)
    _check(jitorch.topk(x, 0).values, np.zeros((2, 0)), jitorch.float32)
    for k in (4, -1):
        with pytest.raises(RuntimeError, match="selected index k out of range"):
            jitorch.topk(x, k)
    with pytest.raises(RuntimeError, match="topk does not support bool"):
        jitorch.topk(T([True]), 1)


def test_kthvalue():
    x = T([[1.0, 5.0, 2.0], [4.0, 0.0, 7.0]])
    r = jitorch.kthvalue(x, 2)
    assert isinstance(r, jitorch.return_types.kthvalue)
    _check(r.values, [2, 4], jitorch.float32)
    _check(r.indices, [2, 0], jitorch.int64)
    r = x.kthvalue(2, 0, True)
    _check(r.values, [[4, 5, 7]], jitorch.float32)
    with pytest.raises(RuntimeError, match="selected number k out of range for dimension 1"):
        jitorch.kthvalue(x, 4)
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        jitorch.kthvalue(jitorch.empty(0, 3), 1, 0)
    with pytest.raises(NotImplementedError, match="kthvalue_cpu"):
        jitorch.kthvalue(T([True]), 1)


# --- median / nanmedian / mode --------------------------------------------------------------------
def test_median_overloads():
    _check(jitorch.median(T([1.0, 2.0, 2.0, 1.0])), 1.0, jitorch.float32, ())  # lower median
    r = jitorch.median(T([[5, 1, 3], [2, 8, 4]]), 1, keepdim=True)
    assert isinstance(r, jitorch.return_types.median)
    _check(r.values, [[3], [4]], jitorch.int64)
    _check(r.indices, [[2], [2]], jitorch.int64)
    _check(T([[5, 1, 3], [2, 8, 4]]).median(dim=0).values, [2, 1, 3], jitorch.int64)
    _check(jitorch.median(jitorch.empty(0)), nan, jitorch.float32, ())


def test_median_nan_semantics():
    _check(jitorch.median(T([1.0, nan, 2.0, nan])), nan, jitorch.float32, ())
    r = jitorch.median(T([[3.0, nan, 2.0, nan]]), 1)
    _check(r.values, [nan], jitorch.float32)
    _check(r.indices, [1], jitorch.int64)  # the first NaN
    r = jitorch.nanmedian(T([3.0, nan, 1.0, nan, 2.0, 5.0]), 0)
    assert isinstance(r, jitorch.return_types.nanmedian)
    _check(r.values, 2.0, jitorch.float32, ())
    _check(r.indices, 4, jitorch.int64, ())
    _check(jitorch.nanmedian(T([nan, nan])), nan, jitorch.float32, ())
    _check(jitorch.nanmedian(T([nan, nan]), 0).indices, 0, jitorch.int64, ())


def test_median_errors():
    with pytest.raises(NotImplementedError, match="median_cpu"):
        jitorch.median(T([True]))
    with pytest.raises(IndexError, match="median\\(\\): Expected reduction dim 0"):
        jitorch.median(jitorch.empty(0, 3), 0)


def test_median_gradient_conventions():
    x = T([2.0, 1.0, 2.0, 5.0, 2.0], requires_grad=True)
    jitorch.median(x).backward()  # full reduction: shared among the tied medians
    np.testing.assert_allclose(x.grad.numpy(), [1 / 3, 0, 1 / 3, 0, 1 / 3])
    x.grad = None
    r = jitorch.median(x, 0)
    r.values.backward()  # with dim: to the reported index only
    expect = np.zeros(5)
    expect[r.indices.item()] = 1
    np.testing.assert_allclose(x.grad.numpy(), expect)


def test_mode():
    r = jitorch.mode(T([3, 1, 1, 3, 3, 1]))
    assert isinstance(r, jitorch.return_types.mode)
    _check(r.values, 1, jitorch.int64, ())  # equal counts: the smallest value
    _check(r.indices, 5, jitorch.int64, ())
    r = jitorch.mode(T([[3, 1, 1], [2, 2, 0]]), 1, True)
    _check(r.values, [[1], [2]], jitorch.int64)
    _check(jitorch.mode(T([True, False, True])).values, True, jitorch.bool, ())
    with pytest.raises(NotImplementedError, match="mode_cpu"):
        jitorch.mode(T([1j]))


# --- quantile / nanquantile -----------------------------------------------------------------------
def test_quantile_shapes():
    x = T([[1.0, 5.0, 2.0], [4.0, 0.0, 7.0]])
    q = T([0.2, 0.7])
    _check(jitorch.quantile(x, q, dim=1, keepdim=True), [[[1.4], [1.6]], [[3.2], [5.2]]],
           jitorch.float32)
    _check(jitorch.quantile(x, q, keepdim=True), np.quantile(x.numpy(), q.numpy(),
                                                             keepdims=True), jitorch.float32)
    _check(jitorch.quantile(x, T(0.5), dim=1), [2.0, 4.0], jitorch.float32)
    _check(x.quantile(0.25), np.quantile(x.numpy(), 0.25), jitorch.float32, ())
    _check(jitorch.quantile(T(3.0), 0.5, 0, True), 3.0, jitorch.float32, ())


def test_quantile_interpolations():
    x = T([0.0, 1.0, 2.0, 3.0])
    for mode, want in (("lower", 1.0), ("higher", 2.0), ("midpoint", 1.5), ("nearest", 1.0),
                       ("linear", 1.2)):
        _check(jitorch.quantile(x, 0.4, interpolation=mode), want, jitorch.float32, ())
    # nearest rounds half to even, like torch.round
    r = jitorch.quantile(T([0.0, 1.0, 2.0, 3.0, 4.0], dtype=jitorch.float64),
                         T([0.125, 0.375, 0.625, 0.875], dtype=jitorch.float64),
                         interpolation="nearest")
    _check(r, [0, 2, 2, 4], jitorch.float64)


def test_quantile_nan():
    _check(jitorch.quantile(T([1.0, nan]), 0.5), nan, jitorch.float32, ())
    _check(jitorch.nanquantile(T([1.0, nan, 3.0]), 0.5), 2.0, jitorch.float32, ())
    _check(jitorch.nanquantile(T([[1.0, nan, 3.0], [nan, nan, nan]]), T([0.1, 0.9]), dim=1),
           [[1.2, nan], [2.8, nan]], jitorch.float32)


@pytest.mark.parametrize("fn,msg", [
    (lambda: jitorch.quantile(T([1, 2]), 0.5), "must be either float or double dtype"),
    (lambda: jitorch.quantile(T([1.0]).half(), 0.5), "must be either float or double dtype"),
    (lambda: jitorch.quantile(T([1.0]), 1.5), "q must be in the range [0, 1] but got 1.5"),
    (lambda: jitorch.quantile(T([1.0]), T([0.2, 1.5])), "q values must be in the range"),
    (lambda: jitorch.quantile(T([1.0]), T([0.5], dtype=jitorch.float64)),
     "q tensor must be same dtype"),
    (lambda: jitorch.quantile(T([1.0]), T([[0.5]])), "q must be a scalar or 1D tensor"),
    (lambda: jitorch.quantile(jitorch.empty(0), 0.5), "input tensor must be non-empty"),
    (lambda: jitorch.quantile(T([1.0]), 0.5, interpolation="abc"),
     "interpolation must be one of linear, lower, higher, midpoint or nearest"),
])
def test_quantile_errors(fn, msg):
    with pytest.raises(RuntimeError) as info:
        fn()
    assert msg in str(info.value)


# --- unique / unique_consecutive ------------------------------------------------------------------
def test_unique_results():
    x = T([3, 1, 2, 3, 1, 5])
    _check(jitorch.unique(x), [1, 2, 3, 5], jitorch.int64)
    _check(jitorch.unique(x, sorted=False), [1, 2, 3, 5], jitorch.int64)  # CPU always sorts
    out, inv, cnt = jitorch.unique(x, return_inverse=True, return_counts=True)
    _check(inv, [2, 0, 1, 2, 0, 3], jitorch.int64)
    _check(cnt, [2, 1, 2, 1], jitorch.int64)
    out, cnt = x.unique(return_counts=True)
    _check(cnt, [2, 1, 2, 1], jitorch.int64)
    _check(jitorch.unique(T([nan, 1.0, nan])), [1.0, nan, nan], jitorch.float32)  # NaNs distinct
    out, inv = jitorch.unique(T(3), return_inverse=True)
    _check(out, [3], jitorch.int64)
    _check(inv, 0, jitorch.int64, ())
    out, inv = jitorch.unique(T([[3, 1], [1, 3]]), return_inverse=True)
    _check(inv, [[1, 0], [0, 1]], jitorch.int64)


def test_unique_dim():
    m = T([[1, 2], [1, 2], [0, 5]])
    out, inv, cnt = jitorch.unique(m, dim=0, return_inverse=True, return_counts=True)
    _check(out, [[0, 5], [1, 2]], jitorch.int64)
    _check(inv, [1, 1, 0], jitorch.int64)
    _check(cnt, [1, 2], jitorch.int64)
    _check(jitorch.unique(jitorch.empty(0, 2), dim=0), np.zeros((0, 2)), jitorch.float32)
    with pytest.raises(RuntimeError, match="0 sized dimensions"):
        jitorch.unique(jitorch.empty(2, 0), dim=0)
    with pytest.raises(IndexError):
        jitorch.unique(m, dim=2)
    with pytest.raises(NotImplementedError, match='"unique" not implemented'):
        jitorch.unique(T([1j]))


def test_unique_consecutive():
    out, inv, cnt = jitorch.unique_consecutive(T([1, 1, 2, 2, 3, 1, 1]), return_inverse=True,
                                               return_counts=True)
    _check(out, [1, 2, 3, 1], jitorch.int64)
    _check(inv, [0, 0, 1, 1, 2, 3, 3], jitorch.int64)
    _check(cnt, [2, 2, 1, 2], jitorch.int64)
    _check(jitorch.unique_consecutive(T([[1, 2], [1, 2], [0, 5]]), dim=0), [[1, 2], [0, 5]],
           jitorch.int64)
    _check(T([1, 1, 2]).unique_consecutive(), [1, 2], jitorch.int64)


# --- searchsorted / bucketize ---------------------------------------------------------------------
def test_searchsorted():
    s = T([1, 3, 5, 7, 9])
    _check(jitorch.searchsorted(s, T([3, 6, 9])), [1, 3, 4], jitorch.int64)
    _check(jitorch.searchsorted(s, T([3, 6, 9]), right=True), [2, 3, 5], jitorch.int64)
    _check(jitorch.searchsorted(s, T([3, 6, 9]), side="right"), [2, 3, 5], jitorch.int64)
    _check(jitorch.searchsorted(s, 5), 2, jitorch.int64, ())
    _check(jitorch.searchsorted(s, T([3]), out_int32=True), [1], jitorch.int32)
    _check(jitorch.searchsorted(T([[1, 3, 5], [2, 4, 6]]), T([[3, 6], [1, 5]])),
           [[1, 3], [0, 2]], jitorch.int64)
    _check(jitorch.searchsorted(T([5, 1, 3]), T([2, 4]), sorter=T([1, 2, 0])), [1, 2],
           jitorch.int64)
    _check(jitorch.searchsorted(T([1, 2]), T([1.5])), [1], jitorch.int64)


@pytest.mark.parametrize("fn,msg", [
    (lambda: jitorch.searchsorted(T([1, 2]), T([1]), right=True, side="left"),
     "side and right can't be set to opposites"),
    (lambda: jitorch.searchsorted(T([1, 2]), T([1]), side="abc"),
     "side can only be 'left' or 'right' but got abc"),
    (lambda: jitorch.searchsorted(T([[1, 2]]), T([1])),
     "boundaries tensor should be 1 dimension or the first N-1 dimensions"),
    (lambda: jitorch.searchsorted(T([[1, 2], [3, 4]]), 2),
     "input value can be a scalar only when boundaries tensor dimension is 1"),
    (lambda: jitorch.bucketize(T([1]), T([[1, 2]])), "boundaries tensor must be 1 dimension"),
])
def test_search_errors(fn, msg):
    with pytest.raises(RuntimeError) as info:
        fn()
    assert msg in str(info.value)


def test_bucketize():
    b = T([1, 3, 5, 7, 9])
    _check(jitorch.bucketize(T([[3, 6], [9, 1]]), b), [[1, 3], [4, 0]], jitorch.int64)
    _check(jitorch.bucketize(T([3, 6, 9]), b, right=True), [2, 3, 5], jitorch.int64)
    _check(jitorch.bucketize(5, b), 2, jitorch.int64, ())  # a Python number first is allowed
    _check(jitorch.bucketize(T([1.5]), T([1, 2]), out_int32=True), [1], jitorch.int32)


# --- bincount / histc -----------------------------------------------------------------------------
def test_bincount():
    x = T([0, 1, 1, 3])
    _check(jitorch.bincount(x), [1, 2, 0, 1], jitorch.int64)
    _check(x.bincount(minlength=6), [1, 2, 0, 1, 0, 0], jitorch.int64)
    _check(jitorch.bincount(x, T([0.5, 1.0, 1.0, 2.0])), [0.5, 2, 0, 2], jitorch.float32)
    _check(jitorch.bincount(T([0, 1]), T([1, 2])), [1, 2], jitorch.float64)  # int weights
    _check(jitorch.bincount(T([0, 1]), T([1.0, 2.0], dtype=jitorch.float16)), [1, 2],
           jitorch.float64)
    _check(jitorch.bincount(T([], dtype=jitorch.int64)), np.zeros(0), jitorch.int64)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: jitorch.bincount(T([-1, 1])), RuntimeError, "1-d non-negative integral inputs"),
    (lambda: jitorch.bincount(T([[1, 2]])), RuntimeError, "1-d non-negative integral inputs"),
    (lambda: jitorch.bincount(T([1.0])), NotImplementedError, "bincount_cpu"),
    (lambda: jitorch.bincount(T([1, 2]), minlength=-1), RuntimeError, "minlength should be >= 0"),
    (lambda: jitorch.bincount(T([1, 2]), T([1.0])), RuntimeError, "weights should be 1-d"),
    (lambda: jitorch.histc(T([1, 2])), NotImplementedError, "histogram_cpu"),
    (lambda: jitorch.histc(T([1.0]), bins=0), RuntimeError, "bins must be > 0"),
    (lambda: jitorch.histc(T([1.0]), 3, 3, 1), RuntimeError, "max must be larger than min"),
    (lambda: jitorch.histc(T([1.0, float("inf")]), 3), RuntimeError, "is not finite"),
])
def test_count_errors(fn, exc, msg):
    with pytest.raises(exc) as info:
        fn()
    assert msg in str(info.value)


def test_histc():
    _check(jitorch.histc(T([1.0, 2, 1]), bins=4, min=0, max=3), [0, 2, 1, 0], jitorch.float32)
    _check(jitorch.histc(T([1.0, 2, 1, 4, -1]), bins=4), [1, 2, 1, 1], jitorch.float32)
    _check(jitorch.histc(T([2.0, 2.0]), bins=4), [0, 0, 2, 0], jitorch.float32)
    _check(jitorch.histc(T([0.0, 3.0], dtype=jitorch.float64), 3, 0, 3), [1, 0, 1],
           jitorch.float64)  # the top edge is in the last bin
    _check(jitorch.histc(T([1.0, nan]), bins=3, min=0, max=2), [0, 1, 0], jitorch.float32)
    _check(T([1.0, 2.0, 3.0]).histc(3), [1, 1, 1], jitorch.float32)


def test_nondifferentiable_results():
    x = T([[1.0, 2.0], [2.0, 3.0]], requires_grad=True)
    for r in (jitorch.argsort(x), jitorch.histc(x, 3), jitorch.bucketize(x, T([1.5])),
              jitorch.searchsorted(T([1.0, 2.0]), x), jitorch.unique(x)):
        assert not r.requires_grad


# --- registration --------------------------------------------------------------------------------
_MINE = ["sum", "mean", "nansum", "nanmean", "prod", "amax", "amin", "max", "min", "argmax",
         "argmin", "std", "var", "std_mean", "var_mean", "norm", "logsumexp", "all", "any",
         "count_nonzero", "aminmax", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
         "diff", "sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
         "quantile", "nanquantile", "unique", "unique_consecutive", "searchsorted", "bucketize",
         "bincount", "histc"]


def test_public_ops_are_registered_and_covered():
    from opinfo import OPINFOS
    covered = {i.name for i in OPINFOS}
    for name in _MINE:
        assert name in PUBLIC and getattr(jitorch, name) is PUBLIC[name], name
        assert name in covered, name
    methods = set(_MINE) - {"std_mean", "var_mean", "searchsorted", "bucketize"}
    for name in methods:
        assert callable(getattr(jitorch.Tensor, name)), name
