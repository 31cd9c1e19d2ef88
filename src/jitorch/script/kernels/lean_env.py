"""The environments of Numba's own library code in a loaded overload, without importing it.

A cached overload of a jitorch program or kernel carries the environments of the functions linked
into it, among them Numba's own library code (`numba.np.arrayobj`'s array allocation, ...), each
pickled as (module name, constants, name). Numba's `environment._rebuild_env` imports the module
to give the environment its globals; only object-mode code reads those (Numba's library is
nopython code, whose environment is read at run time for its constants only), and importing
numba.np.arrayobj was ~0.03 s of every warm start. While a thread loads overloads
(`loading_overloads`, numba_cache.GuardedCache), an environment of a `numba.*` module that is not
imported and holds no constants gets globals that name the module without importing it. Every
other environment, and any outside a load, is Numba's.
"""
from __future__ import annotations

import sys

from numba.core import environment as _environment

from .thread_mark import ThreadMark

_NUMBA_REBUILD_ENV = _environment._rebuild_env
_loading = ThreadMark()  # this thread is loading cached overloads


def _rebuild_env(modname, consts, env_name):
    """Numba's `environment._rebuild_env` (what a pickled Environment unpickles through),
    but see the module doc. A compile of that module's code in this process later gets this
    environment (Numba's memo, by name), as it would the imported module's."""
    if _loading.active and not consts and isinstance(modname, str) and \
            modname.startswith("numba.") and modname not in sys.modules and \
            _environment.lookup_environment(env_name) is None:
        env = _environment.Environment({"__name__": modname})
        env.env_name = env_name
        _environment.Environment._memo[env_name] = env
        return env
    return _NUMBA_REBUILD_ENV(modname, consts, env_name)


# (pickled by the name of Numba's: the files Numba writes stay Numba's)
_rebuild_env.__module__, _rebuild_env.__qualname__ = _NUMBA_REBUILD_ENV.__module__, \
    _NUMBA_REBUILD_ENV.__qualname__
_environment._rebuild_env = _rebuild_env


def loading_overloads() -> ThreadMark:
    """While this thread loads cached overloads (GuardedCache.load_overload)."""
    return _loading
