"""The exceptions that generated programs raise, for the runtime to catch.

Generated code imports them from here (this package imports nothing else of `script/`):
`ScriptRuntimeError` (`jitorch.jit.Error`, a failure the program reports with the user's line),
`RaiseInInterpreter` (the program cannot build the exact error: the runtime reruns the call in
the interpreter) and `ArgumentsOverlap` (written arguments share memory: runtime/alias.py runs
the call in place).
"""
from __future__ import annotations


class ScriptRuntimeError(RuntimeError):
    """`jitorch.jit.Error`: a failure inside a scripted program, naming the user's line."""


class RaiseInInterpreter(Exception):
    """Raised by a compiled program at a `raise` whose message it cannot build (a list, a
    repr): the runtime runs that call again in the interpreter, which raises the exact error.
    Only the failing call pays; the error path of a program that mutates its inputs may then
    see those writes twice (the error raised is the same)."""


class ArgumentsOverlap(RaiseInInterpreter):
    """Raised by a compiled program whose written arguments share memory (see module doc)."""
