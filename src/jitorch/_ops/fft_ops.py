"""The discrete Fourier transforms of `jitorch.fft` as registry ops, with fftshift/ifftshift.

Each public transform (`fft`, `ifft`, `rfft`, `irfft`, `hfft`, `ihfft` and their 2-D and N-D
forms) is one registry op `fft_<name>` (PyTorch's ATen name) whose public function is
`jitorch.fft.<name>`. Eagerly they run pocketfft through `scipy.fft` (float32 stays complex64);
inside `@script` they lower to the same `np.fft.*` calls, made available to Numba by rocket-fft
(`script/targets/cpu/lower_fft.py`). The meaning of every argument comes from `fft_plan.plan`.

Gradients follow PyTorch's convention for complex tensors (the gradient of a real loss with
respect to z is dL/dRe(z) + i dL/dIm(z)), under which the VJP of a complex-linear map is its
adjoint: a transform of the opposite direction with the dual norm, the input's padding undone
(crop for pad, zero-pad for crop). r2c transforms fill the discarded half with zeros before the
adjoint c2c; c2r transforms double the bins whose mirror image the c2r folded in (PyTorch's
`fft_c2r_backward`). Real inputs get the real part. The ops declare `complex_grad`: autograd
lets complex gradients into an op only when its VJP is written for them.
"""
from __future__ import annotations

import numpy as np

from .. import _dtype as dt
from . import infer
from .fft_plan import DUAL, Spec, out_dtype, plan
from .registry import OPS, defop

__all__: list = []  # nothing at the top level: the functions live in `jitorch.fft`

SPECS = {s.name: s for s in (
    Spec("fft", "c2c", True, "1"), Spec("ifft", "c2c", False, "1"),
    Spec("fft2", "c2c", True, "2"), Spec("ifft2", "c2c", False, "2"),
    Spec("fftn", "c2c", True, "n"), Spec("ifftn", "c2c", False, "n"),
    Spec("rfft", "r2c", True, "1"), Spec("rfft2", "r2c", True, "2"),
    Spec("rfftn", "r2c", True, "n"),
    Spec("irfft", "c2r", False, "1"), Spec("irfft2", "c2r", False, "2"),
    Spec("irfftn", "c2r", False, "n"),
    Spec("hfft", "c2r", False, "1", True), Spec("hfft2", "c2r", False, "2", True),
    Spec("hfftn", "c2r", False, "n", True),
    Spec("ihfft", "r2c", True, "1", True), Spec("ihfft2", "r2c", True, "2", True),
    Spec("ihfftn", "r2c", True, "n", True),
)}

PUBLIC_FFT: dict = {}  # jitorch.fft name -> public function (read by jitorch/fft/__init__.py)


# --- implementations ------------------------------------------------------------------------------
def compute(spec: Spec, a: np.ndarray, p) -> np.ndarray:
    """The transform of array `a` under plan `p`: `scipy.fft` (pocketfft, as NumPy's and
    rocket-fft's, with NumPy's signatures; it ran 1.2-2.5x faster than `numpy.fft` on the
    bench/fft.py sizes), batches spread over `jitorch.get_num_threads()` workers as PyTorch's
    intra-op threads (each 1-D transform is one worker's: results do not depend on the count).
    The lowering emits the same calls as `np.fft.*`."""
    import scipy.fft as sf
    from .._threads import get_num_threads
    cd = np.dtype(p.out_dtype.to_complex().np if spec.family != "r2c" else p.out_dtype.to_real().np)
    if a.dtype != cd:
        a = a.astype(cd)
    s, axes, w = p.sizes, p.dims, get_num_threads()
    if spec.family == "c2c":
        f = sf.fftn if spec.forward else sf.ifftn
        r = f(a, s, axes, p.norm, workers=w)
    elif spec.family == "r2c":
        if spec.hermitian:
            r = np.conj(sf.rfftn(a, s, axes, DUAL[p.norm], workers=w))
        else:
            r = sf.rfftn(a, s, axes, p.norm, workers=w)
    elif spec.hermitian:
        r = sf.irfftn(np.conj(a), s, axes, DUAL[p.norm], workers=w)
    else:
        r = sf.irfftn(a, s, axes, p.norm, workers=w)
    return r.astype(p.out_dtype.np, copy=False)


