"""Layer norm then softmax over the last dim (float32), rows x 1024 columns.

jitorch scripted vs NumPy eager vs a hand-written Numba row loop and, when installed, PyTorch
eager, torch.jit.script and torch.compile; one thread for every peer. The workload is spelled
with mean/rsqrt/exp/amax/sum (bench/_workloads.py), the same source for every peer. jitorch
compiles it to one row-fused loop nest (passes/fuse_rows.py, targets/cpu/lower_rows.py): one outer
loop over rows, five passes over each row through one row-sized buffer, the output the only
full-size array.

    python bench/layernorm_softmax.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

import _kernels as nb
from _harness import PEERS, Peers, jit_stats_line, pin_threads, print_table, timed_rows

pin_threads(1)


def np_layernorm_softmax(x, w, b):
    mu = x.mean(-1, keepdims=True)
    d = x - mu
    var = (d * d).mean(-1, keepdims=True)
    y = d / np.sqrt(var + np.float32(1e-5)) * w + b
    e = np.exp(y - y.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def main(shapes=((1, 1024), (64, 1024), (4096, 1024)), rounds=5):
    peers = Peers()
    rng = np.random.default_rng(0)
    rows = []
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        w = (1 + 0.1 * rng.standard_normal(shape[-1])).astype(np.float32)
        b = (0.1 * rng.standard_normal(shape[-1])).astype(np.float32)
        fns, notes = peers.build("layernorm_softmax", (x, w, b), np_layernorm_softmax,
                                 nb.layernorm_softmax, np_layernorm_softmax(x, w, b),
                                 rtol=1e-3, atol=1e-6)
        rows.append((f"{shape[0]}x{shape[1]}", timed_rows(fns, notes, rounds=rounds)))
    print_table("layernorm + softmax over the last dim, float32", "shape", PEERS, rows)
    print(jit_stats_line())


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    main(shapes=((1, 1024), (64, 1024)) if quick else ((1, 1024), (64, 1024), (4096, 1024)),
         rounds=2 if quick else 5)
