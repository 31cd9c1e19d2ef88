"""The compiler: frontends (AST script, tracing) -> IR -> passes -> Numba programs.

`jitorch.script` is this package AND the `@script` decorator: the package's module object is
callable (its class is a ModuleType subclass with `__call__`), so `@jitorch.script`,
`from jitorch import script; script(fn)` and `jitorch.jit.script(fn)` are one function, while
`jitorch.script.ir`, `jitorch.script.passes`, ... stay importable submodules.
"""
from __future__ import annotations

import sys
import types


class _CallableModule(types.ModuleType):
    def __call__(self, obj=None, *args, **kwargs):
        from .api import script
        return script(obj, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
