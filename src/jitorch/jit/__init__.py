"""`jitorch.jit`: PyTorch's `torch.jit` facade over the compiler in `jitorch.script`.

Re-exports only (plus `fork`/`wait`, which are thin wrappers over jitorch's thread pool). The
language helpers (`annotate`, `ignore`, `unused`, `is_scripting`, `export`, `Final`; in
`script/frontend/lang.py`) and the errors (`ScriptError`, `Error`; in `script/ir/errors.py`) are
resolved lazily through the module `__getattr__`, so `import jitorch` never depends on those modules
importing cleanly; until they exist, simple stand-ins with the same behaviour in eager code are
used (they are not cached, so the real ones take over as soon as they import).
"""
from __future__ import annotations

import threading
import typing

from .. import _fork, _threads
from ..futures import Future  # `torch.jit.Future` is `torch.futures.Future`
from ..script.api import script, trace  # noqa: F401
from ..script.frontend.trace import TracerWarning  # noqa: F401
from ..script.runtime.functions import ScriptFunction  # noqa: F401
from ..script.frontend.trace_check import TracingCheckError  # noqa: F401
from ..script.runtime import stats as _stats

__all__ = ["script", "trace", "ScriptFunction", "ScriptError", "Error", "annotate", "ignore",
           "unused", "is_scripting", "export", "Final", "fork", "wait", "stats", "reset_stats", "wait_compiled",
           "save", "load", "freeze", "trace_module", "TracerWarning", "TracingCheckError", "Future", "warmup",
           "ScriptModule", "script_method"]


def stats():
    """Compile statistics for this process: compiles, numba_compiles, disk_hits, memory_hits,
    interpreted_reasons, compile_seconds; calls by the tier that ran them (calls ==
    compiled_runs + interpreted_runs; interpreted_while_compiling of those interpreted ran
    while the program compiled in the background); the background compile's counters and
    `functions` (per function its tier and compile seconds; see
    `jitorch.script.runtime.stats.Stats`) (a dict with attribute access). `memory_hits` is the
    in-memory specialisation cache's hits, whatever tier ran the call: not compiled calls.
    `JITORCH_LOG=compile` prints each compile as it happens."""
    return _stats.snapshot()


def wait_compiled(timeout: float | None = None) -> bool:
    """Wait until every compile this process started in the background is done (each program
    of every scripted function and module, the optimizers' compiled steps and the fused loops
    of nn.LSTM/GRU/RNN (`stats().fused_loops`) included, then compiled or settled
    interpreted with its reason in `stats()`): the next calls run the
    compiled programs. False if `timeout` seconds passed first. Time scripted code after it:
    before, calls may run in the interpreter (`stats().interpreted_while_compiling`)."""
    from ..script.runtime import tiers
    return tiers.wait_all(timeout)


def reset_stats() -> None:
    _stats.reset()


def warmup(verbose: bool = False, jobs: int | None = None, only=None) -> dict:
    """Compile the generic kernel library (Linear, activations, softmax/layernorm rows,
    cross-entropy, conv/pool, attention, optimizer steps) into the disk cache, so that a new
    model compiles only its own kernels: {workload: seconds}. The workloads run in `jobs`
    processes at once (default: one per core; 1: in this process); `only` picks some of them
    (script/runtime/warmup.py). Also `python -m jitorch.jit warmup`."""
    from ..script.runtime.warmup import warmup as _warmup
    return _warmup(verbose, jobs, only)


# --- fork / wait ----------------------------------------------------------------------------------
_in_pool = threading.local()


@_fork.in_child
def _not_in_pool() -> None:
    # a process forked from inside a pool task: its one thread is not a pool thread (else its
    # forks would all run inline)
    _in_pool.active = False


def _run_in_pool(fn, args, kwargs):
    _in_pool.active = True
    try:
        return fn(*args, **kwargs)
    finally:
        _in_pool.active = False


