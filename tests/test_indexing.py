"""Indexing semantics the OpInfo table can't express: `t[idx]` and `t[idx] = v` (views, copies,
PyTorch's rules where they differ from NumPy's, errors), in-place variants, autograd through
writes, keyword forms, tuple results and half-precision dtypes.

Expected values come from PyTorch's documented behaviour (checked against PyTorch itself when
the tests were written); each check covers values, dtype and shape.
"""
import numpy as np
import pytest

import jitorch
from jitorch.autograd import forward_ad as fwAD


def _t(a, **kw):
    return jitorch.tensor(np.asarray(a), **kw)


def check(t, expected, dtype=None):
    expected = np.asarray(expected)
    assert isinstance(t, jitorch.Tensor)
    assert tuple(t.shape) == expected.shape, (t.shape, expected.shape)
    if dtype is not None:
        assert t.dtype is dtype, t.dtype
    half = t.dtype in (jitorch.float16, jitorch.bfloat16)
    np.testing.assert_allclose(t.detach().numpy().astype(np.float64), expected,
                               rtol=1e-2 if half else 1e-6, atol=1e-6)


X = np.arange(24).reshape(2, 3, 4)


# --- reading ---------------------------------------------------------------------------------
@pytest.mark.parametrize("idx", [
    0, -1, (1, 2), (0, 1, 2), slice(1, None), slice(None, None, 2), slice(-100, 100),
    slice(5, 1), (slice(None), 1), (Ellipsis, 1), (1, Ellipsis), None, (None, 0),
    (0, None, 1), (None, Ellipsis, None), (Ellipsis, None, 2), (), Ellipsis])
def test_basic_index_is_a_view(idx):
    x = _t(X)
    y = x[idx]
    check(y, X[idx], jitorch.int64)
    assert y._base is x
    assert y.numel() == 0 or np.shares_memory(y.numpy(), x.numpy())


def test_tuple_of_ints_takes_the_fast_path_with_parse_s_results(monkeypatch):
    """x[i, j] and x[t] with ints or 0-d int tensors are split without `_parse` (a Python loop's
    common indices), into the basic index `_parse` makes: the same view, grads and errors."""
    from jitorch._ops import indexing
    x = _t(X.astype(np.float64), requires_grad=True)
    want = {k: x[k] for k in [(1, -2), (0, 1, 3), (-1,)]}
    want[_t(-1)] = x[-1]
    want[(_t(1), _t(-1))] = x[1, -1]
    with monkeypatch.context() as mp:
        mp.setattr(indexing, "_parse", None)  # (a call would raise TypeError)
        for k, w in want.items():
            y = x[k]
            assert y._base is x and y.shape == w.shape and y.grad_fn.name() == w.grad_fn.name()
            np.testing.assert_array_equal(y.detach().numpy(), w.detach().numpy())
        y.sum().backward()  # (the last: x[1, -1])
    np.testing.assert_array_equal(x.grad.numpy()[1, -1], 1.0)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x[0, 3]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0, 0]
    check(x[True, 1], X[None, 1])  # a bool is not an int here


@pytest.mark.parametrize("idx", [
    [0, 1], np.array([[0, 1], [1, 0]]), ([0, 1], [1, 2]), ([0, 1], slice(None), [1, 2]),
    ([0, 1], None, [1, 2]), (None, [0, 1], [1, 2]), ([[0], [1]], slice(None), [[1, 2]]),
    (0, [0, 1], slice(None)), (slice(None), [0, 1], 0), (Ellipsis, [0, 3]), [0, -2],
    ([0, 1, 0], [0]), (slice(None), [2, 0, 2])])
def test_advanced_index_matches_numpy_and_copies(idx):
    x = _t(X)
    y = x[idx]
    check(y, X[idx], jitorch.int64)
    assert y._base is None and not np.shares_memory(y.numpy(), x.numpy())


@pytest.mark.parametrize("idx,shape", [
    ((0, slice(None), [1]), (3, 1)),          # NumPy: (1, 3); PyTorch selects first
    ((0, slice(None), [[0, 1]]), (3, 1, 2)),  # NumPy: (1, 2, 3)
    (([0], slice(None), 0), (1, 3)),
    (([0], 0, [1]), (1,))])
def test_ints_are_selects_not_advanced_indices(idx, shape):
    x = _t(np.zeros((2, 3, 4)))
    assert tuple(x[idx].shape) == shape


