"""Semantics of the binary, ternary and complex ops that the OpInfo table can't express: error
types and messages, integer corner cases, operators, in-place and keyword forms, `out=`,
gradients at special points, and views of complex storage."""
import math
import warnings

import numpy as np
import pytest

import jitorch as torch
from jitorch.autograd import forward_ad


def T(data, dtype=None):
    return torch.tensor(data, dtype=dtype)


def check(t, values, dtype):
    """A result: its dtype, shape and values."""
    want = np.asarray(values)
    assert t.dtype is dtype, (t.dtype, dtype)
    assert tuple(t.shape) == want.shape, (t.shape, want.shape)
    tol = 1e-3 if dtype in (torch.float16, torch.bfloat16) else 1e-6
    np.testing.assert_allclose(t.numpy().astype(want.dtype) if want.dtype.kind != "b"
                               else t.numpy(), want, rtol=tol, atol=tol, equal_nan=True)


def grads(fn, *values):
    xs = [T(v, torch.float64).requires_grad_() for v in values]
    gs = torch.autograd.grad(fn(*xs).sum(), xs, allow_unused=True)
    return [None if g is None else g.tolist() for g in gs]


I = T([5, -5, 7])
J = T([2, 2, -3])
Z = T([0, 1, 2])
F = T([5.0, -5.0, 7.0])
G = T([2.0, 2.0, -3.0])
B = T([True, False, True])
C = T([1 + 2j, 3 - 1j])


# --- division family ---------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda a, b: torch.floor_divide(a, b), lambda a, b: torch.remainder(a, b),
    lambda a, b: torch.fmod(a, b), lambda a, b: a // b, lambda a, b: a % b,
    lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    lambda a, b: torch.div(a, b, rounding_mode="floor")])
def test_integer_division_by_zero_raises(fn):
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(I, Z)
    with pytest.raises(ZeroDivisionError):  # also catchable the Python way
        fn(I, 0)


def test_float_division_by_zero_gives_ieee_values():
    x = T([1.0, -1.0, 0.0])
    check(torch.floor_divide(x, 0.0), [math.inf, -math.inf, math.nan], torch.float32)
    check(torch.remainder(x, 0.0), [math.nan] * 3, torch.float32)
    check(torch.fmod(x, 0.0), [math.nan] * 3, torch.float32)
    check(torch.div(I, Z), [math.inf, -5.0, 3.5], torch.float32)


def test_division_rounding_modes():
    check(torch.div(I, J, rounding_mode="trunc"), [2, -2, -2], torch.int64)
    check(torch.div(I, J, rounding_mode="floor"), [2, -3, -3], torch.int64)
    check(torch.div(F, G, rounding_mode="trunc"), [2.0, -2.0, -2.0], torch.float32)
    check(torch.div(I, 2.5, rounding_mode="floor"), [2.0, -2.0, 2.0], torch.float32)
    big = T([-9223372036854775808])
    check(torch.div(big, T([-1]), rounding_mode="trunc"), [-9223372036854775808], torch.int64)
    with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or "
                                           "'floor' but found 'round'"):
        torch.div(I, J, rounding_mode="round")
    with pytest.raises(NotImplementedError, match="\"div_trunc_cpu\" not implemented for "
                                                  "'Bool'"):
        torch.div(B, B, rounding_mode="trunc")
    with pytest.raises(NotImplementedError, match="div_floor_cpu.*ComplexFloat"):
        torch.div(C, C, rounding_mode="floor")


