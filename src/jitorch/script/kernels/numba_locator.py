"""Numba's write test of a cache directory, made once per directory while program modules load.

Owns `module_loading()`, the context in which kernels/cache.py runs a generated module's code.
Numba decorates an njit function with `cache=True` by finding a cache locator for it, and a
locator is accepted only after `ensure_cache_path`: make the directory, then create and delete
a temp file in it to see that it is writable. A warm start decorates ~50-100 such functions
(the programs' entries and kernels), all in one directory, and on a slow file system each test
took ~0.3-2 ms (measured 2026-12-06: 64 decorations, 0.17 s of temp files, a large share of
loading the modules). Here, on the thread running a program module's code, the test is made
once per directory and process: a directory that passed is only made again if it went away
(`os.makedirs`). One that turns read-only later fails the save instead, which
numba_cache.GuardedCache.save_overload reports (the code stays in memory, as when the test
fails); one that fails the test is tested again next time. Every other decoration, and the test
before each save, is Numba's own.
"""
from __future__ import annotations

import os

from numba.core.caching import _CacheLocator

from .thread_mark import ThreadMark

_NUMBA_ENSURE_CACHE_PATH = _CacheLocator.ensure_cache_path
_writable: set = set()  # cache paths whose write test passed while a program module loaded
_loading = ThreadMark()  # this thread runs a program module's code


def _ensure_cache_path(locator):
    if not _loading.active:
        return _NUMBA_ENSURE_CACHE_PATH(locator)
    path = locator.get_cache_path()
    if path in _writable:
        os.makedirs(path, exist_ok=True)
        return None
    _NUMBA_ENSURE_CACHE_PATH(locator)
    _writable.add(path)
    return None


_CacheLocator.ensure_cache_path = _ensure_cache_path  # (the locator classes inherit it)


def module_loading() -> ThreadMark:
    """While a program module's code runs on this thread (cache._exec_module)."""
    return _loading
