"""Numba's disk cache for jitorch's programs, made unable to lie or to fail a call.

Owns `guard(module)`: every Numba dispatcher of a loaded program module (and the jitorch kernels
it imports) gets a `GuardedCache` in place of Numba's `FunctionCache`. Differences from Numba's:
- every index (`.nbi`) and data (`.nbc`) file of a program carries a SHA-256 of its payload,
  checked before anything is unpickled: a truncated file, junk bytes or a bit flip is found
  before LLVM sees it (a damaged object file could otherwise load and run wrong machine code).
  This is a file format of its own: its version is part of every program's module name
  (cache.CACHE_FORMAT), so jitorch code of another format never reads these files nor this
  code theirs. The jitorch kernels a program imports keep Numba's format (eager code loads
  them through Numba's own cache too): they get the checks below, not the checksum;
- a loaded overload must be the one asked for: the same module, function and argument types (a
  valid data file of another program swapped in is refused);
- a file that fails any check, or fails to load at all, is deleted with the function's other
  cache files and Numba compiles afresh (then saves good files): one line in
  `JITORCH_LOG=compile` says so. Without this a damaged file raised on every later call;
- a failed save (a full or read-only disk, a directory removed meanwhile) never fails the call:
  the compiled code is already in memory; the compile log says so once per directory;
- a miss takes the function's cross-process compile lock (compile_lock.py) and looks once
  more: processes that share the cache compile each function once, the others wait and load.

A missing file is a plain miss, not damage (another process may be between writing the index
and the data file; Numba writes each with temp file + os.replace).

Loading is leaner than Numba's (`_LeanImpl`, a warm start loads ~80 overloads; encoder train
step: ~200 of ~600 ms CPU went to unpacking them). Numba's object-code entry holds the machine
code and the library's bitcode "for linking"; Numba parses that bitcode on every load and walks
its functions through LLVM to learn the symbols the library defines (what
`get_pointer_to_function` may answer). jitorch calls kernels and library code through symbols
(kernel_call.py), so that bitcode is almost never linked: here the defined symbols are read
from the object file's ELF symbol table (the same set: for every defined function and global
the object has a symbol of that name), and the bitcode is parsed only when a caller links the
library (`_ObjectCodeLibrary`). Numba refreshes the target context before every load: it
imports Numba's whole implementation library and installs its typing and lowering registries
(~0.1 s of a warm start), which only a compile uses (and a compile refreshes on its own). Here a
load makes sure of what loading machine code needs (`_runtime_for_load`): Numba's runtime
(NRT, whose C functions Numba registers at the first refresh) and every symbol the object file
calls, known to LLVM's symbol table or defined by code loaded before; only an unknown one makes
it refresh the context Numba's way first (once per process). The host's magic tuple in an
index key is asked of LLVM once (`magic_tuple`). Any other entry (bitcode, a non-ELF object,
another Numba's layout) is refreshed for and loads Numba's way. Beside this module: a load's
environments do not import Numba's library modules (lean_env.py), Numba's runtime library is
loaded from a checked object file, not compiled (nrt_cache.py), and the eager kernels'
dispatchers type plain arrays without importing numpy.ma (array_types.py).

A load runs none of Numba's extension entry points (`numba_extensions`: in this environment
rocket-fft, whose import also imports scipy.fft, ~0.1 s of a warm start). Numba runs them
(`numba.core.entrypoints.init_all`) from the target context's refresh and before typing a
dispatcher's arguments, so that extensions are registered before anything compiles; a load
compiles nothing. Nor does a compile of jitorch's generated code (`compile_program`: a
program's entry, its kernels): it uses no third-party extension but rocket-fft, and jitorch's
FFT programs import rocket_fft themselves (targets/cpu/lower_fft.py); rocket-fft's entry point
was ~0.03-0.04 of the ~0.5 CPU-s of a first-ever compile of a one-loop program
(bench/compile_time.py's gelu). Here `init_all` does nothing while this thread refreshes the
context for a load or compiles generated code (`_entry_points_deferred`): it runs, as in Numba,
at the next compile of any other function (Numba's compiler refreshes the context first) or
the next call of any other dispatcher. `cache_guards.guard_eager` gives jitorch's own eager
kernels (typed from NumPy arrays and scalars, which need no extension) the same checked load
and leaves the entry points to their compile. Which dispatchers get these caches, and of which
kind: cache_guards.py.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import struct
import sys
import weakref

from llvmlite import binding as _llb
from llvmlite.binding import ffi as _ffi

from numba.core import entrypoints as _entrypoints, event as _event, sigutils
from numba.core.caching import CompileResultCacheImpl, FunctionCache, IndexDataCacheFile
from numba.core.codegen import JITCodeLibrary
from numba.core.compiler import CompileResult
from numba.core.runtime import rtsys

from .log import log_enabled
from . import sealed
from .thread_mark import ThreadMark
from . import compile_gc, compile_lock, llvm_pipelines, nrt_cache
from .lean_env import loading_overloads

compile_gc.install()  # (the collector's thresholds while jitorch's code compiles)
nrt_cache.install()  # (Numba's runtime library from a checked object file)
llvm_pipelines.install()  # (the LLVM pipelines of glue entries and kernels)

_MAGIC = b"jitorch-numba-cache-1\n"


class DamagedCacheFile(Exception):
    """A cache file whose checksum, format or content does not match what it must hold."""


def _seal(payload: bytes) -> bytes:
    return sealed.seal(_MAGIC, payload)


def _unseal(data: bytes, path: str) -> bytes:
    payload = sealed.unseal(_MAGIC, data)
    if payload is None:
        raise DamagedCacheFile(f"{os.path.basename(path)}: not a jitorch cache file, or its "
                               "checksum does not match")
    return payload


class _CheckedFile(IndexDataCacheFile):
    """Numba's index + data files, each sealed with a checksum. The index holds
    (numba version, source stamp, overloads) under one seal."""

    def _load_index(self):
        try:
            with open(self._index_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return {}
        version, stamp, overloads = pickle.loads(_unseal(data, self._index_path))
        if version != self._version or stamp != self._source_stamp:
            return {}  # another Numba or an older source: stale, overwritten on save
        if not isinstance(overloads, dict):
            raise DamagedCacheFile(f"{self._index_name}: the index is not a mapping")
        return overloads

    def _save_index(self, overloads):
        data = _seal(self._dump((self._version, self._source_stamp, overloads)))
        with self._open_for_write(self._index_path) as f:
            f.write(data)

    def _load_data(self, name):
        path = self._data_path(name)
        with open(path, "rb") as f:  # OSError (missing): a miss, see IndexDataCacheFile.load
            data = f.read()
        return pickle.loads(_unseal(data, path))

    def _save_data(self, name, data):
        data = _seal(self._dump(data))
        with self._open_for_write(self._data_path(name)) as f:
            f.write(data)


def _files(cache_file) -> list:
    """Paths of the index and data files of one function's cache that exist now."""
    index = cache_file._index_name
    base = index[:-len(".nbi")] + "."
    try:
        names = os.listdir(cache_file._cache_path)
    except OSError:
        return []
    return [os.path.join(cache_file._cache_path, n) for n in names
            if n == index or (n.startswith(base) and n.endswith(".nbc")
                              and n[len(base):-len(".nbc")].isdigit())]


