"""Code generators: IR -> source of one program (CPU: `cpu.py`, Numba njit(nogil=True))."""


class NotLowered(Exception):
    """The graph (or one of its nodes) has no lowering; the runtime falls back to the
    interpreter and records this reason (visible in `jitorch.jit.stats()` and JITORCH_LOG)."""


class RaiseInInterpreter(Exception):
    """Raised by a compiled program at a `raise` whose message it cannot build (a list, a
    repr): the runtime runs that call again in the interpreter, which raises the exact error.
    Only the failing call pays; the error path of a program that mutates its inputs may then
    see those writes twice (the error raised is the same)."""
