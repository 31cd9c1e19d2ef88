"""Optimizer step for 100 parameters of mixed sizes (float32): SGD with momentum, Adam, AdamW.

Peers, one thread each, timings interleaved (best of rounds):
- jitorch fused: `fused=True` (since issue 10 also the default, `fused=None`), the compiled
  GIL-free step (one program per options tuple and dtype; one fused loop per parameter writing
  param and state in place; optim CompiledStep);
- jitorch eager: `fused=False`: the same functional form run op by op;
- PyTorch foreach (`foreach=True`) and PyTorch single-tensor (`foreach=False`), when installed.
Then the compile cost of the fused step: a cold compile (fresh jitorch and Numba cache dirs, in
a subprocess) and the first step of a new process that finds them on disk.

Goal (issue 4): the fused step faster than PyTorch foreach.

    python bench/optim_step.py [--quick] [--no-compile]
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from _harness import jit_stats_line, pin_threads, print_table, timed_rows, try_import

PEERS = ["jitorch fused", "jitorch eager", "PyTorch foreach", "PyTorch single-tensor"]
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


def _check_equal(jps, tps, label):
    """The fused step's params equal PyTorch's after the same steps (float32 rounding)."""
    for p, q in zip(jps, tps):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=label)


def main(n_params: int = 100, rounds: int = 5):
    import jitorch
    import jitorch.optim as jo
    torch = try_import("torch")
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal(s).astype(np.float32) for s in shapes(n_params)]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes(n_params)]
    numel = sum(a.size for a in arrs)
    rows = []
    for label, (cls, kw) in CASES.items():
        fns, notes = {}, {}
        opts = {}
        for name, fused in (("jitorch fused", True), ("jitorch eager", False)):
            jps = [jitorch.tensor(a, requires_grad=True) for a in arrs]
            for p, g in zip(jps, grads):
                p.grad = jitorch.tensor(g)
            opts[name] = (jps, getattr(jo, cls)(jps, fused=fused, **kw))
        jf = opts["jitorch fused"][1]
        for _ in range(2):  # compile (the first step creates the state), then the steady state
            jf.step()
        fns["jitorch fused"] = jf.step
        fns["jitorch eager"] = opts["jitorch eager"][1].step
        if jf._fn.fallbacks:
            notes["jitorch fused"] = f"fell back to eager: {jf._fn.fallbacks}"
        if torch is None:
            notes["PyTorch foreach"] = notes["PyTorch single-tensor"] = "not installed"
        else:
            for name, foreach in (("PyTorch foreach", True), ("PyTorch single-tensor", False)):
                tps = [torch.tensor(a, requires_grad=True) for a in arrs]
                for p, g in zip(tps, grads):
                    p.grad = torch.tensor(g)
                topt = getattr(torch.optim, cls)(tps, foreach=foreach, **kw)
                for _ in range(2):
                    topt.step()
                fns[name] = topt.step
                if foreach:
                    _check_equal(opts["jitorch fused"][0], tps, label)
        rows.append((label, timed_rows(fns, notes, rounds=rounds)))
    print_table(f"Optimizer step, {n_params} float32 parameters of mixed sizes "
                f"({numel} elements), one thread", "optimizer", PEERS, rows,
                base="jitorch fused", unit="us per step")
    print(jit_stats_line())


_COLD = """
import sys, time
sys.path.insert(0, {bench!r})
import numpy as np
import jitorch, jitorch.optim as jo
from optim_step import shapes, CASES
rng = np.random.default_rng(0)
out = []
for label, (cls, kw) in CASES.items():
    ps = [jitorch.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
          for s in shapes({n})]
    for p in ps:
        p.grad = jitorch.ones_like(p)
    opt = getattr(jo, cls)(ps, fused=True, **kw)
    t = time.perf_counter()
    opt.step()  # SGD: the first step's program (buffers created)
    opt.step()  # and the steady state's
    out.append(f"{{label}}={{time.perf_counter() - t:.2f}}")
print(" ".join(out))
"""


def compile_times(n_params: int = 100):
    """Seconds of the first two fused steps per optimizer: cold (empty caches) and warm (a new
    process loading the programs from the caches the cold run wrote)."""
    with tempfile.TemporaryDirectory(prefix="jt-optim-bench-") as d:
        env = dict(os.environ, JITORCH_CACHE_DIR=os.path.join(d, "jt"),
                   NUMBA_CACHE_DIR=os.path.join(d, "nb"))
        code = _COLD.format(bench=os.path.dirname(os.path.abspath(__file__)), n=n_params)
        res = []
        for kind in ("cold", "warm"):
            t = time.perf_counter()
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                               text=True)
            wall = time.perf_counter() - t
            if r.returncode:
                res.append(f"{kind}: failed: {r.stderr.strip().splitlines()[-1:]}")
            else:
                res.append(f"{kind}: {r.stdout.strip()} s (process {wall:.1f} s)")
    print("First two fused steps (compile or disk-cache load), "
          f"{n_params} params: " + "; ".join(res))


if __name__ == "__main__":
    pin_threads(1)
    quick = "--quick" in sys.argv
    main(rounds=2 if quick else 5)
    if "--no-compile" not in sys.argv:
        compile_times()
