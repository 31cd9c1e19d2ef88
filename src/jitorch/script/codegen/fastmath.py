"""Vectorisable float32 transcendental functions for generated CPU code.

Numba has no SVML: float32 `np.exp/np.tanh/np.log/math.erf` inside njit call scalar libm, which
blocks loop vectorisation (1.3-6.6x slower than NumPy's SIMD loops, see NUMBA_NOTES.md). This
module owns branch-free polynomial/rational replacements written in plain Numba, without libm
calls, that LLVM vectorises when they are inlined into an elementwise loop:

    exp_f32, log_f32, tanh_f32, sigmoid_f32, erf_f32, gelu_tanh_f32   (float32 -> float32)

Arguments must be float32 scalars (other types are a Numba TypingError, on purpose: float64 data
should keep using libm, which Numba runs as fast as NumPy); cast with np.float32(...) first.

Use from generated code: call them from an `njit(nogil=True, error_model="numpy",
fastmath={"reassoc", "contract"})` loop (they are `njit(inline="always")`, so Numba inlines them
at IR level and they are lowered with the caller's flags). They are written to stay accurate
under those flags: the order-sensitive steps (Cody-Waite argument reduction, the two-step 2**n
scaling) are emitted by `@intrinsic`s whose instructions carry the harmless "contract" flag, which
Numba's fastmath pass then leaves alone (it only flags instructions that have none); other
critical combinations run in float64 (exact enough whatever the flags, still vectorised). They
assume IEEE semantics: do NOT use them under `fastmath=True` ("nnan"/"ninf" would delete the
special-value selects). `error_model="numpy"` is needed for vectorisation of the divisions (tanh,
sigmoid, gelu). `SOURCE_HASH` (hash of this file) lets a code cache key on this module's version,
since Numba's cache ignores changes in other files. `FUNCTIONS` maps op name -> function.

Techniques (all float32 unless said): exp: n = floor(x*log2(e) + 1/2), r = x - n*C1 - n*C2
(Cephes split of ln2), Cephes degree-6 polynomial, scale by 2**n via exponent bits in two exact
steps, so the result is rounded once: correct overflow to inf and gradual underflow to
subnormals/0. log: exponent/mantissa split by bitcast (subnormals pre-scaled by 2**25), Cephes
polynomial, e*ln2 added in float64. tanh: Cephes odd polynomial for |x| < 0.625, else
1 - 2/(exp(2|x|) + 1) in float64. sigmoid: e = exp(-|x|), (x < 0 ? e : 1)/(1 + e) in float64
(never overflows, exact subnormal tail). erf (float64 polynomials, fitted for this module):
x*P(x**2) for |x| < 0.921875 (relative error 4e-10), else 1 - exp(Q(|x|)) with Q a degree-8
fit of log(erfc) on [0.921875, 4] (beyond 4, erf rounds to +-1). gelu_tanh:
0.5*x*(1 + tanh(u)) rewritten as x/(1 + exp(-2u)) (no cancellation for x < 0), with u and the
whole exp in float64 (-2u reaches ~87: a float32 u would cost ~100 ulp).
Both branches of every select are always computed: that is what lets LLVM vectorise.

Special values: exp(+-inf) = inf/0, exp(nan) = nan, overflow -> inf, underflow -> subnormal/0;
log(0) = log(-0) = -inf, log(x<0) = nan, log(inf) = inf; tanh/erf(+-0) = +-0, (+-inf) = +-1;
sigmoid(+-inf) = 1/0; gelu_tanh(inf) = inf, gelu_tanh(-inf) = nan (PyTorch and the defining
formula give nan: -inf * 0), gelu_tanh(-0) = -0. nan in -> nan out everywhere.

Measured max error, in ulp of the float32 result, against float64 references (NumPy, or
Numba's float64 libm for erf) rounded to float32; exhaustive over all 2^32 float32 inputs
(bench/fastmath_kernels.py --exhaustive: each function inlined in a loop compiled with
{"reassoc", "contract"}; exp also with default flags; tests/test_fastmath.py checks both flag
sets on a 2^20-point sweep):

    exp_f32 1, log_f32 1, tanh_f32 1, sigmoid_f32 1, erf_f32 1, gelu_tanh_f32 1

(gelu_tanh's reference is x/(1 + exp(-2u)) in float64: the literal 0.5*x*(1 + tanh(u)) cancels
catastrophically for x < -5 even in float64; PyTorch float32 returns -0.0 there (e.g. at
x = -10), where this function returns the tiny correctly rounded negative value.)
"""
from __future__ import annotations

