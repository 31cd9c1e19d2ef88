"""PyTorch's CPU random engine and its sampling transforms, in NumPy, so that a seeded program
draws PyTorch's numbers bit for bit.

Owns `Engine` (the state of PyTorch's `CPUGeneratorImpl`: an mt19937 seeded as
`at::mt19937(seed)`, plus its cached Box-Muller samples; `state_bytes`/`from_state_bytes` in
the layout of PyTorch's `get_rng_state`, 5056 bytes) and the transforms of ATen's CPU kernels
(aten/src/ATen/core/TransformationHelper.h, DistributionsHelper.h,
native/cpu/DistributionTemplates.h, the multinomial and randperm kernels), each vectorised over
a block of raw words drawn at once (NumPy's MT19937 gives the same tempered 32-bit outputs as
PyTorch's engine for the same 624-word state; full-range uint32 `integers` return them in order).

What makes the numbers PyTorch's, beyond the transforms' formulas:
- the draw widths: `random()` is one 32-bit word, `random64()` two (first word high); float,
  half and bfloat16 uniforms take 24 bits of one word, double ones 53 bits of two;
- floating-point contraction: PyTorch's CPU kernels are compiled with FMA, and GCC fuses a
  multiply into the add that uses it (`x * (to - from) + from`, `normal * std + mean`, the
  polynomial steps of the AVX2 `log256_ps`/`sincos256_ps` that `randn` in float32 uses), so
  those steps are single-rounding fused multiply-adds here too (`_fma32`, `_fma64`);
- the math library: float64 `log`, `log1p`, `exp` and `tan` are glibc's (`_libm`: Python's
  `math` calls them; NumPy's own vectorised `log`/`exp` differ in the last bit for ~0.5% of
  inputs), while NumPy's float64 `sin`/`cos` are glibc's already;
- `normal_` on >= 16 contiguous elements fills uniforms first and transforms blocks of 16
  (the last block recomputed from 16 fresh uniforms when the size is not a multiple of 16);
  fewer elements take `normal_distribution<double>`, which caches the second Box-Muller value
  in the generator (part of its state).

Not here: which tensor gets which draw (jitorch/_random.py, _random_inplace.py) and dropout
masks (a Philox stream, jitorch/_philox.py, shared with compiled code).
"""
from __future__ import annotations

import math
import struct

import numpy as np

__all__ = ["Engine", "STATE_BYTES", "uniform", "normal", "normal_serial", "int_from_to",
           "int_full", "bernoulli_tensor", "bernoulli_scalar", "exponential", "geometric",
           "cauchy", "log_normal", "poisson", "randperm", "multinomial"]

_N = 624
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

    __slots__ = ("seed", "bitgen", "words", "fresh", "next_double", "next_float")

    def __init__(self, seed: int):
        self._new_bitgen()
        self.reseed(seed)

    def _new_bitgen(self) -> None:
        self.bitgen = np.random.MT19937()
        # (full-range uint32 `integers` are the raw outputs in order, 3x faster than random_raw)
        self.words = np.random.Generator(self.bitgen).integers

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
        return self.words(0, 1 << 32, n, dtype=np.uint32)

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
def _fma32(a, b, c):
    """float32 a * b + c rounded once (the product is exact in float64; the double rounding
    of the sum, float64 then float32, differs from one rounding in ~2**-29 of cases)."""
    p = np.multiply(a, b, dtype=np.float64)
    p += c
    return p.astype(np.float32)


