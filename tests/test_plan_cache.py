"""The plan cache (script/runtime/plans.py): a specialisation built again (a fresh process, or
here a new ScriptFunction of the same function) is served from its record without the passes,
autodiff or code generation; a changed source misses; a damaged, stale or lying record falls
back to a normal build. One small function, compiled once for the module's cache directory.
Also: loading a cached overload runs no Numba LLVM-lock event callbacks (kernels/numba_cache.py:
they time compiles, and were ~10% of a warm start's CPU)."""

import numpy as np
import pytest

import jitorch
from jitorch.script.kernels import cache
from jitorch.script.runtime import autodiff as autodiff_rt, programs
from jitorch.script.targets.cpu.target import CpuTarget

from fresh_modules import set_aside


@pytest.fixture(scope="module")
def cache_dir(module_cache_dir):
    # modules loaded earlier in this process from another cache directory (another test
    # compiled the same kernels) would not be written to this one, which the records name:
    # they are set aside for this module's tests (tests/fresh_modules.py)
    with set_aside():
        yield module_cache_dir


def _f(x, y):
    return jitorch.tanh(x * 2.0 + y).sum()


def _g(x, y):  # _f with another constant: another graph
    return jitorch.tanh(x * 3.0 + y).sum()


X = np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4)
Y = np.linspace(0.7, -0.2, 32, dtype=np.float32).reshape(8, 4)


def _run(fn, x=X, y=Y):
    """(no-grad result, result under grad, x.grad) of a fresh ScriptFunction of `fn`."""
    sf = jitorch.jit.script(fn)
    a, b = jitorch.tensor(x, requires_grad=True), jitorch.tensor(y)
    with jitorch.no_grad():
        plain = float(sf(a, b))
    out = sf(a, b)
    out.backward()
    return plain, float(out), a.grad.numpy().copy(), sf


def _eager(fn, x=X, y=Y):
    a, b = jitorch.tensor(x, requires_grad=True), jitorch.tensor(y)
    out = fn(a, b)
    out.backward()
    return float(out), a.grad.numpy()


def _no_build(monkeypatch):
    """Make the passes, autodiff and the code generator fail the test if they run."""
    def boom(*a, **k):
        raise AssertionError("the build ran")
    monkeypatch.setattr(programs, "optimise", boom)
    monkeypatch.setattr(autodiff_rt, "_differentiate", boom)
    monkeypatch.setattr(autodiff_rt, "_pre_fusion", boom)
    monkeypatch.setattr(CpuTarget, "generate", boom)


def _records(cache_dir):
    d = cache_dir / "plans"
    return sorted(d.iterdir()) if d.exists() else []


def test_second_build_is_served_from_the_record(cache_dir, monkeypatch):
    first = _run(_f)
    assert len(_records(cache_dir)) == 2  # the plain and the autodiff specialisation
    jitorch.jit.reset_stats()
    with monkeypatch.context() as m:
        _no_build(m)
        cache._loaded.clear()  # (as in a fresh process: the record's modules read from files)
        plain, out, grad, sf = _run(_f)
        st = jitorch.jit.stats()
        assert st["plan_hits"] == 2 and st["plan_stores"] == 0
        assert st["interpreted_reasons"] == {}
    assert plain == first[0] and out == first[1]
    np.testing.assert_array_equal(grad, first[2])
    e_out, e_grad = _eager(_f)
    np.testing.assert_allclose(out, e_out, rtol=1e-5)
    np.testing.assert_allclose(grad, e_grad, rtol=1e-5, atol=1e-6)
    # what a hit did not keep is derived when asked for: the code and the optimised graph
    assert "def " in sf.code
    a = jitorch.tensor(X)
    assert sf.graph_for(a, jitorch.tensor(Y)) is not None


