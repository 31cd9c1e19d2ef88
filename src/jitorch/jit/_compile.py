"""`jitorch.compile`: PyTorch 2.x's entry point, over the script frontend.

`compile(model_or_fn, *, fullgraph, dynamic, backend, mode, options, disable)` accepts
PyTorch's arguments (checked with PyTorch's errors) and works as a decorator with and without
arguments. Nothing compiles until the first call; then the function or module is scripted
(`jit.script`), or, where scripting is impossible, traced with that call's inputs (one trace
per input signature: shapes, dtypes, devices, requires_grad). When neither works the call runs
eagerly with a warning naming the reason, or, under `fullgraph=True`, raises it. A module is
wrapped in an `OptimizedModule` that holds it as `_orig_mod` (PyTorch's layout: its
parameters, state dict (`_orig_mod.`-prefixed keys), `train()`/`eval()` are the original's);
each call hands the original's training flags to the scripted copy. `backend="eager"` and
`disable=True` run eagerly; `dynamic`, `mode` and `options` select nothing here: the script
runtime already specialises per input signature.
"""
from __future__ import annotations

import functools
import warnings

from .._tensor import Tensor
from ..nn.modules.module import Module

__all__ = ["compile", "OptimizedModule"]

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# the backends PyTorch ships (torch._dynamo.list_backends() plus the debugging ones): each
# compiles through the script frontend here, except "eager"
_BACKENDS = ("inductor", "cudagraphs", "onnxrt", "openxla", "tvm", "eager", "aot_eager",
             "aot_eager_decomp_partition")


class _Unsupported(Exception):
    """Why a callable cannot be compiled (the reason the fallback warning names)."""


def _signature(args) -> tuple:
    return tuple((tuple(a.shape), a.dtype, a.device, a.requires_grad) if isinstance(a, Tensor)
                 else ("const", repr(a)) for a in args)


class _Compiler:
    """Turns one callable into its compiled form at the first call, with the fallbacks."""

    def __init__(self, fn, fullgraph: bool, eager: bool) -> None:
        self.fn = fn
        self.fullgraph = fullgraph
        self.eager = eager
        self.scripted = None
        self.traces: dict = {}
        self.reason: str | None = None  # set once the callable is known to run eagerly

    def _name(self) -> str:
        fn = self.fn
        return getattr(fn, "__qualname__", None) or type(fn).__name__

    def _give_up(self, reason: str):
        if self.fullgraph:
            raise RuntimeError(f"jitorch.compile(fullgraph=True): cannot compile "
                               f"{self._name()}: {reason}")
        warnings.warn(f"jitorch.compile: {self._name()} runs eagerly: {reason}", stacklevel=4)
        self.reason = reason

    def _trace(self, args, kwargs, why_not_script: str):
        if kwargs:
            raise _Unsupported(f"{why_not_script}; tracing instead needs positional tensor "
                               f"inputs, got keyword arguments {sorted(kwargs)}")
        if not args or not all(isinstance(a, Tensor) for a in args):
            raise _Unsupported(f"{why_not_script}; tracing instead needs tensor inputs")
        from ..script.api import trace
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # TracerWarnings: the trace is per signature
                return trace(self.fn, args, check_trace=False)
        except Exception as e:
            raise _Unsupported(f"{why_not_script}; tracing failed: {type(e).__name__}: "
                               f"{e}") from None

    def prepare(self) -> None:
        """Script the callable, once (a failure is remembered for the trace's fallback)."""
        if self.scripted is None:
            from ..script.api import script
            try:
                self.scripted = script(self.fn)
            except Exception as e:
                self.scripted = False
                self.script_error = f"scripting failed: {type(e).__name__}: {e}"

    def __call__(self, *args, _trace_key=(), **kwargs):
        if self.eager or self.reason is not None:
            return self.fn(*args, **kwargs)
        self.prepare()
        if self.scripted:
            return self.scripted(*args, **kwargs)
        key = (_signature(args), _trace_key)
        traced = self.traces.get(key)
        if traced is None:
            try:
                traced = self.traces[key] = self._trace(args, kwargs, self.script_error)
            except _Unsupported as e:
                self._give_up(str(e))
                return self.fn(*args, **kwargs)
        return traced(*args)


def _check_arguments(backend, mode, options) -> bool:
    """PyTorch's argument checks; True when the backend runs eagerly."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if options is not None and not isinstance(options, dict):
        raise RuntimeError(f"options must be a dict, got {type(options).__name__}")
    if isinstance(backend, str):
        if backend not in _BACKENDS:
            raise RuntimeError(f"Invalid backend: {backend!r}, see "
                               "torch._dynamo.list_backends() for available backends.")
        return backend == "eager"
    if not callable(backend):
        raise RuntimeError(f"Invalid backend: {backend!r}, see "
                           "torch._dynamo.list_backends() for available backends.")
    return False  # a custom backend callable: jitorch compiles with its own compiler


class OptimizedModule(Module):
    """The compiled form of a module: `_orig_mod` is the original, whose state this shares."""

    def __init__(self, mod: Module, compiler: _Compiler) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiler", compiler)
        object.__setattr__(self, "_pairs", None)

    def _sync_training(self) -> None:
        # the scripted copy has its own training flags: hand it the original's
        scripted = self._compiler.scripted
        if not scripted:
            return
        if self._pairs is None:
            orig = dict(self._orig_mod.named_modules())
            object.__setattr__(self, "_pairs", [(m, orig[n]) for n, m in scripted.named_modules()
                                                if n in orig])
        for copy, orig in self._pairs:
            if copy.training != orig.training:
                copy.training = orig.training

    def forward(self, *args, **kwargs):
        compiler = self._compiler
        if compiler.eager or compiler.reason is not None:
            return self._orig_mod(*args, **kwargs)
        compiler.prepare()
        self._sync_training()
        # a trace records the training flags it ran with: one trace per set of flags
        flags = tuple(m.training for m in self._orig_mod.modules())
        return compiler(*args, _trace_key=flags, **kwargs)

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend="inductor", mode: str | None = None, options: dict | None = None,
            disable: bool = False):
    """`torch.compile`: `model` (a function or a module) compiled by jitorch's script frontend,
    falling back to eager with a warning (or raising, with `fullgraph=True`)."""
    eager = _check_arguments(backend, mode, options) or disable
    if model is None:
        return functools.partial(compile, fullgraph=fullgraph, dynamic=dynamic, backend=backend,
                                 mode=mode, options=options, disable=disable)
    if not callable(model):
        raise RuntimeError("compile(): model must be callable, got "
                           f"{type(model).__name__}")
    if isinstance(model, Module):
        return OptimizedModule(model, _Compiler(model, fullgraph, eager))
    compiler = _Compiler(model, fullgraph, eager)

    @functools.wraps(model)
    def compiled(*args, **kwargs):
        return compiler(*args, **kwargs)

    compiled._torchdynamo_orig_callable = model
    compiled._jitorch_compiler = compiler
    return compiled
