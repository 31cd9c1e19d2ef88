"""Inference of a 2-layer Transformer encoder at batch 1 (float32, eval, no_grad).

nn.TransformerEncoder of 2 nn.TransformerEncoderLayer (d_model 64, nhead 4, ff 128, dropout 0,
batch_first; bench/_train_models.py) on (1, T, 64) inputs, T = 16 and 64, all peers with the same
weights (state_dict copied through NumPy), one thread each, interleaved:
- jitorch scripted: `jitorch.jit.script(encoder)` called under `jitorch.no_grad()`;
- jitorch eager: the same module run op by op;
- PyTorch eager: `torch.no_grad()`, which takes PyTorch's eval fast path (one fused native
  kernel per layer, `torch._transformer_encoder_layer_fwd`);
- PyTorch, no fast path: the same with `torch.backends.mha.set_fastpath_enabled(False)`;
- TorchScript: `torch.jit.script` of the PyTorch encoder, if it scripts.
Each peer's output is checked against PyTorch's before timing. Goal (issue 4): the scripted
encoder at batch 1 at least 2x faster than PyTorch eager.

    python bench/encoder_infer.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

import _train_models as tm
from _harness import (close_to, guarded, jit_stats_line, pin_threads, print_table, timed_rows,
                      try_import)

pin_threads(1)

SCRIPTED, EAGER = "jitorch scripted", "jitorch eager"
TORCH, NOFAST, TS = "PyTorch eager", "PyTorch, no fast path", "TorchScript"
PEERS = [SCRIPTED, EAGER, TORCH, NOFAST, TS]


def main(seqs=(16, 64), rounds=5, min_time=0.2):
    import jitorch
    torch = try_import("torch")
    J = tm.load(jitorch, "_train_models_jitorch")
    jitorch.manual_seed(0)
    model = J.encoder().eval()
    state = tm.to_numpy_state(model)
    scripted = jitorch.jit.script(model)
    pt = ts = None
    if torch is not None:
        T = tm.load(torch, "_train_models_torch")
        pt = T.encoder().eval()
        T.load_numpy_state(pt, state)
        try:
            ts = torch.jit.script(pt)
        except Exception as e:  # noqa: BLE001
            ts = e
    rng = np.random.default_rng(0)
    rows = []
    jitorch.jit.reset_stats()
    for seq in seqs:
        x = rng.standard_normal((1, seq, 64)).astype(np.float32)
        xj = jitorch.from_numpy(x)
        fns, notes = {}, {}
        if torch is None:
            with jitorch.no_grad():
                expected = model(xj).numpy().copy()
        else:
            xt = torch.from_numpy(x)
            with torch.no_grad():
                expected = pt(xt).numpy().copy()
        check = close_to(expected, rtol=1e-4, atol=1e-4)

        def add(peer, make):
            f, why = guarded(make, check)
            fns[peer] = f
            if f is None:
                notes[peer] = f"failed: {why}"

        def jt_call(fn):
            def call():
                with jitorch.no_grad():
                    return fn(xj)
            return call
        add(SCRIPTED, lambda: jt_call(scripted))
        add(EAGER, lambda: jt_call(model))
        if torch is None:
            for p in (TORCH, NOFAST, TS):
                notes[p] = "not installed"
        else:
            def pt_call(fn, fast=True):
                mha = torch.backends.mha

                def call():
                    if not fast:
                        mha.set_fastpath_enabled(False)
                    try:
                        with torch.no_grad():
                            return fn(xt)
                    finally:
                        mha.set_fastpath_enabled(True)
                return call
            add(TORCH, lambda: pt_call(pt))
            add(NOFAST, lambda: pt_call(pt, fast=False))
            if isinstance(ts, Exception):
                notes[TS] = f"does not script: {type(ts).__name__}"
            else:
                add(TS, lambda: pt_call(ts))
        rows.append((f"batch 1, seq {seq}", timed_rows(fns, notes, rounds=rounds,
                                                        min_time=min_time)))
    print_table("Transformer encoder inference, 2 layers (d 64, h 4, ff 128), batch 1, float32",
                "input", PEERS, rows, base=SCRIPTED, unit="us per call")
    print(f"(x) here: peer time / `{SCRIPTED}` time.\n")
    print(jit_stats_line())


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    main(seqs=(16,) if quick else (16, 64), rounds=1 if quick else 5,
         min_time=0.05 if quick else 0.2)