def test_floor_divide_remainder_fmod_signs():
    check(torch.floor_divide(I, J), [2, -3, -3], torch.int64)
    check(5 // J, [2, 2, -2], torch.int64)
    check(torch.remainder(I, J), [1, 1, -2], torch.int64)
    check(torch.remainder(5, J), [1, 1, -1], torch.int64)
    check(torch.fmod(I, J), [1, -1, 1], torch.int64)
    check(I % 3, [2, 1, 1], torch.int64)
    check(torch.floor_divide(I, 2.5), [2.0, -2.0, 2.0], torch.float32)
    r = torch.remainder(T([-0.0, 3.0]), T([2.0, -3.0]))  # PyTorch keeps the sign of zero
    assert np.signbit(r.numpy()).tolist() == [True, False]
    check(torch.remainder(T([-128], torch.int8), T([-1], torch.int8)), [0], torch.int8)
    for name in ("floor_divide", "remainder", "fmod"):
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            getattr(torch, name)(B, B)
        with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
            getattr(torch, name)(C, C)


def test_fmod_rejects_a_number_first():
    with pytest.raises(TypeError):
        torch.fmod(5, J)


def test_floor_divide_has_no_derivative():
    x = T([3.0, 4.0]).requires_grad_()
    y = torch.floor_divide(x, 2)
    assert y.requires_grad  # like PyTorch: the error comes at backward
    with pytest.raises(RuntimeError, match="derivative for aten::floor_divide is not "
                                           "implemented"):
        y.sum().backward()
    with forward_ad.dual_level():
        d = forward_ad.make_dual(T([3.0]), T([1.0]))
        with pytest.raises(NotImplementedError, match="forward AD"):
            torch.floor_divide(d, 2)


def test_remainder_and_fmod_gradients():
    assert grads(torch.remainder, [5.0, -3.0], [2.0, 2.0]) == [[1.0, 1.0], [-2.0, 2.0]]
    assert grads(torch.fmod, [5.0, -3.0], [2.0, 2.0]) == [[1.0, 1.0], [-2.0, 1.0]]
    assert grads(lambda a, b: torch.div(a, b, rounding_mode="floor"), [5.0], [2.0]) == \
        [[0.0], [0.0]]


# --- add / sub / mul ---------------------------------------------------------------------------
def test_alpha_checks():
    check(torch.add(F, G, alpha=2.5), [10.0, 0.0, -0.5], torch.float32)
    check(torch.sub(I, J, alpha=2), [1, -9, 13], torch.int64)
    check(torch.add(B, B, alpha=2), [True, False, True], torch.bool)
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must "
                                           "not be a floating point number."):
        torch.add(I, J, alpha=2.5)
    with pytest.raises(RuntimeError, match="Boolean alpha only supported for Boolean results."):
        torch.add(F, G, alpha=True)
    with pytest.raises(RuntimeError, match="For non-complex input tensors, argument alpha must "
                                           "not be a complex number."):
        torch.add(F, G, alpha=1j)


def test_sub_rejects_bool_operands():
    with pytest.raises(RuntimeError, match="with two bool tensors is not supported. Use the "
                                           "`\\^` or `logical_xor\\(\\)` operator instead."):
        B - B
    for fn in (lambda: torch.sub(I, True), lambda: 1 - B, lambda: F - B,
               lambda: torch.subtract(B, 1), lambda: I.sub_(T([True, True, False]))):
        with pytest.raises(RuntimeError, match="with a bool tensor is not supported. If you are "
                                               "trying to invert a mask, use the `~`"):
            fn()


def test_reflected_operators():
    check(1 - I, [-4, 6, -6], torch.int64)
    check(2 ** I, [32, 0, 128], torch.int64)
    check(I ** 2, [25, 25, 49], torch.int64)
    check(2.5 ** T([1, 2]), [2.5, 6.25], torch.float32)
    check(10 / T([4, 5]), [2.5, 2.0], torch.float32)
    check(7 % T([4, -4]), [3, -1], torch.int64)
    check(torch.add(2, F), [7.0, -3.0, 9.0], torch.float32)
    check(B * B, [True, False, True], torch.bool)


def test_aliases_share_the_op():
    x = T([1.0, 2.0]).requires_grad_()
    assert torch.subtract(x, 1).grad_fn.name() == "SubBackward0"
    assert torch.multiply(x, 2).grad_fn.name() == "MulBackward0"
    assert torch.divide(x, 2).grad_fn.name() == "DivBackward0"
    assert torch.arctan2(x, x).grad_fn.name() == "Atan2Backward0"
    assert torch.clip(x, 0, 1).grad_fn.name() == "ClampBackward0"


