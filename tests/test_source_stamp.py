"""kernels/source_stamp.py: a library kernel's disk cache follows the files it takes code from
(an intrinsic's emitted IR), so editing such a file never serves stale machine code; and the
library modules that inline alloc.py's intrinsics are keyed on it."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest

DEP = """
from numba import types
from numba.extending import intrinsic

@intrinsic
def value(typingctx):
    def codegen(context, builder, sig, args):
        return context.get_constant(types.int64, {v})
    return types.int64(), codegen
"""
USER = """
import dep
from numba import njit
from jitorch.script.kernels import source_stamp

@njit(cache=True)
def f():
    return dep.value()

{follow}
print("VALUE", f())
"""


def _run(tmp_path, env):
    r = subprocess.run([sys.executable, str(tmp_path / "user.py")], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return int(r.stdout.split("VALUE")[1])


@pytest.mark.parametrize("follow", [True, False])
def test_an_edited_dependency_recompiles_only_when_followed(tmp_path, follow):
    (tmp_path / "user.py").write_text(USER.format(
        follow="source_stamp.follow(globals(), dep)" if follow else ""))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "nb"),
               PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    (tmp_path / "dep.py").write_text(DEP.format(v=11))
    assert _run(tmp_path, env) == 11
    (tmp_path / "dep.py").write_text(DEP.format(v=22))  # user.py itself is untouched
    # followed: the new value; Numba's own stamp (user.py's mtime and size) serves the stale 11
    assert _run(tmp_path, env) == (22 if follow else 11)


def test_the_kernel_libraries_follow_alloc():
    from jitorch.script.targets.cpu import alloc, blas, conv, pool
    with open(alloc.__file__, "rb") as f:
        tag = hashlib.sha256(hashlib.sha256(f.read()).hexdigest().encode()).hexdigest()[:16]
    for disp in (conv._forward_unit_stride, conv._grid_cols, pool.max_pool2d_forward,
                 blas.matmul2):
        stamp = disp._cache._cache_file._source_stamp
        assert isinstance(stamp, tuple) and stamp[-1] == tag, (disp, stamp)
