"""The Emitter: what every code generator writes a program into, whatever its target.

Owns `Emitter` (the lines of the function being generated, the map from IR values to the Python
names or compile-time constants that hold them, the helpers, exception classes and kernels the
module needs), and the typed literals of generated code (`np_type`, `typed_literal`). A target
(`targets/<name>/`) creates one per program with itself as `target`; its lowerings read the
target's capabilities through it (`em.capabilities`: which dtypes its arrays may have). Nothing
here knows how a target runs the program: generated source is Python (Numba's dialect), raises
carry PyTorch's exception types and a message formatted outside compiled code.
"""
from __future__ import annotations

from ... import _dtype as dt
from .. import ir
from . import NotLowered, literal


class Emitter:
    """Accumulates the entry function's lines; maps IR values to Python names or constants."""

    def __init__(self, target):
        self.target = target  # the Target whose program this is (codegen/target.py)
        self.capabilities = target.capabilities
        self.lines: list = []
        self.globals: list = []
        self.indent = 1
        self.names: dict = {}   # value uid -> expression holding it at run time
        self.consts: dict = {}  # value uid -> Python value known at compile time
        self.lists: dict = {}   # value uid -> [values] of a ListConstruct of runtime values
        self.tuples: dict = {}  # value uid -> [values] of a TupleConstruct
        self.shapes: dict = {}  # value uid -> (array expression, rank) of a `x.shape` list
        self.chunks: dict = {}  # value uid -> (array expression, dim, chunks) of a chunk list
        self.int_arrays: set = set()  # uids of List[int] arguments held as one int64 array
        self.helpers: set = set()
        self.exceptions: set = set()
        self.scripted_raises: set = set()  # exception names of prim::Raise nodes
        self.writes_arguments = False  # the program writes list arguments' arrays in place
        self.kernels: dict = {}  # kernel module name -> source (targets/cpu/kernel.py)
        self.outline = False  # compute nodes become kernels (set by generate)
        # expression -> the name holding it, for `named`; None: every call names it anew
        self.top_names: dict | None = None
        self._n = 0

    def fresh(self, prefix: str = "v") -> str:
        self._n += 1
        return literal.Ident(f"{prefix}{self._n}")

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def named(self, prefix: str, expr: str) -> str:
        """A fresh name `prefix<n>` assigned `expr`, or, where `top_names` is a dict, the name
        an earlier call already assigned the same expression at the function's top level.
        Why: the shape code of a fused kernel (broadcast sizes, 0/1 multipliers) names the same
        expressions again for each output (a layer norm's backward kernel emitted 40 such
        lines twice), and Numba's compile time follows the number of lines. Only kernel
        emitters (targets/cpu/kernel.py) enable it: their names are single-assignment (their
        inputs are parameters, never rebound, and every local is fresh), so a top-level
        assignment holds everywhere after it; an entry's loops rebind values."""
        top = self.top_names is not None and self.indent == 1
        if top and expr in self.top_names:
            return self.top_names[expr]
        nm = self.fresh(prefix)
        self.emit(f"{nm} = {expr}")
        if top:
            self.top_names[expr] = nm
        return nm

    def run_time(self, expr: str) -> str:
        """A compile-time scalar's literal `expr` where the code only computes with it (an
        offset, a length): an entry writes the literal; a kernel (targets/cpu/kernel.py) takes
        it as a parameter instead, so that such a value never makes a kernel's source, and
        so its name, model-specific (narrow's start and length are multiples of a model's
        width: a Transformer's in-projection narrows at 0, 64, 128 for d_model 64)."""
        return expr

    def is_const(self, v: ir.Value) -> bool:
        return v.uid in self.consts

    def const(self, v: ir.Value):
        if v.uid not in self.consts:
            raise NotLowered(f"value {v} must be a constant")
        return self.consts[v.uid]

    def name(self, v: ir.Value) -> str:
        """A run-time expression for `v` (scalar constants become literals)."""
        if v.uid in self.names:
            return self.names[v.uid]
        if v.uid in self.consts:
            c = self.consts[v.uid]
            if isinstance(c, (bool, int, float)):
                return literal.number(c)
            raise NotLowered(f"constant of type {type(c).__name__} used at run time")
        if v.uid in self.tuples:
            return "(" + "".join(self.name(x) + ", " for x in self.tuples[v.uid]) + ")"
        raise NotLowered(f"value {v} has no lowering")

    def bind(self, v: ir.Value, expr: str) -> None:
        self.names[v.uid] = expr

    def tensor(self, v: ir.Value, complex_ok: bool = False) -> ir.TensorType:
        """`v`'s type; complex dtypes only for lowerings that handle them (`complex_ok`)."""
        t = v.type
        if not isinstance(t, ir.TensorType) or t.dtype is None or t.ndim is None:
            raise NotLowered(f"value {v}: dtype or rank unknown")
        caps = self.capabilities
        if t.dtype not in caps.dtypes and not (complex_ok and t.dtype in caps.complex_dtypes):
            raise NotLowered(f"dtype {t.dtype} is not lowered on {self.target.name} yet")
        return t

    def global_line(self, line: str) -> None:
        """Add `line` (an import, a helper's binding) to the generated module's head, once."""
        if line not in self.globals:
            self.globals.append(line)

    def import_name(self, module: str, name: str) -> str:
        """`name`, imported from `module` into the generated module once."""
        self.global_line(f"from {module} import {name}")
        return name

    def raise_in_interpreter(self) -> None:
        """Emit a hand-over of this call to the interpreter (kernels.signals.RaiseInInterpreter):
        for what the program cannot do itself, on a path that is rare."""
        self.global_line("from jitorch.script.kernels.signals import RaiseInInterpreter")
        self.emit("raise RaiseInInterpreter()")

    def raise_(self, exc: str, *parts) -> None:
        """Emit a raise of PyTorch's exception type for a check whose message mixes literal
        strings and run-time ints (1-tuples of expressions). The raise is static: the run-time
        ints are written as `?`. A program's error never reaches the user as it is raised: the
        runtime reruns the failed call in the interpreter, which raises eager's message at the
        user's line (runtime/entry.py `_failed`), and a raise with run-time arguments costs
        Numba about 0.1 s of compile time per site (a fused kernel has one per broadcast
        dimension: bench/compile_time.py)."""
        self.exceptions.add(literal.exception(exc))
        self.emit(f"raise _{exc}({literal.text(static_message(parts))})")