# --- powers ------------------------------------------------------------------------------------
def test_pow_integer_rules():
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not "
                                           "allowed."):
        torch.pow(I, -1)
    with pytest.raises(RuntimeError, match="negative integer powers"):
        I ** -2
    with pytest.raises(RuntimeError, match="negative integer powers"):
        I.clone().pow_(-1)
    # a tensor exponent follows C: 1 and -1 survive, everything else truncates to 0
    check(torch.pow(T([1, -1, -1, 0, 2]), T([-2, -2, -3, -1, -1])), [1, 1, -1, 0, 0],
          torch.int64)
    check(torch.pow(I, J), [25, 25, 0], torch.int64)
    check(torch.pow(I, 2.5), [5 ** 2.5, math.nan, 7 ** 2.5], torch.float32)
    check(torch.pow(B, 2), [1, 0, 1], torch.int64)
    check(torch.pow(T([2], torch.int8), 2.0), [4.0], torch.float32)
    check(torch.pow(I, 0), [1, 1, 1], torch.int64)
    check(torch.pow(B, False), [True, True, True], torch.bool)  # the one bool kernel
    with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
        torch.pow(B, B)
    with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
        torch.pow(True, B)


def test_pow_keyword_and_complex_forms():
    check(torch.pow(input=F, exponent=2), [25.0, 25.0, 49.0], torch.float32)
    check(F.pow(T(2.0)), [25.0, 25.0, 49.0], torch.float32)
    check(torch.pow(C, 2), [-3 + 4j, 8 - 6j], torch.complex64)
    check(torch.pow(2, T([1.0, -1.0])), [2.0, 0.5], torch.float32)
    x = T([1.0, 2.0])
    assert x.pow_(2) is x
    check(x, [1.0, 4.0], torch.float32)


def test_pow_gradients_at_zero():
    assert grads(torch.pow, [0.0, 2.0], [2.0, 0.0]) == [[0.0, 0.0], [0.0, math.log(2.0)]]
    assert grads(torch.pow, [0.0, 0.0], [0.0, 1.0]) == [[0.0, 1.0], [0.0, 0.0]]
    assert grads(lambda a: torch.pow(a, 0), [0.0, 2.0]) == [[0.0, 0.0]]
    assert grads(lambda e: torch.pow(0.0, e), [0.0, 2.0]) == [[0.0, 0.0]]
    assert grads(lambda e: torch.pow(2.0, e), [1.0]) == [[2 * math.log(2.0)]]


def test_float_power():
    check(torch.float_power(I, 2), [25.0, 25.0, 49.0], torch.float64)
    check(torch.float_power(I, -1), [0.2, -0.2, 1 / 7], torch.float64)
    check(torch.float_power(2, I), [32.0, 1 / 32, 128.0], torch.float64)
    check(torch.float_power(C, 2), [-3 + 4j, 8 - 6j], torch.complex128)
    check(torch.float_power(F, 1j), np.power(F.numpy().astype(np.complex128), 1j),
          torch.complex128)
    x = T([1.0, 2.0], torch.float64)
    x.float_power_(2)
    check(x, [1.0, 4.0], torch.float64)
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype Float but "
                                           "the operation's result requires dtype Double"):
        T([1.0]).float_power_(2)
    with pytest.raises(RuntimeError, match="has dtype Double but the operation's result "
                                           "requires dtype ComplexDouble"):
        T([1.0], torch.float64).float_power_(1j)


# --- binary math -------------------------------------------------------------------------------
def test_math_dtype_rules():
    check(torch.atan2(I, J), np.arctan2([5, -5, 7], [2, 2, -3]), torch.float32)
    check(torch.atan2(T([1.0], torch.float16), T([1], torch.uint8)), [math.pi / 4],
          torch.float16)
    check(torch.copysign(I, -1), [-5.0, -5.0, -7.0], torch.float32)
    check(torch.hypot(T([1.0], torch.float16), T([2.0])), [math.sqrt(5)], torch.float32)
    check(torch.ldexp(I, J), [20.0, -20.0, 0.875], torch.float32)
    check(torch.ldexp(T([1.0, 2.0], torch.float16), T([2, 3])), [4.0, 16.0], torch.float16)
    check(torch.ldexp(T([1.0 + 1j]), T([1])), [2 + 2j], torch.complex64)
    check(torch.xlogy(I, J), [5 * math.log(2), -5 * math.log(2), math.nan], torch.float32)
    check(torch.maximum(B, I), [5, 0, 7], torch.int64)
    check(torch.minimum(I, F), [5.0, -5.0, 7.0], torch.float32)
    check(torch.logaddexp(C, C), np.log(2 * np.exp(C.numpy())), torch.complex64)


