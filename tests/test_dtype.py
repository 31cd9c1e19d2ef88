"""dtypes: PyTorch's promotion table for all pairs of the 12 dtypes, the three promotion tiers
(dimensioned tensors > 0-dim tensors > Python scalars) checked with `result_type` and `add`
(tables plus hypothesis), broadcasting shapes, `can_cast`, `finfo`/`iinfo`, the default dtype,
and dtype conversions (`.to()`, `.float()`, `.half()`, `.bfloat16()`, ...).

Every table below was produced by PyTorch 2.13. jitorch has no complex32: where PyTorch gives
complex32 ("c4": a float16 tensor meeting a lower-tier complex operand) jitorch gives complex64,
the same as `jitorch.chalf`.
"""
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import jitorch

NAMES = ["b1", "u1", "i1", "i2", "i4", "i8", "f2", "bf", "f4", "f8", "c8", "c16"]
DTYPES = dict(zip(NAMES, [jitorch.bool, jitorch.uint8, jitorch.int8, jitorch.int16,
                          jitorch.int32, jitorch.int64, jitorch.float16, jitorch.bfloat16,
                          jitorch.float32, jitorch.float64, jitorch.complex64,
                          jitorch.complex128]))
DTYPES["c4"] = jitorch.complex64  # PyTorch's complex32; see the module docstring

# torch.promote_types(row, column)
PROMOTE = {
    "b1": "b1 u1 i1 i2 i4 i8 f2 bf f4 f8 c8 c16",
    "u1": "u1 u1 i2 i2 i4 i8 f2 bf f4 f8 c8 c16",
    "i1": "i1 i2 i1 i2 i4 i8 f2 bf f4 f8 c8 c16",
    "i2": "i2 i2 i2 i2 i4 i8 f2 bf f4 f8 c8 c16",
    "i4": "i4 i4 i4 i4 i4 i8 f2 bf f4 f8 c8 c16",
    "i8": "i8 i8 i8 i8 i8 i8 f2 bf f4 f8 c8 c16",
    "f2": "f2 f2 f2 f2 f2 f2 f2 f4 f4 f8 c8 c16",
    "bf": "bf bf bf bf bf bf f4 bf f4 f8 c8 c16",
    "f4": "f4 f4 f4 f4 f4 f4 f4 f4 f4 f8 c8 c16",
    "f8": "f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 c16 c16",
    "c8": "c8 c8 c8 c8 c8 c8 c8 c8 c8 c16 c8 c16",
    "c16": "c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16",
}
# torch.can_cast(row, column)
CAN_CAST = {
    "b1": "111111111111",
    "u1": "011111111111",
    "i1": "011111111111",
    "i2": "011111111111",
    "i4": "011111111111",
    "i8": "011111111111",
    "f2": "000000111111",
    "bf": "000000111111",
    "f4": "000000111111",
    "f8": "000000111111",
    "c8": "000000000011",
    "c16": "000000000011",
}
# torch.result_type(1-d tensor of the row dtype, 0-d tensor of the column dtype)
DIM_VS_0D = {
    "b1": "b1 u1 i1 i2 i4 i8 f2 bf f4 f8 c8 c16",
    "u1": "u1 u1 u1 u1 u1 u1 f2 bf f4 f8 c8 c16",
    "i1": "i1 i1 i1 i1 i1 i1 f2 bf f4 f8 c8 c16",
    "i2": "i2 i2 i2 i2 i2 i2 f2 bf f4 f8 c8 c16",
    "i4": "i4 i4 i4 i4 i4 i4 f2 bf f4 f8 c8 c16",
    "i8": "i8 i8 i8 i8 i8 i8 f2 bf f4 f8 c8 c16",
    "f2": "f2 f2 f2 f2 f2 f2 f2 f2 f2 f2 c4 c4",
    "bf": "bf bf bf bf bf bf bf bf bf bf c8 c8",
    "f4": "f4 f4 f4 f4 f4 f4 f4 f4 f4 f4 c8 c8",
    "f8": "f8 f8 f8 f8 f8 f8 f8 f8 f8 f8 c16 c16",
    "c8": "c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8 c8",
    "c16": "c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16 c16",
}
SCALARS = [True, 2, 2.5, 1j]
# torch.result_type(tensor of the row dtype, Python bool / int / float / complex); the same for
# a dimensioned and a 0-dim tensor (both outrank Python scalars)
VS_SCALAR = {
    "b1": "b1 i8 f4 c8",
    "u1": "u1 u1 f4 c8",
    "i1": "i1 i1 f4 c8",
    "i2": "i2 i2 f4 c8",
    "i4": "i4 i4 f4 c8",
    "i8": "i8 i8 f4 c8",
    "f2": "f2 f2 f2 c4",
    "bf": "bf bf bf c8",
    "f4": "f4 f4 f4 c8",
    "f8": "f8 f8 f8 c16",
    "c8": "c8 c8 c8 c8",
    "c16": "c16 c16 c16 c16",
}
# the same with torch.set_default_dtype(torch.float64): float and complex columns only
VS_SCALAR_F64_DEFAULT = {
    "b1": "f8 c16", "u1": "f8 c16", "i1": "f8 c16", "i2": "f8 c16", "i4": "f8 c16",
    "i8": "f8 c16", "f2": "f2 c4", "bf": "bf c8", "f4": "f4 c8", "f8": "f8 c16", "c8": "c8 c8",
    "c16": "c16 c16",
}
# torch.result_type(0-d tensor of Python scalar row, Python scalar column)
SCALAR_SCALAR = [["b1", "i8", "f4", "c8"], ["i8", "i8", "f4", "c8"], ["f4", "f4", "f4", "c8"],
                 ["c8", "c8", "c8", "c8"]]


