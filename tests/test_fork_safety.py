"""Process-global state across `os.fork` (jitorch/_fork.py): a forked child (a DataLoader
worker, a gunicorn worker, multiprocessing's "fork") gets a working `jit.fork` pool, free locks
and the generators' states, whatever the parent's threads were doing when it forked.

Each scenario runs in a fresh interpreter (`_run`): the parent sets the scene, forks, and the
child runs its checks under `signal.alarm`, so that a regression (a child waiting for ever on a
lock or a pool thread it did not inherit) fails the test instead of hanging it.
"""
from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import jitorch

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")

SRC = pathlib.Path(jitorch.__file__).resolve().parent  # the jitorch under test
CHILD_ALARM = 60  # seconds: only a guard against a hang; each child needs well under 5 s

_SCENE = """
import os, signal, sys, threading, time
import numpy as np
import jitorch, jitorch.jit

def fork_and_check(child):
    pid = os.fork()
    if pid == 0:
        signal.alarm({alarm})  # a hang ends the child (killed by SIGALRM) instead of the test
        code = 1
        try:
            child()
            code = 0
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    print("child exit code", code, "(-14: killed by SIGALRM: it hung)" if code == -14 else "")
    sys.exit(0 if code == 0 else 1)
"""


def _run(tmp_path, script: str) -> None:
    """Run `script` (after the fork_and_check helper) in a fresh interpreter; it passes when
    the forked child's checks pass."""
    code = textwrap.dedent(_SCENE).format(alarm=CHILD_ALARM) + textwrap.dedent(script)
    env = dict(os.environ, JITORCH_CACHE_DIR=str(tmp_path / "cache"), JITORCH_COMPILE="sync",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))  # this jitorch
    env.pop("JITORCH_LOG", None)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=CHILD_ALARM + 120)
    assert p.returncode == 0, f"stdout:\n{p.stdout}\nstderr:\n{p.stderr[-4000:]}"


def test_jit_fork_works_in_a_forked_child(tmp_path):
    # the parent's pool has threads; the child inherits the pool object without them
    _run(tmp_path, """
        assert jitorch.jit.wait(jitorch.jit.fork(lambda: 1)) == 1
        futs = [jitorch.jit.fork(lambda i: i * i, i) for i in range(8)]  # every pool thread
        assert [f.wait() for f in futs] == [i * i for i in range(8)]

        def child():
            assert jitorch.jit.wait(jitorch.jit.fork(lambda a: a + 1, 41)) == 42
            x = jitorch.ones(3)
            r = jitorch.jit.wait(jitorch.jit.fork(jitorch.add, x, x))
            assert r.tolist() == [2.0, 2.0, 2.0]
        fork_and_check(child)
    """)


def test_a_first_call_in_flight_in_a_parent_thread_does_not_block_the_child(tmp_path):
    # a parent thread is inside a scripted function's first call, holding the function's
    # lock for that key and the module cache's lock (its program's module is being executed)
    # when the main thread forks: in the child both are free, the half-executed module is not
    # used, and the same first call builds and compiles there
    _run(tmp_path, """
        from jitorch.script import ir
        from jitorch.script.kernels import cache
        from jitorch.script.runtime import functions, programs

        SLOW = "\\n".join([
            "import time", "time.sleep(1.5)", "import numba", "",
            "@numba.njit(nogil=True, cache=False)", "def add(x, y):", "    return (x + y,)",
            f"# {time.time_ns()}", ""])

        class Program:
            def __init__(self, source, entry, output_types):
                self.source, self.entry, self.output_types = source, entry, output_types

        def lower(graph, arg_types, static=None):
            out = ir.TensorType(arg_types[0].dtype, (None,) * arg_types[0].ndim)
            return graph, Program(SLOW, "add", [out]), None
        programs._lower = lower
        g = ir.Graph("add", ir.Block(params=[ir.Value(ir.TensorType(), "x"),
                                             ir.Value(ir.TensorType(), "y")]))
        f = functions.ScriptFunction(g, name="slow_add")
        x = jitorch.ones(4)
        t = threading.Thread(target=f, args=(x, x), daemon=True)
        t.start()
        deadline = time.monotonic() + 30
        while not cache._lock.locked():  # the thread is loading the module
            assert time.monotonic() < deadline, "the first call never reached the cache"
            time.sleep(0.01)
        time.sleep(0.2)  # (inside the module's code by now)

        def child():
            assert f(x, x).tolist() == [2.0] * 4
            assert f.stats["tier"] == "compiled", f.stats
            assert hasattr(cache.loaded(cache.module_name(cache.prepare_source(SLOW))), "add")
        fork_and_check(child)
    """)


