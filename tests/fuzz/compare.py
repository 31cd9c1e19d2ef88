"""Outcomes of one call and how two outcomes are compared.

Owns what "agrees with eager" means. An `Outcome` is what a call did: the exception it raised,
or its results (structure, dtypes, shapes, values copied at once) and the final contents of the
arguments' storage (the roots of the input set). Two outcomes agree when
- both raised and the compiled exception is an instance of eager's type (the compiler's located
  errors subclass the original type), or
- both returned: the same structure, Python numbers equal, tensors with the same dtype, shape
  and values (integers and bools exactly; floats within a tolerance per dtype, relative to the
  tensor's largest finite magnitude, with nan, +inf and -inf at the same places; a float64
  result computed from float32 values is held to float32's tolerance: `floor`), and every
  argument root holding the same values afterwards.
A compiled success where eager raised is a disagreement, and so is the reverse.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import jitorch

# (rtol, atol relative to the tensor's scale) per result dtype
TOLERANCE = {"float64": (1e-9, 1e-9), "float32": (2e-4, 2e-5), "float16": (4e-3, 2e-3),
             "bfloat16": (3e-2, 1.6e-2)}


@dataclass
class Outcome:
    exc: BaseException | None = None
    structure: str = ""
    leaves: list = field(default_factory=list)  # ("tensor", dtype name, np array) / ("py", v)
    roots: list = field(default_factory=list)  # np arrays

    @property
    def ok(self) -> bool:
        return self.exc is None

    def describe(self) -> str:
        if self.exc is not None:
            return f"raised {type(self.exc).__name__}: {_first_line(self.exc)}"
        parts = [f"{x[1]}{list(x[2].shape)}" if x[0] == "tensor" else repr(x[1])
                 for x in self.leaves]
        return "returned " + ", ".join(parts)

def _first_line(e) -> str:
    s = str(e).strip().splitlines()
    return s[0][:200] if s else ""


def _snapshot(x, leaves):
    if isinstance(x, jitorch.Tensor):
        leaves.append(("tensor", x.dtype.name, np.array(x.detach().numpy(), copy=True)))
        return "T"
    if isinstance(x, (tuple, list)):
        return "(" + ",".join(_snapshot(e, leaves) for e in x) + ")"
    leaves.append(("py", x))
    return type(x).__name__


def call(fn, args, roots) -> Outcome:
    try:
        res = fn(*args)
    except Exception as e:  # noqa: BLE001 - every exception is an outcome to compare
        return Outcome(exc=e, roots=[np.array(r.numpy(), copy=True) for r in roots])
    out = Outcome()
    out.structure = _snapshot(res, out.leaves)
    out.roots = [np.array(r.numpy(), copy=True) for r in roots]
    return out


def _as_float(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) if a.dtype.kind != "c" else a.astype(np.complex128)


def _tolerance(dtype: str, floor: str | None):
    rtol, atol = TOLERANCE.get(dtype, (1e-9, 1e-9))
    if floor in TOLERANCE:
        frtol, fatol = TOLERANCE[floor]
        rtol, atol = max(rtol, frtol), max(atol, fatol)
    return rtol, atol


def _close(got: np.ndarray, want: np.ndarray, dtype: str, floor: str | None = None):
    if got.shape != want.shape:
        return f"shape {list(got.shape)} vs eager {list(want.shape)}"
    if dtype not in TOLERANCE and want.dtype.kind not in "fcV":
        if not np.array_equal(got, want):
            bad = np.argwhere(got != want)
            k = tuple(bad[0])
            return f"values differ at {list(k)}: {got[k]!r} vs eager {want[k]!r}"
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        return _close_float(_as_float(got), _as_float(want), _tolerance(dtype, floor))


def _close_float(g, w, tol):
    gn, wn = np.isnan(g), np.isnan(w)
    if (gn != wn).any():
        k = tuple(np.argwhere(gn != wn)[0])
        return f"nan at {list(k)} differs: {g[k]!r} vs eager {w[k]!r}"
    gi, wi = np.isinf(g), np.isinf(w)
    if (gi != wi).any() or (g[gi] != w[wi]).any():
        k = tuple(np.argwhere((gi != wi) | (gi & (g != w)))[0])
        return f"inf at {list(k)} differs: {g[k]!r} vs eager {w[k]!r}"
    fin = ~(wn | wi)
    if not fin.any():
        return None
    rtol, atol = tol
    scale = max(1.0, float(np.abs(w[fin]).max()))
    err = np.abs(g - w)
    lim = atol * scale + rtol * np.abs(w)
    bad = fin & (err > lim)
    if bad.any():
        k = tuple(np.argwhere(bad)[0])
        return (f"values differ at {list(k)}: {g[k]!r} vs eager {w[k]!r} "
                f"(max abs err {float(err[fin].max()):.3g}, scale {scale:.3g})")
    return None


def compare(want: Outcome, got: Outcome, check_roots: bool = True, floor: str | None = None):
    """-> None when `got` agrees with eager's `want`, else (kind, detail). `floor`: the least
    precise float dtype the values went through (its tolerance is the least allowed)."""
    if want.exc is not None or got.exc is not None:
        if want.exc is None:
            return "compiled-raised", got.describe()
        if got.exc is None:
            return "compiled-succeeded", f"eager {want.describe()}; compiled {got.describe()}"
        if not isinstance(got.exc, type(want.exc)):
            return "error-type", f"eager {want.describe()}; compiled {got.describe()}"
        bad = _roots(want, got) if check_roots else None
        # eager's writes before the statement that raised stay in the arguments
        return ("argument-after-error", f"{want.describe()}; {bad[1]}") if bad else None
    if got.structure != want.structure:
        return "structure", f"{got.structure} vs eager {want.structure}"
    for k, (g, w) in enumerate(zip(got.leaves, want.leaves)):
        if g[0] != w[0]:
            return "structure", f"result {k}: {g[0]} vs eager {w[0]}"
        if w[0] == "py":
            if type(g[1]) is not type(w[1]) or not _py_equal(g[1], w[1]):
                return "value", f"result {k}: {g[1]!r} vs eager {w[1]!r}"
            continue
        if g[1] != w[1]:
            return "dtype", f"result {k}: {g[1]} vs eager {w[1]}"
        bad = _close(g[2], w[2], w[1], floor)
        if bad:
            return "value", f"result {k} ({w[1]}): {bad}"
    return _roots(want, got) if check_roots else None


def _roots(want, got):
    for k, (g, w) in enumerate(zip(got.roots, want.roots)):
        bad = _close(g, w, _dtype_name(w), None)
        if bad:
            return "argument", f"argument storage {k} after the call: {bad}"
    return None


def _dtype_name(a: np.ndarray) -> str:
    return a.dtype.name


def _py_equal(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (a != a and b != b) or abs(a - b) <= 1e-9 * max(1.0, abs(b))
    return a == b
