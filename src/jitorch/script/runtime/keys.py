"""Specialisation keys: what a scripted call is specialised on, and how a key is described.

Per tensor argument its dtype, rank, requires_grad (when grad mode is on), C-contiguity and
device (`Tensor._device`, canonical per device: its type picks the target, codegen/target.py), never its sizes;
containers by their elements' keys; other values by type (bools and statics by value,
`ScriptFunction._key`). `_make_fast_key` unrolls the all-tensor case into one tuple expression (a
fast path that only finds entries already made); `_arg_type` is the IR type a key stands for.
Process-wide settings a program bakes in (the default dtype, deterministic mode, ...) are not in
the key: changing one forgets every specialisation (jitorch/_settings.py), so calls stay cheap.
"""
from __future__ import annotations

from ..._tensor import Tensor
from .. import ir
from .programs import _symbolic


def _arg_type(a, declared: ir.Type, rg: bool) -> ir.Type:
    if isinstance(a, Tensor):
        return ir.TensorType(a._dtype, (None,) * a._data.ndim, str(a._device),
                             requires_grad=rg or None)
    if isinstance(declared, ir.OptionalType) and a is None:
        return ir.NONE
    if isinstance(declared, (ir.IntType, ir.FloatType, ir.BoolType, ir.StrType)):
        return declared
    from ..frontend.trace import value_type
    t = value_type(a)
    if isinstance(t, (ir.ListType, ir.TupleType)):  # sizes of tensors in containers: symbolic
        t = _symbolic(t)
    return t


def _type_name(t: ir.Type) -> str:
    if isinstance(t, ir.TensorType):
        return "Tensor"
    return str(t)


def _describe_key_part(p) -> str:
    if isinstance(p, tuple) and p and p[0] == "T":
        return f"{getattr(p[1], 'name', p[1])} ndim={p[2]}" + (" requires_grad" if p[3] else "") \
            + ("" if p[4] else " strided") + ("" if p[5].type == "cpu" else f" device={p[5]}")
    if isinstance(p, tuple) and p and p[0] in ("S", "B"):
        return f"static={p[1]!r}"
    return str(getattr(p, "__name__", p))


def _make_fast_key(n: int):
    """`key(args, grad_on)` for n tensors, unrolled (about twice as fast as a loop): a flat
    tuple of (dtype, ndim, requires_grad, C-contiguous, device type) per tensor. Only used to
    find compiled entries already made; misses take the checked path (`_key`)."""
    if n == 0:
        return lambda args, grad_on: ()
    parts = ", ".join(f"a[{i}]._dtype, a[{i}]._data.ndim, grad_on and a[{i}]._requires_grad, "
                      f"a[{i}]._data.flags.c_contiguous, a[{i}]._device" for i in range(n))
    ns: dict = {}
    exec(f"def fast_key(a, grad_on):\n    return ({parts},)\n", ns)
    return ns["fast_key"]


def _other_key(a, grad_on):
    if isinstance(a, Tensor):
        return ("T", a._dtype, a._data.ndim, grad_on and a._requires_grad,
                a._data.flags.c_contiguous, a._device)
    if isinstance(a, (list, tuple)):
        return (type(a), tuple(_other_key(e, grad_on) for e in a))
    return type(a)


def _any_rg(a):
    if isinstance(a, Tensor):
        return a._requires_grad
    if isinstance(a, (list, tuple)):
        return any(_any_rg(e) for e in a)
    return False
