"""Fixed per-call cost: a scripted one-element float32 add.

jitorch scripted vs jitorch eager vs NumPy vs a hand-written Numba kernel (call through the
dispatcher) and, when installed, PyTorch eager / torch.jit.script / torch.compile. Goal (issue 3):
a scripted call's fixed overhead under 3 us.

    python bench/call_overhead.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

import _kernels as nb
from _harness import (PEERS, Peers, guarded, jit_stats_line, pin_threads, print_table,
                      timed_rows)

pin_threads(1)


def main(rounds=5):
    import jitorch
    peers = Peers()
    a = np.ones(1, np.float32)
    b = np.full(1, 2.0, np.float32)
    fns, notes = peers.build("add", (a, b), np.add, nb.add, a + b)
    ja, jb = jitorch.from_numpy(a), jitorch.from_numpy(b)
    fns["jitorch eager"], why = guarded(lambda: (lambda: jitorch.add(ja, jb)))
    if why:
        notes["jitorch eager"] = why
    rows = [("a + b, 1 element", timed_rows(fns, notes, rounds=rounds))]
    cols = PEERS[:1] + ["jitorch eager"] + PEERS[1:]
    print_table("Per-call overhead: one-element add, float32", "call", cols, rows)
    print(jit_stats_line())


if __name__ == "__main__":
    main(rounds=2 if "--quick" in sys.argv else 5)
