"""The special functions PyTorch adds beyond `unary.py`'s (scipy.special implementations):
modified Bessel functions (i0, i0e, i1, i1e), Bessel j0/j1, the normal distribution
(ndtr, ndtri, log_ndtr), sinc, entr, erfcx, xlog1py, the Hurwitz zeta, polygamma and the
multivariate log-gamma (mvlgamma).

Each is a registry op with its VJP/JVP written in jitorch ops (the derivatives are these same
functions, so every order differentiates). None has a Numba scalar template: scipy's special
functions are not available inside nopython code, so compiled programs run them interpreted.
`jitorch.special` (`special/__init__.py`) gives them, and the existing ops, PyTorch's
`torch.special.*` names.
"""
from __future__ import annotations

import math

import numpy as np
from .._scipy_special import special as sps, special_fn

from .._tensor import Tensor
from .binary import kernel_rule, select
from .registry import defop
from .unary import _polygamma_op, _rule

# public at the top level as in PyTorch; the special_* ops are reached through jitorch.special
__all__ = ["i0", "sinc", "polygamma", "mvlgamma"]

_INTERP = "a scipy.special function: no Numba scalar template (scipy is not nopython)"
_SQRT_2PI = math.sqrt(2 * math.pi)
_2_SQRT_PI = 2 / math.sqrt(math.pi)


def _float_rule(kernel):
    return _rule("float", kernel, no_complex=True)


def _unary(name, fn, kernel, dfn, method=False, inplace=False):
    """An elementwise op `fn` whose derivative is `dfn(input, result)` (jitorch ops); only
    the top-level ones (`method=True`) are public functions."""
    def impl(input):
        return fn(input)
    impl.__name__ = name
    return defop(name, impl, kind="elementwise", dtype=_float_rule(kernel), method=method,
                 function=method, inplace=inplace,
                 vjp=lambda g, input, result: g * dfn(input, result),
                 jvp=lambda t_input, input, result: t_input * dfn(input, result),
                 interpreted=_INTERP)


def _safe_div_at0(num, x, at0):
    """num / x, with the value `at0` where x == 0 (the ratios' removable singularity)."""
    zero = x == 0
    return select(zero, at0, num / select(zero, 1.0, x))


# --- modified Bessel functions of the first kind -----------------------------------------------
i0 = _unary("i0", special_fn("i0"), "i0", lambda x, r: special_i1(x), method=True, inplace=True)
special_i0e = _unary("special_i0e", special_fn("i0e"), "i0e",
                     lambda x, r: special_i1e(x) - x.sign() * r)
# i1' = i0 - i1 / x and i1e' = i0e - sign(x) i1e - i1e / x; both are 1/2 at 0
special_i1 = _unary("special_i1", special_fn("i1"), "i1",
                    lambda x, r: i0(x) - _safe_div_at0(r, x, 0.5))
special_i1e = _unary("special_i1e", special_fn("i1e"), "i1e",
                     lambda x, r: special_i0e(x) - r * x.sign() - _safe_div_at0(r, x, 0.5))

# --- Bessel functions of the first kind --------------------------------------------------------
special_bessel_j0 = _unary("special_bessel_j0", special_fn("j0"), "bessel_j0",
                           lambda x, r: -special_bessel_j1(x))
special_bessel_j1 = _unary("special_bessel_j1", special_fn("j1"), "bessel_j1",
                           lambda x, r: special_bessel_j0(x) - _safe_div_at0(r, x, 0.5))

# --- the normal distribution -------------------------------------------------------------------
special_ndtr = _unary("special_ndtr", special_fn("ndtr"), "ndtr",
                      lambda x, r: (x * x * -0.5).exp() / _SQRT_2PI)
special_ndtri = _unary("special_ndtri", special_fn("ndtri"), "ndtri",
                       lambda x, r: (r * r * 0.5).exp() * _SQRT_2PI)
special_log_ndtr = _unary("special_log_ndtr", special_fn("log_ndtr"), "log_ndtr",
                          lambda x, r: (x * x * -0.5 - r).exp() / _SQRT_2PI)


# --- sinc, entr, erfcx -------------------------------------------------------------------------
def _sinc(x):
    return np.sinc(x)  # sin(pi x) / (pi x), 1 at 0


