"""The LLVM pipeline of glue entries: a cheaper optimisation level for the code library of an
entry whose work all lives in kernels (issue 17).

A program's entry (targets/cpu/program.py) that outlines its compute nodes into kernels holds
allocations, shape checks, scalar bookkeeping and calls through symbols (kernel_call.py): there
is nothing for LLVM's O3 to vectorise or unroll, yet Numba runs its full pipeline over it, and
over the CPython wrapper that boxes its returned tuple (both live in the entry's code library).
With every kernel on disk, that pipeline was ~3 of the ~9 CPU-s a 2-layer Transformer encoder's
train step took to compile (cProfile), and emitting its machine code ~1.4. Here such an
entry's library runs Numba's pipeline at `LEVEL` instead (its function passes, the cheap module
pass before refprune and the full module pass; refprune itself stays), and its machine code
comes from a target machine at `CODEGEN_LEVEL` (fast instruction selection and register
allocation: ~0.15-0.3 instead of ~0.6 CPU-s per encoder2 entry). Measured in one process, the
same entries compiled both ways and called alternately (single-threaded BLAS): O1 alone ran
as fast as O3; with the level-0 machine code the entries ran 0-0.8% slower (a few us of glue per
call, the kernels unchanged), for ~0.9 of encoder2's ~7.5 CPU-s of compile.

Which entries: those whose source carries `mark_line()` (program.generate writes it for an
entry that outlines and has no `for` loop of its own: see `is_glue`). The mark is part of the
source, so of the module name (cache.module_name): a glue entry compiled here never shares
cache files with one compiled by code that does not know the mark, and a new `PIPELINE` string
gives new module names. An entry without the mark (one compute node lowered in the entry, a
GELU chain: its element loop is there) keeps Numba's default.

How: `compiling(disp)` around a program's compile (numba_cache.compile_program) names, for this
thread, the library to treat (Numba names a function's library after its qualname, `entry`);
wrappers of Numba's `CPUCodeLibrary._optimize_functions` / `_optimize_final_module` see that
library being optimised, and the wrapper of `CPUCodegen._pass_builder` then caps the `opt`
level. Everything is per thread (a kernel compiled while the entry is typed gets its own,
default, frame), and Numba's compiler lock serialises compiles anyway. A Numba without these
internals (`install` finds one missing) keeps its default pipeline for every entry; `RECORD`
says what each compile got either way (the tests read it).
"""
from __future__ import annotations

import collections
import contextlib
import inspect
import re
import threading

LEVEL = 1  # O1 kept the entries' step time; optnone (Numba's _dbg_optnone) cost ~20% of it
# the target machine's level for the machine code: 0, fast instruction selection and register
# allocation (~0.6 -> ~0.15-0.3 CPU-s per encoder2 entry); None: the engine's own (O3) emission
CODEGEN_LEVEL = 0
PIPELINE = f"glue-o{LEVEL}-cg{CODEGEN_LEVEL}-v1"  # bump to give every glue entry a new module name
MARK = "_JITORCH_PIPELINE"
DEFAULT = "default"

_tls = threading.local()  # .frame: the library being compiled with the glue pipeline, or None
# (module, pipeline) per compile_program call: DEFAULT for any other dispatcher (compiled or
# loaded), PIPELINE for a glue entry the pipeline ran on (a glue entry loaded from disk: none)
RECORD: collections.deque = collections.deque(maxlen=256)
INSTALLED = False

_FOR = re.compile(r"^\s*for\b", re.M)


def is_glue(outlined: bool, body_lines) -> bool:
    """Whether an entry gets the glue pipeline: it outlines its compute nodes (kernel.py: every
    node that emits code is a kernel) and its own body has no `for` loop (element or dimension
    loops: an overlap check, a list's elements). A `while` is a scripted loop
    (program.lower_loop) whose iterations call kernels: glue too (LSTM over time steps). What
    is left of element work in a glue entry is the copy branch of a reshape or dense view
    (targets/cpu/views.py), taken for an argument that is not contiguous: that copy gets O1."""
    return outlined and not any(_FOR.match(line) for line in body_lines)


def mark_line() -> str:
    return f"{MARK} = {PIPELINE!r}"


def _glue_name(disp):
    """The library name of `disp`'s compile when its module carries the mark, else None."""
    py = getattr(disp, "py_func", None)
    if py is None or getattr(py, "__globals__", {}).get(MARK) != PIPELINE:
        return None
    return py.__qualname__


