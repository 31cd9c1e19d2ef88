"""Eager softmax and log_softmax on CPU arrays (`nn_activation`'s `_softmax_fused`,
`_log_softmax_fused`) run the program the code generator makes for the scripted call.

Owns the table of those programs: per (op, dim class, dtype, rank, C-contiguity) the entry
point of the compiled program of `def f(x): return F.softmax(x, dim)` (log_softmax alike), where
the dim class is -1 for the last dim and the non-negative dim otherwise. The program is built
by the scripted path's own pieces: a `ScriptFunction` of that source (frontend), its plan
record (runtime/plans.py: a warm process skips passes and code generation), else
`programs.build_entry` (passes, fuse_rows, targets/cpu: lower_rows.py for the last dim, the
unfused max / exp / sum / divide kernels for another), loaded through the kernel cache
(script/kernels/cache.py, Numba's checked disk cache). Its overload is chosen as a scripted
call chooses it (runtime/entry.py: 'C' for a C-contiguous array, 'A' for any other, an 'F' one
included), so eager, scripted and traced softmax run one program and agree to the bit
(tests/test_tier_agreement.py); nothing here repeats the generated arithmetic.

The first call of a key builds the program and compiles (or loads) its overload in the caller,
whatever `JITORCH_COMPILE` says, as the hand-written loops this replaced compiled in the call
(bit-equal results from the first call on). Measured at load ~5 on 2 cores: on a cold cache the
first float32 softmax took 1.8 s (the loops: 3.1 s), a 3-D softmax over dim 0 (four unfused
kernels) 4.0 s (2.3 s); in a warm process, where those loops loaded in ~0.02 s, the first call
of a key takes 0.05-0.2 s (the frontend, the plan record, the module's load).

Where no program comes out (the graph is not lowered, Numba fails), the key runs NumPy's
formula instead (`numpy_softmax`: NumPy's exp and pairwise sum, equal to the compiled
result to rounding, not to the bit) for the process; so does a call while a test has replaced a
seam of the pipeline (`plans._pristine`), without keeping that. A change of a registered setting
(_settings.py) forgets the table with every ScriptFunction's specialisations.
Imported by nn_activation (cheap: the script runtime is imported at the first build).
"""
from __future__ import annotations

import linecache
import time

import numpy as np

from .. import _fork, _settings

_lock = _fork.lock()  # one build per key at a time (a build runs the frontend and Numba)
_FNS: dict = {}  # (op, dim class) -> ScriptFunction of the call
# (op, dim, dtype, ndim, C-contiguous) -> entry point `ep(a) -> (out,)`, or None: NumPy's
# formula (see the module doc). Read without the lock by `run`; written under it.
EPS: dict = {}
# a registered setting changed: every key is built again (its ScriptFunction forgot its
# specialisations with every other's)
_settings.on_change(EPS.clear)


def numpy_softmax(a: np.ndarray, dim: int, log: bool) -> np.ndarray:
    """Softmax (log_softmax if `log`) of `a` along `dim` by NumPy's functions: for arrays no
    program takes (a device array, a key without a program)."""
    s = a - np.max(a, axis=dim, keepdims=True)
    if log:
        return s - np.log(np.sum(np.exp(s), axis=dim, keepdims=True))
    e = np.exp(s)
    return e / np.sum(e, axis=dim, keepdims=True)


def function(op: str, dim: int):
    """The ScriptFunction of `F.<op>(x, dim)` (dim: -1 or a non-negative dim), made once."""
    sf = _FNS.get((op, dim))
    if sf is None:
        import jitorch
        import jitorch.nn.functional as F
        name = f"{op}_dim{'_last' if dim == -1 else dim}"
        src = f"def {name}(x):\n    return F.{op}(x, {dim})\n"
        filename = f"<jitorch-eager-{name}>"  # the frontend reads the source through linecache
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        ns = {"F": F}
        exec(compile(src, filename, "exec"), ns)
        sf = jitorch.jit.script(ns[name])
        sf.name = sf.__name__ = f"F.{op}[eager]"
        _FNS[op, dim] = sf
    return sf


def _build(op: str, dim: int, a: np.ndarray):
    """The entry point of the compiled program of `F.<op>(x, dim)` for `a`'s (dtype, rank,
    C-contiguity), compiled or loaded now; None where there is none (module doc)."""
    from .._dtype import from_numpy_dtype
    from .._tensor import Tensor
    from ..script.runtime import plans
    from ..script.runtime.entry import _entry_point
    from ..script.runtime.keys import _arg_type
    from ..script.runtime.programs import build_entry
    t0 = time.perf_counter()
    sf = function(op, dim)
    t = Tensor._make(a, from_numpy_dtype(a.dtype))
    key, _ = sf._key([t])
    arg_types = [_arg_type(t, sf._types[0], False)]
    pk = plans.key(sf, key, {}, [t], False)
    entry = plans.load_plain(pk, sf, arg_types, {})
    if entry is None:
        entry, _ = build_entry(sf.graph, arg_types, {})
    ep = None
    if entry.kind == "compiled" and getattr(entry.fn, "overloads", None) is not None:
        try:
            ep = _entry_point(entry.fn, [a])  # the overload a scripted call of `a` runs
            ep(a)
            plans.store_plain(pk, entry)
        except Exception as e:  # noqa: BLE001 - Numba could not compile it: NumPy's (doc)
            ep, entry.kind, entry.fn = None, "interpreted", None
            entry.reason = f"numba could not compile the program: {type(e).__name__}"
    # the function's specialisation, as a call of it would keep it: jit.stats() reports it
    entry.build_s = time.perf_counter() - t0
    sf._cache[key] = entry
    return ep


def entry_point(op: str, dim: int, a: np.ndarray, k: tuple):
    """The table's entry `k` = (op, dim, a's dtype, rank, C-contiguity), built on first use.
    `dim` as given (in range for `a`); -1 or the last dim both take the last-dim program."""
    from ..script.runtime import plans
    if not plans._pristine():  # a test replaced a seam of the pipeline: NumPy's, not kept
        return None
    with _lock:
        if k not in EPS:
            d = dim + a.ndim if dim < 0 else dim
            EPS[k] = _build(op, -1 if d == a.ndim - 1 else d, a)
    return EPS[k]


def run(op: str, a: np.ndarray, dim: int) -> np.ndarray:
    """Softmax (op "softmax") or log_softmax ("log_softmax") of the float32/float64 array `a`
    (with elements) along `dim` (in range), as scripted code computes it."""
    k = (op, dim, a.dtype, a.ndim, a.flags.c_contiguous)
    ep = EPS.get(k, False)
    if ep is False:
        ep = entry_point(op, dim, a, k)
    if ep is None:
        return numpy_softmax(a, dim, op == "log_softmax")
    return ep(a)[0]
