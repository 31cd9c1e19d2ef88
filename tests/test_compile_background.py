"""The background compile (script/runtime/tiers.py, script/runtime/compile_worker.py): a first call
answers from the interpreter while the compile worker process compiles the program, later calls
switch to the compiled program, and a worker that fails, dies or times out leaves the function
interpreted with the reason, never wrong or hung. Each test uses its own cache directory and a
function of its own, so its program is cold (neither in this process's memory nor on disk)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import jitorch as jt
import jitorch.jit
from jitorch import nn
from jitorch.script.runtime import compile_pool, functions as runtime, programs
from jitorch.script import ir
from jitorch.script.frontend.trace import trace_graph

WAIT = 300  # seconds: only a guard against a hang, a compile here takes 0.2-2 s


@pytest.fixture(autouse=True)
def background(monkeypatch, tmp_path):
    monkeypatch.setenv("JITORCH_COMPILE", "background")
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("JITORCH_COMPILE_WORKER_FAULT", raising=False)
    monkeypatch.delenv("JITORCH_COMPILE_TIMEOUT", raising=False)
    monkeypatch.delenv("JITORCH_LOG", raising=False)
    yield


def _delta(before, key):
    return jt.jit.stats()[key] - before[key]


def _report(f):
    return f.stats  # ScriptFunction.stats carries the tier report of jitorch.jit.stats()


def _ints(shape, seed):
    return jt.tensor(np.random.default_rng(seed).integers(-50, 50, shape))


def test_first_call_answers_from_the_interpreter_then_switches_to_the_program():
    @jt.jit.script
    def first_fn(x, y):
        return x * 3 + y * y - x

    f = first_fn
    x, y = _ints((4, 5), 0), _ints((4, 5), 1)
    want = (x * 3 + y * y - x).numpy()
    before = jt.jit.stats()
    first = f(x, y)
    np.testing.assert_array_equal(first.numpy(), want)
    assert _report(f)["tier"] == "interpreted-while-compiling"
    assert jt.jit.stats()["functions"]["first_fn"]["tier"] == "interpreted-while-compiling"
    assert "interpreted while the compile worker compiles it" in f.code
    assert _delta(before, "background_compiles") == 1
    assert _delta(before, "interpreted_runs") == 1
    assert _delta(before, "numba_compiles") == 0  # nothing compiled in this process
    np.testing.assert_array_equal(f(x, y).numpy(), want)  # still answers while it compiles

    assert f.wait_compiled(timeout=WAIT)
    rep = _report(f)
    assert rep["tier"] == "compiled" and rep["reasons"] == []
    assert rep["worker_cpu_s"] > 0 and rep["compile_wall_s"] > 0
    runs = jt.jit.stats()["interpreted_runs"]
    np.testing.assert_array_equal(f(x, y).numpy(), first.numpy())  # identical after the switch
    np.testing.assert_array_equal(f(_ints((2, 3), 2), _ints((2, 3), 3)).numpy(),
                                  (_ints((2, 3), 2) * 3 + _ints((2, 3), 3) ** 2
                                   - _ints((2, 3), 2)).numpy())
    assert jt.jit.stats()["interpreted_runs"] == runs
    # the caller loaded the worker's file from Numba's disk cache: it compiled nothing itself
    assert _delta(before, "disk_hits") == 1
    assert _delta(before, "numba_compiles") == 0
    assert _delta(before, "background_done") == 1
    assert jt.jit.stats()["worker_cpu_seconds"] > 0
    assert "compile worker" not in f.code
    # who typed the program's functions: the worker's counts, reported to this process
    lean, lean_before = jt.jit.stats()["lean"], before["lean"]
    assert lean["compiled"] - lean_before["compiled"] >= 1, (lean_before, lean)
    assert lean["declined"] == lean_before["declined"]


def test_calls_switch_without_waiting_once_the_worker_is_done():
    @jt.jit.script
    def f(x):
        return x * 5 - 7

    x = _ints((6,), 4)
    f(x)
    job = f._last.pending[0]
    assert job.done.wait(WAIT)  # the worker answered; the entry switches at its next call
    runs = jt.jit.stats()["interpreted_runs"]
    np.testing.assert_array_equal(f(x).numpy(), (x * 5 - 7).numpy())
    assert jt.jit.stats()["interpreted_runs"] == runs
    assert _report(f)["tier"] == "compiled", _report(f)


def test_autodiff_forward_and_backward_compile_in_the_background():
    @jt.jit.script
    def f(x, w):
        return ((x * w).tanh() * 2.0 + w).sum()

    def grads(fn):
        x = jt.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
        w = jt.tensor(np.linspace(0.5, 2, 12).reshape(3, 4), requires_grad=True)
        out = fn(x, w)
        out.backward()
        return out.item(), x.grad.numpy(), w.grad.numpy()

    want = grads(lambda x, w: ((x * w).tanh() * 2.0 + w).sum())
    before = jt.jit.stats()
    got = grads(f)  # forward and backward both interpreted while compiling
    assert _report(f)["tier"] == "interpreted-while-compiling"
    assert _report(f)["programs_compiling"] == 2
    assert _delta(before, "background_compiles") == 2
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert f.wait_compiled(timeout=WAIT)
    assert _report(f)["tier"] == "compiled", _report(f)
    again = grads(f)  # the compiled pair
    for g, w in zip(again, got):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert _delta(before, "background_done") == 2
    # (not `numba_compiles == 0` as for a plain function above: a kernel this pair shares with
    # an earlier test of the same process was loaded from that test's cache directory, where
    # the worker of this one did not compile the overload needed here; such an entry is
    # compiled again, correctly (numba_cache.EntryCache), and which kernels that hits depends
    # on the order the tests ran in)


def test_module_wait_compiled():
    jt.manual_seed(0)
    m = jt.jit.script(nn.Linear(3, 2))
    x = jt.ones(4, 3)
    with jt.no_grad():
        a = m(x)
        assert m.wait_compiled(timeout=WAIT)
        b = m(x)
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    (variant,) = m._methods["forward"]._variants
    assert _report(variant.sf)["tier"] == "compiled", _report(variant.sf)


def test_eight_threads_making_the_first_call_submit_one_job():
    @jt.jit.script
    def f(x, y):
        return x * 11 + y

    before = jt.jit.stats()
    barrier = threading.Barrier(8)
    results, errors = [None] * 8, []

    def work(i):
        try:
            x, y = jt.full((i + 1, 3), i, dtype=jt.int64), jt.ones(i + 1, 3, dtype=jt.int64)
            barrier.wait()
            results[i] = f(x, y)
        except BaseException as e:  # reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    for i, r in enumerate(results):
        np.testing.assert_array_equal(r.numpy(), np.full((i + 1, 3), 11 * i + 1))
    assert _delta(before, "background_compiles") == 1
    assert f.wait_compiled(timeout=WAIT)
    assert _delta(before, "background_done") == 1


def test_sync_mode_compiles_in_the_call(monkeypatch):
    monkeypatch.setenv("JITORCH_COMPILE", "sync")

    @jt.jit.script
    def f(x):
        return x * 13 + 1

    before = jt.jit.stats()
    f(_ints((3,), 5))
    assert _report(f)["tier"] == "compiled", _report(f)
    assert _delta(before, "background_compiles") == 0
    assert _delta(before, "numba_compiles") == 1
    assert f.wait_compiled(timeout=0)  # nothing pending


def test_unknown_mode_warns_and_compiles_in_the_background(monkeypatch):
    monkeypatch.setenv("JITORCH_COMPILE", "eventually")

    @jt.jit.script
    def f(x):
        return x * 17 + 2

    with pytest.warns(RuntimeWarning, match="JITORCH_COMPILE='eventually'"):
        f(_ints((3,), 6))
    assert _report(f)["tier"] == "interpreted-while-compiling"
    assert f.wait_compiled(timeout=WAIT)


def _assert_left_interpreted(f, x, want, words):
    assert f.wait_compiled(timeout=WAIT)  # settled: never hangs
    rep = _report(f)
    assert rep["tier"] == "interpreted"
    (reason,) = rep["reasons"]
    assert words in reason, reason
    assert jt.jit.stats()["interpreted_reasons"].get(reason, 0) >= 1
    assert f.stats["interpreted"] and reason in f.stats["interpreted"].values()
    np.testing.assert_array_equal(f(x).numpy(), want)  # still right, interpreted
    return reason


def test_a_worker_that_dies_leaves_the_function_interpreted_then_restarts(monkeypatch):
    monkeypatch.setenv("JITORCH_COMPILE_WORKER_FAULT", "die")

    @jt.jit.script
    def f(x):
        return x * 19 - 3

    x = _ints((5,), 7)
    before = jt.jit.stats()
    np.testing.assert_array_equal(f(x).numpy(), (x * 19 - 3).numpy())
    _assert_left_interpreted(f, x, (x * 19 - 3).numpy(), "compile worker died")
    assert _delta(before, "background_failed") == 1

    monkeypatch.delenv("JITORCH_COMPILE_WORKER_FAULT")
    starts = compile_pool.pool().starts

    @jt.jit.script
    def g(x):
        return x * 23 - 3

    g(x)
    assert g.wait_compiled(timeout=WAIT)
    assert _report(g)["tier"] == "compiled"
    assert compile_pool.pool().starts == starts + 1  # a fresh worker for the next job


def test_a_worker_that_times_out_is_stopped_and_the_function_stays_interpreted(monkeypatch):
    monkeypatch.setenv("JITORCH_COMPILE_WORKER_FAULT", "hang")
    monkeypatch.setenv("JITORCH_COMPILE_TIMEOUT", "0.5")
    compile_pool.pool().shutdown()  # (the earlier tests' workers: the job's is the one)

    @jt.jit.script
    def f(x):
        return x * 29 - 3

    x = _ints((5,), 8)
    f(x)
    _assert_left_interpreted(f, x, (x * 29 - 3).numpy(), "timed out after 0.5 s")
    assert compile_pool.pool().proc is None  # the hung worker was stopped


def test_a_worker_killed_during_a_job_leaves_the_function_interpreted(monkeypatch):
    monkeypatch.setenv("JITORCH_COMPILE_WORKER_FAULT", "hang")
    monkeypatch.setenv("JITORCH_COMPILE_TIMEOUT", str(WAIT))  # the kill ends the job first
    svc = compile_pool.pool()
    svc.shutdown()

    @jt.jit.script
    def f(x):
        return x * 31 - 3

    x = _ints((5,), 9)
    f(x)
    deadline = time.monotonic() + WAIT
    while svc.proc is None and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(svc.proc.pid, signal.SIGKILL)  # as the OOM killer or a user would
    _assert_left_interpreted(f, x, (x * 31 - 3).numpy(), "compile worker died")


class _Program:
    def __init__(self, source, entry, output_types):
        self.source, self.entry, self.output_types = source, entry, output_types


def test_a_program_numba_cannot_compile_stays_interpreted_with_numbas_reason(monkeypatch):
    src = textwrap.dedent(f"""
        import numba

        @numba.njit(nogil=True, cache=False)
        def bad(x, y):
            return (x + "not a number {time.time_ns()}",)
        """)

    def lower(graph, arg_types, static=None):
        out = ir.TensorType(arg_types[0].dtype, (None,) * arg_types[0].ndim)
        return graph, _Program(src, "bad", [out]), None
    monkeypatch.setattr(programs, "_lower", lower)
    g, _ = trace_graph(lambda x, y: x + y, (jt.ones(2), jt.ones(2)))
    f = runtime.ScriptFunction(g, name="bad_add")
    x = jt.arange(4)
    np.testing.assert_array_equal(f(x, x).numpy(), [0, 2, 4, 6])
    assert f.wait_compiled(timeout=WAIT)
    rep = _report(f)
    assert rep["tier"] == "interpreted"
    assert "numba could not compile the program: TypingError" in rep["reasons"][0]
    assert f._last.fn is None
    np.testing.assert_array_equal(f(x, x).numpy(), [0, 2, 4, 6])


CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import jitorch as jt
import shared_fn
x = jt.tensor(np.arange(12).reshape(3, 4))
r = shared_fn.f(x, x)
assert shared_fn.f.wait_compiled(timeout=300)
assert shared_fn.f.stats["tier"] == "compiled", shared_fn.f.stats
np.testing.assert_array_equal(shared_fn.f(x, x).numpy(), r.numpy())
np.testing.assert_array_equal(r.numpy(), np.arange(12).reshape(3, 4) * 38 - 1)
print("ok", jt.jit.stats()["background_done"])
"""


