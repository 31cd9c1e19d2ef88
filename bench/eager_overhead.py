"""Eager per-op latency and autograd overhead: jitorch vs NumPy (and PyTorch when installed).

Goal (issue 20): every small-tensor op at most 1.3x PyTorch eager's latency, one thread;
large-tensor ops within 10% of NumPy; a tiny autograd step and the per-node cost of recording and
of `backward()` near PyTorch's. Prints Markdown tables; ratios are jitorch time / peer time
(lower is better for jitorch). Three parts:

1. per-op latency, same run for every peer (interleaved rounds, best of rounds);
2. a breakdown of jitorch's microseconds per op by phase (`--breakdown`): cProfile's own time of
   each function on a tight loop, each function assigned to the phase it belongs to (see
   `_PHASES`), the shares scaled to the measured un-profiled latency;
3. autograd: a tiny MLP step (4x4, forward + backward), and chains of 50 adds, 50 muls and 50
   matmuls (by a constant that needs no gradient) and 50 tanhs (a node that saves its output):
   the forward per node (the op and its recording, the graph then dropped unused) and
   `backward()` per node (forward + backward less forward).

    python bench/eager_overhead.py [--breakdown] [--cpu] [--autograd]

`--autograd` runs part 3 only.

`--cpu` times each call in this process's CPU seconds instead of wall seconds (steadier on a
shared machine). The process's CPU seconds close the report (one thread everywhere: PyTorch's
intra-op pool and every BLAS are pinned to one).
"""
from __future__ import annotations

import cProfile
import pstats
import sys
import time

import numpy as np

import jitorch as jt
import jitorch.nn.functional as jF
from _harness import fmt_us, interleaved, machine, stamp, try_import

torch = try_import("torch")
if torch is not None:
    torch.set_num_threads(1)
    import torch.nn.functional as tF
try:
    from threadpoolctl import threadpool_limits
    threadpool_limits(1)  # same BLAS threads for every peer
except ImportError:
    pass


