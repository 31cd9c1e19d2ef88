"""MLP 784-256-256-10 inference (float32, relu), batch 1 / 32 / 1024.

jitorch scripted vs NumPy eager vs hand-written Numba (np.dot inside one njit program, fused
bias+relu loops) and, when installed, PyTorch eager, torch.jit.script and torch.compile; one
thread (intra-op and BLAS) for every peer. Goal (issue 3): batch 1 at least 2x faster than
PyTorch eager and TorchScript.

    python bench/mlp.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

import _kernels as nb
from _harness import PEERS, Peers, jit_stats_line, pin_threads, print_table, timed_rows

pin_threads(1)


def make_params(rng, sizes=(784, 256, 256, 10)):
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params.append((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32))
        params.append((0.1 * rng.standard_normal(b)).astype(np.float32))
    return params


def np_mlp(x, w1, b1, w2, b2, w3, b3):
    h = np.maximum(x @ w1 + b1, np.float32(0))
    h = np.maximum(h @ w2 + b2, np.float32(0))
    return h @ w3 + b3


def main(batches=(1, 32, 1024), rounds=5):
    peers = Peers()
    rng = np.random.default_rng(0)
    params = make_params(rng)
    rows = []
    for n in batches:
        x = rng.standard_normal((n, 784)).astype(np.float32)
        args = (x, *params)
        fns, notes = peers.build("mlp", args, np_mlp, nb.mlp, np_mlp(*args),
                                 rtol=1e-3, atol=1e-4)
        rows.append((f"batch {n}", timed_rows(fns, notes, rounds=rounds)))
    print_table("MLP 784-256-256-10 inference, float32", "batch", PEERS, rows)
    print(jit_stats_line())


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    main(batches=(1, 32) if quick else (1, 32, 1024), rounds=2 if quick else 5)
