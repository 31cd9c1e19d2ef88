"""`import jitorch` leaves heavy dependencies unimported until a feature needs them (issue 17:
a warm process serves compiled code soon after import; ml_dtypes alone was half of the import).
Each check runs in a fresh interpreter: the test process has imported everything already."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

import jitorch as jt
from jitorch import _dtype as dt

HEAVY = ("ml_dtypes", "numba", "scipy.linalg", "scipy.sparse", "scipy.special")


def _fresh(code: str) -> dict:
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_leaves_heavy_dependencies_unimported():
    # scipy.special (~25% of the import) comes with the first op that calls it
    got = _fresh("import sys, json, jitorch\n"
                 f"before = [m for m in {HEAVY!r} if m in sys.modules]\n"
                 "v = float(jitorch.erf(jitorch.tensor(0.5)))\n"
                 "print(json.dumps([before, 'scipy.special' in sys.modules, round(v, 6)]))")
    assert got == [[], True, 0.5205]


def test_bfloat16_loads_its_numpy_type_on_first_use():
    # an ml_dtypes array made by the caller after `import jitorch` converts; eager bfloat16
    # math and finfo work; a half check of a float32 array did not import ml_dtypes
    got = _fresh(
        "import sys, json, numpy as np, jitorch as jt\n"
        "from jitorch import _dtype as dt\n"
        "half = dt.is_half_np(np.dtype(np.float32))\n"
        "before = 'ml_dtypes' in sys.modules\n"
        "import ml_dtypes\n"
        "t = jt.from_numpy(np.array([1.5, 2.0], dtype=ml_dtypes.bfloat16))\n"
        "s = (t * 2).sum()\n"
        "print(json.dumps([half, before, str(t.dtype), float(s), s.dtype is jt.bfloat16,\n"
        "                  jt.finfo(jt.bfloat16).eps, dt.is_half_np(t.numpy().dtype)]))")
    assert got == [False, False, "jitorch.bfloat16", 7.0, True, 0.0078125, True]


def test_half_checks():
    assert dt.is_half_np(np.dtype(np.float16))
    assert dt.is_half_np(jt.ones(2, dtype=jt.bfloat16).numpy().dtype)
    assert dt.is_bfloat16_np(dt.bfloat16.np)
    assert not dt.is_bfloat16_np(np.dtype(np.float16))
    assert not dt.is_half_np(np.dtype(np.float32))
    assert dt.from_numpy_dtype(dt.bfloat16.np) is jt.bfloat16
    assert jt.ones(3, dtype=jt.bfloat16).sum().item() == 3.0
