"""Lowering of matmul / mm / bmm / addmm to `targets/cpu/blas.py` (inside njit, without the GIL).

Every product becomes `mm_into(a, b, c, accumulate)` or `matmul2(a, b)` on 2-D views (blas.py's
functions called through symbols: compiled once per dtype, never inside each kernel): blas.py
chooses per call, from the run-time sizes and strides, between its register-tiled small-M kernel,
BLAS gemm/gemv with transpose flags (a transposed view such as `x @ w.t()` is never copied) and
integer loops. Vectors become 1-row/1-column views (`v[None, :]`), batched products loop over
the batch with `mm_into(a[k], b[k], out[k])`, addmm with alpha == 1 accumulates the product into
the broadcast `beta * input`. Operands of one dtype are lowered: float32/float64, and integer
dtypes (loops, wrapping like PyTorch); mixed dtypes and bool are left to the interpreter, which
raises PyTorch's error. Every size relation is checked with PyTorch's message before the call.
"""
from __future__ import annotations

from .... import _dtype as dt
from ... import ir
from ...codegen import NotLowered
from ...codegen.emitter import Emitter, np_type, typed_literal
from ...codegen.lowering import lowers

_DTYPES = (dt.float32, dt.float64, dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8)
BLAS_MODULE = "jitorch.script.targets.cpu.blas"


def _import(em: Emitter) -> None:
    from . import blas
    # (through symbols: blas.py's code is compiled once, never inside each kernel)
    line = f"from {BLAS_MODULE} import matmul2_by_symbol as matmul2, " \
        f"mm_into_by_symbol as mm_into  # blas {blas.SOURCE_HASH}"
    em.global_line(line)


def _operands(em: Emitter, n: ir.Node, a: ir.Value, b: ir.Value):
    ta, tb = em.tensor(a), em.tensor(b)
    if ta.dtype is not tb.dtype or ta.dtype not in _DTYPES:
        raise NotLowered(f"op {n.op}: operands {ta.dtype} and {tb.dtype} (one float or integer "
                         "dtype is lowered)")
    _import(em)
    # locals, not the expressions: a loop-carried array's name may be rebound later
    an, bn = em.fresh("ma"), em.fresh("mb")
    em.emit(f"{an} = {em.name(a)}")
    em.emit(f"{bn} = {em.name(b)}")
    return ta, tb, an, bn


def _check(em: Emitter, cond: str, *parts) -> None:
    em.emit(f"if {cond}:")
    em.indent += 1
    em.raise_("RuntimeError", *parts)
    em.indent -= 1


def _check_2d(em, a, b, ka, kb):
    _check(em, f"{a}.shape[{ka}] != {b}.shape[{kb}]",
           "mat1 and mat2 shapes cannot be multiplied (", (f"{a}.shape[{ka - 1}]",), "x",
           (f"{a}.shape[{ka}]",), " and ", (f"{b}.shape[{kb}]",), "x",
           (f"{b}.shape[{kb + 1}]",), ")")


def _batched(em: Emitter, ta, tb, an, bn, d) -> str:
    """a (B,M,K) or (M,K) times b (B,K,N) or (K,N); batch 1 broadcasts."""
    out = em.fresh("mm")
    ka, kb = ta.ndim - 1, tb.ndim - 2
    _check(em, f"{an}.shape[{ka}] != {bn}.shape[{kb}]",
           "Expected size for first two dimensions of batch2 tensor to be: [",
           (f"{bn}.shape[0]" if tb.ndim == 3 else "1",), ", ", (f"{an}.shape[{ka}]",),
           "] but got: [", (f"{bn}.shape[0]" if tb.ndim == 3 else "1",), ", ",
           (f"{bn}.shape[{kb}]",), "].")
    nb = em.fresh("nb")
    if ta.ndim == 3 and tb.ndim == 3:
        em.emit(f"{nb} = {an}.shape[0] if {an}.shape[0] != 1 else {bn}.shape[0]")
        _check(em, f"{an}.shape[0] != {nb} and {an}.shape[0] != 1 or "
                   f"{bn}.shape[0] != {nb} and {bn}.shape[0] != 1",
               "The size of tensor a (", (f"{an}.shape[0]",),
               ") must match the size of tensor b (", (f"{bn}.shape[0]",),
               ") at non-singleton dimension 0")
    else:
        em.emit(f"{nb} = {an if ta.ndim == 3 else bn}.shape[0]")
    m = f"{an}.shape[{ta.ndim - 2}]"
    nn = f"{bn}.shape[{tb.ndim - 1}]"
    em.emit(f"{out} = np.empty(({nb}, {m}, {nn}), {np_type(d)})")
    k = em.fresh("b")
    ia = (f"{an}[{k} if {an}.shape[0] != 1 else 0]" if ta.ndim == 3 else an)
    ib = (f"{bn}[{k} if {bn}.shape[0] != 1 else 0]" if tb.ndim == 3 else bn)
    em.emit(f"for {k} in range({nb}):")
    em.emit(f"    mm_into({ia}, {ib}, {out}[{k}], False)")
    return out


