"""Where a workload's compile time goes, per Numba function (issue 17): one fresh process, empty
caches, JITORCH_COMPILE=sync; every `numba:compile` event is timed by bench/_compile_stages.py
(CPU seconds, exclusive of the compiles nested in it: a kernel typed from its entry, an
overload typed from a kernel, and of it the time under Numba's LLVM lock), then listed: by function (generated kernels and
entries together), and the costliest single compiles with their argument types. The
workloads are bench/_compile_workloads.py's; the generated sources stay in the temporary
JITORCH_CACHE_DIR it prints, named as listed.

    python bench/compile_profile.py mlp_train [--top 40] [--stages]

--stages adds the time per Numba compiler pass and inside LLVM (bench/_compile_stages.py).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("workload")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--stages", action="store_true", help="also the time per Numba pass")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="jt_prof_")
    os.environ["JITORCH_CACHE_DIR"] = os.path.join(tmp, "jt")
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(tmp, "nb")
    os.environ["JITORCH_COMPILE"] = "sync"
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _compile_workloads as cw
    import _compile_stages

    go, _ = cw.build("jitorch", a.workload)
    stages = _compile_stages.Stages()  # (listens from here on: the workload's compiles)
    stages.install()
    t0 = time.process_time()
    go()
    cpu = time.process_time() - t0
    rows = [(c["cpu"], c["total"], c["function"], c["signature"], c["llvm"])
            for c in stages.rows]
    excl = sum(r[0] for r in rows)
    print(f"{a.workload}: {cpu:.2f} CPU-s in go(); {len(rows)} Numba compiles, "
          f"{excl:.2f} CPU-s in them; sources in {os.environ['JITORCH_CACHE_DIR']}")
    groups: dict = {}
    for e, _, name, _, llvm in rows:
        kind = name.split(".")[-1] + " (generated)" if name.startswith("_jitorch_prog_") else name
        g = groups.setdefault(kind, [0.0, 0, 0.0])
        g[0] += e
        g[1] += 1
        g[2] += llvm
    print("\nby function (generated kernels together; exclusive CPU-s, of it under the LLVM "
          "lock):")
    for k, (e, c, llvm) in sorted(groups.items(), key=lambda kv: -kv[1][0])[:25]:
        print(f"  {e:7.2f} s  {llvm:6.2f} s  x{c:3d}  {k}")
    print(f"\ntop {a.top} single compiles (exclusive CPU-s, of it under the LLVM lock, "
          "inclusive):")
    for e, t, name, sig, llvm in sorted(rows, key=lambda r: -r[0])[:a.top]:
        print(f"  {e:6.2f} {llvm:6.2f} {t:6.2f}  {name[-60:]}  ({sig[:80]})")
    if a.stages:
        print("\nby stage:\n" + stages.table())


if __name__ == "__main__":
    main()
