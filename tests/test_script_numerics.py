"""Compiled code gives eager's values and errors where numerics are delicate (issue 9, item 4):
class targets and other data-dependent indices out of range, integer powers with negative
exponents, float -> integer casts and out-of-range stores, long float32 sums, and reductions
and row ops over empty dims.

Every case runs eagerly and scripted on the same arguments; values must be equal (integers
exactly, floats closely, nan where eager has nan) and errors of eager's type with eager's
message. Cases the code generator lowers also assert that the call was compiled (not handed to
the interpreter; a failing call is compiled and then rerun by the interpreter for the user's
line), so a lowering that gives up cannot pass for one that is right.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import jitorch
import jitorch.nn.functional as F

NAN, INF = float("nan"), float("inf")


def _run(fn, args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 - the error itself is what is compared
        return "raise", e


def _clone(args):
    return [a.clone() if isinstance(a, jitorch.Tensor) else a for a in args]


def agree(fn, *args, compiled=True, rtol=1e-5, atol=1e-6, ref=None):
    """Eager `fn(*args)` and scripted `fn(*args)` give the same value or the same error
    (`ref`: the eager reference where the scripted language means another op, as TorchScript
    does: a run-time `x[k]` is `select`)."""
    sf = _scripted(fn)
    e_kind, e = _run(ref or fn, _clone(args))
    before = jitorch.jit.stats()["interpreted_runs"]
    s_kind, s = _run(sf, _clone(args))
    if compiled and e_kind == "raise":  # the program raised; the interpreter reran the call
        # for eager's error at the user's line (kernels/signals.py): the program is compiled
        assert all(en.kind == "compiled" for en in sf._cache.values()), sf.code
    elif compiled:  # the call ran a generated program, not the interpreter
        assert jitorch.jit.stats()["interpreted_runs"] == before, sf.code
    if e_kind == "raise":
        assert s_kind == "raise", f"eager raised {type(e).__name__}: {e}; scripted gave {s}"
        assert isinstance(s, type(e)), (type(s).__mro__, type(e))
        assert str(s).split("\n")[0] == str(e).split("\n")[0]
        return e
    assert s_kind == "ok", f"scripted raised {type(s).__name__}: {s}; eager gave {e}"
    for a, b in zip(e if isinstance(e, tuple) else (e,), s if isinstance(s, tuple) else (s,)):
        assert a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape), (a, b)
        if a.dtype.is_floating_point:
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(b.numpy(), a.numpy())
    return e


_SCRIPTED: dict = {}


def _scripted(fn):
    if fn not in _SCRIPTED:
        _SCRIPTED[fn] = jitorch.script(fn)
    return _SCRIPTED[fn]


# --- 1. class targets and data-dependent indices -------------------------------------------------
def nll(x, y):
    return F.nll_loss(x, y)


def nll_ignore7(x, y):
    return F.nll_loss(x, y, ignore_index=7, reduction="none")


def ce(x, y):
    return F.cross_entropy(x, y)


def ce_smooth(x, y):
    return F.cross_entropy(x, y, ignore_index=7, reduction="sum", label_smoothing=0.1)


@pytest.mark.parametrize("loss", [nll, nll_ignore7, ce, ce_smooth])
@pytest.mark.parametrize("target", [[0, 3, 1], [0, 4, 1], [0, -1, 1], [2, -100, 7], [9, 7, -3]])
def test_class_target_bounds(loss, target):
    x = jitorch.randn(3, 4, generator=jitorch.Generator().manual_seed(0))
    agree(loss, x, jitorch.tensor(target))


@pytest.mark.parametrize("loss", [nll, ce])
@pytest.mark.parametrize("target", [[0, 3, 1], [0, 9, 1], [250, 1, 2]])
def test_class_target_uint8(loss, target):
    x = jitorch.randn(3, 4, generator=jitorch.Generator().manual_seed(1))
    agree(loss, x, jitorch.tensor(target, dtype=jitorch.uint8))


@pytest.mark.parametrize("loss", [nll, ce])
@pytest.mark.parametrize("target", [[[0, 3, 2], [1, 1, 0]], [[0, 3, 2], [1, 4, 0]],
                                    [[0, 3], [1, 1]], [[0, 1, 2]]])
def test_class_target_spatial(loss, target):
    """(N, C, d) inputs: every target element checked; wrong target shapes raise eager's
    ValueError / RuntimeError."""
    x = jitorch.randn(2, 4, 3, generator=jitorch.Generator().manual_seed(2))
    agree(loss, x, jitorch.tensor(target))


@pytest.mark.parametrize("loss", [nll, ce])
def test_class_target_dtype_and_probabilities(loss):
    x = jitorch.randn(3, 4)
    agree(loss, x, jitorch.tensor([0, 1, 2], dtype=jitorch.int32), compiled=False)
    agree(loss, x, jitorch.tensor([0.0, 1.0, 2.0]), compiled=False)


def nll_weight(x, y, w):
    return F.nll_loss(x, y, w)


def ce_weight(x, y, w):
    return F.cross_entropy(x, y, w)


@pytest.mark.parametrize("loss", [nll_weight, ce_weight])
@pytest.mark.parametrize("target, c", [([0, 3, 1], 4), ([0, 3, 1], 3), ([0, 5, 1], 4)])
def test_class_target_with_weight(loss, target, c):
    agree(loss, jitorch.randn(3, 4), jitorch.tensor(target), jitorch.ones(c), compiled=False)


def emb(i, w):
    return F.embedding(i, w)


def isel(x, i):
    return x.index_select(0, i)


def iadd(x, i, s):
    return x.index_add(0, i, s)


def iadd_alpha(x, i, s):
    return x.index_add(0, i, s, alpha=2.5)


def select_rt(x, k: int):
    return x[k]


def select_ref(x, k: int):
    return x.select(0, k)


def write_ref(x, k: int):
    x.select(0, k).fill_(1.0)
    return x


def write_rt(x, k: int):
    x[k] = 1.0
    return x


@pytest.mark.parametrize("idx", [[0, 3], [0, 4], [-1, 2], [5, -2], []])
def test_gather_family_bounds(idx):
    w = jitorch.randn(4, 3)
    i = jitorch.tensor(idx, dtype=jitorch.int64)
    agree(emb, i, w)
    agree(isel, w, i)
    agree(iadd, w, i, jitorch.ones(len(idx), 3))


def test_gather_family_shape_errors_and_alpha():
    w = jitorch.arange(12).reshape(4, 3)
    agree(iadd, w, jitorch.tensor([0, 1]), jitorch.ones(3, 3, dtype=jitorch.int64))
    agree(iadd, w, jitorch.tensor([0, 1]), jitorch.ones(2, 2, dtype=jitorch.int64))
    agree(iadd_alpha, w, jitorch.tensor([0, 1, 1]), jitorch.ones(3, 3, dtype=jitorch.int64))
    agree(iadd_alpha, w.float(), jitorch.tensor([0, 1, 1]), jitorch.full((3, 3), 0.1))


@pytest.mark.parametrize("k", [0, 3, -1, -4, 4, -5])
def test_runtime_int_index_bounds(k):
    x = jitorch.randn(4, 2)
    agree(select_rt, x, k, ref=select_ref)
    agree(write_rt, x, k, ref=write_ref)


def gather1(x, i):
    return x.gather(1, i)


def take(x, i):
    return x.take(i)


def scatter1(x, i, s):
    return x.scatter(1, i, s)


def one_hot4(i):
    return F.one_hot(i, 4)


def adv_read(x, i):
    return x[i]


@pytest.mark.parametrize("bad", [3, -4, 12, -13, 4, -1])
def test_interpreted_index_families(bad):
    """Ops the code generator leaves to the interpreter still raise eager's errors."""
    x = jitorch.randn(4, 3)
    agree(gather1, x, jitorch.tensor([[0], [bad % 7 if bad > 0 else bad]]), compiled=False)
    agree(take, x, jitorch.tensor([bad]), compiled=False)
    agree(scatter1, x, jitorch.tensor([[bad]]), jitorch.ones(1, 1), compiled=False)
    agree(one_hot4, jitorch.tensor([bad]), compiled=False)
    agree(adv_read, x, jitorch.tensor([bad]), compiled=False)


