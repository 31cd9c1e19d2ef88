"""OpInfo entries for comparison, logical, bitwise and classification ops.

None of these ops is differentiable (bool/integer results), so every entry has grad=False and
jvp=False. Samples use few distinct values so that ties (equal elements) actually occur.
"""
import ml_dtypes
import numpy as np

import jitorch
from opinfo import ALL_REAL, OpInfo, Sample

_BF16 = np.dtype(ml_dtypes.bfloat16)
HALVES = (jitorch.float16, jitorch.bfloat16)
COMPLEX = (jitorch.complex64, jitorch.complex128)
UINTS = (jitorch.uint8, jitorch.int8, jitorch.int16)
CMP_DTYPES = ALL_REAL + HALVES + (jitorch.bool, jitorch.uint8)
ALL = CMP_DTYPES + COMPLEX
INTEGRAL = (jitorch.bool,) + UINTS + (jitorch.int32, jitorch.int64)
NONDIFF = dict(grad=False, jvp=False)


def _is_float(dtype):
    return np.dtype(dtype).kind == "f" or np.dtype(dtype) == _BF16


def _rand(dtype, rng, *shape):
    """Small values on a coarse grid (ties are likely); bool/complex handled."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "c":
        re = np.round(rng.standard_normal(shape) * 2) / 2
        im = np.round(rng.standard_normal(shape)) * (rng.random(shape) < 0.5)
        return np.asarray(np.asarray(re + 1j * im).astype(dtype))
    a = np.asarray(rng.integers(-3, 4, shape)) if dtype.kind != "u" else \
        np.asarray(rng.integers(0, 7, shape))
    if _is_float(dtype):
        a = a / 2
    return np.asarray(a.astype(dtype))  # 0-d arithmetic gives NumPy scalars: keep arrays


def _specials(dtype):
    """NaN, infinities and signed zeros, for float and complex dtypes."""
    v = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan]
    if np.dtype(dtype).kind == "c":
        return np.array(v + [complex(1, np.nan), complex(np.inf, 1), complex(0, -np.inf)],
                        dtype=dtype)
    return np.array(v, dtype=dtype)


def _binary_samples(scalars=True):
    def gen(dtype, rng):
        r = lambda *s: _rand(dtype, rng, *s)  # noqa: E731
        out = [
            Sample((r(3, 4), r(3, 4)), name="same"),
            Sample((r(3, 4), r(4)), name="broadcast"),
            Sample((r(2, 1, 3), r(4, 1)), name="broadcast-both"),
            Sample((r(), r(3)), name="0d"),
            Sample((r(0, 3), r(3)), name="empty"),
        ]
        x = r(4)
        out.append(Sample((x, x.copy()), name="all-ties"))
        if _is_float(dtype) or np.dtype(dtype).kind == "c":
            s = _specials(dtype)
            out.append(Sample((s[:, None], s[None, :]), name="specials"))
        if scalars:
            out += [Sample((r(5), 1), name="int-scalar"), Sample((r(5), 0.5), name="float-scalar"),
                    Sample((r(5), True), name="bool-scalar")]
        return out
    return gen


def _unary_samples(dtype, rng):
    r = lambda *s: _rand(dtype, rng, *s)  # noqa: E731
    out = [Sample((r(3, 4),), name="2d"), Sample((r(),), name="0d"),
           Sample((r(0, 2),), name="empty")]
    if _is_float(dtype) or np.dtype(dtype).kind == "c":
        out.append(Sample((_specials(dtype),), name="specials"))
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        out.append(Sample((np.array([info.min, info.max, 0, -1 if info.min else 1], dtype),),
                          name="extremes"))
    return out


def _bitwise_samples(dtype, rng):
    out = _binary_samples(scalars=False)(dtype, rng)
    if np.dtype(dtype).kind == "b":
        return out + [Sample((_rand(dtype, rng, 5), True), name="bool-scalar")]
    info = np.iinfo(dtype)
    ext = np.array([info.min, info.max, 0, 5], dtype)
    return out + [Sample((_rand(dtype, rng, 5), 3), name="int-scalar"),
                  Sample((ext, ext[::-1].copy()), name="extremes")]


def _shift_samples(dtype, rng):
    bits = np.dtype(dtype).itemsize * 8
    r = lambda *s: _rand(dtype, rng, *s)  # noqa: E731
    sh = lambda *s: np.asarray(rng.integers(0, bits, s)).astype(dtype)  # noqa: E731
    return [
        Sample((r(3, 4), sh(3, 4)), name="same"),
        Sample((r(3, 4), sh(4)), name="broadcast"),
        Sample((r(), sh(3)), name="0d"),
        Sample((r(0, 3), sh(3)), name="empty"),
        Sample((r(5), 2), name="int-scalar"),
        Sample((np.array([np.iinfo(dtype).max, np.iinfo(dtype).min, 1], dtype),
                np.array([1, bits - 1, bits - 1], dtype)), name="extremes"),
    ]


def _close_samples(dtype, rng):
    a = _rand(dtype, rng, 3, 4)
    kind = np.dtype(dtype).kind
    if kind in "fc" or _is_float(dtype):
        c = np.asarray(a).astype(np.complex128 if kind == "c" else np.float64)
        near = (c * (1 + 1e-6) + 1e-9).astype(dtype)  # inside default tolerances
        far = (c * 1.01 + 0.01).astype(dtype)  # outside
        s = _specials(dtype)
        out = [Sample((a, near), name="near"), Sample((a, far), name="far"),
               Sample((a, far), {"rtol": 0.1, "atol": 0.1}, name="loose"),
               Sample((a, far[0]), name="broadcast"),
               Sample((s[:, None], s[None, :]), name="specials"),
               Sample((s[:, None], s[None, :]), {"equal_nan": True}, name="equal-nan"),
               Sample((a, near), {"rtol": 0.0, "atol": 0.0}, name="zero-tol")]
    else:
        b = _rand(dtype, rng, 3, 4)
        out = [Sample((a, b), name="exact"), Sample((a, b), {"atol": 1}, name="atol"),
               Sample((a, a.copy()), {"rtol": 0.5}, name="ties"),
               Sample((a, b[0]), {"atol": 2, "rtol": 0}, name="broadcast")]
    z = _rand(dtype, rng)
    return out + [Sample((z, z.copy()), name="0d"),
                  Sample((_rand(dtype, rng, 0), _rand(dtype, rng, 0)), name="empty")]


def _equal_samples(dtype, rng):
    a = _rand(dtype, rng, 3, 4)
    b = a.copy()
    b.flat[5] = next(v for v in _rand(dtype, rng, 50) if v != b.flat[5])
    out = [Sample((a, a.copy()), name="equal"), Sample((a, b), name="differ"),
           Sample((a, a[0].copy()), name="shape-mismatch"),
           Sample((a, a.reshape(4, 3).copy()), name="reshaped"),
           Sample((a[:0], a[:0].copy()), name="empty"),
           Sample((_rand(dtype, rng), _rand(dtype, rng)), name="0d")]
    if _is_float(dtype) or np.dtype(dtype).kind == "c":
        s = _specials(dtype)
        out.append(Sample((s, s.copy()), name="nan"))
    return out


def _ref_equal(a, b):
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _ref_signbit(a):
    return np.signbit(a) if _is_float(a.dtype) else np.asarray(a < 0) if a.dtype.kind != "b" \
        else np.zeros(a.shape, bool)


def _bool(d):
    return jitorch.bool


def _quiet(ufunc):
    """NumPy (ml_dtypes for bfloat16) warns on NaN comparisons; the references mustn't."""
    def ref(*args, **kwargs):
        with np.errstate(invalid="ignore"):
            return ufunc(*args, **kwargs)
    return ref


