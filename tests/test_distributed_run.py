"""The launcher `python -m jitorch.distributed.run`: torchrun's variables in each rank, a rank
that crashes once is restarted with the whole job and resumes from its checkpoint, and a rank
that leaves early with os._exit(0) (mpiexec then exits 0) still counts as a failure."""
import sys

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


def test_mpiexec_command_lines(tmp_path):
    args = launcher.parse_args(["--nproc-per-node", "2", "-m", "pkg.train", "--lr", "1"])
    cmd = launcher.command(args, "/v/bin/mpiexec", open_mpi=False)
    assert cmd == ["/v/bin/mpiexec", "-n", "2", sys.executable, "-m",
                   "jitorch.distributed._worker", "-m", "pkg.train", "--lr", "1"]
    hosts = tmp_path / "hosts"
    hosts.write_text("node1:2\n# a comment\nnode2:2\n")
    args = launcher.parse_args(["--nproc-per-node", "2", "--hostfile", str(hosts), "t.py"])
    assert launcher.command(args, "mpiexec", open_mpi=False)[:7] == \
        ["mpiexec", "-f", str(hosts), "-ppn", "2", "-n", "4"]
    ompi = launcher.command(args, "mpiexec", open_mpi=True)
    assert ["--hostfile", str(hosts), "--map-by", "ppr:2:node", "-n", "4"] == \
        ompi[ompi.index("--hostfile"):ompi.index("-n") + 2]


def test_ddp_example_trains_on_two_ranks(tmp_path):
    example = launcher.__file__.rsplit("/src/", 1)[0] + "/examples/ddp_train.py"
    ckpt = tmp_path / "ckpt"
    cmd = [sys.executable, "-m", "jitorch.distributed.run", "--nproc-per-node", "2", example,
           "--points", "256", "--checkpoint", str(ckpt)]
    p = run(cmd + ["--epochs", "2"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 rank(s): accuracy" in p.stdout and "the replicas agree" in p.stdout
    assert sorted(jitorch.load(ckpt)) == ["epoch", "model", "opt"]
