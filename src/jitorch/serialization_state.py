"""The rule for whole objects in `jitorch.save` files (docs/security.md, "Whole objects"): which
classes an object node may name, what shape its state may have, and what the instance may hold
once the state is applied.

`jitorch.save` checks what it writes and `jitorch.load` checks what it built with these same
functions, so every file save writes loads, and a file that breaks the rule is refused.

The rule is stated on the *effective* state: the instance `__dict__` after `__setstate__` (or the
loader's `__dict__.update`) ran, not the JSON that carried it. `dict.update`, which is what
`nn.Module.__setstate__` and `Optimizer.__setstate__` do, takes a dict but also a list or tuple of
pairs (duplicated names: the last wins), and a class's own `__setstate__` may pass its argument
on to them; a check of the JSON shape misses some of these, a check of the result cannot.
  1. `class_problem`: the class is one jitorch.save writes as an object node (a Python class, no
     pickling protocol of its own, not a type the format has its own node for).
  2. `shape_problem`: the state is a dict, unless the class defines its own `__getstate__` (so
     jitorch.save may have written something else) and has a `__setstate__` to take it.
  3. `effective_problem`, on the resulting `__dict__`: names are `str`, never special
     (`__deepcopy__`: Python looks those up on the instance) and never a method of the class
     (an instance `forward` would replace `Module.forward`); the attributes that jitorch's own
     machinery reads and calls have the types it made them with: an `nn.Module`'s hook tables
     (and an optimizer's) are empty, its `_modules` hold modules, `_parameters` and `_buffers`
     tensors, `training` is a bool.
A value the class's own code calls (`self.act = F.relu`, then `self.act(x)` in `forward`) is data
like any other: it can only be a function on the loader's allow-list (docs/security.md).
"""
from __future__ import annotations

import types
from collections import OrderedDict

from ._device import device
from ._dtype import dtype
from ._tensor import Tensor

__all__ = ["MODULE_HOOK_TABLES", "own_getstate", "class_problem", "shape_problem",
           "effective_problem"]

MODULE_HOOK_TABLES = ("_backward_pre_hooks", "_backward_hooks", "_forward_hooks",
                      "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                      "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                      "_state_dict_hooks", "_state_dict_pre_hooks",
                      "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")
OPTIMIZER_HOOK_TABLES = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks")
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class written in Python
# class attributes an instance attribute of the same name would replace as a method
_METHODS = (types.FunctionType, staticmethod, classmethod, types.BuiltinFunctionType,
            types.MethodType, types.MethodDescriptorType, types.WrapperDescriptorType)


def own_getstate(cls) -> bool:
    """Whether `cls` defines `__getstate__` (jitorch.save then writes what it returns)."""
    return getattr(cls, "__getstate__", None) is not getattr(object, "__getstate__", None)


def class_problem(cls: type) -> str | None:
    """Why instances of `cls` are never object nodes in a jitorch file (None when they may be)."""
    if issubclass(cls, (Tensor, dtype, device)):
        return "tensors, dtypes and devices are saved as nodes of their own"
    if cls.__module__.startswith("jitorch.script"):
        return "a scripted module is saved with jitorch.jit.save"
    if not all(b is object or b.__flags__ & _HEAPTYPE for b in cls.__mro__):
        return "it is a built-in type (or derives from one) that is not plain data"
    for name in ("__reduce_ex__", "__reduce__"):
        if getattr(cls, name) is not getattr(object, name):
            return (f"its class defines {name} (custom pickling) and jitorch does not run "
                    "pickle protocols")
    return None


def shape_problem(cls: type, state) -> str | None:
    """Before the state is applied: a dict, or the argument of the class's own protocol."""
    # (a decoded dict is a dict, OrderedDict or defaultdict: class_problem refuses objects of
    # other dict subclasses, which could bring their own `keys`)
    if isinstance(state, dict) or (own_getstate(cls) and hasattr(cls, "__setstate__")):
        return None
    return (f"its state is a {type(state).__name__}, not a dict of attribute names (jitorch.save "
            "writes the instance __dict__ unless the class defines its own __getstate__ and has "
            "a __setstate__)")


def _class_attr(cls: type, name: str):
    for k in cls.__mro__:
        if name in vars(k):
            return vars(k)[name]
    return None


def _names_to(kind):
    def check(v):
        return type(v) in (dict, OrderedDict) and all(
            type(k) is str and (x is None or isinstance(x, kind())) for k, x in v.items())
    return check


def _module():
    from .nn.modules.module import Module
    return Module


def _optimizer():
    from .optim.optimizer import Optimizer
    return Optimizer


def _empty_table(v) -> bool:
    return type(v) is OrderedDict and not v


# per base class: attribute -> (check, what a failing value is); jitorch's own machinery reads
# these and calls what they hold (hooks on every call, `_modules` from `Sequential.forward`)
_HOOKS = (_empty_table, "holds hooks ({name}): hooks are code, jitorch.save never writes them")
_TENSORS = (_names_to(lambda: Tensor), "{name} is not a dict of names to tensors or None")
_RULES = (
    (_module, {**{n: _HOOKS for n in MODULE_HOOK_TABLES},
               "training": (lambda v: type(v) is bool, "{name} is not a bool"),
               "_parameters": _TENSORS, "_buffers": _TENSORS,
               "_modules": (_names_to(_module),
                            "{name} is not a dict of names to modules or None"),
               "_non_persistent_buffers_set": (
                   lambda v: type(v) is set and all(type(n) is str for n in v),
                   "{name} is not a set of names"),
               "_is_full_backward_hook": (lambda v: v is None or type(v) is bool,
                                          "{name} is not None or a bool")}),
    (_optimizer, {n: _HOOKS for n in OPTIMIZER_HOOK_TABLES}),
)


def effective_problem(cls: type, attrs: dict) -> str | None:
    """What is wrong with `attrs`, the `__dict__` of an instance of `cls` (as loaded, or as it
    will be loaded), or None."""
    for name in attrs:
        if type(name) is not str:
            return f"attribute name {name!r} is a {type(name).__name__}, not a str"
        if name.startswith("__") and name.endswith("__"):
            return (f"it sets {name}, a special name (Python looks some up on the instance: "
                    "copy.deepcopy calls an instance's __deepcopy__)")
        if isinstance(_class_attr(cls, name), _METHODS):
            return (f"it sets {name}, which would replace the method {cls.__qualname__}.{name} "
                    "(an instance attribute is found before the class's)")
    for base, rules in _RULES:
        if issubclass(cls, base()):
            for name, (ok, wrong) in rules.items():
                if name in attrs and not ok(attrs[name]):
                    return "its state " + wrong.format(name=name)
    return None
