"""The profiler's cost per op: inactive (the one check in dispatch) and active (issue 11).

Columns, per eager op and for a scripted call (same run, interleaved rounds):
- "no check": eager dispatch compiled from `registry.dispatch`'s own source with the profiler
  check removed (what dispatch cost before the profiler existed);
- "inactive": the same source with the check, no profiler running (goal: not measurably above
  "no check"); for the scripted call, the plain call (the profiler swaps
  `ScriptFunction.__call__` only while active: no check exists there);
- "active": inside `jitorch.profiler.profile()`; "active+": with record_shapes,
  profile_memory and with_stack;
- PyTorch's `torch.profiler.profile()` inactive/active for the same op, when installed.

    python bench/profiler_overhead.py
"""
from __future__ import annotations

import inspect
import textwrap

import numpy as np

import jitorch as jt
from _harness import fmt_us, interleaved, machine, stamp, try_import
from jitorch._ops import registry

torch = try_import("torch")
if torch is not None:
    torch.set_num_threads(1)


def _dispatch_copies():
    """registry.dispatch compiled from its own source twice, in one copy of the registry's
    namespace: as it is, and without its two profiler lines (identical construction, so the
    difference is the check alone)."""
    src = textwrap.dedent(inspect.getsource(registry.dispatch))
    lines = src.splitlines()
    i = next(k for k, ln in enumerate(lines) if "_intercept[0] is not None" in ln)
    ns = dict(vars(registry))
    exec(src, ns)
    with_check = ns["dispatch"]
    exec("\n".join(lines[:i] + lines[i + 2:]), ns)
    return with_check, ns["dispatch"]


@jt.jit.script
def _scripted(x, y):
    return jt.tanh(x * y) + 1.0


def cases():
    rng = np.random.default_rng(0)
    a1, b1 = (jt.from_numpy(rng.standard_normal(1).astype(np.float32)) for _ in range(2))
    m4 = jt.from_numpy(rng.standard_normal((4, 4)).astype(np.float32))
    big = jt.from_numpy(rng.standard_normal((1000, 1000)).astype(np.float32))
    add, sm, mm = registry.OPS["add"], registry.OPS["sum"], registry.OPS["matmul"]
    out = [("add 1 elem", add, (a1, b1), {"alpha": 1}, lambda: jt.add(a1, b1)),
           ("sum 1 elem", sm, (a1,), {"dim": None, "keepdim": False, "dtype": None},
            lambda: jt.sum(a1)),
           ("matmul 4x4", mm, (m4, m4), {}, lambda: jt.matmul(m4, m4)),
           ("add 1M elems", add, (big, big), {"alpha": 1}, lambda: jt.add(big, big))]
    _scripted(m4, m4)  # compiled in this call (the harness sets JITORCH_COMPILE=sync)
    out.append(("scripted call 4x4", None, None, None, lambda: _scripted(m4, m4)))
    return out


def _torch_fns(name):
    rng = np.random.default_rng(0)
    a1 = torch.from_numpy(rng.standard_normal(1).astype(np.float32))
    m4 = torch.from_numpy(rng.standard_normal((4, 4)).astype(np.float32))
    big = torch.from_numpy(rng.standard_normal((1000, 1000)).astype(np.float32))
    return {"add 1 elem": lambda: torch.add(a1, a1), "sum 1 elem": lambda: torch.sum(a1),
            "matmul 4x4": lambda: torch.matmul(m4, m4),
            "add 1M elems": lambda: torch.add(big, big)}.get(name)


def _in_profiler(factory, fns: dict) -> dict:
    with factory():
        return interleaved(fns, rounds=3)


def _check_alone() -> float:
    """Seconds of the inactive check itself: a function holding only it vs an empty one."""
    import timeit
    ns = {"_intercept": registry._intercept}
    exec("def with_check(_profile=True):\n"
         "    if _intercept[0] is not None and _profile:\n        return 1\n"
         "def empty(_profile=True):\n    pass\n", ns)
    t = {k: min(timeit.repeat(ns[k], number=200_000, repeat=7)) / 200_000
         for k in ("with_check", "empty")}
    return t["with_check"] - t["empty"]


def main():
    check, nocheck = _dispatch_copies()
    rows = []
    for name, op, slots, attrs, call in cases():
        fns = {"inactive": call}
        if op is not None:
            fns["no check"] = (lambda op=op, s=slots, a=attrs: nocheck(op, s, a))
            fns["inactive"] = (lambda op=op, s=slots, a=attrs: check(op, s, a))
        t = interleaved(fns, rounds=9)  # the A/B pair: more rounds, the best of each
        t["active"] = _in_profiler(jt.profiler.profile, {"x": fns["inactive"]})["x"]
        t["active+"] = _in_profiler(
            lambda: jt.profiler.profile(record_shapes=True, profile_memory=True,
                                        with_stack=True), {"x": fns["inactive"]})["x"]
        tf = _torch_fns(name) if torch is not None else None
        if tf is not None:
            t["pt"] = interleaved({"x": tf})["x"]
            t["pt active"] = _in_profiler(torch.profiler.profile, {"x": tf})["x"]
        rows.append((name, t))
    print(f"profiler_overhead — {stamp()} — {machine()}\n")
    head = ("| op | no check us | inactive us | inactive/no check | active us | active+ us |"
            " PyTorch inactive us | PyTorch active us |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, t in rows:
        nc = t.get("no check")
        ratio = f"{t['inactive'] / nc:.3f}" if nc else "-"
        pt, pta = t.get("pt"), t.get("pt active")
        print(f"| {name} | {fmt_us(nc) if nc else '-'} | {fmt_us(t['inactive'])} | {ratio} | "
              f"{fmt_us(t['active'])} | {fmt_us(t['active+'])} | "
              f"{fmt_us(pt) if pt else '-'} | {fmt_us(pta) if pta else '-'} |")
    print(f"\nthe inactive check alone: {_check_alone() * 1e9:.0f} ns per op")

if __name__ == "__main__":
    main()