@pytest.mark.parametrize("name,exc,msg", [
    ("atan2", NotImplementedError, "\"atan2_cpu\" not implemented for 'ComplexFloat'"),
    ("hypot", NotImplementedError, "\"hypot_cpu\" not implemented for 'ComplexFloat'"),
    ("copysign", NotImplementedError, "copysign_cpu"),
    ("xlogy", NotImplementedError, "xlogy_cpu"),
    ("logaddexp2", NotImplementedError, "logaddexp2_cpu"),
    ("minimum", RuntimeError, "minimum not implemented for complex tensors."),
    ("maximum", RuntimeError, "maximum not implemented for complex tensors."),
    ("fmin", RuntimeError, "fmin not implemented for complex tensors."),
    ("fmax", RuntimeError, "fmax not implemented for complex tensors.")])
def test_complex_rejected(name, exc, msg):
    with pytest.raises(exc, match=msg):
        getattr(torch, name)(C, C)


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "logaddexp2"])
def test_integer_rejected(name):
    with pytest.raises(NotImplementedError, match=f"\"{name}_cpu\" not implemented for 'Long'"):
        getattr(torch, name)(I, J)


def test_nan_handling_of_min_max():
    a, b = T([math.nan, 1.0]), T([1.0, math.nan])
    check(torch.maximum(a, b), [math.nan, math.nan], torch.float32)
    check(torch.minimum(a, b), [math.nan, math.nan], torch.float32)
    check(torch.fmax(a, b), [1.0, 1.0], torch.float32)
    check(torch.fmin(a, b), [1.0, 1.0], torch.float32)


def test_min_max_gradients_split_ties():
    assert grads(torch.maximum, [1.0, 2.0, 3.0], [1.0, 3.0, 2.0]) == \
        [[0.5, 0.0, 1.0], [0.5, 1.0, 0.0]]
    assert grads(torch.minimum, [1.0, 2.0, 3.0], [1.0, 3.0, 2.0]) == \
        [[0.5, 1.0, 0.0], [0.5, 0.0, 1.0]]
    assert grads(torch.maximum, [math.nan, 1.0], [1.0, math.nan]) == [[1.0, 1.0], [1.0, 1.0]]
    # fmax/fmin: ties go to input; a NaN side gives its gradient to the other
    assert grads(torch.fmax, [1.0, 2.0, 3.0, math.nan], [1.0, 3.0, 2.0, 1.0]) == \
        [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]]
    assert grads(torch.fmin, [math.nan, 1.0], [1.0, math.nan]) == [[0.0, 1.0], [1.0, 0.0]]


def test_special_point_gradients():
    assert grads(torch.atan2, [0.0, 1.0], [0.0, 1.0]) == [[0.0, 0.5], [0.0, -0.5]]
    g = grads(torch.hypot, [0.0, 3.0], [0.0, 4.0])
    assert math.isnan(g[0][0]) and g[0][1] == pytest.approx(0.6)
    assert grads(torch.copysign, [0.0, -3.0, 2.0], [-1.0, 4.0, -0.0]) == \
        [[0.0, -1.0, -1.0], [0.0, 0.0, 0.0]]
    g = grads(torch.xlogy, [0.0, 2.0, 0.0], [0.0, 3.0, 2.0])
    assert g[0] == [0.0, pytest.approx(math.log(3.0)), pytest.approx(math.log(2.0))]
    assert math.isnan(g[1][0]) and g[1][1:] == [pytest.approx(2 / 3), 0.0]
    assert grads(torch.ldexp, [1.0], [2.0]) == [[4.0], [pytest.approx(4 * math.log(2))]]