def test_index_tensors_and_arrays():
    x = _t(X)
    check(x[_t([1, 0])], X[[1, 0]])
    check(x[_t([1, 0]).int()], X[[1, 0]])
    check(x[np.array([1, 0])], X[[1, 0]])
    check(x[_t([[0, 1], [1, 0]])], X[np.array([[0, 1], [1, 0]])])
    check(x[np.array([[0, 1], [1, 0]])], X[np.array([[0, 1], [1, 0]])])
    check(x[_t([], dtype=jitorch.int64)], np.zeros((0, 3, 4)))
    check(x[[]], np.zeros((0, 3, 4)))
    check(x[[1.0]], X[[1]])  # a list of floats becomes an int64 index, as in PyTorch
    # a 0-d integer tensor is an int: a view, not a copy
    y = x[_t(1), 1:]
    check(y, X[1, 1:])
    assert y._base is x


def test_masks():
    x = _t(X)
    m = X > 10
    check(x[_t(m)], X[m])
    check(x[:, _t([True, False, True])], X[:, [True, False, True]])
    check(x[_t([True, False])], X[[True, False]])
    check(x[[True, False]], X[[True, False]])  # a bool list is a mask
    check(x[_t([1, 0], dtype=jitorch.uint8)], X[[True, False]])  # byte tensors are masks
    check(x[1, _t([False, True, True])], X[1, [False, True, True]])
    check(x[_t(m[:, :, 0])], X[m[:, :, 0]])  # a 2-d mask over the leading dims
    # Python bools (and 0-d bool tensors) add a dim of size 1 or 0
    for idx, shape in [(True, (1, 2, 3, 4)), (False, (0, 2, 3, 4)), ((0, True), (1, 3, 4)),
                       (_t(True), (1, 2, 3, 4)), (_t(False), (0, 2, 3, 4)),
                       ((True, [0, 1]), (2, 3, 4))]:
        y = x[idx]
        assert tuple(y.shape) == shape and y.dtype is jitorch.int64


def test_list_index_heuristic():
    """A short list holding a slice/None/Ellipsis/sequence/tensor is a tuple of indices."""
    x = _t(X)
    check(x[[0, slice(None), 1]], X[0, :, 1])
    check(x[[0, None]], X[0, None])
    check(x[[[0, 1], [1, 0]]], X[[0, 1], [1, 0]])
    check(x[[_t(0), _t(1)]], X[0, 1])
    check(x[[0] * 40], X[[0] * 40])  # long lists are one index


def test_zero_dim_tensor():
    s = jitorch.tensor(5.0)
    for idx, shape in [((), ()), (None, (1,)), (Ellipsis, ()), (True, (1,)), (False, (0,))]:
        y = s[idx]
        assert tuple(y.shape) == shape and y.dtype is jitorch.float32
    assert s[()]._base is s


def test_slice_bounds_may_be_tensors():
    x = _t(np.arange(6))
    check(x[_t(1):_t(4)], [1, 2, 3])
    with pytest.raises(TypeError):
        x[_t(1.0):]