def _elf_defined_symbols(obj: bytes):
    """Names of the symbols an ELF64 little-endian object file defines (functions, globals;
    not sections or file names); None for any other object format."""
    got = _elf_symbols(obj)
    return None if got is None else got[0]


def _elf_symbols(obj: bytes):
    """(defined, undefined): the names of the symbols an ELF64 little-endian object file
    defines (functions, globals; not sections or file names) and of those it refers to
    without defining them; None for any other object format."""
    if obj[:4] != b"\x7fELF" or obj[4:6] != b"\x02\x01":
        return None
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize)
                for i in range(shnum)]
    names, undefined = set(), set()
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        strtab = sections[link][4]
        for name, info, _, shndx, _, _ in struct.iter_unpack(
                "<IBBHQQ", obj[offset:offset + size - size % entsize]):
            if name and (info & 0xF) not in (3, 4):  # not SECTION/FILE
                start = strtab + name
                (names if shndx != 0 else undefined).add(
                    obj[start:obj.index(b"\0", start)].decode())
    return names, undefined


class _ObjectCodeLibrary(JITCodeLibrary):
    """A library loaded from cached object code whose bitcode for linking is parsed only when
    a caller links it (Numba parses it on every load)."""

    _shared_bitcode = None

    def _get_module_for_linking(self):
        if self._shared_module is None and self._shared_bitcode is not None:
            self._shared_module = _llb.parse_bitcode(self._shared_bitcode)
            self._shared_bitcode = None
        return super()._get_module_for_linking()


