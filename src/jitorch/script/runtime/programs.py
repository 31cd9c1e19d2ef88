"""Building one specialisation of a scripted function: the target of the arguments' device
(codegen/target.py), the graph typed for the call's argument types (passes.types.specialize),
the pass pipeline, the target's code generator, the program loaded by the target (CPU: from the
disk cache, kernels/cache.py) -> an `_Entry`; and its first call, which compiles it now or
(JITORCH_COMPILE=background) hands it to the compile worker (runtime/tiers.py).

A compiler bug never breaks the user's call: a stage that raises leaves the entry interpreted,
with the stage and the error as its reason (JITORCH_STRICT=1 raises instead, for tests).
"""
from __future__ import annotations

import os

from .. import ir
from ..codegen import NotLowered
from ..codegen.target import device_of, get_target
from ..kernels import cache
from . import tiers
from .entry import _Entry


def _strict() -> bool:
    return os.environ.get("JITORCH_STRICT", "") not in ("", "0")


# --- building one specialisation -----------------------------------------------------------------
def _lower(graph: ir.Graph, arg_types: list, static: dict | None = None):
    """graph -> (optimised graph, program or None, reason when None), by the target of the
    arguments' device (codegen/target.py: the runtime names no target). Tests replace this."""
    g = graph
    stage = "codegen.target"
    try:
        try:
            target = get_target(device_of(arg_types))
        except NotImplementedError as e:  # a device whose target is not written yet
            raise NotLowered(str(e)) from None
        where = ["passes", graph]
        try:
            g = optimise(graph, arg_types, static, target, where)
        finally:
            stage, g = where
        stage = f"targets.{target.name}.generate"
        # the program checks that the arguments it writes share no memory (runtime/alias.py)
        return g, target.generate(g, written=tuple(getattr(graph, "mutated_inputs", None) or ())
                                  ), None
    except NotLowered as e:
        return g, None, f"not lowered: {e}"
    except Exception as e:
        if _strict():
            raise
        # a compiler bug must not break the user's call: run the frontend's graph instead
        return graph, None, f"internal error in {stage}: {type(e).__name__}: {e}"


_LOWER = _lower  # (runtime/plans.py records only what the real pipeline built)


def optimise(graph: ir.Graph, arg_types: list, static: dict | None = None, target=None,
             where: list | None = None):
    """`graph` specialised for `arg_types` and through the pass pipeline: the graph the
    target's code generator lowers (and the interpreter runs where a program does not).
    `where`: [stage, graph so far], kept up to date (what an error leaves: its reason, and
    the graph the interpreter then runs)."""
    where = where if where is not None else ["", graph]
    if target is None:
        target = get_target(device_of(arg_types))
    from ..passes import types as _types
    where[0] = "passes.types.specialize"
    g = where[1] = _types.specialize(graph, arg_types, static)
    g.capabilities = target.capabilities  # what fusion may group (passes/capabilities.py)
    where[0] = "passes.pipeline"
    from ..passes import pipeline
    where[0] = "passes.pipeline.run"
    g = where[1] = pipeline.run(g)
    # the passes make nodes of their own (fusion groups, CSE'd and simplified ops), typed
    # on the default device: each value's device again, by the same rules (types.py)
    _types.stamp_device(_types.one_device(arg_types), g)
    return g


def _symbolic(t):
    if isinstance(t, ir.TensorType):
        return ir.TensorType(t.dtype, None if t.shape is None else (None,) * len(t.shape),
                             t.device)
    if isinstance(t, ir.TupleType):
        return ir.TupleType([_symbolic(e) for e in t.elems])
    if isinstance(t, ir.ListType):
        return ir.ListType(_symbolic(t.elem))
    return t


def build_entry(graph: ir.Graph, arg_types: list, static: dict | None = None):
    """Lower `graph` for `arg_types` and load its program: -> (entry, how). An interpreted
    entry (how == "interpreted") says why in entry.reason. Used for plain calls and by the
    autodiff runtime for each of its forward/backward graphs."""
    g, prog, reason = _lower(graph, arg_types, static)
    if prog is None:
        return _Entry("interpreted", g, reason=reason), "interpreted"
    options = getattr(prog, "njit_options", None)
    try:
        mod, _ = get_target(device_of(arg_types)).load(prog)
        fn = getattr(mod, prog.entry)
    except Exception as e:
        if _strict():
            raise
        return _Entry("interpreted", g, reason=f"loading the program failed: "
                                              f"{type(e).__name__}: {e}"), "interpreted"
    src = getattr(mod, "__file__", None)
    try:
        with open(src) as f:
            source = f.read()
    except (OSError, TypeError):
        source = prog.source
    if hasattr(prog, "listing"):  # fn.code: the entry and each kernel it calls
        source = prog.listing(source)
    return _Entry("compiled", g, fn=fn, source=source, out_types=list(prog.output_types),
                  checks_overlap=bool(getattr(prog, "checks_overlap", False)),
                  origin=(prog.source, options, prog.entry,
                          list(getattr(prog, "kernels", ())))), "pending"


def first_call(entry: _Entry, args):
    """Run a freshly loaded program once: -> (outs, how). Under JITORCH_COMPILE=background
    (runtime/tiers.py) a program that is not compiled yet goes to the compile worker and this call
    runs interpreted (how "background"); otherwise Numba compiles or loads it now. On a Numba
    compile error the entry turns into an interpreted one and outs is None."""
    if entry.pending is not None or tiers.start(entry, args):
        return entry.run(args), "background"
    before = cache.dispatcher_counts(entry.fn)
    try:
        outs = entry.run(args)
    except Exception as e:
        if not _is_numba_compile_error(e) or _strict():
            raise
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        entry.kind, entry.fn = "interpreted", None
        entry.reason = f"numba could not compile the program: {type(e).__name__}: {first}"
        return None, "interpreted"
    return outs, cache.dispatcher_outcome(entry.fn, before)


def _is_numba_compile_error(e) -> bool:
    from numba.core.errors import NumbaError  # (numba is a dependency)
    return isinstance(e, NumbaError)