@pytest.mark.parametrize("idx,exc,msg", [
    (slice(None, None, -1), ValueError, "step must be greater than zero"),
    (slice(None, None, 0), ValueError, "slice step cannot be zero"),
    (5, IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    (-3, IndexError, "index -3 is out of bounds for dimension 0 with size 2"),
    ((None, 5), IndexError, "index 5 is out of bounds for dimension 1 with size 2"),
    ((0, 5), IndexError, "index 5 is out of bounds for dimension 1 with size 3"),
    ([0, 5], IndexError, "index 5 is out of bounds for dimension 0 with size 2"),
    (([0, 1], [5, 0]), IndexError, "index 5 is out of bounds for dimension 1 with size 3"),
    ((0, [7]), IndexError, "index 7 is out of bounds for dimension 0 with size 3"),
    ((1, 2, 3), IndexError, "too many indices for tensor of dimension 2"),
    (([0], [0], [0]), IndexError, "too many indices for tensor of dimension 2"),
    (1.5, IndexError, "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
     "Variables are valid indices (got float)"),
    ((1, 1.5), IndexError, "(got float)"),
    ({}, IndexError, "(got dict)"),
    ("a", TypeError, "invalid data type 'str'"),
    ("float_tensor", IndexError, "tensors used as indices must be long, int, byte or bool "
     "tensors"),
    ("int16_tensor", IndexError, "tensors used as indices must be long, int, byte or bool "
     "tensors"),
    ("short_mask", IndexError, "The shape of the mask [2] at index 0 does not match the shape "
     "of the indexed tensor [2, 3] at index 1"),
    ("none_mask", IndexError, "The shape of the mask [2] at index 0 does not match the shape "
     "of the indexed tensor [1, 2, 3] at index 2"),
    ("broadcast", IndexError, "shape mismatch: indexing tensors could not be broadcast "
     "together with shapes [2], [3]"),
])
def test_getitem_errors(idx, exc, msg):
    x = _t(np.arange(6.0).reshape(2, 3))
    idx = {"float_tensor": _t([0.0]), "int16_tensor": _t([0], dtype=jitorch.int16),
           "short_mask": (slice(None), _t([True, False])),
           "none_mask": (None, slice(None), _t([True, False])),
           "broadcast": ([0, 1], [0, 1, 2])}.get(idx, idx) if isinstance(idx, str) and \
        idx != "a" else idx
    with pytest.raises(exc) as e:
        x[idx]
    assert msg in str(e.value)


def test_zero_dim_errors():
    s = _t(2.0)
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        s[0]
    with pytest.raises(IndexError, match=r"slice\(\) cannot be applied to a 0-dim tensor"):
        s[0:1]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 0"):
        s[None, 0]


@pytest.mark.parametrize("dtype", [jitorch.float16, jitorch.bfloat16, jitorch.bool,
                                   jitorch.complex64, jitorch.uint8])
def test_getitem_keeps_dtype(dtype):
    x = jitorch.tensor(np.arange(6).reshape(2, 3)).to(dtype)
    assert x[1].dtype is dtype and x[[1, 0], 1:].dtype is dtype
    assert tuple(x[x.to(jitorch.bool)].shape) == ((5,) if dtype is not jitorch.bool else (5,))


# --- writing ---------------------------------------------------------------------------------
def _set(x, idx, v):
    x[idx] = v
    return x


@pytest.mark.parametrize("idx,v", [
    (0, 1.0), ((0, 1), 7), (slice(None), 3.0), (Ellipsis, 2.0), ((None, 0), 4.0),
    ((slice(None), slice(None), slice(None, None, 2)), np.array([1.0, 2.0])),
    (0, np.ones(4)), (0, np.ones((1, 3, 4))), (0, np.ones((1, 1, 3, 4))),
    ([0], 5.0), ([0, 1], np.ones((3, 4))), ([0, 1], np.ones((1, 1, 2, 3, 4))),
    (([0, 1], slice(None), [1, 2]), np.array([[10.0], [20.0]])),
    ((slice(None), 0, [1]), np.arange(2.0).reshape(2, 1)), (True, 2.0), (False, 2.0),
    ("mask", 0.0), ("mask", np.arange(13.0)),
])
def test_setitem_matches_numpy(idx, v):
    m = X > 10
    ni = m if isinstance(idx, str) else idx
    ji = _t(m) if isinstance(idx, str) else idx
    jv = _t(v) if isinstance(v, np.ndarray) else v
    expect = X.astype(np.float64)
    expect[ni] = v  # NumPy also drops the value's leading size-1 dims
    x = _t(X.astype(np.float64))
    x[ji] = jv
    check(x, expect, jitorch.float64)


@pytest.mark.parametrize("idx,v,msg", [
    (([0, 1], slice(None), [1, 2]), [10.0, 20.0], "value tensor of shape [2] cannot be "
                                                   "broadcast to indexing result of shape [2, 3]"),
    ((0, slice(None), [1]), [0.0, 1.0, 2.0], "value tensor of shape [3] cannot be broadcast to "
                                             "indexing result of shape [3, 1]"),
    ("mask", [0.0, 1.0, 2.0], "value tensor of shape [3] cannot be broadcast to indexing result "
                              "of shape [13]"),
])
def test_setitem_shape_mismatch(idx, v, msg):
    x = _t(X.astype(np.float64))
    with pytest.raises(RuntimeError) as e:
        x[_t(X > 10) if idx == "mask" else idx] = _t(v)
    assert msg in str(e.value)


def test_setitem_writes_through_views_and_bumps_version():
    base = _t(np.zeros((3, 4)))
    v = base[1:]
    before = base._version_value
    v[0, [1, 3]] = 5.0
    v[:, 0] = _t([1.0, 2.0])
    expect = np.zeros((3, 4))
    expect[1, [1, 3]] = 5.0
    expect[1:, 0] = [1.0, 2.0]
    check(base, expect)
    assert base._version_value == before + 2 and v._version_value == base._version_value


def test_setitem_conversions_and_errors():
    x = _t(np.zeros((2, 3)))  # float64
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match, got Double for the destination and "
                                           "Long for the source."):
        x[[0]] = _t([1, 2, 3])
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[2\] cannot "
                                           r"be broadcast to indexing result of shape \[1, 3\]"):
        x[[0]] = _t([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(3\) must match "
                                           r"the existing size \(2\) at non-singleton dimension 0"):
        x[0] = _t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="the number of sizes provided"):
        x[0] = _t(np.ones((2, 3)))
    with pytest.raises(TypeError, match="can't assign a numpy.ndarray to a"):
        x[0] = np.ones(3)
    with pytest.raises(TypeError, match="can't assign a list to a"):
        x[0] = [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1] = 1.0
    x[0] = _t([1, 2, 3])  # basic writes cast like copy_
    check(x[0], [1.0, 2.0, 3.0], jitorch.float64)
    xi = _t(np.zeros(3, np.int64))
    xi[[0]] = 2.7  # numbers are converted (truncated) to the tensor's dtype
    xi[[1]] = True
    check(xi, [2, 1, 0], jitorch.int64)
    for bad in (1e30, float("nan")):
        with pytest.raises(RuntimeError, match="value cannot be converted to type int64_t "
                                               "without overflow"):
            xi[[0]] = bad
    xb = _t(np.zeros(2, np.uint8))
    xb[[0]] = -1  # uint8 wraps small negatives, as in PyTorch
    check(xb, [255, 0], jitorch.uint8)
    with pytest.raises(RuntimeError, match="uint8_t without overflow"):
        xb[[0]] = 300


