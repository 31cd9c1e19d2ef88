"""Compile time at model scale (issue 10): fresh processes, three cache states, cold peers.

Every measurement is a fresh child process (`--child`); the clock runs from after the imports
and the model's construction to the first result (`jit.script(model)` / `torch.jit.script` /
`torch.compile` / `jax.jit`, then the first forward, or forward + cross entropy + backward for a
train step: bench/_compile_workloads.py has the workloads). Cache states, jitorch:
- first ever: an empty JITORCH_CACHE_DIR and an empty NUMBA_CACHE_DIR (so Numba's cache of
  jitorch's own `cache=True` kernels, e.g. the BLAS glue, is empty too);
- new model: fresh caches into which a *different* model was compiled first, by another
  process: `jitorch.jit.warmup()` (the generic kernel library) when jitorch has it, else the
  approximation "another model": a Linear-Tanh-Linear MSE train step (bench/_compile_workloads
  `prime`), which shares the generic parts (matmul, bias, elementwise, reductions) and nothing
  model-specific. For the heavy workloads (lstm, cnn, encoders: minutes of cold compile on a
  2-core machine) it is not run unless --force-new: one cold compile of each per run;
- warm: the first-ever caches again, everything on disk.
Peers, cold, each in a fresh process with empty caches: TorchScript, torch.compile (empty
inductor/triton cache dirs; skipped for the LSTM loop, which it unrolls), JAX jit (hand ports).

Reported per cell: wall and CPU seconds to the first result and until the compiled program
serves. CPU = the child's user+system time over the timed region plus that of its reaped child
processes, plus (until it serves, and for the process) the compile worker's CPU as
`jit.stats()["worker_cpu_seconds"]` reports it (the worker outlives the measurement, so rusage
never holds it); the "process" columns are the whole child (imports included). "Serves":
when `ScriptFunction.wait_compiled` exists (background compiles) the time until it returns for
every scripted function, else the first result (compiles are synchronous). JITORCH_COMPILE is
left as set unless --compile-mode is given (bench/_harness.py, which the children import,
defaults benchmarks to sync; the JSON records each child's mode).
Kernel counts come from `jitorch.jit.stats()["kernels"]` (compiled / loaded from disk /
shared with another call site) when it reports them, program counts (numba_compiles /
disk_hits) always. Ratio columns are the issue's goals.

    python bench/compile_time.py [--quick] [--workloads gelu mlp_train ...] [--json out.json]
    python bench/compile_time.py --from-json out.json    # tables from a saved run
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _compile_workloads import WORKLOADS  # noqa: E402

QUICK = ("gelu", "mlp_infer", "mlp_train")
HEAVY = {"lstm", "cnn", "encoder1", "encoder2"}
PEERS = ("TorchScript", "torch.compile", "jax")
TIMEOUT_S = 3600


def _cpu(ru_self, ru_kids):
    return ru_self.ru_utime + ru_self.ru_stime + ru_kids.ru_utime + ru_kids.ru_stime


def _usage():
    return resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)


def child(peer: str, name: str) -> None:
    """In a fresh process: build, then time the first result and the switch to compiled code."""
    t_start = time.perf_counter()
    import _compile_workloads as cw
    jt = None
    if peer == "jitorch":
        import jitorch as jt
    out = {"import_s": time.perf_counter() - t_start}
    t = time.perf_counter()
    go, serve = cw.build(peer, name)
    out["build_s"] = time.perf_counter() - t
    if jt is not None:
        jt.jit.reset_stats()
    u0 = _cpu(*_usage())
    t0 = time.perf_counter()
    fns = go()
    out["first_s"] = time.perf_counter() - t0
    out["first_cpu"] = _cpu(*_usage()) - u0
    waited = False
    for f in fns:
        wait = getattr(f, "wait_compiled", None)
        if callable(wait):
            wait()
            waited = True
    out["serve_s"] = time.perf_counter() - t0 if waited else out["first_s"]
    out["serve_cpu"] = _cpu(*_usage()) - u0 if waited else out["first_cpu"]
    out["waited"] = waited
    if serve is not None:
        t = time.perf_counter()
        serve()
        out["next_step_s"] = time.perf_counter() - t
    if jt is not None:
        st = dict(jt.jit.stats())
        out["stats"] = {k: v for k, v in st.items()
                        if isinstance(v, (int, float, str)) or
                        (isinstance(v, dict) and len(json.dumps(v, default=str)) < 2000)}
        out["compile_mode"] = os.environ.get("JITORCH_COMPILE", "(default)")
    print("RESULT " + json.dumps(out, default=str))


def _fresh_env(base: dict, root: pathlib.Path) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    env = dict(base, JITORCH_CACHE_DIR=str(root / "jitorch"), NUMBA_CACHE_DIR=str(root / "numba"),
               TORCHINDUCTOR_CACHE_DIR=str(root / "inductor"), TRITON_CACHE_DIR=str(root / "tr"),
               XDG_CACHE_HOME=str(root / "xdg"))
    return env


def run_child(peer: str, name: str, env: dict) -> dict:
    k0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, str(HERE / "compile_time.py"), "--child", peer, name],
                           env=env, cwd=HERE, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    k1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = {"error": "no result: " + ((r.stderr.strip().splitlines() or ["no output"])[-1])[:120]}
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            res = json.loads(line[7:])
    res["process_s"] = time.perf_counter() - t0
    res["process_cpu"] = (k1.ru_utime + k1.ru_stime) - (k0.ru_utime + k0.ru_stime)
    print(f"  {name:10s} {peer:14s} {res.get('serve_s', res.get('error'))} "
          f"(process {res['process_s']:.1f} s)", file=sys.stderr, flush=True)
    return res


def measure(workloads, peers, force_new=False, compile_mode=None, save=None,
            jitorch=True) -> dict:
    base = dict(os.environ, JITORCH_MAX_PROGRAM_LINES="0", OMP_NUM_THREADS="1",
                OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    base.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode cached
    if compile_mode:
        base["JITORCH_COMPILE"] = compile_mode
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="jitorch-compile-time-"))
    probe = subprocess.run([sys.executable, "-c", "import jitorch, json; print(json.dumps("
                            "[callable(getattr(jitorch.jit, 'warmup', None)), "
                            "hasattr(jitorch.jit.ScriptFunction, 'wait_compiled')]))"],
                           env=base, capture_output=True, text=True)
    has_warmup, has_wait = json.loads(probe.stdout.strip() or "[false, false]")
    out = {"stamp": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": os.getloadavg(),
           "has_warmup": has_warmup, "has_wait": has_wait, "rows": {}}
    try:
        for name in workloads:
            row = out["rows"][name] = {}
            if jitorch:
                row.update(_jitorch_states(name, base, tmp, has_warmup, force_new))
            for peer in peers:
                if peer == "torch.compile" and name == "lstm":
                    row[peer] = {"error": "skipped (unrolls the 50-step loop)"}
                    continue
                row[peer] = run_child(peer, name, _fresh_env(base, tmp / f"{name}-{peer}"))
            if save:  # after each workload: a long run that is stopped keeps what it measured
                pathlib.Path(save).write_text(json.dumps(out, indent=1, default=str))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out["load_after"] = os.getloadavg()
    return out


def _jitorch_states(name, base, tmp, has_warmup, force_new) -> dict:
    """first ever, warm (the same caches again) and new model (fresh caches, primed)."""
    row = {}
    env = _fresh_env(base, tmp / f"{name}-first")
    row["first"] = run_child("jitorch", name, env)
    row["warm"] = run_child("jitorch", name, env)
    if name in HEAVY and not force_new:  # their cold compile takes minutes: once per run
        row["new"] = {"error": "not run (heavy: one cold compile per run; --force-new)"}
        return row
    env = _fresh_env(base, tmp / f"{name}-new")
    if has_warmup:
        subprocess.run([sys.executable, "-c", "import jitorch; jitorch.jit.warmup()"],
                       env=env, capture_output=True, timeout=TIMEOUT_S)
    else:
        run_child("jitorch", "prime", env)
    row["new"] = run_child("jitorch", name, env)
    row["new"]["primer"] = "jit.warmup()" if has_warmup else "another model"
    return row


# --- tables ---------------------------------------------------------------------------------
def _s(v, digits=2):
    return "n/a" if v is None else f"{v:.{digits}f}"


def _worker_cpu(r) -> float:
    """CPU seconds of the background compile worker for this child (jit.stats()): the worker
    outlives the measurement, so the child's rusage of reaped children never holds it."""
    return float(((r or {}).get("stats") or {}).get("worker_cpu_seconds") or 0.0)


