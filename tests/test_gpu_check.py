"""bench/gpu_check.py (issue 16): the GPU check's plumbing, on the CUDA simulator with tiny
sizes (`--sim --quick`: one test file of the cuda tier, then every workload and peer once), and
its clean exit where there is no GPU. Each runs the script in a fresh process, as CI would; the
simulator run (about 10 s) belongs to the cuda tier (`JITORCH_CUDA_SIM=1`)."""
import os
import pathlib
import subprocess
import sys

import pytest

import jitorch
from devices import DEVICES

ROOT = pathlib.Path(__file__).resolve().parent.parent
GPU = jitorch.cuda.is_available() and \
    not jitorch.cuda.get_device_name().startswith("jitorch CUDA simulator")


def _run(*args, sim_env: bool):
    env = {k: v for k, v in os.environ.items()
           if sim_env or k not in ("JITORCH_CUDA_SIM", "NUMBA_ENABLE_CUDASIM")}
    return subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("device", [d for d in DEVICES if d != "cpu"])  # the cuda tier only
def test_sim_quick_runs_the_tier_and_every_workload(device):
    r = _run("--sim", "--quick", sim_env=True)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "gpu_check: jitorch CUDA simulator" in out and "cuda tier: passed" in out
    rows = [ln for ln in out.splitlines() if ln.startswith("| ") and " | jitorch " in ln]
    for name in ("GELU (tanh)", "bias + relu", "layernorm + softmax", "MLP 784-256-256-10",
                 "TransformerEncoderLayer"):
        mine = [ln for ln in rows if ln.startswith(f"| {name}")]
        assert len(mine) == 2, (name, out)  # eager and scripted, each timed (no error note)
        assert all(ln.split(" | ")[2] not in ("-", "") for ln in mine), mine
    assert "PyTorch: not compared on the simulator." in out
    assert "the times measure the host" in out


@pytest.mark.skipif(GPU, reason="this machine has a GPU: the check would run for real")
def test_without_a_gpu_it_says_so_and_exits_cleanly():
    r = _run(sim_env=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "gpu_check: no GPU here" in r.stdout and "Nothing was run." in r.stdout
