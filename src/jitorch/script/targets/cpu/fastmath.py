"""Vectorisable float32 transcendental functions for generated CPU code.

Numba has no SVML: float32 `np.exp/np.tanh/np.log/math.erf` inside njit call scalar libm, which
blocks loop vectorisation (1.3-6.6x slower than NumPy's SIMD loops, see NUMBA_NOTES.md). This
module owns branch-free polynomial/rational replacements without libm calls (their
instructions emitted through llvmlite, below), that LLVM vectorises when they are inlined into an elementwise loop:

    exp_f32, log_f32, log1p_f32, tanh_f32, sigmoid_f32, erf_f32, gelu_tanh_f32
    (float32 -> float32)

Arguments must be float32 scalars (other types are a Numba TypingError, on purpose: float64 data
should keep using libm, which Numba runs as fast as NumPy); cast with np.float32(...) first.

Use from generated code: call them from an `njit(nogil=True, error_model="numpy",
fastmath={"reassoc", "contract"})` loop. They are plain `njit` functions (`cache=True`),
compiled once per process (or loaded from disk) and linked into the caller, where LLVM inlines
and vectorises them: Numba's IR-level `inline="always"` typed and lowered the whole body again
at every call site, ~0.2-0.3 CPU-s per use in each kernel (a log-softmax kernel with two exp and
one log: 2.0 -> 1.3 CPU-s), for the same machine code speed (measured per function, 64 Ki
float32 elements: within 5% either way). All of them go one step further: their instructions are
emitted by Python (`_emit_*`, llvmlite) and the njit functions only call the `*_ir` @intrinsic
that emits them; generated programs import that intrinsic under the
function's name (`IN_PLACE`, module_text.py), so a program using them compiles no Numba
function for them at all (each cost ~0.12 CPU-s on a first-ever compile, about a sixth of
bench/compile_time.py's gelu) and gets the same instructions LLVM inlined before (bit-identical
results, checked over every 61st float32 bit pattern). Every instruction carries "contract"
alone, as Numba gave the Python form under _F32. They are written to stay accurate under the
caller's flags too: the order-sensitive steps (the "shifter" rounding and Cody-Waite argument
reduction, 2**n * s + (2**n - 1)) are emitted by `@intrinsic`s whose instructions carry the
harmless "contract" flag, which Numba's fastmath pass then leaves alone (it only flags
instructions that have none); log, erf and gelu_tanh run their critical combinations in float64
(exact enough whatever the flags, still vectorised). They assume IEEE semantics: do NOT use them
under `fastmath=True` ("nnan"/"ninf" would delete the special-value selects and the nan
propagation). `error_model="numpy"` is needed for vectorisation of the divisions (tanh,
sigmoid, gelu). `SOURCE_HASH` (hash of this file) lets a code cache key on this module's version,
since Numba's cache ignores changes in other files. `FUNCTIONS` maps op name -> function.

Techniques (all float32 unless said): exp: n = rint(x*log2(e)) by the "shifter" trick (adding
1.5*2**23 + bias rounds to an integer and leaves n + bias in the low mantissa bits, which one
shift turns into the exponent field of 2**(n + bias): no float->int conversion), r = x - n*C1 -
n*C2 (Cephes split of ln2), s = expm1(r) by the Cephes degree-7 polynomial, result
(2**(n+b) * s + 2**(n+b)) * 2**-b with b = -1 for x > 0 and 64 below: one rounding in the fma,
the final scale is exact or is the single gradual-underflow rounding (or the overflow to inf).
log: exponent/mantissa split by bitcast (subnormals pre-scaled by 2**25), Cephes polynomial,
e*ln2 added in float64. tanh: one formula for all x, tanh(|x|) = -m/(m + 2) with
m = expm1(-2|x|) = 2**n * s + (2**n - 1) in [-1, 0] (no cancellation: for n = 0 it is s itself),
sign copied from x. sigmoid: e = exp(-|x|) in (0, 1] (never overflows), 1/(1 + e) for x >= 0,
else ((1 + s)/(1 + e)) * 2**n (exact subnormal tail). erf (float64 polynomials, fitted for this
module): x*P(x**2) for |x| < 0.921875 (relative error 4e-10), else 1 - exp_f32(Q(|x|)) with Q a
degree-8 fit of log(erfc) on [0.921875, 4] (beyond 4, erf rounds to +-1). gelu_tanh:
0.5*x*(1 + tanh(u)) rewritten as x/(1 + exp(-2u)) (no cancellation for x < 0), with u and the
whole exp in float64 (-2u reaches ~87: a float32 u would cost ~100 ulp).
Both branches of every select are always computed: that is what lets LLVM vectorise. nan needs
no select in exp/tanh/sigmoid: Python's min/max keep a nan argument, and it propagates through
r (the shifter's bits of a nan are garbage but only feed 2**n, which multiplies the nan).

Speed (an AVX-512 x86 host, numba 0.68 / LLVM 20): LLVM vectorises these loops 8 lanes wide,
float32 in ymm and float64 parts in zmm, so float64 does not halve the lanes here, but a zmm op
costs ~1.7 ymm ops (measured) and a float64 division 3x a float32 one: tanh, sigmoid and exp are
therefore float32 throughout (loop bodies of 27, 30 and 25 instructions per 8 elements; the
previous float64-tail versions took 52, 40 and 33). The 2-ulp contract is what costs: the
hand-written GELU in bench/_kernels.py uses a rational tanh (~19 instructions) that is off by
up to ~100 ulp near 0 and by far more in the GELU tail.

Special values: exp(+-inf) = inf/0, exp(nan) = nan, overflow -> inf, underflow -> subnormal/0;
log(0) = log(-0) = -inf, log(x<0) = nan, log(inf) = inf; tanh/erf(+-0) = +-0, (+-inf) = +-1;
sigmoid(+-inf) = 1/0; gelu_tanh(inf) = inf, gelu_tanh(-inf) = nan (PyTorch and the defining
formula give nan: -inf * 0), gelu_tanh(-0) = -0. nan in -> nan out everywhere.

Measured max error, in ulp of the float32 result, against float64 references (NumPy, or
Numba's float64 libm for erf) rounded to float32; exhaustive over all 2^32 float32 inputs
(bench/fastmath_kernels.py --exhaustive, or --reduced: every input where the computation differs,
the rest following exactly from symmetry and clamps; each function inlined in a loop compiled
with {"reassoc", "contract"}; tests/test_fastmath.py checks that and default flags on a
2^20-point sweep):

    exp_f32 1, log_f32 1, log1p_f32 2, tanh_f32 2, sigmoid_f32 2, erf_f32 1, gelu_tanh_f32 1

(tanh/sigmoid/exp/erf: --reduced, 2026-11-29; log/gelu_tanh: full 2^32, unchanged since;
log1p: the test sweep, 2026-12-06. tanh's
2 ulp are at small |x| (e.g. 0.0153939), sigmoid's around x = -1.1: the price of staying in
float32; the float64-tail versions had 1 ulp at 1.5-3x the cost.)
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

__all__ = ["exp_f32", "log_f32", "log1p_f32", "tanh_f32", "sigmoid_f32", "erf_f32",
           "gelu_tanh_f32", "exp_f32_ir", "tanh_f32_ir", "sigmoid_f32_ir", "log_f32_ir",
           "log1p_f32_ir",
           "erf_f32_ir", "gelu_tanh_f32_ir", "IN_PLACE",
           "FUNCTIONS", "SOURCE_HASH"]

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)


# --- shared cores -------------------------------------------------------------------------

# Cody-Waite split of ln2 (Cephes): n*_C1 is exact for |n| < 2**15.
_C1 = 0.693359375
_C2 = -2.12194440e-4
_LOG2E = 1.4426950408889634
_LN2 = 0.6931471805599453
_F32 = {"contract"}

# "Shifter" constants for _exp_split: 1.5 * 2**23 plus the bias of the exponent field that the
# result 2**(n + b) gets (127 + b). Adding the shifter rounds t*log2(e) to the integer n and puts
# n + 127 + b in the low bits of the float, where a shift by 23 makes them an exponent field.
_SHIFTER = 12582912.0 + 127.0
_S_TANH = np.float32(_SHIFTER)           # 2**n, n in [-28, 0]
_S_HIGH = np.float32(_SHIFTER - 1.0)     # 2**(n - 1), n in [1, 128]: times 2 at the end
_S_LOW = np.float32(_SHIFTER + 64.0)     # 2**(n + 64), n in [-150, 0]: times 2**-64 at the end
_TWO_M64 = np.float32(2.0 ** -64)


def _protected(instr):
    """Give an fp instruction the harmless "contract" flag. Numba's fastmath pass only adds the
    caller's flags (e.g. "reassoc") to instructions that have none, so this keeps LLVM from
    re-associating what must be evaluated in order."""
    instr.flags.append("contract")
    return instr


def _emit_exp_split(builder, t, s):
    """(r, 2**(n + b)) for exp(t) = 2**n * e**r (float32 values t and shifter s): n =
    rint(t*log2(e)), r = t - n*ln2 by the Cody-Waite split (|r| <= ln2/2, exact enough in
    float32), b chosen by the shifter (one of the _S_* constants) so that n + 127 + b is in
    [1, 254] for the caller's range of t. A nan t gives a nan r. Every step is protected from
    re-association (which would cancel the shifter), so this is exact whatever the caller's
    flags."""
    f32 = llir.FloatType()
    P = _protected
    k = P(builder.fadd(P(builder.fmul(t, llir.Constant(f32, _LOG2E))), s))
    n = P(builder.fsub(k, s))  # exact: k and s are integers below 2**24
    r = P(builder.fsub(t, P(builder.fmul(n, llir.Constant(f32, _C1)))))
    r = P(builder.fsub(r, P(builder.fmul(n, llir.Constant(f32, _C2)))))
    pw = builder.bitcast(builder.shl(builder.bitcast(k, _I32), llir.Constant(_I32, 23)), f32)
    return r, pw


def _emit_mul_add(builder, a, b, c):
    """a*b + c in this order even under the caller's "reassoc" (the backend may fuse it into
    one fma, which is only more accurate). Used for 2**n * s + (2**n - 1) and 2**n * s + 2**n,
    which re-association would turn into 2**n * (s + 1) - 1, losing s for small arguments."""
    return _protected(builder.fadd(_protected(builder.fmul(a, b)), c))


def _emit_horner(builder, coefs, v):
    """The polynomial with coefficients `coefs` (highest first) at `v` by Horner's scheme, in
    v's float type (float32 coefficients rounded to float32), each step protected."""
    def const(c):
        return llir.Constant(v.type, float(np.float32(c)) if isinstance(v.type, llir.FloatType)
                             else c)
    acc = const(coefs[0])
    for c in coefs[1:]:
        acc = _protected(builder.fadd(_protected(builder.fmul(acc, v)), const(c)))
    return acc


