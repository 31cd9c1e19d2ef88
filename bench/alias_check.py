"""Cost of the shared-memory check at the call boundary (script/runtime/alias.py,
targets/cpu/lower_overlap.py).

A scripted function that writes to an argument checks, at every call, that the written
arguments share no memory with another argument or themselves (else the call runs in place in
the interpreter, as eager would). Compiled programs run the check themselves, at the top of the
entry; other tiers run `alias.overlap` in Python. This measures, on arguments that share
nothing (the common case):

- the check alone, run N times in a compiled loop over the same arrays (its cost without
  call noise: on this shared machine a call's time varies more than the check costs);
- the same compiled program with and without its check, called through its entry point, and
  the ScriptFunction call (what a caller pays);
- the Python-side check (interpreted and autodiff tiers);
- NumPy's byte-bounds test `np.may_share_memory` per pair, the peer for the Python check.

Cases: two small tensors (`a.add_(b)`, 16 elements: the check is all the program adds), and an
optimizer-like call with 4 lists of 16 tensors (64 rows, the sorted sweep).

    python bench/alias_check.py [--quick]
"""
from __future__ import annotations

import sys
from typing import List

import numpy as np

from _harness import fmt_us, interleaved, machine, pin_threads, stamp

pin_threads(1)


def _programs(sf, args):
    """(entry point with the check, entry point without it) of sf's compiled program for args."""
    from jitorch.script.kernels import cache
    from jitorch.script.runtime import entry as runtime  # (_boundary lives there)
    from jitorch.script.targets.cpu import program as cpu
    sf(*args)  # compile the real specialisation (checks on)
    key, _ = sf._key(list(args))
    entry = sf._cache[key]
    assert entry.kind == "compiled" and entry.checks_overlap, entry.reason
    xs = [runtime._boundary(a) for a in args]
    with_check = runtime._entry_point(entry.fn, xs)
    prog = cpu.generate(entry.graph, written=())  # the same program, no check
    mod, _ = cache.load_module(prog.source, getattr(prog, "njit_options", None))
    without = runtime._entry_point(getattr(mod, prog.entry), xs)
    checked = sys.modules[entry.fn.__module__]
    return xs, with_check, without, checked


def _check_loop(mod, xs, written):
    """ns per check: an njit loop running the program's own check (its helpers, from its
    module) on `xs` (arrays and tuples of arrays), as the entry's prologue does."""
    import time

    import numba
    plain = [i for i, x in enumerate(xs) if isinstance(x, np.ndarray)]
    lists = [i for i, x in enumerate(xs) if isinstance(x, tuple)]
    names = [f"x{i}" for i in range(len(xs))]
    body = [f"    rows = _jt_rows({len(plain)}{''.join(f' + len(x{i})' for i in lists)})",
            "    bad = False"]
    body += [f"    bad = _jt_put(rows, {r}, x{i}, {i in written}) or bad"
             for r, i in enumerate(plain)]
    body.append(f"    k = {len(plain)}")
    for i in lists:
        body += [f"    for e in x{i}:", f"        bad = _jt_put(rows, k, e, {i in written}) or bad",
                 "        k += 1"]
    body += ["    if bad or _jt_meet(rows):", "        c += 1"]
    unpack = "".join(f"    x{i} = [e for e in x{i}]\n" for i in lists)  # as the entry does
    src = (f"def loop({', '.join(names)}, n):\n{unpack}    c = 0\n    for _ in range(n):\n" +
           "\n".join("    " + ln for ln in body) + "\n    return c\n")
    ns = {"_jt_rows": mod._jt_rows, "_jt_put": mod._jt_put, "_jt_meet": mod._jt_meet}
    exec(src, ns)
    loop = numba.njit(ns["loop"])
    assert loop(*xs, 10) == 0
    best = float("inf")
    for _ in range(7):
        t0 = time.perf_counter()
        loop(*xs, 20000)
        best = min(best, (time.perf_counter() - t0) / 20000)
    return best


def main(rounds=5):
    import jitorch
    from jitorch.script.runtime import alias

    @jitorch.jit.script
    def axpy(a, b):
        a.add_(b)
        return a

    @jitorch.jit.script
    def lists(ps: List[jitorch.Tensor], gs: List[jitorch.Tensor], ms: List[jitorch.Tensor],
              vs: List[jitorch.Tensor], lr: float):
        for i in range(len(ps)):
            ms[i].mul_(0.9).add_(gs[i])
            vs[i].mul_(0.99).add_(gs[i] * gs[i])
            ps[i].add_(ms[i], alpha=-lr)
        return ps[0]

    a, b = jitorch.ones(16), jitorch.ones(16)
    mk = lambda: [jitorch.ones(16) for _ in range(16)]  # noqa: E731
    largs = (mk(), mk(), mk(), mk(), 0.01)
    rows = []
    for name, sf, args, written in [("a.add_(b), 2 tensors of 16", axpy, (a, b), (0,)),
                                    ("4 lists x 16 tensors of 16", lists, largs, (0, 2, 3))]:
        xs, with_check, without, mod = _programs(sf, args)
        alone = _check_loop(mod, xs, written)
        arrays = [x for v in xs for x in (v if isinstance(v, tuple) else (v,))
                  if isinstance(x, np.ndarray)]
        pairs = [(arrays[i], arrays[j]) for i in range(len(arrays))
                 for j in range(i + 1, len(arrays))]
        t = interleaved({
            "program, no check": lambda: without(*xs),
            "program, check": lambda: with_check(*xs),
            "scripted call": lambda: sf(*args),
            "alias.overlap (Python)": lambda: alias.overlap(args, written),
            "np.may_share_memory, all pairs": lambda: [np.may_share_memory(x, y)
                                                        for x, y in pairs],
        }, rounds=rounds)
        rows.append((name, len(arrays), t, alone))
    print(f"## Shared-memory check at the call boundary ({stamp()}; {machine()})\n")
    print("Nothing aliases. us per call (best of rounds). ratio: (program no check + check "
          "alone) / program no check.\n")
    print("| case | tensors | check alone | program no check | program check | ratio | "
          "scripted call | check / scripted call | alias.overlap (Python) | "
          "np.may_share_memory, all pairs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, n, t, alone in rows:
        no, yes, call = t["program, no check"], t["program, check"], t["scripted call"]
        print(f"| {name} | {n} | {alone * 1e9:.0f} ns | {fmt_us(no)} | {fmt_us(yes)} | "
              f"{(no + alone) / no:.3f}x | {fmt_us(call)} | {alone / call:.2%} | "
              f"{fmt_us(t['alias.overlap (Python)'])} | "
              f"{fmt_us(t['np.may_share_memory, all pairs'])} |")


if __name__ == "__main__":
    main(rounds=2 if "--quick" in sys.argv else 5)
