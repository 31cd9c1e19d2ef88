"""Unary elementwise math: semantics the OpInfo table can't express.

dtype rules per input dtype, PyTorch's error types and messages, in-place variants and aliases,
rounding/nan_to_num/logit corner cases, half precision, signed zeros and nan handling, gradients
at special points and higher-order gradients. Expected values are PyTorch's (checked by hand).
"""
import math

import numpy as np
import pytest

import jitorch as torch

INF, NAN = math.inf, math.nan

FLOAT_OPS = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
             "cos", "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh",
             "tanh", "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "sigmoid",
             "reciprocal", "logit", "erf", "erfc", "erfinv", "lgamma", "digamma"]
COMPLEX_OK = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
              "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
              "atanh", "sigmoid", "reciprocal", "neg", "square", "sgn", "nan_to_num", "positive"]
INT_DTYPES = [torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]


def check(t, values, dtype, rtol=1e-6, atol=0.0):
    """Values, dtype and shape of a result."""
    want = np.asarray(values)
    assert t.dtype is dtype, (t.dtype, dtype)
    assert tuple(t.shape) == want.shape
    got = t.detach().numpy()
    if got.dtype.kind in "fc" or want.dtype.kind in "fc":
        np.testing.assert_allclose(got.astype(np.complex128 if got.dtype.kind == "c"
                                              else np.float64), want, rtol=rtol, atol=atol,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


def ints(dtype):
    vals = [True, False, True] if dtype is torch.bool else [1, 2, 3]
    return torch.tensor(vals, dtype=dtype)


# --- dtype rules -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FLOAT_OPS)
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_float_ops_turn_integers_into_the_default_dtype(name, dtype):
    r = getattr(torch, name)(ints(dtype))
    assert r.dtype is torch.float32 and r.shape == (3,)
    torch.set_default_dtype(torch.float64)
    try:
        assert getattr(torch, name)(ints(dtype)).dtype is torch.float64
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("name", ["neg", "abs", "sign", "sgn", "square", "floor", "ceil",
                                  "round", "trunc", "fix", "nan_to_num", "positive"])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16, torch.int32,
                                   torch.int64])
def test_integer_preserving_ops_keep_the_dtype(name, dtype):
    x = torch.tensor([1, 2, 3], dtype=dtype)
    r = getattr(torch, name)(x)
    assert r.dtype is dtype and r.shape == (3,)


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "fix", "nan_to_num"])
def test_integer_identity_ops_return_a_copy_not_an_alias(name):
    x = torch.tensor([4, -5, 6])
    r = getattr(torch, name)(x)
    check(r, [4, -5, 6], torch.int64)
    assert not np.shares_memory(r.numpy(), x.numpy())
    r.add_(1)
    check(x, [4, -5, 6], torch.int64)


def test_bool_inputs():
    b = torch.tensor([True, False])
    check(torch.sign(b), [True, False], torch.bool)
    check(torch.sgn(b), [True, False], torch.bool)
    check(torch.square(b), [1, 0], torch.int64)  # square is pow(x, 2)
    check(torch.nan_to_num(b), [True, False], torch.bool)
    check(torch.exp(b), [math.e, 1.0], torch.float32)


@pytest.mark.parametrize("name", COMPLEX_OK)
@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_inputs_keep_the_complex_dtype(name, dtype):
    x = torch.tensor([1 + 2j, -0.5 + 0.25j], dtype=dtype)
    r = getattr(torch, name)(x)
    assert r.dtype is dtype and r.shape == (2,)


