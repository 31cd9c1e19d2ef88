"""The CUDA simulator tier, run from the ordinary test command (docs/cuda.md, "Running the CUDA
tiers").

The device-generic test files run once more in a fresh pytest process started with
`JITORCH_CUDA_SIM=1`: "cuda" is then Numba's CUDA simulator with NumPy standing in for device
memory, and `-k cuda` picks the tests parametrised on it (the cpu cases already ran here). The
simulator has to be chosen before Numba is imported, hence the process. The compile tiers of the
CUDA target (sim and ptx) are tests/test_cuda_target.py's.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

# the files whose tests take the `device`/`cuda` fixtures or claim cuda in the OpInfo table
SIM_TIER_FILES = ("test_device.py", "test_ops_generic.py", "test_dlpack.py",
                  "test_device_multi.py", "test_autocast_cuda.py", "test_examples.py",
                  "test_gpu_check.py", "test_script_factory_device.py", "test_cuda_programs.py",
                  "test_cuda_reduce.py", "test_cuda_rows.py")


@pytest.mark.first  # (conftest.py)
def test_cuda_simulator_tier_passes():
    env = dict(os.environ, JITORCH_CUDA_SIM="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # this jitorch, as seen here
    # (-k cuda also matches the files named cuda: their cpu cases ran here, conftest.py's
    # --no-cpu-cases leaves them out)
    cmd = [sys.executable, "-m", "pytest", *[os.path.join(HERE, f) for f in SIM_TIER_FILES],
           "-k", "cuda", "--no-cpu-cases", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=os.path.dirname(HERE),
                       timeout=900)
    out = r.stdout + r.stderr
    summary = [ln for ln in out.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    print("\ncuda simulator tier: " + (summary[-1] if summary else "no summary"))
    assert r.returncode == 0, f"the simulator tier failed:\n{out[-6000:]}"
    assert "jitorch devices under test: cpu, cuda (simulator)" in out, out[-2000:]
    passed = re.search(r"(\d+) passed", summary[-1]) if summary else None
    assert passed and int(passed.group(1)) > 0 and "failed" not in summary[-1], out[-2000:]