def _table(table, row, col):
    return DTYPES[table[row].split()[col]]


def _operand(kind, name, value=1):
    d = DTYPES[name]
    shape = (2,) if kind == "dim" else ()
    return jitorch.full(shape, value, dtype=d)


# --- tables --------------------------------------------------------------------------------------
@pytest.mark.parametrize("a", NAMES)
def test_promote_types_table(a):
    for j, b in enumerate(NAMES):
        got = jitorch.promote_types(DTYPES[a], DTYPES[b])
        assert got is _table(PROMOTE, a, j), f"promote_types({a}, {b}) = {got}"
        assert got is jitorch.promote_types(DTYPES[b], DTYPES[a])


@pytest.mark.parametrize("a", NAMES)
def test_can_cast_table(a):
    for j, b in enumerate(NAMES):
        assert jitorch.can_cast(DTYPES[a], DTYPES[b]) is (CAN_CAST[a][j] == "1"), (a, b)


@pytest.mark.parametrize("a", NAMES)
def test_dimensioned_tensor_outranks_zero_dim(a):
    for j, b in enumerate(NAMES):
        want = _table(DIM_VS_0D, a, j)
        x, y = _operand("dim", a), _operand("0d", b)
        assert jitorch.result_type(x, y) is want, (a, b)
        assert jitorch.result_type(y, x) is want, (b, a)
        r = jitorch.add(x, y)
        assert r.dtype is want and r.shape == (2,)


@pytest.mark.parametrize("kind", ["dim", "0d"])
@pytest.mark.parametrize("a", NAMES)
def test_tensors_outrank_python_scalars(a, kind):
    for j, s in enumerate(SCALARS):
        want = _table(VS_SCALAR, a, j)
        x = _operand(kind, a)
        assert jitorch.result_type(x, s) is want, (a, s)
        assert jitorch.result_type(s, x) is want, (s, a)
        assert jitorch.add(x, s).dtype is want


def test_scalar_promotion_follows_the_default_dtype():
    jitorch.set_default_dtype(jitorch.float64)
    try:
        for a in NAMES:
            for j, s in enumerate([2.5, 1j]):
                want = _table(VS_SCALAR_F64_DEFAULT, a, j)
                assert jitorch.result_type(_operand("dim", a), s) is want, (a, s)
    finally:
        jitorch.set_default_dtype(jitorch.float32)


def test_scalar_scalar_result_type():
    for i, s in enumerate(SCALARS):
        for j, u in enumerate(SCALARS):
            assert jitorch.result_type(jitorch.tensor(s), u) is DTYPES[SCALAR_SCALAR[i][j]]
    assert jitorch.result_type(2, 3) is jitorch.int64
    assert jitorch.result_type(2, 3.5) is jitorch.float32
    assert jitorch.result_type(True, False) is jitorch.bool


def test_zero_dim_tensors_promote_among_themselves():
    # two 0-dim tensors are one tier: ordinary promotion
    for a in NAMES:
        for j, b in enumerate(NAMES):
            r = jitorch.result_type(_operand("0d", a), _operand("0d", b))
            assert r is _table(PROMOTE, a, j), (a, b)


# --- hypothesis: tiers and broadcasting ----------------------------------------------------------
_KINDS = st.sampled_from(["dim", "0d", "scalar"])