# e**r - 1 for |r| <= ln2/2 (Cephes expf polynomial without its final + 1), float32: p(r) by
# Horner from these coefficients (highest first), then p * (r * r) + r
_EXPM1 = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
          5.0000001201e-1)


def _emit_expm1_poly(builder, r):
    """e**r - 1 for the float32 value r, each instruction with the "contract" flag alone (what
    Numba gave the polynomial's Python form under _F32, protected from a caller's
    "reassoc")."""
    P = _protected
    p = _emit_horner(builder, _EXPM1, r)
    return P(builder.fadd(P(builder.fmul(p, P(builder.fmul(r, r)))), r))


# --- public functions ---------------------------------------------------------------------

@njit(fastmath=_F32, error_model="numpy", cache=True)
def exp_f32(x):
    """exp(x) for float32 x; max error 1 ulp. All float32 (no float64 on the way). Emitted as
    LLVM instructions (_emit_exp) by exp_f32_ir."""
    return exp_f32_ir(x)


def _f32(v):
    return llir.Constant(llir.FloatType(), float(np.float32(v)))


def _min(builder, a, b):
    """Python's (and Numba's) min(a, b) of floats: b if b < a else a (a nan `a` stays)."""
    return builder.select(_protected(builder.fcmp_ordered("<", b, a)), b, a)