def test_complex_values():
    check(torch.abs(torch.tensor([3 + 4j, -1j])), [5.0, 1.0], torch.float32)
    check(torch.abs(torch.tensor([3 + 4j], dtype=torch.complex128)), [5.0], torch.float64)
    check(torch.sgn(torch.tensor([3 + 4j, 0j, -2j])), [0.6 + 0.8j, 0j, -1j], torch.complex64)
    check(torch.sqrt(torch.tensor([-4 + 0j])), [2j], torch.complex64)
    check(torch.log(torch.tensor([-1 + 0j])), [math.pi * 1j], torch.complex64)
    check(torch.exp(torch.tensor([1j * math.pi], dtype=torch.complex128)), [-1 + 0j],
          torch.complex128, atol=1e-15)
    check(torch.nan_to_num(torch.tensor([complex(NAN, INF), complex(-INF, 2)]), nan=1.0,
                           neginf=-5.0),
          [complex(1, np.finfo(np.float32).max), complex(-5, 2)], torch.complex64)


# --- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,dtype,exc,msg", [
    ("abs", torch.bool, NotImplementedError, '"abs_cpu" not implemented for \'Bool\''),
    ("absolute", torch.bool, NotImplementedError, '"abs_cpu" not implemented for \'Bool\''),
    ("sign", torch.complex64, NotImplementedError,
     "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
     "torch.sgn instead."),
    ("floor", torch.bool, NotImplementedError, '"floor_vml_cpu" not implemented for \'Bool\''),
    ("floor", torch.complex64, NotImplementedError, "floor is not supported for complex inputs"),
    ("ceil", torch.complex128, NotImplementedError, "ceil is not supported for complex inputs"),
    ("trunc", torch.bool, NotImplementedError, '"trunc_vml_cpu" not implemented for \'Bool\''),
    ("fix", torch.complex64, NotImplementedError, "trunc is not supported for complex inputs"),
    ("round", torch.bool, NotImplementedError, '"round_vml_cpu" not implemented for \'Bool\''),
    ("round", torch.complex64, NotImplementedError,
     '"round_vml_cpu" not implemented for \'ComplexFloat\''),
    ("frac", torch.int64, NotImplementedError, '"frac_cpu" not implemented for \'Long\''),
    ("frac", torch.bool, NotImplementedError, '"frac_cpu" not implemented for \'Bool\''),
    ("frac", torch.complex64, NotImplementedError,
     '"frac_cpu" not implemented for \'ComplexFloat\''),
    ("logit", torch.complex64, NotImplementedError,
     '"logit_cpu" not implemented for \'ComplexFloat\''),
    ("erf", torch.complex64, NotImplementedError,
     '"erf_vml_cpu" not implemented for \'ComplexFloat\''),
    ("erfc", torch.complex128, NotImplementedError,
     '"erfc_vml_cpu" not implemented for \'ComplexDouble\''),
    ("erfinv", torch.complex64, NotImplementedError,
     '"erfinv_vml_cpu" not implemented for \'ComplexFloat\''),
    ("lgamma", torch.complex64, NotImplementedError,
     '"lgamma_vml_cpu" not implemented for \'ComplexFloat\''),
    ("digamma", torch.complex64, NotImplementedError,
     '"digamma" not implemented for \'ComplexFloat\''),
    ("neg", torch.bool, RuntimeError,
     "Negation, the `-` operator, on a bool tensor is not supported."),
    ("positive", torch.bool, RuntimeError, "The `+` operator, on a bool tensor is not supported."),
])
def test_unsupported_dtypes_raise_like_pytorch(name, dtype, exc, msg):
    x = torch.ones(2, dtype=dtype)
    with pytest.raises(exc) as e:
        getattr(torch, name)(x)
    assert msg in str(e.value)
    if name not in ("positive",):
        with pytest.raises(exc):
            getattr(x, name + "_")()


def test_round_with_decimals_on_integers_raises():
    with pytest.raises(NotImplementedError, match='"round_cpu" not implemented for \'Long\''):
        torch.round(torch.tensor([125, 135]), decimals=-1)
    with pytest.raises(NotImplementedError, match='"round_cpu" not implemented for \'Int\''):
        torch.tensor([1], dtype=torch.int32).round(decimals=2)


@pytest.mark.parametrize("name", ["exp", "sqrt", "sin", "sigmoid", "erf", "reciprocal"])
def test_inplace_float_op_on_integer_tensor_raises(name):
    x = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        getattr(x, name + "_")()
    check(x, [1, 2], torch.int64)


