"""Where Numba's compile time goes, by stage (issue 17): CPU seconds per Numba compiler pass,
exclusive of the compiles nested in it (a kernel typed from its entry is its own compile), and
of each pass the time spent inside LLVM (Numba's LLVM lock, taken around every llvmlite call).
`native_lowering` holds Numba's lowering to LLVM IR and all of LLVM's work on the library:
function and module passes, machine code.

Two uses, one listener:
- `bench/compile_profile.py W --stages` (a workload of bench/_compile_workloads.py);
- a pytest plugin, for a slice of the test suite (the suite's programs are small ones):

      PYTHONPATH=bench python -m pytest -p _compile_stages -p no:cacheprovider tests/...

  prints the table at the end of the session (use -s or read the terminal summary).
"""
from __future__ import annotations

import collections
import time

from numba.core import event as ev


class Stages:
    """Listens to Numba's `numba:compile`, `numba:run_pass` and `numba:llvm_lock` events."""

    def __init__(self):
        self.excl = collections.Counter()  # stage -> exclusive CPU-s
        self.llvm = collections.Counter()  # stage -> CPU-s under the LLVM lock
        self.count = collections.Counter()
        self.compiles = 0
        self._stack: list = []  # [stage, start, nested, llvm]
        self._llvm_t0 = 0.0

    def install(self) -> None:
        ev.register("numba:compile", _Listener(self, "compile"))
        ev.register("numba:run_pass", _Listener(self, "pass"))
        ev.register("numba:llvm_lock", _LLVMListener(self))

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
        self.st._stack.append([name, time.process_time(), 0.0, 0.0])

    def on_end(self, event):
        name, t0, nested, llvm = self.st._stack.pop()
        total = time.process_time() - t0
        self.st.excl[name] += total - nested
        self.st.llvm[name] += llvm
        self.st.count[name] += 1
        if self.st._stack:
            self.st._stack[-1][2] += total


class _LLVMListener(ev.Listener):
    def __init__(self, st: Stages):
        self.st = st

    def on_start(self, event):
        self.st._llvm_t0 = time.process_time()

    def on_end(self, event):
        if self.st._stack:
            self.st._stack[-1][3] += time.process_time() - self.st._llvm_t0


# --- as a pytest plugin ---------------------------------------------------------------------
_SESSION = None


def pytest_configure(config):
    global _SESSION
    _SESSION = Stages()
    _SESSION.install()


def pytest_terminal_summary(terminalreporter):
    if _SESSION is not None:
        for line in _SESSION.table().splitlines():
            terminalreporter.write_line(line)