def test_xlogy_and_logaddexp_values():
    check(torch.xlogy(T([0.0, 0.0, 1.0, 0.0]), T([0.0, math.nan, 0.0, math.inf])),
          [0.0, math.nan, -math.inf, 0.0], torch.float32)
    check(torch.xlogy(2, T([1.0, 4.0])), [0.0, 2 * math.log(4.0)], torch.float32)
    inf = math.inf
    check(torch.logaddexp(T([inf, -inf, inf]), T([inf, -inf, -inf])), [inf, -inf, inf],
          torch.float32)
    check(torch.logaddexp2(T([inf, -inf]), T([inf, -inf])), [inf, -inf], torch.float32)


def test_inplace_and_out_forms():
    x = T([3.0, 4.0])
    out = torch.empty(2)
    r = torch.atan2(x, x, out=out)
    assert r is out
    check(out, [math.pi / 4] * 2, torch.float32)
    for name, args, want in [("atan2_", (T([1.0, 1.0]),), [math.atan2(3, 1), math.atan2(4, 1)]),
                             ("arctan2_", (T([1.0, 1.0]),), [math.atan2(3, 1), math.atan2(4, 1)]),
                             ("hypot_", (T([4.0, 3.0]),), [5.0, 5.0]),
                             ("copysign_", (-1.0,), [-3.0, -4.0]),
                             ("fmod_", (2.5,), [0.5, 1.5]), ("remainder_", (-2.5,), [-2.0, -1.0]),
                             ("floor_divide_", (2.0,), [1.0, 2.0]),
                             ("xlogy_", (1.0,), [0.0, 0.0]), ("ldexp_", (T([1.0, -1.0]),),
                                                               [6.0, 2.0])]:
        y = T([3.0, 4.0])
        assert getattr(y, name)(*args) is y
        check(y, want, torch.float32)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        T([1, 2]).atan2_(T([1, 2]))


# --- clamp -------------------------------------------------------------------------------------
def test_clamp_values_and_dtypes():
    check(torch.clamp(I, 0, 3), [3, 0, 3], torch.int64)
    check(torch.clamp(I, 0.5), [5.0, 0.5, 7.0], torch.float32)
    check(torch.clamp(I, max=3), [3, -5, 3], torch.int64)
    check(torch.clamp(F, 3, 0), [0.0, 0.0, 0.0], torch.float32)  # min > max gives max
    check(torch.clamp(B, 0, 1), [1, 0, 1], torch.int64)
    check(torch.clamp(T([1.0, 2.0], torch.float16), 0.5, 1.5), [1.0, 1.5], torch.float16)
    check(torch.clamp(F, T([0.0, 1.0, 2.0]), None), [5.0, 1.0, 7.0], torch.float32)
    check(torch.clamp(I, T([0.0, 1.0, 2.0])), [5.0, 1.0, 7.0], torch.float32)
    check(torch.clamp(T([1.0, math.nan]), 0, 0.5), [0.5, math.nan], torch.float32)
    check(torch.clamp(F, math.nan, 1), [math.nan] * 3, torch.float32)
    check(torch.clip(F, -1, 1), [1.0, -1.0, 1.0], torch.float32)
    check(F.clamp(min=-1), [5.0, -1.0, 7.0], torch.float32)
    check(torch.clamp_min(I, 0.5), [5.0, 0.5, 7.0], torch.float32)
    check(F.clamp_max(0), [0.0, -5.0, 0.0], torch.float32)


def test_clamp_errors():
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        torch.clamp(I)
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        torch.clamp(C, 0, 1)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.clamp(B, True, False)
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        T([1, 2]).clamp_(0.5)


def test_clamp_inplace_forms():
    for name, args, want in [("clamp_", (0, 4), [4.0, 0.0, 4.0]), ("clip_", (0, 4),
                                                                      [4.0, 0.0, 4.0]),
                             ("clamp_min_", (0,), [5.0, 0.0, 7.0]),
                             ("clamp_max_", (0,), [0.0, -5.0, 0.0])]:
        y = F.clone()
        assert getattr(y, name)(*args) is y
        check(y, want, torch.float32)


