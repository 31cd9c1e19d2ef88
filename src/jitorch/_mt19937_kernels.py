"""The compiled loops of jitorch/_mt19937.py: PyTorch's CPU sampling transforms over raw mt19937
words (uniform, the blocks of 16 of `normal_`, randperm's Fisher-Yates) and glibc's float64
math, one pass each.

Imported by _mt19937 on its first draw that needs one (never by `import jitorch`); each function
compiles on its first call and is cached on disk (`cache=True`), typed only by its arrays'
dtypes. No `fastmath`: every rounding is the one PyTorch's kernel makes, and the multiply-adds GCC
fuses in PyTorch's kernels are fused here explicitly (`_fma`, one rounding, LLVM's `llvm.fma`).
`math.log`/`log1p`/`exp`/`tan`/`sin`/`cos` compile to calls of the C library's functions
(glibc's, as PyTorch calls them; Numba vectorises them only with Intel SVML, which jitorch does
not install).
"""
from __future__ import annotations

import math
import sys

import numpy as np
from numba import njit, types
from numba.extending import intrinsic
from llvmlite import ir

from .script.kernels.cache_guards import guard_eager

_OPTS = dict(nogil=True, cache=True)
_f = np.float32


@intrinsic
def _fma(typingctx, a, b, c):
    """a * b + c rounded once (float32 or float64)."""
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, sig, args):
        return builder.fma(*args)
    return a(a, b, c), codegen