def test_setitem_autograd_value_and_overwritten_region():
    x = jitorch.tensor([1.5], requires_grad=True)
    out = jitorch.zeros(3)
    out[1] = x * 2
    out.sum().backward()
    check(x.grad, [2.0], jitorch.float32)

    a = jitorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = jitorch.tensor([4.0, 5.0], requires_grad=True)
    w = jitorch.tensor([1.0, 10.0, 100.0])
    b = a * 1
    b[[0, 2]] = v * 3  # advanced write: overwritten entries of the old value get no gradient
    (b * w).sum().backward()
    check(a.grad, [0.0, 10.0, 0.0])
    check(v.grad, [3.0, 300.0])

    a.grad = None
    b = a * 1
    b[1:] = v  # basic write through a view
    (b * w).sum().backward()
    check(a.grad, [1.0, 0.0, 0.0])
    check(v.grad, [3.0 + 10.0, 300.0 + 100.0])


def test_setitem_double_backward():
    x = jitorch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=jitorch.float64,
                       requires_grad=True)
    v = jitorch.tensor([0.5, -1.0], dtype=jitorch.float64, requires_grad=True)

    def f(x, v):
        y = x * 1
        z = y[1:]
        z[:, [1]] = v.reshape(2, 1)
        return (y * y).sum()
    assert jitorch.autograd.gradcheck(f, (x, v))
    assert jitorch.autograd.gradgradcheck(f, (x, v))


def test_setitem_leaf_errors_and_no_grad():
    a = jitorch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation."):
        a[0] = 1.0
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                           "in an in-place operation."):
        a[[0]] = 1.0
    with jitorch.no_grad():
        a[0] = 5.0
        a[[1]] = 6.0
    check(a, [5.0, 6.0])
    assert a.requires_grad and a.is_leaf


def test_forward_ad_through_indexing():
    with fwAD.dual_level():
        d = fwAD.make_dual(jitorch.tensor([1.0, 2.0, 3.0]), jitorch.tensor([1.0, 10.0, 100.0]))
        check(fwAD.unpack_dual(d[[2, 0]]).tangent, [100.0, 1.0])
        check(fwAD.unpack_dual(d[1:]).tangent, [10.0, 100.0])
        y = d * 1
        y[[0]] = fwAD.make_dual(jitorch.tensor([7.0]), jitorch.tensor([-1.0]))
        check(fwAD.unpack_dual(y).tangent, [-1.0, 10.0, 100.0])


def test_getitem_grad_accumulates_repeats():
    a = jitorch.tensor([1.0, 2.0, 3.0], dtype=jitorch.float64, requires_grad=True)
    a[[0, 0, 2]].sum().backward()
    check(a.grad, [2.0, 0.0, 1.0], jitorch.float64)
    for f in (lambda t: t[[0, 0, 1]] ** 2, lambda t: t[1:][None, [1, 1]] * t[0],
              lambda t: t[t > 1.5] * 3):
        assert jitorch.autograd.gradcheck(f, (a,))
        assert jitorch.autograd.gradgradcheck(f, (a,))


