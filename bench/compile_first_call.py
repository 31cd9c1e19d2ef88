"""Compile time of small functions (issue 3): cold, from disk in a fresh process, new size.

Each measurement runs in a fresh child process with its own empty JITORCH_CACHE_DIR and
NUMBA_CACHE_DIR (created here, removed at the end); the second child reuses the first one's
cache directories. Times are the first call (jitorch: `script(fn)` + first call; hand Numba: first
call of the `cache=True` kernel; TorchScript: `torch.jit.script` + first two calls, its profiling
executor optimises on the second; torch.compile: first call), after imports. Goal (issue 3): a
new size never recompiles; a fresh process loads a cached program in under 50 ms beyond Numba's
start-up.

One-time costs are paid before the timings and reported in the header, so that no workload
pays them for the others by coming first in the list: Numba's start-up (first compile in a
process) and jitorch's compiler start-up (the first `script` call in a process imports the
frontend, the passes and the code generators, ~27 modules: measured by scripting and calling a
one-line function). Children run with Python's bytecode cache on (PYTHONPYCACHEPREFIX in the
benchmark's temp dir), as for an installed package: with PYTHONDONTWRITEBYTECODE=1 every child
recompiles jitorch's sources from text, ~50-100 ms that used to land on the first workload.

    python bench/compile_first_call.py
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
WORKLOADS = ("gelu_tanh", "mlp", "lstm")


def _args(name, np, size):
    rng = np.random.default_rng(0)
    if name == "gelu_tanh":
        return (rng.standard_normal(size * 1000).astype(np.float32),)
    if name == "mlp":
        from mlp import make_params
        return (rng.standard_normal((size, 784)).astype(np.float32), *make_params(rng))
    from lstm import make_args
    return make_args(rng, 10 + size, size, 32, 32)


def _compiles(jitorch, key="compiles"):
    try:
        s = jitorch.jit.stats()
        return s[key] if isinstance(s, dict) else getattr(s, key)
    except Exception:  # noqa: BLE001
        return None


def _warm_up(x):
    return x * 2.0 + 1.0


def child(peer: str) -> None:
    """Runs in a fresh process: times the first call of every workload for one peer."""
    t0 = time.perf_counter()
    import numpy as np
    sys.path.insert(0, str(HERE))
    import _harness
    _harness.pin_threads(1)
    out = {"import_s": time.perf_counter() - t0}
    if peer in ("jitorch", "Numba (hand)"):
        # Numba's one-time start-up (first compile in a process, ~0.6 s) is paid here, outside
        # the timings, by compiling a trivial uncached function
        import numba
        t = time.perf_counter()
        numba.njit(lambda v: v + 1)(1)
        out["numba_startup_s"] = time.perf_counter() - t
    if peer == "jitorch":
        import jitorch
        t = time.perf_counter()
        jitorch.script(_warm_up)(jitorch.from_numpy(np.ones(8, np.float32)))
        out["jitorch_startup_s"] = time.perf_counter() - t
    for name in WORKLOADS:
        a1, a2 = _args(name, np, 4), _args(name, np, 7)
        try:
            if peer == "jitorch":
                import jitorch
                wl = _harness.load_workloads(jitorch, "_wl_jt")
                j1 = [jitorch.from_numpy(a) for a in a1]
                j2 = [jitorch.from_numpy(a) for a in a2]
                d0 = _compiles(jitorch, "disk_hits")
                i0 = _compiles(jitorch, "interpreted_runs")
                t = time.perf_counter()
                f = jitorch.script(getattr(wl, name))
                f(*j1)
                first = time.perf_counter() - t
                disk = None if d0 is None else _compiles(jitorch, "disk_hits") - d0
                if i0 is not None and _compiles(jitorch, "interpreted_runs") > i0:
                    disk = "interpreted, not compiled"
                c0 = _compiles(jitorch)
                t = time.perf_counter()
                f(*j2)
                new = time.perf_counter() - t
                c1 = _compiles(jitorch)
                added = None if c0 is None else c1 - c0
            elif peer == "Numba (hand)":
                import _kernels
                f = getattr(_kernels, name)
                t = time.perf_counter()
                f(*a1)
                first = time.perf_counter() - t
                t = time.perf_counter()
                f(*a2)
                new, added, disk = time.perf_counter() - t, 0, None
            else:
                import torch
                wl = _harness.load_workloads(torch, "_wl_pt")
                p1 = [torch.from_numpy(a) for a in a1]
                p2 = [torch.from_numpy(a) for a in a2]
                if peer == "torch.compile" and name == "lstm":
                    out[name] = "skipped (unrolls the loop)"
                    continue
                t = time.perf_counter()
                if peer == "TorchScript":
                    f = torch.jit.script(getattr(wl, name))
                    f(*p1)
                else:
                    f = torch.compile(getattr(wl, name))
                f(*p1)
                first = time.perf_counter() - t
                t = time.perf_counter()
                f(*p2)
                new, added, disk = time.perf_counter() - t, None, None
            out[name] = {"first": first, "new": new, "added": added, "disk": disk}
        except Exception as e:  # noqa: BLE001
            out[name] = f"{peer}: {_harness.short_error(e, 70)}"
    print("RESULT " + json.dumps(out))


def run_child(peer, env):
    try:
        r = subprocess.run([sys.executable, __file__, "--child", peer], env=env, cwd=HERE,
                           capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        return {name: f"{peer}: child timed out" for name in WORKLOADS}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    err = (r.stderr.strip().splitlines() or ["no output"])[-1]
    return {name: f"{peer}: child failed: {err[:70]}" for name in WORKLOADS}


def _ms(v) -> str:
    return "n/a" if v is None else f"{v * 1e3:.0f}"


def main():
    sys.path.insert(0, str(HERE))
    from _harness import machine, stamp, try_import
    peers = ["jitorch", "Numba (hand)"]
    if try_import("torch") is not None:
        peers += ["TorchScript", "torch.compile"]
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="jitorch-compile-bench-"))
    rows = []
    try:
        env = dict(os.environ, JITORCH_CACHE_DIR=str(tmp / "jitorch"),
                   NUMBA_CACHE_DIR=str(tmp / "numba"), PYTHONPYCACHEPREFIX=str(tmp / "pyc"))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        base = subprocess.run([sys.executable, "-c", "import time; t=time.perf_counter(); "
                               "import numba; print(time.perf_counter()-t)"],
                              capture_output=True, text=True, env=env)
        numba_import = float(base.stdout.strip() or "nan")
        startup, jt_startup = [], {}
        for peer in peers:
            cold = run_child(peer, env)
            if "numba_startup_s" in cold:
                startup.append(cold["numba_startup_s"])
            warm = run_child(peer, env) if peer in ("jitorch", "Numba (hand)") else None
            if peer == "jitorch":
                jt_startup = {"cold": cold.get("jitorch_startup_s"),
                              "warm": (warm or {}).get("jitorch_startup_s")}
            for name in WORKLOADS:
                c = cold.get(name, "n/a")
                w = warm.get(name, "n/a") if warm is not None else "no disk cache"
                if isinstance(c, str):
                    rows.append((name, peer, c, "", "", ""))
                    continue
                wcell = w if isinstance(w, str) else f"{w['first'] * 1e3:.1f}"
                if not isinstance(w, str) and w.get("disk") is not None:
                    wcell += (f" ({w['disk']})" if isinstance(w["disk"], str)
                              else f" ({w['disk']} disk hits)")
                added = "n/a" if c["added"] is None else str(c["added"])
                first = f"{c['first'] * 1e3:.0f}"
                if isinstance(c.get("disk"), str):
                    first += " (interpreted, not compiled)"
                rows.append((name, peer, first, wcell,
                             f"{c['new'] * 1e3:.2f}", added))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("### Compile time (first call, ms)\n")
    print(f"{stamp()} — {machine()}; each cell from a fresh process; `import numba` alone: "
          f"{numba_import * 1e3:.0f} ms, Numba's first compile in a process: "
          f"{(min(startup) if startup else float('nan')) * 1e3:.0f} ms, jitorch's compiler "
          f"start-up (first `script` call in a process, with a cached program): "
          f"{_ms(jt_startup.get('warm'))} ms (cold caches: {_ms(jt_startup.get('cold'))} ms) "
          f"(none of these included)\n")
    print("| workload | peer | cold first call ms | fresh process, disk cache ms | "
          "new size call ms | compiles added by new size |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print()
    print("gelu_tanh: 4e3 then 7e3 elements; mlp: batch 4 then 7; lstm: 14 then 17 steps, batch "
          "4 then 7, 32 -> 32.\n")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main()
