"""How a program's entry calls its kernels: through a symbol, not by linking them in.

Owns `caller(module, nargs)`: the `@intrinsic` that a generated entry uses for `_kX(a, b, ...)`. Typing it compiles (or loads from Numba's disk cache)
the kernel module's `kernel` dispatcher for those argument types, registers the compiled
function's address with LLVM under a stable symbol `jitorch_k_<module>_<types hash>`, and the
entry's code calls that symbol with Numba's own calling convention (status and exception
propagation included, so a kernel's `raise` reaches the caller as it would from a linked call).

Why not a plain call of the kernel's dispatcher: Numba links every callee's LLVM module into the
caller and optimises and emits machine code for the whole again, so an entry calling 80 cached
kernels compiled in 3.1 s, nearly all of it LLVM on code that was already compiled; through
symbols the same entry compiles in 0.5 s and runs at the same speed (measured in
NUMBA_NOTES.md's "Compile cost at model scale" setting; bench/compile_time.py has jitorch's
figures). The price: no inlining across a kernel boundary (a kernel is a loop nest; a call costs
~5 ns).

Entries are cached on disk too, and a cached entry's machine code refers to its kernels by
symbol: loading one whose symbols are not registered would call a null address. So an entry
overload is saved with the list of symbols it calls (`symbols_of`, read from its LLVM IR), and
loaded only after `ensure(symbol)` succeeded for each (the kernel's overload for those types
loaded from its own disk cache, or the entry is compiled afresh: numba_cache.EntryCache).

Library code the same way (`library(dispatcher, canonical)`): a jitorch library function that
generated code reaches (targets/cpu/blas.py's entry points and float path, overlap_lib.py's
shared-memory check) is called through a symbol `jitorch_l_<library id>_<types hash>` instead of
being linked in, compiled for `canonical` argument types where given (arrays of any layout as
'A': one overload serves every layout). Why: a linked callee's LLVM
module is optimised and turned into machine code again inside every caller, and once more for
every layout of its thin typed wrappers; on an MLP train step the matrix product kernels cost
6.6 CPU-s that way, of which one compile of the library per dtype is ~1.4 s. Through a symbol
the library is compiled once per signature and process (and cached on disk: it must be
`cache=True`), and what links it is a call. Code that calls a library symbol is cached only by
an `EntryCache` (a generated module's functions), so it is never loaded before the symbol is.
"""
from __future__ import annotations

import hashlib
import re
import sys
import time
from types import MethodType

from llvmlite import binding as _llb
from numba import types
from numba.core import cgutils
from numba.core.dispatcher import Dispatcher
from numba.extending import intrinsic

from ... import _fork
from .log import log_enabled
from .numba_cache import compile_program

# re-entrant: binding a kernel compiles it, and its typing may bind a library function
_lock = _fork.rlock()
_bound: dict = {}  # (module or library id, argument types) -> (symbol, return type)
_libraries: dict = {}  # library id -> the dispatcher `library()` made callable by symbol
# what the kernels of this process came from: "compiled", "disk" (Numba's cache) and "memory"
# (an overload this process had already: a kernel shared by two call sites or programs)
counts = {"compiled": 0, "disk": 0, "memory": 0}
library_counts = {"compiled": 0, "disk": 0, "memory": 0}  # the same, of library functions

# njit options of a function that only native code calls (through a symbol here, or linked into
# other njit code), never Python nor a C callback: no CPython wrapper (unboxing each argument,
# boxing the result) and no cfunc wrapper, each of which Numba otherwise types, lowers and
# turns into machine code per overload for nothing (bench/compile_profile.py). Such a
# dispatcher compiles and loads from disk as before; its Python entry point is null.
NATIVE_ONLY = dict(no_cpython_wrapper=True, no_cfunc_wrapper=True)


def refuse_python_calls(namespace: dict) -> None:
    """Make a Python call of a NATIVE_ONLY dispatcher defined in `namespace` (a module's
    `globals()`, at its end) raise TypeError naming it. Its Python entry point is null: Numba
    enters it in the dispatcher's table like any overload, and a Python call jumped to address 0
    (a segfault). Here its overloads are recorded but not entered, so every Python call misses
    the table and reaches `_compile_for_args`, which raises; native callers (typing, linking,
    symbols) read `overloads` and see no difference."""
    for v in list(namespace.values()):
        if isinstance(v, Dispatcher) and v.targetoptions.get("no_cpython_wrapper") and \
                getattr(v.py_func, "__module__", None) == namespace.get("__name__"):
            v.add_overload = MethodType(_record_overload, v)
            v._compile_for_args = MethodType(_refuse_python_call, v)


