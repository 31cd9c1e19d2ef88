"""jitorch's counter-based random stream: Philox4x32-10, the one stream that eager code, the
interpreter and compiled programs draw dropout masks from, so that `manual_seed` gives the same
masks whichever tier runs a call.

Owns the algorithm (`philox4x32`, written once over uint64 values: NumPy runs it on arrays in
eager code, Numba compiles the same function for scalars inside kernels, as numba.cuda can),
the stream's layout (`draw`, `dropout_mask`, `numpy_dropout_mask`: which counter each element
uses), the position in the stream (`reserve`), and the compiled kernels programs call
(`fill_dropout_mask`, made on first use so that importing jitorch never imports Numba).

The stream: a Generator holds a Philox state `(seed, offset)` (a uint64[2] array, `_philox`)
next to its mt19937 stream (jitorch/_mt19937.py, which `rand`/`randn`/... draw from);
`manual_seed(s)` makes it `(s, 0)`, `get_rng_state`/`set_rng_state` carry it. A draw of `n`
32-bit words takes `ceil(n / 4)` blocks: it reads `(seed, offset)` and advances the offset by
the block count, so a compiled call and an eager call advance it alike. Word `i` of a draw at
offset `off` is word `i % 4` of Philox4x32-10 with counter `(off + i // 4)` (low 32 bits, high
32 bits, 0, 0) and key `(seed & 0xffffffff, seed >> 32)`. Dropout keeps element `i` when
`(word_i >> 8) < ceil((1 - p) * 2**24)`, i.e. when the 24-bit uniform `(word_i >> 8) / 2**24`
is below `1 - p` (exact integer arithmetic: eager and compiled masks agree bit for bit); a kept
element is `1 / (1 - p)` in the mask's dtype.

Compiled programs read the DEFAULT generator's state through an LLVM symbol
(`jitorch_philox_state`, bound to that generator's array when the kernels are first made) and
advance its offset with an atomic add, so concurrent compiled calls never share numbers, and
programs stay free of addresses (Numba's disk cache keeps them across processes). Eager masks
come from the same kernel once Numba is loaded; before that, NumPy draws them and advances the
offset under the generator's lock (such a draw racing a compiled call on another thread could
overlap it; the compiled call itself loaded Numba, so later eager draws are atomic too). The compiler's own example runs (autodiff tracing, script/runtime/autodiff.py)
draw inside `scratch()`, which leaves the generator untouched.

Not here: `rand`/`randn`/`bernoulli`/... draw PyTorch's numbers from mt19937 (jitorch/_mt19937.py;
in scripted code they run in the interpreter, their reason naming them).
"""
from __future__ import annotations

import contextlib
import math
import sys
import threading

import numpy as np

from . import _fork

__all__ = ["philox4x32", "draw", "dropout_mask", "numpy_dropout_mask", "dropout_threshold",
           "reserve", "scratch"]

_M0 = np.uint64(0xD2511F53)  # Philox4x32's round multipliers and Weyl key increments
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_LO = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S8 = np.uint64(8)
_ZERO = np.uint64(0)
SYMBOL = "jitorch_philox_state"  # the default generator's (seed, offset), for compiled code


def philox4x32(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0, c1, c2, c3) under key (k0, k1): four 32-bit words.
    Every argument is a uint64 value below 2**32 (NumPy arrays or scalars, or Numba scalars):
    the 32x32-bit products fit 64 bits, so the same code is exact everywhere."""
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (p1 >> _S32) ^ c1 ^ k0, p1 & _LO, (p0 >> _S32) ^ c3 ^ k1, p0 & _LO
        k0 = (k0 + _W0) & _LO
        k1 = (k1 + _W1) & _LO
    return c0, c1, c2, c3


def blocks(n: int) -> int:
    """How many counter blocks (four words each) a draw of n words takes."""
    return (n + 3) // 4


def draw(n: int, seed: int, offset: int) -> np.ndarray:
    """The stream's n words at block `offset` under `seed` (uint64 values below 2**32)."""
    b = (np.arange(blocks(n), dtype=np.uint64) + np.uint64(offset % (1 << 64)))
    z = np.zeros_like(b)
    words = philox4x32(b & _LO, b >> _S32, z, z, np.uint64(seed & 0xFFFFFFFF),
                       np.uint64(seed >> 32))
    return np.stack(words, axis=1).reshape(-1)[:n]


def dropout_threshold(p: float) -> int:
    """Keep a word when its top 24 bits are below this: ceil((1 - p) * 2**24) (exact)."""
    return int(math.ceil((1.0 - p) * 16777216.0))


def dropout_scale(p: float) -> float:
    """A kept element's mask value (before the cast to the mask's dtype)."""
    return 0.0 if p >= 1.0 else 1.0 / (1.0 - p)


# --- the stream's position -------------------------------------------------------------------------
_local = threading.local()


@contextlib.contextmanager
def scratch():
    """Draws inside come from a throwaway position of the stream: the compiler's example runs
    (autodiff traces the forward on the call's arguments) must not advance the user's stream."""
    prev = getattr(_local, "scratch", None)
    _local.scratch = [0]
    try:
        yield
    finally:
        _local.scratch = prev


