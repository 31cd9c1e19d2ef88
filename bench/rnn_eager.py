"""Eager `nn.LSTM` / `nn.GRU` forward+backward over 50 steps: the compiled layer vs the eager loop
vs PyTorch eager (issue 20 item 1).

An eager call of jitorch's recurrent layers runs the layer's scripted whole-sequence function
(nn/modules/_eager_compiled.py); `JITORCH_EAGER_COMPILED_LAYERS=0` runs the eager per-step loop.
Both are timed here, in the compiled state (after `jitorch.jit.wait_compiled()`), against
PyTorch eager in the same process, one thread everywhere, same weights and inputs (outputs and
gradients checked). Input 32, hidden 64, T=50, batch 8 and 64, float32; CPU time per step
(forward, `out.sum() + h_n.sum()`, backward), best of rounds; ratios are jitorch / PyTorch.

The second table: a PackedSequence input (`pack_padded_sequence(x, lengths,
enforce_sorted=False)` inside the step, 16 sequences of random lengths 5..50, input 32, hidden
64, bidirectional, 1 and 2 layers): the fused loops (the packed rows of each step) vs the eager
packed loop vs PyTorch.

    python bench/rnn_eager.py [--quick]
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

import jitorch as jt
from _harness import eager_layers_stats_line, machine, pin_threads, stamp, try_import
from _torch_twin import check_step, copy_weights

pin_threads(1)
torch = try_import("torch")
T, IN, HID = 50, 32, 64


def cpu_per_call(fn, rounds: int, min_s: float = 0.2) -> float:
    """CPU seconds per call: best over `rounds` rounds of enough calls to last `min_s`."""
    fn()
    best = float("inf")
    for _ in range(rounds):
        n, t0 = 0, time.process_time()
        while True:
            fn()
            n += 1
            t = time.process_time() - t0
            if t >= min_s:
                break
        best = min(best, t / n)
    return best


def step_fn(lib, m, x):
    def step():
        out, h = m(x)
        h = h[0] if isinstance(h, tuple) else h
        (out.sum() + h.sum()).backward()
        return out
    return step


def grads(m, x):
    return [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()]


def _measure(m, x, step, torch_step, rounds: int, compiled: str, served=None) -> dict:
    """{"eager loop", compiled, "PyTorch"}: CPU s per step of `step` with the eager per-step
    loop, then served compiled (checked equal; `served()`, where given, must count the call),
    then of PyTorch's twin (`torch_step()` -> (step, its input, its module), checked equal)."""
    res = {}
    os.environ["JITORCH_EAGER_COMPILED_LAYERS"] = "0"
    out_eager = step().detach().numpy()
    res["eager loop"] = cpu_per_call(step, rounds)
    os.environ["JITORCH_EAGER_COMPILED_LAYERS"] = "1"
    step()
    jt.jit.wait_compiled()
    for p in m.parameters():
        p.grad = None
    x.grad = None
    before = served() if served else None
    out = step().detach().numpy()
    if served:
        assert served() == before + 1
    g = grads(m, x)
    np.testing.assert_allclose(out, out_eager, rtol=1e-5, atol=1e-6)
    res[compiled] = cpu_per_call(step, rounds)
    if torch is not None:
        tstep, tx, tm = torch_step()
        check_step(tstep, tx, tm, out, g, rtol=1e-5, atol=1e-6)
        res["PyTorch"] = cpu_per_call(tstep, rounds)
    return res


def case(kind: str, batch: int, rounds: int):
    jt.manual_seed(0)
    m = getattr(jt.nn, kind)(IN, HID)
    x = jt.randn(T, batch, IN, requires_grad=True)

    def torch_step():
        tm = getattr(torch.nn, kind)(IN, HID)
        copy_weights(torch, m, tm)
        tx = torch.from_numpy(x.detach().numpy()).requires_grad_(True)
        return step_fn(torch, tm, tx), tx, tm
    return _measure(m, x, step_fn(jt, m, x), torch_step, rounds, "compiled")


PACKED_BATCH = 16


def packed_step_fn(lib, m, x, lengths):
    pack = lib.nn.utils.rnn.pack_padded_sequence

    def step():
        out, h = m(pack(x, lengths, enforce_sorted=False))
        h = h[0] if isinstance(h, tuple) else h
        (out.data.sum() + h.sum()).backward()
        return out.data
    return step


def packed_case(kind: str, layers: int, rounds: int):
    """{"eager loop", "fused", "PyTorch"}: CPU s per step on packed input (see the doc)."""
    jt.manual_seed(0)
    m = getattr(jt.nn, kind)(IN, HID, num_layers=layers, bidirectional=True)
    lengths = np.random.default_rng(layers).integers(5, T + 1, PACKED_BATCH)
    x = jt.randn(int(lengths.max()), PACKED_BATCH, IN, requires_grad=True)

    def torch_step():
        tm = getattr(torch.nn, kind)(IN, HID, num_layers=layers, bidirectional=True)
        copy_weights(torch, m, tm)
        tx = torch.from_numpy(x.detach().numpy()).requires_grad_(True)
        return packed_step_fn(torch, tm, tx, torch.from_numpy(lengths)), tx, tm

    def served():
        return jt.jit.stats()["fused_layers"].get(f"nn.{kind}[packed]", 0)
    return _measure(m, x, packed_step_fn(jt, m, x, lengths.tolist()), torch_step, rounds,
                    "fused", served)


def packed_table(rounds: int) -> None:
    print(f"\nPackedSequence input: {PACKED_BATCH} sequences, lengths random 5..{T}, "
          "bidirectional, packing in the step\n")
    head = "| layer | layers | jitorch eager packed loop | jitorch fused | loop / fused |"
    head += " PyTorch | loop / PyTorch | fused / PyTorch |" if torch is not None else ""
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for kind in ("LSTM", "GRU"):
        for layers in (1, 2):
            r = packed_case(kind, layers, rounds)
            row = f"| nn.{kind} | {layers} | {r['eager loop'] * 1e3:.2f} | " \
                  f"{r['fused'] * 1e3:.2f} | {r['eager loop'] / r['fused']:.1f}x |"
            if "PyTorch" in r:
                pt = r["PyTorch"]
                row += f" {pt * 1e3:.2f} | {r['eager loop'] / pt:.1f}x | " \
                       f"{r['fused'] / pt:.2f}x |"
            print(row, flush=True)


def main():
    quick = "--quick" in sys.argv
    rounds = 3 if quick else 7
    print(f"rnn_eager — {stamp()} — {machine()}, 1 thread; T={T}, input {IN}, hidden {HID}, "
          "float32, forward+backward, CPU ms per step\n")
    head = "| layer | batch | jitorch eager loop | jitorch compiled |"
    head += " PyTorch | loop / PyTorch | compiled / PyTorch |" if torch is not None else ""
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for kind in ("LSTM", "GRU"):
        for batch in (8, 64):
            r = case(kind, batch, rounds)
            row = f"| nn.{kind} | {batch} | {r['eager loop'] * 1e3:.2f} | " \
                  f"{r['compiled'] * 1e3:.2f} |"
            if "PyTorch" in r:
                pt = r["PyTorch"]
                row += f" {pt * 1e3:.2f} | {r['eager loop'] / pt:.1f}x | " \
                       f"{r['compiled'] / pt:.2f}x |"
            print(row, flush=True)
    packed_table(rounds)
    print("\n" + eager_layers_stats_line())


if __name__ == "__main__":
    main()
