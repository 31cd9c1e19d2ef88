"""OpInfo entries for unary elementwise math ops (src/jitorch/_ops/unary.py).

References are NumPy/SciPy or closed forms. Samples are drawn inside each op's domain (plus an
"edge" sample of inf/nan/zero values where NumPy agrees with PyTorch); gradient samples stay away
from kinks and domain ends so finite differences are meaningful.
"""
import numpy as np
import scipy.special as sps

import jitorch
from opinfo import ALL_REAL, FLOATS, OpInfo, Sample

COMPLEX = (jitorch.complex64, jitorch.complex128)
INF, NAN = np.inf, np.nan


def _float_rule(d):
    """Result dtype of PyTorch's "float" ops: integers become the default float dtype."""
    return d if d.is_floating_point or d.is_complex else jitorch.get_default_dtype()


def _samples(lo=-3.0, hi=3.0, ints=(-5, 5), edge=(), kwargs=None, int_kwargs=None):
    """Sample generator: uniform values in [lo, hi] (complex: both parts), integers in `ints`."""
    kw = kwargs or {}

    def gen(dtype, rng):
        dtype = np.dtype(dtype)

        def r(*shape):
            if dtype.kind in "iu":
                return rng.integers(ints[0], ints[1] + 1, size=shape).astype(dtype)
            a = rng.uniform(lo, hi, size=shape)
            if dtype.kind == "c":
                a = a + 1j * rng.uniform(lo, hi, size=shape)
            return np.asarray(a).astype(dtype)
        k = dict(int_kwargs if dtype.kind in "iu" and int_kwargs is not None else kw)
        out = [Sample((r(3, 4),), k, "2d"), Sample((r(2, 3, 2),), k, "3d"),
               Sample((r(),), k, "0d"), Sample((r(0, 3),), k, "empty")]
        if edge and dtype.kind == "f":
            out.append(Sample((np.array(edge, dtype),), k, "edge"))
        return out
    return gen


def _grad(lo, hi, kwargs=None):
    """float64 samples for the finite-difference checks."""
    kw = kwargs or {}

    def gen(dtype, rng):
        return [Sample((rng.uniform(lo, hi, size=(2, 3)),), kw, "2d"),
                Sample((np.asarray(rng.uniform(lo, hi)),), kw, "0d")]
    return gen


def _silent(fn):
    def ref(*args, **kwargs):
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)
    return ref


def _sign(x):
    # PyTorch: (x > 0) - (x < 0), so sign(nan) == 0; bool stays bool
    if x.dtype == np.bool_:
        return x.copy()
    return ((x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)).astype(x.dtype)


def _sgn(x):
    if x.dtype.kind != "c":
        return _sign(x)
    mag = np.abs(x)
    return np.where(mag == 0, 0, x / np.where(mag == 0, 1, mag)).astype(x.dtype)


def _logit(x, eps=None):
    if eps is not None and eps >= 0:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


def _round(x, decimals=0):
    if x.dtype.kind in "iu":
        return x.copy()
    if decimals == 0:
        return np.rint(x)
    ten = x.dtype.type(10.0 ** abs(decimals))
    return np.rint(x / ten) * ten if decimals < 0 else np.rint(x * ten) / ten


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _lgamma(x):
    return np.where(x == -INF, INF, sps.gammaln(x))


def _concat(*gens):
    """One sample generator from several (e.g. an op with and without a keyword)."""
    def gen(dtype, rng):
        return [s for g in gens for s in g(dtype, rng)]
    return gen


def _reciprocal(x):
    return 1.0 / x if x.dtype.kind in "fc" else 1.0 / x.astype(np.float64)


_EXP_EDGE = (0.0, -0.0, INF, -INF, NAN, 100.0, -100.0)
_LOG_EDGE = (0.0, -0.0, -1.0, INF, NAN, 1e-30)
ALL_C = ALL_REAL + COMPLEX
FLOATS_C = FLOATS + COMPLEX


def _float_op(name, ref, lo, hi, ints, glo, ghi, edge=(), dtypes=ALL_C, **kw):
    return OpInfo(name, _silent(ref), _samples(lo, hi, ints, edge), dtypes=dtypes,
                  out_dtype=_float_rule, grad_samples=_grad(glo, ghi), **kw)


_ROUND_EDGE = (0.5, -0.5, 1.5, 2.5, -2.5, -0.0, INF, -INF, NAN)


def _rounding(name, ref, kwargs=({},)):
    """Rounding ops keep integer dtypes; `kwargs` variants apply to float samples only."""
    return OpInfo(name, ref, _concat(*(_samples(-4.0, 4.0, edge=_ROUND_EDGE, kwargs=k,
                                                int_kwargs={}) for k in kwargs)),
                  dtypes=ALL_REAL, grad_samples=_concat(*(_grad(0.1, 0.9, k) for k in kwargs)))