def test_two_processes_compiling_the_same_program_at_once_share_the_disk_cache(tmp_path,
                                                                             monkeypatch):
    (tmp_path / "shared_fn.py").write_text(textwrap.dedent("""
        import jitorch as jt


        @jt.jit.script
        def f(x, y):
            return x * 37 + y - 1
        """))
    env = dict(os.environ, JITORCH_CACHE_DIR=str(tmp_path / "cache"),
               JITORCH_COMPILE="background",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=WAIT)
        assert p.returncode == 0, err
        # its worker compiled the program (1), or the other process's was first (0: loaded)
        assert out.split()[0] == "ok"
    # a third process (this one) finds the program on disk: it loads, no worker, no compile
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))
    sys.path.insert(0, str(tmp_path))
    try:
        import shared_fn
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("shared_fn", None)
    before = jt.jit.stats()
    x = jt.tensor(np.arange(12).reshape(3, 4))
    np.testing.assert_array_equal(shared_fn.f(x, x).numpy(),
                                  np.arange(12).reshape(3, 4) * 38 - 1)
    assert _report(shared_fn.f)["tier"] == "compiled"
    assert _delta(before, "background_compiles") == 0
    assert _delta(before, "numba_compiles") == 0
    assert _delta(before, "disk_hits") == 1


