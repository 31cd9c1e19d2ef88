"""Reductions and scans: semantics the OpInfo table can't express (overloads, named tuples,
error types and messages, dtype corners, keyword forms, in-place and out= variants, PyTorch's
gradient conventions for ties, second-order gradients)."""
import numpy as np
import pytest

import jitorch
from jitorch.autograd import gradcheck, gradgradcheck

T = jitorch.tensor


def _check(t, values, dtype, shape=None):
    """values, dtype and shape of a result."""
    assert isinstance(t, jitorch.Tensor)
    assert t.dtype is dtype, (t.dtype, dtype)
    want = np.asarray(values)
    assert tuple(t.shape) == (want.shape if shape is None else tuple(shape))
    np.testing.assert_allclose(t.detach().numpy().astype(np.complex128),
                               want.astype(np.complex128), rtol=1e-5, atol=1e-6, equal_nan=True)


def _ties():
    return T([[1.0, 3.0, 3.0], [3.0, 0.0, 2.0]], requires_grad=True)


# --- max / min overloads and named tuples --------------------------------------------------------
def test_max_full_reduction_is_a_tensor():
    _check(jitorch.max(T([[1, 5], [3, 2]])), 5, jitorch.int64, ())
    _check(T([[1.0, -5.0]]).min(), -5.0, jitorch.float32, ())


def test_max_dim_returns_named_tuple():
    r = jitorch.max(T([[1, 5], [5, 2]]), 1)
    assert isinstance(r, jitorch.return_types.max) and isinstance(r, tuple)
    assert r._fields == ("values", "indices")
    _check(r.values, [5, 5], jitorch.int64)
    _check(r.indices, [1, 0], jitorch.int64)
    v, i = r
    assert v is r[0] and i is r[1]
    assert repr(r).startswith("jitorch.return_types.max(\nvalues=tensor(")
    r = T([[1.0, 4.0], [3.0, 2.0]]).min(dim=0, keepdim=True)
    _check(r.values, [[1.0, 2.0]], jitorch.float32)
    _check(r.indices, [[0, 1]], jitorch.int64)


def test_max_ties_pick_first_index_and_nan_wins():
    _check(jitorch.max(T([1.0, 3.0, 3.0]), 0).indices, 1, jitorch.int64, ())
    r = jitorch.max(T([[1.0, float("nan"), 3.0]]), 1)
    _check(r.values, [float("nan")], jitorch.float32)
    _check(r.indices, [1], jitorch.int64)
    _check(jitorch.argmax(T([1.0, float("nan"), 3.0, float("nan")])), 1, jitorch.int64, ())


@pytest.mark.parametrize("shape,dt", [((5,), np.float32), ((3, 4, 2), np.float64),
                                      ((2, 1, 3), np.int64)])
def test_max_min_dim_gather_is_numpy_s_take_along_axis(shape, dt):
    """minmax.py gathers the chosen values itself: bit for bit np.take_along_axis's result
    (NaN and signed zeros included), strides too."""
    from jitorch._ops.minmax import _lane_values
    x = (np.random.default_rng(0).standard_normal(shape) * 3).astype(dt)
    if dt != np.int64:
        x.flat[0], x.flat[-1] = np.nan, -0.0
    for axis in range(len(shape)):
        for arg in (np.argmax, np.argmin):
            idx = arg(x, axis=axis, keepdims=True)
            want, got = np.take_along_axis(x, idx, axis), _lane_values(x, idx, axis)
            assert got.dtype == want.dtype and got.strides == want.strides
            assert got.tobytes() == want.tobytes()
        vals, idx = jitorch.max(jitorch.tensor(x), axis)
        np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(
            x, np.argmax(x, axis=axis, keepdims=True), axis).squeeze(axis))


def test_max_with_other_is_maximum():
    a, b = T([[1.0, 2.0], [5.0, 2.0]]), T([3.0, 0.0])
    _check(jitorch.max(a, b), [[3.0, 2.0], [5.0, 2.0]], jitorch.float32)
    _check(jitorch.min(a, other=b), [[1.0, 0.0], [3.0, 0.0]], jitorch.float32)
    _check(a.max(b), [[3.0, 2.0], [5.0, 2.0]], jitorch.float32)


