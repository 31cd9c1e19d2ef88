"""Comparisons, logical, bitwise and classification ops: semantics the OpInfo table can't
express (operator forms, None operands, in-place forms, error types and messages, PyTorch's
closeness rules, shift edge cases)."""
import warnings

import numpy as np
import pytest

import jitorch as torch

NAN, INF = float("nan"), float("inf")


def check(t, values, dtype):
    """A result is right when its values, dtype and shape all are."""
    assert isinstance(t, torch.Tensor)
    assert t.dtype is dtype, f"dtype {t.dtype}, expected {dtype}"
    want = np.asarray(values)
    assert tuple(t.shape) == want.shape, f"shape {tuple(t.shape)}, expected {want.shape}"
    np.testing.assert_array_equal(t.numpy(), want.astype(dtype.np))


@pytest.fixture(autouse=True)
def _no_numpy_warnings():
    # PyTorch never warns for NaN/inf comparisons; neither may jitorch
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


# --- comparisons -------------------------------------------------------------------------------
def test_operators_and_functions():
    a = torch.tensor([1, 2, 3])
    b = torch.tensor([3, 2, 1])
    check(a == b, [False, True, False], torch.bool)
    check(a != b, [True, False, True], torch.bool)
    check(a < b, [True, False, False], torch.bool)
    check(a <= b, [True, True, False], torch.bool)
    check(a > b, [False, False, True], torch.bool)
    check(a >= b, [False, True, True], torch.bool)
    check(torch.greater_equal(a, b), [False, True, True], torch.bool)
    check(a.less(2), [True, False, False], torch.bool)
    check(2 < a, [False, False, True], torch.bool)  # reflected: a.__gt__(2)


def test_comparison_promotes_operands():
    a = torch.tensor([1, 2, 3])
    check(a < 2.5, [True, True, False], torch.bool)  # compared as floats, not as int(2.5)
    check(a == 2.0, [False, True, False], torch.bool)
    check(torch.tensor([True, False]) < 1, [False, True], torch.bool)
    h = torch.tensor([1.0, 2.0], dtype=torch.float16)
    check(h == torch.tensor([1.0, 3.0], dtype=torch.bfloat16), [True, False], torch.bool)
    check(torch.tensor([0.1]) == torch.tensor([0.1], dtype=torch.float64), [False], torch.bool)
    f = torch.tensor([NAN, INF, -0.0])
    check(f == f, [False, True, True], torch.bool)
    check(f != f, [True, False, False], torch.bool)
    check(f == 0, [False, False, True], torch.bool)


def test_comparison_with_non_operands_follows_python_protocol():
    t = torch.tensor([1, 2, 3])
    assert (t == None) is False  # noqa: E711
    assert (t != None) is True  # noqa: E711
    assert (t == "abc") is False and (t == [1, 2, 3]) is False
    assert (t == torch.float32) is False
    with pytest.raises(TypeError, match="'<' not supported between instances of 'Tensor' and "
                       "'NoneType'"):
        t < None  # noqa: B015
    with pytest.raises(TypeError, match="eq"):
        torch.eq(t, None)
    with pytest.raises(TypeError):
        torch.lt(t, "a")
    check(t == np.array([1, 0, 3]), [True, False, True], torch.bool)
    check(t == np.int64(2), [False, True, False], torch.bool)


def test_complex_comparisons():
    c = torch.tensor([1 + 1j, 2 + 0j])
    check(c == 2, [False, True], torch.bool)
    check(c != torch.tensor([1 + 1j, 2 + 1j]), [False, True], torch.bool)
    for op, kernel in [(torch.lt, "lt"), (torch.le, "le"), (torch.gt, "gt"), (torch.ge, "ge"),
                       (torch.greater, "gt"), (torch.less_equal, "le")]:
        with pytest.raises(NotImplementedError,
                           match=f'"{kernel}_cpu" not implemented for \'ComplexFloat\''):
            op(c, c)
    with pytest.raises(RuntimeError):  # NotImplementedError is a RuntimeError, as in PyTorch
        torch.tensor([1.0]) < 1j


def test_broadcast_failure_is_runtime_error():
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(3\) must match the size of "
                       r"tensor b \(5\) at non-singleton dimension 1"):
        torch.ones(2, 3) == torch.ones(4, 5)
    with pytest.raises(RuntimeError, match="non-singleton dimension 0"):
        torch.logical_and(torch.ones(2), torch.ones(3))


