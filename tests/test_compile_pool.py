"""Compile workers side by side (script/runtime/compile_pool.py): jobs submitted together go to
separate workers, up to JITORCH_COMPILE_WORKERS; the same overload asked for twice is one job;
at exit every worker gets its unanswered jobs and the caller says so once."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from jitorch.script.runtime import compile_pool

WAIT = 300


@pytest.fixture(autouse=True)
def background(monkeypatch, tmp_path):
    monkeypatch.setenv("JITORCH_COMPILE", "background")
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))
    # every job hangs in its worker: the jobs stay where the pool put them while we look
    # (and a hung worker is stopped after 20 s, so none outlives the tests for long)
    monkeypatch.setenv("JITORCH_COMPILE_WORKER_FAULT", "hang")
    monkeypatch.setenv("JITORCH_COMPILE_TIMEOUT", "20")
    compile_pool.pool().shutdown()
    yield
    compile_pool.pool().shutdown()


PROGRAMS = """
import numpy as np
import jitorch as jt


@jt.jit.script
def one(x):
    return x * 37 - 1


@jt.jit.script
def two(x):
    return x * 41 + 2


def run():
    x = jt.tensor(np.arange(6.0))
    np.testing.assert_array_equal(one(x).numpy(), np.arange(6.0) * 37 - 1)  # (interpreted)
    np.testing.assert_array_equal(two(x).numpy(), np.arange(6.0) * 41 + 2)
"""


def _programs(tmp_path):
    """A module of two scripted functions (a file: scripting reads their source)."""
    path = tmp_path / "two_jobs.py"
    path.write_text(PROGRAMS)
    spec = importlib.util.spec_from_file_location(f"two_jobs_{tmp_path.name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _two_programs(tmp_path):
    _programs(tmp_path).run()  # two jobs submitted, both answered by the interpreter


def _busy_lanes():
    return [lane.pending() for lane in compile_pool.pool().lanes if lane.pending()]


def test_two_jobs_submitted_together_compile_in_two_workers(monkeypatch, tmp_path):
    monkeypatch.setenv("JITORCH_COMPILE_WORKERS", "2")
    _two_programs(tmp_path)
    assert _busy_lanes() == [1, 1]


def test_one_worker_when_asked_for_one(monkeypatch, tmp_path):
    monkeypatch.setenv("JITORCH_COMPILE_WORKERS", "1")
    _two_programs(tmp_path)
    assert _busy_lanes() == [2]  # one worker, the second job queued behind the first


def test_the_default_is_two_workers_on_two_cores_or_more(monkeypatch):
    monkeypatch.delenv("JITORCH_COMPILE_WORKERS", raising=False)
    assert compile_pool.workers() == (2 if (os.cpu_count() or 1) >= 2 else 1)
    monkeypatch.setenv("JITORCH_COMPILE_WORKERS", "bad")
    assert compile_pool.workers() == (2 if (os.cpu_count() or 1) >= 2 else 1)


def test_at_exit_each_worker_gets_its_jobs_and_the_caller_says_so_once(tmp_path):
    (tmp_path / "two_jobs.py").write_text(PROGRAMS)
    env = dict(os.environ, JITORCH_COMPILE_WORKERS="2", JITORCH_COMPILE_TIMEOUT="5",
               PYTHONPATH=os.pathsep.join([str(tmp_path)] + [p for p in sys.path if p]))
    r = subprocess.run([sys.executable, "-c", "import two_jobs; two_jobs.run()"], env=env,
                       capture_output=True, text=True, timeout=WAIT)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [ln for ln in r.stderr.splitlines() if "pending at exit" in ln]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("jitorch: 2 compiles still pending at exit: the compile workers "
                               "(pids "), lines[0]