@st.composite
def _operands(draw):
    kind = draw(_KINDS)
    if kind == "scalar":
        j = draw(st.integers(0, 3))
        return kind, j, SCALARS[j]
    name = draw(st.sampled_from(NAMES))
    return kind, name, _operand(kind, name)


def _expected(a, b):
    (ka, na, _), (kb, nb, _) = a, b
    if ka == "scalar" and kb == "scalar":
        return DTYPES[SCALAR_SCALAR[na][nb]]
    if ka == "scalar":
        return _expected(b, a)
    if kb == "scalar":
        return _table(VS_SCALAR, na, nb)
    if ka == kb:
        return _table(PROMOTE, na, NAMES.index(nb))
    if ka == "dim":
        return _table(DIM_VS_0D, na, NAMES.index(nb))
    return _table(DIM_VS_0D, nb, NAMES.index(na))


@settings(max_examples=300, deadline=None)
@given(_operands(), _operands())
def test_promotion_tiers_hypothesis(a, b):
    want = _expected(a, b)
    x, y = a[2], b[2]
    if a[0] == "scalar" and b[0] == "scalar":
        assert jitorch.result_type(jitorch.tensor(x), y) is want
        return
    assert jitorch.result_type(x, y) is want
    first, second = (x, y) if isinstance(x, jitorch.Tensor) else (y, x)
    r = jitorch.add(first, second)
    assert r.dtype is want and r._data.dtype == want.np
    shape = max((t.shape for t in (x, y) if isinstance(t, jitorch.Tensor)), key=len)
    assert r.shape == shape


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4, max_side=4),
       st.sampled_from(["i8", "f4", "f8", "b1"]), st.sampled_from(["i4", "f4", "c8"]))
def test_broadcasting_shapes_hypothesis(shapes, da, db):
    sa, sb = shapes.input_shapes
    x, y = jitorch.ones(sa, dtype=DTYPES[da]), jitorch.ones(sb, dtype=DTYPES[db])
    r = jitorch.add(x, y)
    assert r.shape == shapes.result_shape == np.broadcast_shapes(sa, sb)
    kind = lambda s: "dim" if len(s) else "0d"  # noqa: E731
    assert r.dtype is _expected((kind(sa), da, x), (kind(sb), db, y))
    np.testing.assert_array_equal(r.numpy(), np.full(shapes.result_shape, 2))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=3), st.data())
def test_incompatible_shapes_raise_hypothesis(shape, data):
    i = data.draw(st.integers(0, len(shape) - 1))
    other = list(shape)
    other[i] = data.draw(st.integers(2, 5).filter(lambda n: n != shape[i]))
    if shape[i] == 1:
        return  # a size-1 dimension broadcasts
    with pytest.raises(RuntimeError, match=r"The size of tensor a \(\d+\) must match the size "
                                           r"of tensor b \(\d+\) at non-singleton dimension"):
        jitorch.add(jitorch.ones(shape), jitorch.ones(other))


# --- finfo / iinfo -------------------------------------------------------------------------------
FINFO = {
    "float16": dict(bits=16, eps=0.0009765625, max=65504.0, min=-65504.0,
                    tiny=6.103515625e-05, resolution=0.001),
    "bfloat16": dict(bits=16, eps=0.0078125, max=3.3895313892515355e+38,
                     min=-3.3895313892515355e+38, tiny=1.1754943508222875e-38, resolution=0.01),
    "float32": dict(bits=32, eps=1.1920928955078125e-07, max=3.4028234663852886e+38,
                    min=-3.4028234663852886e+38, tiny=1.1754943508222875e-38, resolution=1e-06),
    "float64": dict(bits=64, eps=2.220446049250313e-16, max=1.7976931348623157e+308,
                    min=-1.7976931348623157e+308, tiny=2.2250738585072014e-308,
                    resolution=1e-15),
}


@pytest.mark.parametrize("name", list(FINFO))
def test_finfo_values(name):
    f = jitorch.finfo(getattr(jitorch, name))
    for k, v in FINFO[name].items():
        assert getattr(f, k) == v and type(getattr(f, k)) is type(v), k
    assert f.smallest_normal == f.tiny and f.dtype == name


def test_finfo_of_complex_and_default():
    assert jitorch.finfo(jitorch.complex64).eps == FINFO["float32"]["eps"]
    assert jitorch.finfo(jitorch.complex64).dtype == "float32"
    assert jitorch.finfo(jitorch.complex128).bits == 64
    assert jitorch.finfo().dtype == "float32"
    assert repr(jitorch.finfo(jitorch.float32)) == (
        "finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, "
        "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)")