def test_hit_then_other_shapes_and_create_graph_follow_eager(cache_dir, monkeypatch):
    _run(_f)
    jitorch.jit.reset_stats()
    sf = jitorch.jit.script(_f)
    a, b = jitorch.tensor(X, requires_grad=True), jitorch.tensor(Y)
    sf(a, b).backward()
    assert jitorch.jit.stats()["plan_hits"] == 1
    # a size pattern the record was not made for (a dim of 1): autodiff runs for it now
    x1, y1 = X[:1], Y[:1]
    a1 = jitorch.tensor(x1, requires_grad=True)
    sf(a1, jitorch.tensor(y1)).backward()
    _, e_grad = _eager(_f, x1, y1)
    np.testing.assert_allclose(a1.grad.numpy(), e_grad, rtol=1e-5, atol=1e-6)
    # higher order: the eager re-run needs the pre-fusion graph, derived now
    a2 = jitorch.tensor(X, requires_grad=True)
    (g,) = jitorch.autograd.grad(sf(a2, jitorch.tensor(Y)), [a2], create_graph=True)
    a3 = jitorch.tensor(X, requires_grad=True)
    (e,) = jitorch.autograd.grad(_f(a3, jitorch.tensor(Y)), [a3], create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=1e-5, atol=1e-6)
    assert g.requires_grad


def test_a_loop_key_kind_record_is_served(cache_dir, monkeypatch):
    """A differentiated loop (passes/autodiff_control.py: an RNN's step) is keyed by kind
    "pattern0" (size 0 counts as many); its record must be a hit like any other (it was a
    miss every time: a warm LSTM step rebuilt autodiff and its programs)."""
    from jitorch.script.passes.autodiff import shape_key_of
    from jitorch.script.runtime import plans
    first = _run(_f)
    e = jitorch.tensor(np.zeros((0, 1, 3), np.float32))
    assert shape_key_of([e, 1.0], "pattern0") == ((2, 1, 2), None)
    for path in _records(cache_dir):
        rec = plans._read(path.stem)
        if rec["kind"] == "autodiff":  # (rewritten as a loop's autodiff would have keyed it)
            args = [jitorch.tensor(X), jitorch.tensor(Y)]
            rec["diff"].update(key_kind="pattern0", shape_key=shape_key_of(args, "pattern0"))
            plans._write(path.stem, rec)
    jitorch.jit.reset_stats()
    with monkeypatch.context() as m:
        _no_build(m)
        cache._loaded.clear()
        _, out, grad, _ = _run(_f)
    assert jitorch.jit.stats()["plan_hits"] == 2
    assert out == first[1]
    np.testing.assert_array_equal(grad, first[2])


def test_changed_source_misses(cache_dir):
    _run(_f)
    jitorch.jit.reset_stats()
    _, out, grad, _ = _run(_g)
    assert jitorch.jit.stats()["plan_hits"] == 0
    e_out, e_grad = _eager(_g)
    np.testing.assert_allclose(out, e_out, rtol=1e-5)
    np.testing.assert_allclose(grad, e_grad, rtol=1e-5, atol=1e-6)

    def make(k):
        def h(x, y):
            return jitorch.tanh(x * k + y).sum()
        return h
    outs = [_run(make(k))[1] for k in (2.0, 5.0)]  # closure constants: two graphs
    np.testing.assert_allclose(outs, [_eager(make(k))[0] for k in (2.0, 5.0)], rtol=1e-5)


