"""Code generation, target-neutral: the Emitter (emitter.py), literals and casts of generated
code, the elementwise groups every target lowers (elementwise.py), the Target protocol and its
registry (target.py), the one lowering table (lowering.py).
Each target's generator, lowerings and kernels live in `script/targets/<name>/`."""


class NotLowered(Exception):
    """The graph (or one of its nodes) has no lowering; the runtime falls back to the
    interpreter and records this reason (visible in `jitorch.jit.stats()` and JITORCH_LOG)."""
