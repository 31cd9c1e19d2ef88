"""Eager sampling speed: jitorch's PyTorch-exact CPU generator vs NumPy's and PyTorch's own.

CPU time per call (process time, all threads; one thread each), best of rounds, for the draws
issue 20 names: randn / rand of 1e6 elements, the default init of nn.Linear(1024, 1024) and
randperm(1e5). PyTorch runs only when importable.

    python bench/random_speed.py [--quick]
"""
from __future__ import annotations

import sys
import time

import numpy as np

from _harness import pin_threads, try_import

pin_threads(1)


def cpu_per_call(fn, rounds: int, min_time: float = 0.05) -> float:
    """CPU seconds per call: best of `rounds` runs, each of enough calls to last `min_time`."""
    fn()
    n = 1
    while True:
        t0 = time.process_time()
        for _ in range(n):
            fn()
        t = time.process_time() - t0
        if t >= min_time or n >= 1 << 16:
            break
        n *= 2
    best = t / n
    for _ in range(rounds - 1):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - t0) / n)
    return best


def cases(lib, gen):
    """name -> callable, for `lib` (jitorch or torch) or NumPy (lib None, gen a Generator)."""
    if lib is None:
        w = np.empty((1024, 1024), np.float32)
        return {
            "randn(1e6) float32": lambda: gen.standard_normal(10**6, np.float32),
            "randn(1e6) float64": lambda: gen.standard_normal(10**6),
            "rand(1e6) float32": lambda: gen.random(10**6, np.float32),
            "Linear(1024, 1024) init": lambda: (gen.uniform(-1 / 32, 1 / 32, w.shape)
                                                .astype(np.float32), gen.uniform(-1, 1, 1024)),
            "randperm(1e5)": lambda: gen.permutation(10**5),
        }
    return {
        "randn(1e6) float32": lambda: lib.randn(10**6),
        "randn(1e6) float64": lambda: lib.randn(10**6, dtype=lib.float64),
        "rand(1e6) float32": lambda: lib.rand(10**6),
        "Linear(1024, 1024) init": lambda: lib.nn.Linear(1024, 1024),
        "randperm(1e5)": lambda: lib.randperm(10**5),
    }


def main(rounds: int = 5) -> None:
    import jitorch
    peers = {"jitorch": cases(jitorch, None), "NumPy": cases(None, np.random.default_rng(0))}
    torch = try_import("torch")
    if torch is not None:
        peers["PyTorch"] = cases(torch, None)
    best = {p: {} for p in peers}
    for _ in range(rounds):  # interleaved, so a noisy machine's drift hits every peer alike
        for p, fns in peers.items():
            for name, fn in fns.items():
                t = cpu_per_call(fn, rounds=1)
                best[p][name] = min(best[p].get(name, t), t)
    print("| draw | " + " | ".join(peers) + " |")
    print("|---|" + "---|" * len(peers))
    for name in peers["jitorch"]:
        print(f"| {name} | " + " | ".join(f"{best[p][name] * 1e3:.2f} ms" for p in peers) + " |")
    print("\nCPU time per call, best of rounds"
          + ("" if torch is not None else "; PyTorch not importable"))


if __name__ == "__main__":
    main(rounds=2 if "--quick" in sys.argv else 5)
