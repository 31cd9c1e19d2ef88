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

3. RPC (4 ranks: worker0 serves, workers 1-3 call): the round trip of `rpc_sync` (a call of
   `add(1, 2)`, and of a 4 KB tensor echoed back) against an mpi4py ping-pong of the same
   payload, with uppercase buffer calls and with lowercase pickled ones (each timed once per
   round, rounds interleaved: the median of the single calls of all `--rpc-rounds` rounds,
   robust to a loaded machine descheduling a rank now and then, and the mean of the best
   round); then the throughput of a
   scripted function (20 fused sin passes over 100k floats) served to 1 and to 3 callers at
   once, as it runs (its compiled program releases the GIL, so worker0's serving threads run
   the calls in parallel) and as a Numba twin of the same loop compiled with nogil=False (what
   the callee would be if its program held the GIL), plus a direct GIL check: how fast
   worker0's main thread runs Python while another thread runs each callee (switch interval
   raised to 0.1 s: only a released GIL lets it run).

    python bench/distributed.py [--ranks 2]      # starts itself under the venv's mpiexec
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

import jitorch

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


# --- RPC ----------------------------------------------------------------------------------
_held_kernel = None  # rpc_main: the same math as a Numba program that holds the GIL


def rpc_echo(x):
    return x


def rpc_add(a, b):
    return a + b


def rpc_work(x):  # scripted in rpc_main (under its own name: RPC finds it by that name)
    y = x
    for _ in range(20):
        y = jitorch.sin(y) * 0.9 + x
    return y.sum()


def rpc_work_gil_held(x):
    return jitorch.tensor(_held_kernel(x.numpy()))


def _make_held_kernel():
    import numba

    @numba.njit(nogil=False)  # what rpc_work would be if its program kept the GIL
    def kernel(x):
        y = x.copy()
        for _ in range(20):
            for i in range(x.size):
                y[i] = np.sin(y[i]) * np.float32(0.9) + x[i]
        return y.sum()
    return kernel


def _call_times(fn, reps: int) -> list:
    fn()
    clock = time.perf_counter
    times = []
    for _ in range(reps):
        s = clock()
        fn()
        times.append(clock() - s)
    return times


def _python_rate(seconds: float) -> float:
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    return n / seconds


def _wait(req) -> None:
    # a blocking MPI call spins a core: ranks waiting for others must not take the CPU from
    # the rank that works (here 4 ranks share the cores)
    while not req.Test():
        time.sleep(1e-3)


def _barrier(comm) -> None:
    _wait(comm.Ibarrier())