def _record_overload(disp, cres) -> None:
    disp.overloads[tuple(cres.signature.args)] = cres


def _refuse_python_call(disp, *args, **kwargs):
    f = disp.py_func
    raise TypeError(f"{f.__module__}.{f.__qualname__} is called from compiled code only (it "
                    "has no Python entry point)")


def _bind(module: str, argtys: tuple):
    """(symbol, return type) of `module`'s kernel compiled for `argtys`."""
    key = (module, argtys)
    got = _bound.get(key)
    if got is not None:
        counts["memory"] += 1
        return got
    with _lock:
        got = _bound.get(key)
        if got is not None:
            return got
        # loaded before the entry (cache.load_program); or, in a process given only the entry
        # (the compile worker), loaded now from the cache directory
        from . import cache
        mod = cache.load_named(module)
        if mod is None:
            raise RuntimeError(f"kernel module {module} is not in the cache directory")
        got = _bound[key] = _register(mod.kernel, argtys, f"jitorch_k_{module}_{_tag(argtys)}",
                                      counts, f"kernel {module}")
        return got


def _bind_library(ident: str, argtys: tuple):
    """(symbol, return type) of library function `ident` (library()) compiled for `argtys`."""
    key = (ident, argtys)
    got = _bound.get(key)
    if got is not None:
        library_counts["memory"] += 1
        return got
    with _lock:
        got = _bound.get(key)
        if got is None:
            disp = _libraries[ident]
            got = _bound[key] = _register(
                disp, argtys, f"jitorch_l_{ident}_{_tag(argtys)}", library_counts,
                f"library {disp.py_func.__module__}.{disp.py_func.__qualname__}")
        return got


def _register(disp, argtys: tuple, symbol: str, tally: dict, what: str):
    """Compile (or load from its disk cache) `disp` for `argtys` and give the machine code's
    address the name `symbol`; -> (symbol, return type)."""
    st = disp.stats
    hits = sum(st.cache_hits.values())
    t0 = time.process_time()
    compile_program(disp, argtys)
    how = "disk" if sum(st.cache_hits.values()) > hits else "compiled"
    tally[how] += 1
    _log(what, how, time.process_time() - t0)
    cres = disp.overloads[argtys]
    addr = cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
    _llb.add_symbol(symbol, addr)
    return symbol, cres.signature.return_type


def _log(what: str, how: str, cpu_s: float) -> None:
    if log_enabled("compile"):
        print(f"jitorch: {what}: {'compiled' if how == 'compiled' else 'loaded'} in "
              f"{cpu_s * 1e3:.0f} ms CPU", file=sys.stderr, flush=True)


def forget(module: str) -> None:
    """Drop the bindings of `module`'s kernel (the compile worker reloads a module from another
    cache directory: its kernels must be compiled, and cached, there)."""
    with _lock:
        for key in [k for k in _bound if k[0] == module]:
            del _bound[key]


_SYMBOL = re.compile(r"jitorch_k_(_jitorch_prog_[0-9a-f]{24})_([0-9a-f]{16})")
_LIB_SYMBOL = re.compile(r"jitorch_l_([0-9a-f]{16})_([0-9a-f]{16})")
_ANY_SYMBOL = re.compile(f"{_SYMBOL.pattern}|{_LIB_SYMBOL.pattern}")


def _tag(argtys) -> str:
    return hashlib.sha256(str(argtys).encode()).hexdigest()[:16]


def symbols_of(llvm_ir: str) -> list:
    """The kernel and library symbols an entry's (or a kernel's) LLVM IR calls."""
    return sorted({m.group(0) for m in _ANY_SYMBOL.finditer(llvm_ir)})


