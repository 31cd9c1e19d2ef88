"""The lean compiler against Numba's frontend (issue 17): first-ever compile CPU and steady speed.

For each workload of bench/_compile_workloads.py, fresh processes with fresh caches
(`compile_time.py --child jitorch W`, JITORCH_COMPILE=sync), alternating
JITORCH_LEAN=1 (the lean compiler) and =0 (Numba's frontend), `--rounds` times: the CPU seconds until the compiled
program serves (imports excluded). Then, unless --no-speed, the steady state of each: one
process per compiler compiles the workload and times `--steps` further calls, best of 5 rounds
(CPU ms per call, one BLAS thread). Both in the same run, so the ratio holds on a noisy machine.

    python bench/lean_compile.py [--workloads gelu mlp_train ...] [--rounds 2] [--no-speed]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import compile_time  # noqa: E402  (its fresh-process child and environment)

WORKLOADS = ["gelu", "mlp_infer", "mlp_train", "lstm", "cnn", "encoder1", "encoder2"]
COMPILERS = ["lean", "numba"]

_SPEED = """
import os, sys, time, json
sys.path.insert(0, {here!r})
import _compile_workloads as cw
go, serve = cw.build("jitorch", {name!r})
go()
step = serve if serve is not None else go
step()
best = float("inf")
for _ in range(5):
    t = time.process_time()
    for _ in range({steps}):
        step()
    best = min(best, (time.process_time() - t) / {steps})
print("SPEED", json.dumps(best * 1e3))
"""


def _env(compiler: str, root: pathlib.Path) -> dict:
    base = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                JITORCH_COMPILE="sync", JITORCH_LEAN="1" if compiler == "lean" else "0")
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    return compile_time._fresh_env(base, root)


def first_ever(name: str, compiler: str, tmp: pathlib.Path) -> dict:
    res = compile_time.run_child("jitorch", name, _env(compiler, tmp / f"{name}-{compiler}-"
                                                        f"{time.monotonic_ns()}"))
    return {"cpu": res.get("serve_cpu"), "lean": res.get("stats", {}).get("lean"),
            "error": res.get("error")}


def speed(name: str, compiler: str, tmp: pathlib.Path, steps: int) -> float | None:
    env = _env(compiler, tmp / f"{name}-{compiler}-speed")
    src = _SPEED.format(here=str(HERE), name=name, steps=steps)
    r = subprocess.run([sys.executable, "-c", src], env=env, capture_output=True, text=True,
                       timeout=compile_time.TIMEOUT_S)
    for line in r.stdout.splitlines():
        if line.startswith("SPEED "):
            return json.loads(line[6:])
    print(f"  {name} {compiler}: no speed: {r.stderr.strip()[-300:]}", file=sys.stderr)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=WORKLOADS)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="jitorch-lean-"))
    out = {"stamp": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": {}}
    for name in a.workloads:
        row = out["rows"][name] = {c: [] for c in COMPILERS}
        for k in range(a.rounds):
            order = COMPILERS if k % 2 == 0 else COMPILERS[::-1]
            for c in order:
                row[c].append(first_ever(name, c, tmp))
        if not a.no_speed:
            row["speed_ms"] = {c: speed(name, c, tmp, a.steps) for c in COMPILERS}
        if a.json:
            pathlib.Path(a.json).write_text(json.dumps(out, indent=1, default=str))
    print(f"\n{out['stamp']}: first-ever compile, CPU seconds until compiled (each run a fresh "
          "process and caches)")
    print("| workload | lean | numba | numba / lean | lean: typed / declined | "
          "steady ms per call, lean / numba |")
    print("|---|---|---|---|---|---|")
    for name, row in out["rows"].items():
        cpu = {c: [r["cpu"] for r in row[c] if r.get("cpu") is not None] for c in COMPILERS}
        mean = {c: sum(v) / len(v) if v else None for c, v in cpu.items()}
        ratio = f"{mean['numba'] / mean['lean']:.2f}x" if all(mean.values()) else "-"
        counts = row["lean"][0].get("lean") or {}
        sp = row.get("speed_ms") or {}
        spd = " / ".join("-" if sp.get(c) is None else f"{sp[c]:.3f}" for c in COMPILERS)
        print(f"| {name} | {', '.join(f'{x:.2f}' for x in cpu['lean'])} | "
              f"{', '.join(f'{x:.2f}' for x in cpu['numba'])} | {ratio} | "
              f"{counts.get('compiled', '-')} / {counts.get('declined', '-')} | {spd} |")


if __name__ == "__main__":
    main()