def test_a_function_being_scripted_in_a_parent_thread_can_be_scripted_in_the_child(tmp_path):
    # the frontend holds its lock while it compiles a function and records the function as in
    # progress (to refuse recursion): in the child, the lock is free and the record gone
    _run(tmp_path, """
        import importlib
        from jitorch.script.frontend import function

        d = os.environ["JITORCH_CACHE_DIR"] + "_src"
        os.makedirs(d)
        with open(os.path.join(d, "scripted_body.py"), "w") as fh:
            fh.write("def body(x):\\n    return x * 2.0 + 1.0\\n")
        sys.path.insert(0, d)
        body = importlib.import_module("scripted_body").body
        real = function.FunctionCompiler.compile

        def slow_compile(self):
            time.sleep(1.5)  # (a big function, a loaded machine)
            return real(self)
        function.FunctionCompiler.compile = slow_compile
        threading.Thread(target=jitorch.jit.script, args=(body,), daemon=True).start()
        deadline = time.monotonic() + 30
        while not function._in_progress:
            assert time.monotonic() < deadline, "the thread never started compiling"
            time.sleep(0.01)

        def child():
            f = jitorch.jit.script(body)
            assert f(jitorch.ones(3)).tolist() == [3.0] * 3
        fork_and_check(child)
    """)


def test_a_forked_child_can_draw_while_a_parent_thread_was_drawing(tmp_path):
    # a parent thread drawing when the main thread forks holds the generator's lock (and
    # inside it NumPy's bit-generator lock), released only by that thread, which the child
    # does not have: the child must not wait
    _run(tmp_path, """
        jitorch.manual_seed(1234)
        state = jitorch.get_rng_state()
        expect = jitorch.rand(4).tolist()

        def draw():
            while True:
                jitorch.randn(2_000_000)
        threading.Thread(target=draw, daemon=True).start()
        lock = jitorch.default_generator._lock
        deadline = time.monotonic() + 30
        while lock.acquire(blocking=False):  # until the thread is inside a draw
            lock.release()
            assert time.monotonic() < deadline, "the drawing thread never held the lock"

        def child():
            jitorch.rand(1)
            jitorch.set_rng_state(state)
            assert jitorch.rand(4).tolist() == expect
        fork_and_check(child)
    """)


def test_a_forked_child_draws_what_its_parent_draws_next(tmp_path):
    # PyTorch's semantics: a forked child continues from the parent's generator state, so it
    # draws what the parent draws next until one of them reseeds (DataLoader workers do, each
    # with its own seed: utils/data/_worker.py)
    _run(tmp_path, """
        jitorch.manual_seed(77)
        jitorch.rand(5)
        r, w = os.pipe()

        def child():
            os.write(w, np.asarray(jitorch.rand(6).numpy(), np.float32).tobytes())
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)
            child()
            os._exit(0)
        os.waitpid(pid, 0)
        got = np.frombuffer(os.read(r, 24), np.float32)
        assert got.tolist() == jitorch.rand(6).tolist(), "the child's stream differs"
    """)


# --- every lock, event and condition of jitorch comes from _fork ------------------------------
_SYNC = {"Lock", "RLock", "Event", "Condition", "Semaphore", "BoundedSemaphore", "Barrier"}


def _unregistered_sync_objects(root: pathlib.Path) -> list:
    """file:line of every `threading.X(...)` (X a lock, event, condition, semaphore or barrier)
    or `X(...)` imported from threading under `root`, outside _fork.py."""
    out = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "_fork.py" and path.parent == root:
            continue
        tree = ast.parse(path.read_text())
        imported = {a.asname or a.name for n in ast.walk(tree)
                    if isinstance(n, ast.ImportFrom) and n.module == "threading"
                    for a in n.names if a.name in _SYNC}
        for n in ast.walk(tree):
            if not isinstance(n, ast.Call):
                continue
            fn = n.func
            if (isinstance(fn, ast.Attribute) and fn.attr in _SYNC
                    and isinstance(fn.value, ast.Name) and fn.value.id == "threading") or \
                    (isinstance(fn, ast.Name) and fn.id in imported):
                out.append(f"{path.relative_to(root)}:{n.lineno}")
    return out


def test_every_lock_is_released_in_a_forked_child():
    # a lock made elsewhere would stay held for ever in a child forked while a thread held it
    bad = _unregistered_sync_objects(SRC)
    assert not bad, f"make these with jitorch._fork (lock, rlock, event, condition): {bad}"


def test_the_lock_checker_sees_a_violation(tmp_path):
    (tmp_path / "a.py").write_text("import threading\nL = threading.RLock()\n")
    (tmp_path / "b.py").write_text("from threading import Event as E\nE()\n")
    (tmp_path / "c.py").write_text("from jitorch import _fork\nL = _fork.lock()\n")
    assert _unregistered_sync_objects(tmp_path) == ["a.py:2", "b.py:2"]
