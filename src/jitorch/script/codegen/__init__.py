"""Code generators: IR -> source of one program (CPU: `cpu.py`, Numba njit(nogil=True))."""


class NotLowered(Exception):
    """The graph (or one of its nodes) has no lowering; the runtime falls back to the
    interpreter and records this reason (visible in `jitorch.jit.stats()` and JITORCH_LOG)."""