# --- 2. integer powers --------------------------------------------------------------------------
def pow_const(x):
    return x ** -2


def pow_method(x):
    return x.pow(-1) + 1


def pow_rt(x, n: int):
    return x ** n


def pow_tensor(x, y):
    return x ** y


def pow_scalar_base(y):
    return 2 ** y


def pow_float(x):
    return x ** -2.0


@pytest.mark.parametrize("dtype", [jitorch.int64, jitorch.int32, jitorch.int8, jitorch.uint8])
def test_int_pow_negative_scalar_raises(dtype):
    x = jitorch.tensor([1, 2, 3, 0], dtype=dtype)
    for x_ in (x, x[:0]):  # eager raises for an empty tensor too
        e = agree(pow_const, x_)
        assert isinstance(e, RuntimeError)
        agree(pow_method, x_)
        agree(pow_rt, x_, -3)
    agree(pow_rt, x, 3)
    agree(pow_rt, x, 0)
    agree(pow_float, x)


@pytest.mark.parametrize("dtype", [jitorch.int64, jitorch.int32, jitorch.int16])
def test_int_pow_tensor_exponent_c_style(dtype):
    """Tensor exponents: 1 ** -n = 1, (-1) ** -n = +-1, other bases 0 (0 ** -1 too), and
    overflow wraps like eager."""
    x = jitorch.tensor([1, -1, -1, 2, 0, 0, 3, -7, 5], dtype=dtype)
    y = jitorch.tensor([-2, -3, -4, -1, -1, 0, 40, 3, 2], dtype=dtype)
    agree(pow_tensor, x, y)
    agree(pow_scalar_base, y)


