"""`jitorch.special`: PyTorch's `torch.special` namespace.

The functions jitorch computes map onto registry ops: the ones other families declare (erf,
lgamma as `gammaln`, digamma as `psi`, sigmoid as `expit`, softmax, ...) and the ones
`_ops/special_fns.py` adds (Bessel, normal-distribution, sinc, entr, erfcx, xlog1py, zeta,
polygamma, multigammaln). `torch.special` functions jitorch does not have (orthogonal
polynomials, Airy, Bessel of the second kind, incomplete gamma, ...) raise NotImplementedError
naming the function, rather than AttributeError.
"""
from __future__ import annotations

from .. import _ops
from .._ops import special_fns as _sf

__all__ = ["bessel_j0", "bessel_j1", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
           "expit", "expm1", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
           "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc", "softmax",
           "xlog1py", "xlogy", "zeta"]
__all__ += ["gammainc", "gammaincc"]  # issue 19

# the same ops as jitorch's top-level functions
erf, erfc, erfinv = _ops.erf, _ops.erfc, _ops.erfinv
exp2, expm1, log1p = _ops.exp2, _ops.expm1, _ops.log1p
expit = _ops.sigmoid
gammaln = _ops.lgamma
digamma = psi = _ops.digamma
xlogy = _ops.xlogy
i0 = modified_bessel_i0 = _sf.i0
sinc = _sf.sinc
polygamma = _sf.polygamma
multigammaln = _sf.mvlgamma

# the ops only this namespace names
i0e, i1, i1e = _sf.special_i0e, _sf.special_i1, _sf.special_i1e
modified_bessel_i1 = i1
bessel_j0, bessel_j1 = _sf.special_bessel_j0, _sf.special_bessel_j1
ndtr, ndtri, log_ndtr = _sf.special_ndtr, _sf.special_ndtri, _sf.special_log_ndtr
entr, erfcx = _sf.special_entr, _sf.special_erfcx
xlog1py, zeta = _sf.special_xlog1py, _sf.special_zeta


def logit(input, eps=None):
    return _ops.logit(input, eps)


def round(input, *, decimals=0):
    return _ops.round(input, decimals=decimals)


def logsumexp(input, dim, keepdim=False):
    return _ops.logsumexp(input, dim, keepdim)


def softmax(input, dim, *, dtype=None):
    return _ops.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    return _ops.log_softmax(input, dim, dtype=dtype)

gammainc, gammaincc = _ops.igamma, _ops.igammac  # issue 19 (_ops/compat_aliases.py)


# torch.special functions not implemented here: named in the error, not an AttributeError
_MISSING = frozenset([
    "airy_ai", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "spherical_bessel_j0"])


def __getattr__(name):
    if name in _MISSING:
        def missing(*args, **kwargs):
            raise NotImplementedError(f"jitorch.special.{name} is not implemented")
        missing.__name__ = name
        return missing
    raise AttributeError(f"module 'jitorch.special' has no attribute '{name}'")