def reserve(n_blocks: int, generator=None) -> tuple:
    """(seed, offset) for a draw of `n_blocks` blocks from `generator` (the default one),
    whose offset advances by that many."""
    sc = getattr(_local, "scratch", None)
    if sc is not None:
        off = sc[0]
        sc[0] += n_blocks
        return 0, off
    if generator is None:
        from ._random import default_generator as generator
    st = generator._philox
    with generator._lock:
        seed, off = int(st[0]), int(st[1])
        st[1] = np.uint64((off + n_blocks) % (1 << 64))
    return seed, off


def dropout_mask(shape, p: float, np_dtype, generator=None) -> np.ndarray:
    """A dropout mask of `shape`: 1 / (1 - p) where kept, else 0, in `np_dtype` (eager code;
    the numbers `fill_dropout_mask` writes in compiled code). Once Numba is loaded (a program
    was compiled) a float32/float64 mask of the default generator is drawn by that same kernel
    (about 20x faster than NumPy's 40 array passes); before, by NumPy (importing Numba would
    cost more than it saves). Both give the same numbers: `numpy_dropout_mask`."""
    np_dtype = np.dtype(np_dtype)
    if generator is None and getattr(_local, "scratch", None) is None and \
            np_dtype in (np.float32, np.float64) and "numba" in sys.modules:
        out = np.empty(int(np.prod(shape, dtype=np.int64)), np_dtype)
        _kernels()["fill_dropout_mask"](out, dropout_threshold(p),
                                        np_dtype.type(dropout_scale(p)))
        return out.reshape(shape)
    return numpy_dropout_mask(shape, p, np_dtype, generator)


def numpy_dropout_mask(shape, p: float, np_dtype, generator=None) -> np.ndarray:
    """`dropout_mask` drawn by NumPy, from any generator."""
    n = int(np.prod(shape, dtype=np.int64))
    seed, off = reserve(blocks(n), generator)
    keep = (draw(n, seed, off) >> _S8) < np.uint64(dropout_threshold(p))
    scale = np.asarray(dropout_scale(p)).astype(np_dtype)
    return np.where(keep, scale, np.zeros((), np_dtype)).astype(np_dtype).reshape(shape)


# --- compiled kernels (made on first use: Numba is imported then) -------------------------------
_reserve = None  # the intrinsic (seed, offset) = fetch-and-add of the offset: made by _kernels
def _fill_dropout_mask(out, thr, scale):
    """Compiled: `out` (a C-contiguous 1-D array) gets the next dropout mask of the default
    generator's stream; `thr` is `dropout_threshold(p)`, `scale` the kept value in out's dtype."""
    n = out.size
    nb = (n + 3) // 4
    seed, off = _reserve(np.uint64(nb))
    k0 = seed & _LO
    k1 = seed >> _S32
    t = np.uint64(thr)
    for j in range(nb):
        b = off + np.uint64(j)
        w0, w1, w2, w3 = philox4x32(b & _LO, b >> _S32, _ZERO, _ZERO, k0, k1)
        i = 4 * j
        out[i] = scale if (w0 >> _S8) < t else 0.0
        if i + 1 < n:
            out[i + 1] = scale if (w1 >> _S8) < t else 0.0
        if i + 2 < n:
            out[i + 2] = scale if (w2 >> _S8) < t else 0.0
        if i + 3 < n:
            out[i + 3] = scale if (w3 >> _S8) < t else 0.0


_made: dict = {}
_make_lock = _fork.lock()


def _kernels() -> dict:
    """Make the compiled kernels once: bind the LLVM symbol to the default generator's state
    array, define the `_reserve` intrinsic (an atomic fetch-add of the offset), register
    `philox4x32` for calls from compiled code and compile-on-demand `fill_dropout_mask`."""
    with _make_lock:
        if _made:
            return _made
        import llvmlite.binding as llb
        from llvmlite import ir as llir
        from numba import njit, types
        from numba.extending import intrinsic, register_jitable
        from ._random import default_generator
        # (never replaced: Generator writes its state into this array in place)
        llb.add_symbol(SYMBOL, default_generator._philox.ctypes.data)

        @intrinsic
        def _reserve_intrinsic(typingctx, n):
            sig = types.UniTuple(types.uint64, 2)(types.uint64)

            def codegen(context, builder, signature, args):
                i32, i64 = llir.IntType(32), llir.IntType(64)
                gv = builder.module.globals.get(SYMBOL)
                if gv is None:
                    gv = llir.GlobalVariable(builder.module, llir.ArrayType(i64, 2), SYMBOL)
                    gv.linkage = "external"
                zero = llir.Constant(i32, 0)
                seed = builder.load(builder.gep(gv, [zero, zero]))
                off = builder.atomic_rmw("add", builder.gep(gv, [zero, llir.Constant(i32, 1)]),
                                         args[0], "monotonic")
                return context.make_tuple(builder, signature.return_type, [seed, off])
            return sig, codegen

        globals()["_reserve"] = _reserve_intrinsic
        register_jitable(philox4x32)
        from .script.kernels.cache_guards import guard_eager_dispatcher
        _made["fill_dropout_mask"] = njit(nogil=True, cache=True)(_fill_dropout_mask)
        guard_eager_dispatcher(_made["fill_dropout_mask"])  # checked, lean loads
        return _made


def __getattr__(name: str):
    """`from jitorch._philox import fill_dropout_mask` (generated programs) makes the kernels."""
    if name == "fill_dropout_mask":
        return _kernels()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
