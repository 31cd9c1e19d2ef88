"""A custom LSTM cell whose time loop runs inside `@jitorch.script`.

The loop over time steps, both matmuls per step and the gate math are one compiled program per
(dtype, rank): Python runs once per sequence, not once per step. Checks the result against the
same loop run eagerly and prints the time per sequence for both, timed once the compiled program
is ready (`jitorch.jit.wait_compiled()`: Numba compiles in a background worker while the first
calls run interpreted), and which tier ran the scripted calls (`jitorch.jit.stats()`).

    python examples/custom_rnn.py [--steps T] [--batch B] [--hidden H]
"""
import argparse
import time

import jitorch


def lstm_eager(x, w_ih, w_hh, b):
    # x: (T, B, I); w_ih: (I, 4H); w_hh: (H, 4H); b: (4H). The initial state is made here:
    # inside the script, zeros(B, H) is part of the compiled program (sizes read at run time)
    h = jitorch.zeros(x.size(1), w_hh.size(0))
    c = jitorch.zeros(x.size(1), w_hh.size(0))
    for t in range(x.size(0)):
        gates = x[t] @ w_ih + h @ w_hh + b
        i, f, g, o = gates.chunk(4, 1)
        i = jitorch.sigmoid(i)
        f = jitorch.sigmoid(f)
        g = jitorch.tanh(g)
        o = jitorch.sigmoid(o)
        c = f * c + i * g
        h = o * jitorch.tanh(c)
    return h, c


# the same source, compiled: `jitorch.script(fn)` is what `@jitorch.script` does
lstm = jitorch.script(lstm_eager)


def make_inputs(steps, batch, inp, hidden):
    s = hidden ** -0.5
    return (jitorch.randn(steps, batch, inp), s * jitorch.randn(inp, 4 * hidden),
            s * jitorch.randn(hidden, 4 * hidden), s * jitorch.randn(4 * hidden))


def compiles():
    """Programs compiled so far, from `jitorch.jit.stats()`."""
    return jitorch.jit.stats().compiles


def per_call(fn, args, reps):
    t0 = time.perf_counter()
    for _ in range(reps):
        fn(*args)
    return (time.perf_counter() - t0) / reps


def main(steps: int = 50, batch: int = 4, inp: int = 32, hidden: int = 32,
         reps: int = 20) -> float:
    jitorch.manual_seed(0)
    args = make_inputs(steps, batch, inp, hidden)
    h, c = lstm(*args)  # compiles once for float32 inputs of these ranks
    he, ce = lstm_eager(*args)
    err = max((h - he).abs().max().item(), (c - ce).abs().max().item())
    print(f"LSTM {steps} steps, batch {batch}, input {inp}, hidden {hidden}: "
          f"h {tuple(h.shape)}, max |scripted - eager| = {err:.2e}")
    jitorch.jit.wait_compiled()  # time the compiled program, not the interpreter
    t_s, t_e = per_call(lstm, args, reps), per_call(lstm_eager, args, reps)
    print(f"scripted {t_s * 1e3:.3f} ms/sequence, eager {t_e * 1e3:.3f} ms/sequence "
          f"({t_e / t_s:.1f}x)")
    # a longer sequence and a bigger batch reuse the same program
    before = compiles()
    h2, _ = lstm(*make_inputs(2 * steps, batch + 3, inp, hidden))
    print(f"new sizes -> h {tuple(h2.shape)}; compiles before/after: {before}/{compiles()}")
    print(jitorch.jit.stats().calls_by_tier())
    return err


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=32)
    a = ap.parse_args()
    main(a.steps, a.batch, hidden=a.hidden)