def test_comparison_results_never_require_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    for r in (x == 1, x < x, torch.isnan(x), torch.isclose(x, x), torch.logical_not(x)):
        assert not r.requires_grad and r.grad_fn is None


def test_comparison_out_and_inplace():
    x = torch.tensor([1.0, 2.0])
    out = torch.empty(2, dtype=torch.int32)
    r = torch.eq(x, 1, out=out)
    assert r is out
    check(out, [1, 0], torch.int32)
    y = torch.tensor([1.5, 2.0])
    assert y.eq_(1.5) is y
    check(y, [1.0, 0.0], torch.float32)  # written in self's dtype
    z = torch.tensor([1, 2, 3])
    z.lt_(2.5)
    check(z, [1, 1, 0], torch.int64)
    for name in ("ne_", "le_", "gt_", "ge_", "greater_", "greater_equal_", "less_",
                 "less_equal_", "not_equal_"):
        w = torch.tensor([1, 2, 3])
        getattr(w, name)(2)
        base = getattr(torch.tensor([1, 2, 3]), name[:-1])(2)
        check(w, base.numpy().astype(np.int64), torch.int64)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.tensor([1.0, 2.0]).eq_(torch.ones(2, 2))
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        torch.ones(2, requires_grad=True).eq_(1)


def test_aliases_match_base_ops():
    a, b = torch.tensor([1, 2, 3]), torch.tensor([2, 2, 2])
    for alias, base in [("greater", "gt"), ("greater_equal", "ge"), ("less", "lt"),
                        ("less_equal", "le"), ("not_equal", "ne")]:
        np.testing.assert_array_equal(getattr(torch, alias)(a, b).numpy(),
                                      getattr(torch, base)(a, b).numpy())
        np.testing.assert_array_equal(getattr(a, alias)(b).numpy(), getattr(a, base)(b).numpy())


# --- isclose / allclose / equal ------------------------------------------------------------------
def test_isclose_basic_and_equal_nan():
    a = torch.tensor([1.0, 2.0, NAN, INF, -INF])
    b = torch.tensor([1.0 + 1e-6, 2.1, NAN, INF, INF])
    check(torch.isclose(a, b), [True, False, False, True, False], torch.bool)
    check(torch.isclose(a, b, equal_nan=True), [True, False, True, True, False], torch.bool)
    check(a.isclose(b, rtol=0.1), [True, True, False, True, False], torch.bool)
    # an infinite tolerance still doesn't make inf close to a finite number
    check(torch.isclose(torch.tensor([1.0, INF]), torch.tensor([1.0, 3.0]), atol=INF),
          [True, False], torch.bool)
    check(torch.isclose(torch.tensor(1.0), torch.tensor([1.0, 2.0])), [True, False], torch.bool)


def test_isclose_integers_and_bools_compare_in_default_float():
    i = torch.tensor([5, 0])
    check(torch.isclose(i, torch.tensor([5, 1])), [True, False], torch.bool)
    check(torch.isclose(i, torch.tensor([5, 1]), atol=1), [True, True], torch.bool)
    check(torch.isclose(i, torch.tensor([7, 0]), rtol=0.3), [True, True], torch.bool)
    # zero tolerances: exact integer equality
    big = torch.tensor([16777217]), torch.tensor([16777216])
    check(torch.isclose(*big, rtol=0, atol=0), [False], torch.bool)
    # otherwise both sides are cast to float32 first, where the two values coincide
    check(torch.isclose(*big, rtol=0, atol=0.1), [True], torch.bool)
    check(torch.isclose(torch.tensor([3]), torch.tensor([1]), rtol=0, atol=1.9), [False],
          torch.bool)
    check(torch.isclose(torch.tensor([True]), torch.tensor([False]), rtol=0, atol=1), [True],
          torch.bool)
    check(torch.isclose(torch.tensor([True]), torch.tensor([False]), rtol=0, atol=0.1), [False],
          torch.bool)


def test_isclose_half_precision_rounds_like_pytorch():
    h = torch.tensor([1.0], dtype=torch.float16)
    check(torch.isclose(h, torch.tensor([1.001], dtype=torch.float16)), [False], torch.bool)
    bf = torch.tensor([1.0], dtype=torch.bfloat16)
    check(torch.isclose(bf, torch.tensor([1.01], dtype=torch.bfloat16), rtol=0.01), [True],
          torch.bool)


