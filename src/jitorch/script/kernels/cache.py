"""The disk cache of generated programs: content-hashed modules that Numba can cache.

Owns turning a `targets.cpu.program.Program` into a loaded njit dispatcher:
- the source gets Numba's own disk cache switched on (`cache=True` in its njit decorators; the
  code generator emits `cache=False` and need not know about caching), plus any
  `program.njit_options` overrides;
- the module name is a hash of that source, of the numba/llvmlite/numpy/jitorch versions and of
  the jitorch modules the source imports (the fastmath helpers), so a changed helper or library
  never loads a stale program;
- the file lives in `$JITORCH_CACHE_DIR` (default `~/.cache/jitorch`). The cache cannot lie:
  a file is trusted only if it is a regular file (not a symlink, FIFO or device; opened
  non-blocking, so a FIFO cannot hang) whose bytes are exactly the source its hash name stands
  for; anything else (edited, truncated, unreadable, another kind of file) is replaced. What is
  executed is the checked source itself, never a re-read of the file or a `.pyc`: its
  bytecode is compiled from it, or read from `<name>.code`, a sealed file bound to that
  source's SHA-256 (`_compiled`: a damaged or foreign one is compiled afresh). Files are
  written to a temp file and `os.replace`d (atomic, so concurrent processes are safe, and a
  good file is never rewritten: Numba's cache stamp is taken from it);
- Numba's own cache files for the module are checked too (`cache_guards.guard`);
- a cache directory that cannot be written (read-only, full, removed and not re-creatable)
  degrades to compiling in memory (correct, just not reused); the compile log says so once;
- the module is registered in `sys.modules` BEFORE its code runs (else Numba's cache cannot find
  it in a second process, numba#10485), and a module already loaded in this process is reused,
  so two functions with the same program share one dispatcher and compile once;
- threads: a module is used only once it is complete (its code ran and its dispatchers are
  guarded). Its `sys.modules` entry exists earlier (see above), so `sys.modules` is never the
  question "is it loaded": `_loaded` is, filled only after `_exec_module` returned, read
  without the lock and written under it. A thread that finds a module in `_loaded` gets it
  whole; one that does not waits on the lock for the thread executing it. After `os.fork` the
  lock is released in the child (jitorch/_fork.py); a module that a vanished parent thread was
  executing is not in `_loaded` and is executed again.

Numba compiles lazily: whether a call compiled or loaded from disk is known only after the first
call; `dispatcher_outcome(disp, before)` compares the dispatcher's cache statistics to tell.
"""
from __future__ import annotations

import hashlib
import importlib.util
import linecache
import os
import re
import stat
import sys
import tempfile
import types

from ... import _fork
from . import sealed

_lock = _fork.lock()  # one import per module per process
# name -> module whose code ran to the end and whose caches are guarded (see the docstring)
_loaded: dict = {}
_dir: tuple | None = None
MODULE_PREFIX = "_jitorch_prog_"


def wanted_dir() -> str:
    """Where the cache directory is asked to be (`$JITORCH_CACHE_DIR`, else
    `$XDG_CACHE_HOME/jitorch`, else `~/.cache/jitorch`), whether or not it exists."""
    return os.environ.get("JITORCH_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
        "jitorch")


