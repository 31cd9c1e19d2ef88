"""OpInfo entries for binary and ternary elementwise ops (src/jitorch/_ops/binary.py and
ternary.py).

References are NumPy closed forms with PyTorch's semantics. Samples cover same shapes,
broadcasting, Python-number operands, 0-d and empty tensors; division-like ops draw nonzero
integer divisors. Gradient samples (float64) stay away from kinks (ties of min/max, clamp
bounds, remainder jumps) and domain ends so finite differences are meaningful.
"""
import numpy as np

import jitorch
from opinfo import ALL_REAL, OpInfo, Sample


def _float_rule(d):
    """Result dtype of PyTorch's "float" ops: integers become the default float dtype."""
    return d if d.is_floating_point or d.is_complex else jitorch.get_default_dtype()


def _silent(fn):
    def ref(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return ref


def _gen(dtype, rng, lo=-4.0, hi=4.0, nonzero=False, ints=(-5, 5)):
    dtype = np.dtype(dtype)

    def r(*shape):
        if dtype.kind in "iu":
            a = rng.integers(ints[0], ints[1] + 1, size=shape)
            if nonzero:
                a = np.where(a == 0, 1, a)
        else:
            a = rng.uniform(lo, hi, size=shape)
            if nonzero:
                a = np.where(np.abs(a) < 0.1, 0.5, a)
        return np.asarray(a).astype(dtype)
    return r


def _bin_samples(lo=-4.0, hi=4.0, other_lo=None, other_hi=None, nonzero=False, ints=(-5, 5),
                 other_ints=None, scalar=2):
    """Samples (input, other); `other` may be drawn from its own range (exponents, divisors)."""
    def gen(dtype, rng):
        a = _gen(dtype, rng, lo, hi, ints=ints)
        b = _gen(dtype, rng, lo if other_lo is None else other_lo,
                 hi if other_hi is None else other_hi, nonzero=nonzero,
                 ints=ints if other_ints is None else other_ints)
        return [Sample((a(3, 4), b(3, 4)), name="same"),
                Sample((a(3, 4), b(4)), name="broadcast"),
                Sample((a(2, 1, 3), b(4, 1)), name="broadcast-both"),
                Sample((a(5), scalar), name="scalar"),
                Sample((a(), b(3)), name="0d"),
                Sample((a(0, 3), b(3)), name="empty")]
    return gen


def _grad_bin(lo=-3.0, hi=3.0, other_lo=None, other_hi=None, scalar=2.5, rscalar=None):
    def gen(dtype, rng):
        def a(*s):
            return rng.uniform(lo, hi, size=s)

        def b(*s):
            return rng.uniform(lo if other_lo is None else other_lo,
                               hi if other_hi is None else other_hi, size=s)
        out = [Sample((a(2, 3), b(2, 3)), name="same"),
               Sample((a(2, 3), b(3)), name="broadcast"),
               Sample((a(3), scalar), name="scalar"),
               Sample((np.asarray(a()), b(2)), name="0d")]
        if rscalar is not None:
            out.append(Sample((rscalar, b(3)), name="scalar-input"))
        return out
    return gen


def _div_samples(dtype, rng):
    return _bin_samples(nonzero=True)(dtype, rng)


def _remainder_ref(a, b):
    if np.result_type(a, b).kind in "iu":
        return np.remainder(a, b)
    m = np.fmod(a, b)
    return np.where((m != 0) & ((b < 0) != (m < 0)), m + b, m)


def _pow_samples(dtype, rng):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":  # integer powers: small non-negative exponents
        out = _bin_samples(ints=(-4, 4), other_ints=(0, 4))(dtype, rng)
        return out + [Sample((2, _gen(dtype, rng, ints=(0, 5))(4)), name="scalar-base")]
    out = _bin_samples(lo=0.2, hi=3.0, other_lo=-2.0, other_hi=2.0)(dtype, rng)
    return out + [Sample((2.5, _gen(dtype, rng, -2.0, 2.0)(4)), name="scalar-base"),
                  Sample((_gen(dtype, rng, -3.0, 3.0)(4), 3), name="int-exponent")]


def _float_power_ref(a, b):
    a = np.asarray(a).astype(np.float64) if isinstance(a, np.ndarray) else float(a)
    b = np.asarray(b).astype(np.float64) if isinstance(b, np.ndarray) else float(b)
    return np.power(a, b)


def _xlogy_ref(a, b):
    with np.errstate(all="ignore"):
        a = np.asarray(a, dtype=np.result_type(a, b, np.float32))
        r = np.where(a == 0, 0.0, a * np.log(b))
        return np.where(np.isnan(b), np.nan, r).astype(a.dtype)


def _no_nan(gen):
    def grad_gen(dtype, rng):
        return [s for s in gen(dtype, rng) if s.name not in ("nan", "empty")]
    return grad_gen


def _minmax_samples(nan=False):
    def gen(dtype, rng):
        out = _bin_samples()(dtype, rng)
        if nan and np.dtype(dtype).kind == "f":
            out.append(Sample((np.array([np.nan, 1.0, np.nan, -2.0], dtype),
                               np.array([1.0, np.nan, np.nan, 3.0], dtype)), name="nan"))
        return out
    return gen


def _clamp_ref(x, min=None, max=None):
    r = x if min is None else np.maximum(x, min)
    return r if max is None else np.minimum(r, max)


def _clamp_samples(dtype, rng):
    r = _gen(dtype, rng)
    lo, hi = (-2, 2) if np.dtype(dtype).kind in "iu" else (-1.5, 1.5)
    return [Sample((r(3, 4), lo, hi), name="scalars"),
            Sample((r(3, 4),), {"min": lo}, name="min-only"),
            Sample((r(3, 4),), {"max": hi}, name="max-only"),
            Sample((r(3, 4), hi, lo), name="min>max"),
            Sample((r(3, 4), r(4), r(3, 1) + 3), name="tensor-bounds"),
            Sample((r(), r(3), None), name="0d"),
            Sample((r(0, 2), lo, hi), name="empty")]


def _clamp_grad_samples(dtype, rng):
    def r(*s):
        return rng.uniform(-3, 3, size=s)
    return [Sample((r(2, 3), -1.0, 1.0), name="scalars"),
            Sample((r(2, 3),), {"max": 0.5}, name="max-only"),
            Sample((r(2, 3), r(3) - 1, r(2, 1) + 1.5), name="tensor-bounds"),
            Sample((r(3), r(3) + 1, r(3) - 1), name="min>max")]


def _one_bound_samples(dtype, rng):
    r = _gen(dtype, rng)
    b = 1 if np.dtype(dtype).kind in "iu" else 0.5
    return [Sample((r(3, 4), b), name="scalar"), Sample((r(3, 4), r(4)), name="tensor"),
            Sample((r(), r(2, 3)), name="0d"), Sample((r(0, 3), b), name="empty")]


def _where_samples(dtype, rng):
    r = _gen(dtype, rng)
    s = 0 if np.dtype(dtype).kind in "iu" else 0.5

    def c(*shape):
        return np.asarray(rng.random(shape) < 0.5)
    return [Sample((c(3, 4), r(3, 4), r(3, 4)), name="same"),
            Sample((c(3, 1), r(4), r(3, 4)), name="broadcast"),
            Sample((c(3, 4), r(3, 4), s), name="scalar-other"),
            Sample((c(4), s, r(4)), name="scalar-input"),
            Sample((c(), r(2), r()), name="0d"),
            Sample((c(0, 2), r(0, 2), r(2)), name="empty")]


def _lerp_samples(dtype, rng):
    r = _gen(dtype, rng)

    def w(*s):
        return rng.uniform(-0.5, 1.5, size=s).astype(dtype)
    return [Sample((r(3, 4), r(3, 4), 0.3), name="scalar-weight"),
            Sample((r(3, 4), r(4), w(3, 4)), name="tensor-weight"),
            Sample((r(3, 1), r(4), 0.8), name="broadcast"),
            Sample((r(), r(3), w()), name="0d"),
            Sample((r(0, 3), r(3), 0.5), name="empty")]


def _addc_samples(divisor=False):
    def gen(dtype, rng):
        r = _gen(dtype, rng)
        d = _gen(dtype, rng, nonzero=True) if divisor else r
        v = 2 if np.dtype(dtype).kind in "iu" else 0.5
        return [Sample((r(3, 4), r(3, 4), d(3, 4)), name="same"),
                Sample((r(3, 4), r(4), d(3, 1)), {"value": v}, name="value-broadcast"),
                Sample((r(), r(3), d(3)), {"value": -1}, name="0d"),
                Sample((r(0, 3), r(3), d(3)), name="empty")]
    return gen


def _lerp_ref(a, b, w):
    return a + w * (b - a)


def _no_empty(gen):
    """Gradient samples: the value samples minus empty tensors (finite differences need data)."""
    def grad_gen(dtype, rng):
        return [s for s in gen(dtype, rng)
                if not any(isinstance(a, np.ndarray) and a.size == 0 for a in s.args)]
    return grad_gen


def _op(name, ref, samples, **kw):
    kw.setdefault("grad_samples", _no_empty(samples))
    return OpInfo(name, ref, samples, **kw)


OPINFOS = [
    _op("add", np.add, _bin_samples(), dtypes=ALL_REAL, grad_samples=_grad_bin(rscalar=1.5)),
    _op("sub", np.subtract, _bin_samples(), dtypes=ALL_REAL,
        grad_samples=_grad_bin(rscalar=1.5)),
    _op("subtract", np.subtract, _bin_samples(), dtypes=ALL_REAL),
    _op("mul", np.multiply, _bin_samples(), dtypes=ALL_REAL),
    _op("multiply", np.multiply, _bin_samples(), dtypes=ALL_REAL),
    _op("div", np.true_divide, _div_samples, dtypes=ALL_REAL, out_dtype=_float_rule,
        grad_samples=_grad_bin(other_lo=0.5, other_hi=3.0, rscalar=2.0)),
    _op("divide", np.true_divide, _div_samples, dtypes=ALL_REAL, out_dtype=_float_rule),
    _op("true_divide", np.true_divide, _div_samples, dtypes=ALL_REAL, out_dtype=_float_rule),
    # backward raises "derivative for aten::floor_divide is not implemented", as in PyTorch
    _op("floor_divide", np.floor_divide, _div_samples, dtypes=ALL_REAL, grad=False,
        jvp=False),
    _op("remainder", _silent(_remainder_ref), _div_samples, dtypes=ALL_REAL,
        grad_samples=_grad_bin(other_lo=0.5, other_hi=3.0, rscalar=5.0)),
    _op("fmod", _silent(np.fmod), _div_samples, dtypes=ALL_REAL,
        grad_samples=_grad_bin(other_lo=0.5, other_hi=3.0)),
    _op("pow", _silent(np.power), _pow_samples, dtypes=ALL_REAL, rtol=1e-4, atol=1e-4,
        grad_samples=_grad_bin(0.5, 2.0, -2.0, 2.0, rscalar=1.7)),
    _op("float_power", _silent(_float_power_ref), _pow_samples, dtypes=ALL_REAL,
        out_dtype=lambda d: jitorch.float64,
        grad_samples=_grad_bin(0.5, 2.0, -2.0, 2.0, rscalar=1.7)),
    _op("atan2", np.arctan2, _bin_samples(), dtypes=ALL_REAL, out_dtype=_float_rule,
        grad_samples=_grad_bin()),
    _op("arctan2", np.arctan2, _bin_samples(), dtypes=ALL_REAL, out_dtype=_float_rule),
    _op("hypot", np.hypot, _bin_samples(), grad_samples=_grad_bin(0.5, 3.0)),
    _op("copysign", np.copysign, _bin_samples(nonzero=True), dtypes=ALL_REAL,
        out_dtype=_float_rule),
    _op("minimum", np.minimum, _minmax_samples(nan=True), dtypes=ALL_REAL,
        grad_samples=_no_nan(_minmax_samples(nan=True))),
    _op("maximum", np.maximum, _minmax_samples(nan=True), dtypes=ALL_REAL,
        grad_samples=_no_nan(_minmax_samples(nan=True))),
    _op("fmin", np.fmin, _minmax_samples(nan=True), dtypes=ALL_REAL,
        grad_samples=_no_nan(_minmax_samples(nan=True))),
    _op("fmax", np.fmax, _minmax_samples(nan=True), dtypes=ALL_REAL,
        grad_samples=_no_nan(_minmax_samples(nan=True))),
    _op("xlogy", _xlogy_ref, _bin_samples(other_lo=0.0, other_hi=4.0), dtypes=ALL_REAL,
        out_dtype=_float_rule, grad_samples=_grad_bin(-2.0, 2.0, 0.5, 3.0)),
    _op("logaddexp", np.logaddexp, _bin_samples()),
    _op("logaddexp2", np.logaddexp2, _bin_samples()),
    _op("ldexp", lambda a, b: a * np.exp2(b).astype(np.result_type(a, np.float32)),
        _bin_samples(), dtypes=ALL_REAL, out_dtype=_float_rule, grad_samples=_grad_bin()),
    _op("clamp", _clamp_ref, _clamp_samples, dtypes=ALL_REAL,
        grad_samples=_clamp_grad_samples),
    _op("clip", _clamp_ref, _clamp_samples, dtypes=ALL_REAL,
        grad_samples=_clamp_grad_samples),
    _op("clamp_min", np.maximum, _one_bound_samples, dtypes=ALL_REAL),
    _op("clamp_max", np.minimum, _one_bound_samples, dtypes=ALL_REAL),
    _op("where", np.where, _where_samples, dtypes=ALL_REAL, method=False),
    _op("lerp", _lerp_ref, _lerp_samples),
    _op("addcmul", lambda a, b, c, value=1: a + value * b * c, _addc_samples(),
        dtypes=ALL_REAL),
    _op("addcdiv", lambda a, b, c, value=1: a + value * (b / c), _addc_samples(True)),
]
