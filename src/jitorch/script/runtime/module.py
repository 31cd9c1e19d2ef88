"""Scripted and traced modules: `jitorch.jit.script(module)` / `jitorch.jit.trace(module, ...)`.

Owns `ScriptModule`, `script_module(m)`, `trace_module(m, inputs)` and `freeze(m)`.

A traced module's submodules are traced modules too, as PyTorch's `TracedModule` children:
`traced.layer1` has `.graph`, `.code` and runs its own trace. The trace of the whole module
records the inputs each direct child was first called with (copies, by a forward pre-hook);
`traced.layer1` traces the child on them when first asked (its own children likewise, one level
at a time). A child never called in the trace, or called with other than tensors, stays the
plain module.

How a method is compiled: frontend/module.py (`self` resolved at compile time):
- `self.<param or buffer>` becomes a GRAPH INPUT (created on first use, named `self_<path>`),
  passed at each call: optimizer steps and `load_state_dict` never recompile;
- `self.<int/float/bool/str/None/tuple/list/dict attribute>` and `self.training` are folded as
  constants; each read is a GUARD: the method keeps one compiled variant per set of guarded
  values (train vs eval, a changed hyper-parameter), checked at each call;
- an int/float/bool attribute the method writes (`self.n += 1`) is STATE: a 0-d tensor made
  from the attribute for each call (a graph input like a buffer, `Compiled.state`), whose value
  after the call is set back on the module (`_Variant.run`);
- `self.sub(x)` / `self.sub.method(x)` compile the submodule's method recursively (its
  parameters mapped onto the caller's inputs) and call it with `prim::CallFunction` (the
  inline pass inlines it); `for m in self.layers` over ModuleList/Sequential/ModuleDict
  (`.items()/.values()/.keys()`, `enumerate`, `zip`) is unrolled; `self.layers[k]`, `len()`;
- anything else on `self` is a ScriptError naming the attribute and why.
Each variant is a `runtime.ScriptFunction` over (user args..., parameters...): its compile
cache, autodiff (parameters requiring grad are differentiated inputs) and write-back apply.
"""
from __future__ import annotations

import inspect

from ..._tensor import Tensor
from .. import ir
from ..kernels import compile_gc
from ..frontend.module import Compiled, _Ctx, _freeze_value, compile_method
from .functions import ScriptFunction


# --- the module object ------------------------------------------------------------------------
def _resolve(module, path: str):
    obj = module
    for p in path.split("."):
        obj = getattr(obj, p)
        if _cls is not None and isinstance(obj, _cls):  # a scripted child: its module
            obj = obj._orig
    return obj


_ATTR_VERSION: list = []


def _attr_version() -> list:
    """nn's attribute version counter (imported on first use: nn imports the compiler)."""
    if not _ATTR_VERSION:
        from ...nn.modules.module import ATTR_VERSION
        _ATTR_VERSION.append(ATTR_VERSION)
    return _ATTR_VERSION[0]


def _guard_value(m, name):
    d = m.__dict__
    for store, tag in (("_parameters", "T"), ("_buffers", "T"), ("_modules", "M")):
        if name in d.get(store, {}):
            return None if d[store][name] is None else tag
    v = d.get(name)
    if isinstance(v, Tensor):
        return "T"
    return _freeze_value(v)


_STATE_DTYPES: dict = {}


def _state_tensor(value, ty) -> Tensor:
    """The 0-d tensor standing for an int/float/bool attribute during a call."""
    import numpy as np
    if not _STATE_DTYPES:
        _STATE_DTYPES.update({int: np.int64, float: np.float64, bool: np.bool_})
    return Tensor._make(np.array(ty(value), dtype=_STATE_DTYPES[ty]))


def _accessor(root, path: str, state=None):
    """(dict, key) holding the tensor at `path` now: read at each call, so a parameter
    replaced in its module (`m.w = Parameter(...)`) is seen without recompiling; for attribute
    state (`state`: its Python type), (owner module, name, type)."""
    owner_path, _, leaf = path.rpartition(".")
    owner = _resolve(root, owner_path) if owner_path else root
    if state is not None:
        return owner, leaf, state
    for store in ("_parameters", "_buffers"):
        d = owner.__dict__.get(store, {})
        if leaf in d:
            return d, leaf
    return owner.__dict__, leaf


