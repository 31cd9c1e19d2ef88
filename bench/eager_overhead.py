"""Eager per-op latency: jitorch vs NumPy (and PyTorch when installed), same run.

Goal (issue 2): small-tensor op overhead near PyTorch eager's and never worse than 2x; large-tensor
ops within 10% of NumPy. Prints a Markdown table; ratios are jitorch time / peer time (lower is
better for jitorch).

    python bench/eager_overhead.py
"""
from __future__ import annotations

import numpy as np

import jitorch as jt
from _harness import fmt_us, interleaved, machine, stamp, try_import

torch = try_import("torch")
if torch is not None:
    torch.set_num_threads(1)
try:
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)  # same BLAS threads for every peer
except ImportError:
    pass


def cases():
    rng = np.random.default_rng(0)
    out = []
    for label, shape in (("1 elem", (1,)), ("1M elems", (1000, 1000))):
        a = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape).astype(np.float32)
        out.append((f"add {label}", (a, b), lambda m, x, y: m.add(x, y), np.add))
        out.append((f"sum {label}", (a,), lambda m, x: x.sum(), lambda x: x.sum()))
    for n in (4, 512):
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        out.append((f"matmul {n}x{n}", (a, b), lambda m, x, y: m.matmul(x, y), np.matmul))
    for label, n in (("small", 16), ("large", 1_000_000)):
        a = rng.standard_normal(n).astype(np.float32)
        out.append((f"x[3] {label}", (a,), lambda m, x: x[3], lambda x: x[3:4].reshape(())))
        idx = rng.integers(0, n, n // 4)
        out.append((f"x[int idx] {label}", (a, idx), lambda m, x, i: x[i], lambda x, i: x[i]))
    return out


def main():
    rows = []
    for name, arrays, f, npf in cases():
        jt_args = [jt.from_numpy(a) for a in arrays]
        fns = {"jt": lambda: f(jt, *jt_args), "np": lambda: npf(*arrays)}
        if torch is not None:
            pt_args = [torch.from_numpy(a) for a in arrays]
            fns["pt"] = lambda: f(torch, *pt_args)
        t = interleaved(fns)
        rows.append((name, t["jt"], t["np"], t.get("pt")))
    print(f"eager_overhead — {stamp()} — {machine()}\n")
    head = "| op | jitorch us | NumPy us | jitorch/NumPy |"
    head += " PyTorch us | jitorch/PyTorch |" if torch is not None else ""
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, t_jt, t_np, t_pt in rows:
        line = f"| {name} | {fmt_us(t_jt)} | {fmt_us(t_np)} | {t_jt / t_np:.2f} |"
        if t_pt is not None:
            line += f" {fmt_us(t_pt)} | {t_jt / t_pt:.2f} |"
        print(line)


if __name__ == "__main__":
    main()
