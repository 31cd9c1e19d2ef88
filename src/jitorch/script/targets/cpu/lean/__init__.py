"""The lean compiler: a generated CPU function (a kernel's loop nest, a program's entry) turned
into LLVM IR without Numba's frontend (issue 17's "kernel bodies that skip Numba's per-function
typing and lowering": a Numba `@intrinsic` whose body is emitted as LLVM IR, called from the
njit function as before).

A generated module (targets/cpu/kernel.py, program.py) writes its function `f` as
`function_text` gives it: `f_source`, the function as plain Python (never called), and `f`, an
njit function of one line that calls `_f_body = body_of(f_source)`: an intrinsic whose typing
runs typer.py over the source and whose codegen emits it with lower.py, in place. Numba then
compiles, caches and calls `f` as it always did, so the disk cache, the compile lock, kernel
symbols, an entry's Python wrapper and the exceptions are unchanged; what is skipped is
Numba's bytecode analysis, SSA, rewrites and type inference over the whole function, and its
lowering of each bytecode (bench/RESULTS.md, "The lean compiler").

A variable rebound with values of another type at the top level (a 3-d array made 4-d) is a
variable per definition (rename.py), as Numba's SSA pass would make it.

Where the lean compiler does not cover the source (typer.Unsupported: a list comprehension,
a raise with a run-time message, ...), the same intrinsic has Numba compile `f_source` (its
whole pipeline, but no machine code of its own: it is linked into `f` and optimised there
once, as Numba's `compile_subroutine` does), so `f` always compiles and nothing else knows.
`counts` says how often each happened (`jit.stats()["lean"]`).

`JITORCH_LEAN=0` switches it off (the module text as before this compiler existed: `f` is the
njit function itself, typed and lowered by Numba); `1`, the default, on.
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import os
import sys
import textwrap

from numba.extending import intrinsic

from ....kernels.lean_counts import counts, unsupported
from ....kernels.log import log_enabled
from .rename import rename
from .typer import Unsupported, infer

__all__ = ["body_of", "counts", "enabled", "function_text", "unsupported", "version",
           "Unsupported"]

_VERSION = None


def enabled() -> bool:
    v = os.environ.get("JITORCH_LEAN", "1").strip()
    if v not in ("0", "1"):
        raise ValueError(f"JITORCH_LEAN must be 0 or 1, not {v!r}")
    return v == "1"


def function_text(decorator: str, name: str, params: str, body: str) -> str:
    """The text of generated njit function `name(params)` (`body`: its indented lines): as it
    is when the lean compiler is off; else `name_source` with that body, the intrinsic
    `_name_body` that emits it, and `name`, which calls it. The import line names this
    compiler's version: a changed compiler gives the module a new name (Numba's cache does not
    look at the code an intrinsic emits)."""
    if not enabled():
        return f"{decorator}\ndef {name}({params}):\n{body}"
    return (f"from {__name__} import body_of  # lean {version()}\n\n\n"
            f"def {name}_source({params}):\n{body}\n\n"
            f"_{name}_body = body_of({name}_source)\n\n\n"
            f"{decorator}\ndef {name}({params}):\n    return _{name}_body({params})\n")


def version() -> str:
    """A hash of this compiler's sources."""
    global _VERSION
    if _VERSION is None:
        h = hashlib.sha256()
        here = os.path.dirname(os.path.abspath(__file__))
        for name in sorted(os.listdir(here)):
            if name.endswith(".py"):
                with open(os.path.join(here, name), "rb") as f:
                    h.update(name.encode() + b"\0" + f.read())
        _VERSION = h.hexdigest()[:16]
    return _VERSION


def body_of(py):
    """The intrinsic that emits plain Python function `py` (a generated function's source,
    read once, at the first typing) in place."""
    parsed: list = []
    typings: dict = {}  # argument types -> (return type, codegen): Numba may ask again

    def source_tree():
        if not parsed:
            parsed.append(rename(ast.parse(textwrap.dedent(inspect.getsource(py))).body[0]))
        return parsed[0]

    def typing(typingctx, args):
        args = tuple(args)
        got = typings.get(args)
        if got is None:
            got = typings[args] = _lean(py, source_tree, typingctx, args)
        ret, codegen = got
        return ret(*args), codegen

    return intrinsic(_typer_of_arity(py.__code__.co_argcount)(typing))


_TYPERS: dict = {}  # arity -> a factory of intrinsic typing functions of that many arguments


def _typer_of_arity(n: int):
    """`make(typing)` -> `lean_body(typingctx, a0, ..., a{n-1})` calling `typing(typingctx,
    args)`: Numba reads an intrinsic's arity from its signature. One exec per arity, not per
    generated module (each module makes its intrinsic when it is imported, warm starts too)."""
    make = _TYPERS.get(n)
    if make is None:
        params = ", ".join(f"a{i}" for i in range(n))
        ns: dict = {}
        exec(f"def make(_typing):\n"
             f"    def lean_body(typingctx{', ' if n else ''}{params}):\n"
             f"        return _typing(typingctx, ({params}{',' if n == 1 else ''}))\n"
             f"    return lean_body\n", {}, ns)
        make = _TYPERS[n] = ns["make"]
    return make


def _lean(py, source_tree, typingctx, args):
    """(return type, codegen) of `py` for `args`: the lean compiler's, else Numba's."""
    from .lower import emit
    try:
        typed = infer(source_tree(), py.__globals__, args, typingctx)
    except Exception as e:  # noqa: BLE001 - Unsupported; no source file; or a typer bug:
        # whatever the lean compiler cannot type, Numba's pipeline compiles (and says why)
        why = str(e) if isinstance(e, Unsupported) else f"{type(e).__name__}: {e}"
        unsupported[(py.__module__, py.__name__, args)] = why
        counts["declined"] += 1
        if log_enabled("compile"):
            print(f"jitorch: {py.__module__}.{py.__name__}: the lean compiler declined "
                  f"({why}); Numba's frontend types it", file=sys.stderr, flush=True)
        return _numba(py, typingctx, args)
    counts["compiled"] += 1

    def codegen(context, builder, sig, llargs):
        return emit(context, builder, typed, list(llargs))

    return typed.ret, codegen


def _numba(py, typingctx, args):
    """(return type, codegen) of `py` compiled by Numba's pipeline with the flags of the
    function being compiled, without machine code of its own: its library is linked into
    the caller's, as `BaseContext.compile_subroutine` does."""
    from numba.core import compiler, targetconfig
    from numba.core.registry import cpu_target
    top = targetconfig.ConfigStack.top_or_none()
    flags = top.copy() if top is not None else compiler.Flags()
    flags.no_compile = True
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    targetctx = cpu_target.target_context
    library = targetctx.codegen().create_library(py.__qualname__)
    cres = compiler.compile_internal(typingctx, targetctx, library, py, args, None, flags,
                                     locals={})

    def codegen(context, builder, sig, llargs):
        context.active_code_library.add_linking_library(cres.library)
        return context.call_internal(builder, cres.fndesc, cres.signature, list(llargs))

    return cres.signature.return_type, codegen
