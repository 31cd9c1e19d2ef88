"""jitorch.distributed on MPI (issue 18, "Measure"): all-reduce through `dist.all_reduce`
against raw mpi4py buffer calls on the same arrays, and a DDP train step on N ranks vs 1.

1. All-reduce of float32 tensors from 4 KB to 64 MB, in place: `dist.all_reduce(t)` (a
   nonblocking Iallreduce completed by jitorch's deadline-checked Test loop) and mpi4py's
   blocking `Allreduce(IN_PLACE, a)` on `t`'s own array, interleaved, median per call over
   rounds; bus bandwidth = 2 (n - 1) / n * bytes / time (NCCL-tests' definition).
2. DDP: the MLP of bench/mlp.py's size (784-256-256-10, SGD) trained on a fixed global batch,
   split over the ranks; microseconds per sample of the whole step (forward, backward with the
   bucketed all-reduces, optimizer step), with the all-reduces overlapping backward (the
   progress thread, `overlap_comm=True`) and without (`overlap_comm=False`: they progress in
   backward's final wait), interleaved rounds, best of each; against the same module without
   DDP on 1 rank.

    python bench/distributed.py [--ranks 2]      # starts itself under the venv's mpiexec
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

SIZES = [4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20]


def _median_per_call(fn, comm, reps: int) -> float:
    comm.Barrier()
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        fn()
        times.append(time.perf_counter() - s)
    return float(np.median(times))


def allreduce_table(dist, comm) -> list[str]:
    import jitorch
    from mpi4py import MPI
    n = comm.Get_size()
    rows = ["| bytes | mpi4py Allreduce (us) | dist.all_reduce (us) | ratio | bus GB/s (dist) |",
            "|---|---|---|---|---|"]
    for nbytes in SIZES:
        t = jitorch.ones(nbytes // 4)
        a = t.numpy()
        reps = 200 if nbytes <= 64 << 10 else 30 if nbytes <= 1 << 20 else 5
        fns = {"raw": lambda: comm.Allreduce(MPI.IN_PLACE, a), "dist": lambda: dist.all_reduce(t)}
        best = {k: float("inf") for k in fns}
        for _ in range(3):  # interleaved rounds: a noisy shared machine hits both alike
            for k, f in fns.items():
                f()
                best[k] = min(best[k], _median_per_call(f, comm, reps))
        bus = 2 * (n - 1) / n * nbytes / best["dist"] / 1e9
        rows.append(f"| {nbytes:,} | {best['raw'] * 1e6:.1f} | {best['dist'] * 1e6:.1f} | "
                    f"{best['dist'] / best['raw']:.2f} | {bus:.2f} |")
    return rows


def ddp_step_us_per_sample(dist, global_batch: int, steps: int, use_ddp: bool,
                           overlap: bool = True, bucket_cap_mb: float = 25) -> float:
    import jitorch
    from jitorch import nn, optim
    from jitorch.nn.parallel import DistributedDataParallel as DDP
    n = dist.get_world_size()
    jitorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 10))
    if use_ddp:
        model = DDP(model, overlap_comm=overlap, bucket_cap_mb=bucket_cap_mb)
    opt = optim.SGD(model.parameters(), lr=0.01)
    per_rank = global_batch // n
    x = jitorch.randn(per_rank, 784)
    y = jitorch.randint(0, 10, (per_rank,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    step()
    dist.barrier()
    s = time.perf_counter()
    for _ in range(steps):
        step()
    dist.barrier()
    return (time.perf_counter() - s) / steps / global_batch * 1e6


def rank_main(args) -> None:
    from mpi4py import MPI

    import jitorch.distributed as dist
    dist.init_process_group("mpi")
    comm = MPI.COMM_WORLD.Dup()
    rows = allreduce_table(dist, comm)
    n = dist.get_world_size()
    # the default 25 MB cap makes the MLP's 1.1 MB of gradients one bucket, ready only at the
    # end of backward (nothing to overlap); 0.25 MB makes two, the first reduced during the
    # first layer's backward
    ddp = {(cap, overlap): float("inf") for cap in (25, 0.25) for overlap in (True, False)}
    for _ in range(3):  # interleaved rounds, as above
        for cap, overlap in ddp:
            ddp[cap, overlap] = min(ddp[cap, overlap], ddp_step_us_per_sample(
                dist, args.batch, args.steps, use_ddp=True, overlap=overlap,
                bucket_cap_mb=cap))
    if dist.get_rank() == 0:
        print(f"## all-reduce, float32, {n} ranks\n")
        print("\n".join(rows))
        print(f"\n## DDP train step, MLP 784-256-256-10, global batch {args.batch}\n")
        print("| ranks | us per sample |\n|---|---|")
        for (cap, overlap), us in ddp.items():
            print(f"| {n} (DDP, bucket_cap_mb={cap:g}, overlap {'on' if overlap else 'off'}) "
                  f"| {us:.2f} |")
    dist.destroy_process_group()


def single_rank_baseline(args) -> float:
    import jitorch.distributed as dist
    dist.init_process_group("mpi")
    us = ddp_step_us_per_sample(dist, args.batch, args.steps, use_ddp=False)
    dist.destroy_process_group()
    return us


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--_rank", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args._rank:
        rank_main(args)
        return
    from _harness import machine, stamp
    print(f"# jitorch.distributed ({machine()}, {stamp()})\n")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    subprocess.run([mpiexec, "-n", str(args.ranks), sys.executable, os.path.abspath(__file__),
                    "--_rank", "--batch", str(args.batch), "--steps", str(args.steps)],
                   check=True)
    print(f"| 1 (no DDP) | {single_rank_baseline(args):.2f} |")


if __name__ == "__main__":
    main()