def rpc_main(args) -> None:
    global rpc_work, _held_kernel
    import threading

    from mpi4py import MPI

    import jitorch.distributed.rpc as rpc
    rpc_work = jitorch.jit.script(rpc_work)
    _held_kernel = _make_held_kernel()
    world = MPI.COMM_WORLD.Dup()
    r, n = world.Get_rank(), world.Get_size()
    rpc.init_rpc(f"worker{r}", rpc_backend_options=rpc.TensorPipeRpcBackendOptions(
        num_worker_threads=8))
    reps = args.rpc_reps
    rows = []
    # latency: worker1 <-> worker0 (the others wait in a barrier), each kind once per round,
    # rounds interleaved (a busy machine slows whatever runs while it is busy), best round
    small = np.zeros(2)
    tensor = jitorch.randn(1024)
    calls: dict = {}  # label -> per-call seconds of every round
    best: dict = {}  # label -> the mean of its best round

    def keep(label, times):
        if r == 1:
            calls.setdefault(label, []).extend(times)
            best[label] = min(best.get(label, np.inf), float(np.mean(times)))
    for _ in range(args.rpc_rounds):
        if r == 1:
            keep("rpc_sync add(1, 2)",
                 _call_times(lambda: rpc.rpc_sync(0, rpc_add, args=(1, 2)), reps))
            keep("rpc_sync echo(4 KB tensor)",
                 _call_times(lambda: rpc.rpc_sync(0, rpc_echo, args=(tensor,)), reps))
        _barrier(world)
        for label, payload in (("16 B", small), ("4 KB", tensor.numpy())):
            for kind in ("buffer", "pickled"):
                buf = payload.copy()
                if r in (0, 1):
                    peer = 1 - r

                    def one():
                        if kind == "buffer":
                            if r == 1:
                                world.Send(buf, peer, 5)
                                world.Recv(buf, peer, 6)
                            else:
                                world.Recv(buf, peer, 5)
                                world.Send(buf, peer, 6)
                        elif r == 1:
                            world.send(buf, peer, 5)
                            world.recv(None, peer, 6)
                        else:
                            world.send(world.recv(None, peer, 5), peer, 6)
                    keep(f"mpi4py ping-pong {label}, {kind}", _call_times(one, reps))
                _barrier(world)
    rows = [(label, float(np.median(times)), best[label]) for label, times in calls.items()]
    # throughput of the scripted function on worker0, 1 and 3 callers
    x = jitorch.randn(100_000)
    calls = args.rpc_calls
    tput = []
    for fn in (rpc_work, rpc_work_gil_held):
        if r == 1:
            rpc.rpc_sync(0, fn, args=(x,))  # compiles on worker0 (sync: in the call)
        _barrier(world)
        for callers in (1, 3):
            active = 1 <= r <= callers
            _barrier(world)
            s = time.perf_counter()
            if active:
                for _ in range(calls):
                    rpc.rpc_sync(0, fn, args=(x,))
            took = np.array([time.perf_counter() - s if active else 0.0])
            _wait(world.Iallreduce(MPI.IN_PLACE, took, op=MPI.MAX))
            took = float(took[0])
            tput.append((fn.__name__, callers, callers * calls / took))
    # the GIL check, on worker0 alone: Python in the main thread while another thread runs the
    # callee (a program that holds the GIL stops it; one that releases it does not). The switch
    # interval is raised so that the interpreter's own preemption (every 5 ms) cannot let the
    # main thread run inside a GIL-holding call
    alone = _python_rate(0.3) if r == 0 else 0.0
    during = {}
    if r == 0:
        switch = sys.getswitchinterval()
        sys.setswitchinterval(0.1)
        for fn in (rpc_work, rpc_work_gil_held):
            inside = [False, 0.0]  # in a call now; seconds spent in calls

            def run_calls():
                for _ in range(3):
                    s = time.perf_counter()
                    inside[0] = True
                    fn(x)
                    inside[0] = False
                    inside[1] += time.perf_counter() - s
            worker = threading.Thread(target=run_calls)
            n_iter = 0
            worker.start()
            while worker.is_alive():  # counts only while a call runs
                if inside[0]:
                    n_iter += 1
            during[fn] = n_iter / inside[1]
        sys.setswitchinterval(switch)
    _barrier(world)
    # the latency rows were measured on worker1: to worker0, which prints
    gathered = world.gather(rows, root=0)
    if r == 0:
        rows = [row for part in gathered for row in part]
        print(f"\n## RPC ({n} ranks: worker0 serves, one caller for latency)\n")
        print("| round trip | median us | best round, mean us |\n|---|---|---|")
        for label, med, mean in rows:
            print(f"| {label} | {med * 1e6:.0f} | {mean * 1e6:.0f} |")
        print(f"\n## scripted function served by worker0 ({calls} calls per caller)\n")
        print("| callee | callers | calls/s |\n|---|---|---|")
        for name, callers, rate in tput:
            print(f"| {name} | {callers} | {rate:.1f} |")
        print("\n| worker0's main thread runs Python | loop iterations/s |\n|---|---|")
        print(f"| alone | {alone:,.0f} |")
        print(f"| while a thread runs rpc_work (scripted) | {during[rpc_work]:,.0f} |")
        print(f"| while a thread runs rpc_work_gil_held | {during[rpc_work_gil_held]:,.0f} |")
    rpc.shutdown()


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
    p.add_argument("--rpc-reps", type=int, default=300)
    p.add_argument("--rpc-calls", type=int, default=10)
    p.add_argument("--rpc-rounds", type=int, default=5)
    p.add_argument("--only", choices=("all", "rpc"), default="all")
    p.add_argument("--_rank", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--_rpc", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args._rank:
        rank_main(args)
        return
    if args._rpc:
        rpc_main(args)
        return
    from _harness import machine, stamp
    print(f"# jitorch.distributed ({machine()}, {stamp()})\n")
    mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if args.only == "all":
        subprocess.run([mpiexec, "-n", str(args.ranks), sys.executable,
                        os.path.abspath(__file__), "--_rank", "--batch", str(args.batch),
                        "--steps", str(args.steps)], check=True)
        print(f"| 1 (no DDP) | {single_rank_baseline(args):.2f} |")
    subprocess.run([mpiexec, "-n", "4", sys.executable, os.path.abspath(__file__), "--_rpc",
                    "--rpc-reps", str(args.rpc_reps), "--rpc-calls", str(args.rpc_calls),
                    "--rpc-rounds", str(args.rpc_rounds)],
                   check=True)


if __name__ == "__main__":
    main()
