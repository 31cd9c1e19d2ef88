"""Threads whose first calls and tier switches coincide, through the whole pipeline.

N threads each call their own scripted function; in a round all N functions have the same body
(so the same content-hashed program: one module, one dispatcher), and the threads are released
together (a Barrier), so that N first calls build, load and compile one program at once. Every
function must end up compiled, with the right results: a module seen half-executed used to
leave a function interpreted for good ("loading the program failed: ... has no attribute
'entry'") or fail the call (a module whose Numba caches were not guarded yet reads the sealed
cache files with plain pickle). The disk cache is filled first by another process, as a
server's workers find it, which keeps the first calls short and so makes them meet.
"""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import threading
import time

import numpy as np

import jitorch
import jitorch.jit

N = 8  # threads
ROUNDS = 4  # programs (bodies); N functions share each
WAIT = 300  # seconds: only a guard against a hang


def _bodies(tmp_path, rounds: int, tag: str):
    """A module of N * rounds functions `f{r}_{t}`: in round r all have the same body,
    `x * C + y * y - r` with C new to this process (so each program is cold here)."""
    c = 2.0 + (time.time_ns() % 1_000_003) / 1_000_003
    name = f"stress_bodies_{tag}_{time.time_ns()}"
    src = "".join(f"def f{r}_{t}(x, y):\n    return x * {c!r} + y * y - {r}.0\n"
                  for r in range(rounds) for t in range(N))
    (tmp_path / f"{name}.py").write_text(src)
    return name, c


def _import(tmp_path, name):
    sys.path.insert(0, str(tmp_path))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(tmp_path))


def _inputs(t):
    x = jitorch.tensor(np.arange(3 * (t + 1), dtype=np.float32).reshape(t + 1, 3))
    y = jitorch.full((t + 1, 3), 0.5)
    return x, y


def _want(x, y, c, r):
    return x.numpy() * np.float32(c) + y.numpy() * y.numpy() - np.float32(r)


def _threads_at_once(work):
    """Run work(t, barrier) on N threads; re-raise the first error."""
    barrier = threading.Barrier(N)
    errors = []

    def run(t):
        try:
            work(t, barrier)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            barrier.abort()  # the others must not wait for this thread
    ts = [threading.Thread(target=run, args=(t,)) for t in range(N)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(WAIT)
    assert not any(t.is_alive() for t in ts), "a thread hung"
    real = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    if real or errors:
        raise (real or errors)[0]


def test_first_calls_of_identical_functions_on_eight_threads_all_compile(tmp_path, monkeypatch):
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("JITORCH_COMPILE", "sync")
    name, c = _bodies(tmp_path, ROUNDS, "sync")
    # another process compiles each program once into the shared disk cache
    warm = (f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import jitorch, jitorch.jit, "
            f"{name} as b\n"
            f"for r in range({ROUNDS}):\n"
            f"    jitorch.jit.script(getattr(b, f'f{{r}}_0'))(jitorch.ones(2, 3), "
            f"jitorch.ones(2, 3))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # this jitorch
    subprocess.run([sys.executable, "-c", warm], env=env, check=True, timeout=WAIT)

    b = _import(tmp_path, name)
    fns = [[jitorch.jit.script(getattr(b, f"f{r}_{t}")) for t in range(N)]
           for r in range(ROUNDS)]

    def work(t, barrier):
        x, y = _inputs(t)
        for r in range(ROUNDS):
            barrier.wait(WAIT)
            for _ in range(2):  # the first call, then the compiled fast path
                np.testing.assert_allclose(fns[r][t](x, y).numpy(), _want(x, y, c, r),
                                           rtol=1e-6)
    _threads_at_once(work)
    bad = {f.name: (f.stats["tier"], f.stats["reasons"]) for fr in fns for f in fr
           if f.stats["tier"] != "compiled"}
    assert not bad, f"{len(bad)} of {N * ROUNDS} functions not compiled: {bad}"


def test_background_compiles_and_switches_on_eight_threads_at_once(tmp_path, monkeypatch):
    # JITORCH_COMPILE=background: the N first calls of a round meet (all answer from the
    # interpreter while one worker job compiles the shared program), then all N switch to the
    # compiled program at once
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JITORCH_COMPILE", "background")
    monkeypatch.delenv("JITORCH_COMPILE_WORKER_FAULT", raising=False)
    rounds = 2
    name, c = _bodies(tmp_path, rounds, "background")
    b = _import(tmp_path, name)
    fns = [[jitorch.jit.script(getattr(b, f"f{r}_{t}")) for t in range(N)]
           for r in range(rounds)]

    def work(t, barrier):
        x, y = _inputs(t)
        for r in range(rounds):
            f = fns[r][t]
            barrier.wait(WAIT)
            np.testing.assert_allclose(f(x, y).numpy(), _want(x, y, c, r), rtol=1e-6)
            assert f.wait_compiled(timeout=WAIT)
            barrier.wait(WAIT)
            for _ in range(2):  # the switch, then the compiled fast path
                np.testing.assert_allclose(f(x, y).numpy(), _want(x, y, c, r), rtol=1e-6)
    _threads_at_once(work)
    bad = {f.name: (f.stats["tier"], f.stats["reasons"]) for fr in fns for f in fr
           if f.stats["tier"] != "compiled"}
    assert not bad, f"{len(bad)} of {N * rounds} functions not compiled: {bad}"


def test_a_stand_in_replaced_by_another_threads_hands_out_the_loaded_program(monkeypatch):
    # two threads meet new boundary types of a compiled entry at once: each makes a stand-in
    # (`tiers._Compiling`) for the same worker job and the second replaces the first in
    # `entry.eps`. The first one's `ready()` must give the loaded entry point, never the other
    # stand-in (a runner built from it would keep calling a stand-in)
    from types import SimpleNamespace

    from jitorch.script.runtime import compile_worker, tiers

    def program(*xs):
        return "compiled"
    monkeypatch.setattr(tiers, "_load", lambda entry, job, sig: (program, None))
    entry = SimpleNamespace(eps={}, reason=None)
    job = compile_worker.Job(("m", "entry", "sig"), {})
    job._finish({"ok": True})
    first, second = (tiers._Compiling(entry, job, "sig", "bk") for _ in range(2))
    entry.eps["bk"] = second
    assert first.ready() is program
    assert entry.eps["bk"] is program and first() == "compiled"


def test_stats_while_other_threads_make_functions():
    # jitorch.jit.stats() walks the registry of functions while other threads script new
    # ones (a server loading models): it must never see the registry change under it
    from jitorch.script import ir
    from jitorch.script.runtime import functions

    g = ir.Graph("made", ir.Block(params=[ir.Value(ir.TensorType(), "x")]))
    stop = threading.Event()

    def make():
        keep = []
        while not stop.is_set():
            keep.append(functions.ScriptFunction(g, name="made"))
            if len(keep) > 500:
                keep.clear()  # (and the registry loses them again)
    makers = [threading.Thread(target=make) for _ in range(2)]
    for t in makers:
        t.start()
    try:
        for _ in range(300):
            jitorch.jit.stats()
    finally:
        stop.set()
        for t in makers:
            t.join(WAIT)
