"""OpInfo entries for jitorch.fft (src/jitorch/_ops/fft_ops.py), against numpy.fft.

Each transform has an entry on real (and, where PyTorch takes them, complex) inputs. Gradients
are checked by finite differences where the result is real (irfft*, hfft*, the shifts) and,
for transforms with complex results, through an entry `fft.<name>.as_real` that returns
`view_as_real(...)` of the transform: real numbers the finite differences can perturb.
Complex inputs' gradients are tests/test_fft.py's (through `jitorch.complex`).
"""
import numpy as np

import jitorch
from jitorch import fft as F
from opinfo import FLOATS, INTS, OpInfo, Sample

COMPLEX = (jitorch.complex64, jitorch.complex128)
DUAL = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}
ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
REAL_IN = ("rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn")


def _arr(dtype, rng, shape):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    a = rng.standard_normal(shape)
    if dtype.kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _samples(name):
    one = name in ONE_D

    def gen(dtype, rng):
        r = lambda *s: _arr(dtype, rng, s)  # noqa: E731
        out = [Sample((r(4, 6),), name="default"), Sample((r(3, 5),), {"norm": "ortho"},
                                                          name="ortho")]
        if one:
            out += [Sample((r(4, 6),), {"n": 9, "dim": 0, "norm": "forward"}, name="pad"),
                    Sample((r(7),), {"n": 4}, name="crop")]
        else:
            out += [Sample((r(2, 4, 6),), {"s": (3, 8), "norm": "forward"}, name="s"),
                    Sample((r(2, 3, 5),), {"dim": (0, 2)}, name="dim")]
        return out
    return gen


def _np_kwargs(name, kw):
    kw = dict(kw)
    if "dim" in kw:
        kw["axis" if name in ONE_D else "axes"] = kw.pop("dim")
    elif "s" in kw:
        kw["axes"] = tuple(range(-len(kw["s"]), 0))
    elif name.endswith("2"):
        kw["axes"] = (-2, -1)
    return kw


def _ref(name):
    def ref(a, **kw):
        norm = kw.pop("norm", None)
        kw = _np_kwargs(name, kw)
        if np.asarray(a).dtype.kind in "iub":
            a = a.astype(np.float32)
        base = name.rstrip("2n") if name not in ONE_D else name
        nd = "n" if name not in ONE_D else ""
        if base == "hfft" and nd:
            r = getattr(np.fft, "irfft" + nd)(np.conj(a), norm=DUAL[norm], **kw)
        elif base == "ihfft" and nd:
            r = np.conj(getattr(np.fft, "rfft" + nd)(a, norm=DUAL[norm], **kw))
        else:
            r = getattr(np.fft, base + nd)(a, norm=norm, **kw)
        return r
    return ref


def _out_dtype(name):
    real = name.startswith(("irfft", "hfft"))

    def rule(d):
        if d.is_complex:
            return d.to_real() if real else d
        if not d.is_floating_point:
            d = jitorch.float32
        return d if real else d.to_complex()
    return rule


def _as_real(fn):
    def f(*a, **kw):
        return jitorch.view_as_real(fn(*a, **kw))
    return f


def _entries():
    out = []
    for name in ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "rfft2", "rfftn",
                 "irfft", "irfft2", "irfftn", "hfft", "hfft2", "hfftn", "ihfft", "ihfft2",
                 "ihfftn"):
        fn = getattr(F, name)
        real_out = name.startswith(("irfft", "hfft"))
        dtypes = FLOATS + INTS + (() if name in REAL_IN else COMPLEX)
        out.append(OpInfo(f"fft.{name}", _ref(name), _samples(name), dtypes=dtypes,
                          out_dtype=_out_dtype(name), grad=real_out, jvp=real_out,
                          method=False, op=fn, atol=1e-4, rtol=1e-4))
        if not real_out:
            ref = _ref(name)
            out.append(OpInfo(f"fft.{name}.as_real",
                              lambda a, _r=ref, **kw: _view_real(_r(a, **kw)), _samples(name),
                              dtypes=FLOATS, out_dtype=lambda d: d, method=False,
                              op=_as_real(fn), atol=1e-4, rtol=1e-4))
    for name in ("fftshift", "ifftshift"):
        def gen(dtype, rng):
            r = lambda *s: _arr(dtype, rng, s)  # noqa: E731
            return [Sample((r(4, 5),), name="all"), Sample((r(3, 5, 2),), {"dim": (0, -1)},
                                                            name="dims"),
                    Sample((r(5, 4),), {"dim": 1}, name="one")]
        npf = getattr(np.fft, name)
        out.append(OpInfo(f"fft.{name}",
                          lambda a, _f=npf, dim=None: _f(a, axes=dim), gen,
                          dtypes=FLOATS + INTS + COMPLEX, method=False, op=getattr(F, name)))
    return out


def _view_real(c):
    c = np.asarray(c)
    return np.stack([c.real, c.imag], -1)


OPINFOS = _entries()
