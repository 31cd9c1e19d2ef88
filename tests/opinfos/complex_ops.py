"""OpInfo entries for complex-number ops (src/jitorch/_ops/complex_ops.py).

Complex dtypes are sampled with random real and imaginary parts. Autograd through complex
tensors is not implemented, so gradients are checked only where the op maps real float64
inputs to real outputs (real, conj, conj_physical, angle, resolve_conj).
"""
import numpy as np

import jitorch
from opinfo import ALL_REAL, FLOATS, OpInfo, Sample

COMPLEX = (jitorch.complex64, jitorch.complex128)


def _r(dtype, rng):
    dtype = np.dtype(dtype)

    def r(*shape):
        if dtype.kind in "iu":
            return rng.integers(-5, 6, size=shape).astype(dtype)
        a = rng.uniform(-3, 3, size=shape)
        if dtype.kind == "c":
            a = a + 1j * rng.uniform(-3, 3, size=shape)
        return np.asarray(a).astype(dtype)
    return r


def _unary_samples(dtype, rng):
    r = _r(dtype, rng)
    return [Sample((r(3, 4),), name="2d"), Sample((r(),), name="0d"),
            Sample((r(0, 2),), name="empty")]


def _grad_unary(dtype, rng):
    return [Sample((rng.uniform(-3, 3, size=(2, 3)),), name="2d"),
            Sample((np.asarray(rng.uniform(0.5, 3)),), name="0d")]


def _pair_samples(dtype, rng):
    r = _r(dtype, rng)
    return [Sample((r(3, 4), r(3, 4)), name="same"), Sample((r(3, 1), r(4)), name="broadcast"),
            Sample((r(), r()), name="0d"), Sample((r(0, 2), r(2)), name="empty")]


def _pairs_of_reals(dtype, rng):
    r = _r(dtype, rng)
    return [Sample((r(3, 2),), name="2d"), Sample((r(2, 3, 2),), name="3d"),
            Sample((r(2),), name="1d"), Sample((r(0, 2),), name="empty")]


def _angle_ref(x):
    if np.iscomplexobj(x):
        return np.angle(x)
    r = np.where(x < 0, np.pi, 0.0).astype(np.result_type(x.dtype, np.float32))
    return np.where(np.isnan(x), np.nan, r)


def _real_rule(d):
    if d.is_complex:
        return d.to_real()
    return d if d.is_floating_point else jitorch.get_default_dtype()


def _angle_samples(dtype, rng):
    out = _unary_samples(dtype, rng)
    if np.dtype(dtype).kind == "f":
        out.append(Sample((np.array([np.nan, -1.0, 0.0, 2.0, -np.inf], dtype),), name="edge"))
    return out


OPINFOS = [
    OpInfo("real", np.real, _unary_samples, dtypes=COMPLEX + FLOATS + (jitorch.int64,),
           method=False, grad_samples=_grad_unary),
    OpInfo("imag", np.imag, _unary_samples, dtypes=COMPLEX, method=False, grad=False,
           jvp=False),
    OpInfo("conj", np.conj, _unary_samples, dtypes=COMPLEX + ALL_REAL,
           grad_samples=_grad_unary),
    OpInfo("conj_physical", np.conj, _unary_samples, dtypes=COMPLEX + ALL_REAL,
           grad_samples=_grad_unary),
    OpInfo("resolve_conj", lambda x: x, _unary_samples, dtypes=COMPLEX + FLOATS,
           grad_samples=_grad_unary),
    OpInfo("is_conj", lambda x: False, _unary_samples, dtypes=COMPLEX + FLOATS, grad=False,
           jvp=False),
    OpInfo("angle", _angle_ref, _angle_samples, dtypes=COMPLEX + ALL_REAL, out_dtype=_real_rule,
           grad_samples=_grad_unary),
    # complex results: autograd through complex tensors is not implemented yet
    OpInfo("polar", lambda a, t: a * np.cos(t) + 1j * a * np.sin(t), _pair_samples,
           out_dtype=lambda d: d.to_complex(), method=False, grad=False, jvp=False),
    OpInfo("complex", lambda a, b: a + 1j * b, _pair_samples,
           out_dtype=lambda d: d.to_complex(), method=False, grad=False, jvp=False),
    OpInfo("view_as_real", lambda x: np.stack([x.real, x.imag], axis=-1), _unary_samples,
           dtypes=COMPLEX, method=False, grad=False, jvp=False),
    OpInfo("view_as_complex", lambda x: x[..., 0] + 1j * x[..., 1], _pairs_of_reals,
           out_dtype=lambda d: d.to_complex(), method=False, grad=False, jvp=False),
]
