"""The launcher `python -m jitorch.distributed.run`: torchrun's variables in each rank, a rank
that crashes once is restarted with the whole job and resumes from its checkpoint, and a rank
that leaves early with os._exit(0) (mpiexec then exits 0) still counts as a failure; the
mpiexec command lines of MPICH and Open MPI, checked against each one's `--version` output."""
import sys

import pytest

import jitorch
from jitorch.distributed import run as launcher
from dist_jobs import ok_lines, run

JOB = r'''
import os, sys
import jitorch
import jitorch.distributed as dist

ckpt, mode = sys.argv[1], sys.argv[2]
dist.init_process_group()
r = dist.get_rank()
env = {k: os.environ[k] for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                                  "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")}
assert env["RANK"] == str(r) and env["WORLD_SIZE"] == "2" and env["LOCAL_RANK"] == str(r)
assert env["LOCAL_WORLD_SIZE"] == "2" and env["GROUP_RANK"] == "0" and env["MASTER_ADDR"]
assert dist.is_torchelastic_launched() and __name__ == "__main__"
attempt = os.environ["TORCHELASTIC_RESTART_COUNT"]
start = int(open(ckpt).read()) if os.path.exists(ckpt) else 0  # resume from the checkpoint
for step in range(start, 4):
    t = jitorch.ones(1)
    dist.all_reduce(t)
    if r == 0:
        with open(ckpt, "w") as f:
            f.write(str(step + 1))
    dist.barrier()
    if mode == "crash" and step == 1 and attempt == "0" and r == 1:
        raise RuntimeError("rank 1 crashes once")
    if mode == "leave" and r == 1:
        os._exit(0)  # leaves without finishing: MPICH reports success
print(f"[OK {r} attempt {attempt} from step {start}]")
'''


def _launch(tmp_path, mode, restarts):
    script = tmp_path / "train.py"
    script.write_text(JOB)
    return run([sys.executable, "-m", "jitorch.distributed.run", "--nproc-per-node", "2",
                "--max-restarts", str(restarts), str(script), str(tmp_path / "ckpt"), mode])


def test_a_rank_that_crashes_once_restarts_the_job_from_its_checkpoint(tmp_path):
    p = _launch(tmp_path, "crash", 1)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "RuntimeError: rank 1 crashes once" in p.stderr
    assert "attempt 0 failed" in p.stderr and "restarting the job (1/1)" in p.stderr
    assert ok_lines(p) == ["OK 0 attempt 1 from step 2", "OK 1 attempt 1 from step 2"]


def test_a_rank_leaving_early_fails_the_job_though_mpiexec_exits_0(tmp_path):
    p = _launch(tmp_path, "leave", 0)
    assert p.returncode != 0
    assert "ranks [1] did not finish" in p.stderr or "ranks [0, 1] did not finish" in p.stderr


# what each implementation's `mpiexec --version` prints (the wheels' MPICH 5.0.2, Open MPI 5.0.11)
HYDRA_VERSION = "HYDRA build details:\n    Version:                                 5.0.2\n"
OPEN_MPI_VERSION = ("mpiexec (Open MPI) 5.0.11\n\n"
                    "Report bugs to https://www.open-mpi.org/community/help/\n")


