"""Benchmark and exhaustive accuracy check of jitorch.script.targets.cpu.fastmath.

    python bench/fastmath_kernels.py                 # time per 1M float32, each function
    python bench/fastmath_kernels.py --exhaustive    # max ulp error over all 2**32 float32 inputs
    python bench/fastmath_kernels.py --exhaustive --reduced   # same verdict, 1/4-1/2 of the work

Timing: a generated-code-style loop `out[i] = f(x[i])` compiled with njit(nogil=True,
error_model="numpy", fastmath={"reassoc", "contract"}) vs the same loop calling NumPy's scalar
functions in Numba (libm, not vectorised) vs NumPy's own vectorised ufuncs (SciPy for erf).
Exhaustive: every float32 bit pattern (or every --stride-th), in chunks, on all cores (nogil
threads), each function inlined in a loop compiled with the flags above; reference is
Numba's float64 libm rounded to float32; ulp distance counts representable float32 values
between result and reference (nan == nan).

--reduced checks every bit pattern of the part of the domain where the computation differs,
and gets the rest from how the functions are written (each step below is exact, not sampled):
tanh and erf compute the magnitude from |x| and copy or flip the sign, so negative inputs
mirror positive ones exactly; every function clamps its argument (tanh: |x| to 9.5, sigmoid:
-|x| to -104, exp: x to [-104, 88.8], erf: |x| to 4), so all inputs beyond a clamp run the
very computation of the clamp value, whose result is checked (and it is the correctly rounded
result for all of them: tanh/erf round to +-1, sigmoid to 0 or 1, exp to 0 or inf there).
nan and inf are inside the sampled pass that --reduced adds (every 61st bit pattern).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import interleaved, try_import  # noqa: E402

from jitorch.script.targets.cpu import fastmath as fm  # noqa: E402

FLAGS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})
_C = np.float32(0.7978845608028654)
_K = np.float32(0.044715)
_H = np.float32(0.5)
_ONE = np.float32(1.0)


def _loop(f):
    @njit(**FLAGS)
    def k(x, out):
        for i in range(x.size):
            out[i] = f(x[i])
    return k


# Naive scalar versions (what a code generator would emit without this module).
@njit(inline="always", **FLAGS)
def _naive_exp(x):
    return np.exp(x)


@njit(inline="always", **FLAGS)
def _naive_log(x):
    return np.log(x)


@njit(inline="always", **FLAGS)
def _naive_tanh(x):
    return np.tanh(x)


@njit(inline="always", **FLAGS)
def _naive_sigmoid(x):
    return _ONE / (_ONE + np.exp(-x))


@njit(inline="always", **FLAGS)
def _naive_erf(x):
    return np.float32(math.erf(x))


@njit(inline="always", **FLAGS)
def _naive_gelu_tanh(x):
    return _H * x * (_ONE + np.tanh(_C * (x + _K * x * x * x)))


def _np_gelu_tanh(x, out):
    np.multiply(x, x, out=out)
    out *= x
    out *= _K
    out += x
    out *= _C
    np.tanh(out, out=out)
    out += _ONE
    out *= x
    out *= _H


def _numpy_impls():
    sp = try_import("scipy.special")
    impls = {
        "exp": lambda x, o: np.exp(x, out=o),
        "log": lambda x, o: np.log(x, out=o),
        "tanh": lambda x, o: np.tanh(x, out=o),
        "sigmoid": lambda x, o: np.divide(_ONE, np.add(_ONE, np.exp(np.negative(x, out=o),
                                                                    out=o), out=o), out=o),
        "gelu_tanh": _np_gelu_tanh,
    }
    if sp is not None:
        import scipy.special  # noqa: F401  (try_import returns the top package)
        impls["erf"] = lambda x, o: sys.modules["scipy.special"].erf(x, out=o)
    return impls


NAIVE = {"exp": _naive_exp, "log": _naive_log, "tanh": _naive_tanh, "sigmoid": _naive_sigmoid,
         "erf": _naive_erf, "gelu_tanh": _naive_gelu_tanh}


def bench(n=1 << 20):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    xpos = np.abs(x) + np.float32(1e-3)
    out = np.empty_like(x)
    numpy_impls = _numpy_impls()
    print(f"time per {n / 1e6:.2f}M float32 elements (best of interleaved rounds)")
    print(f"{'function':<10} {'fastmath':>10} {'numba libm':>11} {'numpy':>10}  "
          f"{'vs numba':>8} {'vs numpy':>8}")
    for name, f in fm.FUNCTIONS.items():
        xi = xpos if name == "log" else x
        fast, naive = _loop(f), _loop(NAIVE[name])
        fns = {"fast": lambda: fast(xi, out), "naive": lambda: naive(xi, out)}
        if name in numpy_impls:
            fns["numpy"] = lambda: numpy_impls[name](xi, out)
        t = interleaved(fns, rounds=3, min_time=0.1)
        tn = t.get("numpy", float("nan"))
        print(f"{name:<10} {t['fast'] * 1e3:8.3f}ms {t['naive'] * 1e3:9.3f}ms {tn * 1e3:8.3f}ms"
              f"  {t['naive'] / t['fast']:7.2f}x {tn / t['fast']:7.2f}x")


# --- exhaustive accuracy ---------------------------------------------------------------------

@njit(inline="always")
def _ref_gelu(xd):
    if xd == -np.inf:
        return np.nan
    return xd / (1.0 + math.exp(-1.5957691216057308 * (xd + 0.044715 * xd * xd * xd)))


REFS = {
    "exp": njit(inline="always")(lambda xd: math.exp(xd)),
    "log": njit(inline="always")(lambda xd: math.log(xd) if xd >= 0.0 else np.nan),
    "tanh": njit(inline="always")(lambda xd: math.tanh(xd)),
    "sigmoid": njit(inline="always")(lambda xd: 1.0 / (1.0 + math.exp(-xd))),
    "erf": njit(inline="always")(lambda xd: math.erf(xd)),
    "gelu_tanh": _ref_gelu,
}


def _checker(f, ref):
    # The production flags (FLAGS): f is inlined and lowered with them, as in generated code.
    @njit(**FLAGS)
    def check(x, got, want):
        for i in range(x.size):
            got[i] = f(x[i])
            want[i] = np.float32(ref(np.float64(x[i])))
        gi = got.view(np.int32)
        wi = want.view(np.int32)
        worst, worst_i = 0, 0
        for i in range(x.size):
            if got[i] != got[i] or want[i] != want[i]:
                d = 0 if (got[i] != got[i]) == (want[i] != want[i]) else 1 << 40
            else:
                a, b = np.int64(gi[i]), np.int64(wi[i])
                a = -(a & 0x7FFFFFFF) if a < 0 else a  # sign-magnitude -> ordered integers
                b = -(b & 0x7FFFFFFF) if b < 0 else b
                d = abs(a - b)
            if d > worst:
                worst, worst_i = d, i
        return worst, worst_i
    return check


def _bits(v: float) -> int:
    return int(np.float32(v).view(np.uint32))


_NEG = 1 << 31
# Bit-pattern ranges [lo, hi) that --reduced checks exhaustively (see the module docstring).
REDUCED = {
    "tanh": [(0, _bits(9.5) + 1)],
    "erf": [(0, _bits(4.0) + 1)],
    "sigmoid": [(0, _bits(104.0) + 1), (_NEG, _bits(-104.0) + 1)],
    "exp": [(0, _bits(88.8) + 1), (_NEG, _bits(-104.0) + 1)],
}


def exhaustive(names, stride=1, chunk=1 << 24, threads=os.cpu_count(), reduced=False):
    for name in names:
        t0 = time.perf_counter()
        check = _checker(fm.FUNCTIONS[name], REFS[name])
        ranges = [(0, 1 << 32)]
        if reduced and name in REDUCED:
            ranges = REDUCED[name]

        def run(job):
            lo, hi, step = job
            x = np.arange(lo, hi, step, dtype=np.uint64).astype(np.uint32).view(np.float32)
            got, want = np.empty_like(x), np.empty_like(x)
            w, i = check(x, got, want)
            return w, x[i], got[i], want[i]

        jobs = [(lo, min(lo + chunk, hi), stride) for a, hi in ranges
                for lo in range(a, hi, chunk)]
        if reduced and name in REDUCED:
            jobs += [(lo, lo + chunk, 61) for lo in range(0, 1 << 32, chunk)]
        n = sum(len(range(lo, hi, st)) for lo, hi, st in jobs)
        with ThreadPoolExecutor(threads) as ex:
            res = list(ex.map(run, jobs))
        w, x, g, r = max(res, key=lambda t: t[0])
        print(f"{name:<10} max ulp {w}  at x={x!r} got={g!r} ref={r!r}  "
              f"({n / 1e6:.0f}M inputs, {time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--exhaustive", action="store_true")
    ap.add_argument("--stride", type=int, default=1, help="check every n-th bit pattern")
    ap.add_argument("--reduced", action="store_true",
                    help="exhaustive where the computation differs (see the docstring)")
    ap.add_argument("names", nargs="*", default=list(fm.FUNCTIONS))
    a = ap.parse_args()
    if a.exhaustive:
        exhaustive(a.names, a.stride, reduced=a.reduced)
    else:
        bench()
