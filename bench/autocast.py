"""Autocast (issue 11): bfloat16 autocast matmul against float32, and what autocast costs when off.

Rows, same run, interleaved rounds, one BLAS thread for every peer:
- "matmul NxN": `a @ b` of float32 tensors outside autocast, and inside
  `autocast("cpu")` (the operands cast to bfloat16, multiplied in float32, the result rounded
  to bfloat16: NumPy has no bfloat16 GEMM, ml_dtypes stores the values); PyTorch the same when
  installed (oneDNN's bf16 GEMM where the CPU has AVX512-BF16/AMX, else a float32 fallback);
- "linear fwd+bwd": `F.linear(x, w, b).float().sum().backward()`;
- "bf16-rounded f32 matmul": NumPy's float32 matmul of inputs rounded through bfloat16, what a
  "medium" float32 matmul precision would cost here (the README's decision: every level stays
  exact float32);
- the checks autocast adds when off: eager dispatch has no new check (autocast shares the
  profiler's one `_intercept` check); a scripted call has one (`_autocast_hook[0] is not None`),
  timed alone against an empty function.

    python bench/autocast.py
"""
from __future__ import annotations

import timeit

import ml_dtypes
import numpy as np

import jitorch as jt
import jitorch.nn.functional as F
from _harness import fmt_us, interleaved, machine, stamp, try_import

torch = try_import("torch")
if torch is not None:
    torch.set_num_threads(1)
try:
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)
except ImportError:
    pass


def _in_autocast(mod, fn):
    def run():
        with mod.autocast("cpu"):
            return fn()
    return run


def matmul_rows():
    rng = np.random.default_rng(0)
    rows = []
    for n in (64, 256, 1024):
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        ja, jb = jt.from_numpy(a), jt.from_numpy(b)
        fns = {"f32": lambda: ja @ jb, "bf16": _in_autocast(jt, lambda: ja @ jb),
               "rounded": lambda: (a.astype(ml_dtypes.bfloat16).astype(np.float32)
                                   @ b.astype(ml_dtypes.bfloat16).astype(np.float32))}
        if torch is not None:
            ta, tb = torch.from_numpy(a), torch.from_numpy(b)
            fns["pt f32"] = lambda: ta @ tb
            fns["pt bf16"] = _in_autocast(torch, lambda: ta @ tb)
        rows.append((f"matmul {n}x{n}", interleaved(fns, rounds=3)))
    return rows


def linear_row():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 512)).astype(np.float32)
    w = rng.standard_normal((512, 512)).astype(np.float32) * 0.05
    b = np.zeros(512, np.float32)

    def make(mod, fn):
        xt = mod.from_numpy(x)
        wt, bt = mod.from_numpy(w).requires_grad_(), mod.from_numpy(b).requires_grad_()

        def step():
            fn.linear(xt, wt, bt).float().sum().backward()
        return step

    fns = {"f32": make(jt, F), "bf16": _in_autocast(jt, make(jt, F))}
    if torch is not None:
        tf = torch.nn.functional
        fns["pt f32"] = make(torch, tf)
        fns["pt bf16"] = _in_autocast(torch, make(torch, tf))
    return ("linear 64x512x512 fwd+bwd", interleaved(fns, rounds=3))


def scripted_check() -> float:
    """Seconds of the check a scripted call makes for autocast, alone vs an empty function."""
    from jitorch import _profiling
    ns = {"_autocast_hook": _profiling.autocast_hook}
    exec("def with_check():\n    if _autocast_hook[0] is not None:\n        return 1\n"
         "def empty():\n    pass\n", ns)
    t = {k: min(timeit.repeat(ns[k], number=200_000, repeat=7)) / 200_000
         for k in ("with_check", "empty")}
    return t["with_check"] - t["empty"]


def main():
    rows = matmul_rows() + [linear_row()]
    print(f"autocast — {stamp()} — {machine()}\n")
    head = ("| case | jitorch f32 us | jitorch bf16 autocast us | bf16/f32 | "
            "bf16-rounded f32 matmul us | PyTorch f32 us | PyTorch bf16 autocast us | "
            "PyTorch bf16/f32 |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, t in rows:
        pt, ptb = t.get("pt f32"), t.get("pt bf16")
        cells = [name, fmt_us(t["f32"]), fmt_us(t["bf16"]), f"{t['bf16'] / t['f32']:.2f}",
                 fmt_us(t["rounded"]) if "rounded" in t else "-",
                 fmt_us(pt) if pt else "-", fmt_us(ptb) if ptb else "-",
                 f"{ptb / pt:.2f}" if pt else "-"]
        print("| " + " | ".join(cells) + " |")
    print(f"\nscripted-call autocast check alone: {scripted_check() * 1e9:.0f} ns")


if __name__ == "__main__":
    main()