def test_aminmax_named_tuple():
    r = jitorch.aminmax(T([[1, 5], [5, 2]]), dim=1, keepdim=True)
    assert r._fields == ("min", "max")
    _check(r.min, [[1], [2]], jitorch.int64)
    _check(r.max, [[5], [5]], jitorch.int64)
    r = T([[1, 5], [5, 2]]).aminmax()
    _check(r.min, 1, jitorch.int64, ())


def test_return_types_namespace():
    for name in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode",
                 "cummax", "cummin", "aminmax"):
        assert getattr(jitorch.return_types, name).__module__ == "jitorch.return_types"


def test_std_mean_returns_plain_tuple():
    r = jitorch.std_mean(T([[1.0, 2.0, 4.0]]), 1)
    assert type(r) is tuple
    _check(r[0], [np.std([1, 2, 4], ddof=1)], jitorch.float32)
    _check(r[1], [7 / 3], jitorch.float32)


# --- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: jitorch.amax(jitorch.empty(0)), RuntimeError, "Expected reduction dim to be"),
    (lambda: jitorch.max(jitorch.empty(0, 2), 0), IndexError,
     "Expected reduction dim 0 to have non-zero size"),
    (lambda: jitorch.argmax(T([True])), RuntimeError, "does not support bool"),
    (lambda: jitorch.argmax(jitorch.empty(0)), IndexError, "Expected reduction dim"),
    (lambda: jitorch.max(T([1j])), NotImplementedError, "max_all"),
    (lambda: jitorch.max(T([1j]), 0), RuntimeError, "does not support complex"),
    (lambda: jitorch.mean(T([1, 2])), RuntimeError, "Got: Long"),
    (lambda: jitorch.nanmean(T([1, 2])), RuntimeError, "floating point or complex dtype"),
    (lambda: jitorch.nansum(T([1j])), RuntimeError, "does not support complex"),
    (lambda: jitorch.std(T([1, 2])), RuntimeError, "std and var only support floating point"),
    (lambda: jitorch.var_mean(T([1, 2])), RuntimeError, "var_mean only support"),
    (lambda: jitorch.norm(T([1, 2])), RuntimeError, "Expected a floating point or complex"),
    (lambda: jitorch.norm(jitorch.empty(0), float("inf")), RuntimeError, "inf norm"),
    (lambda: jitorch.norm(T([1.0]), "abc"), RuntimeError, "Order abc not supported"),
    (lambda: jitorch.sum(T([[1.0]]), 2), IndexError, "Dimension out of range"),
    (lambda: jitorch.sum(T([[1.0]]), (0, -2)), RuntimeError, "appears multiple times"),
    (lambda: jitorch.amax(T(3.0), 1), IndexError, "Dimension out of range"),
    (lambda: jitorch.prod(T([[1.0]]), (0, 1)), TypeError, "must be int"),
    (lambda: jitorch.var(T([1.0, 2.0]), 0, unbiased=True, correction=1), TypeError, ""),
    (lambda: jitorch.aminmax(jitorch.empty(0)), RuntimeError, "no identity"),
    (lambda: jitorch.logcumsumexp(T([1, 2]), 0), NotImplementedError, "logcumsumexp_out_cpu"),
    (lambda: jitorch.cummax(T([1j]), 0), NotImplementedError, "cummax_cpu"),
    (lambda: jitorch.cumsum(T([[1.0]]), 2), IndexError, "Dimension out of range"),
    (lambda: jitorch.diff(T(1.0)), RuntimeError, "at least one-dimensional"),
    (lambda: jitorch.diff(T([1.0, 2.0]), -1), RuntimeError, "order must be non-negative"),
    (lambda: jitorch.diff(jitorch.ones(2, 3), prepend=jitorch.ones(3)), RuntimeError,
     "same dimension as input"),
    (lambda: jitorch.diff(jitorch.ones(2, 3), append=jitorch.ones(3, 3)), RuntimeError,
     "input.size(0) = 2, but got tensor.size(0) = 3"),
    (lambda: jitorch.diff(jitorch.ones(3), prepend=2.0), TypeError, "must be Tensor"),
    (lambda: jitorch.sum(3.0), TypeError, "must be Tensor"),
])
def test_errors(fn, exc, msg):
    with pytest.raises(exc, match=None) as info:
        fn()
    assert msg in str(info.value)


