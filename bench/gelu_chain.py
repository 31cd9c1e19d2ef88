"""Fused elementwise chains: GELU (tanh form) and bias+relu at 1e3 / 1e5 / 1e7 float32 elements.

jitorch scripted vs NumPy eager vs a hand-written Numba loop (the ideal for this backend) and,
when installed, PyTorch eager, torch.jit.script and torch.compile; one thread for every peer.
Goal (issue 3): scripted within 1.3x of hand Numba, GELU at 1e5 at least 4x faster than NumPy.

    python bench/gelu_chain.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

import _kernels as nb
from _harness import PEERS, Peers, jit_stats_line, pin_threads, print_table, timed_rows

pin_threads(1)


def np_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.float32(0.7978845608028654)
                                    * (x + np.float32(0.044715) * x * x * x)))


def np_bias_relu(x, b):
    return np.maximum(x + b, np.float32(0.0))


def main(sizes=(1_000, 100_000, 10_000_000), rounds=5):
    peers = Peers()
    rng = np.random.default_rng(0)
    gelu_rows, relu_rows = [], []
    for n in sizes:
        x = rng.standard_normal(n).astype(np.float32)
        fns, notes = peers.build("gelu_tanh", (x,), np_gelu, nb.gelu_tanh,
                                 np_gelu(x), rtol=1e-4, atol=1e-5)
        gelu_rows.append((f"{n:.0e}", timed_rows(fns, notes, rounds=rounds)))
        cols = 1000 if n >= 1000 else n
        x2 = x.reshape(-1, cols)
        b = rng.standard_normal(cols).astype(np.float32)
        fns, notes = peers.build("bias_relu", (x2, b), np_bias_relu, nb.bias_relu,
                                 np_bias_relu(x2, b))
        relu_rows.append((f"{n:.0e} ({x2.shape[0]}x{cols})", timed_rows(fns, notes,
                                                                         rounds=rounds)))
    print_table("GELU-tanh chain, float32", "elements", PEERS, gelu_rows)
    print_table("bias + relu, float32 (x[n, 1000] + b[1000]).clamp(min=0)", "elements", PEERS,
                relu_rows)
    print("Hand Numba GELU uses a vectorisable rational tanh (bench/_kernels.py); libm tanh "
          "does not vectorise.\n")
    print(jit_stats_line())


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    main(sizes=(1_000, 100_000) if quick else (1_000, 100_000, 10_000_000),
         rounds=2 if quick else 5)
