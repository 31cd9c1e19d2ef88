"""Helpers for the jitorch.distributed tests: run a small MPI job (the shared venv's mpiexec,
this interpreter, this tree's sources) from a subprocess with a hard timeout."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import jitorch
from jitorch.distributed import run as launcher

SRC = os.path.dirname(os.path.dirname(jitorch.__file__))
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
_OPEN_MPI = None  # whether MPIEXEC is Open MPI's, asked once


def mpiexec(n: int) -> list[str]:
    """`mpiexec -n n` with the launcher's flags for this venv's MPI (Open MPI's as root...)."""
    global _OPEN_MPI
    if _OPEN_MPI is None:
        _OPEN_MPI = launcher.detect_open_mpi(MPIEXEC)
    return [MPIEXEC, *launcher.mpiexec_flags(_OPEN_MPI, n), "-n", str(n)]


def env(**extra) -> dict:
    e = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RUN_ID", "JITORCH_RUN_MARKERS"):
        e.pop(k, None)
    e.update(extra)
    return e


def run(cmd, timeout: float = 90, extra_env=None, **kw) -> subprocess.CompletedProcess:
    """Run `cmd` (with `extra_env` added to its environment); a hang fails the test
    (subprocess.TimeoutExpired) instead of the suite."""
    return subprocess.run(cmd, env=env(**(extra_env or {})), capture_output=True, text=True,
                          timeout=timeout, **kw)


def mpi_job(tmp_path, source: str, n: int, *args, timeout: float = 90, name="job.py",
            extra_env=None):
    """`mpiexec -n n python <source as a file> args...` (`extra_env`: variables for every rank,
    e.g. JITORCH_CUDA_SIM=1 for the CUDA simulator)."""
    script = tmp_path / name
    script.write_text(source)
    return run([*mpiexec(n), sys.executable, str(script), *map(str, args)],
               timeout=timeout, extra_env=extra_env)


def ok_lines(p: subprocess.CompletedProcess) -> list[str]:
    """The `[OK ...]` marks the ranks printed, sorted, as "OK ..." (mpiexec merges the ranks'
    output in chunks, so two ranks' lines can arrive joined: marks are found, not lines)."""
    return sorted("OK" + m for m in re.findall(r"\[OK([^\]]*)\]", p.stdout))
