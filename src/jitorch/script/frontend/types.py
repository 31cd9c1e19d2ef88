"""Types of the scripting frontend: annotations -> `ir.Type`, unification, and type queries.

Annotations are Python objects (already evaluated in the function's scope): `Tensor` (jitorch's
or any class named Tensor, e.g. `torch.Tensor`), int, float, bool, str, None, `List[T]`/`list[T]`,
`Tuple[...]`, `Dict[K, V]`, `Optional[T]`/`Union[T, None]`, `Final[T]`, user classes. Tensor types
made by the frontend are `TensorType(None, None)`: dtype and rank are filled in per call by the
specialiser.
"""
from __future__ import annotations

import typing

from .. import ir


class AnnotationError(TypeError):
    pass


def tensor() -> ir.TensorType:
    return ir.TensorType(None, None)


_SCALARS = {int: ir.INT, float: ir.FLOAT, bool: ir.BOOL, str: ir.STR}


def from_annotation(obj) -> ir.Type:
    if obj is None or obj is type(None):
        return ir.NONE
    if obj in _SCALARS:
        return _SCALARS[obj]
    if isinstance(obj, type) and obj.__name__ == "Tensor":
        return tensor()
    if obj is typing.Any:
        return ir.ANY
    origin = typing.get_origin(obj)
    args = typing.get_args(obj)
    if origin in (list, typing.List):
        return ir.ListType(from_annotation(args[0]) if args else ir.ANY)
    if origin in (tuple, typing.Tuple):
        if len(args) == 2 and args[1] is Ellipsis:
            raise AnnotationError("variable-length Tuple[T, ...] is not supported; use List[T]")
        return ir.TupleType([from_annotation(a) for a in args])
    if origin in (dict, typing.Dict):
        return ir.DictType(from_annotation(args[0]), from_annotation(args[1]))
    if origin is typing.Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return ir.OptionalType(from_annotation(rest[0]))
        raise AnnotationError(f"Union types other than Optional are not supported: {obj}")
    if origin is typing.Final:
        return from_annotation(args[0]) if args else ir.ANY
    if obj is typing.Final:
        return ir.ANY
    if isinstance(obj, type) and getattr(obj, "_jitorch_script_class", False):
        return ir.ClassType(obj.__qualname__)
    from .classes import ensure_script_class  # a user class: compiled, as TorchScript does
    if ensure_script_class(obj):
        return ir.ClassType(obj.__qualname__)
    raise AnnotationError(f"unknown type annotation: {getattr(obj, '__name__', obj)!r}")


def base(t: ir.Type) -> ir.Type:
    """An Optional's element type (Optional values are usable as their element, the runtime
    specialises on whether the argument is None)."""
    return t.elem if isinstance(t, ir.OptionalType) else t


def is_tensor(t: ir.Type) -> bool:
    return isinstance(base(t), ir.TensorType)


def is_number(t: ir.Type) -> bool:
    return isinstance(base(t), (ir.IntType, ir.FloatType, ir.BoolType))


def unify(a: ir.Type, b: ir.Type) -> ir.Type | None:
    """The type of a value that is `a` on one path and `b` on another (None: incompatible)."""
    if a == b:
        return a
    if isinstance(a, ir.TensorType) and isinstance(b, ir.TensorType):
        return tensor()
    if isinstance(a, ir.NoneType):
        return b if isinstance(b, ir.OptionalType) else ir.OptionalType(b)
    if isinstance(b, ir.NoneType):
        return unify(b, a)
    if isinstance(a, ir.OptionalType) or isinstance(b, ir.OptionalType):
        u = unify(base(a), base(b))
        return None if u is None else ir.OptionalType(u)
    if isinstance(a, ir.AnyType) or isinstance(b, ir.AnyType):
        return ir.ANY
    if isinstance(a, ir.ListType) and isinstance(b, ir.ListType):
        if isinstance(a.elem, ir.AnyType):
            return b
        if isinstance(b.elem, ir.AnyType):
            return a
        u = unify(a.elem, b.elem)
        return None if u is None else ir.ListType(u)
    if isinstance(a, ir.TupleType) and isinstance(b, ir.TupleType) and \
            len(a.elems) == len(b.elems):
        us = [unify(x, y) for x, y in zip(a.elems, b.elems)]
        return None if any(u is None for u in us) else ir.TupleType(us)
    return None


def promote_scalar(a: ir.Type, b: ir.Type) -> ir.Type:
    """Python's arithmetic result type on numbers (bool + bool is int)."""
    a, b = base(a), base(b)
    if isinstance(a, ir.FloatType) or isinstance(b, ir.FloatType):
        return ir.FLOAT
    if isinstance(a, ir.AnyType) or isinstance(b, ir.AnyType):
        return ir.ANY
    return ir.INT


def of_python(x) -> ir.Type | None:
    """The IR type of a Python constant the frontend may embed (None: not embeddable)."""
    from ... import _dtype as dt
    if isinstance(x, bool):
        return ir.BOOL
    if isinstance(x, int):
        return ir.INT
    if isinstance(x, float):
        return ir.FLOAT
    if isinstance(x, str):
        return ir.STR
    if x is None:
        return ir.NONE
    if isinstance(x, dt.dtype):
        return ir.DTYPE
    if isinstance(x, tuple):
        ts = [of_python(e) for e in x]
        return None if any(t is None for t in ts) else ir.TupleType(ts)
    if isinstance(x, list):
        el = None
        for e in x:
            t = of_python(e)
            el = t if el is None else unify(el, t)
            if t is None or el is None:
                return None
        return ir.ListType(el or ir.ANY)
    from ..._tensor import Tensor
    if isinstance(x, Tensor):  # a global tensor is baked in, as tracing does
        return tensor()
    return None
