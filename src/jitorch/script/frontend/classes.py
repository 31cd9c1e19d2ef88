"""User classes decorated with `@jitorch.jit.script` (TorchScript's script classes).

Owns `compile_class(cls)`: attribute types come from `self.<name> = ...` in `__init__` (the
annotation when `self.x: T = ...`, else the type of the value: parameters' annotations,
literals; Tensor otherwise). Methods compile lazily to graphs whose first input is the instance
(`ir.ClassType`); attribute reads are `prim::GetAttr`. Instances are ordinary Python objects,
created in Python (constructing one inside scripted code is a `prim::PythonOp`).
"""
from __future__ import annotations

import ast
import inspect
import textwrap

from . import types as ft
from .. import ir
from ..ir.errors import ScriptError

_classes: dict = {}


class ClassInfo:
    def __init__(self, cls):
        self.cls = cls
        self.name = cls.__qualname__
        self.attr_types: dict = {}
        self.methods: dict = {}


def class_info(name: str):
    return _classes.get(name)


_NOT_USER = ("builtins", "typing", "collections", "numpy", "jitorch", "torch", "math", "enum")


def ensure_script_class(obj) -> bool:
    """A user class that scripted code uses (calls or names in an annotation) is compiled as
    a script class, as TorchScript compiles classes recursively; True when `obj` is one now."""
    if not isinstance(obj, type):
        return False
    if getattr(obj, "_jitorch_script_class", False):
        return True
    mod = getattr(obj, "__module__", "") or ""
    if mod.split(".")[0] in _NOT_USER or issubclass(obj, BaseException) or \
            hasattr(obj, "_fields") or not inspect.isfunction(obj.__dict__.get("__init__")):
        return False
    from ... import nn
    if issubclass(obj, nn.Module):
        return False
    compile_class(obj)
    return True


def compile_class(cls):
    info = ClassInfo(cls)
    cls._jitorch_script_class = True
    _classes[info.name] = info
    init = cls.__dict__.get("__init__")
    if init is not None:
        _infer_attrs(info, init)
    for k, v in list(cls.__dict__.items()):  # compile methods now: errors surface at script()
        if inspect.isfunction(v) and k != "__init__" and not getattr(v, "_jitorch_ignore",
                                                                      False):
            compile_method(info, k)
    cls._jitorch_class_info = info
    return cls


def compile_method(info: ClassInfo, name: str):
    res = info.methods.get(name)
    if res is None:
        from .function import compile_function
        fn = info.cls.__dict__.get(name) or getattr(info.cls, name)
        res = compile_function(fn, name=f"{info.name}.{name}",
                               self_type=ir.ClassType(info.name))
        info.methods[name] = res
    return res


def _infer_attrs(info: ClassInfo, init) -> None:
    from .function import Scope
    src = textwrap.dedent(inspect.getsource(init))
    fdef = ast.parse(src).body[0]
    scope = Scope(init)
    params = {}
    for a in fdef.args.args[1:]:
        params[a.arg] = a.annotation
    for node in ast.walk(fdef):
        target, ann, value = None, None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign):
            target, ann, value = node.target, node.annotation, node.value
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self"):
            continue
        try:
            if ann is not None:
                ty = ft.from_annotation(scope.eval(ann))
            elif isinstance(value, ast.Name) and value.id in params:
                p = params[value.id]
                ty = ft.tensor() if p is None else ft.from_annotation(scope.eval(p))
            elif isinstance(value, ast.Constant):
                ty = ft.of_python(value.value) or ir.ANY
            else:
                ty = ft.tensor()
        except Exception as e:
            raise ScriptError(f"cannot infer the type of attribute '{target.attr}' of "
                              f"{info.name}: {e}") from None
        info.attr_types.setdefault(target.attr, ty)
