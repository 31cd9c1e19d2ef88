"""The LLVM pipelines of generated code: a cheaper one for glue entries and one for kernels
(issue 17).

Numba optimises every function's code library the same way: its function passes at O3, a cheap
module pass before refprune, its module passes at O3, machine code from one O3 target machine.
Two kinds of generated module are compiled otherwise here, each marked in its source (a line
`_JITORCH_PIPELINE = '<name>'`, part of the module name, cache.module_name, so code compiled
with one pipeline never shares cache files with code compiled with another or by a jitorch that
does not know the mark; a new name gives new modules):

- **Glue entries** (`GLUE`): a program's entry (targets/cpu/program.py) that outlines its compute
  nodes into kernels and has no `for` loop of its own holds allocations, shape checks, scalar
  bookkeeping and calls through symbols (kernel_call.py): there is nothing for O3 to vectorise
  or unroll, yet Numba ran its full pipeline over it and over the CPython wrapper that boxes
  its returned tuple. With every kernel on disk, that pipeline was ~3 of the ~9 CPU-s a 2-layer
  Transformer encoder's train step took to compile (cProfile), and emitting its machine code
  ~1.4. Such an entry's library is optimised at O1 throughout (refprune stays), and its machine
  code comes from a level-0 target machine (fast instruction selection and register allocation:
  ~0.15-0.3 instead of ~0.6 CPU-s per encoder2 entry). Measured in one process, the same
  entries compiled both ways and called alternately (single-threaded BLAS): O1 alone ran as
  fast as O3; with the level-0 machine code the entries ran 0-0.8% slower (a few us of glue per
  call, the kernels unchanged), for ~0.9 of encoder2's ~7.5 CPU-s of compile.
- **Kernels** (`KERNEL`, targets/cpu/kernel.py): their function passes run at O1, their module
  passes at O3 as before. The module passes run the whole O3 function pipeline again
  (vectorisation included), so running it at O3 before them as well only cost time. On
  encoder1's first-ever compile (bench/compile_profile.py, three alternating runs per tree)
  the kernels' time under Numba's LLVM lock went from 7.06-7.26 to 6.11-6.22 CPU-s and the
  whole compile from 18.76-19.25 to 17.67-18.07; the train steps ran as fast as before
  (bench/RESULTS.md, "Kernels' function passes at O1"). Tried and left: the function passes
  skipped altogether, or the module passes below O3, cost the loops their vectorisation
  (1.6-1.9x slower); loop unrolling off as well saved 0.8 CPU-s more but made encoder1's train
  step 3% slower.

Any other module keeps Numba's default: an entry with an element loop of its own (one compute
node lowered in the entry, a GELU chain) and jitorch's library functions.

How: `compiling(disp)` around a compile (numba_cache.compile_program) names, for this thread,
the library to treat and its pipeline (Numba names a function's library after its qualname,
`entry` or `kernel`); wrappers of Numba's `CPUCodeLibrary._optimize_functions` /
`_optimize_final_module` see that library being optimised, the wrapper of
`CPUCodegen._pass_builder` then caps the `opt` level of that stage. Everything is per thread (a
kernel compiled while an entry is typed gets its own frame), and Numba's compiler lock
serialises compiles anyway. A Numba without these internals (`install` finds one missing)
keeps its default pipeline for every library; `RECORD` says what each compile got either way
(the tests read it).
"""
from __future__ import annotations

import collections
import contextlib
import inspect
import re
import threading
import typing



class Pipeline(typing.NamedTuple):
    name: str            # the mark's value (part of the module name)
    functions: int       # the opt level of the function passes
    module: int | None   # the opt level of the module passes (None: Numba's)
    codegen: int | None  # the target machine's level of the machine code (None: the engine's)


# O1 kept the entries' step time; optnone (Numba's _dbg_optnone) cost ~20% of it
GLUE = Pipeline("glue-o1-cg0-v1", functions=1, module=1, codegen=0)
KERNEL = Pipeline("kernel-f1-v1", functions=1, module=None, codegen=None)
PIPELINES = {p.name: p for p in (GLUE, KERNEL)}
MARK = "_JITORCH_PIPELINE"
DEFAULT = "default"

_tls = threading.local()  # .frame: the library being compiled with a pipeline here, or None
# (module, pipeline name) per compile_program call: DEFAULT for any other dispatcher (compiled
# or loaded), the pipeline's name for a marked module it ran on (one loaded from disk: none)
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