# --- index_put and the in-place variants ----------------------------------------------------
def test_index_put():
    x = _t(np.zeros((2, 3)))
    i, j = _t([0, 1, 1]), _t([2, 0, 0])
    r = x.index_put((i, j), _t([1.0, 2.0, 3.0]), accumulate=True)
    check(r, [[0, 0, 1], [5, 0, 0]], jitorch.float64)
    check(x, np.zeros((2, 3)))  # out of place
    r = jitorch.index_put(x, [_t([1])], _t(5.0))
    check(r, [[0, 0, 0], [5, 5, 5]])
    assert x.index_put_((_t([0]),), _t([1.0, 2.0, 3.0])) is x
    check(x, [[1, 2, 3], [0, 0, 0]])
    with pytest.raises(TypeError, match="argument 'values' .* must be Tensor, not float"):
        x.index_put((i,), 5.0)
    with pytest.raises(IndexError, match=r"too many indices for tensor of dimension 2 \(got 3\)"):
        x.index_put((i, i, i), _t(1.0))
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or "
                                         "bool tensors"):
        x.index_put((_t([0.0]),), _t(1.0))
    with pytest.raises(RuntimeError, match="Index put requires the source and destination "
                                           "dtypes match, got Double for the destination and "
                                           "Float for the source."):
        x.index_put((i,), _t(1.0, dtype=jitorch.float32))
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 2"):
        x.index_put((_t([3]),), _t(1.0))


@pytest.mark.parametrize("name,args,expect", [
    ("index_add_", (0, [0, 2, 0], "src"), [[2, 2, 2, 2], [0, 0, 0, 0], [1, 1, 1, 1]]),
    ("index_copy_", (1, [3, 0], "src2"), [[1, 0, 0, 1]] * 3),
    ("index_fill_", (1, [3, 0], -1.5), [[-1.5, 0, 0, -1.5]] * 3),
    ("masked_fill_", ("mask", 2.0), [[2, 0, 2, 0]] * 3),
    ("masked_scatter_", ("mask", "src_flat"), [[0, 0, 1, 0], [2, 0, 3, 0], [4, 0, 5, 0]]),
    ("scatter_", (0, [[2, 0, 1, 1]], "src1"), [[0, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 0]]),
    ("scatter_add_", (1, [[0, 0], [1, 3], [2, 2]], "src2"),
     [[2, 0, 0, 0], [0, 1, 0, 1], [0, 0, 2, 0]]),
    ("scatter_reduce_", (1, [[0, 0], [1, 3], [2, 2]], "src2", "amax"),
     [[1, 0, 0, 0], [0, 1, 0, 1], [0, 0, 1, 0]]),
    ("put_", ([0, 11], "src_pair"), [[7, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 8]]),
])
def test_inplace_variants(name, args, expect):
    x = _t(np.zeros((3, 4)))
    vals = {"src": _t(np.ones((3, 4))), "src2": _t(np.ones((3, 2))),
            "src1": _t(np.ones((1, 4))), "src_flat": _t(np.arange(6.0)),
            "mask": _t([True, False, True, False]), "src_pair": _t([7.0, 8.0])}
    a = [vals[v] if isinstance(v, str) and v in vals else
         (_t(v) if isinstance(v, list) else v) for v in args]
    before = x._version_value
    assert getattr(x, name)(*a) is x
    check(x, expect, jitorch.float64)
    assert x._version_value == before + 1


def test_inplace_variant_autograd_on_non_leaf():
    a = jitorch.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    s = jitorch.tensor([[10.0, 20.0, 30.0]], dtype=jitorch.float64, requires_grad=True)
    y = a * 1
    y.scatter_(0, _t([[1, 0, 1]]), s)
    (y * _t(np.arange(6.0).reshape(2, 3))).sum().backward()
    check(a.grad, [[0, 0, 2], [0, 4, 0]])  # overwritten entries get none
    check(s.grad, [[3, 1, 5]])
    x = jitorch.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.index_fill_(0, _t([0]), 2.0)