def _nonzero_grad(lo, hi):
    """float64 gradient samples with |x| in [lo, hi] and mixed signs (away from a kink at 0)."""
    def gen(dtype, rng):
        def r(*shape):
            return rng.uniform(lo, hi, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        return [Sample((r(2, 3),), {}, "2d"), Sample((np.asarray(r()),), {}, "0d")]
    return gen


def _mixed_sign(lo, hi):
    """Nonzero values of both signs: |x| in [lo, hi]."""
    base = _samples(lo, hi, ints=(1, 9))

    def gen(dtype, rng):
        out = []
        for s in base(dtype, rng):
            a = s.args[0]
            flip = rng.integers(0, 2, size=a.shape).astype(bool)
            out.append(Sample((np.where(flip, -a, a).astype(a.dtype),), s.kwargs, s.name))
        return out
    return gen


OPINFOS = [
    # arithmetic
    OpInfo("neg", np.negative, _samples(), dtypes=ALL_C, grad_samples=_grad(-3.0, 3.0)),
    OpInfo("negative", np.negative, _samples(), dtypes=ALL_C, grad_samples=_grad(-3.0, 3.0)),
    OpInfo("abs", np.abs, _samples(edge=(-0.0, INF, -INF, NAN)), dtypes=ALL_C,
           grad_samples=_nonzero_grad(0.2, 3.0)),
    OpInfo("absolute", np.abs, _samples(), dtypes=ALL_C, grad_samples=_nonzero_grad(0.2, 3.0)),
    OpInfo("sign", _sign, _samples(edge=(0.0, -0.0, NAN, INF, -INF)), dtypes=ALL_REAL,
           grad_samples=_nonzero_grad(0.2, 3.0)),
    OpInfo("sgn", _sgn, _samples(edge=(0.0, -0.0, NAN, INF, -INF)), dtypes=ALL_C,
           grad_samples=_nonzero_grad(0.2, 3.0)),
    OpInfo("reciprocal", _silent(_reciprocal), _mixed_sign(0.2, 3.0), dtypes=ALL_C,
           out_dtype=_float_rule, grad_samples=_nonzero_grad(0.3, 3.0)),
    OpInfo("square", np.square, _samples(), dtypes=ALL_C, grad_samples=_grad(-3.0, 3.0)),
    OpInfo("positive", np.positive, _samples(), dtypes=ALL_C, grad_samples=_grad(-3.0, 3.0)),
    # exponentials and logarithms
    _float_op("exp", np.exp, -3.0, 3.0, (-5, 5), -2.0, 2.0, _EXP_EDGE),
    _float_op("exp2", np.exp2, -3.0, 3.0, (-5, 5), -2.0, 2.0, _EXP_EDGE),
    _float_op("expm1", np.expm1, -3.0, 3.0, (-5, 5), -2.0, 2.0, _EXP_EDGE),
    _float_op("log", np.log, 0.1, 5.0, (1, 9), 0.2, 4.0, _LOG_EDGE),
    _float_op("log2", np.log2, 0.1, 5.0, (1, 9), 0.2, 4.0, _LOG_EDGE),
    _float_op("log10", np.log10, 0.1, 5.0, (1, 9), 0.2, 4.0, _LOG_EDGE),
    _float_op("log1p", np.log1p, -0.9, 5.0, (0, 9), -0.5, 4.0, (-1.0, -2.0, 0.0, INF, NAN)),
    _float_op("sqrt", np.sqrt, 0.0, 5.0, (0, 9), 0.2, 4.0, (0.0, -0.0, -1.0, INF, NAN)),
    _float_op("rsqrt", lambda x: 1 / np.sqrt(x), 0.1, 5.0, (1, 9), 0.2, 4.0,
              (0.0, -1.0, INF, NAN)),
    # trigonometric
    _float_op("sin", np.sin, -4.0, 4.0, (-5, 5), -3.0, 3.0, (0.0, -0.0, INF, NAN)),
    _float_op("cos", np.cos, -4.0, 4.0, (-5, 5), -3.0, 3.0, (0.0, -0.0, INF, NAN)),
    _float_op("tan", np.tan, -1.2, 1.2, (-1, 1), -1.2, 1.2, (0.0, -0.0, INF, NAN)),
    _float_op("asin", np.arcsin, -1.0, 1.0, (-1, 1), -0.9, 0.9, (1.0, -1.0, 1.5, NAN)),
    _float_op("arcsin", np.arcsin, -1.0, 1.0, (-1, 1), -0.9, 0.9),
    _float_op("acos", np.arccos, -1.0, 1.0, (-1, 1), -0.9, 0.9, (1.0, -1.0, 1.5, NAN)),
    _float_op("arccos", np.arccos, -1.0, 1.0, (-1, 1), -0.9, 0.9),
    _float_op("atan", np.arctan, -4.0, 4.0, (-5, 5), -3.0, 3.0, (INF, -INF, NAN, -0.0)),
    _float_op("arctan", np.arctan, -4.0, 4.0, (-5, 5), -3.0, 3.0),
    # hyperbolic
    _float_op("sinh", np.sinh, -3.0, 3.0, (-5, 5), -2.0, 2.0, (INF, -INF, NAN, 100.0)),
    _float_op("cosh", np.cosh, -3.0, 3.0, (-5, 5), -2.0, 2.0, (INF, -INF, NAN, 100.0)),
    _float_op("tanh", np.tanh, -3.0, 3.0, (-5, 5), -2.0, 2.0, (INF, -INF, NAN, 100.0)),
    _float_op("asinh", np.arcsinh, -4.0, 4.0, (-5, 5), -3.0, 3.0, (INF, -INF, NAN)),
    _float_op("arcsinh", np.arcsinh, -4.0, 4.0, (-5, 5), -3.0, 3.0),
    _float_op("acosh", np.arccosh, 1.0, 5.0, (1, 9), 1.2, 4.0, (1.0, 0.5, INF, NAN)),
    _float_op("arccosh", np.arccosh, 1.0, 5.0, (1, 9), 1.2, 4.0),
    _float_op("atanh", np.arctanh, -0.99, 0.99, (0, 0), -0.9, 0.9, (1.0, -1.0, 1.5, NAN)),
    _float_op("arctanh", np.arctanh, -0.99, 0.99, (0, 0), -0.9, 0.9),
    # sigmoid, logit
    _float_op("sigmoid", lambda x: 1 / (1 + np.exp(-x)), -6.0, 6.0, (-5, 5), -4.0, 4.0,
              (INF, -INF, NAN, 50.0, -50.0)),
    OpInfo("logit", _silent(_logit),
           _concat(_samples(0.01, 0.99, (0, 1), (0.0, 1.0, 1.5, -0.5, NAN)),
                   _samples(-0.2, 1.2, (0, 1), (0.2, 0.8, NAN), kwargs={"eps": 0.2}),
                   _samples(0.01, 0.99, (0, 1), kwargs={"eps": -1.0})),
           dtypes=ALL_REAL, out_dtype=_float_rule,
           grad_samples=_concat(_grad(0.05, 0.95), _grad(-0.2, 1.2, {"eps": 0.2}))),
    # special functions
    _float_op("erf", sps.erf, -3.0, 3.0, (-3, 3), -2.0, 2.0, (INF, -INF, NAN, 0.0),
              dtypes=ALL_REAL),
    _float_op("erfc", sps.erfc, -3.0, 3.0, (-3, 3), -2.0, 2.0, (INF, -INF, NAN, 0.0),
              dtypes=ALL_REAL),
    _float_op("erfinv", sps.erfinv, -0.99, 0.99, (-1, 1), -0.9, 0.9,
              (1.0, -1.0, 1.5, NAN, 0.0), dtypes=ALL_REAL, rtol=1e-3),
    _float_op("lgamma", _lgamma, -4.5, 6.0, (1, 9), 0.3, 5.0,
              (0.0, -1.0, -2.5, INF, -INF, NAN), dtypes=ALL_REAL),
    _float_op("digamma", sps.psi, 0.1, 6.0, (1, 9), 0.3, 5.0, (-1.5, INF, NAN),
              dtypes=ALL_REAL, rtol=1e-3),
    # rounding
    _rounding("floor", np.floor),
    _rounding("ceil", np.ceil),
    _rounding("trunc", np.trunc),
    _rounding("fix", np.trunc),
    _rounding("round", _round, ({}, {"decimals": 2}, {"decimals": -1})),
    OpInfo("frac", _silent(lambda x: x - np.trunc(x)),
           _samples(-4.0, 4.0, edge=(0.5, -1.5, -0.0, INF, -INF, NAN)), dtypes=FLOATS,
           grad_samples=_grad(0.1, 0.9)),
    # nan_to_num
    OpInfo("nan_to_num", _nan_to_num,
           _concat(_samples(edge=(NAN, INF, -INF, 1.0, -0.0)),
                   _samples(edge=(NAN, INF, -INF, 1.0),
                            kwargs={"nan": 1.5, "posinf": 7.0, "neginf": -9.0})),
           dtypes=ALL_C, grad_samples=_concat(_grad(-3.0, 3.0), _grad(-3.0, 3.0, {"nan": 1.5}))),
]
