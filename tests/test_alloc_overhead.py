"""Correctness of the allocation helpers of generated programs (targets/cpu/alloc.py) and of the
per-call fast path (script/runtime/entry.py `_Entry.runner` / `_entry_point`): outputs of every size
(empty, 0-d, small, above the huge-page threshold), non-contiguous and read-only inputs, dtype
changes between calls, tuple outputs, concurrent callers. No timings are asserted."""
from __future__ import annotations

import threading

import numba
import numpy as np
import pytest
from numba.core import event

import jitorch as torch
from jitorch.script.runtime import entry
from jitorch.script.targets.cpu import alloc

BIG = (alloc.HUGE_MIN_BYTES // 4) + 4099  # float32 elements: above the threshold, odd tail


@torch.jit.script
def gelu(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


@torch.jit.script
def bias_relu(x, b):
    return torch.clamp(x + b, min=0.0)


@torch.jit.script
def two_out(x, y):
    return x * y, x - y


@torch.jit.script
def factories(x):
    n = x.shape[0]
    return torch.zeros(n) + x, torch.ones(n) + x, torch.full([n], 2.5) + x


def _gelu_np(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


# --- alloc.py ---------------------------------------------------------------------------------
@numba.njit
def _all_kinds():
    return (alloc._jt_empty((2, 3), np.float32), alloc._jt_zeros((), np.float64),
            alloc._jt_ones(5, np.bool_), alloc._jt_full((2,), 3.5, np.float32),
            alloc._jt_zeros((3,), np.int64), alloc._jt_empty((0, 4), np.int8),
            alloc._jt_zeros((BIG,), np.float32), alloc._jt_ones((3, BIG), np.int16),
            alloc._jt_full((BIG, 1), True, np.bool_))


def test_alloc_helpers_give_numpy_arrays_of_every_size():
    got = _all_kinds()
    want = [((2, 3), np.float32, None), ((), np.float64, 0), ((5,), np.bool_, True),
            ((2,), np.float32, 3.5), ((3,), np.int64, 0), ((0, 4), np.int8, None),
            ((BIG,), np.float32, 0), ((3, BIG), np.int16, 1), ((BIG, 1), np.bool_, True)]
    for a, (shape, dtype, fill) in zip(got, want):
        assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous
        if fill is not None:
            assert (a == fill).all()


@numba.njit
def _zeros_after_dirty(n, dtype):
    # a block freed dirty is what the allocator hands out next for the same size: `_jt_zeros`
    # must clear it, not trust fresh pages
    ok = True
    for _ in range(4):
        d = alloc._jt_empty(n, dtype)
        for i in range(n):
            d[i] = dtype(3)
        d = alloc._jt_zeros(n, dtype)
        for i in range(n):
            ok = ok and d[i] == dtype(0)
    return ok


@numba.njit
def _cleared(a):
    alloc._jt_clear(a)
    return a


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int64, np.float32, np.float64,
                                   np.complex128])
def test_jt_zeros_and_jt_clear_zero_every_byte(dtype):
    for n in (1, 7, 64, 1000, BIG):
        assert _zeros_after_dirty(n, dtype)
    a = np.full((3, 5, 7), 3, dtype)
    got = _cleared(a)
    assert got is not None and (a == 0).all() and a.dtype == dtype
    assert (_cleared(np.ones(0, dtype)) == 0).all()


def test_jt_clear_refuses_a_non_contiguous_array():
    with pytest.raises(numba.core.errors.TypingError):
        _cleared(np.ones((4, 4))[:, ::2])


@numba.njit
def _alloc_write(shape, dtype):
    a = alloc._jt_empty(shape, dtype)
    flat = a.reshape(a.size)
    for i in range(a.size):
        flat[i] = dtype(i % 7)
    return a


# every dtype generated programs allocate (float16 arrays have no Numba data model)
_DTYPES = (np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float32, np.float64,
           np.complex64, np.complex128)


@pytest.mark.parametrize("shape,dtype", [((2, 3, 4), d) for d in _DTYPES] + [
    ((), np.float32), (0, np.float32), ((3, 0, 2, 1), np.int64), (7, np.bool_),
    ((BIG,), np.float32)])  # each a signature of its own
def test_empty_intrinsic_allocates_as_numpy(shape, dtype):
    """alloc._jt_empty (np.empty emitted in place): C order, Numba's 32-byte alignment, every
    value written inside njit read back in Python; compiling it compiles no np.empty overload
    (one per array type, as it was)."""
    compiled = []

    class Seen(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass
    with event.install_listener("numba:compile", Seen()):
        a = _alloc_write(shape, dtype)
    assert "_alloc_write" in compiled and not [q for q in compiled if "np_empty" in q], compiled
    want = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape) % 7
    assert a.shape == np.empty(shape).shape and a.dtype == np.dtype(dtype)
    assert a.flags.c_contiguous and a.flags.writeable and a.ctypes.data % 32 == 0
    np.testing.assert_array_equal(a, want.astype(dtype))
    dims = a.shape  # C strides, also of zero-size arrays (as Numba's np.empty; NumPy's are 0)
    assert a.strides == tuple(int(np.prod(dims[i + 1:])) * a.itemsize for i in range(a.ndim))


def test_empty_intrinsic_refuses_bad_sizes_as_numpy():
    with pytest.raises(ValueError, match="negative dimensions not allowed"):
        _alloc_write((2, -1, 3), np.int8)
    with pytest.raises(ValueError, match="array is too big"):
        _alloc_write((1 << 40, 1 << 30, 1 << 20), np.int8)


def test_madvise_binding_calls_libc():
    @numba.njit
    def advise_normal(a):  # MADV_NORMAL (0) succeeds on any mapped, page-aligned range
        p = np.intp(a.ctypes.data)
        off = (4096 - p % 4096) % 4096
        return alloc._madvise(np.uintp(p + off), np.uintp(8192), np.int32(0))
    assert advise_normal(np.empty(1 << 16, np.uint8)) == 0


def test_rewrite_routes_allocations_only():
    lines = ["    o = np.empty((n, ), np.float32)", "    z = np.zeros(x.shape, np.int64)",
             "    y = np.full((2,), 1.5, np.float32) + np.ones(3, np.float32)",
             "    u = (np.empty(a.shape[0], np.int8), np.empty((), np.bool_))",
             "    w = np.ascontiguousarray(x)", "    v = np.emptyish(3)",
             "    s = 'np.empty(' + \"np.ones(\\\"\" + f(x)"]  # strings: messages
    out, names = alloc.rewrite(lines)
    assert out[0] == "    o = _jt_empty((n, ), np.float32)"
    assert out[1] == "    z = _jt_zeros(x.shape, np.int64)"
    assert out[2] == "    y = _jt_full((2,), 1.5, np.float32) + _jt_ones(3, np.float32)"
    assert out[3] == "    u = (_jt_empty(a.shape[0], np.int8), _jt_empty((), np.bool_))"
    assert out[4:] == lines[4:]
    assert names == ["_jt_empty", "_jt_full", "_jt_ones", "_jt_zeros"]


def test_generated_program_uses_alloc_helpers():
    gelu(torch.ones(3))
    body = gelu.code.split("def entry")[1]
    assert body.count("_jt_empty(") == 1 and "np.empty(" not in body


# --- outputs of every size through scripted functions ---------------------------------------------
@pytest.mark.parametrize("n", [0, 1, 1000, BIG])
def test_gelu_outputs_of_every_size(n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    for _ in range(2):  # the first call compiles, the second takes the fast path
        out = gelu(torch.from_numpy(x))
        assert out.shape == (n,) and out.dtype == torch.float32
        np.testing.assert_allclose(out.numpy(), _gelu_np(x), rtol=1e-4, atol=1e-5)


def test_zero_dim_and_broadcast_outputs():
    x = torch.tensor(0.5)
    for _ in range(2):
        out = gelu(x)
        assert out.shape == () and abs(out.item() - _gelu_np(np.float32(0.5))) < 1e-6
    rows = BIG // 1000 + 1
    x = np.random.default_rng(1).standard_normal((rows, 1000)).astype(np.float32)
    b = np.random.default_rng(2).standard_normal(1000).astype(np.float32)
    for _ in range(2):
        out = bias_relu(torch.from_numpy(x), torch.from_numpy(b))
        np.testing.assert_array_equal(out.numpy(), np.maximum(x + b, 0))


def test_factories_inside_programs_fill_every_size():
    for n in (1, BIG):
        x = torch.arange(n, dtype=torch.float32)
        z, o, f = factories(x)
        ref = np.arange(n, dtype=np.float32)
        np.testing.assert_array_equal(z.numpy(), ref)
        np.testing.assert_array_equal(o.numpy(), ref + 1)
        np.testing.assert_array_equal(f.numpy(), ref + 2.5)


# --- the fast path ----------------------------------------------------------------------------
def _runner(fn):
    assert len(fn._fast) >= 1
    return list(fn._fast.values())[-1]


def test_fast_path_calls_the_compiled_entry_point():
    a, b = torch.ones(4), torch.full([4], 2.0)
    two_out(a, b)
    p, m = two_out(a, b)  # the second call builds the runner
    run = _runner(two_out)
    assert run.__globals__["_ep"] is not None
    p, m = two_out(a, b)
    np.testing.assert_array_equal(p.numpy(), [2.0] * 4)
    np.testing.assert_array_equal(m.numpy(), [-1.0] * 4)


def test_fast_path_noncontiguous_readonly_and_new_dtypes():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = torch.from_numpy(base)[:, ::2]  # non-contiguous view
    y = torch.from_numpy(base.T.copy())[::2, :].transpose(0, 1)
    for _ in range(3):
        p, m = two_out(x, y)
        np.testing.assert_array_equal(p.numpy(), base[:, ::2] * base.T.copy()[::2, :].T)
        np.testing.assert_array_equal(m.numpy(), base[:, ::2] - base.T.copy()[::2, :].T)
    ro = np.arange(5, dtype=np.float32)
    ro.setflags(write=False)
    t = torch.from_numpy(ro) if ro.flags.writeable else torch.Tensor._make(ro)
    for _ in range(3):
        p, m = two_out(t, t)
        np.testing.assert_array_equal(p.numpy(), ro * ro)
    for dtype in (torch.float64, torch.int64, torch.float32):  # each a new key, then a hit
        a = torch.arange(6, dtype=dtype).reshape(2, 3)
        for _ in range(2):
            p, m = two_out(a, a)
            assert p.dtype == dtype and p.shape == (2, 3)
            np.testing.assert_array_equal(p.numpy(), a.numpy() * a.numpy())


def test_fast_path_rank_change_and_wrong_types_still_checked():
    for shape in [(3,), (2, 3), (), (1, 1, 2)]:
        x = torch.ones(shape)
        for _ in range(2):
            assert gelu(x).shape == shape
    with pytest.raises(TypeError, match="Expected a value of type 'Tensor'"):
        gelu(np.ones(3, np.float32))
    with pytest.raises(TypeError):
        gelu(1.5)


def test_entry_points_by_layout_only_for_compiled_dispatchers():
    plain = lambda *a: a  # noqa: E731 - a Python "program" (tests feed them): called as is
    assert entry._entry_point(plain, [np.ones(2)]) is plain

    @numba.njit
    def f(x):
        return (x + 1,)
    ep = entry._entry_point(f, [np.ones(3)])  # compiles the 'C' overload
    assert ep is not f and ep(np.ones(3))[0].tolist() == [2.0] * 3
    a = np.ones(6)[::2]
    ep_a = entry._entry_point(f, [a])  # strided: the 'A' overload, the array as it is
    ro = np.broadcast_to(np.ones(1), (3,))
    ep_ro = entry._entry_point(f, [ro])  # read-only, stride 0: 'A' and writable too
    assert [s[0].layout for s in f.signatures] == ["C", "A"]  # one 'A' overload serves both
    assert all(s[0].mutable for s in f.signatures) and ep_ro is ep_a
    assert ep_a(a)[0].tolist() == [2.0] * 3 and ep_ro(ro)[0].tolist() == [2.0] * 3
    assert entry._entry_point(f, [np.ones(3, np.float32)]) is not ep  # a new dtype: its own


def test_concurrent_callers_get_their_own_results():
    xs = [np.random.default_rng(i).standard_normal(BIG if i == 0 else 257).astype(np.float32)
          for i in range(6)]
    gelu(torch.from_numpy(xs[1]))
    gelu(torch.from_numpy(xs[1]))
    errors = []

    def work(i):
        try:
            t = torch.from_numpy(xs[i])
            for _ in range(3 if i == 0 else 50):
                np.testing.assert_allclose(gelu(t).numpy(), _gelu_np(xs[i]), rtol=1e-4,
                                           atol=1e-5)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
