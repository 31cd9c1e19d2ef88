"""Accuracy, special values and vectorisation of jitorch.script.targets.cpu.fastmath.

Every function is compiled once, inside the kind of loop the code generator emits
(njit(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})), and shared by all
tests; each is also checked inside a loop compiled with default (IEEE) flags. References:
float64 NumPy (math.erf for erf) rounded to float32; error is the distance in representable
float32 values.
"""
import math

import numpy as np
import pytest
from numba import njit, types

from jitorch.script.targets.cpu import fastmath as fm

FLAGS = dict(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})
NAMES = ["exp", "log", "log1p", "tanh", "sigmoid", "erf", "gelu_tanh"]
MAX_ULP = 2


def _loop(f):
    @njit(**FLAGS)
    def k(x, out):
        for i in range(x.size):
            out[i] = f(x[i])
    return k


_KERNELS = {}


def kernel(name):
    if name not in _KERNELS:
        _KERNELS[name] = _loop(fm.FUNCTIONS[name])
    return _KERNELS[name]


def run(name, x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty_like(x)
    kernel(name)(x, out)
    return out


def _ieee_loop(f):
    # Default flags (no reassoc/contract) in the caller: results must not depend on them.
    @njit(nogil=True, error_model="numpy")
    def k(x, out):
        for i in range(x.size):
            out[i] = f(x[i])
    return k


_erf64 = np.frompyfunc(math.erf, 1, 1)


def reference(name, x):
    """float64 reference rounded to float32."""
    with np.errstate(all="ignore"):  # also: casting signalling-nan bit patterns warns
        xd = x.astype(np.float64)
        if name == "exp":
            r = np.exp(xd)
        elif name == "log":
            r = np.log(xd)
        elif name == "log1p":
            r = np.log1p(xd)
        elif name == "tanh":
            r = np.tanh(xd)
        elif name == "sigmoid":
            r = 1.0 / (1.0 + np.exp(-xd))
        elif name == "erf":
            r = _erf64(xd).astype(np.float64)
        else:
            # x * sigmoid(2u) == 0.5*x*(1 + tanh(u)); the latter cancels for x < -5 even in f64.
            r = xd / (1.0 + np.exp(-1.5957691216057308 * (xd + 0.044715 * xd ** 3)))
            r = np.where(xd == -np.inf, np.nan, r)
        return r.astype(np.float32)


def ulp_distance(got, want):
    def ordered(a):
        i = a.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    d = np.abs(ordered(got) - ordered(want))
    gn, wn = np.isnan(got), np.isnan(want)
    return np.where(gn | wn, np.where(gn == wn, 0, 1 << 40), d)


def sweep():
    """~2**20 inputs: every 2**13-th float32 bit pattern (all exponents, both signs, nan/inf,
    subnormals) plus dense linear grids where the functions change behaviour."""
    bits = np.arange(0, 1 << 32, 1 << 13, dtype=np.uint64).astype(np.uint32).view(np.float32)
    grids = [np.linspace(-10, 10, 1 << 18), np.linspace(-105, 90, 1 << 17),
             np.linspace(0.5, 2, 1 << 16), np.linspace(-1e-3, 1e-3, 1 << 15)]
    return np.concatenate([bits] + [g.astype(np.float32) for g in grids])


X = sweep()


@pytest.mark.parametrize("name", NAMES)
def test_max_ulp_dense_sweep(name):
    x = X[X > 0] if name == "log" else X  # log: negatives are all nan, covered below
    got, want = run(name, x), reference(name, x)
    d = ulp_distance(got, want)
    i = int(np.argmax(d))
    assert d[i] <= MAX_ULP, (name, x[i], got[i], want[i], d[i])


@pytest.mark.parametrize("name", NAMES)
def test_ieee_caller_flags_same_accuracy(name):
    x = X[::8].copy()
    x = x[x > 0] if name == "log" else x
    out = np.empty_like(x)
    _ieee_loop(fm.FUNCTIONS[name])(x, out)
    assert ulp_distance(out, reference(name, x)).max() <= MAX_ULP, name


INF, NAN = np.inf, np.nan
TINY = np.float32(1e-45)  # smallest subnormal
SPECIAL = {
    "exp": [(0.0, 1.0), (-0.0, 1.0), (INF, INF), (-INF, 0.0), (NAN, NAN), (88.73, INF),
            (1e30, INF), (-104.0, 0.0), (-1e30, 0.0), (TINY, 1.0)],
    "log": [(0.0, -INF), (-0.0, -INF), (-1.0, NAN), (-INF, NAN), (INF, INF), (NAN, NAN),
            (1.0, 0.0), (-TINY, NAN)],
    "log1p": [(0.0, 0.0), (-0.0, -0.0), (-1.0, -INF), (-2.0, NAN), (-INF, NAN), (INF, INF),
              (NAN, NAN), (TINY, TINY), (-TINY, -TINY), (3e38, np.log1p(3e38))],
    "tanh": [(0.0, 0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (20.0, 1.0), (-20.0, -1.0),
             (TINY, TINY), (-TINY, -TINY)],
    "sigmoid": [(0.0, 0.5), (-0.0, 0.5), (INF, 1.0), (-INF, 0.0), (NAN, NAN), (-200.0, 0.0),
                (100.0, 1.0)],
    "erf": [(0.0, 0.0), (INF, 1.0), (-INF, -1.0), (NAN, NAN), (5.0, 1.0), (-5.0, -1.0),
            (1e30, 1.0)],
    "gelu_tanh": [(0.0, 0.0), (INF, INF), (-INF, NAN), (NAN, NAN), (-1e30, -0.0),
                  (-3e38, -0.0), (1e30, 1e30), (3e38, 3e38)],
}


@pytest.mark.parametrize("name", NAMES)
def test_special_values(name):
    x = np.array([a for a, _ in SPECIAL[name]], np.float32)
    want = np.array([b for _, b in SPECIAL[name]], np.float32)
    got = run(name, x)
    np.testing.assert_array_equal(got, want, err_msg=name)
    # signs of zeros and of results must match too (assert_array_equal treats -0 == 0)
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all(), (name, got)


@pytest.mark.parametrize("name", ["tanh", "log1p", "erf", "gelu_tanh"])
def test_negative_zero_preserved(name):
    got = run(name, np.array([-0.0], np.float32))
    assert got[0] == 0 and np.signbit(got[0])


def test_subnormal_results():
    # exp and sigmoid underflow gradually; log of subnormals is finite and accurate.
    x = np.array([-90.0, -95.0, -100.0, -103.0], np.float32)
    for name in ("exp", "sigmoid"):
        got = run(name, x)
        assert (got > 0).all() and (got < np.finfo(np.float32).tiny).all(), name
        assert ulp_distance(got, reference(name, x)).max() <= 1, name
    s = np.array([1e-45, 1e-40, 1e-39, 1.1e-38], np.float32)
    assert ulp_distance(run("log", s), reference("log", s)).max() <= 1


def test_gelu_tanh_negative_tail_is_accurate():
    # The textbook formula cancels (PyTorch and float64 NumPy return ~0); ours keeps the value.
    x = np.array([-6.0, -8.0, -10.0], np.float32)
    got = run("gelu_tanh", x)
    assert (got < 0).all()
    assert ulp_distance(got, reference("gelu_tanh", x)).max() <= MAX_ULP


@pytest.mark.parametrize("name", NAMES)
def test_loop_is_vectorised(name):
    k = kernel(name)
    if not k.signatures:
        run(name, X[:16])
    llvm = k.inspect_llvm(k.signatures[0])
    assert any(f"<{w} x float>" in llvm for w in (4, 8, 16)), name
    # and no scalar libm calls left in the loop
    for fn in ("@expf", "@logf", "@tanhf", "@erff", "@exp(", "@log(", "@tanh("):
        assert fn not in llvm, (name, fn)


@pytest.mark.parametrize("name", ["exp", "tanh", "sigmoid"])
def test_float32_throughout(name):
    # No float64 on the way: a zmm float64 op costs ~1.7 ymm float32 ops and a float64 division
    # 3x a float32 one on AVX-512 hosts (see the module docstring).
    k = kernel(name)
    if not k.signatures:
        run(name, X[:16])
    llvm = k.inspect_llvm(k.signatures[0])
    assert "x double>" not in llvm and "fpext" not in llvm, name


# Worst cases found by the exhaustive check (bench/fastmath_kernels.py --exhaustive --reduced)
# and around them: kept here so that a change to the polynomials or the shifter shows at once.
WORST = {"tanh": [0.015393897, 0.05416879, 0.17594872, 0.6352003, -0.015393897],
         "sigmoid": [-1.0988148, -87.5, -88.0, 87.5, 16.5],
         "exp": [1.5914313e-05, 9.7568045e-05, 88.7, -87.4, -103.9]}


@pytest.mark.parametrize("name", sorted(WORST))
def test_known_worst_cases(name):
    x = np.array(WORST[name], np.float32)
    x = np.concatenate([x, np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-1e30))])
    assert ulp_distance(run(name, x), reference(name, x)).max() <= MAX_ULP, name


