"""The call boundary of compiled programs: strided arguments, arguments that share memory, views
that eager refuses, and jit.fork's pool under a concurrent set_num_threads.

Every case runs the Python function eagerly and the scripted one on equal copies of the
arguments (rebuilt as the same views of a fresh copy of one base, so sharing is preserved) and
compares results and argument contents afterwards. Programs must take strided arguments as
they are (read through their strides, no copy) and stay compiled.
"""
import sys
import threading
import tracemalloc
from typing import List

import numpy as np
import pytest

import jitorch as t
from jitorch.script.runtime import alias


def scripted(fn):
    return t.jit.script(fn)


def _interpreted(sf) -> list:
    return [e.reason for e in sf._cache.values() if e.kind == "interpreted"]


def _same(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert a.shape == b.shape and a.dtype == b.dtype, (a, b)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)


def _strided_view(base, shape, strides, offset=0):
    """A view of `base`'s memory with any strides (in elements), as a tensor sharing it."""
    d = base.numpy()
    v = np.lib.stride_tricks.as_strided(d.reshape(-1)[offset:], shape,
                                        tuple(s * d.itemsize for s in strides))
    return t.Tensor._make(v, base.dtype)


def _agree(fn, sf, base, make):
    """fn and sf on make(copy of base): same results, same base contents afterwards."""
    be, bs = base.clone(), base.clone()
    want = fn(*make(be))
    got = sf(*make(bs))
    _same(got, want)
    np.testing.assert_array_equal(bs.numpy(), be.numpy())
    return got


# -- strided arguments, read in place ----------------------------------------------------------
def f_mix(x, y):
    return (x * 2.0 + y).sum(1), x[0] - y[-1], x @ y.t()


def _strided(kind):
    g = t.arange(24.0).reshape(4, 6) * 0.25 - 2.0
    return {
        "C": g[:, :3].contiguous(),
        "F": g[:3, :4].contiguous().t(),                           # Fortran order
        "T": g.t()[:4, :3],
        "step": g[:, ::2],
        "neg": t.from_numpy(g.numpy()[::-1, ::-2].copy()[::-1]),  # negative row stride
        "expand": (t.arange(3.0) - 1.0).expand(4, 3),              # stride 0, read-only
        "stride0": t.empty_strided((4, 3), (0, 1)).copy_(t.arange(3.0).expand(4, 3)),
    }[kind]


@pytest.mark.parametrize("kind", ["C", "F", "T", "step", "neg", "expand", "stride0"])
def test_strided_arguments_give_eager_values_compiled(kind):
    sf = scripted(f_mix)
    x, y = _strided(kind), _strided("step")
    _same(sf(x, y), f_mix(x, y))
    _same(sf(x, y), f_mix(x, y))  # the fast path
    assert not _interpreted(sf)


@pytest.mark.parametrize("shape,strides", [((0, 3), None), ((3, 0), None), ((), None),
                                           ((0, 3), (0, 1)), ((2, 0), (0, 0))])
def test_zero_size_and_zero_dim_arguments(shape, strides):
    def f(x, y):
        return x * 2.0 + y, (x + y).sum()
    sf = scripted(f)
    x = t.ones(shape) if strides is None else t.empty_strided(shape, strides).fill_(1.0)
    y = t.full(shape, 3.0)
    _same(sf(x, y), f(x, y))
    _same(sf(x.clone(), y), f(x, y))
    assert not _interpreted(sf)


