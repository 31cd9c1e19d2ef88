"""Optimizer step for 100 parameters of mixed sizes (float32): SGD with momentum, Adam, AdamW.

jitorch scripted step (the optimizer classes' default: one compiled, GIL-free program per
(param group, dtype/rank class): here a 2-D and a 1-D class) vs jitorch eager (the same
functional form run op by op) vs PyTorch's `foreach` and single-tensor implementations, when
PyTorch is installed; one thread for every peer, timings interleaved. Goal (issue 4): the
scripted step faster than PyTorch foreach.

    python bench/optim_step.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

from _harness import jit_stats_line, pin_threads, print_table, timed_rows, try_import

pin_threads(1)

PEERS = ["jitorch", "jitorch eager", "PyTorch foreach", "PyTorch single-tensor"]
CASES = {"SGD momentum": ("SGD", dict(lr=0.01, momentum=0.9)),
         "Adam": ("Adam", dict(lr=1e-3)),
         "AdamW": ("AdamW", dict(lr=1e-3, weight_decay=1e-2))}


def shapes(n: int = 100, width: int = 256):
    """n parameters like an MLP's: alternating (width, k) weights and (k,) biases, k varying."""
    out = []
    for i in range(n // 2):
        k = 16 + (i * 37) % width
        out += [(width, k), (k,)]
    return out


def main(n_params: int = 100, rounds: int = 5, quick: bool = False):
    import jitorch
    import jitorch.optim as jo
    from jitorch.optim import optimizer as jopt
    torch = try_import("torch")
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes(n_params)]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes(n_params)]
    numel = sum(a.size for a in arrs)
    rows = []
    for label, (cls, kw) in CASES.items():
        fns, notes = {}, {}
        jps = [jitorch.tensor(a, requires_grad=True) for a in arrs]
        for p, g in zip(jps, grads):
            p.grad = jitorch.tensor(g)
        opt = getattr(jo, cls)(jps, **kw)
        opt.step()  # compile (the first step creates the state)
        opt.step()

        def scripted(opt=opt):
            opt.step()

        def eager(opt=opt):
            jopt.USE_SCRIPT = False
            try:
                opt.step()
            finally:
                jopt.USE_SCRIPT = True
        fns["jitorch"], fns["jitorch eager"] = scripted, eager
        if opt._fn.fallbacks:
            notes["jitorch"] = f"fell back to eager: {opt._fn.fallbacks}"
        if torch is None:
            notes["PyTorch foreach"] = notes["PyTorch single-tensor"] = "not installed"
        else:
            for name, foreach in (("PyTorch foreach", True), ("PyTorch single-tensor", False)):
                tps = [torch.tensor(a, requires_grad=True) for a in arrs]
                for p, g in zip(tps, grads):
                    p.grad = torch.tensor(g)
                topt = getattr(torch.optim, cls)(tps, foreach=foreach, **kw)
                topt.step()
                fns[name] = topt.step
        rows.append((label, timed_rows(fns, notes, rounds=rounds)))
    print_table(f"Optimizer step, {n_params} float32 parameters of mixed sizes "
                f"({numel} elements)", "optimizer", PEERS, rows, unit="us per step")
    print(jit_stats_line())


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    main(rounds=2 if quick else 5, quick=quick)