# --- keyword forms, results, out= --------------------------------------------------------------
def test_keyword_forms():
    x = _t(np.zeros((2, 3)))
    idx = _t([[0, 2]])
    check(jitorch.scatter(x, 1, idx, value=4.0), [[4, 0, 4], [0, 0, 0]])
    check(x.scatter(dim=1, index=idx, src=_t([[1.0, 2.0]])), [[1, 0, 2], [0, 0, 0]])
    check(x.scatter(1, idx, 2.0, reduce="add"), [[2, 0, 2], [0, 0, 0]])
    check(x.index_add(0, _t([1]), _t(np.ones((1, 3))), alpha=3), [[0, 0, 0], [3, 3, 3]])
    check(x.scatter_reduce(1, idx, _t([[1.0, 2.0]]), reduce="mean", include_self=False),
          [[1, 0, 2], [0, 0, 0]])
    y = _t(np.arange(6.0).reshape(2, 3))
    check(jitorch.take_along_dim(y, _t([[0, 1]]), dim=None), [0.0, 1.0])
    check(y.take_along_dim(_t([[2], [0]]), dim=1), [[2.0], [3.0]])
    check(jitorch.gather(y, dim=1, index=_t([[2], [0]])), [[2.0], [3.0]])
    check(jitorch.put(y, _t([0, 0]), _t([1.0, 2.0]), accumulate=True)[0], [3.0, 1.0, 2.0])
    with pytest.raises(TypeError):
        x.scatter(1, idx)
    with pytest.raises(TypeError):
        x.scatter(1, idx, _t([[1.0, 2.0]]), value=3.0)


def test_out_argument():
    y = _t(np.arange(6.0).reshape(2, 3))
    out = jitorch.empty(0, dtype=jitorch.float64)
    r = jitorch.index_select(y, 1, _t([2, 0]), out=out)
    assert r is out
    check(out, [[2.0, 0.0], [5.0, 3.0]], jitorch.float64)


def test_nonzero_and_argwhere():
    x = _t([[0.0, 1.5, 0.0], [2.0, 0.0, float("nan")]])
    check(jitorch.nonzero(x), [[0, 1], [1, 0], [1, 2]], jitorch.int64)
    r = x.nonzero(as_tuple=True)
    assert type(r) is tuple and len(r) == 2
    check(r[0], [0, 1, 1], jitorch.int64)
    check(r[1], [1, 0, 2], jitorch.int64)
    check(jitorch.argwhere(x), [[0, 1], [1, 0], [1, 2]], jitorch.int64)
    check(jitorch.nonzero(_t(3.0)), np.zeros((1, 0)), jitorch.int64)
    check(jitorch.nonzero(_t(0.0)), np.zeros((0, 0)), jitorch.int64)
    (r0,) = jitorch.nonzero(_t(3.0), as_tuple=True)
    check(r0, [0], jitorch.int64)
    x.requires_grad_(True)
    assert not jitorch.nonzero(x).requires_grad


# --- scatter_reduce gradients (PyTorch's formulas, incl. its tie rule) -----------------------
@pytest.mark.parametrize("reduce,inc,ga,gs", [
    ("amax", True, [[0, 0, 2], [3, 0, 0]], [[0, 4, 0], [0, 1, 5]]),
    ("amax", False, [[0, 0, 2], [3, 0, 0]], [[0, 4, 0], [0, 1, 5]]),
    ("amin", True, [[0, 1, 2], [3, 4, 5]], [[0, 0, 0], [0, 0, 0]]),
    ("amin", False, [[0, 0, 2], [3, 0, 0]], [[0, 4, 5], [0, 1, 0]]),
    ("mean", True, [[0, 0.5, 2], [3, 2, 5 / 3]], [[0, 2, 5 / 3], [0, 0.5, 5 / 3]]),
    ("prod", True, [[0, 1, 2], [3, 20, 30]], [[0, 0, 15], [0, -2, 10]]),
    ("prod", False, [[0, 0, 2], [3, 0, 0]], [[0, 4, 15], [0, 1, 10]]),
    ("sum", False, [[0, 0, 2], [3, 0, 0]], [[0, 4, 5], [0, 1, 5]]),
])
def test_scatter_reduce_grads(reduce, inc, ga, gs):
    a = jitorch.tensor([[1.0, -2.0, 3.0], [3.0, 0.0, 1.0]], requires_grad=True)
    s = jitorch.tensor([[3.0, 5.0, 2.0], [0.0, 1.0, 3.0]], requires_grad=True)
    i = _t([[0, 1, 1], [0, 0, 1]])
    r = a.scatter_reduce(0, i, s, reduce, include_self=inc)
    (r * _t(np.arange(6.0).reshape(2, 3))).sum().backward()
    check(a.grad, ga)
    check(s.grad, gs)


