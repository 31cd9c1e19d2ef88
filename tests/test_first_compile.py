"""The first compile in a process (issue 17, script/kernels/numba_cache.py `compile_program`):
compiling jitorch's generated code runs none of Numba's extension entry points (rocket-fft,
whose import also imports scipy.fft), yet an FFT program compiles (it imports rocket_fft
itself) and a user's own Numba function afterwards still gets the entry points. One fresh
process with empty caches: the test process has run the entry points already."""
import json
import os
import subprocess
import sys

_CHILD = r"""
import json
import sys

import numpy as np

import jitorch
from numba.core import entrypoints


def gelu(x):
    return 0.5 * x * (1.0 + jitorch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def spectrum(x):
    return jitorch.fft.rfft(x).abs()


x = jitorch.from_numpy(np.linspace(-3, 3, 16, dtype=np.float32))
g = jitorch.jit.script(gelu)
got = g(x).numpy().tolist()
before = {"rocket_fft": "rocket_fft" in sys.modules, "scipy.fft": "scipy.fft" in sys.modules,
          "entry_points_ran": entrypoints._already_initialized}
s = jitorch.jit.script(spectrum)
sp = s(x).numpy().tolist()
import numba


@numba.njit
def user_fn(v):
    return v + 1


user_fn(1)  # a user's function: Numba runs the extension entry points before typing it
print(json.dumps({"gelu": got, "gelu_eager": gelu(x).numpy().tolist(), "spectrum": sp,
                  "spectrum_eager": spectrum(x).numpy().tolist(),
                  "compiled": [not f.code.startswith("# runs interpreted") for f in (g, s)],
                  "before": before, "user_fn_entry_points": entrypoints._already_initialized}))
"""


def test_generated_code_compiles_without_numbas_extension_entry_points(tmp_path):
    script = tmp_path / "child_first.py"
    script.write_text(_CHILD)
    env = dict(os.environ, JITORCH_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_CACHE_DIR=str(tmp_path / "numba"), JITORCH_COMPILE="sync")
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["compiled"] == [True, True]
    assert got["before"] == {"rocket_fft": False, "scipy.fft": False, "entry_points_ran": False}
    assert got["user_fn_entry_points"]
    # (compiled tanh is jitorch's float32 approximation: max abs error 3e-7)
    for key, tol in (("gelu", 1e-6), ("spectrum", 1e-5)):
        assert len(got[key]) == len(got[key + "_eager"])
        for a, b in zip(got[key], got[key + "_eager"]):
            assert abs(a - b) <= tol * max(1.0, abs(b)), key