import hashlib

import numpy as np
from llvmlite import ir as llir
from numba import njit, types
from numba.extending import intrinsic

with open(__file__, "rb") as _f:
    SOURCE_HASH = hashlib.sha1(_f.read()).hexdigest()[:16]

__all__ = ["exp_f32", "log_f32", "tanh_f32", "sigmoid_f32", "erf_f32", "gelu_tanh_f32",
           "FUNCTIONS", "SOURCE_HASH"]

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)


# --- bit-level helpers: raw LLVM (no libm, no data-dependent branches, vectorisable) ---

@intrinsic
def _pow2_f64(typingctx, n):
    """2.0**n as float64 for a float64 n holding an integer in [-1022, 1023]: builds the
    exponent field directly ((n + 1023) << 52). The i32 conversion vectorises on AVX2 too."""
    if n != types.float64:
        return None
    sig = types.float64(types.float64)

    def codegen(context, builder, signature, args):
        i = builder.fptosi(args[0], _I32)
        i = builder.add(i, llir.Constant(_I32, 1023))
        i = builder.shl(builder.sext(i, _I64), llir.Constant(_I64, 52))
        return builder.bitcast(i, llir.DoubleType())

    return sig, codegen


@intrinsic
def _mant_f32(typingctx, x):
    """Mantissa of a positive normal float32 x scaled into [0.5, 1): keep the fraction bits,
    set the biased exponent to 126."""
    if x != types.float32:
        return None
    sig = types.float32(types.float32)

    def codegen(context, builder, signature, args):
        i = builder.bitcast(args[0], _I32)
        i = builder.or_(builder.and_(i, llir.Constant(_I32, 0x007FFFFF)),
                        llir.Constant(_I32, 0x3F000000))
        return builder.bitcast(i, llir.FloatType())

    return sig, codegen


@intrinsic
def _expo_f32(typingctx, x):
    """Exponent e of a positive normal float32 x with x = m * 2**e, m in [0.5, 1); as float32.
    (Done in i32: Numba would promote int32 arithmetic to int64.)"""
    if x != types.float32:
        return None
    sig = types.float32(types.float32)

    def codegen(context, builder, signature, args):
        i = builder.bitcast(args[0], _I32)
        i = builder.and_(builder.lshr(i, llir.Constant(_I32, 23)), llir.Constant(_I32, 0xFF))
        i = builder.sub(i, llir.Constant(_I32, 126))
        return builder.sitofp(i, llir.FloatType())

    return sig, codegen


# --- shared cores -------------------------------------------------------------------------

# Cody-Waite split of ln2 (Cephes): n*_C1 is exact for |n| < 2**15.
_C1 = 0.693359375
_C2 = -2.12194440e-4


def _protected(instr):
    """Give an fp instruction the harmless "contract" flag. Numba's fastmath pass only adds the
    caller's flags (e.g. "reassoc") to instructions that have none, so this keeps LLVM from
    re-associating what must be evaluated in order."""
    instr.flags.append("contract")
    return instr


@intrinsic
def _exp_reduce_f32(typingctx, x, n):
    """(x - n*C1) - n*C2 in float32, in this order even under the caller's "reassoc"."""
    if (x, n) != (types.float32, types.float32):
        return None
    sig = types.float32(types.float32, types.float32)

    def codegen(context, builder, signature, args):
        x, n = args
        f32 = llir.FloatType()
        r = _protected(builder.fsub(x, _protected(builder.fmul(n, llir.Constant(f32, _C1)))))
        return _protected(builder.fsub(r, _protected(builder.fmul(n, llir.Constant(f32, _C2)))))

    return sig, codegen


@intrinsic
def _ldexp_f32(typingctx, p, n):
    """p * 2**n in float32 for n (an integral float32) in [-150, 128] and p in [0.5, 2]:
    (p * 2**(n>>1)) * 2**(n - (n>>1)); the first product is exact, so the result is rounded
    once, overflowing to inf and underflowing gradually. Protected from re-association (that
    would form 2**n1 * 2**n2 first, which over/underflows)."""
    if (p, n) != (types.float32, types.float32):
        return None
    sig = types.float32(types.float32, types.float32)

    def codegen(context, builder, signature, args):
        p, n = args
        f32 = llir.FloatType()

        def pow2(k):
            k = builder.shl(builder.add(k, llir.Constant(_I32, 127)), llir.Constant(_I32, 23))
            return builder.bitcast(k, f32)

        k = builder.fptosi(n, _I32)
        k1 = builder.ashr(k, llir.Constant(_I32, 1))
        k2 = builder.sub(k, k1)
        return _protected(builder.fmul(_protected(builder.fmul(p, pow2(k1))), pow2(k2)))

    return sig, codegen


