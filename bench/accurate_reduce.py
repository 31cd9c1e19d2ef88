"""The cost of accurate float32 reductions: blocked sums (targets/cpu/lower_reduce.py) vs the
sequential sums jitorch emitted before, NumPy (pairwise) and, when installed, PyTorch (cascade).

Compiled sums run over blocks of `lower_reduce.BLOCK` elements (vectorised inside a block) and
add each block's partial sum into a float64 total; reductions over leading dims accumulate in a
float64 buffer. "jitorch sequential" is the same program generated with
`lower_reduce.BLOCKED = False` (one float32 accumulator per output, as before), in the same
run. Inputs are random values in [1, 2): the accuracy table gives the error against the same
workload in float64, max |error| / max |reference|.

    python bench/accurate_reduce.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

from _harness import jit_stats_line, pin_threads, print_table, timed_rows, try_import

pin_threads(1)

import jitorch  # noqa: E402
import jitorch.nn.functional as F  # noqa: E402
from jitorch.script.targets.cpu import lower_reduce  # noqa: E402

torch = try_import("torch")
PEERS = ["jitorch", "jitorch sequential", "NumPy", "PyTorch"]


def sum_all(x):
    return x.sum()


def mean_all(x):
    return x.mean()


def sum_rows(x):
    return x.sum(-1)


def sum_cols(x):
    return x.sum(0)


def mean_fused(x):
    return (x * 2.0).mean(-1)


def softmax_rows(x):
    return F.softmax(x, -1)


def centre_rows(x):
    return x - x.mean(-1, True)


NUMPY = {sum_all: lambda a: a.sum(), mean_all: lambda a: a.mean(),
         sum_rows: lambda a: a.sum(-1), sum_cols: lambda a: a.sum(0),
         mean_fused: lambda a: (a * np.float32(2.0)).mean(-1),
         softmax_rows: lambda a: (lambda e: e / e.sum(-1, keepdims=True))(
             np.exp(a - a.max(-1, keepdims=True))),
         centre_rows: lambda a: a - a.mean(-1, keepdims=True)}
TORCH = {sum_all: lambda t: t.sum(), mean_all: lambda t: t.mean(),
         sum_rows: lambda t: t.sum(-1), sum_cols: lambda t: t.sum(0),
         mean_fused: lambda t: (t * 2.0).mean(-1),
         softmax_rows: lambda t: torch.softmax(t, -1),
         centre_rows: lambda t: t - t.mean(-1, True)}


def _scripted(fn, blocked: bool):
    """A scripted copy of fn whose programs are generated with BLOCKED = blocked (the flag is
    read at generation time, i.e. on the first call of each specialisation)."""
    sf = jitorch.script(fn)

    def call(x):
        old = lower_reduce.BLOCKED
        lower_reduce.BLOCKED = blocked
        try:
            return sf(x)
        finally:
            lower_reduce.BLOCKED = old
    return call


def _err(got, a64_ref) -> float:
    """max |got - ref| / max |ref| (normwise: centred rows have entries near 0)."""
    g = np.asarray(got, dtype=np.float64).reshape(-1)
    r = np.asarray(a64_ref, dtype=np.float64).reshape(-1)
    return float(np.max(np.abs(g - r)) / max(np.max(np.abs(r)), 1e-30))


def main(quick: bool = False):
    sizes = (10 ** 3, 10 ** 5, 10 ** 7) if quick else (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6,
                                                       10 ** 7)
    cases = [(f, (n,)) for f in (sum_all, mean_all) for n in sizes]
    cases += [(sum_rows, (1000, 1000)), (sum_rows, (10, 10 ** 6)),
              (sum_cols, (1000, 1000)), (sum_cols, (10 ** 6, 10)),
              (mean_fused, (1000, 1000)), (mean_fused, (10, 10 ** 6)),
              (softmax_rows, (256, 1024)), (softmax_rows, (4, 10 ** 6)),
              (centre_rows, (256, 1024)), (centre_rows, (4, 10 ** 6))]
    scripted = {}
    rng = np.random.default_rng(0)
    rows, errs = [], []
    for fn, shape in cases:
        a = (rng.random(int(np.prod(shape)), dtype=np.float32) + 1).reshape(shape)
        x = jitorch.tensor(a)
        for blocked in (True, False):
            if (fn, blocked) not in scripted:
                scripted[fn, blocked] = _scripted(fn, blocked)
        acc, seq = scripted[fn, True], scripted[fn, False]
        fns = {"jitorch": lambda: acc(x), "jitorch sequential": lambda: seq(x),
               "NumPy": lambda: NUMPY[fn](a)}
        notes = {}
        if torch is not None:
            tt = torch.from_numpy(a)
            fns["PyTorch"] = lambda: TORCH[fn](tt)
        else:
            notes["PyTorch"] = "not installed"
        label = f"{fn.__name__} {'x'.join(str(s) for s in shape)}"
        rows.append((label, timed_rows(fns, notes, rounds=3 if quick else 5)))
        ref = NUMPY[fn](a.astype(np.float64))
        e = {"jitorch": _err(acc(x).numpy(), ref), "jitorch sequential": _err(seq(x).numpy(), ref),
             "NumPy": _err(NUMPY[fn](a), ref)}
        e["PyTorch"] = _err(TORCH[fn](torch.from_numpy(a)).numpy(), ref) if torch else None
        errs.append((label, e))
    print_table("float32 reductions: blocked (jitorch) vs sequential sums", "workload", PEERS,
                rows)
    print("\n### error against float64: max |error| / max |reference|\n")
    print("| workload | " + " | ".join(PEERS) + " |")
    print("|" + "---|" * (len(PEERS) + 1))
    for label, e in errs:
        print(f"| {label} | " + " | ".join("n/a" if e.get(p) is None else f"{e[p]:.1e}"
                                          for p in PEERS) + " |")
    print()
    print(jit_stats_line())


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
