"""PyTorch's CPU random engine and its sampling transforms, so that a seeded program draws
PyTorch's numbers bit for bit.

Owns `Engine` (the state of PyTorch's `CPUGeneratorImpl`: an mt19937 seeded as
`at::mt19937(seed)`, plus its cached Box-Muller samples; `state_bytes`/`from_state_bytes` in
the layout of PyTorch's `get_rng_state`, 5056 bytes) and the transforms of ATen's CPU kernels
(aten/src/ATen/core/TransformationHelper.h, DistributionsHelper.h,
native/cpu/DistributionTemplates.h, the multinomial and randperm kernels), each applied to a
block of raw words drawn at once (NumPy's MT19937 gives the same tempered 32-bit outputs as
PyTorch's engine for the same 624-word state; full-range uint32 `integers` return them in order):
in NumPy, or, for the transforms with many steps per element (uniform, normal's blocks,
randperm, glibc's math), by the compiled loops of jitorch/_mt19937_kernels.py.

What makes the numbers PyTorch's, beyond the transforms' formulas:
- the draw widths: `random()` is one 32-bit word, `random64()` two (first word high); float,
  half and bfloat16 uniforms take 24 bits of one word, double ones 53 bits of two;
- floating-point contraction: PyTorch's CPU kernels are compiled with FMA, and GCC fuses a
  multiply into the add that uses it (`x * (to - from) + from`, `normal * std + mean`, the
  polynomial steps of the AVX2 `log256_ps`/`sincos256_ps` that `randn` in float32 uses), so
  those steps are single-rounding fused multiply-adds here too (`llvm.fma` in the kernels);
- the math library: float64 `log`, `log1p`, `exp`, `tan`, `sin` and `cos` are glibc's (the
  kernels call the C library's; NumPy's own vectorised `log`/`exp` differ in the last bit for
  ~0.5% of inputs);
- `normal_` on >= 16 contiguous elements fills uniforms first and transforms blocks of 16
  (the last block recomputed from 16 fresh uniforms when the size is not a multiple of 16);
  fewer elements take `normal_distribution<double>`, which caches the second Box-Muller value
  in the generator (part of its state).

Not here: which tensor gets which draw (jitorch/_random.py, _random_inplace.py) and dropout
masks (a Philox stream, jitorch/_philox.py, shared with compiled code).
"""
from __future__ import annotations

import ctypes
import math
import struct

import numpy as np

__all__ = ["Engine", "STATE_BYTES", "uniform", "normal", "normal_serial", "int_from_to",
           "int_full", "bernoulli_tensor", "bernoulli_scalar", "exponential", "geometric",
           "cauchy", "log_normal", "poisson", "randperm", "multinomial"]

_N = 624
_COMPILED_WORDS = 4096  # from this many words a draw, the compiled generator (NumPy's is slower)
_MASK32 = 0xFFFFFFFF
_U64 = np.uint64
# CPUGeneratorImplState (aten/src/ATen/CPUGeneratorImpl.cpp): the legacy POD (initial seed,
# left, seeded, next, 624 state words as uint64, normal_x/y/rho, normal_is_valid) then the
# float normal cache; C layout with padding. jitorch keeps its Philox offset (jitorch/_philox.py)
# in normal_x, a field PyTorch writes as 0 and ignores when it reads a state.
_HEAD = struct.Struct("<QiiQ")
_TAIL = struct.Struct("<Qddi4xf?3x")
STATE_BYTES = _HEAD.size + 8 * _N + _TAIL.size  # 5056, as PyTorch's


def _seed_key(seed: int) -> np.ndarray:
    """mt19937's init_genrand on the low 32 bits of `seed` (PyTorch's `mt19937(seed)`)."""
    key = np.empty(_N, np.uint32)
    x = seed & _MASK32
    key[0] = x
    for j in range(1, _N):
        x = (1812433253 * (x ^ (x >> 30)) + j) & _MASK32
        key[j] = x
    return key