_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
_INF32 = np.float32(np.inf)
_NAN32 = np.float32(np.nan)
_F32 = {"contract"}


@njit(inline="always", fastmath=_F32, error_model="numpy")
def _exp_poly(r):
    """e**r for |r| <= ln2/2 (Cephes expf polynomial), float32."""
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    return p * (r * r) + r + np.float32(1.0)


@njit(inline="always", fastmath=_F32, error_model="numpy")
def _exp_core(xd):
    """exp of a float64 argument, all in float64 (for gelu, whose argument is not exactly a
    float32), better than float32 accuracy, returned as float64 before the final rounding.
    Caller guarantees xd is not nan."""
    # Clamp keeps n in the exponent range of the float64 scale below. Below -104 the float32
    # result is 0 anyway (exp(-104) < FLT_TRUE_MIN / 2); the top stays far above FLT_MAX so that
    # callers combining in float64 (gelu: x / (1 + e)) see a huge e, not a clamped one.
    xd = min(max(xd, -104.0), 709.0)
    n = np.floor(xd * _LOG2E + 0.5)
    r = xd - n * _LN2  # |r| <= ln2/2; exact enough in float64 whatever the flags
    # Same Cephes polynomial, evaluated in float64: the float32 evaluation error would give
    # gelu 2 ulp, this gives 1.
    p = 1.9875691500e-4
    p = p * r + 1.3981999507e-3
    p = p * r + 8.3334519073e-3
    p = p * r + 4.1665795894e-2
    p = p * r + 1.6666665459e-1
    p = p * r + 5.0000001201e-1
    p = p * (r * r) + r + 1.0
    return p * _pow2_f64(n)


@njit(inline="always", fastmath=_F32, error_model="numpy")
def _exp_nn(xd):
    """_exp_core that also accepts nan (nan -> nan), float64 result."""
    nan = xd != xd
    e = _exp_core(0.0 if nan else xd)
    return xd if nan else e


# --- public functions ---------------------------------------------------------------------

@njit(inline="always", fastmath=_F32, error_model="numpy")
def exp_f32(x):
    """exp(x) for float32 x; max error 1 ulp. All float32 (twice the SIMD width of float64)."""
    nan = x != x
    # exp(89) > FLT_MAX, exp(-104) < FLT_TRUE_MIN / 2: the clamp only keeps n in range. The nan
    # select keeps fptosi away from nan (poison in LLVM).
    xc = min(max(np.float32(0.0) if nan else x, np.float32(-104.0)), np.float32(89.0))
    n = np.floor(xc * np.float32(_LOG2E) + np.float32(0.5))
    e = _ldexp_f32(_exp_poly(_exp_reduce_f32(xc, n)), n)
    return x if nan else e


@njit(inline="always", fastmath=_F32, error_model="numpy")
def log_f32(x):
    """log(x) for float32 x; max error 1 ulp."""
    # Subnormals: scale into the normal range first (select, not branch).
    tiny = x < np.float32(1.1754944e-38)
    xs = x * np.float32(33554432.0) if tiny else x  # 2**25
    m = _mant_f32(xs)
    e = _expo_f32(xs) - (np.float32(25.0) if tiny else np.float32(0.0))
    small = m < np.float32(0.70710677)
    e = e - np.float32(1.0) if small else e
    m = (m + m - np.float32(1.0)) if small else (m - np.float32(1.0))
    z = m * m
    y = np.float32(7.0376836292e-2)
    y = y * m - np.float32(1.1514610310e-1)
    y = y * m + np.float32(1.1676998740e-1)
    y = y * m - np.float32(1.2420140846e-1)
    y = y * m + np.float32(1.4249322787e-1)
    y = y * m - np.float32(1.6668057665e-1)
    y = y * m + np.float32(2.0000714765e-1)
    y = y * m - np.float32(2.4999993993e-1)
    y = y * m + np.float32(3.3333331174e-1)
    y = y * m * z - np.float32(0.5) * z
    r = np.float32(np.float64(m + y) + np.float64(e) * _LN2)
    r = _INF32 if x == _INF32 else r
    r = -_INF32 if x == np.float32(0.0) else r
    r = _NAN32 if x < np.float32(0.0) else r
    return x if x != x else r