def static_message(parts) -> str:
    """A raise's message from literal strings and run-time values (1-tuples), the values
    written as `?` (see `Emitter.raise_`)."""
    return "".join(p if isinstance(p, str) else "?" for p in parts)


def exception_classes(em: Emitter) -> list:
    """The import of the exception classes `em`'s raises use, for any target's generated module:
    kernels/signals.py's classes, shared by every program and tier (`raise_`: PyTorch's type,
    its message formatted outside compiled code; `prim::Raise`: the scripted code's own raise),
    so the class a program raises is the one the interpreter raises (the runtime reruns a failed
    call in the interpreter for the user's line)."""
    names = [f"{exc} as _{exc}" for exc in sorted(em.exceptions)] + \
        [f"{exc} as _Script{exc}" for exc in sorted(em.scripted_raises)]
    return [f"from jitorch.script.kernels.signals import {', '.join(names)}"] if names else []


def np_type(d: dt.dtype) -> str:
    return literal.dtype(d)


def typed_literal(value, d: dt.dtype) -> str:
    """`value` as a literal of dtype `d` (PyTorch casts a Python scalar to the compute dtype)."""
    literal.number(value)  # a number, nothing else (float("1e9") would accept a str)
    if d is dt.bool:
        return literal.boolean(bool(value))
    if d.category in (dt.FLOAT, dt.COMPLEX):  # (a real value: complex ones are refused)
        return f"{np_type(d)}({literal.floating(float(value))})"
    return f"{np_type(d)}({literal.integer(int(value))})"
