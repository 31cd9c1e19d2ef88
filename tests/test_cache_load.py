"""Loading a cached overload (kernels/numba_cache.py's lean load): the machine code runs and
gives the right result, its bitcode for linking is parsed only when a caller links it (and
linking still works), the symbols it defines are those Numba's bitcode walk finds, and the
target context is refreshed, and LLVM asked for the host's magic tuple, once per process,
not for every load. One small program,
compiled once for the module's cache directory. And what a warm start no longer pays: importing
Numba's library modules for the environments of a load (kernels/lean_env.py), compiling Numba's
runtime library (kernels/nrt_cache.py), importing numpy.ma to type plain arrays
(kernels/array_types.py)."""

import sys

import numba
import pytest
from llvmlite import binding as llb
from numba.core import types

from jitorch.script.kernels import cache, numba_cache

SRC = ("import numba\n\n@numba.njit(cache=False)\ndef mul_add(x, y):\n"
       "    return x * 3 + y\n")


@pytest.fixture(scope="module")
def cache_dir(module_cache_dir):
    return module_cache_dir


def _fresh_dispatcher(cache_dir):
    """A new dispatcher of SRC whose overload is on disk (compiled once per module)."""
    mod, _ = cache.load_module(SRC)
    if not mod.mul_add.overloads:
        assert mod.mul_add(4, 2) == 14  # compiled and saved
    cache.forget(mod.__name__)
    disp = cache.load_module(SRC)[0].mul_add
    assert not disp.overloads
    return disp


SIG = (types.int64, types.int64)


def _load(disp):
    disp.compile(SIG)
    assert sum(disp.stats.cache_hits.values()) == 1  # loaded, not compiled
    return disp.overloads[SIG]


def test_a_loaded_overload_runs_without_parsing_its_bitcode(cache_dir):
    disp = _fresh_dispatcher(cache_dir)
    cres = _load(disp)
    assert disp(5, 1) == 16
    assert cres.library._shared_module is None  # not parsed: nothing linked it


def test_a_loaded_overload_can_still_be_linked_into_a_caller(cache_dir):
    disp = _fresh_dispatcher(cache_dir)
    cres = _load(disp)
    assert cres.library._shared_module is None

    @numba.njit
    def caller(a, b):
        return disp(a, b) + 1  # a plain call: Numba links the callee's library

    assert caller(2, 7) == 14
    assert sum(disp.stats.cache_misses.values()) == 0  # the loaded overload is the one linked
    assert cres.library._shared_module is not None


def test_the_object_files_symbols_are_numbas(cache_dir, monkeypatch):
    seen = []
    real = numba_cache._load_object
    monkeypatch.setattr(numba_cache, "_load_object",
                        lambda cg, state, symbols: (seen.append((state, symbols)),
                                                    real(cg, state, symbols))[1])
    cres = _load(_fresh_dispatcher(cache_dir))
    [((_, kind, (object_code, bitcode)), symbols)] = seen
    mod = llb.parse_bitcode(bitcode)
    walked = {g.name for gs in (mod.functions, mod.global_variables) for g in gs
              if not g.is_declaration}  # what Numba's load registers
    assert symbols == walked == numba_cache._elf_defined_symbols(object_code)
    assert cres.fndesc.llvm_func_name in walked
    assert numba_cache._elf_defined_symbols(b"not an object file") is None


def test_loads_refresh_the_context_and_ask_llvm_for_the_host_once(cache_dir, monkeypatch):
    disp = _fresh_dispatcher(cache_dir)
    _load(disp)  # this process has refreshed, and asked for the host's magic tuple, by now
    loader = disp._cache
    calls = []
    for cls, name in ((type(disp.targetctx), "refresh"),
                      (type(disp.targetctx.codegen()), "magic_tuple")):
        real = getattr(cls, name)
        monkeypatch.setattr(cls, name, lambda self, real=real, name=name:
                            (calls.append(name), real(self))[1])
    assert loader.load_overload(SIG, disp.targetctx) is not None  # a second load
    assert calls == []