@njit(inline="always", fastmath=_F32, error_model="numpy")
def tanh_f32(x):
    """tanh(x) for float32 x; max error 1 ulp."""
    a = abs(x)
    # |x| < 0.625: odd polynomial (Cephes tanhf); exact sign, -0.0 preserved.
    z = x * x
    p = np.float32(-5.70498872745e-3)
    p = p * z + np.float32(2.06390887954e-2)
    p = p * z - np.float32(5.37397155531e-2)
    p = p * z + np.float32(1.33314422036e-1)
    p = p * z - np.float32(3.33332819422e-1)
    # copysign: p*z*x + x is +0.0 for x = -0.0 (-0 * -0 = +0); tanh is odd, so this is exact.
    small = np.copysign(p * z * x + x, x)
    # |x| >= 0.625: 1 - 2/(exp(2|x|) + 1), no cancellation since the result is >= 0.55.
    e = np.float64(exp_f32(a + a))  # 2|x| is exact (or inf, which gives 1)
    big = np.float32(1.0 - 2.0 / (e + 1.0))
    big = -big if x < np.float32(0.0) else big
    return small if a < np.float32(0.625) else big  # nan: big branch, exp(nan) = nan


@njit(inline="always", fastmath=_F32, error_model="numpy")
def sigmoid_f32(x):
    """1 / (1 + exp(-x)) for float32 x; max error 1 ulp."""
    e = np.float64(exp_f32(-abs(x)))  # in [0, 1]: never overflows
    num = e if x < np.float32(0.0) else 1.0
    return np.float32(num / (1.0 + e))


@njit(inline="always", fastmath=_F32, error_model="numpy")
def erf_f32(x):
    """erf(x) for float32 x; max error 1 ulp. Polynomials fitted for this module (see the
    docstring) and evaluated in float64."""
    xd = np.float64(x)
    s = xd * xd
    p = 8.365008626326135e-05
    p = p * s - 0.0008141394960171454
    p = p * s + 0.005200905783978044
    p = p * s - 0.026859341780088888
    p = p * s + 0.11283694350489201
    p = p * s - 0.37612633650224947
    p = p * s + 1.128379166627448
    small = np.float32(xd * p)
    # |x| >= 0.921875: erf = 1 - erfc, log(erfc(t)) ~ Q(t - 2.5) on [0.921875, 4]; beyond 4
    # erf rounds to +-1 in float32, so clamp t (this also maps inf to 1).
    t = min(abs(xd), 4.0) - 2.5
    q = 1.6130857364325609e-06
    q = q * t - 1.3309159818250784e-05
    q = q * t + 7.739888389893977e-05
    q = q * t - 0.0004201456785399906
    q = q * t + 0.0021651541237743244
    q = q * t - 0.010858515627180087
    q = q * t - 0.9438936376197491
    q = q * t - 5.3526806814698045
    q = q * t - 7.806815277221632
    # q in [-17, -1.9]: rounding it to float32 changes erfc by < 1e-6 relative, erf by < 3e-8.
    big = np.float32(1.0 - np.float64(exp_f32(np.float32(q))))
    big = -big if x < np.float32(0.0) else big
    big = x if x != x else big
    return small if abs(x) < np.float32(0.921875) else big


@njit(inline="always", fastmath=_F32, error_model="numpy")
def gelu_tanh_f32(x):
    """0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3))) for float32 x (PyTorch's
    gelu(approximate="tanh")); max error 1 ulp. Computed as x / (1 + exp(-2u))."""
    xd = np.float64(x)
    u2 = -1.5957691216057308 * (xd + 0.044715 * (xd * xd * xd))  # -2u; no overflow in f64
    e = _exp_nn(u2)  # up to ~8e307 for x << 0: x / e underflows to -0.0, the right limit
    r = np.float32(xd / (1.0 + e))
    return _NAN32 if x == -_INF32 else r  # -inf * 0 in the defining formula (and PyTorch)


FUNCTIONS = {
    "exp": exp_f32, "log": log_f32, "tanh": tanh_f32, "sigmoid": sigmoid_f32,
    "erf": erf_f32, "gelu_tanh": gelu_tanh_f32,
}
"""Name -> function, for code generators that map elementwise ops to these."""