def test_expanded_argument_is_not_copied():
    @t.jit.script
    def total(x):
        return x.sum(), x[-1]
    total(t.ones(1, dtype=t.float64).expand(8))  # compile outside the measurement
    x = t.ones(1, dtype=t.float64).expand(2 ** 26)  # 512 MiB if made contiguous
    tracemalloc.start()
    try:
        s, last = total(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert float(s) == 2.0 ** 26 and float(last) == 1.0
    assert peak < 16 * 2 ** 20, f"{peak / 2 ** 20:.0f} MiB traced during the call"


def test_a_returned_view_of_a_strided_argument_shares_its_memory():
    @t.jit.script
    def first(x):
        return x[0]
    g = t.arange(12.0).reshape(3, 4)
    for x in (g, g[:, ::2], g.t()):
        r = first(x)
        np.testing.assert_array_equal(r.numpy(), x.numpy()[0])
        assert np.shares_memory(r.numpy(), g.numpy())  # as eager's view: no boundary copy


def test_layout_is_part_of_the_key_and_both_calls_take_the_fast_path():
    @t.jit.script
    def h(x, y):
        return x * y + 1.0
    c, s = t.ones(3, 4), t.ones(3, 8)[:, ::2]
    for _ in range(3):
        _same(h(c, c), c * c + 1.0)
        _same(h(s, c), s * c + 1.0)
    layouts = sorted(tuple(p[4] for p in k) for k in h._cache)
    assert layouts == [(False, True), (True, True)]
    assert len(h._fast) == 2 and not _interpreted(h)
    disp = next(iter(h._cache.values())).fn
    assert sorted(sg[0].layout for sg in disp.signatures) == ["A", "C"]


def test_list_of_strided_tensors():
    def f(xs: List[t.Tensor], y):
        acc = y * 0.0
        for i in range(len(xs)):
            acc = acc + xs[i] * float(i + 1)
        return acc
    sf = scripted(f)
    g = t.arange(24.0).reshape(4, 6)
    for xs in ([g[:, :3].contiguous(), g[:, 3:].contiguous()], [g[:, ::2], g[:, 1::2]],
               [t.ones(3).expand(4, 3), g[:, :3].contiguous()]):
        _same(sf(xs, g[:, :3].contiguous()), f(xs, g[:, :3].contiguous()))
    assert not _interpreted(sf)


# -- writes to strided arguments ---------------------------------------------------------------
def f_write_row(x, i: int, v: float):
    x[i] = v
    s = x.sum()
    x[0, 1] += 1.0
    return s


@pytest.mark.parametrize("make", [
    lambda b: (b[:, :4],), lambda b: (b.t(),), lambda b: (b[::2, 1:],),
    lambda b: (_strided_view(b, (3, 6), (0, 1)),),     # stride-0 and writable
    lambda b: (_strided_view(b, (3, 3), (1, 1)),),     # rows overlap in memory
], ids=["slice", "T", "step", "stride0", "overlapping"])
def test_writes_to_strided_arguments_land_where_eager_puts_them(make):
    sf = scripted(f_write_row)
    base = t.arange(36.0).reshape(6, 6)
    _agree(lambda x: f_write_row(x, 1, 7.0), lambda x: sf(x, 1, 7.0), base, make)
    _agree(lambda x: f_write_row(x, 2, -1.0), lambda x: sf(x, 2, -1.0), base, make)


def test_empty_strided_stride0_write_the_issue_example():
    def f(x, i: int, v: float):
        x[i] = v
        return x * 1.0
    sf = scripted(f)
    a, b = t.empty_strided((3, 4), (0, 1)), t.empty_strided((3, 4), (0, 1))
    a.fill_(0.0)
    b.fill_(0.0)
    _same(sf(a, 1, 5.0), f(b, 1, 5.0))
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert float(a[0, 0]) == 5.0  # every row is the one row of memory


def test_writing_an_expanded_argument_is_refused_like_eager():
    def f(x):
        x.add_(1.0)
        return x
    sf = scripted(f)
    x = t.ones(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        f(x)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        sf(x)


# -- arguments that share memory ---------------------------------------------------------------
def f_two(a, b):
    a.add_(1.0)
    c = b * 2.0
    b.mul_(3.0)
    return c + a


@pytest.mark.parametrize("make", [
    lambda x: (x, x), lambda x: (x[1:], x[:-1]), lambda x: (x[:, ::2], x[:, 1::2]),
    lambda x: (x[0], x[:, 0]), lambda x: (x.t(), x), lambda x: (x[1:3], x[2:]),
], ids=["same", "shifted", "interleaved", "row-col", "transpose", "overlap-rows"])
def test_aliasing_arguments_give_eager_results(make):
    sf = scripted(f_two)
    _agree(f_two, sf, t.arange(16.0).reshape(4, 4), make)


def test_disjoint_and_read_only_sharing_stay_compiled():
    @t.jit.script
    def g(a, x, y):
        a.add_(x)
        return a * y
    base = t.arange(12.0).reshape(3, 4)
    a, x = t.zeros(4), base[1]
    g(a, x, x)  # compile
    runs = t.jit.stats().interpreted_runs
    for _ in range(3):
        a = t.zeros(4)
        _same(g(a, x, x), x * x)              # x twice, never written: no alias path
        _same(g(base[0], base[1], base[2]), base[0] * base[2])  # disjoint rows of one base
    assert t.jit.stats().interpreted_runs == runs
    assert "_jt_meet" in g.code and not _interpreted(g)
    g(base[1], base[1], base[2])               # a written argument aliased: the in-place run
    assert t.jit.stats().interpreted_runs == runs + 1


def test_the_overlap_check_is_library_code_compiled_once():
    # the check's helpers are overlap_lib.py's, called through symbols: a second program that
    # writes an argument compiles none of them again (emitted into each program's module they
    # were ~1.5 CPU-s per program), and put() serves arrays of any layout with one overload
    from jitorch.script.targets.cpu import overlap_lib

    @t.jit.script
    def g1(a, x):
        a.add_(x)
        return a * 2.0

    @t.jit.script
    def g2(a, x, y):
        a.mul_(x).sub_(y)
        return y + 1.0

    base = t.arange(12.0).reshape(3, 4)
    g1(t.zeros(4), base[1])
    counts = [len(f.overloads) for f in (overlap_lib._jt_rows, overlap_lib._jt_put,
                                         overlap_lib._jt_meet)]
    a = t.ones(3, 4)
    _same(g2(a, base.t().contiguous().t(), base), base + 1.0)  # (x: another layout)
    _same(a, t.zeros(3, 4))
    assert not _interpreted(g1) and not _interpreted(g2)
    assert "_jt_meet" in g2.code and "def _jt_meet" not in g2.code
    assert [len(f.overloads) for f in (overlap_lib._jt_rows, overlap_lib._jt_put,
                                       overlap_lib._jt_meet)] == counts  # none compiled again
    assert all(n >= 1 for n in counts)
    assert {str(sig[2].layout) for sig in overlap_lib._jt_put.overloads} == {"A"}


def f_list(xs: List[t.Tensor], y):
    for i in range(len(xs)):
        xs[i].add_(y)
    return y * 1.0


@pytest.mark.parametrize("make", [
    lambda b: ([b[0], b[1]], b[0]),      # y is an element
    lambda b: ([b[0], b[0]], b[2]),      # two elements are one tensor
    lambda b: ([b[0], b[1]], b[2]),      # disjoint: compiled
    lambda b: ([b[0, :2], b[1, :2]], b[0, 1:3]),
], ids=["y-is-element", "same-element-twice", "disjoint", "partial-overlap"])
def test_list_argument_aliasing_another(make):
    sf = scripted(f_list)
    _agree(f_list, sf, t.arange(12.0).reshape(3, 4), make)


def test_many_list_elements_aliasing_is_found_by_the_sweep():
    sf = scripted(f_list)
    base = t.arange(40.0).reshape(20, 2)
    disjoint = lambda b: ([b[i] for i in range(12)], b[15])  # noqa: E731
    shared = lambda b: ([b[i] for i in range(12)] + [b[3]], b[15])  # noqa: E731
    tail = lambda b: ([b[i] for i in range(12)], b[11])  # noqa: E731
    for make in (disjoint, shared, tail):
        _agree(f_list, sf, base, make)


def test_aliasing_with_an_interpreted_program_and_under_autograd():
    def f(a, b):
        a.mul_(2.0)
        return (b * 3.0).sum(), b.argmax()  # argmax: not lowered, the program is interpreted
    sf = scripted(f)
    x, y = t.arange(4.0), t.arange(4.0)
    _same(sf(x, x), f(y, y))
    np.testing.assert_array_equal(x.numpy(), y.numpy())

    def g(a, b):
        a.mul_(2.0)
        return (b * 3.0).sum()
    sg = scripted(g)
    outs = []
    for run in (g, sg):
        leaf = t.arange(4.0).requires_grad_()
        w = leaf * 1.0
        out = run(w, w)
        out.backward()
        outs.append((float(out), leaf.grad.numpy().tolist(), w.detach().numpy().tolist()))
    assert outs[0] == outs[1]


def test_overlap_check_agrees_with_brute_force():
    rng = np.random.default_rng(0)
    buf = np.arange(64, dtype=np.float32)
    for _ in range(300):
        views = []
        for _ in range(2):
            off = int(rng.integers(0, 8))
            shape = tuple(int(s) for s in rng.integers(0, 4, size=2))
            strides = tuple(int(s) * 4 for s in rng.integers(0, 9, size=2))
            views.append(np.lib.stride_tricks.as_strided(buf[off:], shape, strides))
        args = [t.Tensor._make(v, t.float32) for v in views]
        if not alias.overlap(args, (0,)):  # False must be right
            assert not np.shares_memory(views[0], views[1])
            v = views[0]
            offs = [i * v.strides[0] + j * v.strides[1] for i in range(v.shape[0])
                    for j in range(v.shape[1])]
            assert len(set(offs)) == len(offs)  # no two elements of the written one share
        if np.shares_memory(views[0], views[1]):
            assert alias.overlap(args, (0,)) and alias.overlap(args, (1,))
        assert not alias.overlap(args, ())  # nothing written: nothing to do


def test_compiled_check_matches_python_check():
    sf = scripted(f_two)
    rng = np.random.default_rng(1)
    for _ in range(40):
        base = t.arange(64.0)
        o1, o2 = (int(v) for v in rng.integers(0, 40, size=2))
        s1, s2 = (int(v) for v in rng.integers(0, 3, size=2))
        make = (lambda o1, o2, s1, s2: lambda b: (
            _strided_view(b, (3, 4), (4 * s1 + 1, 1), o1),
            _strided_view(b, (3, 4), (4 * s2 + 1, 1), o2)))(o1, o2, s1, s2)
        runs = t.jit.stats().interpreted_runs
        _agree(f_two, sf, base, make)
        ran_in_place = t.jit.stats().interpreted_runs > runs
        assert ran_in_place == alias.overlap(make(base), (0, 1))


# -- views eager refuses -----------------------------------------------------------------------
def v_flat(x):
    return x.view(-1) * 1.0


def v_t_flat(x):
    return x.t().view(-1) * 1.0


def v_as(x, y):
    return x.view_as(y) + 0.0


def v_runtime(x, n: int):
    return x.view(n, -1) + 0.0


def v_ok(x):
    return x.view(x.shape[0], 1, -1) + 0.0


@pytest.mark.parametrize("fn,args", [
    (v_flat, lambda: (t.arange(6.0).reshape(2, 3).t(),)),
    (v_flat, lambda: (t.ones(3, 1).expand(3, 4),)),
    (v_flat, lambda: (t.arange(12.0).reshape(3, 4)[:, :2],)),
    (v_t_flat, lambda: (t.arange(6.0).reshape(2, 3),)),
    (v_as, lambda: (t.arange(6.0).reshape(2, 3).t(), t.ones(6))),
    (v_runtime, lambda: (t.arange(6.0).reshape(2, 3).t(), 2)),
], ids=["T", "expanded", "sliced", "T-inside", "view_as", "runtime-sizes"])
def test_view_of_non_viewable_strides_raises_like_eager(fn, args):
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        fn(*args())
    sf = scripted(fn)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        sf(*args())
    assert not _interpreted(sf)


@pytest.mark.parametrize("fn,args", [
    (v_ok, lambda: (t.arange(6.0).reshape(2, 3).t(),)),               # splits a dim: a view
    (v_flat, lambda: (t.arange(12.0).reshape(3, 4)[:, ::2],)),        # rows still evenly spaced
    (v_flat, lambda: (t.ones(3).expand(1, 3),)),
    (v_runtime, lambda: (t.arange(12.0).reshape(4, 3)[:2], 3)),
    (v_flat, lambda: (t.ones(0, 3).t(),)),
], ids=["split", "step-rows", "expand-size1", "runtime-ok", "empty"])
def test_viewable_strided_views_work(fn, args):
    sf = scripted(fn)
    _same(sf(*args()), fn(*args()))


def test_reshape_and_flatten_copy_where_a_view_cannot():
    def f(x):
        return x.reshape(-1) * 1.0, x.flatten() + 0.0, x.t().reshape(2, -1) * 1.0
    sf = scripted(f)
    for x in (t.arange(6.0).reshape(2, 3).t(), t.ones(3, 1).expand(3, 4)[:, :2]):
        _same(sf(x), f(x))
    assert not _interpreted(sf)


# -- jit.fork's pool and set_num_threads -------------------------------------------------------
def test_fork_while_another_thread_resizes_the_pool():
    errors, stop = [], threading.Event()
    old, threads = sys.getswitchinterval(), t.get_num_threads()

    def resize():
        k = 0
        while not stop.is_set():
            t.set_num_threads(1 + k % 3)
            k += 1

    def forks():
        try:
            for _ in range(60):
                futs = [t.jit.fork(lambda v: v + 1, i) for i in range(40)]
                assert [t.jit.wait(f) for f in futs] == list(range(1, 41))
        except Exception as e:  # noqa: BLE001 - collected, asserted below
            errors.append(e)
    sys.setswitchinterval(1e-6)  # switch threads often: the race needs a switch in a window
    try:
        ts = [threading.Thread(target=forks) for _ in range(3)]
        r = threading.Thread(target=resize)
        r.start()
        for th in ts:
            th.start()
        for th in ts:
            th.join()
    finally:
        stop.set()
        r.join()
        sys.setswitchinterval(old)
        t.set_num_threads(threads)
    assert not errors, errors[:3]


def test_read_only_element_of_a_written_list_is_refused_where_written():
    def f(xs: List[t.Tensor], k: int):
        xs[k].add_(1.0)
        return xs[0] * 1.0
    sf = scripted(f)
    ro = np.arange(3.0)
    ro.setflags(write=False)
    for run in (f, sf):
        xs = [t.zeros(3, dtype=t.float64), t.Tensor._make(ro, t.float64)]
        _same(run(xs, 0), t.ones(3, dtype=t.float64))  # the read-only one is not written: fine
        with pytest.raises(RuntimeError, match="more than one element|read-only|writ"):
            run(xs, 1)
    np.testing.assert_array_equal(ro, [0.0, 1.0, 2.0])


def test_contiguous_of_a_zero_dim_tensor_stays_zero_dim_compiled():
    # np.ascontiguousarray turns a 0-d array into shape (1,); the program keeps it 0-d
    @t.jit.script
    def f(x):
        return x.contiguous() * 2

    out = f(t.tensor(3.0))
    assert out.shape == () and out.item() == 6.0
    assert f.stats["interpreted"] == {}
