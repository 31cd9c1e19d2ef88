"""Numba's runtime library (NRT) from a sealed object file, not compiled in every process.

The first compile or load of a process initialises Numba's runtime: it registers the runtime's C
functions and compiles the runtime's own small LLVM module (reference counting,
`NRT_MemInfo_data_fast`, `nrt_unresolved_abort`) through LLVM's optimiser and code generator,
~0.02 s of every warm start.
`install()` wraps `nrtdynmod.compile_nrt_functions` (what `rtsys.initialize` calls): the library
is built as Numba builds it, with object caching on, and its object code and bitcode are written
to `nrt-<key>.o` in the cache directory (`<key>`: a hash of the numba and llvmlite versions and
of the host's magic tuple); a later process loads the machine code the way a cached overload is
loaded (numba_cache._load_object: its bitcode is parsed only when a compile links the runtime
into new code).

The file is checked as a program's Numba cache files are: a SHA-256 of its payload before
anything is read from it (numba_cache._seal), the key it was written for, an ELF object that
defines the runtime's functions and calls only symbols this process has registered. A file that
fails any check is not loaded (the compile log says so), the runtime is compiled, and the file
rewritten; a directory that cannot hold it only costs the compile (and says nothing: the
programs' own saves log it).
"""
from __future__ import annotations

import hashlib
import os
import struct

_FORMAT = b"nrt-1"
# functions every Numba runtime library defines (a foreign object file lacks them)
_DEFINES = ("NRT_incref", "NRT_decref", "NRT_MemInfo_data_fast", "nrt_unresolved_abort")
_HEAD = struct.Struct("<III")


def install() -> None:
    from numba.core.runtime import nrtdynmod
    if getattr(nrtdynmod.compile_nrt_functions, "__wrapped__", None) is None:
        compile_nrt_functions.__wrapped__ = nrtdynmod.compile_nrt_functions
        nrtdynmod.compile_nrt_functions = compile_nrt_functions


def _path_and_key(codegen):
    import llvmlite
    import numba
    from numba.core import config
    from . import cache, numba_cache
    d = cache.cache_dir()
    if d is None or config.DEBUG_NRT:  # (NRT debugging changes the runtime's code)
        return None, None
    key = f"numba={numba.__version__};llvmlite={llvmlite.__version__};" \
          f"host={numba_cache.magic_tuple(codegen)}".encode()
    return os.path.join(d, f"nrt-{hashlib.sha256(key).hexdigest()[:24]}.o"), key


def compile_nrt_functions(ctx):
    """`nrtdynmod.compile_nrt_functions(ctx)`: the runtime's library, loaded from its checked
    file when there is one, else compiled as Numba does (and saved)."""
    from numba.core.runtime import nrtdynmod
    codegen = ctx.codegen()
    try:
        path, key = _path_and_key(codegen)
    except Exception:  # noqa: BLE001 - (another Numba's codegen): compiled as Numba does
        path = key = None
    if path is not None:
        lib = _load(codegen, path, key)
        if lib is not None:
            return lib
    ir_mod, library = nrtdynmod.create_nrt_module(ctx)
    library.enable_object_caching()
    library.add_ir_module(ir_mod)
    library.finalize()
    if path is not None:
        _save(library, path, key)
    return library


def _load(codegen, path, key):
    from llvmlite import binding as llb
    from . import cache, numba_cache
    data = cache.read_regular_file(path, 1 << 26)
    if data is None:
        return None
    try:
        payload = numba_cache._unseal(data, path)
        n_key, n_obj, n_bc = _HEAD.unpack_from(payload, 0)
        at = _HEAD.size
        fmt_key, obj, bc = (payload[at:at + n_key], payload[at + n_key:at + n_key + n_obj],
                            payload[at + n_key + n_obj:])
        if fmt_key != _FORMAT + b";" + key or len(bc) != n_bc:
            raise numba_cache.DamagedCacheFile(f"{os.path.basename(path)}: another key")
        state = ("nrt", "object", (obj, bc))
        symbols = numba_cache._object_symbols(codegen, state)
        if symbols is None or not all(s in symbols[0] for s in _DEFINES):
            raise numba_cache.DamagedCacheFile(f"{os.path.basename(path)}: not the runtime")
        unknown = [s for s in symbols[1] if not llb.address_of_symbol(s)]
        if unknown:
            raise numba_cache.DamagedCacheFile(f"{os.path.basename(path)}: calls {unknown[0]}")
        return numba_cache._load_object(codegen, state, symbols[0])
    except Exception as e:  # noqa: BLE001 - damaged, foreign, unloadable: compiled afresh
        numba_cache.log(f"not loading {path} ({type(e).__name__}: {e}); compiling the runtime")
        return None


def _save(library, path, key) -> None:
    from . import cache, numba_cache
    try:
        _, _, (obj, bc) = library.serialize_using_object_code()
        k = _FORMAT + b";" + key
        cache._write_atomic(path, numba_cache._seal(_HEAD.pack(len(k), len(obj), len(bc))
                                                    + k + obj + bc))
    except Exception:  # noqa: BLE001 - not saved: the next process compiles it again (a
        pass  # directory that cannot hold files is logged by the programs' own saves)