def test_isclose_complex():
    c = torch.tensor([1 + 1j, 2 + 0j])
    check(torch.isclose(c, c + 1e-9), [True, True], torch.bool)
    check(torch.isclose(c, torch.tensor([complex(1, INF), 2])), [False, True], torch.bool)


def test_isclose_errors():
    f = torch.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        torch.isclose(f, f.double())
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but "
                       "got -1"):
        torch.isclose(f, f, rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        torch.isclose(f, f, atol=-1e-3)
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but "
                       "got nan"):
        torch.isclose(f, f, rtol=NAN)
    with pytest.raises(TypeError, match="argument 'other' .* must be Tensor, not float"):
        torch.isclose(f, 1.0)
    with pytest.raises(RuntimeError, match=r"size of tensor a \(2\) must match"):
        torch.isclose(f, torch.ones(3))


def test_allclose_returns_python_bool():
    a = torch.tensor([1.0, 2.0])
    r = torch.allclose(a, a + 1e-7)
    assert r is True
    assert torch.allclose(a, a + 0.1) is False
    assert a.allclose(a + 0.1, atol=0.2) is True
    assert torch.allclose(torch.tensor([NAN]), torch.tensor([NAN])) is False
    assert torch.allclose(torch.tensor([NAN]), torch.tensor([NAN]), equal_nan=True) is True
    assert torch.allclose(torch.tensor([1, 2]), torch.tensor([1, 2])) is True
    assert torch.allclose(torch.tensor([1.0]), torch.tensor([1.0, 1.1])) is False  # broadcasts
    with pytest.raises(RuntimeError, match="Float did not match Double"):
        torch.allclose(a, a.double())
    with pytest.raises(TypeError):
        torch.allclose(a, 1.0)


def test_equal():
    t = torch.tensor([1, 2, 3])
    assert torch.equal(t, torch.tensor([1, 2, 3])) is True
    assert t.equal(torch.tensor([1, 2, 4])) is False
    assert torch.equal(t, t.double()) is True  # dtypes may differ
    assert torch.equal(t, torch.tensor([[1, 2, 3]])) is False  # no broadcasting
    assert torch.equal(t, torch.tensor([1, 2])) is False
    assert torch.equal(torch.tensor([NAN]), torch.tensor([NAN])) is False
    assert torch.equal(torch.tensor([-0.0]), torch.tensor([0.0])) is True
    assert torch.equal(torch.tensor([]), torch.tensor([])) is True
    assert torch.equal(torch.tensor([1]), torch.tensor([True])) is True
    assert torch.equal(torch.tensor([300]), torch.tensor([44], dtype=torch.uint8)) is False
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    assert torch.equal(x, torch.tensor([1.0, 2.0])) is True
    with pytest.raises(TypeError, match="argument 'other' .* must be Tensor, not int"):
        torch.equal(t, 1)


# --- logical ops -------------------------------------------------------------------------------
def test_logical_ops_any_dtype_to_bool():
    f = torch.tensor([1.5, 0.0, NAN, -0.0])
    i = torch.tensor([3, 3, 0, 0])
    check(torch.logical_and(f, i), [True, False, False, False], torch.bool)
    check(torch.logical_or(f, i), [True, True, True, False], torch.bool)
    check(torch.logical_xor(f, i), [False, True, True, False], torch.bool)
    check(torch.logical_not(f), [False, True, False, True], torch.bool)
    check(f.logical_and(i), [True, False, False, False], torch.bool)
    c = torch.tensor([1j, 0j])
    check(torch.logical_not(c), [False, True], torch.bool)
    check(torch.logical_or(c, torch.tensor([False, False])), [True, False], torch.bool)


def test_logical_ops_take_tensors_only():
    i = torch.tensor([1, 0])
    with pytest.raises(TypeError, match=r"logical_and\(\): argument 'other' \(position 2\) "
                       "must be Tensor, not float"):
        torch.logical_and(i, 2.5)
    with pytest.raises(TypeError, match="argument 'input' .* must be Tensor, not int"):
        torch.logical_or(2, i)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        i.logical_xor(1)
    with pytest.raises(TypeError, match="must be Tensor, not NoneType"):
        i.logical_and_(None)