def sub_tensor(x, y):
    return x - y


def test_eager_operand_checks_of_guarded_ops():
    """Checks of an op's public function (binary.guard) hold in scripted code: bool ** bool
    and bool - bool raise as eager (the interpreter runs the check; the code generator leaves
    these types to it)."""
    t, f = jitorch.tensor([True, False]), jitorch.tensor([False, True])
    agree(pow_tensor, t, f, compiled=False)  # eager: NotImplementedError
    agree(sub_tensor, t, f, compiled=False)  # eager: RuntimeError naming `^`
    agree(pow_rt, t, -2)
    agree(sub_tensor, jitorch.tensor([3, 4]), jitorch.tensor([1, 1]))


# --- 3. casts and stores ------------------------------------------------------------------------
_FLOATS = [300.0, -300.0, 1e10, 3e9 + 7, 65536 + 7.0, NAN, INF, -INF, -1.5, 255.7, 2.0 ** 63,
           -2.0 ** 63, 127.5, -128.5, 2.0 ** 31 + 7, -2.0 ** 31 - 0.5, 0.0, -0.0, 2.9, -2.9]
_INTS = [jitorch.int8, jitorch.uint8, jitorch.int16, jitorch.int32, jitorch.int64]


def casts(x):
    return (x.to(jitorch.int8), x.to(jitorch.uint8), x.to(jitorch.int16), x.to(jitorch.int32),
            x.to(jitorch.int64), x.to(jitorch.bool), x.long().float())


@pytest.mark.parametrize("src", [jitorch.float32, jitorch.float64])
def test_float_to_int_casts_match_eager(src):
    agree(casts, jitorch.tensor(_FLOATS * 3, dtype=src))


def copy_into(y, x):
    y.copy_(x)
    return y


def store_tensor(y, x):
    y[1:] = x[1:]
    return y


@pytest.mark.parametrize("dst", _INTS)
def test_float_tensor_stores_cast_like_eager(dst):
    x = jitorch.tensor(_FLOATS)
    agree(copy_into, jitorch.zeros(len(_FLOATS), dtype=dst), x)
    agree(store_tensor, jitorch.zeros(len(_FLOATS), dtype=dst), x.double())


def store_scalar(y, v: float):
    y[0] = v
    return y


def fill_scalar(y, v: float):
    y.fill_(v)
    return y


def store_int(y, v: int):
    y[1] = v
    return y


def store_const(y):
    y[0] = 300.0
    return y