def cases():
    """(label, arrays, f(module, functional, *tensors), NumPy equivalent) per op."""
    rng = np.random.default_rng(0)
    out = []
    a, b = (rng.standard_normal((4, 4)).astype(np.float32) for _ in range(2))
    bias = rng.standard_normal(4).astype(np.float32)
    v16 = rng.standard_normal(16).astype(np.float32)
    out += [
        ("add 4x4", (a, b), lambda m, F, x, y: m.add(x, y), np.add),
        ("x * 2.0 4x4", (a,), lambda m, F, x: x * 2.0, lambda x: x * np.float32(2.0)),
        ("relu 4x4", (a,), lambda m, F, x: m.relu(x), lambda x: np.maximum(x, 0)),
        ("exp 4x4", (a,), lambda m, F, x: m.exp(x), np.exp),
        ("sum 4x4", (a,), lambda m, F, x: x.sum(), lambda x: x.sum()),
        ("mean(1) 4x4", (a,), lambda m, F, x: x.mean(1), lambda x: x.mean(1)),
        ("matmul 4x4", (a, b), lambda m, F, x, y: m.matmul(x, y), np.matmul),
        ("F.linear 4x4", (a, b, bias), lambda m, F, x, w, c: F.linear(x, w, c),
         lambda x, w, c: x @ w.T + c),
        ("softmax(1) 4x4", (a,), lambda m, F, x: F.softmax(x, dim=1),
         lambda x: (lambda e: e / e.sum(1, keepdims=True))(np.exp(x - x.max(1, keepdims=True)))),
        ("view(-1) 4x4", (a,), lambda m, F, x: x.view(-1), lambda x: x.reshape(-1)),
        ("reshape(2, 8) 4x4", (a,), lambda m, F, x: x.reshape(2, 8), lambda x: x.reshape(2, 8)),
        ("t() 4x4", (a,), lambda m, F, x: x.t(), lambda x: x.T),
        ("x[1:3] 4x4", (a,), lambda m, F, x: x[1:3], lambda x: x[1:3]),
        ("cat 2x 4x4", (a, b), lambda m, F, x, y: m.cat([x, y]),
         lambda x, y: np.concatenate([x, y])),
        ("x[3] 16", (v16,), lambda m, F, x: x[3], lambda x: x[3:4].reshape(())),
    ]
    for label, shape in (("1 elem", (1,)), ("1M elems", (1000, 1000))):
        a = rng.standard_normal(shape).astype(np.float32)
        b = rng.standard_normal(shape).astype(np.float32)
        out.append((f"add {label}", (a, b), lambda m, F, x, y: m.add(x, y), np.add))
        out.append((f"sum {label}", (a,), lambda m, F, x: x.sum(), lambda x: x.sum()))
    n = 512
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    out.append((f"matmul {n}x{n}", (a, b), lambda m, F, x, y: m.matmul(x, y), np.matmul))
    for label, n in (("small", 16), ("large", 1_000_000)):
        a = rng.standard_normal(n).astype(np.float32)
        if n > 16:
            out.append((f"x[3] {label}", (a,), lambda m, F, x: x[3],
                        lambda x: x[3:4].reshape(())))
        idx = rng.integers(0, n, n // 4)
        out.append((f"x[int idx] {label}", (a, idx), lambda m, F, x, i: x[i],
                    lambda x, i: x[i]))
    return out


# --- breakdown ---------------------------------------------------------------------------------
# cProfile's own time per function, by phase. A function not named here is classified by where it
# lives: NumPy's Python functions and C builtins are "NumPy", jitorch's op implementations
# (jitorch/_ops/*) "impl", the rest of jitorch "other". cProfile does not see ufunc calls
# (np.add, np.exp, ...): their time counts in the function that calls them, mostly "impl".
_PHASES = {
    "args": ("_norm_varargs", "_check_first", "_tensor_view", "_getitem", "_parse",
             "_classify", "_trim_basic", "_slice_bound", "_check_list", "wrap_dim", "_index",
             "_infer_shape", "body", "linear", "softmax", "_run_softmax", "_freeze",
             "reduce_dims", "_check_softmax_input", "_binary", "__add__", "__mul__",
             "__getitem__", "_reduce_args", "_fast"),
    "dtype/dispatch": ("dispatch", "_elementwise_args", "_apply_rule", "_operand_dtype",
                       "promote_tiers", "scalar_category", "_promote", "<lambda>"),
    "wrap": ("_wrap", "_make", "from_numpy_dtype", "_init"),
    "views": ("_mark_views",),
    "autograd": ("record", "edge_of", "rule_kwargs", "__init__"),
}
_BY_NAME = {n: p for p, names in _PHASES.items() for n in names}
_ORDER = ("fn", "args", "dtype/dispatch", "impl", "NumPy", "wrap", "views", "autograd", "other")


def _phase(key) -> str:
    file, _line, fn = key
    if fn in _BY_NAME and (_BY_NAME[fn] != "autograd" or "autograd" in file):
        return _BY_NAME[fn]
    if file.startswith("<jitorch op"):  # the registry's generated public functions: argument
        return "fn"  # binding and, on their fast path, the dispatch, wrapping and view marking
    if file == "~" or "numpy" in file:
        return "NumPy"
    if "jitorch/_ops/" in file:
        return "impl"
    return "other"


def breakdown(f, wall_s: float, n: int = 20000) -> dict:
    """Microseconds per call by phase: the profile's shares scaled to the measured `wall_s`."""
    def loop():
        for _ in range(n):
            f()
    pr = cProfile.Profile()
    pr.enable()
    loop()
    pr.disable()
    st = pstats.Stats(pr).stats
    by = dict.fromkeys(_ORDER, 0.0)
    for key, (_cc, _nc, tt, _ct, _callers) in st.items():
        if key[2] in ("loop", "<lambda>") and "eager_overhead" in key[0]:
            continue  # the bench's own loop and lambdas
        if key[2] == "disable":
            continue
        by[_phase(key)] += tt
    total = sum(by.values()) or 1.0
    return {k: wall_s * 1e6 * v / total for k, v in by.items()}


# --- autograd ----------------------------------------------------------------------------------
def autograd_cases(m, F):
    """{name: callable} for one backend: the tiny MLP step, and per chain op (add, mul,
    matmul, tanh) a 50-node chain's forward (`<op>`) and forward + backward (`<op>+bwd`)."""
    rng = np.random.default_rng(1)
    x = m.from_numpy(rng.standard_normal((4, 4)).astype(np.float32))
    w1, w2 = (m.from_numpy(rng.standard_normal((4, 4)).astype(np.float32)).requires_grad_()
              for _ in range(2))
    b1, b2 = (m.from_numpy(rng.standard_normal(4).astype(np.float32)).requires_grad_()
              for _ in range(2))
    a = m.from_numpy(rng.standard_normal((4, 4)).astype(np.float32)).requires_grad_()
    c = m.from_numpy(rng.standard_normal((4, 4)).astype(np.float32))

    def mlp():
        loss = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2).sum()
        loss.backward()
        for p in (w1, w2, b1, b2):
            p.grad = None

    out = {"mlp": mlp}
    for name, f in CHAIN_OPS.items():
        def chain(f=f):
            y = a
            for _ in range(CHAIN):
                y = f(m, y, c)
            return y.sum()

        def chain_backward(chain=chain):
            chain().backward()
            a.grad = None
        out[name], out[name + "+bwd"] = chain, chain_backward
    return out