def test_clamp_gradients():
    x, lo, hi = [0.0, 1.5, 2.0, 3.0, 1.0], [1.0, 1.0, 1.0, 1.0, 3.0], [2.0, 2.0, 2.0, 2.0, 0.0]
    # bounds are inclusive for the input; min > max sends everything to max
    assert grads(torch.clamp, x, lo, hi) == [[0.0, 1.0, 1.0, 0.0, 0.0],
                                             [1.0, 0.0, 0.0, 0.0, 0.0],
                                             [0.0, 0.0, 0.0, 1.0, 1.0]]
    assert grads(lambda a: torch.clamp(a, 1.0, 2.0), [0.0, 1.0, 2.0, 3.0]) == \
        [[0.0, 1.0, 1.0, 0.0]]
    assert grads(lambda a, m: torch.clamp_min(a, m), [0.0, 2.0], [1.0, 1.0]) == \
        [[0.0, 1.0], [1.0, 0.0]]


# --- where -------------------------------------------------------------------------------------
def test_where_values_and_promotion():
    check(torch.where(B, I, F), [5.0, -5.0, 7.0], torch.float32)
    check(torch.where(B, I, 2.5), [5.0, 2.5, 7.0], torch.float32)
    check(torch.where(B, 2, 3), [2, 3, 2], torch.int64)
    check(torch.where(B, 2.0, 3), [2.0, 3.0, 2.0], torch.float32)
    check(torch.where(B, True, False), [True, False, True], torch.bool)
    check(torch.where(B, 1j, 0), [1j, 0, 1j], torch.complex64)
    check(torch.where(T([True, False]), T(1.0, torch.float64), T([1.0, 2.0])), [1.0, 2.0],
          torch.float32)
    check(torch.where(condition=B, input=I, other=J), [5, 2, 7], torch.int64)
    check(I.where(B, J), [5, 2, 7], torch.int64)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        torch.where(T([True, False]), T([1.0, 2.0]), T([1.0, 2.0, 3.0]))


def test_where_condition_checks():
    with pytest.raises(RuntimeError, match="where expected condition to be a boolean tensor, "
                                           "but got a tensor with dtype Long"):
        torch.where(I, I, F)
    with pytest.raises(TypeError, match="condition"):
        torch.where(True, F, G)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = torch.where(B.to(torch.uint8), True, False)
    check(r, [True, False, True], torch.bool)  # the uint8 condition does not promote
    assert any("uint8 condition" in str(x.message) for x in w)


def test_where_one_argument_form():
    r = torch.where(T([[True, False], [False, True]]))
    assert isinstance(r, tuple) and len(r) == 2
    check(r[0], [0, 1], torch.int64)
    check(r[1], [0, 1], torch.int64)


def test_where_gradients():
    assert grads(lambda a, b: torch.where(T([True, False]), a, b), [1.0, 2.0], [3.0, 5.0]) == \
        [[1.0, 0.0], [0.0, 1.0]]
    x = T([1.0, 2.0], torch.float64).requires_grad_()
    y = torch.where(x > 1, x * 2, x * 3)
    assert y.grad_fn.name() == "WhereBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 2.0]


# --- lerp / addcmul / addcdiv ------------------------------------------------------------------
def test_lerp():
    check(torch.lerp(F, G, 0.5), [3.5, -1.5, 2.0], torch.float32)
    check(torch.lerp(F, G, T([0.5, 0.0, 1.0])), [3.5, -5.0, -3.0], torch.float32)
    check(torch.lerp(F, G, 1.0), [2.0, 2.0, -3.0], torch.float32)  # exact at weight 1
    check(torch.lerp(F, G, T(0.5, torch.float64)), [3.5, -1.5, 2.0], torch.float32)
    check(torch.lerp(input=T(1.0), end=F, weight=0.5), [3.0, -2.0, 4.0], torch.float32)
    check(torch.lerp(C, C * 3, 0.5), [2 + 4j, 6 - 2j], torch.complex64)
    y = F.clone()
    assert y.lerp_(G, 0.5) is y
    check(y, [3.5, -1.5, 2.0], torch.float32)
    assert grads(lambda a, b, w: torch.lerp(a, b, w), [1.0], [3.0], [0.25]) == \
        [[0.75], [0.25], [2.0]]