def test_a_load_does_not_import_numbas_library_modules_for_their_environments():
    # an overload's environments unpickle through Numba's _rebuild_env, which imports each
    # one's module for its globals (numba.np.arrayobj: ~0.03 s of a warm start); in a load,
    # one of a numba module holding no constants names the module without importing it
    import pickle
    from numba.core.environment import Environment
    from jitorch.script.kernels import lean_env

    def env(modname, consts=()):
        e = Environment({"__name__": modname})
        e.env_name = f"_ZN08NumbaEnv_test_{modname}_{len(consts)}"
        e.consts[:] = list(consts)
        data = pickle.dumps(e)
        assert b"numba.core.environment" in data and b"jitorch" not in data  # Numba's format
        del e  # (Numba's memo holds environments weakly)
        return data
    absent = "numba._test_absent_module"  # a module that cannot be imported
    with lean_env.loading_overloads():
        got = pickle.loads(env(absent))
        assert got.globals == {"__name__": absent} and absent not in sys.modules
        with pytest.raises(ImportError):  # constants: Numba's own rebuild
            pickle.loads(env(absent, [1.5]))
    with pytest.raises(ImportError):  # not in a load: Numba's own rebuild
        pickle.loads(env(absent + "2"))


def test_numbas_runtime_library_loads_from_its_checked_file(tmp_path, monkeypatch):
    # Numba compiles its runtime's LLVM module in every process (~0.02 s of a warm start):
    # kernels/nrt_cache.py keeps its object code; a damaged file is compiled again
    import ctypes
    import os
    from numba.core.codegen import JITCPUCodegen
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys
    from jitorch.script.kernels import nrt_cache
    real = cpu_target.target_context
    rtsys.initialize(real)  # (registers the C functions the runtime's code calls)
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path))

    class Ctx:  # the CPU context with a codegen of its own (this process has its runtime)
        def __init__(self):
            self._codegen = JITCPUCodegen("test-nrt")

        def codegen(self):
            return self._codegen

        def __getattr__(self, name):
            return getattr(real, name)

    def build():
        with global_compiler_lock:  # (as rtsys.initialize calls it)
            lib = nrt_cache.compile_nrt_functions(Ctx())
        refct = (ctypes.c_size_t * 4)()
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lib.get_pointer_to_function("NRT_incref"))(
            ctypes.addressof(refct))
        assert refct[0] == 1  # the machine code runs
        return isinstance(lib, numba_cache._ObjectCodeLibrary)  # loaded, not compiled
    assert not build()
    files = [str(tmp_path / n) for n in os.listdir(tmp_path)]
    assert len(files) == 1 and os.path.basename(files[0]).startswith("nrt-")
    assert build()
    with open(files[0], "r+b") as f:
        f.seek(os.path.getsize(files[0]) // 2)
        f.write(b"junk")
    assert not build()  # damaged: compiled, and the file rewritten
    assert build()


def test_plain_arrays_are_typed_as_numbas_typeof_does():
    # kernels/array_types.py: program entries and eager kernels type plain arrays without
    # Numba's typeof (whose first array imports numpy.ma, ~0.014 s of a warm start)
    import numpy as np
    from numba import typeof
    from numba.core.typing.typeof import Purpose
    from jitorch.script.kernels import array_types
    base = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    ro = base.copy()
    ro.flags.writeable = False
    for a in (base, base.T, base[:, ::2], np.zeros((), np.int64), ro, np.ones(3, np.bool_),
              np.zeros(2, np.complex128), np.zeros((0, 5), np.uint8), base.astype(np.float16),
              np.zeros(2, object)):
        assert array_types.array_type(a) == typeof(a, Purpose.argument), a.dtype
    # not a plain array: Numba's typeof answers
    for v in (np.ma.masked_array([1.0]), 3.5, (base,)):
        assert array_types.array_type(v) is None

    @numba.njit(cache=False)
    def first(x):
        return x[0]
    array_types.eager_typeof(first)
    assert first.typeof_pyval(base) == typeof(base, Purpose.argument)
    assert first(np.arange(3.0)) == 0.0 and first((7, 8)) == 7