def test_var_warns_when_degrees_of_freedom_are_gone():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        r = jitorch.var(T([3.0]))
    _check(r, float("nan"), jitorch.float32, ())


# --- dtypes ---------------------------------------------------------------------------------------
def test_integer_and_bool_accumulate_in_int64():
    _check(jitorch.sum(T([1, 2], dtype=jitorch.int32)), 3, jitorch.int64, ())
    _check(jitorch.sum(T([True, True, False])), 2, jitorch.int64, ())
    _check(jitorch.prod(T([2, 3], dtype=jitorch.int8)), 6, jitorch.int64, ())
    _check(jitorch.prod(T([True, False])), 0, jitorch.int64, ())
    _check(jitorch.cumsum(T([1, 2], dtype=jitorch.uint8), 0), [1, 3], jitorch.int64)
    _check(jitorch.cumprod(T([True, False]), 0), [1, 0], jitorch.int64)
    _check(jitorch.nansum(T([1, 2], dtype=jitorch.int16)), 3, jitorch.int64, ())


def test_dtype_keyword():
    x = T([[1.5, 2.5]])
    _check(jitorch.sum(x, dtype=jitorch.float64), 4.0, jitorch.float64, ())
    _check(jitorch.sum(x, 1, dtype=jitorch.int32), [3], jitorch.int32)  # cast first
    _check(jitorch.mean(T([1, 2]), dtype=jitorch.float32), 1.5, jitorch.float32, ())
    _check(jitorch.prod(x, dtype=jitorch.float64), 3.75, jitorch.float64, ())
    _check(jitorch.cumsum(x, 1, dtype=jitorch.float64), [[1.5, 4.0]], jitorch.float64)
    _check(jitorch.norm(x, dtype=jitorch.float64), np.hypot(1.5, 2.5), jitorch.float64, ())


def test_half_types_accumulate_in_float32():
    ones = jitorch.ones(4096, dtype=jitorch.float16)
    _check(jitorch.sum(ones), 4096.0, jitorch.float16, ())  # float16 steps are 2 above 2048
    _check(jitorch.mean(jitorch.ones(3, dtype=jitorch.bfloat16)), 1.0, jitorch.bfloat16, ())
    _check(jitorch.logsumexp(T([1.0, 2.0], dtype=jitorch.float16), 0), 2.3125,  # rounded
           jitorch.float16, ())


def test_boolean_reductions_keep_uint8():
    _check(jitorch.all(T([1, 0], dtype=jitorch.uint8)), 0, jitorch.uint8, ())
    _check(jitorch.any(T([1, 0], dtype=jitorch.uint8), 0), 1, jitorch.uint8, ())
    _check(jitorch.all(T([[1.0, 2.0]]), 1), [True], jitorch.bool)
    _check(jitorch.any(jitorch.empty(0)), False, jitorch.bool, ())
    # all/any over an empty dim list test each element (unlike sum, which reduces everything)
    _check(jitorch.any(T([[1.0, 0.0]]), ()), [[True, False]], jitorch.bool)
    _check(jitorch.sum(T([[1.0, 2.0]]), dim=[]), 3.0, jitorch.float32, ())


def test_float_results_for_integer_inputs():
    _check(jitorch.logsumexp(T([[1, 2]]), 1), [np.logaddexp(1, 2)], jitorch.float32)
    jitorch.set_default_dtype(jitorch.float64)
    try:
        _check(jitorch.logsumexp(T([1, 2]), 0), np.logaddexp(1, 2), jitorch.float64, ())
    finally:
        jitorch.set_default_dtype(jitorch.float32)
    _check(jitorch.count_nonzero(T([[1, 0], [1, 1]]), 0), [2, 1], jitorch.int64)


def test_complex_inputs_give_real_moments_and_norms():
    z = T([1j, 2.0])
    _check(jitorch.var(z), 2.5, jitorch.float32, ())
    _check(jitorch.std(z), np.sqrt(2.5), jitorch.float32, ())
    _check(jitorch.norm(T([3 + 4j])), 5.0, jitorch.float32, ())
    _check(jitorch.sum(z), 2 + 1j, jitorch.complex64, ())


