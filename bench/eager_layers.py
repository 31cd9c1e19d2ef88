"""Eager norm and loss modules forward+backward: the compiled functional call vs the eager path
vs PyTorch eager (issue 20 item 1).

An eager call of jitorch's LayerNorm / GroupNorm / MSELoss / BCEWithLogitsLoss (and the other
norms and losses whose composite compiles) runs its functional call as one scripted function
(nn/modules/_eager_compiled.py `functional`); `JITORCH_EAGER_COMPILED_LAYERS=0` runs the eager
ops one by one (the old path). Both are timed here in the compiled state (after
`jitorch.jit.wait_compiled()`), against PyTorch eager in the same process, one thread
everywhere, same inputs (outputs and input gradients checked against PyTorch). A step is the
forward, then `(out * w).sum()` for a norm (a fixed random weighting: the plain sum of a
normalised output has a zero gradient) or the loss itself, then backward. The three paths run in
alternating rounds; each cell is the median over rounds of the CPU (process) time per step, the
wall time per step beside it; ratios are jitorch / PyTorch and new / old.

    python bench/eager_layers.py [--quick]
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

import jitorch as jt
from _harness import eager_layers_stats_line, machine, pin_threads, stamp, try_import

pin_threads(1)
torch = try_import("torch")
ENV = "JITORCH_EAGER_COMPILED_LAYERS"


def _cases():
    """(label, make(lib) -> module, input shape, loss target kind or None for a norm)."""
    return [
        ("LayerNorm(128)", lambda nn: nn.LayerNorm(128), (64, 128), None),
        ("LayerNorm(512)", lambda nn: nn.LayerNorm(512), (32, 50, 512), None),
        ("GroupNorm(8, 32)", lambda nn: nn.GroupNorm(8, 32), (16, 32, 28, 28), None),
        ("MSELoss", lambda nn: nn.MSELoss(), (64, 10), "normal"),
        ("MSELoss", lambda nn: nn.MSELoss(), (256, 1000), "normal"),
        ("BCEWithLogitsLoss", lambda nn: nn.BCEWithLogitsLoss(), (64, 10), "unit"),
        ("BCEWithLogitsLoss", lambda nn: nn.BCEWithLogitsLoss(), (256, 1000), "unit"),
    ]


def _step(m, x, extra, is_loss):
    def step():
        x.grad = None
        out = m(x, extra) if is_loss else m(x)
        (out if is_loss else (out * extra).sum()).backward()
        return out
    return step


def _timed(fn, min_s: float):
    """(CPU s, wall s) per call over a block of calls lasting `min_s` CPU seconds."""
    n, c0, w0 = 0, time.process_time(), time.perf_counter()
    while True:
        fn()
        n += 1
        c = time.process_time() - c0
        if c >= min_s:
            return c / n, (time.perf_counter() - w0) / n


def case(make, shape, target, rounds: int, min_s: float):
    g = np.random.default_rng(0)
    x_np = g.standard_normal(shape).astype(np.float32)
    e_np = (g.uniform(0, 1, shape) if target == "unit" else g.standard_normal(shape)) \
        .astype(np.float32)
    is_loss = target is not None
    m = make(jt.nn)
    x = jt.tensor(x_np, requires_grad=True)
    step = _step(m, x, jt.tensor(e_np), is_loss)
    os.environ[ENV] = "1"
    step()
    jt.jit.wait_compiled()
    step()
    jt.jit.wait_compiled()
    out, gx = step().detach().numpy(), x.grad.numpy().copy()
    os.environ[ENV] = "0"
    np.testing.assert_allclose(step().detach().numpy(), out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-4, atol=1e-5)

    def old():
        os.environ[ENV] = "0"
        step()

    def new():
        os.environ[ENV] = "1"
        step()
    fns = {"old": old, "new": new}
    if torch is not None:
        tx = torch.from_numpy(x_np.copy()).requires_grad_(True)
        tstep = _step(make(torch.nn), tx, torch.from_numpy(e_np), is_loss)
        np.testing.assert_allclose(tstep().detach().numpy(), out, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(tx.grad.numpy(), gx, rtol=1e-3,
                                   atol=1e-3 * float(np.abs(gx).max()))
        fns["PyTorch"] = tstep
    res = {k: [] for k in fns}
    for _ in range(rounds):  # alternating rounds: drift of a shared machine hits all alike
        for k, f in fns.items():
            f()
            res[k].append(_timed(f, min_s))
    os.environ[ENV] = "1"
    return {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v))
            for k, v in res.items()}


def main():
    quick = "--quick" in sys.argv
    rounds, min_s = (3, 0.1) if quick else (7, 0.2)
    print(f"eager_layers — {stamp()} — {machine()}, 1 thread; forward+backward per step, "
          f"float32; median of {rounds} alternating rounds, us per step: CPU (wall)\n")
    head = "| module | input | old eager | new compiled | new / old |"
    head += " PyTorch | old / PyTorch | new / PyTorch |" if torch is not None else ""
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for label, make, shape, target in _cases():
        r = case(make, shape, target, rounds, min_s)
        (oc, ow), (nc, nw) = r["old"], r["new"]
        row = f"| {label} | {tuple(shape)} | {oc * 1e6:.0f} ({ow * 1e6:.0f}) | " \
              f"{nc * 1e6:.0f} ({nw * 1e6:.0f}) | {nc / oc:.2f}x |"
        if "PyTorch" in r:
            pc, pw = r["PyTorch"]
            row += f" {pc * 1e6:.0f} ({pw * 1e6:.0f}) | {oc / pc:.2f}x | {nc / pc:.2f}x |"
        print(row, flush=True)
    print("\n" + eager_layers_stats_line())


if __name__ == "__main__":
    main()