def test_logical_inplace_and_out_keep_dtype():
    i = torch.tensor([5, 0, 2])
    assert i.logical_and_(torch.tensor([1, 1, 0])) is i
    check(i, [1, 0, 0], torch.int64)
    f = torch.tensor([2.0, 0.0])
    f.logical_not_()
    check(f, [0.0, 1.0], torch.float32)
    g = torch.tensor([0.0, 3.0])
    g.logical_or_(torch.tensor([False, False]))
    check(g, [0.0, 1.0], torch.float32)
    b = torch.tensor([True, False])
    b.logical_xor_(torch.tensor([True, True]))
    check(b, [False, True], torch.bool)
    check(torch.logical_not(torch.tensor([5, 0]), out=torch.empty(2)), [0.0, 1.0],
          torch.float32)


# --- bitwise ops -------------------------------------------------------------------------------
def test_bitwise_ops_and_operators():
    a = torch.tensor([12, -3, 0])
    b = torch.tensor([10, 5, 7])
    check(a & b, [8, 5, 0], torch.int64)
    check(a | b, [14, -3, 7], torch.int64)
    check(a ^ b, [6, -8, 7], torch.int64)
    check(~a, [-13, 2, -1], torch.int64)
    check(3 & a, [0, 1, 0], torch.int64)  # reflected
    check(torch.bitwise_and(a, 3), [0, 1, 0], torch.int64)
    u = torch.tensor([0b1100], dtype=torch.uint8)
    check(~u, [0b11110011], torch.uint8)
    check(u & torch.tensor([6], dtype=torch.int8), [4], torch.int16)  # uint8 x int8 -> int16


def test_bitwise_on_bool_is_logical():
    t = torch.tensor([True, False, True])
    f = torch.tensor([True, True, False])
    check(t & f, [True, False, False], torch.bool)
    check(t | f, [True, True, True], torch.bool)
    check(t ^ f, [False, True, True], torch.bool)
    check(~t, [False, True, False], torch.bool)
    check(t & True, [True, False, True], torch.bool)
    check(t & 1, [1, 0, 1], torch.int64)  # an int scalar promotes bool to int64


def test_bitwise_rejects_floats_and_complex():
    f = torch.tensor([1.5])
    for fn, kernel in [(torch.bitwise_and, "bitwise_and"), (torch.bitwise_or, "bitwise_or"),
                       (torch.bitwise_xor, "bitwise_xor")]:
        with pytest.raises(NotImplementedError,
                           match=f'"{kernel}_cpu" not implemented for \'Float\''):
            fn(f, f)
    with pytest.raises(RuntimeError, match='"bitwise_and_cpu" not implemented for \'Float\''):
        torch.tensor([1]) & 1.5  # promoted to float first
    with pytest.raises(RuntimeError, match="'ComplexFloat'"):
        torch.tensor([1j]) | torch.tensor([1j])
    with pytest.raises(NotImplementedError, match='"bitwise_not_cpu" not implemented for '
                       '\'Double\''):
        torch.bitwise_not(torch.tensor([1.0], dtype=torch.float64))
    with pytest.raises(TypeError, match=r"~ \(operator.invert\) is only implemented on integer "
                       "and Boolean-type tensors"):
        ~f


def test_bitwise_inplace():
    a = torch.tensor([12, 5])
    assert a.bitwise_and_(6) is a
    check(a, [4, 4], torch.int64)
    a |= 1
    check(a, [5, 5], torch.int64)
    a ^= torch.tensor([1, 0])
    check(a, [4, 5], torch.int64)
    a.bitwise_not_()
    check(a, [-5, -6], torch.int64)
    b = torch.tensor([True, False])
    b &= torch.tensor([True, True])
    check(b, [True, False], torch.bool)
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                       "output type Bool"):
        b.bitwise_and_(3)


# --- shifts ------------------------------------------------------------------------------------
def test_shifts_basic():
    i = torch.tensor([5, -3])
    check(i << 2, [20, -12], torch.int64)
    check(i >> 1, [2, -2], torch.int64)  # arithmetic shift
    check(torch.bitwise_left_shift(i, torch.tensor([1, 3])), [10, -24], torch.int64)
    check(i.bitwise_right_shift(1), [2, -2], torch.int64)
    check(2 << torch.tensor([5, 3]), [64, 16], torch.int64)  # reflected
    check(torch.tensor([3], dtype=torch.int8) << 7, [-128], torch.int8)  # wraps
    check(torch.tensor([1], dtype=torch.int8) << torch.tensor([9]), [512], torch.int64)
    check(torch.tensor([True, False]) << 1, [2, 0], torch.int64)


