"""One compile of a function at a time across processes (script/kernels/compile_lock.py).

The lock itself (held, re-entrant, given back, dying with its process, bounded wait), then what
it is for: two processes that start the same work on one cold cache at the same moment compile
each function once, whether it is a program compiled in the caller (`JITORCH_COMPILE=sync`) or a
library function eager code calls; and a compile that fails gives its lock back.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from jitorch.script.kernels import compile_lock
from jitorch.script.kernels.cache_guards import guard_eager_dispatcher
from jitorch.script.kernels.numba_cache import GuardedCache

WAIT = 300
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))

# a second process's view of lock `name` in `directory`, not waiting (JITORCH_COMPILE_LOCK_WAIT=0)
PROBE = """
import sys
from jitorch.script.kernels import compile_lock
said = []
token = compile_lock.acquire(sys.argv[1], sys.argv[2], said.append)
print("free" if token is not None else "held", said)
"""


def _probe(directory, name) -> str:
    r = subprocess.run([sys.executable, "-c", PROBE, str(directory), name], capture_output=True,
                       text=True, timeout=WAIT, env=dict(ENV, JITORCH_COMPILE_LOCK_WAIT="0"))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_a_held_lock_keeps_other_processes_out_until_it_is_given_back(tmp_path):
    token = compile_lock.acquire(str(tmp_path), "f")
    assert token is not None and compile_lock.held() == [token]
    again = compile_lock.acquire(str(tmp_path), "f")  # this process: re-entrant, no wait
    assert again == token
    out = _probe(tmp_path, "f")
    assert out.startswith("held") and "compile lock of f, and waited 0 s" in out
    assert _probe(tmp_path, "g").startswith("free")  # another function's lock is its own
    compile_lock.release(again)
    assert _probe(tmp_path, "f").startswith("held")  # held once more: still held
    compile_lock.release(token)
    assert compile_lock.held() == []
    assert _probe(tmp_path, "f").startswith("free")


def test_a_lock_dies_with_its_process(tmp_path):
    code = ("import sys, os\nfrom jitorch.script.kernels import compile_lock\n"
            "assert compile_lock.acquire(sys.argv[1], 'f') is not None\nos._exit(0)\n")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], timeout=WAIT, env=ENV)
    assert r.returncode == 0
    token = compile_lock.acquire(str(tmp_path), "f")
    assert token is not None
    compile_lock.release(token)


def test_a_stopped_holder_is_not_waited_for(tmp_path, monkeypatch):
    monkeypatch.setenv("JITORCH_COMPILE_LOCK_WAIT", "60")  # (a failure must not wait 600 s)
    code = ("import sys, time\nfrom jitorch.script.kernels import compile_lock\n"
            "assert compile_lock.acquire(sys.argv[1], 'f') is not None\n"
            "print('holding', flush=True)\ntime.sleep(600)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], env=ENV,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        os.kill(holder.pid, signal.SIGSTOP)
        said = []
        token = compile_lock.acquire(str(tmp_path), "f", said.append)
        assert token is None, "waited for a stopped process"
        assert said and "its process is stopped" in said[0], said
    finally:
        os.kill(holder.pid, signal.SIGCONT)
        holder.kill()
        holder.wait(timeout=WAIT)


def test_no_directory_means_no_lock():
    assert compile_lock.acquire("", "f") is None
    compile_lock.release(None)  # (nothing to give back: no error)


# --- two processes, one compile --------------------------------------------------------------
# Each child says it is ready, waits for the go file, then does its work: both start compiling
# within milliseconds of each other, so without the lock both would compile.
BARRIER = """
import os, sys, time
ready, go = sys.argv[1], sys.argv[2]
open(ready, "w").close()
deadline = time.monotonic() + 120
while not os.path.exists(go):
    assert time.monotonic() < deadline, "no go"
    time.sleep(0.005)
"""

PROGRAM = BARRIER + """
import numpy as np
import jitorch as jt
import shared_lock_fn as m
x = jt.tensor(np.arange(12.0).reshape(3, 4))
np.testing.assert_array_equal(m.f(x, x).numpy(), np.arange(12.0).reshape(3, 4) * 54 - 1)
s = jt.jit.stats()
print("counts", s["numba_compiles"], s["disk_hits"], s["kernels"]["compiled"],
      s["kernels"]["disk"])