def _cpu_of(r, what):
    v = _get(r, what + "_cpu")
    if v is None:
        return None
    return v + _worker_cpu(r) if what in ("serve", "process") else v


def _wc(r, what="serve"):
    """'wall / CPU' seconds of one result (CPU: the caller's, plus the compile worker's until
    it serves), or its note."""
    if not r or "error" in r:
        return (r or {}).get("error", "n/a")
    return f"{_s(r.get(what + '_s'))} / {_s(_cpu_of(r, what))}"


def _kernels(r):
    """'kernels: compiled / from disk / shared; programs: compiled / from disk'."""
    st = (r or {}).get("stats") or {}
    if not st:
        return "n/a"
    progs = f"programs {st.get('numba_compiles', 0)} / {st.get('disk_hits', 0)}"
    ks = st.get("kernels")
    if isinstance(ks, dict):
        return (f"kernels {ks.get('compiled', 0)} / {ks.get('disk', 0)} / "
                f"{ks.get('shared', 0)}; {progs}")
    ks = {k: v for k, v in st.items() if "kernel" in k and isinstance(v, (int, float))}
    return "; ".join([f"{k} {v}" for k, v in sorted(ks.items())] + [progs])


def _how(r):
    st = (r or {}).get("stats") or {}
    reasons = st.get("interpreted_reasons") or {}
    if reasons:
        return "interpreted: " + "; ".join(f"{k} ({v}x)" for k, v in reasons.items())[:160]
    return "compiled" if st else "n/a"