def test_shifts_out_of_range_follow_pytorch():
    i = torch.tensor([5, -3])
    check(i << -1, [0, 0], torch.int64)
    check(i << 64, [0, 0], torch.int64)
    check(i << 63, [-2 ** 63, -2 ** 63], torch.int64)
    check(i >> -1, [0, -1], torch.int64)  # sign fill
    check(i >> 64, [0, -1], torch.int64)
    check(torch.tensor([1], dtype=torch.uint8) << 9, [0], torch.uint8)
    check(torch.tensor([255], dtype=torch.uint8) >> 9, [0], torch.uint8)
    check(torch.tensor([1, -1], dtype=torch.int32) >> 40, [0, -1], torch.int32)
    check(torch.tensor([1], dtype=torch.int32) << 40, [0], torch.int32)
    check(torch.tensor([1, 1]) << torch.tensor([70, 3]), [0, 8], torch.int64)


def test_shift_errors_and_inplace():
    with pytest.raises(NotImplementedError, match='"lshift_cpu" not implemented for \'Float\''):
        torch.tensor([1.0]) << 1
    with pytest.raises(NotImplementedError, match='"rshift_cpu" not implemented for \'Float\''):
        torch.tensor([1]) >> 1.5
    with pytest.raises(NotImplementedError, match='"lshift_cpu" not implemented for \'Bool\''):
        torch.tensor([True]) << torch.tensor([True])
    a = torch.tensor([1, 2])
    a <<= 2
    check(a, [4, 8], torch.int64)
    a >>= torch.tensor([1, 3])
    check(a, [2, 1], torch.int64)
    assert a.bitwise_left_shift_(1) is a
    check(a, [4, 2], torch.int64)


# --- classification ----------------------------------------------------------------------------
def test_float_classification():
    f = torch.tensor([1.5, 0.0, NAN, INF, -INF, -0.0])
    check(f.isnan(), [0, 0, 1, 0, 0, 0], torch.bool)
    check(torch.isinf(f), [0, 0, 0, 1, 1, 0], torch.bool)
    check(torch.isfinite(f), [1, 1, 0, 0, 0, 1], torch.bool)
    check(torch.isposinf(f), [0, 0, 0, 1, 0, 0], torch.bool)
    check(torch.isneginf(f), [0, 0, 0, 0, 1, 0], torch.bool)
    check(torch.isreal(f), [1] * 6, torch.bool)
    check(torch.signbit(f), [0, 0, 0, 0, 1, 1], torch.bool)
    for d in (torch.float16, torch.bfloat16):
        h = torch.tensor([-0.0, INF, NAN], dtype=d)
        check(h.signbit(), [True, False, False], torch.bool)
        check(h.isposinf(), [False, True, False], torch.bool)
        check(h.isnan(), [False, False, True], torch.bool)


def test_integer_and_bool_classification():
    i = torch.tensor([-1, 0, 7])
    check(i.isnan(), [0, 0, 0], torch.bool)
    check(i.isinf(), [0, 0, 0], torch.bool)
    check(i.isfinite(), [1, 1, 1], torch.bool)
    check(i.isneginf(), [0, 0, 0], torch.bool)
    check(i.isreal(), [1, 1, 1], torch.bool)
    check(i.signbit(), [1, 0, 0], torch.bool)
    check(torch.tensor([-2 ** 63]).signbit(), [True], torch.bool)
    check(torch.tensor([True, False]).signbit(), [False, False], torch.bool)
    check(torch.tensor([255], dtype=torch.uint8).signbit(), [False], torch.bool)


def test_complex_classification():
    c = torch.tensor([1 + 1j, 2 + 0j, complex(NAN, 0), complex(0, INF)])
    check(c.isnan(), [0, 0, 1, 0], torch.bool)
    check(c.isinf(), [0, 0, 0, 1], torch.bool)
    check(c.isfinite(), [1, 1, 0, 0], torch.bool)
    check(c.isreal(), [0, 1, 1, 0], torch.bool)
    with pytest.raises(RuntimeError, match="isneginf does not support complex inputs."):
        c.isneginf()
    with pytest.raises(RuntimeError, match="isposinf does not support complex inputs."):
        torch.isposinf(c)
    with pytest.raises(NotImplementedError,
                       match="signbit is not implemented for complex tensors."):
        c.signbit()


def test_classification_keeps_shape():
    check(torch.isnan(torch.tensor(NAN)), True, torch.bool)
    check(torch.isfinite(torch.zeros(0, 3)), np.zeros((0, 3), bool), torch.bool)
    check(torch.isneginf(torch.tensor([-INF]), out=torch.empty(1, dtype=torch.bool)), [True],
          torch.bool)