"""

EAGER_POOL = BARRIER + """
import numpy as np
import jitorch as jt
import jitorch.nn.functional as F
from jitorch.script.targets.cpu import pool
x = jt.tensor(np.arange(2 * 3 * 8 * 8, dtype=np.float32).reshape(2, 3, 8, 8))
y = F.max_pool2d(x, 2)
np.testing.assert_array_equal(y.numpy(), x.numpy().reshape(2, 3, 4, 2, 4, 2).max((3, 5)))
st = pool.max_pool2d_forward_2x2.stats  # (a 2x2 pool: its own kernel)
print("counts", sum(st.cache_misses.values()), sum(st.cache_hits.values()))
"""


def _two_at_once(tmp_path, code, env) -> list:
    procs = []
    for k in range(2):
        procs.append(subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path / f"ready{k}"), str(tmp_path / "go")],
            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        import time
        deadline = time.monotonic() + WAIT
        while not all((tmp_path / f"ready{k}").exists() for k in range(2)):
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
                [p.communicate() for p in procs if p.poll() is not None]
            time.sleep(0.01)
        (tmp_path / "go").touch()
        counts = []
        for p in procs:
            out, err = p.communicate(timeout=WAIT)
            assert p.returncode == 0, err[-3000:]
            line = [ln for ln in out.splitlines() if ln.startswith("counts ")][-1]
            counts.append([int(v) for v in line.split()[1:]])
        return counts
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def test_two_processes_compiling_one_program_in_the_caller_compile_it_once(tmp_path):
    (tmp_path / "shared_lock_fn.py").write_text(textwrap.dedent("""
        import jitorch as jt


        @jt.jit.script
        def f(x, y):
            return x * 53 + y - 1
        """))
    env = dict(ENV, JITORCH_COMPILE="sync", JITORCH_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(tmp_path), ENV["PYTHONPATH"]]))
    counts = _two_at_once(tmp_path, PROGRAM, env)
    # (numba compiles, disk hits, kernels compiled, kernels loaded) of each process: the
    # program was compiled by one of them and loaded from disk by the other, which waited
    compiled = sorted(c[0] > 0 for c in counts)
    assert compiled == [False, True], counts
    loader = counts[0] if counts[0][0] == 0 else counts[1]
    assert loader[1] >= 1 and loader[2] == 0, counts


def test_two_processes_running_eager_code_compile_its_library_once(tmp_path):
    env = dict(ENV, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               JITORCH_CACHE_DIR=str(tmp_path / "cache"))
    counts = _two_at_once(tmp_path, EAGER_POOL, env)
    # (Numba's cache misses, cache hits) of the max-pool kernel in each process
    assert sorted(c[0] for c in counts) == [0, 1], counts
    assert sorted(c[1] for c in counts) == [0, 1], counts


# --- a compile that fails ---------------------------------------------------------------------
def test_a_failed_compile_gives_its_lock_back(tmp_path):
    (tmp_path / "lock_failing_mod.py").write_text(textwrap.dedent("""
        import numba


        @numba.njit(cache=True)
        def f(a):
            return a.undefined_attribute + 1
        """))
    sys.path.insert(0, str(tmp_path))
    try:
        import lock_failing_mod as mod
    finally:
        sys.path.remove(str(tmp_path))
    guard_eager_dispatcher(mod.f)
    assert isinstance(mod.f._cache, GuardedCache)
    from numba.core.errors import TypingError
    with pytest.raises(TypingError):
        mod.f(np.zeros(3))
    assert compile_lock.held() == []
    assert _probe(mod.f._cache._cache_path, mod.f._cache._lock_name()).startswith("free")


# --- what the lock covers ---------------------------------------------------------------------
COVERED = """
import gc
import jitorch as jt
from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher


@jt.jit.script
def f(x):
    return jt.full((3, 4), 2.0) + x


assert f(jt.ones(3, 4)).sum().item() == 36.0
assert jt.jit.stats()["numba_compiles"] >= 1
plain = sorted(f"{d.py_func.__module__}.{d.py_func.__qualname__}" for d in gc.get_objects()
               if isinstance(d, Dispatcher) and d.overloads and
               (getattr(d.py_func, "__module__", "") or "").startswith("jitorch.") and
               type(d._cache) is FunctionCache)
print("plain", plain)
"""


def test_the_callees_of_library_functions_compile_under_the_lock_too(tmp_path):
    """A library function's direct callees (alloc.py's `_fill_flat` under `_jt_full`, conv.py's
    im2col helpers) are Numba functions of their own, compiled on a cold cache: each must have
    jitorch's guarded cache (checked loads, the compile lock), not Numba's plain one."""
    (tmp_path / "covered.py").write_text(COVERED)
    env = dict(ENV, JITORCH_COMPILE="sync", JITORCH_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    r = subprocess.run([sys.executable, str(tmp_path / "covered.py")], capture_output=True,
                       text=True, timeout=WAIT, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "plain []" in r.stdout, r.stdout
