"""Processes that start the same work on one cold cache at once (issue 17: "two processes never
compile the same kernel twice"; script/kernels/compile_lock.py).

For each workload of bench/_compile_workloads.py: one process alone on empty caches, then N
processes started together on one pair of empty caches (JITORCH_CACHE_DIR, NUMBA_CACHE_DIR), as
N MPI ranks, pytest-xdist workers or two runs of a script on a fresh machine would. Each child
is `bench/compile_time.py --child jitorch W` (JITORCH_COMPILE=sync: the compile in the process
itself). Reported: the processes' CPU seconds in all (rusage of the reaped children: imports
and waiting included) and the wall time until the last one served, against the lone process:
without a cross-process lock the group's CPU is about N times the lone one's.

    python bench/compile_concurrent.py [--procs 2] [--workloads mlp_train cnn] [--src DIR]

`--src DIR`: run another tree's jitorch (its `src` directory first on PYTHONPATH), for a
before/after in one session.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import resource
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent


def _group(name: str, procs: int, env: dict) -> dict:
    with tempfile.TemporaryDirectory(prefix="jt_concurrent_") as root:
        env = dict(env, JITORCH_CACHE_DIR=os.path.join(root, "jitorch"),
                   NUMBA_CACHE_DIR=os.path.join(root, "numba"), JITORCH_COMPILE="sync")
        k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        ps = [subprocess.Popen([sys.executable, str(HERE / "compile_time.py"), "--child",
                                "jitorch", name], env=env, cwd=HERE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True) for _ in range(procs)]
        results = []
        for p in ps:
            out, err = p.communicate(timeout=1800)
            line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
            if p.returncode != 0 or not line:
                raise SystemExit(f"{name}: a child failed:\n{err[-2000:]}")
            results.append(json.loads(line[-1][7:]))
        wall = time.perf_counter() - t0
        k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (k1.ru_utime + k1.ru_stime) - (k0.ru_utime + k0.ru_stime)
    compiled = [r["stats"]["numba_compiles"] + r["stats"]["kernels"]["compiled"]
                for r in results]
    return {"wall": wall, "cpu": cpu, "compiled": compiled}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--workloads", nargs="+", default=["mlp_train", "cnn"])
    ap.add_argument("--src", help="another tree's src directory to run instead")
    a = ap.parse_args()
    env = dict(os.environ)
    if a.src:
        env["PYTHONPATH"] = os.pathsep.join([str(pathlib.Path(a.src).resolve()),
                                             env.get("PYTHONPATH", "")])
    tree = a.src or str(HERE.parent / "src")
    print(f"bench/compile_concurrent.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, jitorch from "
          f"{tree}\n")
    print(f"| workload | 1 process: wall / CPU s | {a.procs} processes at once: wall / CPU s "
          f"(all) | CPU ratio | programs + kernels compiled per process |")
    print("|---|---|---|---|---|")
    for name in a.workloads:
        one = _group(name, 1, env)
        many = _group(name, a.procs, env)
        print(f"| {name} | {one['wall']:.1f} / {one['cpu']:.1f} | {many['wall']:.1f} / "
              f"{many['cpu']:.1f} | {many['cpu'] / one['cpu']:.2f}x | "
              f"{', '.join(map(str, many['compiled']))} |", flush=True)


if __name__ == "__main__":
    main()
