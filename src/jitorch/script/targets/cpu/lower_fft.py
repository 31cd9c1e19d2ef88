"""Lowering of the `jitorch.fft` ops (`_ops/fft_ops.py`) to `np.fft.*` calls inside njit.

rocket-fft registers NumPy's FFT functions with Numba (pocketfft, as NumPy's, compiled into the
program and run without the GIL; float32 stays complex64). Each transform becomes the same call
its eager implementation makes (`fft_ops.compute`): `np.fft.fftn/ifftn/rfftn/irfftn` over the
plan's axes with the plan's sizes, the hermitian forms as a conjugate around an rfftn/irfftn
with the dual norm. What the plan reads from the input (its sizes along the transform dims) is
read at run time and checked with PyTorch's message; everything else (dims, norm, given sizes,
dtypes) is static, so an invalid static argument is left to the interpreter, which raises
PyTorch's error. fftshift/ifftshift become slice copies along each rolled dim.

rocket-fft is an optional dependency: without it the ops are NotLowered with the reason, and the
program runs in the interpreter (eager NumPy), as any op without a lowering.
"""
from __future__ import annotations

from .... import _dtype as dt
from ...._ops import fft_plan
from ...._ops.registry import OPS
from ... import ir
from ...codegen import NotLowered, literal
from ...codegen.emitter import Emitter, np_type
from ...codegen.lowering import lowers

_REAL = (dt.float32, dt.float64)
_COMPLEX = (dt.complex64, dt.complex128)
_INTS = (dt.bool, dt.uint8, dt.int8, dt.int16, dt.int32, dt.int64)


def rocket_fft_available() -> bool:
    try:
        import rocket_fft  # noqa: F401  (registers numpy.fft with Numba on import)
    except ImportError:
        return False
    return True


def _import(em: Emitter) -> None:
    if not rocket_fft_available():
        raise NotLowered("fft ops inside compiled code need the rocket-fft package (pip install "
                         "rocket-fft); without it they run in the interpreter")
    line = "import rocket_fft  # noqa: F401  (numpy.fft inside njit)"
    em.global_line(line)


def _tensor(em: Emitter, v: ir.Value) -> ir.TensorType:
    """The FFT ops' operand type: real, integer or complex (Emitter.tensor refuses complex,
    which most lowerings do not handle; these do)."""
    t = v.type
    if not isinstance(t, ir.TensorType) or t.dtype is None or t.ndim is None:
        raise NotLowered(f"value {v}: dtype or rank unknown")
    if t.dtype not in _REAL + _COMPLEX + _INTS:
        raise NotLowered(f"fft of dtype {t.dtype} is not lowered")
    return t


def _statics(em: Emitter, n: ir.Node, first: int = 1):
    try:
        return [em.const(v) for v in n.inputs[first:]]
    except NotLowered:
        raise NotLowered(f"op {n.op}: dims and norm must be constants") from None


def _size_arg(em: Emitter, spec, v: ir.Value, op: str):
    """`n` / `s` as (static stand-in for the plan, run-time expressions or None): a size given
    at run time (`n=x.shape[-1]`) is checked when the program runs."""
    if em.is_const(v):
        c = em.const(v)
        return c, None
    if spec.arity == "1":
        return 1, [em.name(v)]
    if v.uid in em.lists:
        items = em.lists[v.uid]
        exprs = [literal.integer(em.const(x)) if em.is_const(x) else em.name(x) for x in items]
        return [1] * len(items), exprs
    raise NotLowered(f"op {op}: sizes of unknown length")


def _sizes(em: Emitter, spec, x: str, dims, req, given) -> str:
    """A run-time tuple of the signal sizes (fft_plan.plan's), each checked as PyTorch does."""
    parts = []
    for k, (d, n) in enumerate(zip(dims, req)):
        last = k == len(dims) - 1
        if given is not None and spec.arity == "1":
            expr = given[k]  # n: no -1 default (PyTorch rejects it as a size)
        elif given is not None:
            expr = given[k]
            if spec.family == "c2r" and last:
                expr = f"{expr} if {expr} != -1 else 2 * ({x}.shape[{d}] - 1)"
            else:
                expr = f"{expr} if {expr} != -1 else {x}.shape[{d}]"
        elif n is not None:
            parts.append(literal.integer(n))  # checked statically (the plan raised)
            continue
        else:
            expr = f"2 * ({x}.shape[{d}] - 1)" if spec.family == "c2r" and last else \
                f"{x}.shape[{d}]"
        nm = em.fresh("n")
        em.emit(f"{nm} = {expr}")
        em.emit(f"if {nm} < 1:")
        em.indent += 1
        em.raise_("RuntimeError", "Invalid number of data points (", (nm,), ") specified")
        em.indent -= 1
        parts.append(nm)
    return "(" + "".join(p + ", " for p in parts) + ")"


@lowers(*("fft_" + name for name in (
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "rfft2", "rfftn", "irfft",
    "irfft2", "irfftn", "hfft", "hfft2", "hfftn", "ihfft", "ihfft2", "ihfftn")), target="cpu")
