"""Code objects of the Python source jitorch generates for itself (the op functions of
_ops/registry.py, autograd's recorders and appliers), kept across processes.

Why: `import jitorch` generates and compiles about a thousand small functions, and `compile`
was 0.26 of its 0.66 CPU-s (cProfile, 2026-12-06, AMD EPYC). Every process pays it: a user's
script, each compile worker, each rank of an MPI job, each process of the test suite.

`compile_cached(src, filename)` returns the code object `compile(src, filename, "exec")` would
(with `from __future__ import annotations`, as the generating modules compile it), from a table
keyed by the SHA-256 of the filename and source: only the exact same source is ever served its
code. The table is read once per process from `<jitorch's cache directory>/generated-code-<tag>.bin`
(`<tag>`: Python's bytecode magic number) and written back atomically at exit when the process
compiled something it lacked, holding what this process used (and what it read, unless that is
mostly stale). The file is sealed (kernels/sealed.py, as the programs' code files are):
a SHA-256 of its payload is checked before anything is unmarshalled, and the payload must name
this Python's bytecode format; a damaged, truncated or foreign file is ignored (the functions
compile) and rewritten. Like the rest of that directory it is trusted by the user who owns it
(docs/security.md). `JITORCH_CACHE_DIR` unusable: everything compiles, nothing is written.
"""
from __future__ import annotations

import __future__
import atexit
import hashlib
import marshal
import os
import types
from importlib.util import MAGIC_NUMBER

__all__ = ["compile_cached"]

_MAGIC = b"jitorch-generated-code-1\n"
_FLAGS = __future__.annotations.compiler_flag
_table: dict | None = None  # key -> code, as read from the file
_used: dict = {}  # key -> code, what this process served
_missed = False


def _path() -> str:
    from .script.kernels.cache import wanted_dir  # (a light module: no Numba)
    return os.path.join(wanted_dir(), f"generated-code-{MAGIC_NUMBER.hex()}.bin")


def _read() -> dict:
    from .script.kernels import sealed
    from .script.kernels.cache import read_regular_file  # (no link followed, no FIFO waited on)
    try:
        payload = sealed.unseal(_MAGIC, read_regular_file(_path(), 1 << 26))
        if payload is not None:
            magic, table = marshal.loads(payload)
            if magic == MAGIC_NUMBER and isinstance(table, dict) and \
                    all(isinstance(c, types.CodeType) for c in table.values()):
                return table
    except Exception:  # noqa: BLE001 - damaged or foreign: compiled and rewritten
        pass
    return {}


def compile_cached(src: str, filename: str):
    """`compile(src, filename, "exec")` under `from __future__ import annotations`, from the
    table where this exact source was compiled before (see the module doc)."""
    global _table, _missed
    if _table is None:
        _table = _read()
        atexit.register(_write)
    key = hashlib.sha256(f"{filename}\0{src}".encode()).digest()
    code = _table.get(key)
    if code is None:
        code = compile(src, filename, "exec", flags=_FLAGS, dont_inherit=True)
        _missed = True
    _used[key] = code
    return code


def _write() -> None:
    """At exit, if this process compiled what the file lacked: what it used, plus what it read
    unless most of that went unused (sources of an older jitorch)."""
    if not _missed:
        return
    table = dict(_used)
    if _table and len(set(_table) - set(_used)) <= len(_used):
        table.update(_table)
        table.update(_used)
    try:
        from .script.kernels import sealed
        from .script.kernels.cache import _write_atomic
        path = _path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write_atomic(path, sealed.seal(_MAGIC, marshal.dumps((MAGIC_NUMBER, table))))
    except Exception:  # noqa: BLE001 - not saved: the next process compiles them again
        pass