def _max(builder, a, b):
    """max(a, b) likewise: b if b > a else a."""
    return builder.select(_protected(builder.fcmp_ordered(">", b, a)), b, a)


def _unary(builder, name, x, nargs=1, ty=None):
    f32 = ty or llir.FloatType()
    fn = builder.module.declare_intrinsic(f"llvm.{name}", [f32],
                                          llir.FunctionType(f32, [f32] * nargs))
    return builder.call(fn, x, fastmath=("contract",))


def _emit_exp(builder, x):
    """exp_f32's instructions for the float32 value x (each with the "contract" flag alone)."""
    P = _protected
    # exp(88.8) > FLT_MAX, exp(-104) < FLT_TRUE_MIN / 2: the clamp only keeps n in range.
    # Python's min/max semantics keep a nan x as nan (it then propagates through r).
    t = _min(builder, _max(builder, x, _f32(-104.0)), _f32(88.8))
    high = P(builder.fcmp_ordered(">", t, _f32(0.0)))
    r, pw = _emit_exp_split(builder, t, builder.select(high, _f32(_S_HIGH), _f32(_S_LOW)))
    # 2**n * e**r = pw * (1 + s) * scale: rounded once by the fma (the scale by 2 or 2**-64 is
    # exact, or it is the one gradual-underflow rounding / the overflow to inf).
    return P(builder.fmul(_emit_mul_add(builder, pw, _emit_expm1_poly(builder, r), pw),
                          builder.select(high, _f32(2.0), _f32(_TWO_M64))))