def cache_dir() -> str | None:
    """The directory for generated modules, created on first use; None if it cannot be created
    or written (programs then compile in memory, see load_module)."""
    global _dir
    want = wanted_dir()
    if _dir is not None and _dir[0] == want:
        return _dir[1]
    path = want
    try:
        os.makedirs(path, exist_ok=True)
        if not os.access(path, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable", path)
    except OSError as e:
        _in_memory_note(path, e)
        path = None
    _dir = (want, path)
    return path


def _in_memory_note(path, err) -> None:
    from .numba_cache import log_once
    log_once(("dir", path), f"cannot use the cache directory {path} "
                            f"({type(err).__name__}: {err}); compiling in memory")


_VERSIONS: str | None = None
# the format of the Numba cache files of programs (numba_cache._CheckedFile): part of every
# module name, so code that writes another format never shares a program's files
CACHE_FORMAT = 2
_IMPORT = re.compile(r"^\s*(?:from\s+(jitorch[\w.]*)\s+import|import\s+(jitorch[\w.]*))", re.M)
_file_hashes: dict = {}


def _versions() -> str:
    global _VERSIONS
    if _VERSIONS is None:
        import llvmlite
        import numba
        import numpy
        from ...version import jitorch as jv  # the package release, not the API level
        _VERSIONS = f"numba={numba.__version__};llvmlite={llvmlite.__version__};" \
                    f"numpy={numpy.__version__};jitorch={jv};py={sys.version_info[:2]};" \
                    f"cache_format={CACHE_FORMAT}"
    return _VERSIONS


def _imported_hashes(source: str) -> str:
    """Hashes of the jitorch modules a program imports (e.g. targets/cpu/fastmath.py): Numba's
    cache does not notice when those change, so a changed helper must give a new module name."""
    out = []
    for m in _IMPORT.finditer(source):
        name = m.group(1) or m.group(2)
        out.append(f"{name}={file_hash(name)}")
    return ";".join(out)


def file_hash(name: str) -> str:
    """A hash of module `name`'s source file, once per process ("?" for a module that is not a
    file)."""
    h = _file_hashes.get(name)
    if h is None:
        try:
            spec = importlib.util.find_spec(name)
            with open(spec.origin, "rb") as f:
                h = hashlib.sha256(f.read()).hexdigest()[:16]
        except Exception:  # not a file module: the name alone
            h = "?"
        _file_hashes[name] = h
    return h


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


def load_module(source: str, options: dict | None = None):
    """Write (if new or not as generated) and load the program's module; returns (module,
    is_new_in_process). A cache directory that cannot hold it gives a module compiled in
    memory (no `__file__`)."""
    src = prepare_source(source, options)
    name = module_name(src)
    mod = _loaded.get(name)
    if mod is not None:
        return mod, False
    with _lock:
        mod = _loaded.get(name)
        if mod is not None:
            return mod, False
        d = cache_dir()
        mod = _load_from_disk(name, src, d) if d is not None else None
        if mod is None:
            # Numba's cache=True needs a file: compile this one in memory without it
            mem = prepare_source(source, dict(options or {}, cache=False))
            mod = _exec_module(name, mem, f"<jitorch program {name}>")
        _loaded[name] = mod  # complete now: other threads may use it
        return mod, True


_LOAD_MODULE = load_module  # (runtime/plans.py: records only what the real loader loaded)


def loaded(name: str):
    """The module `name` if this process has loaded it completely, else None (never one
    whose code is still running in another thread: see the module docstring)."""
    return _loaded.get(name)


def forget(name: str) -> None:
    """Drop module `name` from this process (the compile worker, when a job names another
    cache directory): the next load executes it afresh."""
    with _lock:
        _loaded.pop(name, None)
        sys.modules.pop(name, None)


def load_program(prog):
    """The loaded module of a `targets.cpu.program.Program`: its kernel modules first (the entry
    imports them by name, targets/cpu/kernel.py), then the entry's; -> (module, is_new)."""
    for ksrc in getattr(prog, "kernels", ()):
        load_module(ksrc)
    return load_module(prog.source, getattr(prog, "njit_options", None))


def listing(entry_source: str, kernels) -> str:
    """`entry_source` followed by each kernel module (`kernels`: sources) as it is loaded, under
    a line that names the module: what `fn.code` shows, whatever the target."""
    out = entry_source
    for ksrc in kernels:
        src = prepare_source(ksrc)
        out += f"\n\n# --- kernel {module_name(src)}\n" + src
    return out


def read_regular_file(path: str, limit: int) -> bytes | None:
    """Up to `limit` bytes of the regular file at `path`, or None (missing, unreadable, a link,
    a FIFO or device: opened without following links or blocking, so a planted special file
    in the cache directory can neither redirect nor hang the read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def load_named(name: str):
    """The module `name` from the cache directory, when its file holds a source whose hash is
    that name (so what runs is what the name stands for): for a process that has an entry but
    not the kernels it calls (the compile worker, kernels/kernel_call.py). None otherwise."""
    mod = _loaded.get(name)
    if mod is not None:
        return mod
    d = cache_dir()
    if d is None or not re.fullmatch(MODULE_PREFIX + "[0-9a-f]{24}", name):
        return None
    path = os.path.join(d, name + ".py")
    data = read_regular_file(path, 1 << 24)
    if data is None:
        return None
    try:
        src = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if module_name(src) != name:  # (src is already prepared: its decorators say cache=True)
        return None
    with _lock:
        mod = _loaded.get(name)
        if mod is None:
            mod = _loaded[name] = _exec_module(name, src, path)
        return mod


def _load_from_disk(name: str, src: str, d: str):
    """The module from its checked file in `d` (written or replaced as needed), or None when
    the directory cannot hold it."""
    path = os.path.join(d, name + ".py")
    data = src.encode("utf-8")
    err = None
    for _attempt in range(2):  # a second try if the directory vanished under us
        state = _check_file(path, data)
        if state != "ok":
            try:
                os.makedirs(d, exist_ok=True)  # removed since cache_dir() made it
                _write_atomic(path, data)
            except OSError as e:
                _in_memory_note(d, e)
                return None
            if state != "missing":
                from .numba_cache import log
                log(f"replaced {path}: {state}")
        try:
            return _exec_module(name, src, path)
        except (OSError, RuntimeError) as e:
            # the file or its directory went away between the write and Numba's decorators,
            # or Numba finds no place to cache it ("no locator available", a RuntimeError);
            # a genuine error of the program itself is raised again by the in-memory load
            err = e
    _in_memory_note(d, err)
    return None


def _check_file(path: str, expected: bytes) -> str:
    """"ok" if `path` is a regular file holding exactly `expected`, "missing" if there is
    nothing there, else what is wrong. Never follows a symlink and never blocks (a FIFO)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                     | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return "missing"
    except OSError as e:
        if os.path.islink(path):
            return "a symlink, not a regular file"
        return f"unreadable ({type(e).__name__}: {e.strerror})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "not a regular file"
        if st.st_size != len(expected):
            return "its content differs from the source its hash names (size)"
        got = b""
        while len(got) <= len(expected):
            chunk = os.read(fd, len(expected) + 1 - len(got))
            if not chunk:
                break
            got += chunk
    except OSError as e:
        return f"unreadable ({type(e).__name__}: {e.strerror})"
    finally:
        os.close(fd)
    if got != expected:
        return "its content differs from the source its hash names"
    return "ok"


def _write_atomic(path: str, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path), suffix=".tmp",
                               dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # replaces a symlink or FIFO itself, never what it points to
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


_CODE_MAGIC = b"jitorch-code-1\n"


def _code_path(filename: str) -> str:
    return filename[:-len(".py")] + ".code"


def _compiled(name: str, src: str, filename: str):
    """The code object of `src` (the checked source of module `name`, at `filename`): from its
    sealed `<name>.code` file when that holds the bytecode of exactly this source, else
    compiled (and the file written for the next process). A warm start executes ~40 program
    modules; compiling their sources was ~0.03-0.06 s of it (encoder train step), reading the
    code back ~1 ms.

    The file is checked like Numba's data files of programs (numba_cache._CheckedFile): a
    SHA-256 of its payload before anything is unmarshalled, then the payload must name this
    interpreter's bytecode format (importlib's MAGIC_NUMBER), this module, this file name and
    the SHA-256 of this source, and hold a code object: a damaged, truncated or foreign file
    (another program's, another Python's) is never executed; the source is compiled and the
    file rewritten. Read without following links or blocking (`read_regular_file`)."""
    import marshal
    from importlib.util import MAGIC_NUMBER
    digest = hashlib.sha256(src.encode("utf-8")).digest()
    path = _code_path(filename)
    payload = sealed.unseal(_CODE_MAGIC, read_regular_file(path, 1 << 26))
    if payload is not None:
        try:
            magic, mod_name, file, src_digest, code = marshal.loads(payload)
        except Exception:  # noqa: BLE001 - another layout: compiled and rewritten below
            magic = None
        if (magic, mod_name, file, src_digest) == (MAGIC_NUMBER, name, filename, digest) \
                and isinstance(code, types.CodeType):
            return code
    code = compile(src, filename, "exec")
    try:
        payload = marshal.dumps((MAGIC_NUMBER, name, filename, digest, code))
        _write_atomic(path, sealed.seal(_CODE_MAGIC, payload))
    except (OSError, ValueError):  # not saved: the next process compiles it again
        pass
    return code


def _exec_module(name: str, src: str, filename: str):
    """Run `src` (already checked: never re-read from disk) as module `name`, registered in
    sys.modules first; on disk, its Numba dispatchers get checked caches and its bytecode
    comes from its checked code file (`_compiled`). Called under `_lock`; the caller
    publishes the module in `_loaded`."""
    on_disk = not filename.startswith("<")
    code = _compiled(name, src, filename) if on_disk else compile(src, filename, "exec")
    mod = types.ModuleType(name)
    if on_disk:
        mod.__file__ = filename
    # Numba's error messages, tracebacks and the lean compiler (targets/cpu/lean, which reads
    # a function's source through `inspect`) see the checked text, never the file again
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    sys.modules[name] = mod
    from .cache_guards import guard
    from .numba_locator import module_loading
    try:
        with module_loading():  # (Numba's write test of the directory: once, not per function)
            exec(code, mod.__dict__)
        if on_disk:
            guard(mod)
    except BaseException:
        del sys.modules[name]
        raise
    return mod


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