@pytest.mark.parametrize("name,bits,lo,hi", [
    ("uint8", 8, 0, 255), ("int8", 8, -128, 127), ("int16", 16, -32768, 32767),
    ("int32", 32, -2147483648, 2147483647),
    ("int64", 64, -9223372036854775808, 9223372036854775807)])
def test_iinfo_values(name, bits, lo, hi):
    i = jitorch.iinfo(getattr(jitorch, name))
    assert (i.bits, i.min, i.max, i.dtype) == (bits, lo, hi, name)
    assert type(i.min) is int and type(i.max) is int


@pytest.mark.parametrize("call", [lambda: jitorch.iinfo(jitorch.bool),
                                  lambda: jitorch.iinfo(jitorch.float32),
                                  lambda: jitorch.finfo(jitorch.int32),
                                  lambda: jitorch.finfo(jitorch.bool)])
def test_info_type_errors(call):
    with pytest.raises(TypeError):
        call()


# --- default dtype -------------------------------------------------------------------------------
def test_set_default_dtype_effects():
    assert jitorch.get_default_dtype() is jitorch.float32
    jitorch.set_default_dtype(jitorch.float64)
    try:
        assert jitorch.get_default_dtype() is jitorch.float64
        assert jitorch.tensor(1.5).dtype is jitorch.float64
        assert jitorch.tensor(1j).dtype is jitorch.complex128
        assert jitorch.ones(2).dtype is jitorch.float64
        assert jitorch.rand(2).dtype is jitorch.float64
        assert jitorch.add(jitorch.ones(2, dtype=jitorch.int32), 0.5).dtype is jitorch.float64
        assert jitorch.result_type(1, 2.0) is jitorch.float64
        assert jitorch.finfo().dtype == "float64"
        # tensors of an explicit dtype keep it
        assert jitorch.add(jitorch.ones(2), 0.5).dtype is jitorch.float64
        assert jitorch.add(jitorch.ones(2, dtype=jitorch.float32), 0.5).dtype is jitorch.float32
        jitorch.set_default_dtype(jitorch.float16)
        assert jitorch.tensor([1.5]).dtype is jitorch.float16
    finally:
        jitorch.set_default_dtype(jitorch.float32)
    assert jitorch.tensor(1.5).dtype is jitorch.float32


@pytest.mark.parametrize("d", [jitorch.int32, jitorch.int64, jitorch.bool, jitorch.complex64])
def test_set_default_dtype_rejects_non_floating(d):
    with pytest.raises(TypeError, match="only floating-point types are supported as the "
                                        "default type"):
        jitorch.set_default_dtype(d)
    assert jitorch.get_default_dtype() is jitorch.float32


# --- conversions ---------------------------------------------------------------------------------
CAST_VALUES = [1.00390625, 1.01171875, 3.14159, -0.0025, 65519.0, 65520.0, 1e-08, 1e-40, 3.4e+38]
AS_BF16 = [1.0, 1.015625, 3.140625, -0.00250244140625, 65536.0, 65536.0, 1.0011717677116394e-08,
           9.183549615799121e-41, math.inf]
AS_F16 = [1.00390625, 1.01171875, 3.140625, -0.0025005340576171875, 65504.0, math.inf, 0.0, 0.0,
          math.inf]


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # overflow to inf is expected here
        return fn()


def test_half_and_bfloat16_rounding_matches_pytorch():
    x = jitorch.tensor(CAST_VALUES)
    b = _quiet(x.bfloat16)
    h = _quiet(x.half)
    assert b.dtype is jitorch.bfloat16 and h.dtype is jitorch.float16
    assert b.float().tolist() == AS_BF16
    assert h.float().tolist() == AS_F16
    assert _quiet(lambda: x.to(jitorch.bfloat16)).tolist() == AS_BF16


@pytest.mark.parametrize("method,dtype", [
    ("float", jitorch.float32), ("double", jitorch.float64), ("half", jitorch.float16),
    ("bfloat16", jitorch.bfloat16), ("long", jitorch.int64), ("int", jitorch.int32),
    ("short", jitorch.int16), ("char", jitorch.int8), ("byte", jitorch.uint8),
    ("bool", jitorch.bool), ("cfloat", jitorch.complex64), ("cdouble", jitorch.complex128)])
