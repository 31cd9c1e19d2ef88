"""Honest tiers and a compile worker that finishes its work (issue 17).

`jitorch.jit.stats()` counts every call by the tier that ran it (calls == compiled_runs +
interpreted_runs; interpreted_while_compiling of those interpreted), `jitorch.jit.wait_compiled`
waits for every pending compile of the process, and compiles a process leaves pending when it
exits are finished by the worker (script/runtime/compile_worker.py), so the next run of the same
program loads them compiled; two processes never compile the same program. Each test uses a
fresh cache directory and a function of its own (cold: neither in memory nor on disk); the
programs are one elementwise loop each (a Numba compile is ~0.5 s)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import jitorch as jt
import jitorch.jit

WAIT = 300  # seconds: only a guard against a hang


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("JITORCH_COMPILE", "background")
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("JITORCH_COMPILE_WORKER_FAULT", raising=False)
    monkeypatch.delenv("JITORCH_COMPILE_TIMEOUT", raising=False)
    monkeypatch.delenv("JITORCH_LOG", raising=False)
    yield


TIERS = ("calls", "compiled_runs", "interpreted_runs", "interpreted_while_compiling")


def _counts():
    s = jt.jit.stats()
    return {k: s[k] for k in TIERS}


def _delta(before):
    now = _counts()
    return {k: now[k] - before[k] for k in TIERS}


def _adds_up(d):
    assert d["calls"] == d["compiled_runs"] + d["interpreted_runs"], d
    assert 0 <= d["interpreted_while_compiling"] <= d["interpreted_runs"], d


# --- a process that exits with its compile pending --------------------------------------------
SCRIPT = """
import json, sys
import jitorch as jt

@jt.jit.script
def tiny_fn(x):
    return x * 2.0 + 1.0

x = jt.ones(8)
for _ in range(int(sys.argv[1])):
    y = tiny_fn(x)
assert y.tolist() == [3.0] * 8
s = jt.jit.stats()
print(json.dumps({k: s[k] for k in ("calls", "compiled_runs", "interpreted_runs",
                                   "interpreted_while_compiling", "memory_hits",
                                   "background_compiles", "numba_compiles", "disk_hits")}))
"""


def _run(tmp_path, calls: int):
    script = tmp_path / "tiny_program.py"  # (scripting reads the function's source file)
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    p = subprocess.run([sys.executable, str(script), str(calls)], env=env,
                       capture_output=True, text=True, timeout=WAIT)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def _wait_gone(pid: int, timeout: float) -> bool:
    """Has process `pid` (not our child: an orphan) ended, or become a zombie, in time?"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        except OSError:  # no /proc: ask the process
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        time.sleep(0.05)
    return False


def test_a_process_that_exits_while_compiling_leaves_the_next_run_compiled(tmp_path):
    cache = str(tmp_path / "cache")
    first, err = _run(tmp_path, 1)  # exits right after its first call
    # the call ran interpreted while the worker compiled it, and the counters say so
    assert first["calls"] == 1 and first["interpreted_while_compiling"] == 1, first
    assert first["compiled_runs"] == 0 and first["interpreted_runs"] == 1, first
    assert first["memory_hits"] == 0 and first["background_compiles"] == 1, first
    # ... and it said once, on stderr, that the compile goes on, how many and where to
    lines = [ln for ln in err.splitlines() if "pending at exit" in ln]
    assert len(lines) == 1, err
    assert "jitorch: 1 compile still pending at exit" in lines[0] and cache in lines[0], err
    pid = int(re.search(r"worker \(pid (\d+)\)", lines[0]).group(1))
    assert _wait_gone(pid, WAIT), "the detached compile worker never finished"

    second, err2 = _run(tmp_path, 3)
    # every call of the next run is compiled: the program was loaded from the disk cache
    assert second["calls"] == 3 and second["compiled_runs"] == 3, second
    assert second["interpreted_runs"] == 0 and second["interpreted_while_compiling"] == 0
    assert second["background_compiles"] == 0 and second["numba_compiles"] == 0, second
    assert second["disk_hits"] == 1, second
    assert "pending at exit" not in err2, err2