class _Variant:
    __slots__ = ("guards", "values", "sf", "param_paths", "graph", "_acc", "_root", "adapter",
                 "checked_at", "mutable", "state")

    def __init__(self, c: Compiled, sf):
        seen, self.guards, self.values = set(), [], []
        for m, n, v in c.guards:  # one check per (module, attribute)
            if (id(m), n) not in seen:
                seen.add((id(m), n))
                self.guards.append((m, n))
                self.values.append(v)
        self.sf, self.param_paths, self.graph = sf, c.param_paths, c.graph
        self.adapter = getattr(c, "adapter", None)  # a twin's Python side (compile_method)
        self.state = getattr(c, "state", None) or {}  # param path -> int/float/bool
        self._acc, self._root = None, None
        self.checked_at = -1
        self.mutable = any(isinstance(m.__dict__.get(n), (list, dict, set, bytearray))
                           for m, n in self.guards)

    def tensors(self, root) -> list:
        if self._root is not root:
            self._acc = [_accessor(root, p, self.state.get(p)) for p in self.param_paths]
            self._root = root
        return [_state_tensor(getattr(a[0], a[1]), a[2]) if len(a) == 3 else a[0][a[1]]
                for a in self._acc]

    def run(self, root, args, finish=None):
        """The compiled function on `args` and the module's tensors; attribute state is set
        back on the module afterwards (only where it changed: no guard re-check otherwise)."""
        ts = self.tensors(root)
        out = self.sf(*args, *ts)
        if self.state:
            for a, t in zip(self._acc, ts):
                if len(a) == 3:
                    owner, name, ty = a
                    new = ty(t._data.item())
                    if getattr(owner, name) != new or type(getattr(owner, name)) is not ty:
                        setattr(owner, name, new)
        return out if finish is None else finish(out)


def _wait_all(fns, timeout) -> bool:
    """`wait_compiled(timeout)` over several functions/methods, one deadline for all."""
    import time
    deadline = None if timeout is None else time.monotonic() + timeout
    for f in fns:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        wait = getattr(f, "wait_compiled", None)
        if wait is not None and not wait(left):
            return False
    return True


class ScriptMethod:
    """A compiled method of a ScriptModule: callable; `.graph` (the frontend's IR: the user's
    arguments, then the parameters it reads), `.code`, `.graph_for(*args)`."""

    def __init__(self, owner, name, compile_fn, signature=None):
        self.owner, self.name, self._compile = owner, name, compile_fn
        self._variants: list = []
        self._signature = signature
        self._current()

    def _current(self) -> _Variant:
        version = _attr_version()[0]
        for v in self._variants:
            if v.checked_at == version:  # no module attribute changed since the last check
                return v
            for (m, n), val in zip(v.guards, v.values):
                if _guard_value(m, n) != val:
                    break
            else:
                # a guarded list/dict/set may change in place without an assignment: those
                # variants check on every call
                v.checked_at = -1 if v.mutable else version
                return v
        with compile_gc.raised():  # (the frontend's compile of the method)
            c = self._compile()
        sf = ScriptFunction(c.graph, None, name=self.name, static_args=c.res.static_args,
                            kind=c.kind if hasattr(c, "kind") else "script",
                            tuple_out=c.res.returns_tuple)
        sf.python_ops = tuple(c.res.python_ops)
        if c.signature is not None:
            self._signature = c.signature
            self._defaults = c.res.defaults
        v = _Variant(c, sf)
        self._variants.append(v)
        return v

    def __call__(self, *args, **kwargs):
        v = self._current()
        if v.adapter is not None:
            args, finish = v.adapter(*args, **kwargs)
            return v.run(self.owner._orig, args, finish)
        if not kwargs and self._signature is not None and \
                len(args) == len(self._signature.parameters):
            return v.run(self.owner._orig, args)  # the common case: no binding
        if self._signature is not None:
            try:
                b = self._signature.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{self.name}(): {e}") from None
            b.apply_defaults()
            args = list(b.args)
        else:
            args = list(args)
        return v.run(self.owner._orig, args)

    def wait_compiled(self, timeout=None) -> bool:
        """`ScriptFunction.wait_compiled` for every variant of this method."""
        return _wait_all([v.sf for v in list(self._variants)], timeout)

    @property
    def graph(self) -> ir.Graph:
        return self._current().graph

    @property
    def code(self) -> str:
        v = self._current()
        if v.sf._last is None:
            from ..ir.printer import print_graph
            return "# not called yet: the frontend's graph\n" + print_graph(v.graph)
        return v.sf.code

    def graph_for(self, *args):
        v = self._current()
        return v.sf.graph_for(*args, *v.tensors(self.owner._orig))

    def __repr__(self):
        return f"<jitorch.jit.ScriptMethod {self.name}>"


def _exported(module) -> list:
    out = []
    for k in dir(type(module)):
        f = inspect.getattr_static(type(module), k, None)
        f = getattr(f, "__func__", f)  # a @script_method (runtime/legacy.py)
        if inspect.isfunction(f) and getattr(f, "_jitorch_export", False) and k != "forward":
            out.append(k)
    return out