def _impl(spec: Spec):
    def run(input, s, dim, norm):
        p = plan(spec, input.shape, dt.from_numpy_dtype(input.dtype), s, dim, norm)
        return compute(spec, input, p)
    if spec.arity == "1":
        def impl(input, n=None, dim=-1, norm=None):
            return run(input, n, dim, norm)
    elif spec.arity == "2":
        def impl(input, s=None, dim=(-2, -1), norm=None):
            return run(input, s, dim, norm)
    else:
        def impl(input, s=None, dim=None, norm=None):
            return run(input, s, dim, norm)
    impl.__doc__ = _DOCS[spec.family].format(name=spec.name)
    return impl


_DOCS = {
    "c2c": "{name}: the discrete Fourier transform of a complex (or promoted real) input.",
    "r2c": "{name}: the one-sided transform of a real input (last dim n // 2 + 1).",
    "c2r": "{name}: a real signal from its one-sided spectrum (last dim n, default 2 * (m - 1)).",
}


# --- gradients ----------------------------------------------------------------------------------
def _fn(name):
    return OPS["fft_" + name].fn


def _resize_impl(input, dims, sizes):
    """Crop or zero-pad at the end of each of `dims` to `sizes`."""
    shape = list(input.shape)
    for d, n in zip(dims, sizes):
        shape[d] = n
    out = np.zeros(shape, input.dtype)
    common = tuple(slice(0, min(a, b)) for a, b in zip(input.shape, shape))
    out[common] = input[common]
    return out