@lowers("matmul", "mm", "bmm", target="cpu")
def lower_matmul(em: Emitter, n: ir.Node) -> None:
    a, b = n.inputs[0], n.inputs[1]
    ta, tb, an, bn = _operands(em, n, a, b)
    ra, rb = ta.ndim, tb.ndim
    d = ta.dtype
    out = em.fresh("mm")
    if n.op == "mm" and (ra != 2 or rb != 2):
        raise NotLowered("mm of non-matrices")
    if n.op == "bmm" and (ra != 3 or rb != 3):
        raise NotLowered("bmm of non-3-d tensors")
    if ra == 2 and rb == 2:
        _check_2d(em, an, bn, 1, 0)
        em.emit(f"{out} = matmul2({an}, {bn})")
    elif ra == 1 and rb == 1:
        _check(em, f"{an}.shape[0] != {bn}.shape[0]",
               "inconsistent tensor size, expected tensor [", (f"{an}.shape[0]",),
               "] and src [", (f"{bn}.shape[0]",),
               "] to have the same number of elements, but got ", (f"{an}.shape[0]",), " and ",
               (f"{bn}.shape[0]",), " elements respectively")
        t = em.fresh("mm")
        em.emit(f"{t} = np.empty((1, 1), {np_type(d)})")
        em.emit(f"mm_into({an}[None, :], {bn}[:, None], {t}, False)")
        em.emit(f"{out} = np.empty((), {np_type(d)})")
        em.emit(f"{out}[()] = {t}[0, 0]")
    elif ra == 2 and rb == 1:
        _check(em, f"{an}.shape[1] != {bn}.shape[0]", "size mismatch, got input (",
               (f"{an}.shape[0]",), "), mat (", (f"{an}.shape[0]",), "x", (f"{an}.shape[1]",),
               "), vec (", (f"{bn}.shape[0]",), ")")
        em.emit(f"{out} = np.empty({an}.shape[0], {np_type(d)})")
        em.emit(f"mm_into({an}, {bn}[:, None], {out}[:, None], False)")
    elif ra == 1 and rb == 2:
        _check(em, f"{an}.shape[0] != {bn}.shape[0]", "size mismatch, got input (",
               (f"{bn}.shape[1]",), "), mat (", (f"{bn}.shape[1]",), "x", (f"{bn}.shape[0]",),
               "), vec (", (f"{an}.shape[0]",), ")")
        em.emit(f"{out} = np.empty({bn}.shape[1], {np_type(d)})")
        em.emit(f"mm_into({an}[None, :], {bn}, {out}[None, :], False)")
    elif ra in (2, 3) and rb in (2, 3):
        if n.op == "bmm":
            _check(em, f"{an}.shape[0] != {bn}.shape[0]", "batch1 and batch2 must have same "
                   "number of batches, got ", (f"{an}.shape[0]",), " and ",
                   (f"{bn}.shape[0]",))
        out = _batched(em, ta, tb, an, bn, d)
    else:
        raise NotLowered(f"op {n.op}: ranks {ra} and {rb}")
    em.bind(n.outputs[0], out)


@lowers("addmm", target="cpu")
def lower_addmm(em: Emitter, n: ir.Node) -> None:
    inp, a, b, beta_v, alpha_v = n.inputs
    beta, alpha = em.const(beta_v), em.const(alpha_v)
    ta, tb, an, bn = _operands(em, n, a, b)
    ti = em.tensor(inp)
    if ta.ndim != 2 or tb.ndim != 2 or ti.ndim > 2 or ti.dtype is not ta.dtype:
        raise NotLowered("addmm: ranks or dtypes")
    d = ta.dtype
    _check_2d(em, an, bn, 1, 0)
    out = em.fresh("mm")
    em.emit(f"{out} = np.empty(({an}.shape[0], {bn}.shape[1]), {np_type(d)})")
    x = em.name(inp)
    ms = []
    for j in range(ti.ndim):
        dd = 2 - ti.ndim + j
        _check(em, f"{x}.shape[{j}] != 1 and {x}.shape[{j}] != {out}.shape[{dd}]",
               "The expanded size of the tensor (", (f"{out}.shape[{dd}]",),
               ") must match the existing size (", (f"{x}.shape[{j}]",),
               f") at non-singleton dimension {dd}.")
        m = em.fresh("m")
        em.emit(f"{m} = int({x}.shape[{j}] != 1)")
        ms.append(m)
    i, j = em.fresh("i"), em.fresh("j")
    idx = {0: "()", 1: f"{j} * {ms[0]}" if ms else "", 2: ""}[ti.ndim] if ti.ndim < 2 else \
        f"{i} * {ms[0]}, {j} * {ms[1]}"
    bterm = f"{x}[{idx}]" if beta == 1 else f"{typed_literal(beta, d)} * {x}[{idx}]"
    if beta == 0:  # PyTorch ignores input (nan and inf in it do not propagate)
        em.emit(f"mm_into({an}, {bn}, {out}, False)")
        if alpha != 1:
            em.emit(f"{out} *= {typed_literal(alpha, d)}")
    elif alpha == 1:  # C = beta * input, then C += A @ B inside the product
        em.emit(f"for {i} in range({out}.shape[0]):")
        em.emit(f"    for {j} in range({out}.shape[1]):")
        em.emit(f"        {out}[{i}, {j}] = {bterm}")
        em.emit(f"mm_into({an}, {bn}, {out}, True)")
    else:
        em.emit(f"mm_into({an}, {bn}, {out}, False)")
        em.emit(f"for {i} in range({out}.shape[0]):")
        em.emit(f"    for {j} in range({out}.shape[1]):")
        em.emit(f"        {out}[{i}, {j}] = {bterm} + {typed_literal(alpha, d)} * "
                f"{out}[{i}, {j}]")
    em.bind(n.outputs[0], out)