def _make_class():
    from .legacy import script_module_base

    class ScriptModule(script_module_base()):
        """A scripted (or traced) module: shares the original module's parameters, buffers and
        submodules (state_dict, load_state_dict, parameters(), to(), train()/eval() act on
        both); `forward` and `@jitorch.jit.export` methods run compiled."""

        _jitorch_script_module = True

        def __init__(self, orig, kind="script"):
            super().__init__()
            object.__setattr__(self, "_orig", orig)
            d = self.__dict__
            for k in ("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"):
                d[k] = orig.__dict__[k]
            d["training"] = orig.training
            d["original_name"] = type(orig).__name__
            d["_kind"] = kind
            d["_methods"] = {}

        def train(self, mode: bool = True):
            super().train(mode)
            self._orig.training = mode
            return self

        def forward(self, *args, **kwargs):
            return self._methods["forward"](*args, **kwargs)

        def __getattr__(self, name):
            meths = self.__dict__.get("_methods", {})
            if name in meths:
                return meths[name]
            child = _traced_child(self, name)
            if child is not None:
                return child
            try:
                return super().__getattr__(name)
            except AttributeError:
                orig = self.__dict__.get("_orig")
                if orig is not None and name in orig.__dict__:  # `sm.k`: the module's attribute
                    return orig.__dict__[name]
                raise

        def __setattr__(self, name, value):
            orig = self.__dict__.get("_orig")
            if orig is not None and name != "training" and name in orig.__dict__:
                setattr(orig, name, value)  # `sm.k = 5`: the guard sees it, the method recompiles
                return
            super().__setattr__(name, value)

        def wait_compiled(self, timeout=None) -> bool:
            """Wait until no scripted method of this module compiles in the background
            (`ScriptFunction.wait_compiled`); False if `timeout` seconds passed first."""
            return _wait_all(list(self._methods.values()), timeout)

        @property
        def graph(self):
            return self._methods["forward"].graph

        @property
        def code(self):
            return self._methods["forward"].code

        def _get_name(self):
            return "RecursiveScriptModule" if self._kind == "script" else "TracedModule"

        def __repr__(self):
            return f"{self._get_name()}(original_name={self.original_name})"

    return ScriptModule


_cls = None


def script_module_class():
    global _cls
    if _cls is None:
        _cls = _make_class()
    return _cls


def _add_method(sm, name, compile_fn, signature=None):
    meth = ScriptMethod(sm, name, compile_fn, signature)
    sm._methods[name] = meth
    sm.__dict__[name] = meth  # `sm.forward.graph`, `sm.first.code` (hooks still run: __call__)
    return meth


def script_module(m):
    """`jitorch.jit.script(module)`."""
    cls = script_module_class()
    if isinstance(m, cls):
        return m
    from .legacy import script_module_base
    if isinstance(m, script_module_base()):  # a jit.ScriptModule subclass: already scripted
        return m
    sm = cls(m, "script")
    for name in ["forward"] + _exported(m):
        _add_method(sm, name, lambda name=name: compile_method(m, name, _Ctx(), top=True))
    return sm


def script_module_view(m):
    """The scripted view of a `jit.ScriptModule` subclass instance (runtime/legacy.py): its
    `@script_method`s compiled (forward only when it is one)."""
    sm = script_module_class()(m, "script")
    for name in _exported(m):  # @script_method marks its function exported
        _add_method(sm, name, lambda name=name: compile_method(m, name, _Ctx(), top=True))
    fwd = inspect.getattr_static(type(m), "forward", None)
    if getattr(getattr(fwd, "__func__", fwd), "_jitorch_script_method", False):
        _add_method(sm, "forward", lambda: compile_method(m, "forward", _Ctx(), top=True))
    return sm