def test_mpiexec_command_lines(tmp_path, monkeypatch):
    assert launcher.is_open_mpi(OPEN_MPI_VERSION) and not launcher.is_open_mpi(HYDRA_VERSION)
    args = launcher.parse_args(["--nproc-per-node", "2", "-m", "pkg.train", "--lr", "1"])
    cmd = launcher.command(args, "/v/bin/mpiexec", open_mpi=False)
    assert cmd == ["/v/bin/mpiexec", "-n", "2", sys.executable, "-m",
                   "jitorch.distributed._worker", "-m", "pkg.train", "--lr", "1"]
    # Open MPI: root needs a flag; more ranks than cores and no binding, as Hydra and torchrun
    for uid, root in ((0, ["--allow-run-as-root"]), (1000, [])):
        monkeypatch.setattr(launcher.os, "geteuid", lambda: uid)
        cmd = launcher.command(args, "mpiexec", open_mpi=True)
        assert cmd[:len(root) + 1] == ["mpiexec", *root]
        assert cmd[cmd.index("--map-by"):cmd.index("-n") + 2] == \
            ["--map-by", "ppr:2:node:OVERSUBSCRIBE", "--bind-to", "none", "-n", "2"]
        assert cmd[cmd.index("-x") + 1] == "JITORCH_RUN_MARKERS"
    # settings that are set reach other hosts' ranks (Hydra passes the whole environment)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    cmd = launcher.command(args, "mpiexec", open_mpi=True)
    forwarded = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-x"]
    assert {"NUMBA_NUM_THREADS", "OMP_NUM_THREADS"} <= set(forwarded)
    assert "MKL_NUM_THREADS" not in forwarded and "HOME" not in forwarded
    hosts = tmp_path / "hosts"
    hosts.write_text("node1:2\n# a comment\nnode2 slots=4  # Open MPI's syntax\n\nnode3\n")
    assert launcher.read_hostfile(str(hosts)) == ["node1", "node2", "node3"]
    assert launcher.hostfile_text(["a", "b"], 2, open_mpi=False) == "a:2\nb:2\n"
    assert launcher.hostfile_text(["a", "b"], 2, open_mpi=True) == "a slots=2\nb slots=2\n"
    args = launcher.parse_args(["--nproc-per-node", "2", "--hostfile", str(hosts), "t.py"])
    assert launcher.command(args, "mpiexec", False, "hf")[:7] == \
        ["mpiexec", "-f", "hf", "-ppn", "2", "-n", "6"]
    ompi = launcher.command(args, "mpiexec", True, "hf")
    assert ["--hostfile", "hf", "--map-by", "ppr:2:node:OVERSUBSCRIBE"] == \
        ompi[ompi.index("--hostfile"):ompi.index("--map-by") + 2]


FAKE_MPIEXEC = r"""#!/bin/sh
if [ "$1" = "--version" ]; then printf '%s' "$JITORCH_FAKE_VERSION"; exit 0; fi
d=$(dirname "$0")
printf '%s\n' "$@" > "$d/argv"
while [ $# -gt 0 ]; do
  case "$1" in --hostfile|-f) cat "$2" > "$d/hostfile.seen";; esac
  shift
done
"""


@pytest.mark.parametrize("version", [HYDRA_VERSION, OPEN_MPI_VERSION], ids=["mpich", "openmpi"])
def test_the_launcher_reads_the_implementation_and_writes_its_hostfile(tmp_path, monkeypatch,
                                                                       version):
    """The whole launcher against a fake mpiexec that prints the real `--version` of each MPI
    and records what it was given (no rank runs, so the job fails for want of markers)."""
    fake = tmp_path / "mpiexec"
    fake.write_text(FAKE_MPIEXEC)
    fake.chmod(0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("node1:8\nnode2 slots=8\n")
    monkeypatch.setenv("JITORCH_FAKE_VERSION", version)
    monkeypatch.setattr(launcher.signal, "signal", lambda *a: None)  # leave pytest's SIGTERM
    rc = launcher.main(["--mpiexec", str(fake), "--nproc-per-node", "3", "--hostfile",
                        str(hosts), "--monitor-interval", "0.01", "train.py", "--lr", "1"])
    assert rc == 1  # mpiexec exited 0, but no rank left its success marker
    argv = (tmp_path / "argv").read_text().split("\n")[:-1]
    assert argv[argv.index("-n"):] == ["-n", "6", sys.executable, "-m",
                                       "jitorch.distributed._worker", "train.py", "--lr", "1"]
    seen = (tmp_path / "hostfile.seen").read_text()
    if version is OPEN_MPI_VERSION:
        assert seen == "node1 slots=3\nnode2 slots=3\n"
        assert {"--hostfile", "--bind-to", "ppr:3:node:OVERSUBSCRIBE"} <= set(argv)
    else:
        assert seen == "node1:3\nnode2:3\n"
        assert argv[argv.index("-ppn") + 1] == "3" and "--bind-to" not in argv


def test_ddp_example_trains_on_two_ranks(tmp_path):
    example = launcher.__file__.rsplit("/src/", 1)[0] + "/examples/ddp_train.py"
    ckpt = tmp_path / "ckpt"
    cmd = [sys.executable, "-m", "jitorch.distributed.run", "--nproc-per-node", "2", example,
           "--points", "256", "--checkpoint", str(ckpt)]
    p = run(cmd + ["--epochs", "2"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 rank(s): accuracy" in p.stdout and "the replicas agree" in p.stdout
    assert sorted(jitorch.load(ckpt)) == ["epoch", "model", "opt"]