def test_square_inplace_on_bool_raises():
    with pytest.raises(RuntimeError, match="result type Long can't be cast to the desired "
                                           "output type Bool"):
        torch.tensor([True]).square_()


def test_inplace_abs_of_complex_raises():
    x = torch.tensor([3 + 4j])
    for name in ("abs_", "absolute_"):
        with pytest.raises(RuntimeError, match="In-place abs is not supported for complex "
                                               "tensors."):
            getattr(x, name)()
    check(x, [3 + 4j], torch.complex64)


def test_positive_has_no_inplace_variant():
    assert not hasattr(torch.tensor([1.0]), "positive_")


# --- in-place variants, methods, aliases, out= --------------------------------------------------
INPLACE = ["neg", "negative", "abs", "absolute", "sign", "sgn", "reciprocal", "exp", "exp2",
           "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "square", "sin", "cos",
           "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh", "tanh",
           "asinh", "arcsinh", "acosh", "arccosh", "atanh", "arctanh", "sigmoid", "logit", "erf",
           "erfc", "erfinv", "lgamma", "digamma", "floor", "ceil", "round", "trunc", "fix",
           "frac", "nan_to_num"]


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_variant_matches_function(name):
    vals = [1.25, 1.5, 2.75] if name in ("acosh", "arccosh") else [0.25, 0.5, 0.75]
    x = torch.tensor(vals, dtype=torch.float64)
    want = getattr(torch, name)(x)
    v0 = x._version_value
    r = getattr(x, name + "_")()
    assert r is x
    assert x._version_value == v0 + 1
    check(x, want.numpy(), torch.float64)


@pytest.mark.parametrize("alias,name", [("negative", "neg"), ("absolute", "abs"),
                                        ("arcsin", "asin"), ("arccos", "acos"),
                                        ("arctan", "atan"), ("arcsinh", "asinh"),
                                        ("arccosh", "acosh"), ("arctanh", "atanh"),
                                        ("fix", "trunc")])
def test_aliases(alias, name):
    x = torch.tensor([-0.7, 0.2, 0.9]) if name != "acosh" else torch.tensor([1.0, 2.0, 3.5])
    a = getattr(torch, alias)(x)
    b = getattr(x, alias)()
    c = getattr(torch, name)(x)
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    np.testing.assert_array_equal(b.numpy(), c.numpy())
    assert a.dtype is c.dtype


def test_out_keyword():
    x = torch.tensor([1.0, 4.0, 9.0])
    out = torch.empty(3)
    r = torch.sqrt(x, out=out)
    assert r is out
    check(out, [1.0, 2.0, 3.0], torch.float32)
    out64 = torch.empty(5, dtype=torch.float64)
    torch.exp(torch.tensor([0.0, 1.0]), out=out64)  # resized to the result's shape
    check(out64, [1.0, math.e], torch.float64, rtol=1e-6)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        torch.sin(x, out=torch.empty(3, dtype=torch.int64))


def test_keyword_forms():
    x = torch.tensor([0.1, 0.5, 0.95])
    np.testing.assert_array_equal(torch.logit(x, eps=0.2).numpy(),
                                  torch.logit(input=x, eps=0.2).numpy())
    np.testing.assert_array_equal(x.logit(0.2).numpy(), torch.logit(x, 0.2).numpy())
    check(torch.round(torch.tensor([1.2345]), decimals=2), [1.23], torch.float32)
    check(torch.tensor([1.2345]).round(decimals=3), [1.234], torch.float32, rtol=1e-6)
    y = torch.tensor([NAN, INF, -INF])
    check(torch.nan_to_num(y, nan=1.0, posinf=2.0, neginf=-3.0), [1.0, 2.0, -3.0],
          torch.float32)
    check(y.nan_to_num(0.5, 4.0), [0.5, 4.0, -np.finfo(np.float32).max], torch.float32)


