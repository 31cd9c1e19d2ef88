"""Shared timing harness for bench/: best-of-N wall-clock per call, and optional peers.

Peers are imported only if installed (PyTorch, JAX); they are never dependencies of jitorch.
"""
from __future__ import annotations

import os
import platform
import time
import timeit

# benchmarks time compiled programs: a first call compiles in the call, not in the compile
# worker (a benchmark of the background tier sets JITORCH_COMPILE=background before this)
os.environ.setdefault("JITORCH_COMPILE", "sync")


def per_call(fn, min_time: float = 0.5, repeat: int = 9, timer=time.perf_counter) -> float:
    """Seconds per call: best of `repeat` runs, each long enough to be measurable. `timer`:
    wall clock by default; `time.process_time` gives this process's CPU seconds (steadier on a
    shared machine, where other processes' load stretches wall time)."""
    fn()  # warm up (allocations, caches, first-call paths)
    t = timeit.Timer(fn, timer=timer)
    n = 1
    while True:
        if t.timeit(number=n) >= min_time / repeat or n >= 1 << 22:
            break
        n *= 4
    return min(t.repeat(number=n, repeat=repeat)) / n


def interleaved(fns: dict, rounds: int = 5, min_time: float = 0.1, timer=time.perf_counter) -> dict:
    """Seconds per call for each of `fns`, measured in alternating rounds (best of rounds), so
    that drift of a shared, noisy machine hits every peer alike."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            best[k] = min(best[k], per_call(f, min_time=min_time, repeat=3, timer=timer))
    return best


def try_import(name: str):
    try:
        return __import__(name)
    except ImportError:
        return None


def machine() -> str:
    import os
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, " \
           f"Python {platform.python_version()}"


def stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def fmt_us(s: float) -> str:
    return f"{s * 1e6:.2f}" if s < 1e-3 else f"{s * 1e6:.0f}"


# ---------------------------------------------------------------- issue-3 (compiler) helpers
# Shared by the compiler benchmarks: thread pinning, loading a workload module per backend,
# guarded construction of the scripted / traced / compiled peers, and Markdown tables.

NOT_INSTALLED = "not installed"


def pin_threads(n: int = 1) -> None:
    """Equal thread counts for every peer: PyTorch intra-op, both OpenBLAS copies (NumPy's and
    SciPy's, which Numba's np.dot calls), and jitorch's own setting when it exists."""
    try:
        import scipy.linalg  # noqa: F401  (load SciPy's OpenBLAS so threadpoolctl sees it)
    except ImportError:
        pass
    torch = try_import("torch")
    if torch is not None:
        torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # OpenBLAS would keep its threads: every ratio of the run would be off
        raise SystemExit("bench: threadpoolctl is needed to pin the BLAS threads "
                         "(pip install threadpoolctl, or the project's `bench` extra)") from None
    threadpool_limits(n)
    try:
        import jitorch
        if hasattr(jitorch, "set_num_threads"):
            jitorch.set_num_threads(n)
    except Exception:  # noqa: BLE001  (a half-written runtime must not stop the benchmark)
        pass


