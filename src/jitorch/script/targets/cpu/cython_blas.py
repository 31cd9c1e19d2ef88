"""SciPy's `scipy.linalg.cython_blas` for Numba's BLAS helpers, without importing `scipy.linalg`.

Owns `preload()`. Numba's C helpers behind `np.dot` and BLAS calls in compiled code
(`numba_xxgemm`, `numba_xxgemv`: the BLAS path of blas.py) find each BLAS function the first
time it is called, by importing `scipy.linalg.cython_blas` and reading its `__pyx_capi__`.
Imported the normal way, that module's package runs first: `scipy/linalg/__init__.py` imports
all of scipy.linalg (~0.06-0.08 of the ~0.5-0.6 CPU-s in which a warm process serves an encoder
or LSTM train step, bench/compile_time.py "warm"; the extension module alone: ~3 ms). The
extension needs nothing of its package, so `preload` loads it alone from its file and
registers it in `sys.modules` under its full name, where Numba's import finds it.

Nothing else changes: a later `import scipy.linalg` (by the program, or by jitorch's linear
algebra) runs the package as before, and its own imports of `cython_blas` get the same
module from `sys.modules`; since the import system sets a package's attribute for a
submodule only when it loads that submodule itself, a one-shot finder (`_AttachOnImport`)
sets `scipy.linalg.cython_blas` once the package has run. Where anything is not as expected
(scipy.linalg or the module already imported, no such file, scipy not installed) `preload`
does nothing and the normal import happens when Numba asks.
"""
from __future__ import annotations

import importlib.machinery
import importlib.util
import sys

_PACKAGE = "scipy.linalg"
_NAME = _PACKAGE + ".cython_blas"


class _AttachOnImport:
    """A meta path finder that finds nothing: when `scipy.linalg` is first imported, it makes
    the package's loader set the package's `cython_blas` attribute after the package ran,
    then removes itself."""

    def find_spec(self, name, path=None, target=None):
        if name != _PACKAGE:
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:  # (another thread's import got here first)
            return None
        spec = importlib.util.find_spec(name)  # (the other finders: this one is gone)
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module):
            try:
                run(module)
            finally:
                del loader.exec_module  # (the loader's own method again)
            sub = sys.modules.get(_NAME)
            if sub is not None and not hasattr(module, "cython_blas"):
                module.cython_blas = sub

        loader.exec_module = exec_module
        return spec


def preload() -> None:
    """Load `scipy.linalg.cython_blas` alone when neither it nor its package is imported yet
    (see the module doc); never raises."""
    if _NAME in sys.modules or _PACKAGE in sys.modules:
        return
    try:
        # (where SciPy is, without importing its package: a program that never multiplies
        # matrices need not pay for it)
        scipy = importlib.util.find_spec("scipy")
        loaders = (importlib.machinery.ExtensionFileLoader,
                   importlib.machinery.EXTENSION_SUFFIXES)
        spec = None
        for d in getattr(scipy, "submodule_search_locations", None) or ():
            spec = importlib.machinery.FileFinder(d + "/linalg", loaders).find_spec(_NAME)
            if spec is not None:
                break
        if spec is None:
            return
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_NAME] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[_NAME]
            raise
    except Exception:  # noqa: BLE001 - the normal import happens when Numba asks
        return
    sys.meta_path.insert(0, _AttachOnImport())