def _object_symbols(codegen, state):
    """(defined, undefined): the symbols an object-code entry's machine code defines and
    those it calls, when `_load_object` can load it; None otherwise (then Numba's own
    unserialize is used)."""
    name, kind, data = state
    if kind != "object" or codegen._library_class is not JITCodeLibrary or \
            not isinstance(getattr(codegen._engine, "_defined_symbols", None), set):
        return None
    got = _elf_symbols(data[0])
    return got if got and got[0] else None


def _load_object(codegen, state, symbols):
    """Numba's CPUCodeLibrary._unserialize of an object-code entry, without parsing its
    bitcode nor walking it for the symbols it defines (`symbols`, from the object file)."""
    name, _, (object_code, shared_bitcode) = state
    lib = _ObjectCodeLibrary(codegen, name)
    lib.enable_object_caching()
    lib._set_compiled_object(object_code)
    lib._shared_bitcode = shared_bitcode
    lib._finalize_final_module()  # loads the machine code (the engine asks the object cache)
    codegen._engine._defined_symbols |= symbols
    return lib


class _LeanImpl(CompileResultCacheImpl):
    """Numba's CompileResult cache, loading object code through `_load_object`."""

    def rebuild(self, target_context, payload):
        codegen = target_context.codegen()
        symbols = _object_symbols(codegen, payload[0]) if len(payload) == 9 else None
        if symbols is None:  # bitcode, not ELF, another Numba's CompileResult._reduce
            _refresh_for_load(target_context)
            return super().rebuild(target_context, payload)
        (libdata, fndesc, env, signature, objectmode, lifted, typeann, reload_init,
         referenced_envs) = payload
        # the rest as Numba's CompileResult._rebuild
        for fn in reload_init or ():
            fn()
        _runtime_for_load(target_context, symbols[1])
        library = _load_object(codegen, libdata, symbols[0])
        cres = CompileResult(target_context=target_context,
                             typing_context=target_context.typing_context, library=library,
                             environment=env,
                             entry_point=target_context.get_executable(library, fndesc, env),
                             fndesc=fndesc, type_annotation=typeann, signature=signature,
                             objectmode=objectmode, lifted=lifted, typing_error=None,
                             call_helper=None, metadata=None, reload_init=reload_init,
                             referenced_envs=referenced_envs)
        for e in referenced_envs:
            library.codegen.set_env(e.env_name, e)
        return cres


_magics = weakref.WeakKeyDictionary()  # codegen -> its host's (triple, CPU, features)


def magic_tuple(codegen):
    """`codegen.magic_tuple()` once per codegen and process: each query makes LLVM calls
    (~0.1 ms), and Numba asks for every overload's index key (a warm start loads ~80)."""
    got = _magics.get(codegen)
    if got is None:
        got = _magics[codegen] = codegen.magic_tuple()
    return got