def fork(func, *args, **kwargs) -> Future:
    """Run `func(*args, **kwargs)` on jitorch's thread pool (sized by
    `jitorch.get_num_threads()`); compiled calls release the GIL, so forks run in parallel.
    A fork from inside a forked task runs at once on that thread (waiting on a nested fork
    from a full pool would deadlock), and so does one made while `jit.trace` records (the
    trace must see the call: a scripted one becomes a call node, not a constant)."""
    from ..script.frontend.trace import active_tracer
    if getattr(_in_pool, "active", False) or active_tracer() is not None:
        fut = Future()
        try:
            fut.set_result(func(*args, **kwargs))
        except BaseException as e:  # delivered by wait(), like a pooled task
            fut.set_exception(e)
        return fut
    fut = _threads.submit(_run_in_pool, func, args, kwargs)
    fut.__class__ = Future  # same layout: adds wait()/value() to the pool's future
    return fut


def wait(future):
    """The result of a `fork` (re-raises its exception)."""
    return future.wait() if hasattr(future, "wait") else future.result()


# --- modules: save / load / freeze (script/runtime/serialize.py, script/runtime/module.py)
# --------------------
def save(m, f, _extra_files=None):
    """Save a ScriptModule (IR text, JSON metadata, tensors; docs/serialization.md)."""
    from ..script.runtime import serialize
    serialize.save(m, f, _extra_files)


def load(f, map_location=None, _extra_files=None):
    """Load what `save` wrote: a runnable ScriptModule, without the model's Python source;
    nothing in the file is unpickled or executed."""
    from ..script.runtime import serialize
    return serialize.load(f, map_location, _extra_files)


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, _force_outplace=False,
                 _module_class=None, _compilation_unit=None, example_inputs_is_kwarg=False,
                 _store_inputs=True):
    """`torch.jit.trace_module(mod, {"forward": example_inputs})`: only `forward` can be
    traced (a traced module's methods are its forward's graph)."""
    other = sorted(set(inputs) - {"forward"})
    if other:
        raise NotImplementedError(f"jitorch.jit.trace_module: tracing methods other than "
                                  f"forward ({', '.join(other)}) is not supported; script the "
                                  "module with @jitorch.jit.export on them instead")
    if check_inputs is not None:  # PyTorch's form: a list of {"forward": inputs} dicts
        check_inputs = [c["forward"] if isinstance(c, dict) else c for c in check_inputs]
    return trace(mod, inputs["forward"], check_trace=check_trace, check_inputs=check_inputs,
                 check_tolerance=check_tolerance)


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """An eval-mode ScriptModule with its parameters folded (script/runtime/module.py `freeze`)."""
    from ..script.runtime import module
    return module.freeze(mod, preserved_attrs, optimize_numerics)


# --- lazily resolved names ----------------------------------------------------------------
_LANG = ("annotate", "ignore", "unused", "is_scripting", "export", "Final")


def _fallback(name):
    if name == "annotate":
        return lambda the_type, the_value: the_value
    if name in ("ignore", "unused"):
        def deco(fn=None, drop=False, **kwargs):
            if fn is None or isinstance(fn, bool):
                return deco
            return fn
        return deco
    if name == "export":
        return lambda fn: fn
    if name == "is_scripting":
        return lambda: False
    if name == "Final":
        return typing.Final
    if name == "Error":
        from ..script.kernels.signals import ScriptRuntimeError
        return ScriptRuntimeError
    if name == "ScriptError":
        return _FallbackScriptError
    raise AttributeError(name)


class _FallbackScriptError(Exception):
    """Stand-in for script/ir/errors.py's ScriptError while that module is missing."""


def __getattr__(name):
    if name in _LANG:
        try:
            from ..script.frontend import lang
            val = getattr(lang, name)
        except (ImportError, AttributeError):
            return _fallback(name)
    elif name in ("ScriptModule", "script_method"):  # runtime/legacy.py (nn made on first use)
        from ..script.runtime import legacy
        val = legacy.script_module_base() if name == "ScriptModule" else legacy.script_method
    elif name in ("ScriptError", "Error"):
        try:
            from ..script.ir import errors
            val = getattr(errors, name)
        except (ImportError, AttributeError):
            return _fallback(name)
    else:
        raise AttributeError(f"module 'jitorch.jit' has no attribute '{name}'")
    globals()[name] = val  # the real one: cache it
    return val
