"""The disk cache (script/kernels/cache.py): content-hashed modules that a second process loads.

The cross-process test runs two fresh interpreters against one JITORCH_CACHE_DIR: the first
compiles (Numba writes its cache next to the module), the second loads from disk.
"""
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from jitorch.script.kernels import cache

SRC = """
import numpy as np
import numba

@numba.njit(nogil=True, error_model="numpy", fastmath={"reassoc", "contract"}, cache=False)
def entry(x):
    return (x * np.float32(2.0),)
"""


def test_prepare_source_turns_on_numba_cache():
    s = cache.prepare_source(SRC)
    assert "cache=True" in s and "cache=False" not in s
    assert 'fastmath={"reassoc", "contract"}' in s  # other options untouched
    s2 = cache.prepare_source("@numba.njit(nogil=True)\ndef f(x):\n    return x\n")
    assert "@numba.njit(nogil=True, cache=True)" in s2
    s3 = cache.prepare_source("@njit()\ndef f(x):\n    return x\n", {"boundscheck": False})
    assert "@njit(cache=True, boundscheck=False)" in s3
    s4 = cache.prepare_source(SRC, {"fastmath": False})
    assert "fastmath=False" in s4 and "reassoc" not in s4


def test_module_name_is_content_hashed():
    a, b = cache.module_name(SRC), cache.module_name(SRC + "\n# other\n")
    assert a != b and a.startswith(cache.MODULE_PREFIX) and a == cache.module_name(SRC)


def test_module_name_tracks_imported_jitorch_modules(monkeypatch):
    src = SRC + "from jitorch.script.kernels import fastmath\n"
    a = cache.module_name(src)
    monkeypatch.setitem(cache._file_hashes, "jitorch.script.kernels", "changed")
    assert cache.module_name(src) != a
    assert cache.module_name(SRC) == cache.module_name(SRC)


def test_load_registers_module_and_never_rewrites(tmp_path, monkeypatch):
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path))
    src = SRC + "\n# test_load_registers_module\n"
    mod, new = cache.load_module(src)
    assert new and sys.modules[mod.__name__] is mod
    path = mod.__file__
    assert os.path.dirname(path) == str(tmp_path)
    st = os.stat(path)
    mod2, new2 = cache.load_module(src)
    assert mod2 is mod and not new2
    # a fresh import in this process (module forgotten) must reuse the file untouched
    del sys.modules[mod.__name__]
    time.sleep(0.01)
    mod3, new3 = cache.load_module(src)
    assert new3 and os.stat(path).st_mtime_ns == st.st_mtime_ns
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


def test_unusable_cache_dir_compiles_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(blocker / "sub"))
    assert cache.cache_dir() is None  # no private temp dir: nothing is written anywhere
    mod, new = cache.load_module(SRC + "\n# test_unusable_cache_dir\n")
    assert new and not hasattr(mod, "__file__")
    assert mod.entry(np.arange(3, dtype=np.float32))[0].tolist() == [0.0, 2.0, 4.0]
    assert os.listdir(tmp_path) == ["file"]


CHILD = textwrap.dedent("""
    import json, sys
    import jitorch
    from jitorch.script import ir
    from jitorch.script.runtime import functions as runtime, programs
    from jitorch.script.frontend.trace import trace_graph

    class Program:
        def __init__(self, source, entry, output_types):
            self.source, self.entry, self.output_types = source, entry, output_types

    SRC = sys.argv[1]

    def lower(graph, arg_types, static=None):
        out = ir.TensorType(arg_types[0].dtype, (None,) * arg_types[0].ndim)
        return graph, Program(SRC, "entry", [out]), None

    programs._lower = lower
    g, _ = trace_graph(lambda x: x * 2, (jitorch.ones(2),))
    f = runtime.ScriptFunction(g, name="twice")
    r = f(jitorch.arange(4, dtype=jitorch.float32))
    s = jitorch.jit.stats()
    print(json.dumps({"r": r.tolist(), "numba_compiles": s.numba_compiles,
                      "disk_hits": s.disk_hits, "compiles": s.compiles}))
""")


def _child(src, cache_dir):
    env = dict(os.environ, JITORCH_CACHE_DIR=str(cache_dir))
    env.pop("JITORCH_LOG", None)
    p = subprocess.run([sys.executable, "-c", CHILD, src], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_second_process_loads_from_disk(tmp_path):
    src = SRC + f"\n# cross-process test {time.time_ns()}\n"  # a program no process has seen
    first = _child(src, tmp_path)
    assert first["r"] == [0.0, 2.0, 4.0, 6.0]
    assert first["numba_compiles"] == 1 and first["disk_hits"] == 0
    files = sorted(os.listdir(tmp_path))
    assert any(f.endswith(".py") for f in files)
    second = _child(src, tmp_path)
    assert second["r"] == [0.0, 2.0, 4.0, 6.0]
    assert second["numba_compiles"] == 0 and second["disk_hits"] == 1
    assert sorted(os.listdir(tmp_path)) == files  # nothing rewritten or added