# --- values at special points -----------------------------------------------------------------
def test_sign_and_sgn_of_nan_and_signed_zero_are_zero():
    x = torch.tensor([NAN, -0.0, 0.0, -3.0, 2.0, INF, -INF])
    for f in (torch.sign, torch.sgn):
        r = f(x)
        check(r, [0, 0, 0, -1, 1, 1, -1], torch.float32)
        assert not np.signbit(r.numpy()[1])  # -0.0 gives +0.0
    check(torch.sign(torch.tensor([-3, 0, 7], dtype=torch.int8)), [-1, 0, 1], torch.int8)
    check(torch.sign(torch.tensor([0, 200], dtype=torch.uint8)), [0, 1], torch.uint8)


def test_integer_wraparound_like_pytorch():
    check(torch.abs(torch.tensor([-128], dtype=torch.int8)), [-128], torch.int8)
    check(torch.neg(torch.tensor([0, 1], dtype=torch.uint8)), [0, 255], torch.uint8)
    check(torch.square(torch.tensor([200], dtype=torch.uint8)), [64], torch.uint8)


def test_round_half_to_even_and_decimals():
    check(torch.round(torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5])), [0, 2, 2, -0.0, -2],
          torch.float32)
    assert np.signbit(torch.round(torch.tensor([-0.5])).numpy()[0])
    check(torch.round(torch.tensor([1.2345, -2.675, 0.125], dtype=torch.float64), decimals=2),
          [1.23, -2.68, 0.12], torch.float64, rtol=0)
    check(torch.round(torch.tensor([1234.0, 1250.0, -1350.0]), decimals=-2),
          [1200, 1200, -1400], torch.float32, rtol=0)
    # 10 ** 50 overflows float32: PyTorch gives nan (x * inf / inf)
    check(torch.round(torch.tensor([1.2345]), decimals=50), [NAN], torch.float32)
    check(torch.round(torch.tensor([1e300], dtype=torch.float64), decimals=10), [INF],
          torch.float64)
    check(torch.round(torch.tensor([7, -3])), [7, -3], torch.int64)


def test_rounding_family_values():
    x = torch.tensor([-2.5, -0.5, 0.5, 1.7, INF, NAN])
    check(torch.floor(x), [-3, -1, 0, 1, INF, NAN], torch.float32)
    check(torch.ceil(x), [-2, -0.0, 1, 2, INF, NAN], torch.float32)
    check(torch.trunc(x), [-2, -0.0, 0, 1, INF, NAN], torch.float32)
    check(torch.frac(x), [-0.5, -0.5, 0.5, 0.7, NAN, NAN], torch.float32, rtol=1e-6)


def test_nan_to_num_defaults_follow_the_storage_dtype():
    vals = [NAN, INF, -INF, 1.5]
    for d, big in [(torch.float16, 65504.0), (torch.bfloat16, 3.3895313892515355e38),
                   (torch.float32, float(np.finfo(np.float32).max)),
                   (torch.float64, float(np.finfo(np.float64).max))]:
        r = torch.nan_to_num(torch.tensor(vals, dtype=d))
        check(r, [0.0, big, -big, 1.5], d)
    # a replacement too large for the dtype becomes inf, as in PyTorch
    check(torch.nan_to_num(torch.tensor([NAN, INF]), nan=2, posinf=1e300), [2.0, INF],
          torch.float32)
    # tensors are accepted as replacement values
    check(torch.nan_to_num(torch.tensor([NAN]), nan=torch.tensor(2.0)), [2.0], torch.float32)
    check(torch.nan_to_num(torch.tensor([1, 2]), nan=0.5, posinf=3.7), [1, 2], torch.int64)


def test_nan_to_num_inplace():
    x = torch.tensor([NAN, 1.0, -INF])
    assert x.nan_to_num_(nan=-1.0) is x
    check(x, [-1.0, 1.0, -np.finfo(np.float32).max], torch.float32)