def test_conversion_methods(method, dtype):
    t = jitorch.tensor([0.0, 1.0, 2.0, 3.0])
    r = getattr(t, method)()
    assert r.dtype is dtype and r._data.dtype == dtype.np and r.shape == (4,)
    want = [False, True, True, True] if dtype is jitorch.bool else [0, 1, 2, 3]
    assert [complex(v).real if dtype.is_complex else v for v in r.tolist()] == want


def test_round_trips_are_exact_where_representable():
    f64 = jitorch.tensor([0.1, -2.5, 1e-300], dtype=jitorch.float64)
    assert f64.float().double().tolist() == [np.float32(0.1).item(), -2.5, 0.0]
    f32 = jitorch.tensor([0.1, -2.5, 3.0e38])
    assert f32.double().float().tolist() == f32.tolist()
    small = jitorch.tensor([0.5, -1.25, 1024.0, 0.0009765625])  # representable in half/bf16
    assert small.half().float().tolist() == small.tolist()
    assert small.bfloat16().float().tolist() == small.tolist()
    ints = jitorch.tensor([-128, 0, 127], dtype=jitorch.int64)
    assert ints.char().long().tolist() == [-128, 0, 127]
    assert ints.double().long().tolist() == [-128, 0, 127]
    z = jitorch.tensor([1.5 - 2j])
    assert z.cdouble().cfloat().tolist() == [(1.5 - 2j)]


def test_float_to_int_truncates_and_int_casts_wrap():
    assert jitorch.tensor([2.7, -2.7, 0.5, -0.5]).int().tolist() == [2, -2, 0, 0]
    assert jitorch.tensor([255, 256, -1, 128]).to(jitorch.int8).tolist() == [-1, 0, -1, -128]
    assert jitorch.tensor([255, 256, -1, 128]).to(jitorch.uint8).tolist() == [255, 0, 255, 128]
    assert jitorch.tensor([1.5, 0.0, -0.0, math.nan]).bool().tolist() == [True, False, False,
                                                                          True]
    assert jitorch.tensor([True, False]).float().tolist() == [1.0, 0.0]


def test_complex_to_real_warns_and_drops_imaginary_part():
    with pytest.warns(UserWarning, match="Casting complex values to real discards the "
                                         "imaginary part"):
        r = jitorch.tensor([1 + 2j]).float()
    assert r.tolist() == [1.0] and r.dtype is jitorch.float32


def test_overflowing_casts_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert jitorch.tensor([1e300], dtype=jitorch.float64).float().tolist() == [math.inf]
        assert jitorch.tensor([1e5]).half().tolist() == [math.inf]


def test_to_overloads():
    t = jitorch.tensor([1.0, 2.0])
    assert t.to(jitorch.float32) is t  # same dtype: no copy
    assert t.float() is t
    c = t.to(jitorch.float32, copy=True)
    assert c is not t and c.tolist() == t.tolist()
    assert t.to(dtype=jitorch.int16).dtype is jitorch.int16
    assert t.to("cpu", jitorch.float64).dtype is jitorch.float64
    assert t.to(jitorch.ones(1, dtype=jitorch.int32)).dtype is jitorch.int32
    assert t.to("cpu") is t
    assert t.type() == "jitorch.FloatTensor"
    assert t.type(jitorch.float64).dtype is jitorch.float64
    assert t.type_as(jitorch.ones(1, dtype=jitorch.int8)).dtype is jitorch.int8


def test_conversion_keeps_gradient_flow():
    x = jitorch.tensor([1.5, 2.5], requires_grad=True)
    y = x.double()
    assert y.dtype is jitorch.float64 and y.requires_grad
    (y * y).sum().backward()
    assert x.grad.dtype is jitorch.float32 and x.grad.tolist() == [3.0, 5.0]


def test_dtype_objects():
    assert jitorch.float is jitorch.float32 and jitorch.double is jitorch.float64
    assert jitorch.half is jitorch.float16 and jitorch.long is jitorch.int64
    assert jitorch.int is jitorch.int32 and jitorch.short is jitorch.int16
    assert jitorch.cfloat is jitorch.complex64 and jitorch.cdouble is jitorch.complex128
    assert jitorch.float32.is_floating_point and not jitorch.int32.is_floating_point
    assert jitorch.complex64.is_complex and not jitorch.float64.is_complex
    assert jitorch.int8.is_signed and not jitorch.uint8.is_signed and not jitorch.bool.is_signed
    assert jitorch.float16.itemsize == 2 and jitorch.complex128.itemsize == 16
    import pickle
    assert pickle.loads(pickle.dumps(jitorch.bfloat16)) is jitorch.bfloat16