def _two_prod(a, b):
    """a * b = p + e exactly (Dekker's product with Veltkamp's split)."""
    p = a * b
    s = 134217729.0  # 2**27 + 1
    t = s * a
    ah = t - (t - a)
    al = a - ah
    t = s * b
    bh = t - (t - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _fma64(a, b, c):
    """float64 a * b + c with one rounding (error-free product and sum; the last addition
    rounds once but for a remainder ~2**-105 of the result)."""
    a, b, c = (np.asarray(v, np.float64) for v in (a, b, c))
    with np.errstate(all="ignore"):
        p, e = _two_prod(a, b)
        s = p + c
        bb = s - p
        t = (p - (s - bb)) + (c - bb)
        out = s + (t + e)
    # non-finite products or sums: the plain expression (the error terms are NaN there)
    bad = ~np.isfinite(out)
    if np.any(bad):
        with np.errstate(all="ignore"):
            out = np.where(bad, a * b + c, out)
    return out


_LIBM = {name: np.frompyfunc(getattr(math, name), 1, 1) for name in ("log1p", "tan")}
# glibc's log and exp are within 0.52 ulp of the exact value, so they return the nearest
# double unless the exact value lies within 0.02 ulp of a midpoint between two doubles: the
# result is the long-double value rounded, except near midpoints, where `math` decides
_NEAR_TIE = (("log", np.log, math.log), ("exp", np.exp, math.exp))


def _libm_near_ties(x: np.ndarray, np_fn, math_fn) -> np.ndarray:
    with np.errstate(all="ignore"):
        y = np_fn(x.astype(np.longdouble))
        d = y.astype(np.float64)
        frac = np.abs(y - d) / np.spacing(np.abs(d)).astype(np.longdouble)
        # (a power of two has a finer spacing below it: decide those by `math` too)
        odd = (frac > 0.475) | (np.frexp(d)[0] == 0.5) | ~np.isfinite(frac)
    idx = np.flatnonzero(odd)
    if idx.size:
        flat = d.reshape(-1)  # (a view: d is a fresh contiguous array)
        flat[idx] = _math_at(math_fn, x.reshape(-1)[idx], flat[idx])
    return d


def _math_at(math_fn, x: np.ndarray, ieee: np.ndarray) -> np.ndarray:
    """math_fn elementwise; where it raises (log(0), exp overflow), the IEEE value given."""
    def one(v, dflt):
        try:
            return math_fn(v)
        except (ValueError, OverflowError):
            return dflt
    return np.frompyfunc(one, 2, 1)(x, ieee).astype(np.float64)


def _libm(name: str, x) -> np.ndarray:
    """glibc's float64 `name` elementwise (what PyTorch's kernels call)."""
    x = np.asarray(x, np.float64)
    if name in ("sin", "cos"):  # NumPy's float64 sin/cos call the C library's
        return getattr(np, name)(x)
    if x.size == 0:
        return x.copy()
    for n, np_fn, math_fn in _NEAR_TIE:
        if n == name:
            return _libm_near_ties(x, np_fn, math_fn)
    return _LIBM[name](x).astype(np.float64)


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
    if lo == 0.0 and hi == 1.0 and np_dtype in (np.float32, np.float64):
        return _unit53(eng.u64(n)) if np_dtype == np.float64 else _unit24(eng.u32(n))
    if np_dtype == np.float64:
        v = _fma64(_unit53(eng.u64(n)), hi - lo, lo)
        a, b = lo, hi
    else:
        a, b = (np.float32(np.array(x).astype(np_dtype).astype(np.float32)) for x in (lo, hi))
        with np.errstate(over="ignore"):
            v = _fma32(_unit24(eng.u32(n)), b - a, a).astype(np_dtype)
    top = np.array(b).astype(np_dtype)
    return np.where(v == top, np.array(a).astype(np_dtype), v)


# --- normal --------------------------------------------------------------------------------------
_f = np.float32
_LOG_P = (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
          1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
          3.3333331174E-1)


def _log256(x: np.ndarray) -> np.ndarray:
    """avx_mathfun's `log256_ps` (cephes logf) for x in (0, 1], as GCC compiles it (its
    multiply-adds fused)."""
    bits = np.maximum(x, _f(1.17549435e-38)).view(np.int32)
    e = ((bits >> 23) - 0x7f).astype(np.float32) + _f(1)
    m = ((bits & ~0x7f800000) | _f(0.5).view(np.int32)).view(np.float32)
    small = m < _f(0.707106781186547524)
    m1 = m - _f(1)
    e = e - small.astype(np.float32)
    x = m1 + np.where(small, m, _f(0))
    z = x * x
    y = np.full_like(x, _f(_LOG_P[0]))
    for p in _LOG_P[1:]:
        y = _fma32(y, x, _f(p))
    y = _fma32(y * x, z, e * _f(-2.12194440e-4))
    y = _fma32(z, _f(-0.5), y)
    return _fma32(e, _f(0.693359375), x + y)


def _sincos256(x: np.ndarray):
    """avx_mathfun's `sincos256_ps` (cephes sinf/cosf) for x >= 0, as GCC compiles it."""
    j = (x * _f(1.27323954473516)).astype(np.int32)
    j = (j + 1) & ~1
    y = j.astype(np.float32)
    sign_sin = (j & 4) << 29
    sign_cos = (~(j - 2) & 4) << 29
    poly = (j & 2) == 0
    x = _fma32(y, _f(-0.78515625), x)
    x = _fma32(y, _f(-2.4187564849853515625e-4), x)
    x = _fma32(y, _f(-3.77489497744594108e-8), x)
    z = x * x
    yc = _fma32(_f(2.443315711809948E-005), z, _f(-1.388731625493765E-003))
    yc = _fma32(yc, z, _f(4.166664568298827E-002))
    yc = _fma32(yc * z, z, -(z * _f(0.5))) + _f(1)
    ys = _fma32(_f(-1.9515295891E-4), z, _f(8.3321608736E-3))
    ys = _fma32(ys, z, _f(-1.6666654611E-1))
    ys = _fma32(ys * z, x, x)
    s = np.where(poly, ys, _f(0)) + np.where(poly, _f(0), yc)
    c = np.where(poly, yc, _f(0)) + np.where(poly, _f(0), ys)
    return ((s.view(np.int32) ^ sign_sin).view(np.float32),
            (c.view(np.int32) ^ sign_cos).view(np.float32))


def _box_muller16_f32(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """`normal_fill_16_AVX2` over blocks of 16 float32 uniforms."""
    u = u.reshape(-1, 16)
    r = np.sqrt(_f(-2) * _log256(_f(1) - u[:, :8]))
    s, c = _sincos256(_f(2.0 * math.pi) * u[:, 8:])
    m, sd = _f(mean), _f(std)
    return np.concatenate([_fma32(r * c, sd, m), _fma32(r * s, sd, m)], axis=1).reshape(-1)


def _box_muller16_f64(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """`normal_fill_16<double>` over blocks of 16 float64 uniforms."""
    u = u.reshape(-1, 16)
    r = np.sqrt(-2.0 * _libm("log", 1.0 - u[:, :8]))
    th = (2.0 * math.pi) * u[:, 8:]
    return np.concatenate([_fma64(r * np.cos(th), std, mean), _fma64(r * np.sin(th), std, mean)],
                          axis=1).reshape(-1)


_CHUNK = 1 << 16  # elements (a multiple of 16)


def normal(eng: Engine, n: int, np_dtype, mean: float = 0.0, std: float = 1.0,
           contiguous: bool = True) -> np.ndarray:
    """`normal_(mean, std)` on n elements of a real dtype (float32 or float64 for the block
    path; reduced-precision dtypes take the float32 path's numbers, rounded)."""
    np_dtype = np.dtype(np_dtype)
    if n < 16 or not contiguous:
        return normal_serial(eng, n, mean, std).astype(np_dtype)
    if np_dtype == np.float64:
        u, block = _unit53(eng.u64(n)), _box_muller16_f64
        tail = (lambda: _unit53(eng.u64(16)))
    else:
        u, block = _unit24(eng.u32(n)), _box_muller16_f32
        tail = (lambda: _unit24(eng.u32(16)))
    full = n - n % 16
    out = np.empty(n, u.dtype)
    for i in range(0, full, _CHUNK):  # chunks: the transforms' temporaries stay in cache
        j = min(i + _CHUNK, full)
        out[i:j] = block(u[i:j], mean, std)
    if full != n:
        out[n - 16:] = block(tail(), mean, std)
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
    return _fma64(sigma, _libm("tan", math.pi * (_unit53(eng.u64(n)) - 0.5)), median)


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
    z = (eng.u32(n - 1) % np.arange(n, 1, -1, dtype=np.uint64)).tolist()
    perm = list(range(n))
    for i, k in enumerate(z):
        j = i + k
        perm[i], perm[j] = perm[j], perm[i]
    return np.array(perm, dtype=np.int64)


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