def test_scatter_reduce_tie_and_int_mean():
    a = jitorch.tensor([2.0], requires_grad=True)
    s = jitorch.tensor([2.0], requires_grad=True)
    a.scatter_reduce(0, _t([0]), s, "amax", include_self=False).sum().backward()
    check(a.grad, [0.0])
    check(s.grad, [0.5])  # PyTorch counts self's tie even when it is not included
    r = _t([-3, 3]).scatter_reduce(0, _t([0, 1]), _t([-4, 4]), "mean")
    check(r, [-4, 3], jitorch.int64)  # integer mean floors


def test_scatter_with_reduce_has_no_derivative():
    a = jitorch.tensor([1.0, 2.0], requires_grad=True)
    r = a.scatter(0, _t([0]), jitorch.tensor([1.0]), reduce="add")
    with pytest.raises(RuntimeError, match="derivative for aten::scatter is not implemented"):
        r.sum().backward()


def test_src_larger_than_index_gets_zero_grad():
    a = jitorch.tensor(np.zeros((3, 4)), requires_grad=True)
    s = jitorch.tensor(np.ones((2, 5)), requires_grad=True)
    a.scatter_add(0, _t([[0, 1], [2, 0]]), s).sum().backward()
    check(s.grad, [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0]])


# --- op errors ---------------------------------------------------------------------------------
X34 = np.zeros((3, 4), np.float32)