@intrinsic
def _bits(typingctx, x):
    """A float32's bits as int32."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(types.float32), codegen


@intrinsic
def _from_bits(typingctx, i):
    """The float32 whose bits are the int32 `i`."""
    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(types.int32), codegen


# --- mt19937 -----------------------------------------------------------------------------------
_N, _M, _MATRIX_A, _UPPER, _LOWER = 624, 397, 0x9908B0DF, 0x80000000, 0x7FFFFFFF


@njit(**_OPTS)
def _mix(mt, i, j, k):
    """Word i of the next state from words i, j (= i + 1) and k (= i + 397), all mod 624."""
    y = (np.int64(mt[i]) & _UPPER) | (np.int64(mt[j]) & _LOWER)
    mt[i] = np.int64(mt[k]) ^ (y >> 1) ^ (-(y & 1) & _MATRIX_A)


@njit(**_OPTS)
def _twist(mt):
    for i in range(_N - _M):
        _mix(mt, i, i + 1, i + _M)
    for i in range(_N - _M, _N - 1):
        _mix(mt, i, i + 1, i + _M - _N)
    _mix(mt, _N - 1, 0, _M - 1)


@njit(**_OPTS)
def _fill(mt, out):
    """`out` filled with the next tempered outputs of the mt19937 whose 624 words and position
    (word 624) are `mt` (NumPy's `mt19937_state`, in place), advancing it."""
    n = out.size
    pos = np.int64(mt[_N])
    i = 0
    while i < n:
        if pos >= _N:
            _twist(mt)
            pos = 0
        m = min(n - i, _N - pos)
        for j in range(m):
            y = np.int64(mt[pos + j])
            y ^= y >> 11
            y ^= (y << 7) & 0x9D2C5680
            y ^= (y << 15) & 0xEFC60000
            out[i + j] = y ^ (y >> 18)
        i += m
        pos += m
    mt[_N] = pos


@njit(**_OPTS)
def mt_words(mt, n):
    """The next n outputs of the mt19937 `mt` (see `_fill`)."""
    out = np.empty(n, np.uint32)
    _fill(mt, out)
    return out


# --- transforms ----------------------------------------------------------------------------------
_U24, _M53 = np.uint32(0xFFFFFF), np.uint64((1 << 53) - 1)
_S24, _S53 = _f(2.0 ** -24), 2.0 ** -53


@njit(**_OPTS)
def _u24(w):
    """A float32 uniform from one word (24 bits)."""
    return _f(w & _U24) * _S24


@njit(**_OPTS)
def _u53(hi, lo):
    """A float64 uniform from two words (`random64()`: the first the high half; 53 bits)."""
    return np.float64(((np.uint64(hi) << np.uint64(32)) | np.uint64(lo)) & _M53) * _S53


# The transforms draw their words from the generator `mt` in chunks of _CHUNK values through a
# scratch buffer: no array of n words (its fresh pages cost as much as the transform).
_CHUNK = 1024  # (a multiple of 16)


@njit(**_OPTS)
def uniform32(mt, n, lo, span, top):
    """n float32 `lo + u * span` fused, from one word each; a value equal to `top` becomes
    `lo`."""
    out = np.empty(n, np.float32)
    words = np.empty(_CHUNK, np.uint32)
    for c in range(0, n, _CHUNK):
        m = min(_CHUNK, n - c)
        _fill(mt, words[:m])
        for i in range(m):
            v = _fma(_u24(words[i]), span, lo)
            out[c + i] = lo if v == top else v
    return out


@njit(**_OPTS)
def uniform64(mt, n, lo, span, top):
    """n float64 `lo + u * span` fused, from two words each; a value equal to `top` becomes
    `lo`."""
    out = np.empty(n, np.float64)
    words = np.empty(2 * _CHUNK, np.uint32)
    for c in range(0, n, _CHUNK):
        m = min(_CHUNK, n - c)
        _fill(mt, words[:2 * m])
        for i in range(m):
            v = _fma(_u53(words[2 * i], words[2 * i + 1]), span, lo)
            out[c + i] = lo if v == top else v
    return out


_LOG_P = tuple(_f(p) for p in (7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1,
                                -1.2420140846E-1, 1.4249322787E-1, -1.6668057665E-1,
                                2.0000714765E-1, -2.4999993993E-1, 3.3333331174E-1))
_P0, _P1, _P2, _P3, _P4, _P5, _P6, _P7, _P8 = _LOG_P
_MIN_NORM, _HALF_BITS, _SQRTH = _f(1.17549435e-38), np.int32(0x3F000000), _f(0.707106781186547524)
_ONE, _ZERO, _HALF, _TWO = _f(1), _f(0), _f(0.5), _f(2)
_Q1, _Q2 = _f(-2.12194440e-4), _f(0.693359375)
_FOPI, _DP1, _DP2, _DP3 = (_f(1.27323954473516), _f(-0.78515625),
                           _f(-2.4187564849853515625e-4), _f(-3.77489497744594108e-8))
_C0, _C1, _C2 = _f(2.443315711809948E-005), _f(-1.388731625493765E-003), _f(4.166664568298827E-002)
_S0, _S1, _S2 = _f(-1.9515295891E-4), _f(8.3321608736E-3), _f(-1.6666654611E-1)
_TWO_PI32 = _f(2.0 * math.pi)


@njit(**_OPTS)
def _log256(x):
    """avx_mathfun's `log256_ps` (cephes logf) for x in (0, 1], as GCC compiles it (its
    multiply-adds fused; no branches, so that the loop over a block vectorises)."""
    bits = _bits(max(x, _MIN_NORM))
    e = _f((bits >> 23) - 0x7f) + _ONE
    m = _from_bits(np.int32((bits & 0x007FFFFF) | _HALF_BITS))
    small = m < _SQRTH
    e = e - (_ONE if small else _ZERO)
    x = (m - _ONE) + (m if small else _ZERO)
    z = x * x
    y = _fma(_P0, x, _P1)
    y = _fma(y, x, _P2)
    y = _fma(y, x, _P3)
    y = _fma(y, x, _P4)
    y = _fma(y, x, _P5)
    y = _fma(y, x, _P6)
    y = _fma(y, x, _P7)
    y = _fma(y, x, _P8)
    y = _fma(y * x, z, e * _Q1)
    y = _fma(z, -_HALF, y)
    return _fma(e, _Q2, x + y)


@njit(**_OPTS)
def _signed(v, sign):
    """v with its sign bit xor-ed with bit 31 of `sign` (int32 truncation keeps the low 32
    bits)."""
    return _from_bits(np.int32(np.int64(_bits(v)) ^ sign))


@njit(**_OPTS)
def _sincos256(x):
    """avx_mathfun's `sincos256_ps` (cephes sinf/cosf) for x >= 0, as GCC compiles it (no
    branches)."""
    j = np.int64(np.int32(x * _FOPI))
    j = (j + 1) & ~1
    y = _f(j)
    sign_sin = (j & 4) << 29
    sign_cos = (~(j - 2) & 4) << 29
    x = _fma(y, _DP1, x)
    x = _fma(y, _DP2, x)
    x = _fma(y, _DP3, x)
    z = x * x
    yc = _fma(_C0, z, _C1)
    yc = _fma(yc, z, _C2)
    yc = _fma(yc * z, z, -(z * _HALF)) + _ONE
    ys = _fma(_S0, z, _S1)
    ys = _fma(ys, z, _S2)
    ys = _fma(ys * z, x, x)
    poly = (j & 2) == 0
    s = (ys if poly else _ZERO) + (_ZERO if poly else yc)
    c = (yc if poly else _ZERO) + (_ZERO if poly else ys)
    return _signed(s, sign_sin), _signed(c, sign_cos)


@njit(**_OPTS)
def normal16_f32(mt, n, mean, std):
    """`normal_fill_16_AVX2` on n (a multiple of 16) float32 uniforms, one word each, in blocks
    of 16: the first 8 radii, the last 8 angles. (Radii and angles are gathered into two flat
    arrays first, so that the transform's loop vectorises as the AVX2 kernel does.)"""
    out = np.empty(n, np.float32)
    words = np.empty(_CHUNK, np.uint32)
    rad = np.empty(_CHUNK // 2, np.float32)
    ang = np.empty(_CHUNK // 2, np.float32)
    for c in range(0, n, _CHUNK):
        m = min(_CHUNK, n - c)
        _fill(mt, words[:m])
        for i in range(m // 2):
            b = (i >> 3) * 16 + (i & 7)
            rad[i] = _u24(words[b])
            ang[i] = _u24(words[b + 8])
        for i in range(m // 2):
            r = np.sqrt(-_TWO * _log256(_ONE - rad[i]))
            s, co = _sincos256(_TWO_PI32 * ang[i])
            rad[i] = _fma(r * co, std, mean)
            ang[i] = _fma(r * s, std, mean)
        for i in range(m // 2):
            b = c + (i >> 3) * 16 + (i & 7)
            out[b] = rad[i]
            out[b + 8] = ang[i]
    return out


@njit(**_OPTS)
def normal16_f64(mt, n, mean, std):
    """`normal_fill_16<double>` on n (a multiple of 16) float64 uniforms, two words each, in
    blocks of 16."""
    out = np.empty(n, np.float64)
    words = np.empty(2 * _CHUNK, np.uint32)
    two_pi = 2.0 * math.pi
    for c in range(0, n, _CHUNK):
        m = min(_CHUNK, n - c)
        _fill(mt, words[:2 * m])
        for b in range(0, m, 16):
            for k in range(8):
                i, j = 2 * (b + k), 2 * (b + 8 + k)
                r = math.sqrt(-2.0 * math.log(1.0 - _u53(words[i], words[i + 1])))
                th = two_pi * _u53(words[j], words[j + 1])
                out[c + b + k] = _fma(r * math.cos(th), std, mean)
                out[c + b + 8 + k] = _fma(r * math.sin(th), std, mean)
    return out


@njit(**_OPTS)
def randperm(words, n):
    """PyTorch's Fisher-Yates for n < 2**32 / 20: position i swaps with i + words[i] % (n - i)."""
    perm = np.arange(n)
    for i in range(n - 1):
        j = i + np.int64(words[i]) % (n - i)
        perm[i], perm[j] = perm[j], perm[i]
    return perm


# glibc's float64 functions the transforms call, by name (codes of `libm`)
LIBM = {"log": 0, "log1p": 1, "exp": 2, "tan": 3}


@njit(**_OPTS)
def libm(x, code):
    """glibc's float64 function number `code` (LIBM) of each element of `x` (1-D)."""
    out = np.empty(x.size, np.float64)
    for i in range(x.size):
        v = x[i]
        if code == 0:
            out[i] = math.log(v)
        elif code == 1:
            out[i] = math.log1p(v)
        elif code == 2:
            out[i] = math.exp(v)
        else:
            out[i] = math.tan(v)
    return out


@njit(**_OPTS)
def fma64(x, b, c):
    """float64 `x * b + c` rounded once, for each element of `x` (1-D)."""
    out = np.empty(x.size, np.float64)
    for i in range(x.size):
        out[i] = _fma(x[i], b, c)
    return out


guard_eager(sys.modules[__name__])  # checked, lean loads (script/kernels/cache_guards.py)