@pytest.mark.parametrize("dst", _INTS + [jitorch.bool, jitorch.float32, jitorch.float64])
def test_scalar_stores_checked_like_eager(dst):
    """A Python number into a tensor: PyTorch's checked conversion ("value cannot be converted
    to type int8_t without overflow"), run-time and constant numbers alike."""
    for v in _FLOATS + [1e39, -1e300, 3.4e38]:
        agree(store_scalar, jitorch.zeros(2, dtype=dst), v)
    agree(fill_scalar, jitorch.zeros(3, dtype=dst), 300.0)
    agree(fill_scalar, jitorch.zeros(3, dtype=dst), NAN)
    for v in (300, -1, -255, -256, 255, 256, 2 ** 31, -2 ** 31 - 1, 2 ** 62):
        agree(store_int, jitorch.zeros(2, dtype=dst), v)
    agree(store_const, jitorch.zeros(2, dtype=dst))


def adv_store(y, i, v: float):
    y[i] = v
    return y


def masked_store(y, m, v: float):
    return y.masked_fill(m, v)


@pytest.mark.parametrize("dst", [jitorch.int8, jitorch.uint8])
def test_indexed_and_masked_scalar_stores(dst):
    """Advanced-index and masked stores of a number use the same checked conversion as
    `fill_` (eager used to truncate first: uint8 took -1.5 as 255)."""
    for v in (-1.5, -0.5, 127.5, 255.5, 3.7, NAN):
        e = agree(adv_store, jitorch.zeros(2, dtype=dst), jitorch.tensor([0]), v, compiled=False)
        if v in (-1.5, -0.5) and dst is jitorch.uint8:
            assert isinstance(e, RuntimeError)
        agree(masked_store, jitorch.zeros(2, dtype=dst), jitorch.tensor([True, False]), v,
              compiled=False)


def full_float(n: int, v: float):
    return jitorch.full((n,), v, dtype=jitorch.int8)


def full_int(n: int, v: int):
    return jitorch.full((n,), v, dtype=jitorch.uint8)


def full_f32(n: int, v: float):
    return jitorch.full((n,), v, dtype=jitorch.float32)


def full_const(n: int):
    return jitorch.full((n,), 300, dtype=jitorch.int8)


def tensor_const():
    return jitorch.tensor([300, 1], dtype=jitorch.int8)


def tensor_data(v: int):
    return jitorch.tensor([v, 1], dtype=jitorch.uint8), jitorch.tensor([1, v], dtype=jitorch.int16)


def test_factory_fills_checked_like_eager():
    agree(tensor_const)
    for v in (-1, -255, -256, 255, 256, 32767, 32768):
        agree(tensor_data, v)
    for v in (300.0, -3.7, 127.0, 127.5, NAN, INF):
        agree(full_float, 2, v)
    for v in (-3, -255, -300, 255, 256):
        agree(full_int, 2, v)
    for v in (1e300, INF, -1e39, 3.0):
        agree(full_f32, 2, v)
    agree(full_const, 2)


# --- 4. accurate float sums ---------------------------------------------------------------------
def sum_all(x):
    return x.sum()


def mean_all(x):
    return x.mean()


def sum_rows(x):
    return x.sum(-1)


def sum_cols(x):
    return x.sum(0)


def mean_fused(x):
    return (x * 2.0).mean(-1)


def centred(x):
    return x - x.mean(-1, True)


def lsm(x):
    return F.log_softmax(x, -1)


def _rel(got, ref):
    return abs(float(got) - float(ref)) / abs(float(ref))


def test_sum_of_ones_is_exact():
    """2**24 + 40 float32 ones: a sequential float32 sum stops at 2**24."""
    n = 2 ** 24 + 40
    x = jitorch.ones(n)
    assert _scripted(sum_all)(x).item() == n
    assert _scripted(sum_rows)(x.reshape(1, n)).item() == n
    assert _scripted(mean_all)(x).item() == 1.0
    assert _scripted(sum_cols)(x.reshape(n, 1)).item() == n
    assert _scripted(mean_fused)(x.reshape(1, n)).item() == 2.0