def _emit_tanh(builder, x):
    """tanh_f32's instructions for the float32 value x (each with the "contract" flag alone)."""
    P = _protected
    # |x| >= 9.1 rounds to 1: the clamp keeps 2**n normal (n >= -28) and maps inf; a nan x
    # stays nan through min (Python semantics) and propagates (nan r, nan m).
    a = _min(builder, _unary(builder, "fabs", [x]), _f32(9.5))
    r, pw = _emit_exp_split(builder, P(builder.fneg(P(builder.fadd(a, a)))),  # -2a is exact
                            _f32(_S_TANH))
    m = _emit_mul_add(builder, pw, _emit_expm1_poly(builder, r), P(builder.fsub(pw, _f32(1.0))))
    # m <= 0 < m + 2, so m / (m + 2) = -tanh(|x|): copysign gives the sign (and -0.0 for -0.0)
    return _unary(builder, "copysign", [P(builder.fdiv(m, P(builder.fadd(m, _f32(2.0))))), x],
                  nargs=2)


def _emit_sigmoid(builder, x):
    """sigmoid_f32's instructions for the float32 value x (each with the "contract" flag
    alone)."""
    P = _protected
    # sigmoid(-104) < FLT_TRUE_MIN / 2; nan stays nan
    t = _max(builder, P(builder.fneg(_unary(builder, "fabs", [x]))), _f32(-104.0))
    r, pw = _emit_exp_split(builder, t, _f32(_S_LOW))  # pw = 2**(n + 64), n in [-150, 0]
    s = _emit_expm1_poly(builder, r)
    e = P(builder.fmul(_emit_mul_add(builder, pw, s, pw), _f32(_TWO_M64)))
    neg = P(builder.fcmp_ordered("<", x, _f32(0.0)))
    v = P(builder.fdiv(builder.select(neg, P(builder.fadd(_f32(1.0), s)), _f32(1.0)),
                       P(builder.fadd(_f32(1.0), e))))
    return builder.select(neg, P(builder.fmul(P(builder.fmul(v, pw)), _f32(_TWO_M64))), v)


# log1p(m) - m + m*m/2 over m**3 (Cephes logf polynomial), float32, highest coefficient first
_LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
             1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
             3.3333331174e-1)