@pytest.mark.parametrize("call,exc,msg", [
    (lambda x: x.index_select(0, _t([0]).short()), RuntimeError,
     "index_select(): Expected dtype int32 or int64 for index"),
    (lambda x: x.index_select(0, _t([[0]])), IndexError,
     "index_select(): Index is supposed to be a vector"),
    (lambda x: x.index_select(0, _t([3])), IndexError, "index out of range in self"),
    (lambda x: x.index_select(2, _t([0])), IndexError, "Dimension out of range"),
    (lambda x: x.gather(1, _t([[0.0]])), RuntimeError,
     "gather(): Expected dtype int32/int64 for index"),
    (lambda x: x.gather(1, _t([[4]])), RuntimeError,
     "index 4 is out of bounds for dimension 1 with size 4"),
    (lambda x: x.gather(1, _t([0])), RuntimeError,
     "Index tensor must have the same number of dimensions as input tensor"),
    (lambda x: x.gather(1, _t(np.zeros((4, 1), np.int64))), RuntimeError,
     "Size does not match at dimension 0 expected index [4, 1] to be no larger than self "
     "[3, 4] apart from dimension 1"),
    (lambda x: x.scatter(0, _t([[0]]), _t([[1.0]], dtype=jitorch.float64)), RuntimeError,
     "scatter(): Expected self.dtype to be equal to src.dtype"),
    (lambda x: x.scatter(0, _t([[5]]), 1.0), RuntimeError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x.scatter(0, _t([[0]]), 1.0, reduce="mean"), RuntimeError,
     "reduce argument must be either add or multiply."),
    (lambda x: x.scatter(0, _t(np.zeros((3, 3), np.int64)), _t(np.ones((2, 3),
                                                                      np.float32))),
     RuntimeError, "Expected index [3, 3] to be no larger than self [3, 4] apart from "
                   "dimension 0 and to be no larger size than src [2, 3]"),
    (lambda x: x.scatter_add(0, _t([[0]]), 1.0), TypeError,
     "scatter_add(): argument 'src' (position 4) must be Tensor, not float"),
    (lambda x: x.scatter_reduce(0, _t([[0]]), _t([[1.0]], dtype=jitorch.float32), "max"),
     RuntimeError, "reduce argument must be either sum, prod, mean, amax or amin, got max"),
    (lambda x: x.index_add(0, _t([0]), _t(np.ones((1, 4)))), RuntimeError,
     "index_add_(): self (Float) and source (Double) must have the same scalar type"),
    (lambda x: x.index_add(0, _t([0, 1]), _t(np.ones((1, 4), np.float32))), RuntimeError,
     "index_add_(): Number of indices (2) should be equal to source.size(dim): (1), for dim: 0"),
    (lambda x: x.index_add(0, _t([0]), _t(np.ones((1, 5), np.float32))), RuntimeError,
     "source tensor shape must match self tensor shape, excluding the specified dimension."),
    (lambda x: x.index_copy(0, _t([0]).int(), _t(np.ones((1, 4), np.float32))), RuntimeError,
     "index_copy_(): Expected a long tensor for index, but got Int"),
    (lambda x: x.index_copy(0, _t([5]), _t(np.ones((1, 4), np.float32))), IndexError,
     "index_copy_(): index 5 is out of bounds for dimension 0 with size 3"),
    (lambda x: x.index_fill(1, _t([0]).int(), 1.0), IndexError,
     "index_fill_(): Expected dtype int64 for index."),
    (lambda x: x.index_fill(1, _t([0]), _t([1.0])), RuntimeError,
     "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 "
     "dimension(s)."),
    (lambda x: x.masked_fill(_t([1, 0, 1, 0]), 1.0), RuntimeError,
     "masked_fill_ only supports boolean masks, but got mask with dtype long int"),
    (lambda x: x.masked_fill(_t([True, False]), 1.0), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 1"),
    (lambda x: x.masked_fill(_t([True] * 4), 1j), RuntimeError,
     "value cannot be converted to type float without overflow"),
    (lambda x: x.masked_fill_(_t(np.ones((2, 3, 4), bool)), 1.0), RuntimeError,
     "output with shape [3, 4] doesn't match the broadcast shape [2, 3, 4]"),
    (lambda x: x.masked_select(_t([1, 0, 1, 0], dtype=jitorch.uint8)), RuntimeError,
     "masked_select: expected BoolTensor for mask"),
    (lambda x: x.masked_scatter(_t([True] * 4), _t([1.0], dtype=jitorch.float32)),
     RuntimeError, "Number of elements of source < number of ones in mask"),
    (lambda x: x.masked_scatter(_t([True] * 4), _t(np.ones(12))), RuntimeError,
     "masked_scatter: expected self and source to have same dtypes but gotFloat and Double"),
    (lambda x: x.take(_t([12])), IndexError,
     "out of range: tried to access index 12 on a tensor of 12 elements."),
    (lambda x: x.take(_t([0]).int()), RuntimeError,
     "take(): Expected a long tensor for index, but got Int"),
    (lambda x: x.put(_t([0, 1]), _t([1.0], dtype=jitorch.float32)), IndexError,
     "put_(): Expected source and index to have the same number of elements, but got "
     "source.numel() = 1, index.numel() = 2"),
    (lambda x: x.put(_t([0]), _t([1.0])), RuntimeError,
     "put_(): self and source expected to have the same dtype, but got self.dtype = Float and "
     "source.dtype = Double"),
    (lambda x: x.take_along_dim(_t([0]), 1), RuntimeError,
     "torch.take_along_dim(): input and indices should have the same number of dimensions, but "
     "got 2 dimensions for input, and 1 dimensions for indices"),
    (lambda x: x.take_along_dim(_t([[0]]).int(), 1), RuntimeError,
     "torch.take_along_dim(): dtype of indices should be Long but got Int"),
    (lambda x: x.take_along_dim(_t(np.zeros((2, 1), np.int64)), 1), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
])
def test_op_errors(call, exc, msg):
    with pytest.raises(exc) as e:
        call(_t(X34))
    assert msg in str(e.value)


# --- half precision ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [jitorch.float16, jitorch.bfloat16])
def test_half_dtypes(dtype):
    x = _t(np.arange(12.0).reshape(3, 4)).to(dtype)
    src = _t(np.ones((2, 4))).to(dtype)
    idx = _t([[0, 1, 2, 0], [0, 0, 1, 1]])
    ref = np.arange(12.0).reshape(3, 4)
    exp = ref.copy()
    np.add.at(exp, (idx.numpy(), np.arange(4)[None]), 1.0)
    check(x.scatter_add(0, idx, src), exp, dtype)
    check(x.gather(1, _t([[3], [0], [1]])), [[3.0], [4.0], [9.0]], dtype)
    check(x.index_add(0, _t([2, 2]), src, alpha=2), ref + [[0] * 4, [0] * 4, [4] * 4], dtype)
    check(x.scatter_reduce(0, idx, src, "mean"),
          [[2 / 3, 1, 2, 2], [4, 3, 3.5, 4], [8, 9, 5.5, 11]], dtype)
    y = x.clone()
    y[[0, 0], 1] = _t(5.0).to(dtype)
    y[1] = 7.0
    check(y, [[0, 5, 2, 3], [7] * 4, [8, 9, 10, 11]], dtype)
    check(x[x > 9], [10.0, 11.0], dtype)
    a = x.to(jitorch.float32).requires_grad_(True)
    g, = jitorch.autograd.grad(a.to(dtype)[[0, 0]].sum(), a)
    check(g, [[2.0] * 4, [0.0] * 4, [0.0] * 4], jitorch.float32)
