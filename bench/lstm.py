"""An LSTM cell over 50 time steps with the time loop inside the compiled function (float32).

jitorch `@script` (loop in the program) vs NumPy eager vs hand-written Numba (one njit program:
np.dot per step + a fused gate loop) and, when installed, PyTorch eager, torch.jit.script and
torch.compile of the same loop; one thread for every peer. Goal (issue 3): scripted loop faster
than torch.jit.script.

    python bench/lstm.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

import _kernels as nb
from _harness import PEERS, Peers, jit_stats_line, pin_threads, print_table, timed_rows

pin_threads(1)


def np_sigmoid(v):
    return 1 / (1 + np.exp(-v))


def np_lstm(x, h, c, w_ih, w_hh, b):
    for t in range(x.shape[0]):
        gates = x[t] @ w_ih + h @ w_hh + b
        i, f, g, o = np.split(gates, 4, axis=1)
        c = np_sigmoid(f) * c + np_sigmoid(i) * np.tanh(g)
        h = np_sigmoid(o) * np.tanh(c)
    return h, c


def make_args(rng, steps, batch, inp, hid):
    s = 1 / np.sqrt(hid)
    return (rng.standard_normal((steps, batch, inp)).astype(np.float32),
            np.zeros((batch, hid), np.float32), np.zeros((batch, hid), np.float32),
            (s * rng.standard_normal((inp, 4 * hid))).astype(np.float32),
            (s * rng.standard_normal((hid, 4 * hid))).astype(np.float32),
            (s * rng.standard_normal(4 * hid)).astype(np.float32))


def main(configs=((1, 64, 64), (32, 128, 128)), steps=50, rounds=5):
    peers = Peers()
    rng = np.random.default_rng(0)
    rows = []
    for batch, inp, hid in configs:
        args = make_args(rng, steps, batch, inp, hid)
        # torch.compile unrolls the 50-step Python loop: minutes of compile on this machine
        fns, notes = peers.build("lstm", args, np_lstm, nb.lstm, np_lstm(*args),
                                 rtol=1e-3, atol=1e-4, torch_compile=False)
        rows.append((f"B={batch} I={inp} H={hid}", timed_rows(fns, notes, rounds=rounds)))
    print_table(f"LSTM cell, {steps} steps, loop inside the compiled function, float32",
                "config", PEERS, rows)
    print("torch.compile skipped: it unrolls the 50-step loop (a very long CPU compile).\n")
    print(jit_stats_line())


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    main(configs=((1, 64, 64),) if quick else ((1, 64, 64), (32, 128, 128)),
         rounds=2 if quick else 5)