@pytest.mark.parametrize("fn, shape, k", [(mean_all, (6_000_000,), 1.0),
                                          (sum_all, (3, 2_000_000), 6e6),
                                          (sum_rows, (2, 3_000_000), 3e6),
                                          (sum_cols, (3_000_000, 2), 3e6),
                                          (mean_fused, (1, 6_000_000), 2.0)])
def test_long_float32_reductions_as_accurate_as_pairwise(fn, shape, k):
    """Random values in [1, 2): the error (against float64) is at most NumPy's pairwise sum's
    (a sequential float32 sum is ~1e-4 off here)."""
    rng = np.random.default_rng(0)
    a = (rng.random(int(np.prod(shape)), dtype=np.float32) + 1).reshape(shape)
    got = _scripted(fn)(jitorch.tensor(a)).numpy().reshape(-1)
    a64 = a.astype(np.float64)
    ref = {mean_all: a64.mean(), sum_all: a64.sum(), mean_fused: 2 * a64.mean()}.get(fn)
    if fn is sum_rows:
        ref, pair = a64.sum(-1), a.sum(-1)
    elif fn is sum_cols:
        ref, pair = a64.sum(0), np.add.reduce(a, 0)
    else:
        pair = {mean_all: a.mean(), sum_all: a.sum(), mean_fused: 2 * a.mean()}[fn]
    for g, r, p in zip(got, np.atleast_1d(ref), np.atleast_1d(pair)):
        assert _rel(g, r) <= max(2 * _rel(p, r), 6e-8), (fn.__name__, _rel(g, r), _rel(p, r))


def test_long_rows_in_row_regions():
    """Row regions (layer-norm centring, log_softmax) sum long rows accurately too."""
    rng = np.random.default_rng(1)
    a = rng.random((2, 3_000_000), dtype=np.float32) + 100
    x = jitorch.tensor(a)
    got = _scripted(centred)(x).numpy()
    ref = a.astype(np.float64) - a.astype(np.float64).mean(-1, keepdims=True)
    assert np.abs(got - ref).max() < 2e-5  # a sequential float32 mean is ~1e-2 off
    agree(lsm, x[:, :100_000], rtol=1e-5, atol=1e-4)


# --- 5. empty dims ------------------------------------------------------------------------------
def softmax_last(x):
    return F.softmax(x, -1)


def softmax_first(x):
    return F.softmax(x, 0)


def log_softmax_last(x):
    return x.log_softmax(-1)


def softmin_last(x):
    return F.softmin(x, -1)


def softmax_scaled(x):
    return F.softmax(x * 2.0, -1) + 1.0


def sum_last(x):
    return x.sum(-1)


def mean_last(x):
    return x.mean(-1, True)


def prod_last(x):
    return x.prod(-1)


def amax_last(x):
    return x.amax(-1)


def amin_first(x):
    return x.amin(0)


def sum_exp(x):
    return x.exp().sum(-1)


def amax_exp(x):
    return (x * 2.0).amax(-1, True)


def norm_rows(x):
    return x / x.sum(-1, True)


_EMPTY = [softmax_last, softmax_first, log_softmax_last, softmin_last, softmax_scaled, lsm,
          centred, sum_last, mean_last, prod_last, amax_last, amin_first, sum_exp, amax_exp,
          norm_rows, sum_all, mean_all, sum_cols]


@pytest.mark.parametrize("fn", _EMPTY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [jitorch.float32, jitorch.float64])
def test_reductions_and_rows_on_empty_dims(fn, dtype):
    for shape in ((3, 0), (0, 3), (0, 0)):
        agree(fn, jitorch.zeros(*shape, dtype=dtype))
    agree(fn, jitorch.randn(2, 3, dtype=dtype))


def ce_empty(x, y):
    return F.cross_entropy(x, y, reduction="sum")


def test_losses_on_empty_batches():
    agree(ce_empty, jitorch.zeros(0, 4), jitorch.zeros(0, dtype=jitorch.int64))
    agree(nll, jitorch.zeros(0, 4), jitorch.zeros(0, dtype=jitorch.int64))
    assert math.isnan(_scripted(nll)(jitorch.zeros(0, 4),
                                     jitorch.zeros(0, dtype=jitorch.int64)).item())
