"""Entry points of the compiler used by `jitorch.jit` (the public facade): script and trace.

`script(obj)` compiles a function (or a class, or a module) from its source via
`frontend/function.py`; `trace(fn, example_inputs)` records it via `frontend/trace.py`. Both return
a `runtime.ScriptFunction`, which specialises, compiles and caches per call signature
(`script_object` / `trace_object` build it from the frontend's result).
"""
from __future__ import annotations

import inspect

from .._tensor import Tensor
from .kernels import compile_gc
from .runtime.programs import _symbolic
from .runtime.functions import ScriptFunction


def script(obj=None, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    if obj is None:  # @script() with parentheses
        return lambda o: script(o)
    with compile_gc.raised():  # (the frontend's import and compile: kernels/compile_gc.py)
        from .frontend import function as frontend
        if _is_module(obj):  # nn.Module instances: script/runtime/module.py
            from .runtime.module import script_module
            return script_module(obj)
        return script_object(obj, frontend)


def _is_module(obj) -> bool:
    from ..nn import Module
    return isinstance(obj, Module)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          example_kwarg_inputs=None):
    if _is_module(func):
        from .runtime.module import trace_module
        return trace_module(func, example_inputs, check_trace=check_trace,
                            check_inputs=check_inputs, check_tolerance=check_tolerance)
    return trace_object(func, example_inputs, check_trace=check_trace,
                        check_inputs=check_inputs, check_tolerance=check_tolerance)


def script_object(obj, frontend):
    """`jitorch.jit.script(obj)`: a function via frontend.compile_function, a class via
    frontend.compile_class; an existing ScriptFunction is returned as is."""
    if isinstance(obj, ScriptFunction):
        return obj
    if inspect.isclass(obj):
        return frontend.compile_class(obj)
    if not callable(obj):
        raise TypeError(f"jitorch.jit.script: expected a function, class or module, got "
                        f"{type(obj).__name__}")
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        compile_module = getattr(frontend, "compile_module", None)
        if compile_module is None:
            raise NotImplementedError(
                f"jitorch.jit.script: scripting a {type(obj).__name__} instance is not "
                "supported yet; script its forward function or use jitorch.jit.trace")
        return compile_module(obj)
    res = frontend.compile_function(obj)
    sf = ScriptFunction(res.graph, obj, static_args=getattr(res, "static_args", ()),
                        defaults=getattr(res, "defaults", None),
                        signature=getattr(res, "signature", None), kind="script",
                        tuple_out=bool(getattr(res, "returns_tuple", False)))
    sf.python_ops = tuple(getattr(res, "python_ops", ()))
    return sf


def trace_object(func, example_inputs, check_trace: bool = True, check_inputs=None,
                 check_tolerance: float = 1e-5):
    """`jitorch.jit.trace(func, example_inputs)`: record once, return a ScriptFunction whose
    input sizes are symbolic (one specialisation serves every size)."""
    from .frontend import trace as _trace
    if isinstance(example_inputs, Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs or ())
    target = func
    if not (inspect.isfunction(func) or inspect.ismethod(func)) and hasattr(func, "forward"):
        target = func.forward
    name = getattr(func, "__name__", None) or type(func).__name__
    graph, out = _trace.trace_graph(target, example_inputs, name=name)
    for v in graph.inputs:
        v.type = _symbolic(v.type)
    info = getattr(graph, "trace_info", None)
    if info is not None and not (info.simple and (isinstance(out, Tensor) or (
            isinstance(out, tuple) and all(isinstance(o, Tensor) for o in out)))):
        # nested/dict/static arguments or results: map calls onto the graph's tensor leaves
        sf = StructuredTrace(ScriptFunction(graph, func, name=name, kind="trace",
                                            tuple_out=True), info)
    else:
        sf = ScriptFunction(graph, func, name=name, kind="trace",
                            tuple_out=isinstance(out, tuple))
    if check_trace:  # PyTorch's default: trace again on the check inputs and compare
        from .frontend.trace_check import check_trace as _check
        _check(graph, lambda a: _trace.trace_graph(target, a, name=name),
               lambda a: sf(*a), check_inputs or [example_inputs], check_tolerance)
    return sf


class StructuredTrace:
    """A traced function whose arguments or results are not flat tensors: flattens the call's
    arguments to the graph's tensor inputs (checking static values) and rebuilds the result."""

    def __init__(self, fn: "ScriptFunction", info):
        self._fn, self._info = fn, info

    def __call__(self, *args):
        outs = self._fn(*self._info.flatten_args(args))
        return self._info.unflatten_outputs(outs)

    def __getattr__(self, name):  # graph, code, graph_for, ...
        return getattr(self._fn, name)