def mark_line(pipeline: Pipeline) -> str:
    """The line that marks a generated module's source for `pipeline`."""
    return f"{MARK} = {pipeline.name!r}"


def _marked(disp):
    """(library name, pipeline) of `disp`'s compile when its module carries a known mark, else
    None."""
    py = getattr(disp, "py_func", None)
    p = PIPELINES.get(getattr(py, "__globals__", {}).get(MARK)) if py is not None else None
    return None if p is None else (py.__qualname__, p)


@contextlib.contextmanager
def compiling(disp):
    """Run `disp`'s compile in this block: its library gets its module's pipeline if the module
    carries a mark and the hook is installed; `RECORD` notes which pipeline it got."""
    marked = _marked(disp) if INSTALLED else None
    frame = {"name": marked[0], "pipeline": marked[1], "applied": 0} if marked else None
    prev = getattr(_tls, "frame", None)
    _tls.frame = frame
    try:
        yield
    finally:
        _tls.frame = prev
        if frame is None or frame["applied"]:
            mod = getattr(getattr(disp, "py_func", None), "__module__", "?")
            RECORD.append((mod, frame["pipeline"].name if frame else DEFAULT))


def _frame_of(library):
    frame = getattr(_tls, "frame", None)
    return frame if frame is not None and library.name == frame["name"] else None


@contextlib.contextmanager
def _optimising(library, stage: str):
    """While Numba runs `stage` ("functions" or "module") of `library`'s passes: its pipeline's
    level cap for that stage, if it is the library being compiled with one."""
    frame = _frame_of(library)
    if frame is None:
        yield
        return
    frame["applied"] += 1
    p = frame["pipeline"]
    _tls.level = p.functions if stage == "functions" else p.module
    try:
        yield
    finally:
        _tls.level = None


def install() -> bool:
    """Wrap Numba's pass-builder and library optimisation methods, once per process; False (and
    every library keeps Numba's default pipeline) when this Numba lacks one of them."""
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

    for n, stage in zip(names, ("functions", "module")):
        orig = getattr(lib, n)

        def wrapped(self, *a, _orig=orig, _stage=stage, **k):
            with _optimising(self, _stage):
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
    if jit is not None and callable(getattr(jit, "_finalize_specific", None)) and \
            callable(getattr(getattr(codegen, "JITCPUCodegen", None), "_customize_tm_options",
                             None)):
        _wrap_emission(jit)  # (else: the engine's own emission, the passes still apply)
    return True


def _wrap_emission(jit) -> None:
    """Machine code of a library whose pipeline names a `codegen` level from a target machine
    at that level: Numba's engine emits every library with its one O3 target machine (~0.6
    CPU-s of each of encoder2's two glue entries; ~0.15-0.3 at level 0). The object is handed
    to the engine as Numba hands it a cached one (its object-cache hook, `_compiled_object`),
    and kept as the library's compiled object afterwards, as the engine's own compile would,
    for the disk cache. Any failure: the engine emits it as before."""
    orig = jit._finalize_specific

    def _finalize_specific(self):
        frame = _frame_of(self)
        buf = None
        level = frame["pipeline"].codegen if frame is not None else None
        if level is not None and getattr(self, "_object_caching_enabled", False) and \
                getattr(self, "_compiled_object", None) is None:
            try:
                buf = _target_machine(self._codegen, level).emit_object(
                    self._final_module.clone())
                self._compiled_object = buf
            except Exception:  # noqa: BLE001 - the engine emits it itself
                buf = None
        out = orig(self)
        if buf is not None:  # (what the engine's compiled-object hook would have kept)
            self._compiled, self._compiled_object = True, buf
        return out
    _finalize_specific.__wrapped__ = orig
    jit._finalize_specific = _finalize_specific


_machines: dict = {}  # (id(codegen), level) -> (codegen, its target machine at that level)


def _target_machine(codegen, level: int):
    got = _machines.get((id(codegen), level))
    if got is None or got[0] is not codegen:
        import llvmlite.binding as ll
        opts = {"opt": level}
        codegen._customize_tm_options(opts)  # (the engine's CPU, features, relocation model)
        opts["opt"] = level
        got = _machines[(id(codegen), level)] = (
            codegen, ll.Target.from_triple(ll.get_process_triple()).create_target_machine(
                **opts))
    return got[1]