class _KnownMagic:
    """What Cache._index_key reads of a codegen, its magic tuple, already known."""

    def __init__(self, magic):
        self._magic = magic

    def magic_tuple(self):
        return self._magic


_refreshed = weakref.WeakSet()  # the target contexts a load refreshed in this process

# --- Numba's extension entry points: not run for a load (see the module doc) ------------------
_NUMBA_INIT_ALL = getattr(_entrypoints.init_all, "__wrapped__", _entrypoints.init_all)
_deferring = ThreadMark()  # this thread is refreshing a context for a load


def _init_all():
    """`numba.core.entrypoints.init_all`, except while this thread refreshes a target
    context for a load: then nothing (not marked done: the next caller runs it)."""
    if _deferring.active:
        return
    _NUMBA_INIT_ALL()


_init_all.__wrapped__ = _NUMBA_INIT_ALL
# (Numba looks it up on the module at each call: dispatcher.py, cpu.py)
_entrypoints.init_all = _init_all


def _entry_points_deferred() -> ThreadMark:
    return _deferring


def compile_program(disp, sig):
    """`disp.compile(sig)` for a jitorch program or kernel dispatcher (generated code), without
    running Numba's extension entry points (see the module doc): generated code uses Numba's
    own implementations, jitorch's modules, and rocket-fft, which an FFT program imports itself.
    The entry points stay due: the next compile of any other function runs them. A glue
    entry's or a kernel's library gets its own LLVM pipeline (llvm_pipelines.py)."""
    with _entry_points_deferred(), llvm_pipelines.compiling(disp):
        return disp.compile(sig)


def _refresh_for_load(target_context) -> None:
    """Numba's refresh before a load, once per context and process, without the entry
    points (a compile refreshes, and runs them, on its own)."""
    if target_context not in _refreshed:
        with _entry_points_deferred():
            target_context.refresh()
        _refreshed.add(target_context)


_resolved: set = set()  # symbols found in this process's symbol table (they stay there)


def _runtime_for_load(target_context, calls) -> None:
    """What loading object code that calls the symbols `calls` needs of Numba: its runtime
    (NRT: Numba registers the symbols of its C API when the first compile or load refreshes
    the context), and each symbol registered or defined by code already loaded. Numba's full
    refresh (`_refresh_for_load`: it imports Numba's whole implementation library, ~0.1 s of a
    warm start, for typing and lowering, which a load does not do) runs only when a symbol is
    still unknown, e.g. the hash secret that numba.cpython.hashing registers on import."""
    if target_context in _refreshed:
        return
    rtsys.initialize(target_context)
    engine = target_context.codegen()._engine._defined_symbols
    for sym in calls:
        if sym not in _resolved and sym not in engine:
            if not _llb.address_of_symbol(sym):
                log(f"a cached overload calls {sym}, which nothing has registered yet: "
                    "refreshing Numba's target context before loading it")
                _refresh_for_load(target_context)
                return
            _resolved.add(sym)


