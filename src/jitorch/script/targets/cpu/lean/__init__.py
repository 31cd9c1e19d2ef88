"""The lean kernel compiler: a generated CPU kernel's loop nest turned into LLVM IR without
Numba's frontend (issue 17's "kernel bodies that skip Numba's per-function typing and
lowering": a Numba `@intrinsic` whose body is emitted as LLVM IR, called from the njit
function as before).

A kernel module (targets/cpu/kernel.py) holds the kernel twice over one source:
`kernel_numba`, the loop nest as an njit function, and `kernel`, an njit function of one
line that calls `body_of(kernel_numba)`: an intrinsic whose typing runs typer.py over the
loop nest's source and whose codegen emits it with lower.py, in place. Numba then compiles,
caches and calls `kernel` as it always did (kernel_call.py), so the disk cache, the compile
lock, symbols and exceptions are unchanged; what is skipped is Numba's bytecode analysis, SSA,
rewrites and type inference over the whole loop nest, and its lowering of each bytecode.
A kernel the lean compiler does not cover (typer.Unsupported) is compiled by Numba:
kernel_call.py then binds `kernel_numba` instead (asking the intrinsic's `declined`), and
counts both kinds (`jit.stats()["kernels"]`: `lean`, `lean_declined`).

Which compiler: `JITORCH_KERNEL_COMPILER` = `lean` (the default) or `numba` (every kernel
through Numba's frontend, the module text as before this compiler existed).
"""
from __future__ import annotations

import ast
import hashlib
import inspect
import os
import textwrap

from numba.extending import intrinsic

from .typer import Unsupported, infer

__all__ = ["body_of", "enabled", "version", "Unsupported", "unsupported"]

unsupported: dict = {}  # (kernel function, argument types) -> why the lean compiler declined
_VERSION = None


def enabled() -> bool:
    v = os.environ.get("JITORCH_KERNEL_COMPILER", "lean").strip().lower()
    if v not in ("lean", "numba"):
        raise ValueError(f"JITORCH_KERNEL_COMPILER must be 'lean' or 'numba', not {v!r}")
    return v == "lean"


def version() -> str:
    """A hash of this compiler's sources: part of every kernel module's text, so a changed
    compiler gives new module names (Numba's cache does not look at the code an intrinsic
    emits)."""
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


def body_of(disp):
    """The intrinsic that emits njit dispatcher `disp`'s function in place (its source read
    once, at the first typing)."""
    py = disp.py_func
    parsed: list = []

    def source_tree():
        if not parsed:
            fn = ast.parse(textwrap.dedent(inspect.getsource(py))).body[0]
            parsed.append(fn)
        return parsed[0]

    typings: dict = {}  # argument types -> Typed (Numba may ask for a typing again)

    def typing(typingctx, args):
        from .lower import emit
        key = (py.__module__, tuple(args))
        typed = typings.get(key)
        if typed is None:
            try:
                typed = infer(source_tree(), py.__globals__, tuple(args), typingctx)
            except Unsupported as e:
                unsupported[key] = str(e)
                raise
            except (OSError, TypeError) as e:  # no source file (a module compiled in memory)
                unsupported[key] = f"no source: {e}"
                raise Unsupported(unsupported[key]) from None
            typings[key] = typed

        def codegen(context, builder, sig, llargs):
            return emit(context, builder, typed, list(llargs))

        return typed.ret(*args), codegen

    n = len(inspect.signature(py).parameters)
    params = ", ".join(f"a{i}" for i in range(n))
    ns: dict = {}
    exec(f"def lean_body(typingctx{', ' if n else ''}{params}):\n"
         f"    return _typing(typingctx, ({params}{',' if n == 1 else ''}))\n",
         {"_typing": typing}, ns)
    fn = intrinsic(ns["lean_body"])
    # why the lean compiler declined these argument types (None: it did not)
    fn.declined = lambda argtys: unsupported.get((py.__module__, tuple(argtys)))
    return fn
