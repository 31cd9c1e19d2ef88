"""The garbage collector's thresholds while Numba compiles jitorch's code (kernels/compile_gc.py):
raised for the outermost compile of a jitorch dispatcher, the caller's restored after it, also
when the compile fails; other Numba code is compiled under the caller's thresholds."""
import gc

import numba
import pytest
from numba.core import types
from numba.core.errors import TypingError
from numba.extending import intrinsic

import jitorch.script.kernels.numba_cache  # noqa: F401 - installs the listener
from jitorch.script.kernels import compile_gc

seen = []


def _njit_in(module: str):
    """An njit function of `module` that records the collector's thresholds while it is typed
    (a fresh intrinsic each time: Numba caches an intrinsic's typing per argument types)."""
    @intrinsic
    def _probe(typingctx, x):
        seen.append(gc.get_threshold())
        if isinstance(x, types.Float):
            raise TypingError("probe: no floats")

        def codegen(context, builder, sig, args):
            return args[0]
        return x(x), codegen

    ns = {"__name__": module, "_probe": _probe}
    exec("def f(x):\n    return _probe(x)\n", ns)
    return numba.njit(ns["f"])


@pytest.fixture
def thresholds():
    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    seen.clear()
    yield
    gc.set_threshold(*old)


def test_raised_during_a_jitorch_compile_and_restored(thresholds):
    f = _njit_in("jitorch._gc_probe_a")
    assert f(3) == 3
    assert seen == [compile_gc.RAISED]
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_when_the_compile_fails(thresholds):
    f = _njit_in("jitorch._gc_probe_b")
    with pytest.raises(TypingError):
        f(1.5)
    assert seen and all(s == compile_gc.RAISED for s in seen)
    assert gc.get_threshold() == (700, 10, 10)
    assert f(2) == 2  # (and a later compile works as before)


def test_other_code_keeps_the_callers_thresholds(thresholds):
    f = _njit_in("user_code_gc_probe")
    assert f(4) == 4
    assert seen == [(700, 10, 10)]