def test_empty_reductions():
    _check(jitorch.sum(jitorch.empty(0)), 0.0, jitorch.float32, ())
    _check(jitorch.prod(jitorch.empty(0, 3), 0), [1.0, 1.0, 1.0], jitorch.float32)
    _check(jitorch.mean(jitorch.empty(0)), float("nan"), jitorch.float32, ())
    _check(jitorch.logsumexp(jitorch.empty(0, 2), 0), [-np.inf, -np.inf], jitorch.float32)
    _check(jitorch.amax(jitorch.empty(0, 3), 1), np.zeros(0), jitorch.float32)
    _check(jitorch.norm(jitorch.empty(0)), 0.0, jitorch.float32, ())


def test_logsumexp_is_stable():
    _check(jitorch.logsumexp(T([1000.0, 1000.0]), 0), 1000 + np.log(2), jitorch.float32, ())
    _check(jitorch.logsumexp(T([-np.inf, -np.inf]), 0), -np.inf, jitorch.float32, ())
    _check(jitorch.logsumexp(T([np.inf, 1.0]), 0), np.inf, jitorch.float32, ())
    _check(jitorch.logcumsumexp(T([-np.inf, 0.0, 800.0]), 0), [-np.inf, 0.0, 800.0],
           jitorch.float32)


# --- keyword forms, methods, out=, in-place -------------------------------------------------------
def test_keyword_and_overloaded_forms():
    x = T([[1.0, 2.0, 4.0], [0.0, 3.0, 3.0]])
    _check(x.sum(dim=1, keepdim=True), [[7.0], [6.0]], jitorch.float32)
    _check(x.std(1, True), np.std(x.numpy(), 1, ddof=1), jitorch.float32)
    _check(x.std(False), np.std(x.numpy()), jitorch.float32, ())  # var(x, unbiased)
    _check(x.var(dim=1, unbiased=False), np.var(x.numpy(), 1), jitorch.float32)
    _check(x.var(dim=0, correction=0, keepdim=True), np.var(x.numpy(), 0, keepdims=True),
           jitorch.float32)
    _check(x.norm(p=1, dim=0), [1.0, 5.0, 7.0], jitorch.float32)
    _check(jitorch.norm(x, "fro", (0, 1)), np.linalg.norm(x.numpy()), jitorch.float32, ())
    _check(x.amax(dim=(0, 1)), 4.0, jitorch.float32, ())
    _check(x.cumsum(dim=1), np.cumsum(x.numpy(), 1), jitorch.float32)
    _check(x.diff(dim=0), [[-1.0, 1.0, -1.0]], jitorch.float32)


def test_out_arguments():
    x = T([[1.0, 5.0], [3.0, 2.0]])
    out = jitorch.empty(0)
    r = jitorch.sum(x, 1, out=out)
    assert r is out
    _check(out, [6.0, 5.0], jitorch.float32)
    v, i = jitorch.empty(0), jitorch.empty(0, dtype=jitorch.int64)
    r = jitorch.max(x, 1, out=(v, i))
    _check(v, [5.0, 3.0], jitorch.float32)
    _check(i, [1, 0], jitorch.int64)


def test_inplace_scans():
    x = T([1.0, 2.0, 3.0])
    assert x.cumsum_(0) is x
    _check(x, [1.0, 3.0, 6.0], jitorch.float32)
    y = T([1, 2, 3])
    y.cumprod_(0)
    _check(y, [1, 2, 6], jitorch.int64)
    leaf = T([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.cumsum_(0)


# --- gradients: PyTorch's conventions -------------------------------------------------------------
def test_full_reduction_shares_gradient_among_ties():
    for fn in (lambda x: x.amax(), lambda x: x.max(), lambda x: x.norm(float("inf"))):
        x = _ties()
        fn(x).backward()
        np.testing.assert_allclose(x.grad.numpy(), [[0, 1 / 3, 1 / 3], [1 / 3, 0, 0]])
    x = _ties()
    x.amax(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [1, 0, 0]])


def test_max_dim_sends_gradient_to_the_chosen_index():
    x = _ties()
    values, indices = x.max(1)
    assert values.requires_grad and not indices.requires_grad
    values.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 1, 0], [1, 0, 0]])