def test_lerp_errors():
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype "
                                           "double"):
        torch.lerp(F, G.double(), 0.5)
    with pytest.raises(RuntimeError, match="expected dtype float for `weight` but got dtype "
                                           "long int"):
        torch.lerp(F, G, T([1, 0, 1]))
    with pytest.raises(NotImplementedError, match="\"lerp_kernel_scalar\" not implemented for "
                                                  "'Long'"):
        torch.lerp(I, J, 0.5)
    with pytest.raises(TypeError):
        torch.lerp(F, 1.0, 0.5)


def test_addcmul_addcdiv():
    check(torch.addcmul(F, G, G, value=2), [13.0, 3.0, 25.0], torch.float32)
    check(torch.addcmul(I, J, J, value=2.5), [13, 3, 25], torch.int64)  # value truncated
    check(torch.addcmul(I, J, F), [15.0, -15.0, -14.0], torch.float32)
    check(torch.addcdiv(F, G, G, value=2), [7.0, -3.0, 9.0], torch.float32)
    check(torch.addcdiv(I, F, J), [7.5, -7.5, 7 - 7 / 3], torch.float32)
    check(torch.addcmul(C, C, C, value=1j), C.numpy() + 1j * C.numpy() ** 2, torch.complex64)
    y = F.clone()
    y.addcmul_(G, G).addcdiv_(G, G, value=-1)
    check(y, [8.0, -2.0, 15.0], torch.float32)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer "
                                           "supported"):
        torch.addcdiv(F, I, J)
    with pytest.raises(RuntimeError, match="value cannot be converted to type float without "
                                           "overflow"):
        torch.addcmul(F, G, G, value=1j)
    with pytest.raises(NotImplementedError, match="addcmul_cpu_out.*'Bool'"):
        torch.addcmul(B, B, B)
    assert grads(lambda a, b, c: torch.addcdiv(a, b, c, value=2), [1.0], [3.0], [0.5]) == \
        [[1.0], [4.0], [-24.0]]


# --- complex -----------------------------------------------------------------------------------
def test_real_imag_are_views_with_setters():
    c = T([1 + 1j, 2j])
    r, i = c.real, torch.imag(c)
    check(r, [1.0, 0.0], torch.float32)
    check(i, [1.0, 2.0], torch.float32)
    r[0] = 100.0  # writes reach the complex storage
    check(c, [100 + 1j, 2j], torch.complex64)
    c.real = T([5.0, 6.0])
    c.imag = T(7.0)
    check(c, [5 + 7j, 6 + 7j], torch.complex64)
    c.real = 3
    check(c, [3 + 7j, 3 + 7j], torch.complex64)
    f = T([1.0, 2.0])
    assert f.real is f
    f.real = T([3.0, 4.0])
    check(f, [3.0, 4.0], torch.float32)
    rf = torch.real(f)
    rf[0] = 9.0
    check(f, [9.0, 4.0], torch.float32)
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                           "non-complex dtypes."):
        f.imag
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        f.imag = T([1.0, 1.0])
    check(torch.real(T(1 + 2j, torch.complex128)), 1.0, torch.float64)


def test_conj_family():
    check(torch.conj(C), [1 - 2j, 3 + 1j], torch.complex64)
    check(C.conj_physical(), [1 - 2j, 3 + 1j], torch.complex64)
    assert not torch.conj(C).is_conj() and not torch.is_conj(C)
    assert torch.resolve_conj(C) is C and C.resolve_conj() is C
    f = T([1.0, 2.0])
    v = torch.conj(f)  # a real tensor's conj is a view of it
    v[0] = 5.0
    check(f, [5.0, 2.0], torch.float32)
    check(torch.conj_physical(I), [5, -5, 7], torch.int64)
    c = C.clone()
    assert c.conj_physical_() is c
    check(c, [1 - 2j, 3 + 1j], torch.complex64)
    check(C.reshape(1, 2).mH, [[1 - 2j], [3 + 1j]], torch.complex64)


