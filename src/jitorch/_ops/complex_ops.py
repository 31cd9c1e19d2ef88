"""Complex-number ops: real, imag (views; also the `Tensor.real`/`Tensor.imag` properties with
setters), conj, conj_physical, resolve_conj, is_conj, angle, polar, complex, view_as_real,
view_as_complex.

jitorch has no lazy conjugate bit: `conj()` of a complex tensor materialises the conjugate (so
`is_conj()` is always False and `resolve_conj()` returns its input); of a real tensor it is a
view of the input, as in PyTorch. `real`/`imag`/`view_as_real`/`view_as_complex` are NumPy views
of the same storage, so writes through them reach the base tensor. There is no complex32:
complex results of half inputs are complex64 (`jitorch.chalf` is complex64).
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from .._creation import zeros_like
from .._tensor import Tensor
from .binary import guard, not_implemented
from .registry import PUBLIC, _pt_name, defop
from .batching import ELEMENTWISE, LEADING

# why the compiler runs these ops in the interpreter (their declarations' interpreted=)
_COMPLEX = "complex dtypes are not lowered on CPU"
# these VJPs are written for complex gradients (PyTorch's convention: dL/dRe + i dL/dIm), so
# autograd lets complex gradients into them (autograd/graph.py)
_CGRAD = {"complex_grad": True}

__all__ = ["real", "imag", "conj", "conj_physical", "resolve_conj", "is_conj", "angle", "polar",
           "complex", "view_as_real", "view_as_complex"]


# --- real / imag -----------------------------------------------------------------------------
def _real(input):
    return input.real if input.dtype.kind == "c" else input


def _imag(input):
    if input.dtype.kind != "c":
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return input.imag


# gradients of a real view are real; autograd casts them back to the complex input's dtype
real = defop("real", _real, kind="shape", view=True, method=False,
             vjp=lambda g: g, jvp=lambda t_input: real(t_input), interpreted=_COMPLEX,
             extra=_CGRAD, batch=LEADING)
imag = defop("imag", _imag, kind="shape", view=True, method=False,
             vjp=lambda g: g * 1j, jvp=lambda t_input: imag(t_input), interpreted=_COMPLEX,
             extra=_CGRAD, batch=LEADING)


def _get_real(self):
    return real(self) if self._dtype.category == dt.COMPLEX else self


def _set_real(self, value):
    _get_real(self).copy_(value)


def _set_imag(self, value):
    imag(self).copy_(value)


Tensor.real = property(_get_real, _set_real)
Tensor.imag = property(imag, _set_imag)


# --- conjugation -----------------------------------------------------------------------------
def _conj(input):
    return np.conj(input) if input.dtype.kind == "c" else input


conj = defop("conj", _conj, kind="other", view="maybe",
             vjp=lambda g: g.conj(), jvp=lambda t_input: t_input.conj(), interpreted=_COMPLEX,
             extra=_CGRAD, batch=ELEMENTWISE)

conj_physical = defop("conj_physical", lambda input: np.conj(input), kind="elementwise",
                      inplace=True, vjp=lambda g: g.conj(),
                      jvp=lambda t_input: t_input.conj(), scalar="np.conj({input})",
                      extra={"complex_scalar": True, "complex_grad": True})


def resolve_conj(input):
    """No lazy conjugate bit in jitorch: a tensor is always resolved."""
    return input


def is_conj(input) -> bool:
    return False


for _f in (resolve_conj, is_conj):
    _f.__module__ = "jitorch"
    PUBLIC[_f.__name__] = _f
    setattr(Tensor, _f.__name__, _f)


# --- angle -----------------------------------------------------------------------------------
def _angle(input):
    if input.dtype.kind == "c":
        return np.angle(input)
    # real: pi for negatives, 0 otherwise (also for -0.0, unlike atan2), NaN stays NaN
    r = np.where(input < 0, np.asarray(np.pi, input.dtype), np.zeros((), input.dtype))
    return np.where(np.isnan(input), input, r)


def _angle_vjp(g, input):
    if not input.is_complex():
        return zeros_like(input)
    from .ternary import where
    return where(input == 0, 0.0, g * input / (input * input.conj()).real * 1j)


angle = defop("angle", _angle, kind="elementwise", dtype="float_real", vjp=_angle_vjp,
              jvp=lambda t_input, input: (zeros_like(t_input) if not input.is_complex()
                                          else (t_input / input).imag),
              scalar="np.arctan2(np.imag({input}), np.real({input}) + 0.0)")


# --- construction from real parts ------------------------------------------------------------
def _pair_check(kernel):
    """polar/complex: two real tensors of the same float dtype (no promotion in PyTorch)."""
    def check(a, b, *, out=None):
        for pos, x in ((1, a), (2, b)):
            if not isinstance(x, Tensor):
                raise TypeError(f"{kernel}(): argument {pos} must be Tensor, not "
                                f"{type(x).__name__}")
        ok = (dt.float16, dt.float32, dt.float64)
        if a._dtype not in ok or b._dtype not in ok:
            raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but "
                               f"got {_pt_name(a._dtype)} and {_pt_name(b._dtype)}")
        if a._dtype is not b._dtype:
            raise RuntimeError(f"Expected object of scalar type {_pt_name(a._dtype)} but got "
                               f"scalar type {_pt_name(b._dtype)} for second argument")
        if kernel == "polar" and a._dtype is dt.float16:
            not_implemented("polar_cpu", a._dtype)
    return check


def _to_complex_rule(d):
    return d, d.to_complex()


def _make_complex(re, im):
    re, im = np.broadcast_arrays(re, im)
    out = np.empty(re.shape, np.result_type(re.dtype, np.complex64))
    out.real = re
    out.imag = im
    return out


def _polar(abs, angle):
    return _make_complex(abs * np.cos(angle), abs * np.sin(angle))


def _polar_vjp(g, abs, angle, result):
    unit = polar(abs * 0 + 1, angle)
    gc = g.conj()
    return (gc * unit).real, (gc * result * 1j).real


defop("polar", _polar, tensors=("abs", "angle"), kind="elementwise", method=False,
      dtype=_to_complex_rule, vjp=_polar_vjp,
      jvp=lambda t_abs, t_angle, abs, angle, result:
      t_abs * polar(abs * 0 + 1, angle) + result * 1j * t_angle,
      scalar="complex({abs} * math.cos({angle}), {abs} * math.sin({angle}))",
      autocast={"cpu": "fp32"})
polar = guard("polar", _pair_check("polar"))


defop("complex", lambda real, imag: _make_complex(real, imag), tensors=("real", "imag"),
      kind="elementwise", method=False, dtype=_to_complex_rule,
      vjp=lambda g: (real(g), imag(g)),
      jvp=lambda t_real, t_imag: complex(t_real, t_imag), extra=_CGRAD,
      scalar="complex({real}, {imag})")
complex = guard("complex", _pair_check("complex"))


# --- real <-> complex views ------------------------------------------------------------------
def _view_as_real(input):
    if input.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    re = input.real  # a view with the complex array's strides
    return np.lib.stride_tricks.as_strided(re, input.shape + (2,),
                                           re.strides + (re.itemsize,))


def _view_as_complex_check(input, *, out=None):
    if not isinstance(input, Tensor):
        raise TypeError(f"view_as_complex(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    d = input._dtype
    if d is dt.float16:
        raise NotImplementedError("view_as_complex: jitorch has no complex32 (chalf) dtype")
    if d not in (dt.float32, dt.float64):
        raise RuntimeError(f"view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {_pt_name(d)}")
    if input.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if input.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input.numel() == 0:
        return  # NumPy gives empty arrays zero strides: nothing to check
    if input.stride(-1) != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    # a size-1 dimension's stride is never used (and NumPy may report any value for it)
    if any(st % 2 for st, n in zip(input.stride()[:-1], input.shape[:-1]) if n > 1):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if input.storage_offset() % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")


def _view_as_complex(input):
    if input.dtype.kind != "f" or input.ndim == 0 or input.shape[-1] != 2:
        raise RuntimeError("view_as_complex: expected a float tensor with a last dimension of "
                           "size 2")
    cd = np.complex128 if input.dtype == np.float64 else np.complex64
    if input.size == 0:
        return np.empty(input.shape[:-1], cd)
    return input.view(cd)[..., 0]


view_as_real = defop("view_as_real", _view_as_real, kind="shape", view=True, method=False,
                     vjp=lambda g: view_as_complex(g.contiguous()),
                     jvp=lambda t_input: view_as_real(t_input), interpreted=_COMPLEX,
                     extra=_CGRAD, batch=LEADING)
defop("view_as_complex", _view_as_complex, kind="shape", view=True, method=False,
      vjp=lambda g: view_as_real(g), jvp=lambda t_input: view_as_complex(t_input.contiguous()),
      interpreted=_COMPLEX, extra=_CGRAD, batch=LEADING, autocast={"cpu": "fp32"})
view_as_complex = guard("view_as_complex", _view_as_complex_check)
