"""The in-place samplers, bound as Tensor methods: `uniform_`, `normal_`, `bernoulli_`,
`random_`, `exponential_`, `geometric_`, `log_normal_`, `cauchy_`, plus the `Tensor.bernoulli`
and `Tensor.multinomial` methods.

Invariants: each draws from `generator=` (else the default generator) through `_random`'s
helpers and PyTorch's transforms (jitorch/_mt19937.py), checks PyTorch's argument errors before
touching the tensor, and overwrites the values like `fill_` does (in-place rules, a version
bump, no gradient through the new values).
"""
from __future__ import annotations

import builtins

import numpy as np

from . import _dtype as dt
from . import _mt19937 as _mt
from ._creation import _num
from ._random import (_C_NAMES, _DIGITS, _P_MSG, _check_int_range, _check_p, _check_std, _draw,
                      _draw_ints, _inplace_write, _int_arg, _normal_values, _not_impl, _pt,
                      _require_float, _scalar, _uniform_values, bernoulli, multinomial)
from ._tensor import Tensor


def uniform_(self, from_=0.0, to=1.0, *, generator=None) -> Tensor:
    """Fill with U[from, to) (complex: each part)."""
    d = self._dtype
    _require_float(d, "check_uniform_bounds")
    a, b = _scalar(from_, "uniform_", "from"), _scalar(to, "uniform_", "to")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found "
                           f"from={_num(float(a))} > to={_num(float(b))}")
    return _inplace_write(self, _uniform_values(generator, "uniform_", self._data.shape, d,
                                                builtins.float(a), builtins.float(b)))


def normal_(self, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    d = self._dtype
    _require_float(d, "normal_kernel_cpu")
    m, s = _scalar(mean, "normal_", "mean"), _scalar(std, "normal_", "std")
    _check_std(s)
    return _inplace_write(self, _normal_values(generator, "normal_", self._data.shape, d,
                                               builtins.float(m), builtins.float(s),
                                               self.is_contiguous()))


def bernoulli_(self, p=0.5, *, generator=None) -> Tensor:
    """Fill with 1 (probability p, a float or a tensor broadcastable to self) or 0."""
    shape = self._data.shape
    if isinstance(p, Tensor):
        try:
            probs = np.broadcast_to(p._data, shape)
        except ValueError:
            raise RuntimeError(_expand_msg(shape, p._data.shape)) from None
        if not np.all((probs >= 0) & (probs <= 1)):
            raise RuntimeError(_P_MSG)
        hits = _draw(generator, "bernoulli_", _mt.bernoulli_tensor, probs)
    else:
        probs = _check_p(_scalar(p, "bernoulli_", "p"))
        hits = _draw(generator, "bernoulli_", _mt.bernoulli_scalar, self.numel(), probs)
    return _inplace_write(self, hits.reshape(shape))


def _expand_msg(target: tuple, src: tuple) -> str:
    n = len(target)
    s = (1,) * (n - len(src)) + tuple(src)
    for i in range(n - 1, -1, -1):
        if s[i] != target[i] and s[i] != 1:
            return (f"The expanded size of the tensor ({target[i]}) must match the existing "
                    f"size ({s[i]}) at non-singleton dimension {i}.  Target sizes: "
                    f"{list(target)}.  Tensor sizes: {list(src)}")
    return f"expand: the number of sizes provided ({n}) must be greater or equal to the " \
           f"number of dimensions in the tensor ({len(src)})"


def exponential_(self, lambd=1.0, *, generator=None) -> Tensor:
    d = self._dtype
    if d.category != dt.FLOAT:
        raise RuntimeError("Exponential distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified {_pt(d)}")
    lam = _scalar(lambd, "exponential_", "lambd")
    if not lam > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found "
                           f"lambda={_num(float(lam))}")
    e = _draw(generator, "exponential_", _mt.exponential, self.numel(), builtins.float(lam))
    return _inplace_write(self, e.reshape(self._data.shape))


def random_(self, from_=None, to=None, *, generator=None) -> Tensor:
    """`random_()`: integers in [0, 2**mantissa] for floats, [0, max] for integers;
    `random_(to)`: [0, to); `random_(from, to)`: [from, to) (`to=None`: up to the max)."""
    d = self._dtype
    if d.category == dt.COMPLEX:
        raise _not_impl("random_", d)
    shape, n = self._data.shape, self.numel()
    if from_ is None and to is None:
        if d.category == dt.FLOAT:
            modulus = (1 << _DIGITS[d.name]) + 1
        else:
            modulus = 2 if d is dt.bool else builtins.int(np.iinfo(d.np).max) + 1
        vals = _draw(generator, "random_", _mt.int_full, n, d.name, modulus)
        return _inplace_write(self, vals.reshape(shape))
    else:
        if to is None:  # random_(to)
            lo, hi = 0, _int_arg(from_, "random_", "to", 1)
        else:
            lo = _int_arg(0 if from_ is None else from_, "random_", "from", 1)
            hi = _int_arg(to, "random_", "to", 2)
        _check_int_range(lo, hi, d)
    return _inplace_write(self, _draw_ints(generator, "random_", lo, hi, shape, d))


def geometric_(self, p, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (>= 1)."""
    p = _scalar(p, "geometric_", "p")
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_num(float(p))}")
    if self._dtype.category == dt.COMPLEX:
        raise _not_impl("geometric_cpu", self._dtype)
    g = _draw(generator, "geometric_", _mt.geometric, self.numel(), builtins.float(p))
    return _inplace_write(self, g.reshape(self._data.shape))


def log_normal_(self, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    d = self._dtype
    if d.category != dt.FLOAT:
        raise _not_impl("log_normal_cpu", d)
    m, s = _scalar(mean, "log_normal_", "mean"), _scalar(std, "log_normal_", "std")
    if not s > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_num(float(s))}")
    v = _draw(generator, "log_normal_", _mt.log_normal, self.numel(), builtins.float(m),
              builtins.float(s))
    return _inplace_write(self, v.reshape(self._data.shape))


def cauchy_(self, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    d = self._dtype
    if d.category != dt.FLOAT:
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. "
                           f"dtype must be a floating point but you specified "
                           f"{_C_NAMES.get(d.name, d.name)}")
    m, s = _scalar(median, "cauchy_", "median"), _scalar(sigma, "cauchy_", "sigma")
    if not s > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_num(float(s))}")
    c = _draw(generator, "cauchy_", _mt.cauchy, self.numel(), builtins.float(m),
              builtins.float(s))
    return _inplace_write(self, c.reshape(self._data.shape))


def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    return multinomial(self, num_samples, replacement, generator=generator)


for _f in (uniform_, normal_, bernoulli_, exponential_, random_, geometric_, log_normal_,
           cauchy_):
    _f.__qualname__ = "Tensor." + _f.__name__
    setattr(Tensor, _f.__name__, _f)
Tensor.bernoulli = _bernoulli_method
Tensor.multinomial = _multinomial_method