CHAIN = 50  # nodes per chain (its final sum: one node more, in every peer alike)
CHAIN_OPS = {"add": lambda m, y, c: y + c, "mul": lambda m, y, c: y * c,
             "matmul": lambda m, y, c: m.matmul(y, c), "tanh": lambda m, y, c: m.tanh(y)}


def main():
    show_breakdown = "--breakdown" in sys.argv
    timer = time.process_time if "--cpu" in sys.argv else time.perf_counter
    cpu0 = time.process_time()
    print(f"eager_overhead — {stamp()} — {machine()}; "
          f"{'CPU' if timer is time.process_time else 'wall'} us per call\n")
    if "--autograd" not in sys.argv:
        per_op(show_breakdown, timer)
    autograd(timer)
    print(f"\nCPU seconds (this process): {time.process_time() - cpu0:.1f}")


def per_op(show_breakdown: bool, timer):
    rows = []
    all_cases = cases()
    for _name, arrays, f, _npf in all_cases:  # the first call of each op, then what it queued
        f(jt, jF, *[jt.from_numpy(a) for a in arrays])
    # (a large float sum's compiled loop compiles in jitorch's compile worker: timed once ready)
    jt.jit.wait_compiled()
    for name, arrays, f, npf in all_cases:
        jt_args = [jt.from_numpy(a) for a in arrays]
        fns = {"jt": lambda: f(jt, jF, *jt_args), "np": lambda: npf(*arrays)}
        if torch is not None:
            pt_args = [torch.from_numpy(a) for a in arrays]
            fns["pt"] = lambda: f(torch, tF, *pt_args)
        t = interleaved(fns, timer=timer)
        bd = breakdown(fns["jt"], t["jt"]) if show_breakdown and arrays[0].size <= 16 else None
        rows.append((name, t["jt"], t["np"], t.get("pt"), bd))
    head = "| op | jitorch us | NumPy us | jitorch/NumPy |"
    head += " PyTorch us | jitorch/PyTorch |" if torch is not None else ""
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, t_jt, t_np, t_pt, _ in rows:
        line = f"| {name} | {fmt_us(t_jt)} | {fmt_us(t_np)} | {t_jt / t_np:.2f} |"
        if t_pt is not None:
            line += f" {fmt_us(t_pt)} | {t_jt / t_pt:.2f} |"
        print(line)
    if show_breakdown:
        print("\njitorch us per call by phase (cProfile own time, scaled to the latency above; fn: "
              "the generated op function, which runs the fast path itself)\n")
        print("| op | " + " | ".join(_ORDER) + " |")
        print("|" + "---|" * (len(_ORDER) + 1))
        for name, _t, _n, _p, bd in rows:
            if bd is not None:
                print(f"| {name} | " + " | ".join(f"{bd[k]:.2f}" for k in _ORDER) + " |")


def autograd(timer):
    peers = {"jt": autograd_cases(jt, jF)}
    if torch is not None:
        peers["pt"] = autograd_cases(torch, tF)
    keys = ["mlp"] + [k + s for k in CHAIN_OPS for s in ("", "+bwd")]
    t = {k: interleaved({p: c[k] for p, c in peers.items()}, rounds=5, timer=timer)
         for k in keys}
    print(f"\nautograd (4x4 float32; per node: a {CHAIN}-node chain, forward = the op and its "
          "recording, backward = forward + backward less forward)\n")
    head = "| case | jitorch us |" + (" PyTorch us | jitorch/PyTorch |" if torch else "")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    derived = {"tiny MLP step (2 linear + relu + sum, backward)": {p: t["mlp"][p] for p in peers}}
    for k in CHAIN_OPS:
        derived[f"forward, per {k} node"] = {p: t[k][p] / CHAIN for p in peers}
        derived[f"backward, per {k} node"] = {p: (t[k + "+bwd"][p] - t[k][p]) / CHAIN
                                              for p in peers}
    for name, v in derived.items():
        line = f"| {name} | {fmt_us(v['jt'])} |"
        if "pt" in v:
            line += f" {fmt_us(v['pt'])} | {v['jt'] / v['pt']:.2f} |"
        print(line)


if __name__ == "__main__":
    main()