@pytest.mark.parametrize("name", NAMES)
def test_scalar_signature_float32(name):
    f = fm.FUNCTIONS[name]
    res = f(np.float32(0.5))  # compiles the scalar function on its own
    assert f.nopython_signatures[-1].return_type == types.float32
    want = reference(name, np.array([0.5], np.float32))
    assert ulp_distance(np.array([res], np.float32), want).max() <= MAX_ULP


def test_module_exports():
    assert set(fm.FUNCTIONS) == set(NAMES)
    assert isinstance(fm.SOURCE_HASH, str) and len(fm.SOURCE_HASH) == 16


def test_float64_argument_is_a_typing_error():
    from numba.core.errors import TypingError
    with pytest.raises(TypingError):
        fm.exp_f32(0.5)  # a Python float is float64: must not silently compute in float32


@pytest.mark.parametrize("name", NAMES)
def test_a_function_of_its_own_not_inlined_per_call_site(name):
    # Numba's IR-level inline="always" types and lowers the body again at every call site
    # (~0.2-0.3 CPU-s per use in every generated kernel); as a cached function of its own it is
    # compiled once and LLVM inlines it into the loop, which still vectorises (test above)
    f = fm.FUNCTIONS[name]
    assert f.targetoptions.get("inline", "never") == "never", name
    from numba.core.caching import NullCache
    assert not isinstance(f._cache, NullCache), name  # cache=True: loaded from disk later


@pytest.mark.parametrize("fn", sorted(fm.IN_PLACE))
def test_generated_code_imports_the_in_place_intrinsic(fn):
    """exp/tanh/sigmoid: generated code imports an @intrinsic that emits the function's
    instructions in place, no Numba function of its own compiled per process (~0.12 CPU-s of
    a first-ever compile each); in the generated loop it gives the function's results bit for
    bit (the function itself calls it: compared with the dense sweep's references too)."""
    from numba.core.dispatcher import Dispatcher
    from jitorch.script.targets.cpu import lower_elementwise
    emitted = getattr(fm, fm.IN_PLACE[fn])
    assert not isinstance(emitted, Dispatcher) and isinstance(fm.FUNCTIONS[fn[:-4]], Dispatcher)
    assert lower_elementwise.fastmath_import(fn) == f"{fm.IN_PLACE[fn]} as {fn}"
    out = np.empty_like(X)
    _loop(emitted)(X, out)
    assert np.array_equal(out.view(np.uint32), run(fn[:-4], X).view(np.uint32))
    assert ulp_distance(out, reference(fn[:-4], X)).max() <= MAX_ULP