def ensure(symbol: str) -> bool:
    """Register `symbol` (a kernel or library overload) from its disk cache if this process
    does not have it yet; False when that is not possible (the kernel's module is not loaded,
    the library not imported, or its cache holds no overload for those types)."""
    if any(s == symbol for s, _ in _bound.values()):
        return True
    m = _SYMBOL.fullmatch(symbol)
    if m is not None:
        module, tag = m.groups()
        from . import cache
        disp = getattr(cache.load_named(module), "kernel", None)
        bind = lambda sig: _bind(module, sig)  # noqa: E731
    else:
        m = _LIB_SYMBOL.fullmatch(symbol)
        if m is None:
            return False
        ident, tag = m.groups()
        disp = _libraries.get(ident)  # (imported by the module that calls it)
        bind = lambda sig: _bind_library(ident, sig)  # noqa: E731
    try:
        magic = _magic_tuple()
        index = disp._cache._cache_file._load_index()
        sigs = [tuple(k[0]) for k in index if k[1] == magic]
    except Exception:  # noqa: BLE001 - no cache, a damaged index: not available
        return False
    for sig in sigs:
        if _tag(sig) == tag:
            try:
                return bind(sig)[0] == symbol
            except Exception:  # noqa: BLE001 - it cannot be had: compile the caller
                return False
    return False


def _magic_tuple():
    """Numba's (triple, CPU name, CPU features) of this host: asked of LLVM once per process
    (numba_cache.magic_tuple), and a warm start asks once per kernel it loads."""
    from numba.core.registry import cpu_target
    from .numba_cache import magic_tuple
    return magic_tuple(cpu_target.target_context.codegen())


def library(disp, canonical=None):
    """An intrinsic that njit code calls as it would call `disp` (a jitorch library njit
    dispatcher with `cache=True`), through a symbol: `disp` is compiled once per argument
    types and process, never linked into (and optimised again inside) its callers. The
    library's id names its module, function and the module file's content, so a changed
    library never matches a cached caller's symbol (the caller is compiled again).
    `canonical(argument types) -> argument types` may map the caller's types to ones with the
    same data model that `disp` is compiled for instead (an array of any layout as 'A': one
    compile serves every layout, where the library reads strides at run time anyway).
    The intrinsic's `typing(argument types) -> (signature, codegen)` is its typing, for
    another intrinsic whose codegen calls the library in place (blas.py's `_kernel`): Numba
    keeps an intrinsic's own typing function private."""
    import inspect
    py = disp.py_func
    try:
        with open(inspect.getsourcefile(py), "rb") as f:
            content = hashlib.sha256(f.read()).hexdigest()
    except (OSError, TypeError):
        content = "?"
    ident = hashlib.sha256(f"{py.__module__}.{py.__qualname__}:{content}".encode()) \
        .hexdigest()[:16]
    _libraries[ident] = disp
    from .cache_guards import guard_dispatcher
    guard_dispatcher(disp)
    n = len(inspect.signature(py).parameters)
    params = ", ".join(f"a{i}" for i in range(n))
    ns: dict = {}

    def typing(*args):
        return _typer_by(lambda tys: _bind_library(ident, tys), args, canonical)
    exec(f"def call_library(typingctx{', ' if n else ''}{params}):\n"
         f"    return _typing({params})\n", {"_typing": typing}, ns)
    fn = intrinsic(ns["call_library"])
    fn.library_id = ident
    fn.typing = typing
    return fn


def caller(module: str, nargs: int):
    """The intrinsic through which an entry calls `module`'s kernel (of `nargs` arguments).
    Positional arguments, not one tuple: a tuple's packing and its references cost Numba's
    passes ~1.7x more per call site (measured on an entry of 200 calls)."""
    params = ", ".join(f"a{i}" for i in range(nargs))
    ns: dict = {}
    exec(f"def call_kernel(typingctx{', ' if nargs else ''}{params}):\n"
         f"    return _typer(({params}{',' if nargs == 1 else ''}))\n",
         {"_typer": lambda args: _typer(module, args)}, ns)
    return intrinsic(ns["call_kernel"])


def _typer(module: str, args: tuple):
    return _typer_by(lambda tys: _bind(module, tys), args)


def _typer_by(bind, args: tuple, canonical=None):
    """The typing of a call through a symbol: `bind(argument types)` -> (symbol, return type)
    compiles the callee (for `canonical(types)` when given: types of the same data model, so
    the caller's values are passed as they are); the codegen calls the symbol with Numba's
    calling convention."""
    argtys = tuple(types.unliteral(t) for t in args)
    if canonical is not None:
        argtys = canonical(argtys)
    symbol, ret = bind(argtys)

    def codegen(context, builder, sig, llargs):
        fnty = context.call_conv.get_function_type(ret, argtys)
        fn = cgutils.get_or_insert_function(builder.module, fnty, symbol)
        status, res = context.call_conv.call_function(builder, fn, ret, argtys, list(llargs))
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return res

    return ret(*args), codegen