def _emit_log(builder, x):
    """log_f32's instructions for the float32 value x (each fp instruction with the "contract"
    flag alone), in the order its former Python form had them."""
    P = _protected
    f32, f64 = llir.FloatType(), llir.DoubleType()
    # Subnormals: scale into the normal range first (select, not branch).
    tiny = P(builder.fcmp_ordered("<", x, _f32(1.1754944e-38)))
    xs = builder.select(tiny, P(builder.fmul(x, _f32(33554432.0))), x)  # 2**25
    i = builder.bitcast(xs, _I32)
    # mantissa scaled into [0.5, 1): the fraction bits with biased exponent 126
    m = builder.bitcast(builder.or_(builder.and_(i, llir.Constant(_I32, 0x007FFFFF)),
                                    llir.Constant(_I32, 0x3F000000)), f32)
    # exponent e with xs = m * 2**e (in i32: Numba would promote int32 arithmetic to int64)
    e = builder.sitofp(builder.sub(builder.and_(builder.lshr(i, llir.Constant(_I32, 23)),
                                                llir.Constant(_I32, 0xFF)),
                                   llir.Constant(_I32, 126)), f32)
    e = P(builder.fsub(e, builder.select(tiny, _f32(25.0), _f32(0.0))))
    small = P(builder.fcmp_ordered("<", m, _f32(0.70710677)))
    e = builder.select(small, P(builder.fsub(e, _f32(1.0))), e)
    m = builder.select(small, P(builder.fsub(P(builder.fadd(m, m)), _f32(1.0))),
                       P(builder.fsub(m, _f32(1.0))))
    z = P(builder.fmul(m, m))
    y = _emit_horner(builder, _LOG_POLY, m)
    y = P(builder.fsub(P(builder.fmul(P(builder.fmul(y, m)), z)),
                       P(builder.fmul(_f32(0.5), z))))
    r = P(builder.fadd(builder.fpext(P(builder.fadd(m, y)), f64),
                       P(builder.fmul(builder.fpext(e, f64), llir.Constant(f64, _LN2)))))
    r = builder.fptrunc(r, f32)
    r = builder.select(P(builder.fcmp_ordered("==", x, _f32(np.inf))), _f32(np.inf), r)
    r = builder.select(P(builder.fcmp_ordered("==", x, _f32(0.0))), _f32(-np.inf), r)
    r = builder.select(P(builder.fcmp_ordered("<", x, _f32(0.0))), _f32(np.nan), r)
    return builder.select(P(builder.fcmp_unordered("!=", x, x)), x, r)


def _emit_log1p(builder, x):
    """log1p_f32's instructions for the float32 value x: Goldberg's form log(u) * (x / (u - 1)),
    u = 1 + x, with _emit_log's log. u - 1 is exact, so x / (u - 1) corrects u's rounding to
    first order: within a few ulp of log1p (x itself where u rounds to 1, which keeps -0.0). From
    1e7 on log(u) is as accurate and the ratio, which might overflow or divide inf by inf, is
    not used. Every fp instruction carries "contract" alone: a caller's "reassoc" must not
    fold (1 + x) - 1 into x."""
    P = _protected
    u = P(builder.fadd(_f32(1.0), x))
    lu = _emit_log(builder, u)
    r = P(builder.fmul(lu, P(builder.fdiv(x, P(builder.fsub(u, _f32(1.0)))))))
    r = builder.select(P(builder.fcmp_ordered(">", x, _f32(1e7))), lu, r)
    return builder.select(P(builder.fcmp_ordered("==", u, _f32(1.0))), x, r)


# erf's polynomials (float64, fitted for this module), highest coefficient first: erf(x) =
# x * P(x**2) for |x| < 0.921875; log(erfc(t)) ~ Q(t - 2.5) on [0.921875, 4]
_ERF_P = (8.365008626326135e-05, -0.0008141394960171454, 0.005200905783978044,
          -0.026859341780088888, 0.11283694350489201, -0.37612633650224947, 1.128379166627448)
_ERF_Q = (1.6130857364325609e-06, -1.3309159818250784e-05, 7.739888389893977e-05,
          -0.0004201456785399906, 0.0021651541237743244, -0.010858515627180087,
          -0.9438936376197491, -5.3526806814698045, -7.806815277221632)


