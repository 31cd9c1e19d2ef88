"""Compile statistics and the compile log: what `jitorch.jit.stats()` reports.

Owns the process-wide counters (compiles, memory/disk cache hits, interpreted runs and their
reasons, compile seconds) and `JITORCH_LOG=compile`, which prints one line per compile to stderr
with the function, the reason (first call, or which part of the specialisation key changed), how
it ended (compiled, loaded from the disk cache, interpreted and why) and the time.

Invariant: counters only grow (until `reset()`); compile updates hold `_lock`, so threads that
compile at once never lose a count. The per-call counters are `itertools.count` objects: `next()`
on one is atomic under the GIL and costs a fraction of a lock (the call path must stay cheap).
"""
from __future__ import annotations

import itertools
import sys
import weakref
from collections import Counter

from ... import _fork
from ..kernels.log import log_enabled

from ..._profiling import collector as _profiler

_lock = _fork.lock()


class Stats(dict):
    """A snapshot of the counters: a dict that also reads as attributes (`stats().compiles`).

    Keys: compiles (programs built: code generated and loaded, plus interpreted fallbacks),
    numba_compiles (programs Numba compiled from source), disk_hits (programs Numba loaded
    from its on-disk cache), memory_hits (calls that found their specialisation in the
    in-memory cache, whatever tier then ran them: a cache hit, not a compiled call),
    interpreted_reasons (reason -> number of specialisations that fell back for it),
    compile_seconds (total time spent building specialisations), kernels (kernel overloads
    compiled / loaded from disk / shared with another call site, kernels/kernel_call.py), lean
    (generated functions compiled for this process, here or by its compile worker, that the
    lean compiler typed, and those it declined, which Numba's frontend typed:
    targets/cpu/lean).

    Calls by the tier that ran them: calls (all calls through ScriptFunctions, and the
    optimizers' direct calls of their compiled steps) == compiled_runs (run by a compiled
    program) + interpreted_runs (run by the IR interpreter, for whatever reason: while the
    program compiles, for a reason in interpreted_reasons, under autocast, arguments that
    share memory, a program that handed the call to the interpreter, which returned its
    result; a program that found the user's error, which the interpreter then raised with its
    location, ran the call: compiled). interpreted_while_compiling: those of interpreted_runs whose program was
    compiling in the background meanwhile (`jitorch.jit.wait_compiled()` ends that tier).

    The background compile (runtime/tiers.py): background_compiles (programs sent to the compile
    worker), background_done (of those, loaded compiled afterwards), background_failed (left
    interpreted: their reasons are in interpreted_reasons), worker_wall_seconds and
    worker_cpu_seconds (the worker's time for them: wall from submission to its answer, and its
    CPU), functions (per ScriptFunction name: tier "interpreted-while-compiling", "compiled",
    "interpreted" or "not called", its number of programs, compile_wall_s, worker_cpu_s and
    the reasons of its interpreted programs; `tiers.function_report`).

    plan_hits: specialisations built from the plan cache's record (runtime/plans.py: no
    passes, autodiff or code generation ran for them); plan_stores: records written;
    plan_errors: records whose load failed otherwise than as an expected miss (a bug: warned
    about once; the specialisation was built instead).

    fused_layers (layer name -> calls): eager calls of the library's recurrent layers served by
    their fused compiled loops (nn/modules/_rnn_fused.py; "nn.LSTM[packed]": PackedSequence
    inputs), which are not ScriptFunction calls
    (a call the scripted composite served meanwhile is counted under `functions`);
    fused_loops ("LSTM float32", "sum float32" -> state): where the library's compiled eager
    loops (those of the recurrent layers; the blocked sum of large float tensors,
    _ops/_sum_kernels.py) of each key are, in this process: "compiling in the compile worker", "loaded from the disk cache", "compiled
    in this process" or "not compiled: <reason>" (not reset by `reset()`: a state).

    host_copies: device-to-host copies made by CUDA programs (a number read from a device
    tensor, e.g. control flow on a device value: targets/cuda/launch.host_scalar).

    spurious_errors ("function: error" -> calls): compiled programs that raised where the
    interpreter, rerunning the call for the user's error, raised nothing (`record_rerun`)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def calls_by_tier(self) -> str:
        """The calls by the tier that ran them, in one line (what the examples print)."""
        return (f"{self['calls']} scripted calls: {self['compiled_runs']} compiled, "
                f"{self['interpreted_runs']} interpreted ({self['interpreted_while_compiling']}"
                " of them while compiling in the background)")


def _host_copies() -> int:
    """Device -> host copies CUDA programs made (a number read from a device tensor:
    targets/cuda/launch.host_scalar), since the process started."""
    launch = sys.modules.get("jitorch.script.targets.cuda.launch")  # (never imports Numba)
    return 0 if launch is None else _value(launch.host_copies)


class _Counters:
    def __init__(self):
        self.reset()

    def reset(self):
        self.compiles = 0
        self.numba_compiles = 0
        self.disk_hits = 0
        self.memory_hits = itertools.count()
        self.interpreted_runs = itertools.count()
        self.interpreted_while_compiling = itertools.count()
        self.interpreted_reasons: Counter = Counter()
        self.compile_seconds = 0.0
        self.calls = itertools.count()
        self.background_compiles = 0
        self.background_done = 0
        self.background_failed = 0
        self.worker_wall_seconds = 0.0
        self.worker_cpu_seconds = 0.0
        self.worker_lean = {"compiled": 0, "declined": 0}  # lean counts of the worker's jobs
        self.spurious_errors: Counter = Counter()
        self.plan_hits = 0
        self.plan_stores = 0
        self.plan_errors = 0
        self.fused_layers: Counter = Counter()
        self.host_copies_at_reset = _host_copies()


_c = _Counters()
_functions: "weakref.WeakSet" = weakref.WeakSet()  # every ScriptFunction, for `functions`


def register_function(sf) -> None:
    with _lock:  # (iterating a WeakSet while another thread adds to it raises)
        _functions.add(sf)


def functions() -> list:
    """Every live ScriptFunction of the process."""
    with _lock:
        return list(_functions)


def forget_specialisations() -> None:
    """Every ScriptFunction drops its specialisations; each rebuilds them on its next call
    (what a process-wide setting that programs bake in needs when it changes: jitorch/_settings.py).
    Programs that come out the same load from the disk cache."""
    with _lock:
        fns = list(_functions)
    for sf in fns:
        sf._reset()


def snapshot() -> Stats:
    with _lock:
        st = Stats(compiles=_c.compiles, numba_compiles=_c.numba_compiles,
                   disk_hits=_c.disk_hits, memory_hits=_value(_c.memory_hits),
                   interpreted_runs=_value(_c.interpreted_runs),
                   interpreted_while_compiling=_value(_c.interpreted_while_compiling),
                   interpreted_reasons=dict(_c.interpreted_reasons),
                   compile_seconds=_c.compile_seconds, calls=_value(_c.calls),
                   background_compiles=_c.background_compiles,
                   background_done=_c.background_done,
                   background_failed=_c.background_failed,
                   worker_wall_seconds=_c.worker_wall_seconds,
                   worker_cpu_seconds=_c.worker_cpu_seconds,
                   spurious_errors=dict(_c.spurious_errors),
                   plan_hits=_c.plan_hits, plan_stores=_c.plan_stores,
                   plan_errors=_c.plan_errors, fused_layers=dict(_c.fused_layers),
                   fused_loops=_fused_loop_states(),
                   functions=_function_reports(), kernels=_kernel_counts(),
                   lean=_lean_counts(),
                   host_copies=_host_copies() - _c.host_copies_at_reset)
    # every interpreted call is counted as such (at most once), so the rest ran compiled
    # (counted so, rather than once more on the compiled call path, which stays this cheap)
    st["compiled_runs"] = st["calls"] - st["interpreted_runs"]
    return st


def _function_reports() -> dict:
    """(under _lock: see register_function)"""
    from .tiers import function_report
    out: dict = {}
    for sf in list(_functions):
        name, k = sf.name, 2
        while name in out:  # two functions of one name: name, name#2, ...
            name, k = f"{sf.name}#{k}", k + 1
        out[name] = function_report(sf)
    return out


def _fused_loop_states() -> dict:
    """Where the library's compiled eager loops of each key are (script/runtime/
    worker_loops.py: the fused RNN loops, the eager blocked sum)."""
    wl = sys.modules.get("jitorch.script.runtime.worker_loops")  # (never imports Numba here)
    return {} if wl is None else wl.states()


def _kernel_counts() -> dict:
    """Kernel overloads this process got (kernels/kernel_call.py): compiled, loaded from the
    disk cache, or shared (one already in memory: another call site, layer or program)."""
    kc = sys.modules.get("jitorch.script.kernels.kernel_call")  # (never imports Numba here)
    counts = kc.counts if kc is not None else {}
    return {"compiled": counts.get("compiled", 0), "disk": counts.get("disk", 0),
            "shared": counts.get("memory", 0)}


def _lean_counts() -> dict:
    """Generated functions (kernels, entries) compiled for this process, in it or by its
    compile worker, that the lean compiler typed, and those it declined, which Numba's
    frontend typed (kernels/lean_counts.py). (under _lock)"""
    lc = sys.modules.get("jitorch.script.kernels.lean_counts")  # (never imports Numba here)
    here = lc.counts if lc is not None else {}
    return {k: here.get(k, 0) + n for k, n in _c.worker_lean.items()}


def _value(counter) -> int:
    return counter.__reduce__()[1][0]  # the next value next() would give: the count so far


def reset() -> None:
    """Zero every counter (tests and benchmarks measure differences from here)."""
    with _lock:
        _c.reset()
        kc = sys.modules.get("jitorch.script.kernels.kernel_call")
        if kc is not None:
            kc.counts.update(dict.fromkeys(kc.counts, 0))
        lc = sys.modules.get("jitorch.script.kernels.lean_counts")
        if lc is not None:
            lc.counts.update(dict.fromkeys(lc.counts, 0))


def record_compile(seconds: float, *, how: str, reason: str | None = None) -> None:
    """One specialisation built. how: "compiled" (Numba compiled it), "disk" (Numba loaded
    it from the disk cache), "memory" (the same program was already loaded in this process)
    or "interpreted" (no program; `reason` says why)."""
    with _lock:
        _c.compiles += 1
        _c.compile_seconds += seconds
        if how == "compiled":
            _c.numba_compiles += 1
        elif how == "disk":
            _c.disk_hits += 1
        elif how == "interpreted":
            _c.interpreted_reasons[reason or "unknown"] += 1


def record_plan(what: str) -> None:
    """The plan cache (runtime/plans.py): a specialisation built from its record ("hit"), a
    record written ("stored"), or a record whose load failed unexpectedly ("error")."""
    with _lock:
        if what == "hit":
            _c.plan_hits += 1
        elif what == "error":
            _c.plan_errors += 1
        else:
            _c.plan_stores += 1


def record_fused_layer(name: str) -> None:
    """One eager call of layer `name` (e.g. "nn.LSTM") served by its fused compiled loops."""
    with _lock:
        _c.fused_layers[name] += 1


def record_background_start() -> None:
    with _lock:
        _c.background_compiles += 1


def record_background_done(wall: float, cpu: float, how: str, load_s: float,
                           lean: dict | None = None) -> None:
    """A background compile loaded: the worker's time, and how the caller got the program
    (`how`: "disk" when it loaded the worker's file, counted in disk_hits); `lean`: the
    worker's counts of the generated functions it compiled for it, by who typed them."""
    with _lock:
        _c.background_done += 1
        _c.worker_wall_seconds += wall
        _c.worker_cpu_seconds += cpu
        for k, n in (lean or {}).items():
            if k in _c.worker_lean:
                _c.worker_lean[k] += n
        _c.compile_seconds += load_s
        if how == "disk":
            _c.disk_hits += 1
        elif how == "compiled":  # the worker's file was not found: this process compiled
            _c.numba_compiles += 1


def record_background_failed(reason: str) -> None:
    with _lock:
        _c.background_failed += 1
        _c.interpreted_reasons[reason] += 1


def record_rerun(name: str, signal) -> None:
    """A call that a program handed to the interpreter (`signal`, a RaiseInInterpreter) ended
    without an error. When the program had failed (ProgramFailed) that is a compiler bug: the
    program raised where eager does not. The call got eager's result; it is counted here."""
    from ..kernels.signals import ProgramFailed
    if isinstance(signal, ProgramFailed):
        e = signal.error
        first = (str(e).strip().splitlines() or [""])[0][:200]
        with _lock:
            _c.spurious_errors[f"{name}: {type(e).__name__}: {first}"] += 1


def record_call(*, hit: bool, interpreted: bool, compiling: bool = False) -> None:
    """One call: `hit` found its specialisation in memory; `interpreted`: the interpreter runs
    it (`compiling`: while its program compiles in the background). A call counted here as not
    interpreted that a program then hands to the interpreter is counted by
    `record_interpreted` as well."""
    c = _c
    next(c.calls)
    if hit:
        next(c.memory_hits)
    if interpreted:
        next(c.interpreted_runs)
        if compiling:
            next(c.interpreted_while_compiling)


def record_interpreted(*, compiling: bool = False) -> None:
    """A call counted by `record_call` (or the compiled call path) as compiled that the
    interpreter ran after all (the program handed it over: kernels/signals.py; `compiling`:
    NotReady, its overload compiles in the background)."""
    next(_c.interpreted_runs)
    if compiling:
        next(_c.interpreted_while_compiling)


def log_compile(name: str, why: str, how: str, seconds: float, reason: str | None = None) -> None:
    """Print one compile line to stderr when JITORCH_LOG includes "compile"; an active
    profiler (jitorch.profiler) records it as a compile event."""
    if _profiler[0] is not None:
        _profiler[0].compile(name, why, how, seconds, reason)
    if not log_enabled("compile"):
        return
    what = {"compiled": "compiled", "disk": "loaded from disk cache",
            "memory": "program already loaded",
            "background": "compiling in the background, interpreted meanwhile"}.get(
                how, f"interpreted ({reason})")
    print(f"jitorch: compile {name}: {why} -> {what} in {seconds * 1e3:.1f} ms",
          file=sys.stderr, flush=True)
