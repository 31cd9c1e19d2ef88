"""Throughput of N = 1, 2, 4 Python threads serving one batch-32 MLP (784-256-256-10, float32).

Every peer runs with one intra-op / BLAS thread per caller, so N threads can use at most N cores.
A scripted jitorch call is one nogil Numba program and should scale with cores; NumPy eager
re-acquires the GIL per op. Goal (issue 3): 2 threads give at least 1.6x the throughput of 1.

    python bench/threads.py [--quick]
"""
from __future__ import annotations

import sys
import threading
import time

import numpy as np

import _kernels as nb
from _harness import Peers, jit_stats_line, machine, pin_threads, stamp
from mlp import make_params, np_mlp

pin_threads(1)


def throughput(fn, n_threads: int, seconds: float) -> float:
    counts = [0] * n_threads
    start = threading.Barrier(n_threads + 1)
    stop = threading.Event()

    def worker(k):
        start.wait()
        while not stop.is_set():
            fn()
            counts[k] += 1

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def main(batch=32, thread_counts=(1, 2, 4), seconds=1.0, rounds=3):
    peers = Peers()
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((batch, 784)).astype(np.float32), *make_params(rng))
    fns, notes = peers.build("mlp", args, np_mlp, nb.mlp, np_mlp(*args), rtol=1e-3, atol=1e-4)
    order = ["jitorch", "NumPy", "Numba (hand)", "PyTorch", "TorchScript", "torch.compile"]
    best = {p: {n: 0.0 for n in thread_counts} for p in order if fns.get(p) is not None}
    for p in best:  # warm up (TorchScript's profiling executor optimises after a few calls)
        throughput(fns[p], 1, 0.2)
    for _ in range(rounds):  # alternate peers so that machine drift hits all alike
        for p in best:
            for n in thread_counts:
                best[p][n] = max(best[p][n], throughput(fns[p], n, seconds))
    print(f"### Serving throughput, MLP 784-256-256-10 batch {batch}, float32\n")
    print(f"{stamp()} — {machine()}; calls/s (best of {rounds} x {seconds:.1f} s); one BLAS/"
          f"intra-op thread per caller; (x) = throughput / 1-thread throughput\n")
    print("| peer | " + " | ".join(f"{n} thread{'s' if n > 1 else ''}" for n in thread_counts)
          + " |")
    print("|" + "---|" * (len(thread_counts) + 1))
    for p in order + ["jax.jit"]:
        if p in best:
            r = best[p]
            base = r[thread_counts[0]]
            cells = [f"{r[n]:.0f}" + (f" ({r[n] / base:.2f}x)" if n != thread_counts[0] else "")
                     for n in thread_counts]
        else:
            cells = [notes.get(p, "n/a")] + [""] * (len(thread_counts) - 1)
        print(f"| {p} | " + " | ".join(cells) + " |")
    print()
    print(jit_stats_line())


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    main(seconds=0.5 if quick else 1.0, rounds=1 if quick else 3)