def _emit_erf(builder, x):
    """erf_f32's instructions for the float32 value x (each fp instruction with the "contract"
    flag alone), in the order its former Python form had them."""
    P = _protected
    f32, f64 = llir.FloatType(), llir.DoubleType()
    xd = builder.fpext(x, f64)
    small = builder.fptrunc(P(builder.fmul(xd, _emit_horner(builder, _ERF_P,
                                                            P(builder.fmul(xd, xd))))), f32)
    # |x| >= 0.921875: erf = 1 - erfc; beyond 4 erf rounds to +-1 in float32, so clamp t (this
    # also maps inf to 1). q in [-17, -1.9]: rounding it to float32 changes erfc by < 1e-6
    # relative, erf by < 3e-8.
    t = _min(builder, _unary(builder, "fabs", [xd], ty=f64), llir.Constant(f64, 4.0))
    q = _emit_horner(builder, _ERF_Q, P(builder.fsub(t, llir.Constant(f64, 2.5))))
    e = builder.fpext(_emit_exp(builder, builder.fptrunc(q, f32)), f64)
    big = builder.fptrunc(P(builder.fsub(llir.Constant(f64, 1.0), e)), f32)
    big = builder.select(P(builder.fcmp_ordered("<", x, _f32(0.0))), P(builder.fneg(big)), big)
    big = builder.select(P(builder.fcmp_unordered("!=", x, x)), x, big)
    return builder.select(P(builder.fcmp_ordered("<", _unary(builder, "fabs", [x]),
                                                 _f32(0.921875))), small, big)


def _emit_gelu_tanh(builder, x):
    """gelu_tanh_f32's instructions for the float32 value x (each fp instruction with the
    "contract" flag alone), in the order its former Python form had them: x / (1 + e) with
    e = exp(-2u) all in float64 (-2u reaches ~87: a float32 u would cost ~100 ulp)."""
    P = _protected
    f64 = llir.DoubleType()

    def c(v):
        return llir.Constant(f64, v)
    xd = builder.fpext(x, f64)
    cube = P(builder.fmul(P(builder.fmul(xd, xd)), xd))
    u2 = P(builder.fmul(c(-1.5957691216057308),  # -2u; no overflow in float64
                        P(builder.fadd(xd, P(builder.fmul(c(0.044715), cube))))))
    # exp(u2) in float64, better than float32 accuracy (nan -> nan). The clamp keeps n in the
    # exponent range of the scale; below -104 the float32 result is 0 anyway, the top stays far
    # above FLT_MAX so that x / (1 + e) sees a huge e, not a clamped one.
    nan = P(builder.fcmp_unordered("!=", u2, u2))
    t = builder.select(nan, c(0.0), u2)
    t = _min(builder, _max(builder, t, c(-104.0)), c(709.0))
    n = _unary(builder, "floor", [P(builder.fadd(P(builder.fmul(t, c(_LOG2E))), c(0.5)))],
               ty=f64)
    r = P(builder.fsub(t, P(builder.fmul(n, c(_LN2)))))  # |r| <= ln2/2
    # the Cephes expm1 polynomial in float64 (evaluated in float32 it gave gelu 2 ulp, now 1)
    p = _emit_horner(builder, _EXPM1, r)
    p = P(builder.fadd(P(builder.fadd(P(builder.fmul(p, P(builder.fmul(r, r)))), r)), c(1.0)))
    # 2**n: (n + 1023) << 52 as the exponent field (the i32 conversion vectorises on AVX2 too)
    i = builder.add(builder.fptosi(n, _I32), llir.Constant(_I32, 1023))
    e = P(builder.fmul(p, builder.bitcast(builder.shl(builder.sext(i, _I64),
                                                      llir.Constant(_I64, 52)), f64)))
    e = builder.select(nan, u2, e)  # up to ~8e307 for x << 0: x / e underflows to -0.0
    res = builder.fptrunc(P(builder.fdiv(xd, P(builder.fadd(c(1.0), e)))), llir.FloatType())
    # -inf * 0 in the defining formula (and PyTorch)
    return builder.select(P(builder.fcmp_ordered("==", x, _f32(-np.inf))), _f32(np.nan), res)


def _in_place(emit, name):
    """An @intrinsic float32 -> float32 whose call is `emit`'s instructions (IN_PLACE)."""
    def typer(typingctx, x):
        if x != types.float32:
            return None

        def codegen(context, builder, signature, args):
            return emit(builder, args[0])
        return types.float32(types.float32), codegen
    typer.__name__ = typer.__qualname__ = name
    return intrinsic(typer)


