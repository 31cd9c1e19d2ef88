"""The disk cache (script/kernels/cache.py): content-hashed modules that a second process loads.

The cross-process test runs two fresh interpreters against one JITORCH_CACHE_DIR: the first
compiles (Numba writes its cache next to the module), the second loads from disk.
"""
import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np

from jitorch.script.kernels import cache, cache_guards, numba_cache

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
    cache.forget(mod.__name__)
    assert mod.__name__ not in sys.modules and cache.loaded(mod.__name__) is None
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


def _load_at_once(src, look, n=8):
    """`cache.load_module(src)` on `n` threads -> per thread (module, is_new, `look(module)`
    taken as soon as load_module returned). The threads arrive one after another, 40 ms
    apart, so that most come while the first one's load runs."""
    barrier = threading.Barrier(n)
    out, errors = [None] * n, []

    def work(i):
        try:
            barrier.wait(timeout=60)
            time.sleep(0.04 * i)
            m, new = cache.load_module(src)
            out[i] = (m, new, look(m))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=120)
    assert not errors, errors
    return out


def test_threads_never_get_a_half_executed_module(tmp_path, monkeypatch):
    # the module's code takes a while (as Numba's decorators do on a loaded machine): a thread
    # arriving meanwhile must wait for it, not get the module from sys.modules without `entry`
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path))
    src = "import time\ntime.sleep(0.3)\n" + SRC + f"\n# half executed {time.time_ns()}\n"
    out = _load_at_once(src, lambda m: hasattr(m, "entry"))
    assert len({id(m) for m, _, _ in out}) == 1, "one module per process"
    assert sorted(new for _, new, _ in out) == [False] * 7 + [True]
    assert [had for _, _, had in out] == [True] * 8, "a thread got the module before its " \
                                                     "code had run"
    np.testing.assert_array_equal(out[0][0].entry(np.ones(3, np.float32))[0], [2.0] * 3)


def test_threads_never_get_a_module_before_its_caches_are_guarded(tmp_path, monkeypatch):
    # a module whose code ran but whose dispatchers do not have their checked caches yet would
    # read the sealed cache files with Numba's plain pickle (an UnpicklingError in the call)
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path))
    real_guard = cache_guards.guard

    def slow_guard(mod):
        time.sleep(0.3)
        real_guard(mod)
    monkeypatch.setattr(cache_guards, "guard", slow_guard)
    src = SRC + f"\n# guarded {time.time_ns()}\n"
    # (EntryCache: the GuardedCache of a function that may call symbols, kernel_call.py)
    out = _load_at_once(src, lambda m: isinstance(m.entry._cache, numba_cache.GuardedCache))
    assert [guarded for _, _, guarded in out] == [True] * 8


def _no_compile(monkeypatch, calls):
    """cache.py's `compile` counted (the builtin, looked up in the module's globals)."""
    def counted(src, filename, mode):
        calls.append(filename)
        return compile(src, filename, mode)
    monkeypatch.setattr(cache, "compile", counted, raising=False)


def test_a_loaded_module_reuses_its_checked_bytecode(tmp_path, monkeypatch):
    # a warm process executes the program modules' code without compiling their sources again;
    # a damaged code file or another module's (valid) one is never executed: compiled afresh
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path))
    src = SRC + f"\n# bytecode {time.time_ns()}\n"
    other, _ = cache.load_module(SRC + f"\n# other bytecode {time.time_ns()}\n")
    mod, _ = cache.load_module(src)
    name, calls = mod.__name__, []
    _no_compile(monkeypatch, calls)
    code = mod.__file__[:-3] + ".code"

    def reload():
        cache.forget(name)
        m, new = cache.load_module(src)
        assert new and m.entry(np.arange(3, dtype=np.float32))[0].tolist() == [0.0, 2.0, 4.0]
    reload()
    assert calls == []
    with open(code, "rb") as f:
        good = f.read()
    for bad in (good[:-7] + b"junk!!!", good[:len(good) // 2],
                open(other.__file__[:-3] + ".code", "rb").read()):
        with open(code, "wb") as f:
            f.write(bad)
        reload()
        assert calls == [mod.__file__]
        calls.clear()
        reload()  # the file was rewritten: read again
        assert calls == []


def test_a_library_function_called_through_a_symbol_gets_the_symbol_checks(tmp_path):
    """`guard` gives a jitorch library function that a program module imports a GuardedCache;
    once code calls it through a symbol (kernel_call.library -> guard_dispatcher) it must be an
    EntryCache, whose loads first register the symbols its own machine code calls."""
    import types

    import numba
    from jitorch.script.kernels.cache_guards import guard, guard_dispatcher
    from jitorch.script.kernels.numba_cache import EntryCache, GuardedCache
    lib = types.ModuleType("jitorch._test_symbol_lib")
    src = tmp_path / "jt_symbol_lib.py"
    src.write_text("def f(x):\n    return x + 1\n")
    code = compile(src.read_text(), str(src), "exec")
    lib.__file__ = str(src)
    exec(code, lib.__dict__)
    lib.f.__module__ = lib.__name__
    lib.f = numba.njit(cache=True)(lib.f)
    prog = types.ModuleType("_jitorch_prog_test_symbols")
    prog.f = lib.f
    guard(prog)
    assert type(lib.f._cache) is GuardedCache
    guard_dispatcher(lib.f)
    assert type(lib.f._cache) is EntryCache
    assert lib.f(1) == 2