class GuardedCache(FunctionCache):
    """Numba's per-function disk cache with checked loads and saves that cannot fail a call."""

    _impl_class = _LeanImpl

    def __init__(self, py_func, sealed: bool = True):
        super().__init__(py_func)
        if sealed:
            self._seal()

    def _seal(self):
        self._cache_file = _CheckedFile(cache_path=self._cache_path,
                                        filename_base=self._impl.filename_base,
                                        source_stamp=self._cache_file._source_stamp)

    @classmethod
    def replacing(cls, numba_cache, sealed: bool):
        """The cache of the function of Numba's FunctionCache `numba_cache` (made when its
        dispatcher was decorated), from its locator, file names and source stamp: Numba's
        search for a locator test-writes a file in the cache directory, and a warm start made
        it twice for each of its ~100 functions. Another Numba's cache: made afresh."""
        try:
            impl = cls._impl_class.__new__(cls._impl_class)
            impl.__dict__.update(numba_cache._impl.__dict__)
            self = cls.__new__(cls)
            self.__dict__.update(numba_cache.__dict__)
            self._impl = impl
            if sealed:
                self._seal()
            return self
        except AttributeError:  # (`_impl`, `_cache_file`: what this Numba's layout has)
            return cls(numba_cache._py_func, sealed=sealed)

    def load_overload(self, sig, target_context):
        """The cached overload, or None after taking this function's compile lock
        (compile_lock.py), which `save_overload` or a failed compile gives back: a process that
        finds another compiling it waits, then loads what that one saved."""
        cres = self._load_checked(sig, target_context)
        if cres is not None:
            return cres
        args = tuple(sigutils.normalize_signature(sig)[0])
        token = compile_lock.acquire(self._cache_path, self._lock_name(), log)
        cres = self._load_checked(sig, target_context) if token is not None else None
        if cres is not None:
            compile_lock.release(token)
            return cres
        # (args -> token of the compiles under way; made here: `replacing` skips __init__)
        self._compiling = getattr(self, "_compiling", {})
        self._compiling[args] = token
        return None

    def _lock_name(self) -> str:
        return self._cache_file._index_name[:-len(".nbi")]

    def compile_ended(self, args) -> None:
        """Give back the compile lock of overload `args` (saved, or its compile failed)."""
        compile_lock.release(getattr(self, "_compiling", {}).pop(tuple(args), None))

    def _load_checked(self, sig, target_context):
        try:
            with _quiet_llvm_lock(), loading_overloads():
                # FunctionCache.load_overload without its refresh before every load (what a
                # load needs of it, `_LeanImpl.rebuild` sees to)
                cres = self._load_overload(sig, target_context)
            if cres is not None:
                self._check_is_mine(cres, sig)
            return cres
        except Exception as e:  # noqa: BLE001 - any failure to load is a damaged cache
            self._drop(e)
            return None  # Numba compiles, then save_overload writes fresh files

    def _index_key(self, sig, codegen):
        return super()._index_key(sig, _KnownMagic(magic_tuple(codegen)))

    def save_overload(self, sig, data):
        try:
            self._save_checked(sig, data)
        finally:
            self.compile_ended(sigutils.normalize_signature(sig)[0])

    def _save_checked(self, sig, data):
        try:
            super().save_overload(sig, data)
        except Exception as e:  # noqa: BLE001 - the overload is compiled and in memory already
            log_once(("save", self._cache_path),
                     f"cannot save compiled code in {self._cache_path} "
                     f"({type(e).__name__}: {e}); this process keeps it in memory")

    def _check_is_mine(self, cres, sig):
        py = self._py_func
        args, _ = sigutils.normalize_signature(sig)
        fd = cres.fndesc
        if (fd.modname, fd.qualname) != (py.__module__, py.__qualname__):
            raise DamagedCacheFile(f"the data file holds {fd.modname}.{fd.qualname}")
        if tuple(cres.signature.args) != tuple(args):
            raise DamagedCacheFile(f"the data file holds the overload for {cres.signature}")

    def _drop(self, error):
        removed = []
        for path in _files(self._cache_file):
            try:
                os.unlink(path)
                removed.append(os.path.basename(path))
            except OSError:
                pass
        first = (str(error).strip().splitlines() or [""])[0][:200]
        log(f"dropped the damaged Numba cache of {self._py_func.__module__}."
            f"{self._py_func.__qualname__} ({type(error).__name__}: {first}; removed "
            f"{len(removed)} file(s)); recompiling")


