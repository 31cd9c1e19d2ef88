"""Entry points of the compiler used by `jitorch.jit` (the public facade): script and trace.

`script(obj)` compiles a function (or a class, or a module) from its source via
`frontend.py`; `trace(fn, example_inputs)` records it via `trace.py`. Both return a
`runtime.ScriptFunction`, which specialises, compiles and caches per call signature.
"""
from __future__ import annotations


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    if obj is None:  # @script() with parentheses
        return lambda o: script(o)
    from . import frontend, runtime
    if _is_module(obj):  # nn.Module instances: script/module.py
        from .module import script_module
        return script_module(obj)
    return runtime.script_object(obj, frontend)


def _is_module(obj) -> bool:
    from ..nn import Module
    return isinstance(obj, Module)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          example_kwarg_inputs=None):
    from . import runtime
    if _is_module(func):
        from .module import trace_module
        return trace_module(func, example_inputs, check_trace=check_trace)
    return runtime.trace_object(func, example_inputs, check_trace=check_trace)