def _ratio(a, b, goal, le=True):
    if a is None or b is None or b <= 0:
        return "n/a"
    x = a / b
    ok = x <= goal if le else x >= goal
    return f"{x:.1f}x ({'met' if ok else 'missed'})"


def _get(r, key):
    return None if not r or "error" in r else r.get(key)


def tables(res: dict) -> str:
    rows = res["rows"]
    lines = ["### jitorch by cache state (seconds, wall / CPU)", "",
             f"{res['stamp']}; load average at start {', '.join(f'{v:.1f}' for v in res['load'])}"
             f", at end {', '.join(f'{v:.1f}' for v in res.get('load_after', ()))}; "
             f"`jit.warmup`: {'yes' if res['has_warmup'] else 'no'}, `wait_compiled`: "
             f"{'yes' if res['has_wait'] else 'no (serves = first result)'}", "",
             "| workload | state | first result | compiled serves | process (imports "
             "included) | next step ms | kernels compiled / disk / shared; programs compiled "
             "/ disk | ran |",
             "|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        for state in ("first", "new", "warm"):
            r = row.get(state)
            if r is None:
                continue
            label = {"first": "first ever", "new": "new model", "warm": "warm"}[state]
            if r and "error" in r:
                lines.append(f"| {name} | {label} | {r['error']} | | | | | |")
                continue
            nxt = _get(r, "next_step_s")
            lines.append(f"| {name} | {label} | {_wc(r, 'first')} | {_wc(r)} | "
                         f"{_wc(r, 'process')} | "
                         f"{_s(nxt * 1e3 if nxt is not None else None, 1)} | {_kernels(r)} | "
                         f"{_how(r)} |")
    lines += ["", "### Against the peers' cold compiles, and the goals", "",
              "jitorch columns: until the compiled program serves; peers: first result in a "
              "fresh process with empty caches (their compile is synchronous); wall / CPU "
              "seconds. Goals: (a) script + first step (to its result), any state, <= 3x "
              "TorchScript (wall, worst state); (b) new model <= 3x JAX jit (CPU); (c) first "
              "ever <= torch.compile (CPU); (d) warm: compiled within 0.5 s of import (wall: "
              "build + serves).", "",
              "| workload | first ever | new model | warm | TorchScript | torch.compile | "
              "JAX jit | (a) vs TorchScript | (b) new vs JAX | (c) first vs torch.compile | "
              "(d) warm since import |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        f, n, w = row.get("first"), row.get("new"), row.get("warm")
        ts, tc, jx = row.get("TorchScript"), row.get("torch.compile"), row.get("jax")
        walls = [_get(r, "first_s") for r in (f, n, w) if _get(r, "first_s") is not None]
        new_cpu = _cpu_of(n, "serve")
        new_note = ""
        if new_cpu is None and n and "heavy" in n.get("error", ""):
            new_cpu, new_note = _cpu_of(f, "serve"), " (first ever's: an upper bound)"
        warm = (None if _get(w, "serve_s") is None else w["serve_s"] + w.get("build_s", 0.0))
        lines.append(
            f"| {name} | {_wc(f)} | {_wc(n)} | "
            f"{_wc(w)} | {_wc(ts, 'first')} | {_wc(tc, 'first')} | {_wc(jx, 'first')} | "
            f"{_ratio(max(walls) if walls else None, _get(ts, 'first_s'), 3)} | "
            f"{_ratio(new_cpu, _get(jx, 'first_cpu'), 3)}{new_note} | "
            f"{_ratio(_cpu_of(f, 'serve'), _get(tc, 'first_cpu'), 1)} | "
            + ("n/a |" if warm is None else
               f"{warm:.2f} s ({'met' if warm <= 0.5 else 'missed'}) |"))
    e1, e2 = rows.get("encoder1", {}).get("first"), rows.get("encoder2", {}).get("first")
    c1, c2 = _cpu_of(e1, "serve"), _cpu_of(e2, "serve")
    if c1 and c2:
        lines += ["", f"2-layer vs 1-layer encoder, first ever, CPU until compiled: "
                      f"{c2:.1f} / {c1:.1f} s = {_ratio(c2, c1, 1.15)} (goal <= 1.15x)"]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="GELU and the MLP only")
    ap.add_argument("--workloads", nargs="+", choices=WORKLOADS)
    ap.add_argument("--peers", nargs="*", choices=PEERS, default=None,
                    help="the peers to run (default: all installed; none: jitorch only)")
    ap.add_argument("--no-jitorch", action="store_true", help="only the peers")
    ap.add_argument("--force-new", action="store_true",
                    help="also run the new-model state of the heavy workloads (a 2nd cold compile)")
    ap.add_argument("--compile-mode", choices=("background", "sync"),
                    help="set JITORCH_COMPILE for the jitorch children")
    ap.add_argument("--json", help="also save the raw results here")
    ap.add_argument("--from-json", nargs="+",
                    help="print the tables of saved runs (rows merged: later files add the "
                         "states and peers the earlier lack, e.g. a peers-only run)")
    a = ap.parse_args()
    if a.from_json:
        runs = [json.loads(pathlib.Path(f).read_text()) for f in a.from_json]
        res = runs[0]
        for r in runs[1:]:  # earlier files win; later ones fill in what they lack
            for name, row in r["rows"].items():
                have = res["rows"].setdefault(name, {})
                for k, v in row.items():
                    if k not in have or "error" in have[k] and "error" not in v:
                        have[k] = v
        print(tables(res))
        return
    workloads = a.workloads or (QUICK if a.quick else WORKLOADS)
    peers = list(PEERS if a.peers is None else a.peers)
    for p, mod in (("torch.compile", "torch"), ("TorchScript", "torch"), ("jax", "jax")):
        if p in peers and importlib.util.find_spec(mod) is None:
            peers.remove(p)
            print(f"{p}: {mod} is not installed, skipped", file=sys.stderr)
    res = measure(workloads, peers, a.force_new, a.compile_mode, a.json, not a.no_jitorch)
    res["command"] = "python bench/compile_time.py " + " ".join(sys.argv[1:])
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(res, indent=1, default=str))
    print(tables(res))


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