class EntryCache(GuardedCache):
    """The cache of an entry that calls kernels, or a kernel that calls library functions,
    through symbols (kernels/kernel_call.py): an
    overload is saved with the list of symbols its machine code calls (`<index>.<sig>.needs`,
    one symbol a line, written before the data), and loaded only when each of them could be
    registered first; otherwise it is a miss and Numba compiles the entry afresh (whose
    typing then compiles or loads what it calls). Without this a cached entry whose kernel
    cache was lost would call a null address."""

    def _needs_path(self, sig) -> str:
        tag = hashlib.sha256(str(tuple(sig)).encode()).hexdigest()[:16]
        return os.path.join(self._cache_path,
                            f"{self._cache_file._index_name[:-len('.nbi')]}.{tag}.needs")

    def _load_checked(self, sig, target_context):
        from . import kernel_call
        args, _ = sigutils.normalize_signature(sig)
        try:
            with open(self._needs_path(args), encoding="ascii") as f:
                needs = f.read().split()
        except (OSError, UnicodeDecodeError):
            return None  # no list: never load machine code whose calls are unknown
        if not all(kernel_call.ensure(sym) for sym in needs):
            return None
        return super()._load_checked(sig, target_context)

    def _save_checked(self, sig, data):
        from . import kernel_call
        try:
            args, _ = sigutils.normalize_signature(sig)
            needs = kernel_call.symbols_of(data.library.get_llvm_str())
            path = self._needs_path(args)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="ascii") as f:
                f.write("".join(sym + "\n" for sym in needs))
            os.replace(tmp, path)
        except Exception as e:  # noqa: BLE001 - not saved: the next process compiles it
            log_once(("save", self._cache_path),
                     f"cannot save compiled code in {self._cache_path} "
                     f"({type(e).__name__}: {e}); this process keeps it in memory")
            return
        super()._save_checked(sig, data)


class _FailedCompiles(_event.Listener):
    """Gives back the compile lock a GuardedCache took for a compile that raised (Numba saves
    nothing then, so `save_overload`, which gives it back otherwise, is not called)."""

    def on_start(self, ev):
        pass

    def on_end(self, ev):
        # (Numba 0.68's `Event.is_failed` answers the opposite: read the details it keeps)
        if getattr(ev, "_exc_details", None) is not None:
            cache = getattr(ev.data.get("dispatcher"), "_cache", None)
            if isinstance(cache, GuardedCache):
                cache.compile_ended(ev.data.get("args", ()))


_event.register("numba:compile", _FailedCompiles())


_quiet = {"depth": 0, "saved": None}


@contextlib.contextmanager
def _quiet_llvm_lock():
    """Numba times every LLVM call: llvmlite calls two Python callbacks around each (Numba's
    `numba:llvm_lock` event, for the compile timers in an overload's metadata). Loading a
    cached overload compiles nothing but makes thousands of LLVM calls (reading the symbols of
    its library back), and the callbacks were ~10% of a warm start's CPU (encoder train step:
    ~60 of ~600 ms); they are left out while loads run. The callback list is swapped under
    llvmlite's own lock taken without callbacks, so every LLVM call sees one list from its
    entry to its exit, and only the outermost of nested or concurrent loads restores it."""
    lock = getattr(getattr(_ffi, "lib", None), "_lock", None)
    raw = getattr(lock, "_lock", None)
    if raw is None or not isinstance(getattr(lock, "_cblist", None), list):
        yield  # another llvmlite: nothing to leave out
        return
    with raw:
        if _quiet["depth"] == 0:
            _quiet["saved"], lock._cblist = lock._cblist, []
        _quiet["depth"] += 1
    try:
        yield
    finally:
        with raw:
            _quiet["depth"] -= 1
            if _quiet["depth"] == 0:
                lock._cblist, _quiet["saved"] = _quiet["saved"], None


_said: set = set()


def log(msg: str) -> None:
    """One line in the compile log (JITORCH_LOG=compile) about the disk cache."""
    if log_enabled("compile"):
        print(f"jitorch: cache: {msg}", file=sys.stderr, flush=True)


def log_once(key, msg: str) -> None:
    if key not in _said:
        _said.add(key)
        log(msg)