def _fold_impl(input, dim, n):
    """Double bins 1 .. n - (n // 2 + 1) along `dim`: the bins whose mirror image a c2r of
    output size n folded in (PyTorch's fft_c2r_backward)."""
    out = input.copy()
    idx = [slice(None)] * input.ndim
    idx[dim] = slice(1, n - (n // 2 + 1) + 1)
    out[tuple(idx)] *= 2
    return out


# private ops of the VJPs (so gradients of gradients stay in ops written for complex values)
_fft_resize = defop(
    "_fft_resize", _resize_impl, kind="shape", method=False, function=False,
    vjp=lambda g, input_shape, dims: _fft_resize(g, dims, tuple(input_shape[d] for d in dims)),
    jvp=lambda t_input, dims, sizes: _fft_resize(t_input, dims, sizes), infer=infer.same,
    extra={"complex_grad": True})
_fft_fold = defop(
    "_fft_fold", _fold_impl, kind="shape", method=False, function=False,
    vjp=lambda g, dim, n: _fft_fold(g, dim, n), jvp=lambda t_input, dim, n: _fft_fold(
        t_input, dim, n), infer=infer.same, extra={"complex_grad": True})


def _resize(x, dims, sizes):
    """The adjoint of the transforms' own padding (crop for pad, zero-pad for crop)."""
    if all(x.shape[d] == n for d, n in zip(dims, sizes)):
        return x
    return _fft_resize(x, tuple(dims), tuple(sizes))


def _real_if(g, d):
    from .complex_ops import real
    return g if d.category == dt.COMPLEX else real(g)


def _vjp(spec: Spec, g, input_shape, input_dtype, s, dim, norm):
    from .complex_ops import real
    p = plan(spec, tuple(input_shape), input_dtype, s, dim, norm)
    full = [input_shape[d] for d in p.dims]
    if spec.family == "c2c":
        back = _fn("ifftn" if spec.forward else "fftn")
        gx = _resize(back(g, None, p.dims, DUAL[p.norm]), p.dims, full)
        return _real_if(gx, input_dtype)
    if spec.family == "r2c":
        nrm = DUAL[p.norm] if spec.hermitian else p.norm  # the norm of the rfft it is
        if spec.hermitian:
            g = g.conj()
        g = _resize(g, p.dims[-1:], p.sizes[-1:])  # the discarded half: zeros
        gx = real(_fn("ifftn")(g, None, p.dims, DUAL[nrm]))
        return _resize(gx, p.dims, full)
    nrm = DUAL[p.norm] if spec.hermitian else p.norm  # the norm of the irfft it is
    gi = _fn("rfftn")(g, None, p.dims, DUAL[nrm])
    n = p.sizes[-1]
    if n - (n // 2 + 1) > 0:  # bins whose mirror images the c2r folded in count twice
        gi = _fft_fold(gi, p.dims[-1], n)
    gi = _resize(gi, p.dims, full)
    if spec.hermitian:
        gi = gi.conj()
    return _real_if(gi, input_dtype)


def _rules(spec: Spec):
    """(vjp, jvp) with the parameter names of the op's arity (autograd reads them)."""
    op = lambda: OPS["fft_" + spec.name].fn  # noqa: E731
    if spec.arity == "1":
        def vjp(g, input_shape, input_dtype, n, dim, norm):
            return _vjp(spec, g, input_shape, input_dtype, n, dim, norm)

        def jvp(t_input, n, dim, norm):
            return op()(t_input, n, dim, norm)
    else:
        def vjp(g, input_shape, input_dtype, s, dim, norm):
            return _vjp(spec, g, input_shape, input_dtype, s, dim, norm)

        def jvp(t_input, s, dim, norm):
            return op()(t_input, s, dim, norm)
    return vjp, jvp


def _infer(spec: Spec):
    def rule(a):
        t = a.tensor(0)
        return infer.Tensor(out_dtype(spec, t.dtype), t.rank)
    return rule


# PyTorch's CPU autocast fp32 list names these transforms (not hfft2/ihfft2/hfftn/ihfftn)
_AUTOCAST_FP32 = {"fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2",
                  "irfft2", "rfftn", "irfftn", "hfft", "ihfft"}

for _spec in SPECS.values():
    _vjp_rule, _jvp_rule = _rules(_spec)
    _f = defop("fft_" + _spec.name, _impl(_spec), kind="other", method=False, function=False,
               export_as=_spec.name, vjp=_vjp_rule, jvp=_jvp_rule, infer=_infer(_spec),
               extra={"complex_grad": True, "fft_spec": _spec},
               autocast={"cpu": "fp32"} if _spec.name in _AUTOCAST_FP32 else None)
    _f.__module__ = "jitorch.fft"
    PUBLIC_FFT[_spec.name] = _f


# --- fftshift / ifftshift -----------------------------------------------------------------------
def shift_axes(ndim: int, dim) -> tuple:
    """The dims a shift rolls: all for None, else the wrapped dims (repeats roll twice)."""
    from ._util import wrap_dim
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        return tuple(wrap_dim(d, ndim) for d in dim)
    return (wrap_dim(dim, ndim),)


def _shift_impl(inverse: bool):
    def impl(input, dim=None):
        axes = shift_axes(input.ndim, dim)
        if not axes:
            return input.copy()
        shifts = [-(input.shape[a] // 2) if inverse else input.shape[a] // 2 for a in axes]
        return np.roll(input, shifts, axes)
    return impl


for _name, _inv in (("fftshift", False), ("ifftshift", True)):
    _other = "ifftshift" if _name == "fftshift" else "fftshift"
    _f = defop("fft_" + _name, _shift_impl(_inv), kind="shape", method=False, function=False,
               export_as=_name,
               vjp=(lambda o: lambda g, dim: OPS["fft_" + o].fn(g, dim))(_other),
               jvp=(lambda o: lambda t_input, dim: OPS["fft_" + o].fn(t_input, dim))(_name),
               infer=infer.same, extra={"complex_grad": True, "fft_shift_inverse": _inv},
               doc=f"{_name}(input, dim=None): roll each dim by "
                   f"{'-(n // 2)' if _inv else 'n // 2'} (the zero frequency "
                   f"{'back to the start' if _inv else 'to the centre'}).")
    _f.__module__ = "jitorch.fft"
    PUBLIC_FFT[_name] = _f

del _spec, _vjp_rule, _jvp_rule, _f, _name, _inv, _other
