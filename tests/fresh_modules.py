"""`set_aside()`: the program modules this process has loaded are set aside, as in a fresh
process, and put back afterwards.

Why set aside: a test that needs a program compiled (or loaded from its own cache directory)
would otherwise reuse the copy another test of this process loaded, and compile nothing
(test_plan_cache.py, test_llvm_pipelines.py).

Why put back: the rest of the process still holds what it got from those modules (eager
softmax's table of entry points, other tests' ScriptFunctions, kernel symbols). Left cleared,
a later build loads a second copy of the same module, whose dispatcher and entry points are
other objects than the ones already held: tests that check that two tiers run one compiled
overload (test_tier_agreement.py) then fail for a reason no real process has.
"""
from __future__ import annotations

import contextlib
import sys

from jitorch.script.kernels import cache


@contextlib.contextmanager
def set_aside():
    saved = dict(cache._loaded)
    in_sys = {name: sys.modules[name] for name in saved if name in sys.modules}
    cache._loaded.clear()
    try:
        yield
    finally:
        # modules first loaded inside stay (complete, and their dispatchers are in use); a
        # module loaded again inside gives way to the instance the process had before
        cache._loaded.update(saved)
        sys.modules.update(in_sys)
