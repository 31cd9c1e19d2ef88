"""The interpreter tier against eager code (issue 17 item 5: "the interpreter tier is never
slower than eager code"): the same function run eagerly (Python calling jitorch's ops) and
interpreted over its specialised graph (`fn.graph_for(*args)`: what a scripted call runs while
its program compiles, or when it is not lowered), interleaved in one process, best of rounds,
in CPU time (thread_time). Interpreted two ways: the graph written out as Python
(`ir/graph_to_python.py`, what every interpreted call after a graph's first runs) and the IR
walk (`ir.interpreter.run_graph`, its first call). Prints a Markdown table: CPU microseconds
per call, the ratios to eager (lower is better for the interpreter) and the tier's extra
microseconds per node of the graph (a loop body's nodes counted once; negative: faster).

    python bench/interpreter_overhead.py [--rounds 7]
"""
from __future__ import annotations

import argparse

import jitorch as jt
import time

from _harness import machine, stamp
from jitorch.script.ir import graph_to_python, interpreter


def rnn_cell(x, h, w1, w2, b):
    for _ in range(10):
        h = jt.tanh(x @ w1 + h @ w2 + b)
    return h


def gelu_chain(x):
    return x * 0.5 * (1.0 + jt.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def mlp(x, w1, b1, w2, b2):
    h = jt.relu(x @ w1 + b1)
    return jt.softmax(h @ w2 + b2, -1)


def cases():
    r = jt.randn
    return [("RNN cell x10 (4x16)", rnn_cell, (r(4, 8), r(4, 16), r(8, 16), r(16, 16), r(16))),
            ("GELU chain, 64 elems", gelu_chain, (r(64),)),
            ("MLP 8-16-4, batch 4", mlp, (r(4, 8), r(8, 16), r(16), r(16, 4), r(4)))]


def cpu_interleaved(fns: dict, rounds: int, n: int = 200) -> dict:
    """This thread's CPU seconds per call of each of `fns`, best of `rounds` alternating
    rounds of `n` calls (CPU time, not wall: the machine is shared, and waiting for a core is
    not the code's cost)."""
    for f in fns.values():
        f()
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.thread_time()
            for _ in range(n):
                f()
            best[k] = min(best[k], (time.thread_time() - t0) / n)
    return best


def nodes(graph) -> int:
    return sum(1 for n in graph.nodes() if n.op != "prim::Constant")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    print(f"<!-- interpreter_overhead.py -->\n{stamp()} {machine()}\n")
    print("| workload | grad | eager CPU us | tier (as Python) CPU us | tier / eager | IR walk "
          "CPU us | walk / eager | tier's extra us per node |\n|---|---|---|---|---|---|---|---|")
    for name, fn, xs in cases():
        sf = jt.jit.script(fn)
        for grad in (False, True):
            args_ = [x.detach().requires_grad_(grad) for x in xs]
            # what the tier runs: the call's specialised, optimised graph (composites inlined,
            # checks folded, groups fused); under autograd, the differentiable forward
            g = sf.graph_for(*args_)
            n = nodes(g)
            tier = graph_to_python.GraphFunction(g)
            t = cpu_interleaved({"eager": lambda: fn(*args_), "tier": lambda: tier.run(args_),
                                 "walk": lambda: interpreter.run_graph(g, args_)},
                                rounds=args.rounds)
            e, p, w = (t[k] * 1e6 for k in ("eager", "tier", "walk"))
            print(f"| {name} | {'yes' if grad else 'no'} | {e:.1f} | {p:.1f} | {p / e:.2f}x | "
                  f"{w:.1f} | {w / e:.2f}x | {(p - e) / n:.2f} |")


if __name__ == "__main__":
    main()