def test_a_first_call_with_aliased_written_arguments_gets_eagers_result():
    # interpreted while compiling, the first call must still see that x and y share memory
    @jt.jit.script
    def f(x, y):
        x.add_(y)
        x.add_(y)
        return x

    a = jt.ones(4)
    f(a, a)
    np.testing.assert_array_equal(a.numpy(), [4.0] * 4)  # eager: a += a; a += a
    assert _report(f)["tier"] == "interpreted-while-compiling"
    assert f.wait_compiled(timeout=WAIT)
    b = jt.ones(4)
    f(b, b)
    np.testing.assert_array_equal(b.numpy(), [4.0] * 4)
    c, d = jt.ones(4), jt.ones(4)
    f(c, d)
    np.testing.assert_array_equal(c.numpy(), [3.0] * 4)


def test_a_forked_child_finishes_the_compiles_its_parent_started(monkeypatch):
    # (as a DataLoader worker would be forked): the child has neither the parent's compile
    # thread nor a worker of its own; its pending entries must still switch, not hang
    monkeypatch.setenv("JITORCH_COMPILE_WORKER_FAULT", "hang")
    monkeypatch.setenv("JITORCH_COMPILE_TIMEOUT", str(WAIT))

    @jt.jit.script
    def f(x):
        return x * 41 - 3

    x = _ints((5,), 10)
    f(x)  # the parent's worker hangs on it: only the child's own worker can answer
    job = f._last.pending[0]
    deadline = time.monotonic() + WAIT
    while job.sent is None and time.monotonic() < deadline:
        time.sleep(0.01)
    monkeypatch.delenv("JITORCH_COMPILE_WORKER_FAULT")  # (the child's worker does not hang)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave at once, whatever happens
        code = 1
        try:
            ok = f.wait_compiled(timeout=WAIT) and _report(f)["tier"] == "compiled" and \
                np.array_equal(f(x).numpy(), (x * 41 - 3).numpy())
            code = 0 if ok else 2
        finally:
            os.write(w, bytes([code]))
            os._exit(code)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == bytes([0])
    compile_pool.pool().shutdown()  # the parent's hung worker
    assert f.wait_compiled(timeout=WAIT)
    assert _report(f)["tier"] == "interpreted"  # the parent's job died with its worker


