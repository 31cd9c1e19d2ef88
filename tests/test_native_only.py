"""kernel_call.refuse_python_calls: the library's native-only functions (no CPython wrapper) raise
a TypeError naming them when Python calls them, where Numba jumped to a null entry point (a
segfault, in a subprocess here so that a regression fails the test instead of the run), and
still compile and run for native callers."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest


def test_a_python_call_of_a_native_only_library_function_raises():
    code = textwrap.dedent("""
        import numpy as np
        from jitorch.script.targets.cpu import alloc, conv, blas, overlap_lib
        x = np.ones((1, 1, 3, 3), np.float32)
        for call in (lambda: conv._forward_unit_stride(x, x, np.zeros(1, np.float32), False,
                                                       1, 1, 0, 0, 0, 0, 1, 1, 1),
                     lambda: alloc._fill_flat(np.zeros(3), 1.0),
                     lambda: conv._pad_into(x, 0, 0, 1, np.zeros((1, 3, 3), np.float32), 0, 0)):
            try:
                call()
            except TypeError as e:
                assert "called from compiled code only" in str(e), e
                print("REFUSED", str(e).split(" is ")[0])
            else:
                raise SystemExit("no error")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])  # -11: the segfault
    assert r.stdout.split() == ["REFUSED", "jitorch.script.targets.cpu.conv._forward_unit_stride",
                                "REFUSED", "jitorch.script.targets.cpu.alloc._fill_flat",
                                "REFUSED", "jitorch.script.targets.cpu.conv._pad_into"]


def test_native_callers_still_reach_them():
    from numba import njit
    from jitorch.script.targets.cpu import alloc

    @njit
    def ones(n):
        return alloc._jt_ones(n, np.float32)  # an njit helper with `_fill_flat` inside

    assert (ones(5) == 1).all()
    with pytest.raises(TypeError, match="_jt_ones is called from compiled code only"):
        alloc._jt_ones(5, np.float32)