def load_workloads(backend, name: str):
    """Import bench/_workloads.py as a fresh module whose global `torch` is `backend` (jitorch
    or PyTorch), so that every peer scripts the very same source text."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).with_name("_workloads.py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    import sys
    sys.modules[name] = mod  # inspect.getsource / TorchScript look modules up by name
    spec.loader.exec_module(mod)
    mod.torch = backend
    return mod


def short_error(e: BaseException, width: int = 90) -> str:
    msg = f"{type(e).__name__}: {e}".replace("\n", " ").replace("|", "/")
    return msg if len(msg) <= width else msg[: width - 3] + "..."


def guarded(make, check=None):
    """(callable, None) if `make()` builds a callable whose first call works and passes
    `check(result)`, else (None, reason). Peers that fail on this machine become a note in their
    row instead of a crash."""
    try:
        f = make()
        res = f()
        if check is not None:
            bad = check(res)
            if bad:
                return None, bad
        return f, None
    except Exception as e:  # noqa: BLE001
        return None, short_error(e)


def close_to(expected, rtol=1e-4, atol=1e-5):
    """A `check` for `guarded`: compares a result (tensor, array or tuple of them) with NumPy."""
    import numpy as np

    def to_np(v):
        if hasattr(v, "detach"):
            v = v.detach()
        if hasattr(v, "numpy"):
            return np.asarray(v.numpy())
        return np.asarray(v)

    def check(res):
        got = res if isinstance(res, (tuple, list)) else (res,)
        exp = expected if isinstance(expected, (tuple, list)) else (expected,)
        if len(got) != len(exp):
            return f"wrong result: {len(got)} outputs, expected {len(exp)}"
        for g, e in zip(got, exp):
            g = to_np(g)
            if g.shape != e.shape or not np.allclose(g, e, rtol=rtol, atol=atol):
                err = np.max(np.abs(g - e)) if g.shape == e.shape else f"shape {g.shape}"
                return f"wrong result (max abs err {err})"
        return None
    return check


def timed_rows(fns: dict, notes: dict, rounds: int = 5, min_time: float = 0.1) -> dict:
    """Seconds per call for the callables in `fns` (interleaved), with `notes` (peer -> reason
    it has no timing) passed through as strings."""
    live = {k: f for k, f in fns.items() if f is not None}
    t = interleaved(live, rounds=rounds, min_time=min_time) if live else {}
    out = {}
    for k in list(fns) + [k for k in notes if k not in fns]:
        out[k] = t[k] if k in t else notes.get(k, "n/a")
    return out


def cell(v, base=None) -> str:
    """A table cell: time in us (with the ratio to `base` when both are numbers), or a note."""
    if isinstance(v, str):
        return v
    s = fmt_us(v)
    if isinstance(base, float) and base > 0:
        s += f" ({v / base:.2f}x)"
    return s


def print_table(title: str, first_col: str, peers: list, rows: list, base: str = "jitorch",
                unit: str = "us per call") -> None:
    """rows: [(label, {peer: seconds | note})]. Each timed cell also shows peer time / `base`
    time, so > 1 means the base (jitorch scripted) is faster than that peer."""
    print(f"### {title}\n")
    print(f"{stamp()} — {machine()}; {unit}; (x) = peer time / jitorch time "
          f"(> 1: jitorch faster)\n")
    print("| " + first_col + " | " + " | ".join(peers) + " |")
    print("|" + "---|" * (len(peers) + 1))
    for label, t in rows:
        b = t.get(base)
        cells = []
        for p in peers:
            v = t.get(p, "n/a")
            if p != base and isinstance(v, float) and isinstance(b, float) and b > 0:
                cells.append(f"{fmt_us(v)} ({v / b:.2f}x)")
            else:
                cells.append(cell(v))
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()


PEERS = ["jitorch", "NumPy", "Numba (hand)", "PyTorch", "TorchScript", "torch.compile", "jax.jit"]


class Peers:
    """Builds each peer's callable for one workload of bench/_workloads.py and keeps compiled
    functions across sizes (a new size must not recompile anything in jitorch)."""

    def __init__(self):
        import jitorch
        self.jt = jitorch
        self.wl_jt = load_workloads(jitorch, "_workloads_jitorch")
        self.torch = try_import("torch")
        self.wl_pt = load_workloads(self.torch, "_workloads_torch") if self.torch else None
        self.jax = try_import("jax")
        self._scripted = {}

    def script(self, name):
        if name not in self._scripted:
            try:
                self._scripted[name] = self.jt.script(getattr(self.wl_jt, name))
            except Exception as e:  # noqa: BLE001
                self._scripted[name] = e
        return self._scripted[name]

    def build(self, name, arrays, np_fn, nb_fn, expected, rtol=1e-4, atol=1e-5,
              torch_compile=True):
        """-> (fns, notes) for timed_rows: peer -> callable, and peer -> why it has no time."""
        import numpy as np
        check = close_to(expected, rtol, atol)
        fns, notes = {}, {}

        def add(peer, make):
            f, why = guarded(make, check)
            fns[peer] = f
            if f is None:
                notes[peer] = f"{peer}: {why}"

        jt_args = [self.jt.from_numpy(a) for a in arrays]

        def make_jt():
            f = self.script(name)
            if isinstance(f, Exception):
                raise f
            return lambda: f(*jt_args)
        add("jitorch", make_jt)
        add("NumPy", lambda: (lambda: np_fn(*arrays)))
        add("Numba (hand)", lambda: (lambda: nb_fn(*arrays)))
        if self.torch is None:
            for p in ("PyTorch", "TorchScript", "torch.compile"):
                notes[p] = NOT_INSTALLED
        else:
            torch = self.torch
            pt_args = [torch.from_numpy(a) for a in arrays]
            fn = getattr(self.wl_pt, name)
            add("PyTorch", lambda: (lambda: fn(*pt_args)))
            ts = getattr(self, "_ts", {})
            self._ts = ts

            def make_ts():
                if name not in ts:
                    ts[name] = torch.jit.script(fn)
                return lambda: ts[name](*pt_args)
            add("TorchScript", make_ts)
            if torch_compile:
                tc = getattr(self, "_tc", {})
                self._tc = tc

                def make_tc():
                    if name not in tc:
                        tc[name] = torch.compile(fn, dynamic=False)
                    return lambda: tc[name](*pt_args)
                add("torch.compile", make_tc)
            else:
                notes["torch.compile"] = "skipped (see note)"
        notes["jax.jit"] = NOT_INSTALLED if self.jax is None else "installed; no JAX port yet"
        return fns, notes


def jit_stats_line() -> str:
    """One line with `jitorch.jit.stats()` (compiles, cache hits, interpreted runs), if present."""
    try:
        import jitorch
        st = jitorch.jit.stats()
        line = f"jitorch.jit.stats(): {st}"
        reasons = st.get("interpreted_reasons") if isinstance(st, dict) else None
        if reasons:
            line = ("**Some jitorch calls ran in the interpreter (eager ops), not compiled:** "
                    + "; ".join(f"{k} ({v}x)" for k, v in reasons.items()) + "\n\n" + line)
        return line
    except Exception as e:  # noqa: BLE001
        return f"jitorch.jit.stats(): unavailable ({short_error(e)})"


def eager_layers_stats_line() -> str:
    """`jitorch.jit.stats()` as the eager-layer benchmarks report it: runs by tier, the tier of
    each `nn.<Layer>[eager]` function and the calls the fused loops served."""
    import jitorch
    st = jitorch.jit.stats()
    fns = {k: v["tier"] for k, v in st["functions"].items() if k.startswith("nn.")}
    return (f"jit.stats: compiled_runs={st['compiled_runs']} "
            f"interpreted_runs={st['interpreted_runs']} layers={fns} "
            f"fused_layers={st['fused_layers']}")
