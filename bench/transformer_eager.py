"""Eager `nn.TransformerEncoderLayer` forward+backward: the compiled layer vs the eager path vs
PyTorch eager (issue 20 item 1).

An eager call of jitorch's TransformerEncoderLayer runs the layer's scripted flat function
(nn/modules/_eager_compiled.py); `JITORCH_EAGER_COMPILED_LAYERS=0` runs the eager ops one by
one. Both are timed here, in the compiled state (after `jitorch.jit.wait_compiled()`), against
PyTorch eager in the same process, one thread everywhere, same weights and inputs (outputs and
gradients checked). d_model 64, 4 heads, feed-forward 128, sequence 16, batch 8 and 32, float32,
eval-mode dropout (dropout=0.0), post-norm; CPU time per step (forward, `(out * w).sum()`,
backward), best of rounds; ratios are jitorch / PyTorch.

    python bench/transformer_eager.py [--quick]
"""
from __future__ import annotations

import os
import sys

import numpy as np

import jitorch as jt
from _harness import eager_layers_stats_line, machine, pin_threads, stamp, try_import
from _torch_twin import check_step, copy_weights
from rnn_eager import cpu_per_call

pin_threads(1)
torch = try_import("torch")
D, NHEAD, FF, SEQ = 64, 4, 128, 16


def step_fn(m, x, w):
    """Forward, `(out * w).sum()` (a fixed random weighting: the plain sum of a LayerNorm's
    output has a zero gradient), backward."""
    def step():
        out = m(x)
        (out * w).sum().backward()
        return out
    return step


def case(batch: int, rounds: int):
    jt.manual_seed(0)
    m = jt.nn.TransformerEncoderLayer(D, NHEAD, FF, dropout=0.0)
    x = jt.randn(SEQ, batch, D, requires_grad=True)
    w = jt.randn(SEQ, batch, D)
    step = step_fn(m, x, w)
    res = {}
    os.environ["JITORCH_EAGER_COMPILED_LAYERS"] = "0"
    out_eager = step().detach().numpy()
    res["eager"] = cpu_per_call(step, rounds)
    os.environ["JITORCH_EAGER_COMPILED_LAYERS"] = "1"
    step()
    jt.jit.wait_compiled()
    for p in m.parameters():
        p.grad = None
    x.grad = None
    out = step().detach().numpy()
    g = [x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()]
    np.testing.assert_allclose(out, out_eager, rtol=1e-4, atol=1e-5)
    res["compiled"] = cpu_per_call(step, rounds)
    if torch is not None:
        tm = torch.nn.TransformerEncoderLayer(D, NHEAD, FF, dropout=0.0)
        copy_weights(torch, m, tm)
        tx = torch.from_numpy(x.detach().numpy()).requires_grad_(True)
        tstep = step_fn(tm, tx, torch.from_numpy(w.numpy()))
        check_step(tstep, tx, tm, out, g, rtol=1e-4, atol=1e-5)
        res["PyTorch"] = cpu_per_call(tstep, rounds)
    return res


def main():
    quick = "--quick" in sys.argv
    rounds = 3 if quick else 7
    print(f"transformer_eager — {stamp()} — {machine()}, 1 thread; TransformerEncoderLayer "
          f"d_model {D}, nhead {NHEAD}, ff {FF}, seq {SEQ}, float32, forward+backward, "
          "CPU ms per step\n")
    head = "| layer | batch | jitorch eager | jitorch compiled |"
    head += " PyTorch | eager / PyTorch | compiled / PyTorch |" if torch is not None else ""
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for batch in (8, 32):
        r = case(batch, rounds)
        row = f"| nn.TransformerEncoderLayer | {batch} | {r['eager'] * 1e3:.2f} | " \
              f"{r['compiled'] * 1e3:.2f} |"
        if "PyTorch" in r:
            pt = r["PyTorch"]
            row += f" {pt * 1e3:.2f} | {r['eager'] / pt:.2f}x | {r['compiled'] / pt:.2f}x |"
        print(row, flush=True)
    print("\n" + eager_layers_stats_line())


if __name__ == "__main__":
    main()