def test_aminmax_gradient():
    x = _ties()
    r = jitorch.aminmax(x)
    (r.min + r.max).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 1 / 3, 1 / 3], [1 / 3, 1, 0]])


def test_index_outputs_never_require_grad():
    x = _ties()
    for r in (jitorch.argmax(x), jitorch.argmin(x, 1), jitorch.cummax(x, 1).indices,
              jitorch.count_nonzero(x), jitorch.all(x)):
        assert not r.requires_grad


def test_nan_extremum_gradients_follow_pytorch():
    def grad(fn):
        x = T([[1.0, float("nan"), 2.0], [3.0, 1.0, 0.0]], requires_grad=True)
        (g,) = jitorch.autograd.grad(fn(x).sum(), x)
        return g.numpy()
    np.testing.assert_allclose(grad(lambda x: x.max()), [[0, 1, 0], [0, 0, 0]])  # to the NaN
    np.testing.assert_allclose(grad(lambda x: x.median()), [[0, 1, 0], [0, 0, 0]])
    # amax/amin/aminmax compare with ==, so a NaN extremum poisons its slice
    np.testing.assert_allclose(grad(lambda x: x.amax(1)), [[np.nan] * 3, [1, 0, 0]])
    assert np.isnan(grad(lambda x: x.aminmax().max)).all()


def test_prod_gradient_with_zeros():
    x = T([[1.0, 0.0, 3.0], [0.0, 2.0, 0.0], [2.0, 3.0, 4.0]], requires_grad=True)
    x.prod(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 3, 0], [0, 0, 0], [12, 8, 6]])
    x.grad = None
    x.cumprod(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1, 4, 0], [3, 0, 0], [16, 10, 6]])


def test_nan_aware_gradients():
    x = T([[1.0, float("nan"), 2.0]], requires_grad=True)
    jitorch.nansum(x).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1, 0, 1]])
    x.grad = None
    jitorch.nanmean(x, 1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.5, 0, 0.5]])


@pytest.mark.parametrize("name,fn", [
    ("prod", lambda x: x.prod(1)), ("prod-all", lambda x: x.prod()),
    ("cumprod", lambda x: x.cumprod(1)), ("logcumsumexp", lambda x: x.logcumsumexp(1)),
    ("std", lambda x: x.std(1)), ("norm3", lambda x: x.norm(3, 1)),
    ("norm-inf", lambda x: x.norm(float("inf"))), ("logsumexp", lambda x: x.logsumexp(0)),
    ("max-dim", lambda x: x.max(1).values), ("amax", lambda x: x.amax(0)),
    ("cummax", lambda x: x.cummax(0).values), ("diff", lambda x: x.diff(2)),
    ("var_mean", lambda x: jitorch.var_mean(x, 1)),
])
def test_second_order(name, fn):
    x = T(np.random.default_rng(3).standard_normal((3, 4)), requires_grad=True)
    assert gradgradcheck(fn, [x])


def test_forward_ad_of_named_tuple_results():
    x = T(np.random.default_rng(4).standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda x: jitorch.cummin(x, 1).values, [x], check_forward_ad=True)
    assert gradcheck(lambda x: jitorch.min(x, 0, True).values, [x], check_forward_ad=True)


# --- scans: semantics -----------------------------------------------------------------------------
def test_cummax_ties_take_latest_index_and_nan_sticks():
    r = jitorch.cummax(T([3.0, 3.0, 1.0, 3.0]), 0)
    assert isinstance(r, jitorch.return_types.cummax)
    _check(r.indices, [0, 1, 1, 3], jitorch.int64)
    r = jitorch.cummin(T([1.0, float("nan"), 2.0, float("nan"), 0.0]), 0)
    _check(r.values, [1.0] + [float("nan")] * 4, jitorch.float32)
    _check(r.indices, [0, 1, 1, 3, 3], jitorch.int64)


def test_diff_bool_and_promotion():
    _check(jitorch.diff(T([True, False, False])), [True, False], jitorch.bool)
    _check(jitorch.diff(T([1, 3], dtype=jitorch.int32), prepend=T([0.5])), [0.5, 2.0],
           jitorch.float32)
    _check(jitorch.diff(T([1.0, 2.0]), 5), np.zeros(0), jitorch.float32)
