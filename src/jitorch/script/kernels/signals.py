"""The exceptions scripted code raises, in every tier, and the signals programs give the runtime.

Generated code imports them from here (this package imports nothing else of `script/`).

The rule (docs/compilation.md, "Errors"): a scripted call that fails raises an instance of the
exception class eager code raises (PyTorch's: IndexError, RuntimeError, ValueError, ...) that
is also a `ScriptRuntimeError` (`jitorch.jit.Error`), with the message eager's op gives,
followed by the user's file:line (`where`; a line in jitorch's own sources, `in_library`, is
replaced by the user's call that reached it). So `except IndexError` and
`except jitorch.jit.Error` both catch it, interpreted or compiled. The classes are one per
builtin exception, made on first use by `script_class` and importable from this module under
the builtin's name (`signals.IndexError`: pickle finds them, and generated programs raise
them: `from jitorch.script.kernels.signals import IndexError as _IndexError`); their args
may be `(format, numbers...)`, formatted by `__str__` (a compiled program cannot build strings
cheaply).

The interpreter (ir/interpreter.py) raises them itself (`located`). A compiled program does not
know the user's line: whatever it raises (one of these classes from a check, or an exception of
NumPy or Numba inside it) the boundary turns into `ProgramFailed` (`program_failed`, called by
runtime/entry.py where programs are called), a `RaiseInInterpreter`: the runtime runs that
call again in the interpreter, which raises the located error, so every tier raises the same.

`RaiseInInterpreter` (the program cannot build the exact error or result: the runtime reruns
the call in the interpreter) and `ArgumentsOverlap` (written arguments share memory:
runtime/alias.py runs the call in place) are signals, never seen by the user.
"""
from __future__ import annotations

import builtins
import os


class ScriptRuntimeError(RuntimeError):
    """`jitorch.jit.Error`: a failure inside a scripted program, naming the user's line."""


class RaiseInInterpreter(Exception):
    """Raised by a compiled program at a `raise` whose message it cannot build (a list, a
    repr): the runtime runs that call again in the interpreter, which raises the exact error.
    Only the failing call pays; the error path of a program that mutates its inputs may then
    see those writes twice (the error raised is the same)."""


class ArgumentsOverlap(RaiseInInterpreter):
    """Raised by a compiled program whose written arguments share memory (see module doc)."""


class ProgramFailed(RaiseInInterpreter):
    """A compiled program raised `error` (see module doc): the interpreter reruns the call."""

    def __init__(self, error: BaseException):
        super().__init__(error)
        self.error = error


def program_failed(e: Exception) -> Exception:
    """What the boundary raises for an exception `e` out of a compiled program: `e` itself
    when it is a signal for the runtime or a Numba compile error (the program could not be
    built: runtime/programs.py interprets it instead), else `ProgramFailed(e)`."""
    if isinstance(e, RaiseInInterpreter):
        return e
    from numba.core.errors import NumbaError  # (imported already: a program ran)
    return e if isinstance(e, NumbaError) else ProgramFailed(e)


def _str(self) -> str:
    """args = (message,) or (format, numbers...): a program passes the numbers unformatted."""
    if len(self.args) > 1 and isinstance(self.args[0], str):
        return self.args[0] % self.args[1:]
    return str(self.args[0]) if self.args else ""


def _is_builtin(cls) -> bool:
    return getattr(builtins, cls.__name__, None) is cls


_CLASSES: dict = {}  # base class -> its scripted class


def script_class(base: type) -> type:
    """The class scripted code raises for eager's `base`: `base` and `ScriptRuntimeError` at once
    (`ScriptRuntimeError` alone where their layouts conflict, as OSError's). One per base; a
    builtin base's is importable from this module under the builtin's name."""
    if issubclass(base, ScriptRuntimeError):
        return base
    cls = _CLASSES.get(base)
    if cls is None:
        ns = {"__str__": _str, "__doc__": f"{base.__name__} raised by scripted code (also a "
              "jitorch.jit.Error; args: a message, or a format and its numbers)."}
        if _is_builtin(base):  # pickle and generated programs find it here by its name
            ns.update(__module__=__name__, __qualname__=base.__name__)
        else:
            ns["__module__"] = base.__module__
        try:
            cls = type(base.__name__, (base, ScriptRuntimeError), ns)
        except TypeError:  # incompatible layouts
            cls = type(base.__name__, (ScriptRuntimeError,), ns)
        cls = _CLASSES.setdefault(base, cls)  # (atomic: threads racing here share one)
    return cls


def __getattr__(name: str):
    """`signals.IndexError` etc.: the scripted class of a builtin exception (script_class)."""
    base = getattr(builtins, name, None)
    if isinstance(base, type) and issubclass(base, Exception) and \
            not issubclass(base, ScriptRuntimeError):
        return script_class(base)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LIBRARY = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def in_library(loc) -> bool:
    """`loc` lies in jitorch's own sources (a library composite, an nn module's forward): an
    error there is reported at the user's call that reached it."""
    return loc is not None and os.path.abspath(str(loc.file)).startswith(_LIBRARY + os.sep)


def where(loc) -> str:
    """The user's line, as appended to a scripted error's message (`loc`: an ir.SourceLoc)."""
    if loc is None:
        return ""
    text = f": {loc.text.strip()}" if loc.text else ""
    return f"\n  in scripted code at {loc}{text}"


def located(e, loc, message: str | None = None) -> Exception:
    """`e` (an exception, or an exception class when `message` is given) as scripted code
    raises it: its `script_class`, its message (or `message`) followed by the user's line
    `loc`. The result keeps `script_message` (without the line) and `script_loc`, so that an
    error inside a library composite can be located again at the user's call
    (`located(e, call_loc)`)."""
    base = e if isinstance(e, type) else type(e)
    if message is None:
        message = getattr(e, "script_message", None)
    if message is None:
        message = e.args[0] if len(e.args) == 1 and isinstance(e.args[0], str) else str(e)
    cls = script_class(base)
    try:
        out = cls(message + where(loc))
    except Exception:  # noqa: BLE001 - a class whose constructor wants other arguments
        out = ScriptRuntimeError(f"{base.__name__}: {message}{where(loc)}")
    out.script_message, out.script_loc = message, loc
    return out
