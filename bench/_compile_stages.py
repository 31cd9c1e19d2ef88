"""Where Numba's compile time goes, by stage (issue 17): CPU seconds per Numba compiler pass,
exclusive of the compiles nested in it (a kernel typed from its entry is its own compile), and
of each pass the time spent inside LLVM (Numba's LLVM lock, taken around every llvmlite call).
`native_lowering` holds Numba's lowering to LLVM IR and all of LLVM's work on the library:
function and module passes, machine code.

Two uses, one listener:
- `bench/compile_profile.py W --stages` (a workload of bench/_compile_workloads.py);
- a pytest plugin, for a slice of the test suite (the suite's programs are small ones):

      PYTHONPATH=bench python -m pytest -p _compile_stages -p no:cacheprovider tests/...

  prints the table at the end of the session (in the terminal summary; under pytest-xdist that
  is the controller's, which compiles nothing: use the log below).

  With `COMPILE_STAGES_LOG=DIR` set, every compile of the process (its function, signature,
  exclusive CPU-s, of it in LLVM) is also appended to `DIR/<pid>.jsonl`, so the workers of a
  `pytest -n 2` run all log, and `python bench/_compile_stages.py census DIR` counts them:
  totals, distinct (function, signature) pairs, and what was compiled more than once.
"""
from __future__ import annotations

import collections
import json
import os
import sys
import time

from numba.core import event as ev


class _Frame:
    """A compile or a pass in progress. `nested`: CPU-s of the frames inside it (for a stage's
    exclusive time); a compile's `own_nested` / `own_llvm`: of the compiles inside it only, and
    its LLVM time outside them (for its own time in the log)."""

    __slots__ = ("name", "compile", "t0", "nested", "llvm", "own_nested", "own_llvm")

    def __init__(self, name: str, is_compile: bool):
        self.name, self.compile, self.t0 = name, is_compile, time.process_time()
        self.nested = self.llvm = self.own_nested = self.own_llvm = 0.0


class Stages:
    """Listens to Numba's `numba:compile`, `numba:run_pass` and `numba:llvm_lock` events."""

    def __init__(self):
        self.excl = collections.Counter()  # stage -> exclusive CPU-s
        self.llvm = collections.Counter()  # stage -> CPU-s under the LLVM lock
        self.compiles = 0
        self._stack: list = []  # of _Frame, innermost last
        self._llvm_t0 = 0.0
        self.rows: list = []  # per compile: function, signature, own CPU-s, own LLVM, total
        self.log = None  # a file: one JSON line per compile (COMPILE_STAGES_LOG)

    def install(self) -> None:
        ev.register("numba:compile", _Listener(self, "compile"))
        ev.register("numba:run_pass", _Listener(self, "pass"))
        ev.register("numba:llvm_lock", _LLVMListener(self))

    def innermost_compile(self):
        return next((f for f in reversed(self._stack) if f.compile), None)

    def table(self) -> str:
        tot, ll = sum(self.excl.values()), sum(self.llvm.values())
        lines = [f"{self.compiles} Numba compiles: {tot:.2f} CPU-s, {ll:.2f} of it in LLVM",
                 "   CPU-s   in LLVM  share  stage (Numba pass; 'outside passes': the rest of a "
                 "compile)"]
        for name, s in self.excl.most_common():
            if s >= 0.005 * tot:
                lines.append(f"  {s:7.2f}  {self.llvm[name]:7.2f}  {s / tot:5.1%}  {name}")
        return "\n".join(lines)


class _Listener(ev.Listener):
    def __init__(self, st: Stages, kind: str):
        self.st, self.kind = st, kind

    def on_start(self, event):
        if self.kind == "pass":
            name = event.data.get("name", "?").split(" [")[0]  # ("pass [qualname]")
        else:
            name = "outside passes"
            self.st.compiles += 1
        self.st._stack.append(_Frame(name, self.kind == "compile"))

    def on_end(self, event):
        fr = self.st._stack.pop()
        total = time.process_time() - fr.t0
        self.st.excl[fr.name] += total - fr.nested
        self.st.llvm[fr.name] += fr.llvm
        if self.st._stack:
            self.st._stack[-1].nested += total
        if not fr.compile:
            return
        outer = self.st.innermost_compile()
        if outer is not None:
            outer.own_nested += total
        f = getattr(event.data["dispatcher"], "py_func", None)
        row = {"function": f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}",
               "signature": ", ".join(str(t) for t in event.data["args"]),
               "cpu": total - fr.own_nested, "llvm": fr.own_llvm, "total": total}
        self.st.rows.append(row)
        if self.st.log is not None:
            self.st.log.write(json.dumps(row) + "\n")


class _LLVMListener(ev.Listener):
    def __init__(self, st: Stages):
        self.st = st

    def on_start(self, event):
        self.st._llvm_t0 = time.process_time()

    def on_end(self, event):
        if self.st._stack:
            dt = time.process_time() - self.st._llvm_t0
            self.st._stack[-1].llvm += dt
            self.st.innermost_compile().own_llvm += dt


# --- as a pytest plugin ---------------------------------------------------------------------
_SESSION = None


def pytest_configure(config):
    global _SESSION
    _SESSION = Stages()
    log = os.environ.get("COMPILE_STAGES_LOG")
    if log:
        os.makedirs(log, exist_ok=True)
        _SESSION.log = open(os.path.join(log, f"{os.getpid()}.jsonl"), "a", buffering=1)
    _SESSION.install()


def pytest_terminal_summary(terminalreporter):
    if _SESSION is not None:
        for line in _SESSION.table().splitlines():
            terminalreporter.write_line(line)


# --- the census of a logged run ---------------------------------------------------------------
def census(log_dir: str) -> str:
    rows, files = [], [n for n in sorted(os.listdir(log_dir)) if n.endswith(".jsonl")]
    for name in files:
        with open(os.path.join(log_dir, name)) as f:
            rows += [json.loads(line) for line in f if line.strip()]
    if not rows:
        return f"no compiles logged in {log_dir}"
    cpu, llvm = sum(r["cpu"] for r in rows), sum(r["llvm"] for r in rows)
    by = collections.defaultdict(list)
    for r in rows:
        by[(r["function"], r["signature"])].append(r["cpu"])
    again = {k: v for k, v in by.items() if len(v) > 1}
    wasted = sum(sum(v) - min(v) for v in again.values())
    gen = sum(r["cpu"] for r in rows if r["function"].startswith("_jitorch_prog_"))
    lines = [f"{len(rows)} compiles in {len(files)} processes: {cpu:.1f} CPU-s, "
             f"{llvm:.1f} of it in LLVM; generated programs {gen:.1f}",
             f"{len(by)} distinct (function, signature); {len(again)} compiled more than once, "
             f"{wasted:.1f} CPU-s beyond the first compile of each"]
    for (fn, sig), v in sorted(again.items(), key=lambda kv: min(kv[1]) - sum(kv[1]))[:15]:
        lines.append(f"  {sum(v) - min(v):6.2f} x{len(v)}  {fn[-60:]}  {sig[:60]}")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "census":
        sys.exit("usage: python bench/_compile_stages.py census DIR")
    print(census(sys.argv[2]))
