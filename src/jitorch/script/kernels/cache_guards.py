"""Which Numba dispatchers get jitorch's checked disk cache (numba_cache.GuardedCache /
EntryCache) instead of Numba's plain FunctionCache, and of which kind.

Owns `guard(module)` (a program module's functions and the jitorch library functions it
imports), `guard_dispatcher(disp)` (a library function code calls through a symbol,
kernel_call.library), `guard_eager(module)` / `guard_eager_dispatcher(disp)` (jitorch's eager
kernels: the random transforms, pooling, sums) and, behind the first two, the other
`cache=True` functions of a guarded function's library module (its direct callees, compiled as
Numba functions of their own). A guarded cache checks what it loads and compiles under the
function's cross-process lock (compile_lock.py); user functions are left alone.
"""
from __future__ import annotations

import sys

from numba.core.caching import FunctionCache
from numba.core.dispatcher import Dispatcher

from .array_types import eager_typeof
from .numba_cache import EntryCache, GuardedCache


def _no_entry_points() -> None:
    """The compilation-chain hook of jitorch's eager kernels (`guard_eager`)."""


def guard(module) -> None:
    """Give each Numba dispatcher of `module` a GuardedCache instead of Numba's FunctionCache:
    sealed files for the module's own functions (a program module is only ever loaded by
    cache.load_module, so nothing else reads its files); Numba's file format for the jitorch
    kernels it imports (eager code loads those through Numba's own cache too), which still get
    the identity check and drop-and-recompile. User functions are left alone."""
    for v in list(vars(module).values()):
        if not isinstance(v, Dispatcher) or type(getattr(v, "_cache", None)) is not FunctionCache:
            continue
        owner = getattr(v.py_func, "__module__", "") or ""
        if owner != module.__name__ and not owner.startswith("jitorch."):
            continue
        # the module's own functions may call kernels or library code through symbols
        # (kernel_call.py), directly or inside a library function linked into them
        own = owner == module.__name__
        try:
            v._cache = (EntryCache if own else GuardedCache).replacing(v._cache, sealed=own)
        except Exception:  # noqa: BLE001 - no usable cache location: Numba's own stays
            pass
        if not own:
            _guard_library_module(owner)


_guarded_libraries: set = set()


def _guard_library_module(name: str) -> None:
    """An EntryCache (Numba's file format) for every `cache=True` function of jitorch library
    module `name` that has Numba's plain cache still: the helpers that a guarded library
    function calls directly (conv.py's `_im2col`, alloc.py's `_fill_flat`) are compiled as
    its callees, and should load checked and compile under their own cross-process lock
    (compile_lock.py) like it. EntryCache, the strictest: a helper that calls a symbol loads
    only once the symbol is registered, and `guard_dispatcher` finds nothing to change later."""
    if name in _guarded_libraries:
        return
    _guarded_libraries.add(name)
    mod = sys.modules.get(name)
    for v in list(vars(mod).values()) if mod is not None else ():
        if isinstance(v, Dispatcher) and type(getattr(v, "_cache", None)) is FunctionCache \
                and getattr(v.py_func, "__module__", None) == name:
            try:
                v._cache = EntryCache.replacing(v._cache, sealed=False)
            except Exception:  # noqa: BLE001 - no usable cache location: Numba's own stays
                pass


def guard_dispatcher(disp) -> None:
    """An EntryCache (Numba's file format) for a jitorch library dispatcher that code calls
    through a symbol (kernel_call.library): a damaged file is dropped and compiled again, and
    a library function that itself calls symbols is loaded only once they are registered."""
    # (a GuardedCache too: `guard` gives one to a library function a program module imports,
    # which does not check the symbols the function's machine code calls before loading it)
    if type(getattr(disp, "_cache", None)) in (FunctionCache, GuardedCache):
        try:
            disp._cache = EntryCache.replacing(disp._cache, sealed=False)
        except Exception:  # noqa: BLE001 - no usable cache location: the cache stays
            pass
    owner = getattr(disp.py_func, "__module__", "") or ""
    if owner.startswith("jitorch."):
        _guard_library_module(owner)


def guard_eager(module) -> None:
    """For the `cache=True` njit functions that `module` (jitorch's eager kernels: the
    random transforms, pooling) defines: a GuardedCache in Numba's
    file format (checked, lean loads that run no extension entry points), and Numba's
    compilation-chain hook, which runs the entry points before typing the arguments, left out:
    these are typed from NumPy arrays and scalars, which need no extension, and a compile runs
    the entry points itself (Numba's compiler refreshes the target context first)."""
    for v in list(vars(module).values()):
        if isinstance(v, Dispatcher) and getattr(v.py_func, "__module__", None) == \
                module.__name__:
            guard_eager_dispatcher(v)


def guard_eager_dispatcher(disp) -> None:
    if type(getattr(disp, "_cache", None)) is FunctionCache:
        try:
            disp._cache = GuardedCache.replacing(disp._cache, sealed=False)
        except Exception:  # noqa: BLE001 - no usable cache location: Numba's own stays
            return
    if isinstance(disp._cache, GuardedCache):
        disp._compilation_chain_init_hook = _no_entry_points
    eager_typeof(disp)  # (plain arrays typed without importing numpy.ma)
