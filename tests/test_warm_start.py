"""A warm start (script/kernels/numba_cache.py): a process whose programs and eager kernels all
come from the disk caches loads them without running Numba's extension entry points (rocket-fft,
whose import also imports scipy.fft) or importing Numba's implementation library (typing and
lowering: a load does neither), gives the results of the process that compiled them, and a
user's own Numba function afterwards still gets the entry points. Two processes of one small
program (the first compiles it, the second loads it); and the fallback of a load whose machine
code calls a symbol nobody has registered: Numba's full refresh first."""

import json
import os
import subprocess
import sys
import weakref

import numba

from jitorch.script.kernels import numba_cache

_CHILD = r"""
import json
import sys

import numpy as np

import jitorch


def f(x, y):
    return jitorch.tanh(x * 2.0 + y).sum()


jitorch.manual_seed(0)
w = jitorch.rand(8, 4)  # an eager draw: jitorch's eager Numba kernels (_mt19937_kernels.py)
x = jitorch.tensor(np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4), requires_grad=True)
out = jitorch.jit.script(f)(x, w)
out.backward()
st = jitorch.jit.stats()
import numba
from numba.core import entrypoints
loaded = sorted(m for m in ("rocket_fft", "scipy.fft", "numba.np.arraymath") if m in sys.modules)
entry_points_ran = entrypoints._already_initialized


@numba.njit
def user_fn(v):
    return v + 1


user_fn(1)  # a user's function: Numba runs the extension entry points before typing it
print(json.dumps({"out": float(out), "grad": x.grad.numpy().tolist(), "w": w.numpy().tolist(),
                  "plan_hits": st["plan_hits"], "numba_compiles": st["numba_compiles"],
                  "loaded": loaded, "entry_points_ran": entry_points_ran,
                  "entry_points_ran_for_user_fn": entrypoints._already_initialized}))
"""


def _child(tmp_path):
    script = tmp_path / "child_warm.py"
    script.write_text(_CHILD)
    env = dict(os.environ, JITORCH_CACHE_DIR=str(tmp_path / "cache"), JITORCH_COMPILE="sync")
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_warm_start_loads_without_entry_points_or_numbas_implementation_library(tmp_path):
    first = _child(tmp_path)
    assert first["numba_compiles"] >= 1 and first["plan_hits"] == 0
    warm = _child(tmp_path)
    assert warm["plan_hits"] == 1 and warm["numba_compiles"] == 0
    assert warm["loaded"] == [] and not warm["entry_points_ran"]
    assert warm["entry_points_ran_for_user_fn"]
    for k in ("out", "grad", "w"):
        assert warm[k] == first[k]


def test_a_load_refreshes_numbas_context_only_for_a_symbol_nobody_registered(monkeypatch):
    from numba.core.registry import cpu_target
    ctx = cpu_target.target_context
    refreshed = []
    monkeypatch.setattr(numba_cache, "_refreshed", weakref.WeakSet())
    monkeypatch.setattr(numba_cache, "_refresh_for_load", refreshed.append)
    # Numba's runtime (registered by the load itself), the C library: no refresh
    numba_cache._runtime_for_load(ctx, {"NRT_MemInfo_alloc_safe_aligned", "tanhf"})
    assert refreshed == []
    numba_cache._runtime_for_load(ctx, {"NRT_MemInfo_alloc", "jitorch_test_no_such_symbol"})
    assert refreshed == [ctx]


def test_entry_points_are_deferred_only_inside_a_load_on_its_thread(monkeypatch):
    ran = []
    monkeypatch.setattr(numba_cache, "_NUMBA_INIT_ALL", lambda: ran.append(1))
    with numba_cache._entry_points_deferred():
        numba.core.entrypoints.init_all()
        assert ran == []
    numba.core.entrypoints.init_all()  # (Numba looks it up on the module at each call)
    assert ran == [1]


_BLAS_CHILD = r"""
import importlib.util
import sys

spec = importlib.util.spec_from_file_location("cython_blas_preload", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
finders = len(sys.meta_path)
m.preload()
assert "scipy.linalg" not in sys.modules  # (its ~0.07 CPU-s package __init__ not run)
blas = sys.modules["scipy.linalg.cython_blas"]
assert "sgemm" in blas.__pyx_capi__  # what Numba's BLAS helper reads
import scipy.linalg  # later, as a program may: the package runs, with the same module
assert scipy.linalg.cython_blas is blas and len(sys.meta_path) == finders
assert "exec_module" not in vars(scipy.linalg.__loader__)
import numpy as np
assert np.allclose(scipy.linalg.solve(2 * np.eye(2), np.ones(2)), 0.5)
print("ok")
"""


def test_numbas_blas_helper_finds_cython_blas_without_importing_scipy_linalg():
    from jitorch.script.targets.cpu import cython_blas
    p = subprocess.run([sys.executable, "-c", _BLAS_CHILD, cython_blas.__file__],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]


def test_loading_a_program_module_tests_the_cache_directory_once(tmp_path, monkeypatch):
    """Numba's write test of the cache directory (a temp file created and deleted) runs once
    per directory and process while program modules load, not once per njit function; a
    directory that went away since is made again, and one that failed is tested again."""
    import sys

    from jitorch.script.kernels import cache, numba_locator
    tests = []

    def counted(locator):
        tests.append(locator.get_cache_path())
        return real(locator)
    real = numba_locator._NUMBA_ENSURE_CACHE_PATH
    monkeypatch.setattr(numba_locator, "_NUMBA_ENSURE_CACHE_PATH", counted)
    monkeypatch.setattr(numba_locator, "_writable", set())
    src = ("from numba import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x + 1\n\n\n"
           "@njit(cache=True)\ndef g(x):\n    return x * 2\n")
    mods = []
    for i in range(2):
        name = f"_jitorch_test_locator_{i}"
        path = tmp_path / f"{name}.py"
        path.write_text(src)
        mods.append(cache._exec_module(name, src, str(path)))
    assert len(tests) == 1  # (four functions, two modules, one directory)
    import shutil
    shutil.rmtree(tests[0])  # gone since: made again, without another test
    mods.append(cache._exec_module("_jitorch_test_locator_2", src, str(path)))
    assert len(tests) == 1 and os.path.isdir(tests[0])
    for m in mods:
        sys.modules.pop(m.__name__, None)