def test_an_overload_for_new_boundary_types_also_compiles_in_the_worker():
    # a compiled entry called with arrays of another layout (an autodiff backward whose saved
    # values are laid out otherwise): that overload compiles in the worker too, the call runs
    # interpreted meanwhile (NotReady: the caller's RaiseInInterpreter path), never a stall
    from jitorch.script.runtime.entry import NotReady

    @jt.jit.script
    def f(x):
        return x * 43 - 3

    x = _ints((3, 4), 11)
    f(x)
    assert f.wait_compiled(timeout=WAIT)
    entry = f._last
    strided = x.t().contiguous().t()  # the same values, column-major
    assert not strided._data.flags.c_contiguous
    before = jt.jit.stats()
    with pytest.raises(NotReady):
        entry.run([strided])
    assert _report(f)["tier"] == "interpreted-while-compiling"
    assert _delta(before, "background_compiles") == 1
    assert f.wait_compiled(timeout=WAIT)
    assert _report(f)["tier"] == "compiled", _report(f)
    np.testing.assert_array_equal(entry.run([strided])[0].numpy(), (x * 43 - 3).numpy())
    assert _delta(before, "numba_compiles") == 0 and _delta(before, "disk_hits") == 1


def test_a_worker_whose_caller_dies_mid_compile_exits_within_the_timeout(tmp_path):
    # it finishes the job it has (compile_worker: a detached worker), but never runs more
    # than JITORCH_COMPILE_TIMEOUT seconds past its caller: this one "hangs"
    child = tmp_path / "caller.py"
    child.write_text(textwrap.dedent("""
        import os, sys, time
        import jitorch as jt
        from jitorch.script.runtime import compile_pool

        @jt.jit.script
        def f(x):
            return x * 47 - 3

        f(jt.ones(3))
        svc = compile_pool.pool()
        while svc.proc is None:
            time.sleep(0.01)
        print(svc.proc.pid, flush=True)
        time.sleep(1e6)  # the test kills this process while its worker "compiles"
        """))
    env = dict(os.environ, JITORCH_COMPILE_WORKER_FAULT="hang", JITORCH_COMPILE_TIMEOUT="3",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.Popen([sys.executable, str(child)], env=env, stdout=subprocess.PIPE,
                         text=True)
    try:
        worker = int(p.stdout.readline())
    finally:
        p.kill()
        p.wait()
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(worker, signal.SIGKILL)
        raise AssertionError("the orphaned compile worker kept running")
