"""The long mode: many programs, each crash isolated, every disagreement minimised and written.

    PYTHONPATH=src:tests python -m fuzz --iterations 500 --seed 7 --out /tmp/fuzz-out

(`JITORCH_FUZZ_ITERATIONS` and `JITORCH_FUZZ_SEED` give the defaults.) The parent runs the
programs in a worker process (`--worker`) that reports each program as a JSON line before and
after running it; when the worker dies (a segfault in compiled code), the program it was running
is recorded as a `crash` finding and a new worker continues with the next one; a program that
runs longer than `--timeout` seconds (a hang) is killed and recorded the same way. New findings (not
matched by `exclusions.KNOWN`) are minimised and written as `<out>/<seed>_<index>_<n>.py`
reproducers; `summary.json` lists every finding with its class.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time

from .runner import NOT_FAILURES


def _args(argv):
    p = argparse.ArgumentParser(prog="fuzz")
    p.add_argument("--iterations", type=int,
                   default=int(os.environ.get("JITORCH_FUZZ_ITERATIONS", "200")))
    p.add_argument("--seed", type=int, default=int(os.environ.get("JITORCH_FUZZ_SEED", "1")))
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--out", default="fuzz-out")
    p.add_argument("--no-minimize", action="store_true")
    p.add_argument("--long-dims", action="store_true", help="sometimes one dim of 257..65537")
    p.add_argument("--timeout", type=float, default=600.0,
                   help="seconds one program (with its minimising) may take")
    p.add_argument("--focus", default="", help="registry kinds most calls come from, e.g. "
                   "linalg,other (matmul, conv, pooling)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def worker(a):
    from . import minimize
    from .generate import generate
    from .runner import run
    for i in range(a.start, a.start + a.iterations):
        _emit({"start": i})
        prog, sets, _ = generate(a.seed, i, long_dims=a.long_dims,
                                 focus=tuple(k for k in a.focus.split(",") if k))
        rep = run(prog, sets, pid=f"{a.seed}:{i}")
        out = []
        seen = set()
        for f in rep.findings:
            rec = {"mode": f.mode, "kind": f.kind, "detail": f.detail, "known": f.known,
                   "set": f.set_index, "note": f.sets[f.set_index].note}
            key = f.signature()
            if f.known is None and f.kind not in NOT_FAILURES and key not in seen \
                    and not a.no_minimize:
                seen.add(key)
                try:
                    mp, ms = minimize.minimize(f)
                    rec["reproducer"] = minimize.reproducer(mp, ms, f)
                except Exception as e:  # noqa: BLE001
                    rec["reproducer"] = f"# minimising failed: {type(e).__name__}: {e}\n" + \
                        prog.source()
            out.append(rec)
        _emit({"done": i, "seconds": round(rep.seconds, 3), "calls": rep.calls,
               "compiled": rep.compiled, "interpreted": rep.interpreted,
               "eager_errors": rep.eager_errors, "findings": out,
               "source": prog.source() if out else ""})


def _pump(stream, q):
    for line in stream:
        q.put(line)
    q.put(None)


def main(argv=None):
    a = _args(argv)
    if a.worker:
        return worker(a)
    os.makedirs(a.out, exist_ok=True)
    summary = {"seed": a.seed, "programs": 0, "findings": [], "crashes": [],
               "compiled": 0, "interpreted": {}, "calls": 0}
    nxt, end = a.start, a.start + a.iterations
    t0 = time.time()
    while nxt < end:
        cmd = [sys.executable, "-m", "fuzz", "--worker", "--seed", str(a.seed), "--start",
               str(nxt), "--iterations", str(end - nxt)]
        if a.no_minimize:
            cmd.append("--no-minimize")
        if a.long_dims:
            cmd.append("--long-dims")
        if a.focus:
            cmd += ["--focus", a.focus]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        lines = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        running, hung = None, False
        while True:
            try:
                line = lines.get(timeout=a.timeout)
            except queue.Empty:  # the worker hangs inside a program: kill it, move on
                proc.kill()
                hung = True
                break
            if line is None:
                break
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "start" in msg:
                running = msg["start"]
                continue
            i = msg["done"]
            running = None
            nxt = i + 1
            summary["programs"] += 1
            summary["compiled"] += msg["compiled"]
            summary["calls"] += msg["calls"]
            for k, v in msg["interpreted"].items():
                summary["interpreted"][k] = summary["interpreted"].get(k, 0) + v
            for n, f in enumerate(msg["findings"]):
                f["pid"] = f"{a.seed}:{i}"
                if "reproducer" in f:
                    path = os.path.join(a.out, f"{a.seed}_{i}_{n}.py")
                    with open(path, "w") as fh:
                        fh.write(f.pop("reproducer"))
                    f["file"] = path
                f["source"] = msg["source"]
                summary["findings"].append(f)
                if f["known"] is None and f["kind"] not in NOT_FAILURES:
                    print(f"[{a.seed}:{i}] {f['mode']} {f['kind']} ({f['note']}): "
                          f"{f['detail'][:300]}", flush=True)
            if summary["programs"] % 25 == 0:
                print(f"... {summary['programs']} programs, {time.time() - t0:.0f} s",
                      flush=True)
        proc.wait()
        if running is not None:  # the worker died (or hung) inside a program
            what = "timeout" if hung else f"exit {proc.returncode}"
            summary["crashes"].append({"pid": f"{a.seed}:{running}", "why": what})
            print(f"[{a.seed}:{running}] CRASH ({what})", flush=True)
            nxt = running + 1
        elif proc.returncode != 0:
            break
        with open(os.path.join(a.out, "summary.json"), "w") as fh:
            json.dump(summary, fh, indent=1)
    new = [f for f in summary["findings"] if f["known"] is None and
           f["kind"] not in NOT_FAILURES]
    print(f"{summary['programs']} programs, {summary['calls']} compiled-mode calls, "
          f"{summary['compiled']} compiled specialisations, {len(new)} new findings, "
          f"{len(summary['crashes'])} crashes, {time.time() - t0:.0f} s")
    with open(os.path.join(a.out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    return 1 if new or summary["crashes"] else 0