_CMP_REFS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
             "gt": np.greater, "ge": np.greater_equal, "not_equal": np.not_equal,
             "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
             "greater_equal": np.greater_equal}

OPINFOS = [
    OpInfo(name, _quiet(ref), _binary_samples(), dtypes=ALL if ref in (np.equal, np.not_equal)
           else CMP_DTYPES, out_dtype=_bool, **NONDIFF)
    for name, ref in _CMP_REFS.items()
] + [
    OpInfo("isclose", np.isclose, _close_samples, dtypes=ALL, out_dtype=_bool, **NONDIFF),
    OpInfo("allclose", lambda a, b, **kw: bool(np.allclose(a, b, **kw)), _close_samples,
           dtypes=ALL, **NONDIFF),
    OpInfo("equal", _ref_equal, _equal_samples, dtypes=ALL, **NONDIFF),
    OpInfo("logical_and", np.logical_and, _binary_samples(scalars=False), dtypes=ALL,
           out_dtype=_bool, **NONDIFF),
    OpInfo("logical_or", np.logical_or, _binary_samples(scalars=False), dtypes=ALL,
           out_dtype=_bool, **NONDIFF),
    OpInfo("logical_xor", np.logical_xor, _binary_samples(scalars=False), dtypes=ALL,
           out_dtype=_bool, **NONDIFF),
    OpInfo("logical_not", np.logical_not, _unary_samples, dtypes=ALL, out_dtype=_bool,
           **NONDIFF),
    OpInfo("bitwise_and", np.bitwise_and, _bitwise_samples, dtypes=INTEGRAL, **NONDIFF),
    OpInfo("bitwise_or", np.bitwise_or, _bitwise_samples, dtypes=INTEGRAL, **NONDIFF),
    OpInfo("bitwise_xor", np.bitwise_xor, _bitwise_samples, dtypes=INTEGRAL, **NONDIFF),
    OpInfo("bitwise_not", np.invert, _unary_samples, dtypes=INTEGRAL, **NONDIFF),
    OpInfo("bitwise_left_shift", np.left_shift, _shift_samples, dtypes=INTEGRAL[1:],
           **NONDIFF),
    OpInfo("bitwise_right_shift", np.right_shift, _shift_samples, dtypes=INTEGRAL[1:],
           **NONDIFF),
    OpInfo("isnan", np.isnan, _unary_samples, dtypes=ALL, out_dtype=_bool, **NONDIFF),
    OpInfo("isinf", np.isinf, _unary_samples, dtypes=ALL, out_dtype=_bool, **NONDIFF),
    OpInfo("isfinite", np.isfinite, _unary_samples, dtypes=ALL, out_dtype=_bool, **NONDIFF),
    OpInfo("isposinf", lambda a: np.isposinf(a) if _is_float(a.dtype)
           else np.zeros(a.shape, bool), _unary_samples, dtypes=CMP_DTYPES, out_dtype=_bool,
           **NONDIFF),
    OpInfo("isneginf", lambda a: np.isneginf(a) if _is_float(a.dtype)
           else np.zeros(a.shape, bool), _unary_samples, dtypes=CMP_DTYPES, out_dtype=_bool,
           **NONDIFF),
    OpInfo("isreal", np.isreal, _unary_samples, dtypes=ALL, out_dtype=_bool, **NONDIFF),
    OpInfo("signbit", _ref_signbit, _unary_samples, dtypes=CMP_DTYPES, out_dtype=_bool,
           **NONDIFF),
]