@pytest.mark.parametrize("damage", ["flip", "truncate", "junk", "other_key", "module"])
def test_damaged_record_falls_back(cache_dir, damage):
    first = _run(_f)
    recs = _records(cache_dir)
    originals = [r.read_bytes() for r in recs]
    for k, path in enumerate(recs):
        data = path.read_bytes()
        if damage == "flip":
            i = len(data) - 5
            path.write_bytes(data[:i] + bytes([data[i] ^ 1]) + data[i + 1:])
        elif damage == "truncate":
            path.write_bytes(data[:len(data) // 2])
        elif damage == "junk":
            path.write_bytes(b"\x00junk" * 7)
        elif damage == "other_key":  # a valid record of another specialisation swapped in
            path.write_bytes(originals[k - 1])
    if damage == "module":  # a program module the records name, altered on disk
        for path in cache_dir.glob("_jitorch_prog_*.py"):
            path.write_text(path.read_text() + "\n# edited\n")
        cache._loaded.clear()  # (as in a fresh process: modules read from their files)
    jitorch.jit.reset_stats()
    plain, out, grad, _ = _run(_f)
    st = jitorch.jit.stats()
    # rebuilt, records rewritten (the autodiff one after its forward, then with its backward)
    assert st["plan_hits"] == 0 and st["plan_stores"] == 3
    assert (plain, out) == first[:2]
    np.testing.assert_array_equal(grad, first[2])
    jitorch.jit.reset_stats()
    _run(_f)
    assert jitorch.jit.stats()["plan_hits"] == 2


def test_a_replaced_pipeline_never_reads_or_writes_records(cache_dir, monkeypatch):
    _run(_f)
    n = len(_records(cache_dir))
    monkeypatch.setattr(programs, "_lower", lambda g, t, s=None: (g, None, "test"))
    jitorch.jit.reset_stats()
    _run(_g)  # a new graph, built by the stand-in: interpreted, nothing recorded
    assert jitorch.jit.stats()["plan_hits"] == 0
    assert len(_records(cache_dir)) == n


def test_a_cached_load_fires_no_llvm_lock_events(cache_dir):
    from numba.core import event, types

    src = "import numba\n\n@numba.njit(cache=False)\ndef add1(x):\n    return x + 1\n"
    mod, _ = cache.load_module(src)
    assert mod.add1(41) == 42  # compiled and saved to Numba's cache
    name = mod.__name__
    cache.forget(name)
    disp = cache.load_module(src)[0].add1  # a new dispatcher: its overload is on disk
    assert not disp.overloads
    seen = []

    class Count(event.Listener):
        def on_start(self, ev):
            seen.append(ev)

        def on_end(self, ev):
            pass
    with event.install_listener("numba:llvm_lock", Count()):
        cres = disp._cache.load_overload((types.int64,), disp.targetctx)
    assert cres is not None  # loaded, not compiled
    assert seen == []


def test_a_record_of_another_shape_misses_quietly_and_a_failing_load_is_counted(
        cache_dir, monkeypatch):
    import warnings

    from jitorch.script.runtime import plans
    first = _run(_f)
    jitorch.jit.reset_stats()
    good = {"kernels": [], "module": "m", "entry": "e", "out_types": ["Tensor"],
            "checks_overlap": False}
    for bad in ([], {"kernels": 3}, dict(good, out_types=["no such ( type"]),
                dict(good, module="_jitorch_prog_" + "0" * 24)):  # (not in the cache dir)
        assert plans._load_program(bad, None) is None  # expected misses: quiet
    assert jitorch.jit.stats()["plan_errors"] == 0

    real = plans._WarmEntry.__init__

    def broken(self, kind, *a, **k):
        if kind == "compiled":  # (a loaded program's entry, not the build's autodiff entry)
            raise ZeroDivisionError("a bug while loading")
        real(self, kind, *a, **k)
    # a failure that is no expected miss (here a bug building the entry) is counted and
    # warned about once, and the specialisations are built as always
    monkeypatch.setattr(plans._WarmEntry, "__init__", broken)
    monkeypatch.setattr(plans, "_warned", [])
    cache._loaded.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        plain, out, grad, _ = _run(_f)
    said = [w for w in seen if "plan cache failed to load" in str(w.message)]
    assert len(said) == 1 and "ZeroDivisionError: a bug while loading" in str(said[0].message)
    st = jitorch.jit.stats()
    assert st["plan_errors"] == 2 and st["plan_hits"] == 0  # the plain and the autodiff record
    assert (plain, out) == first[:2]
    np.testing.assert_array_equal(grad, first[2])
