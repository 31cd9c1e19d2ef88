"""What Numba costs a process before jitorch compiles anything, against the smallest program's
whole first-ever compile (issue 17's GELU and new-model goals).

Fresh processes with fresh caches, alternating, `--rounds` times each:
- floor: after `import jitorch`, the CPU seconds of what the first compile of a process does
  before any program of its own: importing Numba (jitorch's compile module, which imports it)
  with the CPU target's package (`targets/cpu`: SciPy's BLAS preloaded), then the first refresh
  of Numba's CPU target context (importing its implementation modules, installing its typing
  templates), with Numba's extension entry points deferred as jitorch defers them;
- gelu: bench/compile_time.py's own child for its gelu workload (script the tanh GELU,
  compile, first result): its first-ever CPU seconds.
Both with one BLAS thread (OPENBLAS_NUM_THREADS=1, as compile_time.py's children), and again
with the thread count left to OpenBLAS (`--blas-default`): a loaded OpenBLAS starts a thread per
core whose threads spin before they sleep, CPU that lands in whichever clock is running.

    python bench/numba_floor.py [--rounds 5] [--blas-default]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent

sys.path.insert(0, str(HERE))
import compile_time  # noqa: E402  (its fresh-process child: the gelu clock)

FLOOR_CHILD = r"""
import json, time
import jitorch  # noqa: F401  (outside the clock, as in every workload)
t0 = time.process_time()
import jitorch.script.targets.cpu  # noqa: F401
from jitorch.script.kernels import numba_cache
t1 = time.process_time()
from numba.core.registry import cpu_target
with numba_cache._entry_points_deferred():
    cpu_target.target_context.refresh()
t2 = time.process_time()
print("RESULT", json.dumps({"import": t1 - t0, "refresh": t2 - t1, "total": t2 - t0}))
"""


def run(mode: str, blas_default: bool) -> dict:
    """The floor child, or compile_time.py's gelu child (its first-ever CPU as "total"), in a
    fresh process with fresh caches."""
    with tempfile.TemporaryDirectory() as d:
        env = compile_time._fresh_env(dict(os.environ, JITORCH_COMPILE="sync"), pathlib.Path(d))
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        if blas_default:
            env.pop("OPENBLAS_NUM_THREADS", None)
        else:
            env["OPENBLAS_NUM_THREADS"] = "1"
        if mode == "gelu":
            res = compile_time.run_child("jitorch", "gelu", env)
            if "first_cpu" not in res:
                raise RuntimeError(f"gelu: {res.get('error')}")
            return {"total": res["first_cpu"]}
        r = subprocess.run([sys.executable, "-c", FLOOR_CHILD], env=env, capture_output=True,
                           text=True, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"floor: no result: {r.stderr.strip()[-400:]}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--blas-default", action="store_true",
                    help="also run with OpenBLAS's own thread count")
    a = ap.parse_args()
    settings = [False, True] if a.blas_default else [False]
    got = {(m, b): [] for m in ("floor", "gelu") for b in settings}
    for r in range(a.rounds):
        for b in settings:
            for m in (("floor", "gelu") if r % 2 == 0 else ("gelu", "floor")):
                got[m, b].append(run(m, b))
    fmt = lambda xs: ", ".join(f"{x:.2f}" for x in xs)  # noqa: E731
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"\n{when}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores: "
          f"CPU seconds, fresh processes and caches, {a.rounds} rounds")
    print("| BLAS threads | Numba import | first context refresh | floor (both) | GELU first ever "
          "| floor / GELU (medians) |\n|---|---|---|---|---|---|")
    for b in settings:
        fl, ge = got["floor", b], got["gelu", b]
        med = statistics.median(x["total"] for x in fl) / statistics.median(x["total"] for x in ge)
        print(f"| {'OpenBLAS default' if b else '1'} | {fmt(x['import'] for x in fl)} | "
              f"{fmt(x['refresh'] for x in fl)} | {fmt(x['total'] for x in fl)} | "
              f"{fmt(x['total'] for x in ge)} | {med:.0%} |")


if __name__ == "__main__":
    main()