def _sinc_grad(x, r):
    # (cos(pi x) - sinc(x)) / x, 0 at x == 0
    return _safe_div_at0((x * math.pi).cos() - r, x, 0.0)


sinc = _unary("sinc", _sinc, "sinc", _sinc_grad, method=True, inplace=True)


def _entr(x):
    with np.errstate(all="ignore"):
        r = -x * np.log(x)
    r = np.where(x == 0, np.zeros((), x.dtype), r)
    return np.where(x < 0, np.full((), -np.inf, x.dtype), r).astype(x.dtype)


special_entr = _unary("special_entr", _entr, "entr", lambda x, r: -(x.log() + 1))
special_erfcx = _unary("special_erfcx", special_fn("erfcx"), "erfcx",
                       lambda x, r: x * r * 2 - _2_SQRT_PI)


# --- xlog1py and zeta (binary) -----------------------------------------------------------------
def _xlog1py(input, other):
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(input == 0, np.zeros((), input.dtype), input * np.log1p(other))
    return np.where(np.isnan(other), other, r)


def _xlog1py_terms(g_input, g_other, input, other):
    gi = go = None
    if isinstance(input, Tensor):
        gi = g_input * (other.log1p() if isinstance(other, Tensor) else math.log1p(other))
        gi = select(input == 0, select(other <= -1, 0.0, gi), gi)  # PyTorch's mask
    if isinstance(other, Tensor):
        go = g_other * input / (other + 1)
    return gi, go


def _xlog1py_jvp(t_input, t_other, input, other):
    gi, go = _xlog1py_terms(t_input, t_other, input, other)
    return go if gi is None else gi if go is None else gi + go


special_xlog1py = defop("special_xlog1py", _xlog1py, tensors=("input", "other"),
                kind="elementwise", scalar_first=True, method=False, function=False,
                dtype=kernel_rule("xlog1py_cpu", complex_ok=False, base="float"),
                vjp=lambda g, input, other: _xlog1py_terms(g, g, input, other),
                jvp=_xlog1py_jvp, interpreted=_INTERP)


def _zeta(input, other):
    return sps.zeta(input, other)


def _zeta_vjp(g, input, other):
    # PyTorch has no derivative in x (the exponent); in q it is -x zeta(x + 1, q)
    go = g * -input * special_zeta(input + 1, other) if isinstance(other, Tensor) else None
    return None, go


special_zeta = defop("special_zeta", _zeta, tensors=("input", "other"), kind="elementwise",
                     scalar_first=True, method=False, function=False,
                     dtype=kernel_rule("zeta_cpu", complex_ok=False, bool_ok=True, base="float"),
                     vjp=_zeta_vjp, interpreted=_INTERP)


# --- polygamma (over unary.py's derivative op) and mvlgamma ------------------------------------
def polygamma(n, input):
    """The n-th derivative of digamma: polygamma(0, x) = digamma(x)."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    if n == 0:
        return input.digamma()
    return _polygamma_op(input, n)


def _mvlgamma(input, p):
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if input.size and not (input > (p - 1) / 2).all():  # the check lives in the op (traceable)
        raise RuntimeError("All elements must be greater than (p-1)/2")
    out = sum(sps.gammaln(input - i / 2) for i in range(p))
    return (out + p * (p - 1) / 4 * math.log(math.pi)).astype(input.dtype)


def _mvlgamma_slope(input, p):
    out = None
    for i in range(p):
        term = (input - i / 2).digamma()
        out = term if out is None else out + term
    return out


# log of the multivariate gamma function: sum_{i<p} lgamma(x - i / 2) + p (p - 1) / 4 log(pi)
mvlgamma = defop("mvlgamma", _mvlgamma, kind="elementwise",
                 dtype=_rule("float", "mvlgamma", no_complex=True), inplace=True,
                 vjp=lambda g, input, p: g * _mvlgamma_slope(input, p),
                 jvp=lambda t_input, input, p: t_input * _mvlgamma_slope(input, p),
                 interpreted=_INTERP)


def _polygamma_method(self, n):
    return polygamma(n, self)


Tensor.polygamma = _polygamma_method
