"""The garbage collector's thresholds while Numba compiles jitorch's code (kernels/compile_gc.py):
raised for the outermost compile of a jitorch dispatcher, the caller's restored after it, also
when the compile fails; other Numba code is compiled under the caller's thresholds."""
import gc

import numba
import pytest
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import intrinsic

import jitorch.script.kernels.numba_cache  # noqa: F401 - installs the listener
from jitorch.script.kernels import compile_gc

seen = []


def _njit_in(module: str):
    """An njit function of `module` that records the collector's thresholds while it is typed
    (a fresh intrinsic each time: Numba caches an intrinsic's typing per argument types)."""
    @intrinsic
    def _probe(typingctx, x):
        seen.append(gc.get_threshold())
        if isinstance(x, types.Float):
            raise TypingError("probe: no floats")

        def codegen(context, builder, sig, args):
            return args[0]
        return x(x), codegen

    ns = {"__name__": module, "_probe": _probe}
    exec("def f(x):\n    return _probe(x)\n", ns)
    return numba.njit(ns["f"])


@pytest.fixture
def thresholds():
    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    seen.clear()
    yield
    gc.set_threshold(*old)


def test_raised_during_a_jitorch_compile_and_restored(thresholds):
    f = _njit_in("jitorch._gc_probe_a")
    assert f(3) == 3
    assert seen == [compile_gc.RAISED]
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_when_the_compile_fails(thresholds):
    f = _njit_in("jitorch._gc_probe_b")
    with pytest.raises(TypingError):
        f(1.5)
    assert seen and all(s == compile_gc.RAISED for s in seen)
    assert gc.get_threshold() == (700, 10, 10)
    assert f(2) == 2  # (and a later compile works as before)


def test_other_code_keeps_the_callers_thresholds(thresholds):
    f = _njit_in("user_code_gc_probe")
    assert f(4) == 4
    assert seen == [(700, 10, 10)]


class _Event:
    """A stand-in for Numba's compile event of a dispatcher of `module`."""

    def __init__(self, module):
        py_func = type("F", (), {"__module__": module})()
        self.data = {"dispatcher": type("D", (), {"py_func": py_func})()}


def test_raised_block_outlives_a_foreign_compile_that_ended_in_it(thresholds):
    """A compile of other code that started before a build's `raised()` and ends inside it
    (another thread) does not lower the count the build holds."""
    compile_gc._on_start(_Event("user_code"))  # not jitorch's, nothing raised: not counted
    with compile_gc.raised():
        compile_gc._on_end(_Event("user_code"))
        assert gc.get_threshold() == compile_gc.RAISED
        compile_gc._on_start(_Event("user_code"))  # inside a build: counted
        compile_gc._on_end(_Event("user_code"))
        assert gc.get_threshold() == compile_gc.RAISED
    assert gc.get_threshold() == (700, 10, 10)


def test_the_heap_before_a_build_is_frozen_during_it(thresholds):
    """Collections during a build skip the objects that existed before it (they are frozen,
    then unfrozen: collectable again after it); a program's own frozen objects stay frozen."""
    assert gc.get_freeze_count() == 0
    with compile_gc.raised():
        assert gc.get_freeze_count() > 0
        with compile_gc.raised():
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    gc.freeze()  # (the program's own)
    try:
        n = gc.get_freeze_count()
        with compile_gc.raised():
            assert gc.get_threshold() == compile_gc.RAISED
        assert gc.get_freeze_count() > n // 2  # (not unfrozen; some may have died)
    finally:
        gc.unfreeze()


def _gc_build_probe(x):
    return x * 3.0 - 1.0


def _gc_grad_probe(x):
    return (x * x + 2.0 * x).sum()


def test_raised_for_a_whole_first_call_build(thresholds, monkeypatch, tmp_path):
    """Scripting (the frontend), building a first call's program (jitorch's passes, code
    generation, loading its modules: before Numba compiles anything) and a backward
    program's build and first run happen under the raised thresholds, and the caller's are
    back after each."""
    import jitorch
    from jitorch.script.runtime import functions, programs
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("JITORCH_PLAN_CACHE", "0")  # (a plan record would skip the build)
    calls = []

    def probe(name, fn):
        def run(*a, **k):
            calls.append((name, gc.get_threshold()))
            return fn(*a, **k)
        return run
    monkeypatch.setattr(functions, "build_entry", probe("build", functions.build_entry))
    monkeypatch.setattr(programs, "build_entry", probe("build", programs.build_entry))
    monkeypatch.setattr(programs, "first_call", probe("first", programs.first_call))
    from jitorch.script.frontend import function as frontend
    monkeypatch.setattr(frontend, "compile_function",
                        probe("script", frontend.compile_function))
    f = jitorch.jit.script(_gc_build_probe)
    assert calls == [("script", compile_gc.RAISED)]  # (the frontend)
    assert gc.get_threshold() == (700, 10, 10)
    calls.clear()
    x = jitorch.arange(6, dtype=jitorch.float32)
    assert f(x).tolist() == [3.0 * v - 1.0 for v in range(6)]
    assert calls == [("build", compile_gc.RAISED)]
    assert gc.get_threshold() == (700, 10, 10)
    calls.clear()
    g = jitorch.jit.script(_gc_grad_probe)
    w = jitorch.arange(4, dtype=jitorch.float32).requires_grad_(True)
    g(w).backward()
    assert w.grad.tolist() == [2.0 * v + 2.0 for v in range(4)]
    # forward: its build; backward: its build and its first run (where Numba compiles it)
    assert [n for n, _ in calls].count("build") == 2 and ("first", compile_gc.RAISED) in calls
    assert all(t == compile_gc.RAISED for _, t in calls), calls
    assert gc.get_threshold() == (700, 10, 10)


def test_a_program_entry_has_no_cfunc_wrapper(monkeypatch, tmp_path):
    """A program's entry is called from Python only: Numba builds no C-callback wrapper for it
    (typed, lowered and made machine code for nothing: targets/cpu/program.DECORATOR)."""
    import jitorch
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path))
    f = jitorch.jit.script(_gc_build_probe)
    f(jitorch.ones(5))
    (entry,) = [e for e in f._cache.values() if getattr(e, "fn", None) is not None]
    (cres,) = entry.fn.overloads.values()
    assert cres.library.get_pointer_to_function(cres.fndesc.llvm_cpython_wrapper_name)
    assert not cres.library.get_pointer_to_function(cres.fndesc.llvm_cfunc_wrapper_name)


def test_raised_for_a_compile_worker_job(thresholds, monkeypatch):
    """The worker's job (loading its modules, then Numba's compile) runs under the raised
    thresholds, and the worker's own are back after it."""
    from jitorch.script.runtime import compile_worker
    monkeypatch.setattr(compile_worker, "_call_job",
                        lambda job, t0, c0: {"ok": True, "seen": gc.get_threshold()})
    got = compile_worker.compile_job({"kind": "call", "module": "jitorch.x", "entry": "f",
                                      "args": (), "lock": "x"})
    assert got == {"ok": True, "seen": compile_gc.RAISED}
    assert gc.get_threshold() == (700, 10, 10)