def test_logit_eps_clamps_and_negative_eps_does_not():
    x = torch.tensor([0.0, 0.1, 0.5, 1.0, 1.2])
    c = math.log(0.2 / 0.8)
    check(torch.logit(x, eps=0.2), [c, c, 0, -c, -c], torch.float32, rtol=1e-6)
    check(torch.logit(x), [-INF, math.log(0.1 / 0.9), 0, INF, NAN], torch.float32, rtol=1e-6)
    check(torch.logit(x, eps=-1.0), [-INF, math.log(0.1 / 0.9), 0, INF, NAN], torch.float32,
          rtol=1e-6)
    check(torch.logit(torch.tensor([0, 1]), eps=0.2), [c, -c], torch.float32, rtol=1e-6)


def test_special_function_values():
    check(torch.erf(torch.tensor([0.5, -INF, INF])), [0.5204998778130465, -1, 1],
          torch.float32)
    check(torch.erfc(torch.tensor([0.0, INF])), [1.0, 0.0], torch.float32)
    check(torch.erfinv(torch.tensor([0.5, -1.0, 1.0, 1.5])),
          [0.4769362762044699, -INF, INF, NAN], torch.float32)
    check(torch.lgamma(torch.tensor([0.0, -1.0, -0.5, -INF, INF], dtype=torch.float64)),
          [INF, INF, 1.2655121234846454, INF, INF], torch.float64)
    check(torch.digamma(torch.tensor([0.0, -0.0, -1.0, 1.0], dtype=torch.float64)),
          [-INF, INF, NAN, -0.5772156649015329], torch.float64)