def test_angle():
    check(torch.angle(T([math.nan, -0.0, 0.0, -1.0, 2.0])), [math.nan, 0, 0, math.pi, 0],
          torch.float32)
    check(torch.angle(I), [0.0, math.pi, 0.0], torch.float32)
    check(torch.angle(T([1.0, -2.0], torch.float16)), [0.0, math.pi], torch.float16)
    check(torch.angle(T([1 + 1j, 2j], torch.complex128)), [math.pi / 4, math.pi / 2],
          torch.float64)
    x = T([1.0, -2.0]).requires_grad_()
    y = torch.angle(x)
    assert y.grad_fn.name() == "AngleBackward0"
    y.sum().backward()
    check(x.grad, [0.0, 0.0], torch.float32)


def test_polar_and_complex():
    check(torch.polar(T([1.0, 2.0]), T([0.0, math.pi / 2])), [1.0, 2j], torch.complex64)
    check(torch.complex(T([1.0], torch.float64), T([2.0], torch.float64)), [1 + 2j],
          torch.complex128)
    check(torch.complex(T([1.0, 2.0]), T([[1.0], [2.0]])), [[1 + 1j, 2 + 1j], [1 + 2j, 2 + 2j]],
          torch.complex64)
    for fn in (torch.polar, torch.complex):
        with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got "
                                               "scalar type Double for second argument"):
            fn(T([1.0]), T([1.0], torch.float64))
        with pytest.raises(RuntimeError, match="Expected both inputs to be Half, Float or Double "
                                               "tensors but got Long and Long"):
            fn(T([1]), T([1]))
        with pytest.raises(TypeError):
            fn(T([1.0]), 1.0)
    with pytest.raises(NotImplementedError, match="\"polar_cpu\" not implemented for 'Half'"):
        torch.polar(T([1.0], torch.float16), T([1.0], torch.float16))


def test_view_as_real_and_complex():
    c = T([1 + 2j, 3 - 1j])
    r = torch.view_as_real(c)
    check(r, [[1.0, 2.0], [3.0, -1.0]], torch.float32)
    r[0, 1] = 9.0
    check(c, [1 + 9j, 3 - 1j], torch.complex64)
    check(torch.view_as_real(T(1 + 2j)), [1.0, 2.0], torch.float32)
    check(torch.view_as_real(T([[1 + 2j, 3j], [4, 5j]]).T),  # strided input
          [[[1.0, 2.0], [4.0, 0.0]], [[0.0, 3.0], [0.0, 5.0]]], torch.float32)
    f = T([[1.0, 2.0], [3.0, 4.0]], torch.float64)
    z = torch.view_as_complex(f)
    check(z, [1 + 2j, 3 + 4j], torch.complex128)
    z[1] = 0
    check(f, [[1.0, 2.0], [0.0, 0.0]], torch.float64)
    check(torch.view_as_complex(T([1.0, 2.0])), 1 + 2j, torch.complex64)
    with pytest.raises(RuntimeError, match="view_as_real is only supported for complex "
                                           "tensors"):
        torch.view_as_real(F)
    for bad, msg in [(T([1.0, 2.0, 3.0]), "last dimension of size 2"),
                     (T([[1.0, 2.0, 3.0, 4.0]])[:, ::2], "last dimension with stride 1"),
                     (T([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])[:, :2],
                      "stride divisible by 2 for all but last dimension"),
                     (T([1.0, 2.0, 3.0])[1:], "storage_offset divisible by 2"),
                     (T(1.0), "one or more dimensions"),
                     (T([[1, 2]]), "only supported for half, float and double tensors, but got "
                                   "a tensor of scalar type: Long")]:
        with pytest.raises(RuntimeError, match=msg):
            torch.view_as_complex(bad)
