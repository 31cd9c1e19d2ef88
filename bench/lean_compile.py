"""The lean compiler against Numba's frontend (issue 17): first-ever compile CPU and steady speed.

For each workload of bench/_compile_workloads.py, fresh processes with fresh caches
(`compile_time.py --child jitorch W`, JITORCH_COMPILE=sync), alternating JITORCH_LEAN=1 (the
lean compiler) and =0 (Numba's frontend), `--rounds` times: the CPU seconds until the compiled
program serves (imports excluded). `--baseline DIR` adds another tree's first-ever compile in
the same rounds (DIR's own bench/compile_time.py child over DIR/src, with DIR's default
compiler: e.g. a clone of 7da7f46, the commit issue 17's goals are measured against). Then,
unless --no-speed, the steady state of each compiler: one process compiles the workload twice
(JITORCH_LEAN=1 and =0) and times `--steps` calls of each in 12 alternating rounds (CPU ms per
call, one BLAS thread: the min and the median). All in the same run, so the ratios hold on a
noisy machine.

    python bench/lean_compile.py [--workloads gelu mlp_train ...] [--rounds 2] [--no-speed]
                                 [--baseline /tmp/base]
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

SPEED_SCRIPT = """
import os, sys, time, json
sys.path.insert(0, {here!r})
import _compile_workloads as cw
steps = {{}}
for mode in ("1", "0"):  # ({var} is read when a program's text is written)
    os.environ[{var!r}] = mode
    go, serve = cw.build("jitorch", {name!r})
    go()
    steps[mode] = serve if serve is not None else go
    steps[mode]()
ms = {{"1": [], "0": []}}
for r in range(12):
    for mode in (("1", "0") if r % 2 == 0 else ("0", "1")):
        t = time.process_time()
        for _ in range({steps}):
            steps[mode]()
        ms[mode].append((time.process_time() - t) / {steps} * 1e3)
print("SPEED", json.dumps({{k: sorted(v) for k, v in ms.items()}}))
"""


def _env(compiler: str, root: pathlib.Path) -> dict:
    base = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                JITORCH_COMPILE="sync", JITORCH_LEAN="1" if compiler == "lean" else "0")
    base.pop("PYTHONDONTWRITEBYTECODE", None)
    if compiler == "baseline":  # the other tree's own default (it may have a lean compiler too)
        base.pop("JITORCH_LEAN", None)
    return compile_time._fresh_env(base, root)


def first_ever(name: str, compiler: str, tmp: pathlib.Path, baseline=None) -> dict:
    env = _env(compiler, tmp / f"{name}-{compiler}-{time.monotonic_ns()}")
    if compiler == "baseline":
        env["PYTHONPATH"] = str(pathlib.Path(baseline) / "src")
        r = subprocess.run([sys.executable, str(pathlib.Path(baseline) / "bench" /
                                                "compile_time.py"), "--child", "jitorch", name],
                           env=env, cwd=pathlib.Path(baseline) / "bench", capture_output=True,
                           text=True, timeout=compile_time.TIMEOUT_S)
        res = {"error": (r.stderr.strip().splitlines() or ["no output"])[-1][:120]}
        for line in r.stdout.splitlines():
            if line.startswith("RESULT "):
                res = json.loads(line[7:])
        print(f"  {name:10s} baseline {res.get('serve_cpu', res.get('error'))}",
              file=sys.stderr, flush=True)
    else:
        res = compile_time.run_child("jitorch", name, env)
    return {"cpu": res.get("serve_cpu"), "lean": res.get("stats", {}).get("lean"),
            "error": res.get("error")}


def speed(name: str, tmp: pathlib.Path, steps: int, var: str = "JITORCH_LEAN") -> dict | None:
    """CPU ms per call of the programs written with `var`=1 and =0, both compiled in one
    process and timed in alternating rounds (the machine's drift hits both alike):
    {"1": sorted rounds, "0": ...} (bench/glue_runs.py asks for its own setting)."""
    env = _env("lean", tmp / f"{name}-speed-{var}")
    src = SPEED_SCRIPT.format(here=str(HERE), name=name, steps=steps, var=var)
    r = subprocess.run([sys.executable, "-c", src], env=env, capture_output=True, text=True,
                       timeout=compile_time.TIMEOUT_S)
    for line in r.stdout.splitlines():
        if line.startswith("SPEED "):
            return json.loads(line[6:])
    print(f"  {name}: no speed: {r.stderr.strip()[-300:]}", file=sys.stderr)
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", nargs="+", default=WORKLOADS)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--baseline", help="another tree (a clone): its first-ever compile too")
    a = ap.parse_args()
    compilers = COMPILERS + (["baseline"] if a.baseline else [])
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="jitorch-lean-"))
    out = {"stamp": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": {}}
    for name in a.workloads:
        row = out["rows"][name] = {c: [] for c in compilers}
        for k in range(a.rounds):
            order = compilers if k % 2 == 0 else compilers[::-1]
            for c in order:
                row[c].append(first_ever(name, c, tmp, a.baseline))
        if not a.no_speed:
            sp = speed(name, tmp, a.steps)
            row["speed_ms"] = sp and {"lean": sp["1"], "numba": sp["0"]}
        if a.json:
            pathlib.Path(a.json).write_text(json.dumps(out, indent=1, default=str))
    print(f"\n{out['stamp']}: first-ever compile, CPU seconds until compiled (each run a fresh "
          "process and caches)")
    base = ["baseline", "baseline / lean"] if a.baseline else []
    print("| workload | lean | numba | numba / lean | " + "".join(f"{h} | " for h in base) +
          "lean: typed / declined | steady ms per call, lean / numba: min (median) |")
    print("|---" * (6 + len(base)) + "|")

    def fmt(xs):
        return ", ".join(f"{x:.2f}" for x in xs)

    for name, row in out["rows"].items():
        cpu = {c: [r["cpu"] for r in row[c] if r.get("cpu") is not None] for c in compilers}
        mean = {c: sum(v) / len(v) if v else None for c, v in cpu.items()}

        def ratio(c):
            return f"{mean[c] / mean['lean']:.2f}x" if mean[c] and mean["lean"] else "-"

        counts = row["lean"][0].get("lean") or {}
        sp = row.get("speed_ms") or {}
        spd = " / ".join("-" if not sp.get(c) else f"{sp[c][0]:.3f} ({sp[c][len(sp[c]) // 2]:.3f})"
                         for c in COMPILERS)
        extra = f"{fmt(cpu['baseline'])} | {ratio('baseline')} | " if a.baseline else ""
        print(f"| {name} | {fmt(cpu['lean'])} | {fmt(cpu['numba'])} | {ratio('numba')} | "
              f"{extra}{counts.get('compiled', '-')} / {counts.get('declined', '-')} | {spd} |")


if __name__ == "__main__":
    main()