# --- two processes, one compile ----------------------------------------------------------------
CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import jitorch as jt
import shared_tiers_fn as m
x = jt.tensor(np.arange(12.0).reshape(3, 4))
r = m.f(x, x)
job = m.f._last.pending[0] if m.f._last.pending is not None else None
assert jt.jit.wait_compiled(timeout=300)
np.testing.assert_array_equal(m.f(x, x).numpy(), np.arange(12.0).reshape(3, 4) * 54 - 1)
print("how", job.result.get("how") if job is not None else "none")
"""


def test_two_processes_never_compile_the_same_program_twice(tmp_path):
    (tmp_path / "shared_tiers_fn.py").write_text(textwrap.dedent("""
        import jitorch as jt


        @jt.jit.script
        def f(x, y):
            return x * 53 + y - 1
        """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    hows = []
    for p in procs:
        out, err = p.communicate(timeout=WAIT)
        assert p.returncode == 0, err
        hows.append(out.split()[-1])
    # one worker compiled it; the other waited on its lock and loaded the file it saved (or
    # its process started late enough to find the program on disk: no job at all)
    assert hows.count("compiled") == 1, hows
    assert set(hows) <= {"compiled", "disk", "none"}, hows


# --- the counters add up, wait_compiled -------------------------------------------------------
@pytest.mark.parametrize("mode", ["sync", "background"])
def test_calls_are_counted_by_the_tier_that_ran_them(monkeypatch, mode):
    monkeypatch.setenv("JITORCH_COMPILE", mode)
    if mode == "sync":  # (a program of its own per mode: none is in memory yet)
        k = 4.0

        @jt.jit.script
        def counted_fn(x, k: float):
            return x * k - 1.0
    else:
        k = 6.0

        @jt.jit.script
        def counted_fn(x, k: float):
            return x * k - 2.0 + 1.0

    x = jt.arange(6.0)
    before = _counts()
    for _ in range(3):
        np.testing.assert_array_equal(counted_fn(x, k).numpy(), (x * k - 1.0).numpy())
    d = _delta(before)
    _adds_up(d)
    assert d["calls"] == 3
    if mode == "sync":  # compiled in the first call: every call ran the program
        assert d["compiled_runs"] == 3 and d["interpreted_runs"] == 0, d
    else:  # the worker cannot be done already: at least the first call was interpreted
        assert d["interpreted_while_compiling"] >= 1, d
        assert d["interpreted_runs"] == d["interpreted_while_compiling"], d
        assert jt.jit.stats().functions["counted_fn"]["tier"] in (
            "interpreted-while-compiling", "compiled")
    assert jt.jit.wait_compiled(timeout=WAIT) is True
    assert jt.jit.stats().functions["counted_fn"]["tier"] == "compiled"
    before = _counts()
    counted_fn(x, k)
    counted_fn(jt.arange(9.0), k)  # a new size: the same program
    d = _delta(before)
    assert d == {"calls": 2, "compiled_runs": 2, "interpreted_runs": 0,
                 "interpreted_while_compiling": 0}, d


def test_wait_compiled_waits_for_every_function_and_the_optimizer_step():
    @jt.jit.script
    def wait_a(x):
        return x * 5.0 + 2.0

    @jt.jit.script
    def wait_b(x, y):
        return x * y - 3.0

    p = jt.nn.Parameter(jt.ones(4))
    opt = jt.optim.SGD([p], lr=0.1, momentum=0.9)
    x = jt.arange(4.0)
    before = _counts()
    wait_a(x)
    wait_b(x, x)
    p.grad = jt.ones(4)
    opt.step()  # the compiled step's program compiles in the background too
    d = _delta(before)
    _adds_up(d)
    assert d["interpreted_while_compiling"] >= 2, d
    assert jt.jit.wait_compiled(timeout=WAIT) is True
    fns = jt.jit.stats().functions
    compiling = {n: r["tier"] for n, r in fns.items()
                 if r["tier"] == "interpreted-while-compiling"}
    assert compiling == {}, compiling  # nothing of this process still compiles
    assert fns["wait_a"]["tier"] == fns["wait_b"]["tier"] == "compiled"
    before = _counts()
    wait_a(x)
    wait_b(x, x)
    opt.step()
    d = _delta(before)
    _adds_up(d)
    assert d["interpreted_runs"] == 0 and d["compiled_runs"] == d["calls"] >= 3, d
    np.testing.assert_allclose(p.detach().numpy(), 1 - 0.1 * (1 + 1.9), rtol=1e-6)


def test_wait_compiled_with_nothing_pending_and_a_zero_timeout():
    assert jt.jit.wait_compiled(timeout=WAIT) is True
    assert jt.jit.wait_compiled(timeout=0) is True


def test_a_call_the_worker_still_compiles_an_overload_for_counts_as_interpreted():
    # a compiled entry met with another array layout: that overload compiles in the worker
    # while the call (the program's NotReady) runs in the interpreter: counted there
    @jt.jit.script
    def layout_fn(x):
        return x * 59 - 3

    x = jt.tensor(np.arange(12).reshape(3, 4))
    layout_fn(x)
    assert jt.jit.wait_compiled(timeout=WAIT)
    strided = x.t().contiguous().t()
    before = _counts()
    np.testing.assert_array_equal(layout_fn(strided).numpy(), (x * 59 - 3).numpy())
    d = _delta(before)
    assert d == {"calls": 1, "compiled_runs": 0, "interpreted_runs": 1,
                 "interpreted_while_compiling": 1}, d
    assert jt.jit.wait_compiled(timeout=WAIT)
    before = _counts()
    np.testing.assert_array_equal(layout_fn(strided).numpy(), (x * 59 - 3).numpy())
    assert _delta(before) == {"calls": 1, "compiled_runs": 1, "interpreted_runs": 0,
                              "interpreted_while_compiling": 0}


def test_calls_a_program_hands_to_the_interpreter_are_counted_once():
    # arguments that share memory with a written one: the interpreter runs the call in place
    # (eager's result), one call, interpreted
    @jt.jit.script
    def alias_fn(x, y):
        x.add_(y)
        return x * 2.0

    a, b = jt.ones(4), jt.ones(4)
    alias_fn(a, b)
    assert jt.jit.wait_compiled(timeout=WAIT)
    alias_fn(a, b)  # compiled now
    before = _counts()
    np.testing.assert_array_equal(alias_fn(b, b).numpy(), [4.0] * 4)
    assert _delta(before) == {"calls": 1, "compiled_runs": 0, "interpreted_runs": 1,
                              "interpreted_while_compiling": 0}
    # a compiled program that finds the user's error (shapes): the interpreter only raises it
    # with the user's line; one call, the program's
    before = _counts()
    with pytest.raises(RuntimeError):
        alias_fn(jt.ones(3), jt.ones(4))
    assert _delta(before) == {"calls": 1, "compiled_runs": 1, "interpreted_runs": 0,
                              "interpreted_while_compiling": 0}


def test_a_first_call_with_aliased_written_arguments_counts_as_while_compiling():
    # interpreted in place because its program is not compiled yet (a compiled program checks
    # the overlap itself): the interpreter runs it while compiling
    @jt.jit.script
    def alias_first_fn(x, y):
        x.add_(y)
        return x * 3.0

    a = jt.ones(4)
    before = _counts()
    np.testing.assert_array_equal(alias_first_fn(a, a).numpy(), [6.0] * 4)
    d = _delta(before)
    assert d == {"calls": 1, "compiled_runs": 0, "interpreted_runs": 1,
                 "interpreted_while_compiling": 1}, d
    assert jt.jit.wait_compiled(timeout=WAIT)