def test_overflow_and_domain_errors_are_silent():
    # a fresh interpreter that turns RuntimeWarnings into errors (pytest resets filters per test)
    code = """
import jitorch as torch
INF = float("inf")
torch.exp(torch.tensor([1000.0]))
torch.log(torch.tensor([0.0, -1.0]))
torch.sqrt(torch.tensor([-1.0]))
torch.reciprocal(torch.tensor([0.0]))
torch.rsqrt(torch.tensor([0.0]))
torch.acosh(torch.tensor([0.0]))
torch.atanh(torch.tensor([1.0]))
torch.lgamma(torch.tensor([0.0]))
torch.round(torch.tensor([1.0]), decimals=400)
torch.nan_to_num(torch.tensor([INF]), posinf=1e300)
x = torch.tensor([INF, 0.0])
(x - x) * x / x
"""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_sigmoid_extremes():
    check(torch.sigmoid(torch.tensor([-100.0, 100.0, 0.0], dtype=torch.float64)),
          [3.7200759760208356e-44, 1.0, 0.5], torch.float64)
    # float32 computes 1 / (1 + exp(-x)) like PyTorch's kernel: exp(100) overflows to inf
    check(torch.sigmoid(torch.tensor([-100.0, -INF, INF])), [0.0, 0.0, 1.0], torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_types_compute_in_float32_and_round_once(dtype):
    # values from PyTorch: the float32 result rounded to the half type
    x = torch.tensor([-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0], dtype=dtype)
    if dtype is torch.float16:
        sin = [-0.14111328125, -0.9091796875, -0.84130859375, 0.0, 0.84130859375,
               0.9091796875, 0.14111328125]
        exp = [0.049774169921875, 0.1353759765625, 0.367919921875, 1.0, 2.71875, 7.390625,
               20.078125]
        rounded = [1.0, 2.6796875]
    else:
        sin = [-0.1416015625, -0.91015625, -0.83984375, 0.0, 0.83984375, 0.91015625,
               0.1416015625]
        exp = [0.0498046875, 0.1357421875, 0.3671875, 1.0, 2.71875, 7.375, 20.125]
        rounded = [1.0078125, 2.671875]
    check(torch.sin(x), sin, dtype, rtol=0)
    check(torch.exp(x), exp, dtype, rtol=0)
    check(torch.round(torch.tensor([1.005, 2.675], dtype=dtype), decimals=2), rounded, dtype,
          rtol=0)


def test_empty_and_zero_dim():
    check(torch.exp(torch.zeros(0, 3)), np.zeros((0, 3)), torch.float32)
    r = torch.sqrt(torch.tensor(4.0))
    check(r, 2.0, torch.float32)
    assert r.shape == ()
    check(torch.floor(torch.tensor(3)), 3, torch.int64)


# --- positive --------------------------------------------------------------------------------
def test_positive_shares_storage_and_passes_gradients():
    x = torch.tensor([1.0, -2.0])
    p = torch.positive(x)
    check(p, [1.0, -2.0], torch.float32)
    assert np.shares_memory(p.numpy(), x.numpy())
    x.mul_(2)
    check(p, [2.0, -4.0], torch.float32)
    y = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (y.positive() * 3).sum().backward()
    check(y.grad, [3.0, 3.0], torch.float64)


# --- gradients ---------------------------------------------------------------------------------
def leaf(values):
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def test_piecewise_constant_ops_give_zero_gradients_not_none():
    for name in ("floor", "ceil", "round", "trunc", "fix", "sign", "sgn"):
        x = leaf([0.3, -2.7])
        getattr(torch, name)(x).sum().backward()
        check(x.grad, [0.0, 0.0], torch.float64)
    x = leaf([0.3, -2.7])
    x.frac().sum().backward()
    check(x.grad, [1.0, 1.0], torch.float64)


def test_abs_gradient_at_zero_is_zero():
    x = leaf([0.0, -2.0, 3.0])
    x.abs().sum().backward()
    check(x.grad, [0.0, -1.0, 1.0], torch.float64)


def test_nan_to_num_gradient_is_masked():
    x = leaf([NAN, 1.0, INF, -2.0, -INF])
    torch.nan_to_num(x).sum().backward()
    check(x.grad, [0.0, 1.0, 0.0, 1.0, 0.0], torch.float64)


def test_logit_gradient_is_zero_where_clamped():
    x = leaf([0.1, 0.5, 0.9, 0.2])
    torch.logit(x, eps=0.2).sum().backward()
    check(x.grad, [0.0, 4.0, 0.0, 6.25], torch.float64, rtol=1e-12)
    x = leaf([0.1, 0.5])
    torch.logit(x).sum().backward()
    check(x.grad, [1 / 0.09, 4.0], torch.float64, rtol=1e-12)


def test_higher_order_gradients_of_lgamma():
    # d/dx lgamma = digamma, then trigamma, then tetragamma (PyTorch's values at x = 2)
    x = leaf([2.0])
    g, = torch.autograd.grad(torch.lgamma(x), x, create_graph=True)
    h, = torch.autograd.grad(g, x, create_graph=True)
    k, = torch.autograd.grad(h, x)
    check(g, [0.422784335098467], torch.float64)
    check(h, [0.6449340670881899], torch.float64)
    check(k, [-0.4041138063191886], torch.float64)


@pytest.mark.parametrize("name,lo,hi", [("tanh", -2, 2), ("sigmoid", -3, 3), ("erfinv", -.8, .8),
                                        ("rsqrt", 0.5, 3), ("acosh", 1.5, 3), ("tan", -1, 1),
                                        ("logit", 0.1, 0.9), ("digamma", 0.5, 4)])
def test_gradgradcheck(name, lo, hi):
    rng = np.random.default_rng(5)
    x = torch.tensor(rng.uniform(lo, hi, size=4), requires_grad=True)
    assert torch.autograd.gradgradcheck(getattr(torch, name), [x])


def test_inplace_op_under_autograd():
    x = leaf([0.5, 1.5])
    y = x * 1
    y.sin_()
    y.sum().backward()
    check(x.grad, np.cos([0.5, 1.5]), torch.float64)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf([1.0]).exp_()


def test_complex_autograd_is_not_implemented():
    z = torch.tensor([1 + 1j], requires_grad=True)
    with pytest.raises(NotImplementedError):
        torch.exp(z).abs().sum().backward()