class Engine:
    """One CPU generator's state: mt19937 (a NumPy MT19937 holding the same 624 words and
    position), its initial seed, and the cached normal samples. Not locked: jitorch's
    `Generator` holds its lock around every use."""

    __slots__ = ("seed", "bitgen", "words", "mt", "fresh", "next_double", "next_float")

    def __init__(self, seed: int):
        self._new_bitgen()
        self.reseed(seed)

    def _new_bitgen(self) -> None:
        self.bitgen = np.random.MT19937()
        # (full-range uint32 `integers` are the raw outputs in order, 3x faster than random_raw)
        self.words = np.random.Generator(self.bitgen).integers
        # its live state, NumPy's `mt19937_state` (624 words, then the position as an int),
        # which the compiled `mt_words` advances in place
        self.mt = np.ctypeslib.as_array(
            (ctypes.c_uint32 * (_N + 1)).from_address(self.bitgen.ctypes.state_address))

    def reseed(self, seed: int) -> None:
        self.seed = seed
        self._set(_seed_key(seed), _N)
        self.fresh = True  # PyTorch reports next=0 until the first draw (then 624)
        self.next_double = self.next_float = None

    def _set(self, key, pos: int) -> None:
        self.bitgen.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}

    def __getstate__(self):  # (pickle/deepcopy: the state, not the bound `words`)
        return (self.seed, self.bitgen.state, self.fresh, self.next_double, self.next_float)

    def __setstate__(self, st) -> None:
        self._new_bitgen()
        self.seed, bstate, self.fresh, self.next_double, self.next_float = st
        self.bitgen.state = bstate

    def copy(self) -> "Engine":
        e = Engine.__new__(Engine)
        e._new_bitgen()
        e.bitgen.state = self.bitgen.state
        e.seed, e.fresh = self.seed, self.fresh
        e.next_double, e.next_float = self.next_double, self.next_float
        return e

    # --- raw draws --------------------------------------------------------------------------
    def u32(self, n: int) -> np.ndarray:
        """n outputs of `random()` (uint32)."""
        if n <= 0:
            return np.zeros(0, np.uint32)
        self.fresh = False
        if n < _COMPILED_WORDS:
            return self.words(0, 1 << 32, n, dtype=np.uint32)
        return _k().mt_words(self.mt, n)

    def draw_state(self, n: int) -> np.ndarray:
        """The live mt19937 state (`mt`) for a compiled transform to draw from (n > 0: the
        generator counts as drawn from)."""
        if n > 0:
            self.fresh = False
        return self.mt

    def u64(self, n: int) -> np.ndarray:
        """n outputs of `random64()`: two words each, the first the high half."""
        r = self.u32(2 * n).astype(np.uint64)
        return (r[0::2] << _U64(32)) | r[1::2]

    # --- PyTorch's state tensor -------------------------------------------------------------
    def state_bytes(self, philox_offset: int = 0) -> bytes:
        st = self.bitgen.state["state"]
        pos = int(st["pos"])
        nxt = (0 if self.fresh else _N) if pos == _N else pos
        left = 1 if pos == _N else _N + 1 - pos
        nd, nf = self.next_double, self.next_float
        return (_HEAD.pack(self.seed, left, 1, nxt)
                + np.asarray(st["key"], np.uint64).astype("<u8").tobytes()
                + _TAIL.pack(philox_offset, 0.0 if nd is None else nd, 0.0, nd is not None,
                             0.0 if nf is None else nf, nf is not None))

    @classmethod
    def from_state_bytes(cls, raw: bytes):
        """(engine, philox offset) from a state of STATE_BYTES bytes; RuntimeError("Invalid
        mt19937 state") as PyTorch for a state its engine refuses."""
        seed, left, seeded, nxt = _HEAD.unpack_from(raw, 0)
        key = np.frombuffer(raw, "<u8", _N, _HEAD.size).astype(np.uint32)
        nx, ny, _, nvalid, nf, fvalid = _TAIL.unpack_from(raw, _HEAD.size + 8 * _N)
        if not (seeded and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        e = Engine.__new__(Engine)
        e._new_bitgen()
        # PyTorch's engine twists when `left` drops to 0; NumPy's when `pos` reaches 624
        e._set(key, _N if left == 1 else nxt)
        e.seed, e.fresh = seed, left == 1 and nxt == 0
        e.next_double = ny if nvalid else None
        e.next_float = nf if fvalid else None
        return e, nx


# --- arithmetic as the compiled kernels do it ---------------------------------------------
def _k():
    """The compiled loops (jitorch/_mt19937_kernels.py), imported on first use: importing
    jitorch does not load Numba."""
    from . import _mt19937_kernels
    return _mt19937_kernels


def _fma64(x, b: float, c: float) -> np.ndarray:
    """float64 x * b + c rounded once, elementwise over the array x (scalars b, c)."""
    x = np.asarray(x, np.float64)
    return _k().fma64(x.reshape(-1), float(b), float(c)).reshape(x.shape)


def _libm(name: str, x) -> np.ndarray:
    """glibc's float64 `name` elementwise (what PyTorch's kernels call; NumPy's own vectorised
    `log`/`exp` differ from it in the last bit for ~0.5% of inputs)."""
    x = np.asarray(x, np.float64)
    k = _k()
    return k.libm(x.reshape(-1), k.LIBM[name]).reshape(x.shape)


# --- uniform -------------------------------------------------------------------------------------
def _unit24(words) -> np.ndarray:
    return np.multiply(words & words.dtype.type(0xFFFFFF), np.float32(2.0 ** -24),
                       dtype=np.float32)


def _unit53(words) -> np.ndarray:
    return np.multiply(words & _U64((1 << 53) - 1), 2.0 ** -53, dtype=np.float64)


def uniform(eng: Engine, n: int, np_dtype, lo: float = 0.0, hi: float = 1.0) -> np.ndarray:
    """`uniform_(lo, hi)` on n elements of a real dtype: lo + u * (hi - lo) fused, in float64
    for float64 and in float32 for the others (float16/bfloat16: from bounds cast to the
    dtype), rounded to the dtype; a value that rounds to `hi` becomes `lo`, as PyTorch keeps
    the range half-open."""
    np_dtype = np.dtype(np_dtype)
    k, mt = _k(), eng.draw_state(n)
    if np_dtype == np.float64:
        return k.uniform64(mt, n, float(lo), float(hi - lo), float(hi))
    a, b = (np.float32(np.array(x).astype(np_dtype).astype(np.float32)) for x in (lo, hi))
    with np.errstate(over="ignore"):
        span = b - a
    if np_dtype == np.float32:
        return k.uniform32(mt, n, a, span, b)
    # (reduced precision: the float32 value rounded to the dtype decides the half-open range)
    v = k.uniform32(mt, n, a, span, np.float32(np.nan)).astype(np_dtype)
    top = np.array(b).astype(np_dtype)
    return np.where(v == top, np.array(a).astype(np_dtype), v)


# --- normal --------------------------------------------------------------------------------------
def normal(eng: Engine, n: int, np_dtype, mean: float = 0.0, std: float = 1.0,
           contiguous: bool = True) -> np.ndarray:
    """`normal_(mean, std)` on n elements of a real dtype: blocks of 16 (`normal_fill_16`,
    float32 through the AVX2 polynomials, float64 through glibc; reduced-precision dtypes take
    the float32 path's numbers, rounded)."""
    np_dtype = np.dtype(np_dtype)
    if n < 16 or not contiguous:
        return normal_serial(eng, n, mean, std).astype(np_dtype)
    full = n - n % 16
    k, mt = _k(), eng.draw_state(n)
    if np_dtype == np.float64:
        block, words, m, sd = k.normal16_f64, 2, float(mean), float(std)
    else:
        block, words, m, sd = k.normal16_f32, 1, np.float32(mean), np.float32(std)
    out = block(mt, full, m, sd)
    if full != n:  # uniforms for all n are drawn, then the last 16 recomputed from 16 fresh ones
        k.mt_words(mt, words * (n - full))
        out = np.concatenate([out[:n - 16], block(mt, 16, m, sd)])
    return out.astype(np_dtype, copy=False)


def _std_normal_serial(eng: Engine, n: int) -> np.ndarray:
    """n draws of `normal_distribution<double>` (standard), using and refilling the cache."""
    out = np.empty(n, np.float64)
    if n == 0:
        return out
    i = 0
    if eng.next_double is not None:
        out[0], eng.next_double, i = eng.next_double, None, 1
    pairs = (n - i + 1) // 2
    if pairs:
        w = _unit53(eng.u64(2 * pairs))
        r = np.sqrt(-2.0 * _libm("log1p", -w[1::2]))
        th = (2.0 * math.pi) * w[0::2]
        z = np.stack([r * np.cos(th), r * np.sin(th)], axis=1).reshape(-1)
        out[i:] = z[:n - i]
        if (n - i) % 2:
            eng.next_double = float(z[-1])
    return out


def normal_serial(eng: Engine, n: int, mean: float = 0.0, std: float = 1.0) -> np.ndarray:
    """n draws of `normal_distribution<double>(mean, std)` (float64)."""
    return _fma64(_std_normal_serial(eng, n), std, mean)


# --- integers ------------------------------------------------------------------------------------
_WIDE = ("int64", "float64", "float32", "bfloat16")  # may draw random64 for ranges >= 2**32


def int_from_to(eng: Engine, n: int, lo: int, hi: int, dtype_name: str) -> np.ndarray:
    """`random_(lo, hi)` / `randint`: (word % (hi - lo)) + lo as int64 values."""
    rng = hi - lo
    if rng >= 1 << 64:  # [-2**63, 2**63): PyTorch's full-range kernel, a whole random64
        return int_full_64(eng, n)
    w = eng.u64(n) if rng >= 1 << 32 and dtype_name in _WIDE else eng.u32(n)
    return ((w % _U64(rng)) + _U64(lo % (1 << 64))).view(np.int64)


def int_full(eng: Engine, n: int, dtype_name: str, modulus: int) -> np.ndarray:
    """`random_()` with no bounds: word % modulus (int64 and float64 draw random64)."""
    w = eng.u64(n) if dtype_name in ("int64", "float64") else eng.u32(n)
    if dtype_name == "bool":
        return (w & _U64(1)).astype(np.int64)
    if modulus >= 1 << 64:  # uint64: the word itself
        return w.astype(np.int64)
    return (w % _U64(modulus)).astype(np.int64)


def int_full_64(eng: Engine, n: int) -> np.ndarray:
    """`random_(-2**63, None)`: a whole random64 as int64."""
    return eng.u64(n).view(np.int64)


# --- other distributions -----------------------------------------------------------------------
def bernoulli_tensor(eng: Engine, p: np.ndarray) -> np.ndarray:
    """`bernoulli_(p_tensor)`: one uniform per element in p's precision (float64 p: 53 bits,
    else 24 bits compared in float32)."""
    flat = p.reshape(-1)
    if flat.dtype == np.float64:
        return _unit53(eng.u64(flat.size)) < flat
    return _unit24(eng.u32(flat.size)) < flat.astype(np.float32)


def bernoulli_scalar(eng: Engine, n: int, p: float) -> np.ndarray:
    """`bernoulli_(float p)` (the default CPU kernel): a 53-bit uniform per element."""
    return _unit53(eng.u64(n)) < p


def exponential(eng: Engine, n: int, lambd: float) -> np.ndarray:
    return (-1.0 / lambd) * _libm("log1p", -_unit53(eng.u64(n)))


def geometric(eng: Engine, n: int, p: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.ceil(_libm("log", _unit53(eng.u64(n))) / math.log(1.0 - p))


def cauchy(eng: Engine, n: int, median: float, sigma: float) -> np.ndarray:
    return _fma64(_libm("tan", math.pi * (_unit53(eng.u64(n)) - 0.5)), sigma, median)


def log_normal(eng: Engine, n: int, mean: float, std: float) -> np.ndarray:
    return _libm("exp", normal_serial(eng, n, mean, std))


def poisson(eng: Engine, rates: np.ndarray) -> np.ndarray:
    """Poisson samples by NumPy's sampler on the engine's stream (not PyTorch's numbers:
    its CPU kernel uses its own sampler)."""
    eng.fresh = False
    return np.random.Generator(eng.bitgen).poisson(rates)


def randperm(eng: Engine, n: int) -> np.ndarray:
    """Fisher-Yates as PyTorch's CPU kernel: position i swaps with i + random() % (n - i)."""
    if n <= 1:
        return np.arange(n, dtype=np.int64)
    return _k().randperm(eng.u32(n - 1), n)


def multinomial(eng: Engine, p: np.ndarray, num_samples: int, replacement: bool) -> np.ndarray:
    """Rows of `p` (2-D, validated, in its dtype) -> int64 indices (rows, num_samples).
    With replacement (and more than one sample): per row the running sum in p's precision
    (float32 for reduced ones), divided by the total, its last entry 1, then a binary search
    for the first entry >= a 53-bit uniform. Otherwise PyTorch's exponential race: the largest
    p / Exp(1) in p's dtype (argmax for one sample, top-k for more)."""
    rows, k = p.shape
    if replacement and num_samples > 1:
        acc = p.dtype if p.dtype in (np.float32, np.float64) else np.float32
        out = np.empty((rows, num_samples), np.int64)
        for i in range(rows):
            cum = np.cumsum(p[i].astype(acc), dtype=acc)
            cum = cum / cum[-1]
            cum[-1] = 1
            out[i] = np.searchsorted(cum.astype(np.float64), _unit53(eng.u64(num_samples)),
                                     side="left")
        return out
    q = exponential(eng, p.size, 1.0).astype(p.dtype).reshape(p.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        keys = p / q
    if num_samples == 1:
        return np.argmax(keys, axis=1)[:, None].astype(np.int64)
    return np.argsort(-keys, axis=1, kind="stable")[:, :num_samples].astype(np.int64)
