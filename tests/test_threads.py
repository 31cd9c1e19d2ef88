"""Threads: set/get_num_threads, fork/wait, BLAS pinning, concurrent first calls, the GIL probe.

Programs are hand-written sources fed through `programs._lower` (independent of the code
generator); unique comments make a program new to this process where a test needs a compile.
"""
import threading
import time

import numpy as np
import pytest

import jitorch
import jitorch.jit
from jitorch import _threads
from jitorch.script import ir
from jitorch.script.runtime import functions as runtime, programs
from jitorch.script.frontend.trace import trace_graph


class Program:
    def __init__(self, source, entry, output_types):
        self.source, self.entry, self.output_types = source, entry, output_types


ADD = """
import numpy as np
import numba

@numba.njit(nogil=True, cache=False)
def add(x, y):
    return (x + y,)
"""

SPIN = """
import numpy as np
import numba

@numba.njit(nogil=True, error_model="numpy", cache=False)
def spin(x, n):
    acc = 0.0
    m = x.shape[0]
    for i in range(n):
        acc = acc * 0.999999 + x[i % m]
    out = np.empty(1, x.dtype)
    out[0] = acc
    return (out,)
"""


@pytest.fixture(autouse=True)
def env(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "jcache"))
    monkeypatch.delenv("JITORCH_LOG", raising=False)
    yield
    _threads._num_threads = None


def lower_to(source, entry):
    def lower(graph, arg_types, static=None):
        out = ir.TensorType(arg_types[0].dtype, (None,) * arg_types[0].ndim)
        return graph, Program(source, entry, [out]), None
    return lower


def test_set_get_num_threads():
    assert jitorch.get_num_threads() >= 1
    jitorch.set_num_threads(3)
    assert jitorch.get_num_threads() == 3
    assert _threads.pool()._max_workers == 3
    jitorch.set_num_threads(1)
    assert _threads.pool()._max_workers == 1
    with pytest.raises(TypeError):
        jitorch.set_num_threads(1.5)
    with pytest.raises(RuntimeError):
        jitorch.set_num_threads(0)


def test_blas_pinned_to_one_thread():
    jitorch.set_num_threads(2)
    info = _threads.blas_threads()
    assert info, "threadpoolctl found no BLAS (NumPy and SciPy ship OpenBLAS)"
    assert all(n == 1 for n in info.values()), info
    _threads.unpin_blas()
    _threads.pin_blas()
    assert all(n == 1 for n in _threads.blas_threads().values())


def test_fork_wait():
    futs = [jitorch.jit.fork(lambda a, b: a * b, i, 2) for i in range(8)]
    assert [jitorch.jit.wait(f) for f in futs] == [2 * i for i in range(8)]
    assert futs[0].wait() == 0 and futs[0].value() == 0 and futs[0].done()

    def boom():
        raise ValueError("inside fork")
    with pytest.raises(ValueError, match="inside fork"):
        jitorch.jit.wait(jitorch.jit.fork(boom))

    jitorch.set_num_threads(1)  # a nested fork + wait must not deadlock a 1-thread pool

    def outer(x):
        return jitorch.jit.wait(jitorch.jit.fork(lambda y: y + 1, x)) * 10
    assert jitorch.jit.wait(jitorch.jit.fork(outer, 1)) == 20


def test_fork_runs_tensor_code():
    x = jitorch.ones(3)
    r = jitorch.jit.wait(jitorch.jit.fork(jitorch.add, x, x))
    np.testing.assert_allclose(r.numpy(), np.full(3, 2.0))


def test_eight_threads_first_call_compile_once(monkeypatch):
    src = ADD + f"\n# eight threads {time.time_ns()}\n"  # new to this process: must compile
    monkeypatch.setattr(programs, "_lower", lower_to(src, "add"))
    g, _ = trace_graph(lambda x, y: x + y, (jitorch.ones(2), jitorch.ones(2)))
    f = runtime.ScriptFunction(g, name="add8")
    before = jitorch.jit.stats()
    barrier = threading.Barrier(8)
    results, errors = [None] * 8, []

    def work(i):
        try:
            x, y = jitorch.full((i + 1, 3), float(i)), jitorch.ones(i + 1, 3)
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
        np.testing.assert_allclose(r.numpy(), np.full((i + 1, 3), i + 1.0))
    after = jitorch.jit.stats()
    assert after.compiles - before.compiles == 1
    assert after.numba_compiles - before.numba_compiles == 1
    assert after.memory_hits - before.memory_hits == 7
    assert len(f._last.fn.signatures) == 1


def test_gil_probe(monkeypatch):
    monkeypatch.setattr(programs, "_lower", lower_to(SPIN, "spin"))
    g = ir.Graph("spin", ir.Block(params=[ir.Value(ir.TensorType(), "x"),
                                          ir.Value(ir.INT, "n")]))
    f = runtime.ScriptFunction(g, name="spin")
    x = jitorch.ones(16, dtype=jitorch.float64)
    f(x, 10)  # compile outside the measurement
    _assert_other_thread_progresses(lambda n: f(x, n), 1_000_000)


def _spin_scripted(x, n: int):
    acc = x
    for i in range(n):
        acc = acc * 0.5 + x
    return acc


def test_gil_probe_scripted_loop():
    # the real pipeline: frontend -> passes -> codegen -> one nogil program with the loop inside
    f = jitorch.jit.script(_spin_scripted)
    x = jitorch.ones(64)
    np.testing.assert_allclose(f(x, 3).numpy(), _spin_scripted(x, 3).numpy(), rtol=1e-6)
    assert "runs interpreted" not in f.code, f.code
    _assert_other_thread_progresses(lambda n: f(x, n), 50_000)


def _long_enough(call, n: int) -> int:
    """The first of n, 2n, 4n, ... for which `call(n)` lasts 0.05 s on this machine now: the
    probe needs a call long enough for the counter to run, and a fixed loop count was too short
    on a fast hour (18 ms against the 20 the probe needs)."""
    for _ in range(16):
        t0 = time.perf_counter()
        call(n)
        if time.perf_counter() - t0 >= 0.05:
            return n
        n *= 2
    raise AssertionError(f"call(n) still under 0.05 s at n={n}: its time does not follow n")


def _assert_other_thread_progresses(call, n: int):
    """A Python thread counts while `call(n)` runs, n grown until the call lasts 0.05 s: with
    the GIL held for the whole call the counter could not move at all during it."""
    n = _long_enough(call, n)
    count = [0]
    stop = threading.Event()

    def counter():
        while not stop.is_set():
            count[0] += 1
    t = threading.Thread(target=counter)
    t.start()
    try:
        time.sleep(0.02)
        c0, t0 = count[0], time.perf_counter()
        call(n)
        c1, dt = count[0], time.perf_counter() - t0
    finally:
        stop.set()
        t.join()
    assert dt > 0.02, "the compiled call was too short to probe"
    assert c1 - c0 > 1000, (c1 - c0, dt)
