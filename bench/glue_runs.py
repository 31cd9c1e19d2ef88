"""Repeated glue compiled once (issue 17, targets/cpu/glue_runs.py): its effect on compile time
and on steady-state speed, JITORCH_GLUE_RUNS=1 (the default) against =0, in the same run.

For each workload of bench/_compile_workloads.py (encoderN: a TransformerEncoder classifier of
N layers, e.g. encoder4), `--rounds` times, alternating the two settings:
- **first ever**: a fresh process with fresh caches (`compile_time.py --child jitorch W`,
  JITORCH_COMPILE=sync): the CPU seconds until the compiled program serves;
- **glue only**: every kernel already on disk (the caches of one first-ever run of the same
  setting), the glue modules' (entries' and runs') Numba cache files deleted: the CPU seconds
  of a fresh process until it serves, which is then mostly the glue's compile, the part the
  setting changes, with less of the machine's noise around it.
Then, unless --no-speed, one process compiles the workload with each setting and times
`--steps` calls of each in 12 alternating rounds (CPU ms per call, one BLAS thread).

    python bench/glue_runs.py [--workloads encoder1 encoder2 encoder4] [--rounds 2] [--no-speed]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import compile_time  # noqa: E402  (its fresh-process child and environment)
import lean_compile  # noqa: E402  (its steady-state timing, for another setting)

SETTINGS = ("1", "0")



def _env(setting: str, root: pathlib.Path) -> dict:
    base = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                JITORCH_COMPILE="sync", JITORCH_GLUE_RUNS=setting)
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    return compile_time._fresh_env(base, root)


def _drop_glue(root: pathlib.Path) -> int:
    """Delete the Numba cache files of the glue modules (marked with the glue pipeline) under
    `root`'s caches; how many modules."""
    mods = [pathlib.Path(p).stem for p in glob.glob(str(root / "jitorch" / "*.py"))
            if "glue-o1" in pathlib.Path(p).read_text()]
    for m in mods:
        for f in glob.glob(str(root / "numba" / "*" / f"{m}.*")):
            os.remove(f)
    return len(mods)


def measure(name: str, setting: str, tmp: pathlib.Path) -> dict:
    root = tmp / f"{name}-{setting}-{time.monotonic_ns()}"
    env = _env(setting, root)
    first = compile_time.run_child("jitorch", name, env)
    modules = _drop_glue(root)
    glue = compile_time.run_child("jitorch", name, env)
    return {"first": first.get("serve_cpu"), "glue": glue.get("serve_cpu"),
            "glue_modules": modules, "compiled_runs": glue.get("stats", {}).get("compiled_runs"),
            "error": first.get("error") or glue.get("error")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=["encoder1", "encoder2", "encoder4"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="jitorch-glue-"))
    out = {"stamp": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": {}}
    for name in a.workloads:
        row = out["rows"][name] = {s: [] for s in SETTINGS}
        for k in range(a.rounds):
            for s in (SETTINGS if k % 2 == 0 else SETTINGS[::-1]):
                row[s].append(measure(name, s, tmp))
        if not a.no_speed:
            row["speed_ms"] = lean_compile.speed(name, tmp, a.steps, "JITORCH_GLUE_RUNS")
        if a.json:
            pathlib.Path(a.json).write_text(json.dumps(out, indent=1, default=str))
    print(f"\n{out['stamp']}: CPU seconds until compiled; runs = JITORCH_GLUE_RUNS=1, "
          "inline = 0")
    print("| workload | first ever: runs | inline | inline / runs | glue only: runs | inline | "
          "inline / runs | glue modules (runs / inline) | steady ms per call, runs / inline: "
          "min (median) |")
    print("|---" * 9 + "|")

    def col(row, s, key):
        return [r[key] for r in row[s] if r.get(key) is not None]

    def mean(xs):
        return sum(xs) / len(xs) if xs else float("nan")

    for name, row in out["rows"].items():
        cells = []
        for key in ("first", "glue"):
            on, off = col(row, "1", key), col(row, "0", key)
            cells += [", ".join(f"{x:.2f}" for x in on), ", ".join(f"{x:.2f}" for x in off),
                      f"{mean(off) / mean(on):.2f}x"]
        mods = f"{row['1'][0]['glue_modules']} / {row['0'][0]['glue_modules']}"
        sp = row.get("speed_ms") or {}
        spd = " / ".join("-" if not sp.get(s) else
                         f"{sp[s][0]:.3f} ({sp[s][len(sp[s]) // 2]:.3f})" for s in SETTINGS)
        errors = {r["error"] for s in SETTINGS for r in row[s] if r.get("error")}
        print(f"| {name} | {' | '.join(cells)} | {mods} | {spd} |"
              + (f" errors: {sorted(errors)}" if errors else ""))


if __name__ == "__main__":
    main()