def trace_module(m, example_inputs, check_trace=True, check_inputs=None, check_tolerance=1e-5):
    """`jitorch.jit.trace(module, example_inputs)`: parameters and buffers are graph inputs
    (after the example inputs), as in a scripted module; the trace is for m.training as it is
    now (no guards: a traced module does not recompile on train()/eval())."""
    from ..frontend import trace as _trace
    if isinstance(example_inputs, Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    named = [(k, t) for k, t in list(m.named_parameters()) + list(m.named_buffers())]
    n = len(example_inputs)

    def call(*a):
        return m(*a[:n])
    child_inputs, handles = _record_child_inputs(m)
    try:
        graph, out = _trace.trace_graph(call, example_inputs + tuple(t for _, t in named),
                                        name=f"{type(m).__name__}.forward")
    finally:
        for h in handles:
            h.remove()
    from .programs import _symbolic
    for v in graph.inputs:
        v.type = _symbolic(v.type)
    if not isinstance(out, (Tensor, tuple)) or (isinstance(out, tuple) and not all(
            isinstance(o, Tensor) for o in out)):
        raise NotImplementedError("jitorch.jit.trace(module): forward must return a Tensor or "
                                  "a tuple of Tensors")
    if len(graph.inputs) != n + len(named):
        raise NotImplementedError("jitorch.jit.trace(module): example inputs must be Tensors")
    from ..frontend.function import FrontendResult
    res = FrontendResult(graph, (), {}, None, isinstance(out, tuple), False, ())
    c = Compiled(res, [k for k, _ in named], [], None)
    sm = script_module_class()(m, "trace")
    sm.__dict__["_child_inputs"] = child_inputs
    _add_method(sm, "forward", lambda: c)
    if check_trace:  # PyTorch's default: trace again on the check inputs and compare
        from ..frontend.trace_check import as_inputs, check_trace as _check

        def retrace(a):
            a = as_inputs(a)
            k = len(a)
            return _trace.trace_graph(lambda *b: m(*b[:k]), a + tuple(t for _, t in named),
                                      name=f"{type(m).__name__}.forward")
        _check(graph, retrace, lambda a: sm(*as_inputs(a)), check_inputs or [example_inputs],
               check_tolerance)
    return sm


def _copy_inputs(args):
    """Copies of a child's call arguments (made outside the dispatcher: no traced op), or
    None when some argument is not a Tensor."""
    if not args or not all(isinstance(a, Tensor) for a in args):
        return None
    out = []
    for a in args:
        c = Tensor._make(a._data.copy(), a._dtype)
        if a._device is not Tensor._device:
            c._device = a._device
        out.append(c)
    return tuple(out)


def _record_child_inputs(m):
    """Forward pre-hooks on m's direct children recording the first call's inputs; returns
    (the {name: inputs} table, the hook handles to remove)."""
    seen: dict = {}
    handles = []
    for name, child in m._modules.items():
        if child is None:
            continue

        def hook(mod, args, name=name):
            if name not in seen:
                seen[name] = _copy_inputs(args)
        handles.append(child.register_forward_pre_hook(hook))
    return seen, handles


def _traced_child(sm, name):
    """`traced.<name>` of a traced module: the child's own trace (see the module docstring),
    or None (not a child with recorded tensor inputs: the ordinary lookup applies)."""
    d = sm.__dict__
    inputs = d.get("_child_inputs", {}).get(name)
    if inputs is None:
        return None
    mod = d["_modules"].get(name)
    cache = d.setdefault("_child_traces", {})
    hit = cache.get(name)
    if hit is not None and hit[0] is mod:
        return hit[1]
    if mod is None:
        return None
    traced = trace_module(mod, inputs, check_trace=False)
    cache[name] = (mod, traced)
    return traced


def freeze(sm, preserved_attrs=None, optimize_numerics=True):
    """`jitorch.jit.freeze`: an eval-mode ScriptModule whose parameters and buffers are folded:
    snapshots (detached copies) are bound to the compiled methods, so the frozen module no longer
    follows the original's parameters, tracks no gradients and never re-reads attributes."""
    cls = script_module_class()
    if not isinstance(sm, cls):
        raise RuntimeError("jitorch.jit.freeze expects a ScriptModule (from jitorch.jit.script "
                           "or jitorch.jit.trace)")
    if sm.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    import copy
    frozen_orig = copy.deepcopy(sm._orig)
    for mod in frozen_orig.modules():  # explicit copies: the snapshot shares no memory
        d = mod.__dict__
        for k, p in d["_parameters"].items():
            if p is not None:
                d["_parameters"][k] = type(p)(p.detach().clone(), requires_grad=False)
        for k, b in d["_buffers"].items():
            if b is not None:
                d["_buffers"][k] = b.detach().clone()
        for k, v in list(d.items()):
            if isinstance(v, Tensor):
                d[k] = v.detach().clone()
    out = cls(frozen_orig, sm._kind)
    names = list(sm._methods)
    if preserved_attrs:
        names += [a for a in preserved_attrs if a not in names]
    for name in names:
        meth = sm._methods.get(name)
        if meth is None:
            continue
        v = meth._current()
        c = Compiled(_Res(v), v.param_paths, [], meth._signature, state=v.state)
        _add_method(out, name, lambda c=c: c, meth._signature)
    return out


class _Res:
    def __init__(self, v):
        self.graph = v.graph
        self.static_args = tuple(v.sf._static)
        self.returns_tuple = v.sf._tuple_out
        self.python_ops = v.sf.python_ops
        self.defaults = {}