@contextlib.contextmanager
def compiling(disp):
    """Run `disp`'s compile in this block: its library gets the glue pipeline if its module
    carries the mark and the hook is installed; `RECORD` notes which pipeline it got."""
    name = _glue_name(disp) if INSTALLED else None
    frame = {"name": name, "applied": 0} if name else None
    prev = getattr(_tls, "frame", None)
    _tls.frame = frame
    try:
        yield
    finally:
        _tls.frame = prev
        if frame is None or frame["applied"]:
            mod = getattr(getattr(disp, "py_func", None), "__module__", "?")
            RECORD.append((mod, PIPELINE if frame else DEFAULT))


@contextlib.contextmanager
def _optimising(library):
    frame = getattr(_tls, "frame", None)
    if frame is None or library.name != frame["name"]:
        yield
        return
    frame["applied"] += 1
    _tls.level = LEVEL
    try:
        yield
    finally:
        _tls.level = None


def install() -> bool:
    """Wrap Numba's pass-builder and library optimisation methods, once per process; False (and
    every entry keeps Numba's default pipeline) when this Numba lacks one of them."""
    global INSTALLED
    if not INSTALLED:
        from numba.core import codegen
        INSTALLED = wrap(codegen)
    return INSTALLED


def wrap(codegen) -> bool:
    """Wrap the methods in module `codegen` (numba.core.codegen); False, and nothing changed,
    when one of them is missing or takes no `opt` keyword."""
    lib = getattr(codegen, "CPUCodeLibrary", None)
    cg = getattr(codegen, "CPUCodegen", None)
    names = ("_optimize_functions", "_optimize_final_module")
    if lib is None or cg is None or not all(callable(getattr(lib, n, None)) for n in names) \
            or not callable(getattr(cg, "_pass_builder", None)):
        return False
    try:
        params = inspect.signature(cg._pass_builder).parameters
    except (TypeError, ValueError):
        return False
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return False  # (Numba passes `opt=` through **kwargs)

    for n in names:
        orig = getattr(lib, n)

        def wrapped(self, *a, _orig=orig, **k):
            with _optimising(self):
                return _orig(self, *a, **k)
        wrapped.__wrapped__ = orig
        setattr(lib, n, wrapped)

    orig_pb = cg._pass_builder

    def _pass_builder(self, **kwargs):
        level = getattr(_tls, "level", None)
        if level is not None:
            kwargs["opt"] = min(int(kwargs.get("opt", level)), level)
        return orig_pb(self, **kwargs)
    _pass_builder.__wrapped__ = orig_pb
    cg._pass_builder = _pass_builder
    jit = getattr(codegen, "JITCodeLibrary", None)
    if CODEGEN_LEVEL is not None and jit is not None and callable(getattr(jit, "_finalize_specific", None)) and \
            callable(getattr(getattr(codegen, "JITCPUCodegen", None), "_customize_tm_options",
                             None)):
        _wrap_emission(jit)  # (else: the engine's own emission, the pipeline still applies)
    return True


def _wrap_emission(jit) -> None:
    """Machine code of a glue library from a target machine at `CODEGEN_LEVEL`: Numba's
    engine emits every library with its one O3 target machine (~0.6 CPU-s of each of
    encoder2's two entries; ~0.15-0.3 at level 0). The object is handed to the engine as
    Numba hands it a cached one (its object-cache hook, `_compiled_object`), and kept as the
    library's compiled object afterwards, as the engine's own compile would, for the disk
    cache. Any failure: the engine emits it as before."""
    orig = jit._finalize_specific

    def _finalize_specific(self):
        frame = getattr(_tls, "frame", None)
        buf = None
        if frame is not None and self.name == frame["name"] and \
                getattr(self, "_object_caching_enabled", False) and \
                getattr(self, "_compiled_object", None) is None:
            try:
                buf = _target_machine(self._codegen).emit_object(self._final_module.clone())
                self._compiled_object = buf
            except Exception:  # noqa: BLE001 - the engine emits it itself
                buf = None
        out = orig(self)
        if buf is not None:  # (what the engine's compiled-object hook would have kept)
            self._compiled, self._compiled_object = True, buf
        return out
    _finalize_specific.__wrapped__ = orig
    jit._finalize_specific = _finalize_specific


_machines: dict = {}  # id(codegen) -> (codegen, its target machine at CODEGEN_LEVEL)


def _target_machine(codegen):
    got = _machines.get(id(codegen))
    if got is None or got[0] is not codegen:
        import llvmlite.binding as ll
        opts = {"opt": CODEGEN_LEVEL}
        codegen._customize_tm_options(opts)  # (the engine's CPU, features, relocation model)
        opts["opt"] = CODEGEN_LEVEL
        got = _machines[id(codegen)] = (
            codegen, ll.Target.from_triple(ll.get_process_triple()).create_target_machine(
                **opts))
    return got[1]
