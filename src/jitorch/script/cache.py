"""The disk cache of generated programs: content-hashed modules that Numba can cache.

Owns turning a `codegen.cpu.Program` into a loaded njit dispatcher:
- the source gets Numba's own disk cache switched on (`cache=True` in its njit decorators; the
  code generator emits `cache=False` and need not know about caching), plus any
  `program.njit_options` overrides;
- the module name is a hash of that source, of the numba/llvmlite/numpy/jitorch versions and of
  the jitorch modules the source imports (the fastmath helpers), so a changed helper or library
  never loads a stale program;
- the file lives in `$JITORCH_CACHE_DIR` (default `~/.cache/jitorch`); an existing file is never
  rewritten (Numba's cache stamp includes mtime and size): new files are written to a temp file
  and `os.replace`d, which is atomic, so concurrent processes are safe;
- the module is registered in `sys.modules` BEFORE `exec_module` (else Numba's cache cannot find
  it in a second process, numba#10485), and a module already loaded in this process is reused,
  so two functions with the same program share one dispatcher and compile once.

Numba compiles lazily: whether a call compiled or loaded from disk is known only after the first
call; `dispatcher_outcome(disp, before)` compares the dispatcher's cache statistics to tell.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import threading

_lock = threading.Lock()
_dir: str | None = None
MODULE_PREFIX = "_jitorch_prog_"


def cache_dir() -> str:
    """The directory for generated modules; created on first use. If it cannot be written,
    a private temp dir is used instead (programs still compile, nothing is reused)."""
    global _dir
    want = os.environ.get("JITORCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "jitorch")
    if _dir is not None and _dir[0] == want:
        return _dir[1]
    path = want
    try:
        os.makedirs(path, exist_ok=True)
        if not os.access(path, os.W_OK):
            raise PermissionError(path)
    except OSError:
        path = tempfile.mkdtemp(prefix="jitorch-cache-")
    _dir = (want, path)
    return path


_VERSIONS: str | None = None
_IMPORT = re.compile(r"^\s*(?:from\s+(jitorch[\w.]*)\s+import|import\s+(jitorch[\w.]*))", re.M)
_file_hashes: dict = {}


def _versions() -> str:
    global _VERSIONS
    if _VERSIONS is None:
        import llvmlite
        import numba
        import numpy
        from .. import __version__ as jv
        _VERSIONS = f"numba={numba.__version__};llvmlite={llvmlite.__version__};" \
                    f"numpy={numpy.__version__};jitorch={jv};py={sys.version_info[:2]}"
    return _VERSIONS


def _imported_hashes(source: str) -> str:
    """Hashes of the jitorch modules a program imports (e.g. codegen/fastmath.py): Numba's
    cache does not notice when those change, so a changed helper must give a new module name."""
    out = []
    for m in _IMPORT.finditer(source):
        name = m.group(1) or m.group(2)
        h = _file_hashes.get(name)
        if h is None:
            try:
                spec = importlib.util.find_spec(name)
                with open(spec.origin, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()[:16]
            except Exception:  # not a file module: the name alone
                h = "?"
            _file_hashes[name] = h
        out.append(f"{name}={h}")
    return ";".join(out)


_DECORATOR = re.compile(r"^(\s*@(?:numba\.)?njit\()(.*)\)\s*$", re.M)


def prepare_source(source: str, options: dict | None = None) -> str:
    """Switch on Numba's disk cache in every njit decorator line and apply `options`
    (a dict of njit keyword -> Python literal value) to the same decorators."""
    opts = {"cache": True}
    opts.update(options or {})

    def fix(m):
        args = m.group(2)
        for k, v in opts.items():
            pat = re.compile(rf"\b{k}\s*=\s*(\{{[^}}]*\}}|[^,()]+)")
            if pat.search(args):
                args = pat.sub(f"{k}={v!r}", args, count=1)
            else:
                args = (args + ", " if args.strip() else "") + f"{k}={v!r}"
        return m.group(1) + args + ")"

    return _DECORATOR.sub(fix, source)


def module_name(source: str) -> str:
    h = hashlib.sha256((_versions() + ";" + _imported_hashes(source) + "\n" + source)
                       .encode()).hexdigest()[:24]
    return MODULE_PREFIX + h


def is_on_disk(source: str, options: dict | None = None) -> bool:
    """Whether this program's module was written by an earlier load (so Numba's disk cache
    most likely holds it compiled)."""
    name = module_name(prepare_source(source, options))
    return name in sys.modules or os.path.exists(os.path.join(cache_dir(), name + ".py"))


def load_module(source: str, options: dict | None = None):
    """Write (if new) and import the program's module; returns (module, is_new_in_process)."""
    src = prepare_source(source, options)
    name = module_name(src)
    mod = sys.modules.get(name)
    if mod is not None:
        return mod, False
    with _lock:  # one import per module per process
        mod = sys.modules.get(name)
        if mod is not None:
            return mod, False
        path = os.path.join(cache_dir(), name + ".py")
        if not os.path.exists(path):
            fd, tmp = tempfile.mkstemp(prefix=name, suffix=".tmp", dir=os.path.dirname(path))
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(src)
                os.replace(tmp, path)
            except BaseException:
                if os.path.exists(tmp):
                    os.unlink(tmp)
                raise
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
        return mod, True


def dispatcher_counts(disp) -> tuple:
    """(disk-cache hits, misses, compiled overloads) of an njit dispatcher."""
    try:
        st = disp.stats
        return sum(st.cache_hits.values()), sum(st.cache_misses.values()), len(disp.overloads)
    except AttributeError:  # not a Numba dispatcher (a plain Python entry, in tests)
        return 0, 0, 0


def dispatcher_outcome(disp, before: tuple) -> str:
    """After a call: "disk" if Numba loaded a new overload from its cache, "compiled" if it
    compiled one, "memory" if the overload existed already in this process."""
    hits, _, n = dispatcher_counts(disp)
    if n == before[2] and n:
        return "memory"
    if hits > before[0]:
        return "disk"
    return "compiled"
