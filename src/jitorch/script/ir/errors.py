"""Errors of the scripting language: `ScriptError` (compile time) and `Error` (run time).

`ScriptError` is raised while compiling a function's source into the IR; its message names the
construct, then `file:line:col`, the user's source line and a caret under the construct, like
TorchScript's frontend errors. `Error` (the interpreter's `ScriptRuntimeError`) is raised when a
scripted program fails at run time (assert, raise, index errors) and names the user's line.
"""
from __future__ import annotations

from ..kernels.signals import ScriptRuntimeError as Error  # noqa: F401
from . import SourceLoc


class ScriptError(RuntimeError):
    """A construct the scripting language does not support, or a type/name error in it."""

    def __init__(self, msg: str, loc: SourceLoc | None = None, end_col: int | None = None):
        self.msg = msg
        self.loc = loc
        super().__init__(format_error(msg, loc, end_col))


def format_error(msg: str, loc: SourceLoc | None, end_col: int | None = None) -> str:
    if loc is None:
        return msg
    text = loc.text.rstrip("\n")
    width = 1
    if end_col is not None and end_col > loc.col:
        width = end_col - loc.col
    width = max(1, min(width, max(1, len(text) - loc.col)))
    caret = " " * loc.col + "^" + "~" * (width - 1)
    return f"{msg}\n  at {loc.file}:{loc.line}:{loc.col}\n    {text}\n    {caret}"
