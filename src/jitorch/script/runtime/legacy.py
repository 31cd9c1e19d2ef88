"""`jitorch.jit.ScriptModule` as a base class and `@jitorch.jit.script_method`: PyTorch's legacy
TorchScript API (still in its tutorials), and `.save(f)` of every scripted module.

    class Cell(jitorch.jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(4, 4)

        @jitorch.jit.script_method
        def forward(self, x, h):
            return jitorch.tanh(self.linear(x) + h)

A subclass is an ordinary module whose `@script_method`s run compiled: each is replaced in the
class by a `_ScriptMethodSlot`, which on an instance answers the ScriptMethod of the instance's
scripted view (`runtime/module.py`'s module wrapper around the instance itself, made on first
use, i.e. after `__init__` has set the attributes the methods read). The methods compile by the
module frontend like any `jit.script(module)` (`self` resolved at compile time, guards on its
attributes); other methods stay Python. `jit.script(m)`, `jit.trace(m)` and `jit.load` results
are instances of this class too (`isinstance(sm, jitorch.jit.ScriptModule)`, as in PyTorch).
"""
from __future__ import annotations


def script_method(fn):
    """`@jitorch.jit.script_method`: compile this method of a `jit.ScriptModule` subclass."""
    if not callable(fn):
        raise TypeError(f"script_method expects a function, got {type(fn).__name__}")
    fn._jitorch_script_method = True
    fn._jitorch_export = True  # compiled with forward (runtime/module.py `_exported`)
    return fn


class _ScriptMethodSlot:
    """A `@script_method` in its class: the function on the class (`__func__`, which the module
    frontend compiles), the instance's compiled ScriptMethod on an instance."""

    def __init__(self, fn):
        self.__func__ = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, inst, owner=None):
        if inst is None:
            return self.__func__
        if "_orig" in inst.__dict__:  # a scripted wrapper: its own methods
            return inst.__dict__["_methods"][self.name]
        return inst._jit_scripted()._methods[self.name]


_base = None


def script_module_base():
    """The public `jitorch.jit.ScriptModule` (made on first use: nn imports the compiler)."""
    global _base
    if _base is not None:
        return _base
    from ... import nn

    class ScriptModule(nn.Module):
        """`jitorch.jit.ScriptModule`: the class of scripted modules, and a base class whose
        `@jitorch.jit.script_method` methods are compiled (see the module docstring)."""

        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            for k, v in list(cls.__dict__.items()):
                if callable(v) and getattr(v, "_jitorch_script_method", False):
                    slot = _ScriptMethodSlot(v)
                    slot.name = k
                    setattr(cls, k, slot)

        def _jit_scripted(self):
            """The scripted view of a subclass instance (made once, on first use)."""
            d = self.__dict__
            sm = d.get("_jit_scripted_view")
            if sm is None:
                from .module import script_module_view
                sm = d["_jit_scripted_view"] = script_module_view(self)
            return sm

        def _scripted(self):
            return self if "_orig" in self.__dict__ else self._jit_scripted()

        def save(self, f, _extra_files=None):
            """`ScriptModule.save(f)`: `jitorch.jit.save(self, f)` (a path or a binary file)."""
            from . import serialize
            serialize.save(self._scripted(), f, _extra_files)

        @property
        def graph(self):
            return self._scripted()._methods["forward"].graph

        @property
        def code(self):
            return self._scripted()._methods["forward"].code

    _base = ScriptModule
    return _base