# Emitted in place: what generated programs call (IN_PLACE); the njit functions below call them
exp_f32_ir = _in_place(_emit_exp, "exp_f32_ir")
tanh_f32_ir = _in_place(_emit_tanh, "tanh_f32_ir")
sigmoid_f32_ir = _in_place(_emit_sigmoid, "sigmoid_f32_ir")
log_f32_ir = _in_place(_emit_log, "log_f32_ir")
log1p_f32_ir = _in_place(_emit_log1p, "log1p_f32_ir")
erf_f32_ir = _in_place(_emit_erf, "erf_f32_ir")
# (not in IN_PLACE: generated code does not call gelu_tanh_f32, see lower_elementwise's names)
gelu_tanh_f32_ir = _in_place(_emit_gelu_tanh, "gelu_tanh_f32_ir")


@njit(fastmath=_F32, error_model="numpy", cache=True)
def log_f32(x):
    """log(x) for float32 x; max error 1 ulp. Exponent/mantissa split by bitcast (subnormals
    pre-scaled by 2**25), Cephes polynomial, e*ln2 added in float64. Emitted as LLVM
    instructions (_emit_log) by log_f32_ir."""
    return log_f32_ir(x)


@njit(fastmath=_F32, error_model="numpy", cache=True)
def log1p_f32(x):
    """log(1 + x) for float32 x; max error 3 ulp. Goldberg's form over log_f32 (_emit_log1p):
    libm's log1pf is a scalar call that keeps the loop from vectorising. Emitted as LLVM
    instructions by log1p_f32_ir."""
    return log1p_f32_ir(x)


@njit(fastmath=_F32, error_model="numpy", cache=True)
def tanh_f32(x):
    """tanh(x) for float32 x; max error 2 ulp. One branch-free formula, all float32:
    tanh(|x|) = -m / (m + 2) with m = expm1(-2|x|) in [-1, 0] (no cancellation anywhere: m is
    computed as 2**n * s + (2**n - 1) from the reduced s = expm1(r)), sign copied from x.
    Emitted as LLVM instructions (_emit_tanh) by tanh_f32_ir."""
    return tanh_f32_ir(x)


@njit(fastmath=_F32, error_model="numpy", cache=True)
def sigmoid_f32(x):
    """1 / (1 + exp(-x)) for float32 x; max error 2 ulp. All float32. With e = exp(-|x|) in
    (0, 1] (never overflows): 1 / (1 + e) for x >= 0; for x < 0, e / (1 + e) computed as
    ((1 + s) / (1 + e)) * 2**n, so that results below FLT_MIN underflow gradually and exactly
    once. Emitted as LLVM instructions (_emit_sigmoid) by sigmoid_f32_ir."""
    return sigmoid_f32_ir(x)


@njit(fastmath=_F32, error_model="numpy", cache=True)
def erf_f32(x):
    """erf(x) for float32 x; max error 1 ulp. Polynomials fitted for this module (see the
    docstring) and evaluated in float64. Emitted as LLVM instructions (_emit_erf) by
    erf_f32_ir."""
    return erf_f32_ir(x)


@njit(fastmath=_F32, error_model="numpy", cache=True)
def gelu_tanh_f32(x):
    """0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x**3))) for float32 x (PyTorch's
    gelu(approximate="tanh")); max error 1 ulp. Computed as x / (1 + exp(-2u)). Emitted as
    LLVM instructions (_emit_gelu_tanh) by gelu_tanh_f32_ir."""
    return gelu_tanh_f32_ir(x)


FUNCTIONS = {
    "exp": exp_f32, "log": log_f32, "log1p": log1p_f32, "tanh": tanh_f32, "sigmoid": sigmoid_f32,
    "erf": erf_f32, "gelu_tanh": gelu_tanh_f32,
}
"""Name -> function, for code generators that map elementwise ops to these."""

IN_PLACE = {"exp_f32": "exp_f32_ir", "tanh_f32": "tanh_f32_ir", "sigmoid_f32": "sigmoid_f32_ir",
            "log_f32": "log_f32_ir", "log1p_f32": "log1p_f32_ir", "erf_f32": "erf_f32_ir"}
"""Function -> the @intrinsic that emits its instructions in place, which generated code
imports under the function's name: no Numba function to type, lower and optimise per process
(~0.12 CPU-s of a first-ever compile each) and link into every caller; the same instructions
(LLVM inlined the function into the loop anyway)."""