def lower_transform(em: Emitter, n: ir.Node) -> None:
    spec = OPS[n.op].extra["fft_spec"]
    v = n.inputs[0]
    t = _tensor(em, v)
    s, given = _size_arg(em, spec, n.inputs[1], n.op)
    dim, norm = _statics(em, n, 2)
    try:  # the static part of the plan: PyTorch's argument errors come from the interpreter
        mode = fft_plan.norm_mode(norm)
        cd = fft_plan.input_dtype(spec, t.dtype)
        dims, req = fft_plan.dims_and_sizes(spec, t.ndim, s, dim)
        if any(r is not None and r < 1 for r in req):
            raise RuntimeError("invalid size")
    except (RuntimeError, IndexError, TypeError) as e:
        raise NotLowered(f"op {n.op}: {type(e).__name__} for these arguments") from None
    _import(em)
    x = em.fresh("fx")
    em.emit(f"{x} = {em.name(v)}")
    need = cd  # r2c: the real dtype; c2r: the complex one
    if spec.family == "c2c":  # pocketfft takes a real input to a c2c directly
        need = t.dtype if t.dtype in _REAL + _COMPLEX else cd.to_real()
    if t.dtype is not need:
        y = em.fresh("fx")
        em.emit(f"{y} = {x}.astype({np_type(need)})")
        x = y
    sizes = _sizes(em, spec, x, dims, req, given)
    axes = "(" + "".join(literal.integer(d) + ", " for d in dims) + ")"
    out = em.fresh("ff")
    if spec.family == "c2c":
        fn = "fftn" if spec.forward else "ifftn"
        em.emit(f"{out} = np.fft.{fn}({x}, {sizes}, {axes}, {literal.text(mode)})")
    elif spec.family == "r2c":
        if spec.hermitian:
            em.emit(f"{out} = np.conj(np.fft.rfftn({x}, {sizes}, {axes}, "
                    f"{literal.text(fft_plan.DUAL[mode])}))")
        else:
            em.emit(f"{out} = np.fft.rfftn({x}, {sizes}, {axes}, {literal.text(mode)})")
    elif spec.hermitian:
        em.emit(f"{out} = np.fft.irfftn(np.conj({x}), {sizes}, {axes}, "
                f"{literal.text(fft_plan.DUAL[mode])})")
    else:
        em.emit(f"{out} = np.fft.irfftn({x}, {sizes}, {axes}, {literal.text(mode)})")
    em.bind(n.outputs[0], out)


@lowers("fft_fftshift", "fft_ifftshift", target="cpu")
def lower_shift(em: Emitter, n: ir.Node) -> None:
    from ...._ops.fft_ops import shift_axes
    inverse = OPS[n.op].extra["fft_shift_inverse"]
    v = n.inputs[0]
    t = _tensor(em, v)
    dim, = _statics(em, n)
    try:
        axes = shift_axes(t.ndim, dim)
    except (RuntimeError, IndexError, TypeError) as e:
        raise NotLowered(f"op {n.op}: {type(e).__name__} for these arguments") from None
    x = em.fresh("sx")
    em.emit(f"{x} = {em.name(v)}")
    if not axes:
        out = em.fresh("sh")
        em.emit(f"{out} = {x}.copy()")
        em.bind(n.outputs[0], out)
        return
    for a in axes:  # one roll per listed dim (a repeated dim rolls twice, as np.roll)
        m, k = em.fresh("m"), em.fresh("k")
        em.emit(f"{m} = {x}.shape[{a}]")
        # fftshift rolls by m // 2; ifftshift by -(m // 2), i.e. by m - m // 2
        em.emit(f"{k} = {m} - {m} // 2" if inverse else f"{k} = {m} // 2")
        y = em.fresh("sh")
        em.emit(f"{y} = np.empty({x}.shape, {np_type(t.dtype)})")

        em.emit(f"{y}[{_index(t.ndim, a, f'{k}:')}] = {x}[{_index(t.ndim, a, f':{m} - {k}')}]")
        em.emit(f"{y}[{_index(t.ndim, a, f':{k}')}] = {x}[{_index(t.ndim, a, f'{m} - {k}:')}]")
        x = y
    em.bind(n.outputs[0], x)


def _index(ndim: int, dim: int, sl: str) -> str:
    idx = [":"] * ndim
    idx[dim] = sl
    return ", ".join(idx)


@lowers("_fft_resize", target="cpu")
def lower_resize(em: Emitter, n: ir.Node) -> None:
    """Crop / zero-pad at the end of the given dims (the VJPs' adjoint of the padding)."""
    v = n.inputs[0]
    t = _tensor(em, v)
    dims, sizes = _statics(em, n)
    x = em.fresh("rx")
    em.emit(f"{x} = {em.name(v)}")
    shape = [f"{x}.shape[{d}]" for d in range(t.ndim)]
    for d, m in zip(dims, sizes):
        shape[d] = literal.integer(m)
    out = em.fresh("rz")
    em.emit(f"{out} = np.zeros(({''.join(s + ', ' for s in shape)}), {np_type(t.dtype)})")
    idx = ", ".join(f":min({x}.shape[{d}], {out}.shape[{d}])" for d in range(t.ndim))
    em.emit(f"{out}[{idx}] = {x}[{idx}]" if t.ndim else f"{out}[()] = {x}[()]")
    em.bind(n.outputs[0], out)


@lowers("_fft_fold", target="cpu")
def lower_fold(em: Emitter, n: ir.Node) -> None:
    """Double the bins 1 .. n - (n // 2 + 1) along `dim` (the c2r VJP)."""
    v = n.inputs[0]
    t = _tensor(em, v)
    dim, size = _statics(em, n)
    out = em.fresh("fo")
    em.emit(f"{out} = {em.name(v)}.copy()")
    hi = size - (size // 2 + 1) + 1
    em.emit(f"{out}[{_index(t.ndim, dim, f'1:{hi}')}] *= 2")
    em.bind(n.outputs[0], out)
