"""The frontend for `nn.Module` methods: a `frontend.FunctionCompiler` with `ModuleHooks`
(state.FrontendHooks), so `self` is resolved at compile time, never a graph input; used by
script/runtime/module.py (ScriptModule).

Owns `compile_method(module, name, ctx) -> Compiled`:
- `self.<param or buffer>` (and plain tensor attributes) become GRAPH INPUTS, created on first
  use and named `self_<path>`; `Compiled.param_paths` lists them (relative to the module);
- `self.<int/float/bool/str/None/tuple/list/dict attribute>` and `self.training` are folded as
  constants (a dict as a fresh `prim::DictConstruct` per call); every read is recorded in
  `ctx.guards` as (module, name, value-key): the caller keeps one compiled variant per set of
  guarded values (train vs eval, a changed setting);
- an attribute the method WRITES (`self.n += 1`, `self.table[k] = v`, ...) is state, not a
  setting: module_state.py (AttributeState, mixed into ModuleHooks) owns it;
- `self.sub(x)` / `self.sub.method(x)` compile the submodule's method recursively (its
  parameters mapped onto the caller's inputs) -> `prim::CallFunction` (the inline pass inlines
  it); `for m in self.layers` over ModuleList/Sequential/ModuleDict (also `.items()`,
  `.values()`, `.keys()`, `enumerate`, `zip`) is unrolled; `self.layers[k]`, `len(...)`,
  `type(self)._fn`, `f(*args)` over a local tuple, `f"{self!r}"` in error messages;
- anything else on `self` is a ScriptError naming the attribute and why.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import inspect

from ..._tensor import Tensor
from . import types as ft
from .. import ir
from ..ir.errors import ScriptError
from .expr import Sugar
from .function import FunctionCompiler
from .module_state import _STATE, AttributeState, _attr_annotation
from .state import UNHANDLED, FrontendHooks

class ModRef:
    """A submodule reached from the compiled method's `self` (path relative to it)."""
    __slots__ = ("module", "path")

    def __init__(self, module, path: str):
        if getattr(type(module), "_jitorch_script_module", False):  # a scripted child
            module = module._orig
        self.module, self.path = module, path

    def sub(self, name, m):
        return ModRef(m, f"{self.path}.{name}" if self.path else name)

    def __repr__(self):
        return f"ModRef({type(self.module).__name__} at '{self.path or 'self'}')"


class ModMethod:
    __slots__ = ("ref", "name")

    def __init__(self, ref, name):
        self.ref, self.name = ref, name


class Compiled:
    """One compiled method of one module instance: graph inputs are the user's arguments then
    the parameters/buffers at `param_paths` (relative to that module)."""

    def __init__(self, res, param_paths, guards, sig, adapter=None, state=None):
        self.res, self.graph = res, res.graph
        self.param_paths, self.guards, self.signature = param_paths, guards, sig
        self.adapter = adapter  # see compile_method (a module's `_jit_twin`)
        self.state = state or {}  # param path -> int/float/bool: a scalar attribute's state


def _freeze_value(v):
    if isinstance(v, list):
        return ("L",) + tuple(_freeze_value(e) for e in v)
    if isinstance(v, dict):
        return ("D",) + tuple((k, _freeze_value(e)) for k, e in v.items())
    if isinstance(v, tuple):
        return ("T",) + tuple(_freeze_value(e) for e in v)
    return (type(v), v)


def _is_chain(node) -> bool:
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


class ModuleHooks(AttributeState, FrontendHooks):
    """The module frontend's hooks (state.FrontendHooks): `self` and what it reaches are
    compile-time objects. Its own state is the module, the compile context and the two
    tables below; the builders' state is `self.st`."""

    def __init__(self, module, ctx):
        self.mod = module
        self.ctx = ctx                    # shared by a compile and its submodule compiles
        self.self_name = "self"
        self.param_values: dict = {}      # path -> graph input
        self.mod_env: dict = {}           # local names bound to submodules
        self.written: set = set()         # paths of the attributes the method assigns
        self.attr_types: dict = {}        # path -> IR type of a written attribute
        self.state: dict = {}             # path -> int/float/bool: scalar state (graph input)

    def bind(self, st):
        super().bind(st)
        self.self_name = st.fdef.args.args[0].arg if st.fdef.args.args else "self"
        self.written = self._written_paths()

    # -- names and attributes -----------------------------------------------------------------
    def resolve_name(self, name):
        if name in self.mod_env:
            return self.mod_env[name]
        if name == self.self_name:
            return ModRef(self.mod, "")
        return UNHANDLED

    def on_entry(self):
        # Register every tensor attribute the body names as a storage at function entry, so
        # writes inside branches and loops are carried out of them and written back; so is
        # the scalar state (a 0-d tensor each) of the attributes the body writes.
        for path in self._tensor_attr_paths():
            self.param_value(path)
        for path in sorted(self.written):
            got = self._owner(path)
            if got is None:
                continue
            m, name = got
            d = m.__dict__
            if any(name in d.get(k, {}) for k in ("_parameters", "_buffers", "_modules")):
                continue
            v = d[name] if name in d else inspect.getattr_static(type(m), name, None)
            if type(v) in _STATE and _attr_annotation(type(m), name) in (None, type(v)):
                self.state[path] = type(v)
                self.attr_types[path] = _STATE[type(v)]
                self.param_value(path)

    def _owner(self, path: str):
        """(module, attribute name) that `self.<path>` names, or None (not through
        submodules)."""
        m = self.mod
        *subs, name = path.split(".")
        for k in subs:
            m = m.__dict__.get("_modules", {}).get(k)
            if m is None:
                return None
            if getattr(type(m), "_jitorch_script_module", False):
                m = m._orig
        return m, name

    def _tensor_attr_paths(self) -> list:
        """Paths (`sub.weight`) of the parameters/buffers/tensor attributes that `self.a.b...`
        chains in this method's body name (first seen first)."""
        paths = []
        for node in self.st.nodes():
            chain = []
            while isinstance(node, ast.Attribute):
                chain.append(node.attr)
                node = node.value
            if not (isinstance(node, ast.Name) and node.id == self.self_name and chain):
                continue
            m, path = self.mod, []
            for k, name in enumerate(reversed(chain)):
                d = m.__dict__
                if name in d.get("_modules", {}) and d["_modules"][name] is not None:
                    m = d["_modules"][name]
                    path.append(name)
                    if k == len(chain) - 1:  # a submodule: what its calls may write
                        for sub, _ in list(m.named_parameters()) + list(m.named_buffers()):
                            full = ".".join(path + [sub])
                            if full not in paths:
                                paths.append(full)
                    continue
                tensor = (d.get("_parameters", {}).get(name) is not None or
                          d.get("_buffers", {}).get(name) is not None or
                          isinstance(d.get(name), Tensor))
                if tensor and ".".join(path + [name]) not in paths:
                    paths.append(".".join(path + [name]))
                break
        return paths

    def param_value(self, path: str) -> ir.Value:
        st = self.st
        v = self.param_values.get(path)
        if v is None:
            v = ir.Value(ft.tensor(), "self_" + path.replace(".", "_"))
            st.graph.block.params.append(v)
            self.param_values[path] = v
            # a storage of its own, like a tensor argument: in-place writes to a buffer
            # (`self.num_batches_tracked.add_(1)`) are written back to the module's tensor
            tok = f"$root:{v.name}"
            st.env[tok] = v
            st.alias[v.uid] = (tok, ())
            st.arg_tokens.append((tok, len(st.graph.block.params) - 1))
        return st.env.get(f"$root:{v.name}", v)  # the buffer's current value after writes

    def static_attribute(self, obj, name, node):
        if isinstance(obj, ModRef):
            return self.mod_attr(obj, name, node)
        return UNHANDLED

    def mod_attr(self, ref: ModRef, name: str, node):
        st = self.st
        m = ref.module
        path = f"{ref.path}.{name}" if ref.path else name
        d = m.__dict__
        for store in ("_parameters", "_buffers"):
            if name in d.get(store, {}):
                t = d[store][name]
                self.ctx.guards.append((m, name, None if t is None else "T"))
                return st.const(None) if t is None else self.param_value(path)
        if name in d.get("_modules", {}):
            sub = d["_modules"][name]
            self.ctx.guards.append((m, name, None if sub is None else "M"))
            return st.const(None) if sub is None else Sugar(ref.sub(name, sub))
        if name in d and not isinstance(d[name], Tensor) and path in self.written:
            return self.attr_get(m, name, path, d[name], node)
        if name in d:
            v = d[name]
            if isinstance(v, Tensor):
                self.ctx.guards.append((m, name, "T"))
                return self.param_value(path)
            if isinstance(v, dict):
                self.ctx.guards.append((m, name, _freeze_value(v)))
                return self.dict_const(v, self.attr_type(m, name, path, v, node), node)
            if ft.of_python(v) is not None:
                self.ctx.guards.append((m, name, _freeze_value(v)))
                return st.const(list(v) if isinstance(v, list) else v)
            st.fail(f"module attribute '{path}' of {type(m).__name__} has type "
                    f"{type(v).__name__}, which scripted code cannot use (supported: "
                    "parameters, buffers, submodules, int/float/bool/str/None and "
                    "tuples/lists/dicts of those)", node)
        if name == "__class__":
            return Sugar(type(m))
        cls_attr = inspect.getattr_static(type(m), name, None)
        if inspect.isfunction(getattr(cls_attr, "__func__", cls_attr)) and not isinstance(
                cls_attr, (staticmethod, classmethod)):  # (a @script_method: its __func__)
            return Sugar(ModMethod(ref, name))
        if isinstance(cls_attr, (int, float, bool, str, list, dict)) and path in self.written:
            return self.attr_get(m, name, path, cls_attr, node)  # `count = 0` on the class
        if isinstance(cls_attr, (int, float, bool, str)) and not callable(cls_attr):
            return st.const(cls_attr)
        if cls_attr is None and not hasattr(type(m), name):
            st.fail(f"module '{type(m).__name__}' has no attribute '{name}'", node)
        st.fail(f"module attribute '{path}' of {type(m).__name__} "
                f"({type(cls_attr).__name__}) is not supported in scripted code", node)

    # -- calls --------------------------------------------------------------------------------
    def rewrite_call(self, node):
        # `f(*args)` where args is a tuple built in this function (`args = (x, self.k)`):
        # spread its elements (bound to hidden names) as positional arguments
        st = self.st
        if any(isinstance(a, ast.Starred) for a in node.args):
            new = []
            for a in node.args:
                if not isinstance(a, ast.Starred):
                    new.append(a)
                    continue
                v = st.exprs.expr(a.value)
                if isinstance(v, Sugar) and isinstance(v.obj, tuple):
                    elems = [Sugar(e) for e in v.obj]
                else:
                    v = st.exprs.to_value(v)
                    if not isinstance(ft.base(v.type), ir.TupleType):
                        st.fail("*args in calls is only supported on tuples in scripted code",
                                a)
                    elems = st.exprs.unpack(v, len(ft.base(v.type).elems), a)
                for e in elems:
                    tmp = f"$star{len(st.env)}_{id(e)}"
                    if isinstance(e, Sugar):
                        self.mod_env[tmp] = e.obj
                    else:
                        st.env[tmp] = e
                    new.append(ast.copy_location(ast.Name(tmp, ast.Load()), a))
            node = ast.copy_location(ast.Call(node.func, new, node.keywords), node)
        return node

    def call_python(self, obj, node):
        st = self.st
        if isinstance(obj, ModRef):
            return self.module_call(obj, "forward", node)
        if isinstance(obj, ModMethod):
            return self.module_call(obj.ref, obj.name, node)
        if obj in (builtins.len, builtins.type) and len(node.args) == 1 and \
                _is_chain(node.args[0]):
            ref = self._container(node.args[0])
            if ref is not None:
                if obj is builtins.type:  # `type(self)._fn(x)`: the class, static
                    return Sugar(type(ref.module))
                return st.const(len(ref.module))
        if obj is builtins.type and len(node.args) == 1 and not node.keywords:
            v = st.exprs.expr(node.args[0])  # type(x) of a tensor: static (error messages)
            if isinstance(v, ir.Value) and isinstance(ft.base(v.type), ir.TensorType):
                return Sugar(Tensor)
        return UNHANDLED

    def module_call(self, ref: ModRef, name: str, node):
        st = self.st
        m = ref.module
        n_args = len(node.args) + len(node.keywords)
        c = compile_method(m, name, self.ctx, form="call_state" if n_args > 1 else "call")
        st.python_ops.extend(c.res.python_ops)
        args, kwargs = st.calls.eval_args(node)
        try:
            bound = c.signature.bind(*args, **kwargs)
        except TypeError as e:
            st.fail(f"{type(m).__name__}.{name}(): {e}", node)
        ins = []
        user = c.graph.inputs[:len(c.graph.inputs) - len(c.param_paths)]
        for p, gv in zip(c.signature.parameters, user):
            if p in bound.arguments:
                ins.append(st.exprs.coerce(bound.arguments[p], gv.type, node))
            else:
                dv = c.res.defaults[p]
                ins.append(st.const(dv) if ft.of_python(dv) is not None
                           else st.const(dv, gv.type))
        for p in c.param_paths:
            full = f"{ref.path}.{p}" if ref.path else p
            if p in c.state:  # the callee's attribute state is the caller's too
                self.state[full] = c.state[p]
            ins.append(self.param_value(full))
        st.cur = node
        n = st.emit("prim::CallFunction", ins, [o.type for o in c.graph.outputs],
                    {"fn": c.graph})
        # the callee's writes to its arguments and buffers (extra outputs after its results)
        # are writes here too, so they reach the caller's storages
        mut = tuple(getattr(c.graph, "mutated_inputs", ()) or ())
        results = n.outputs[:len(n.outputs) - len(mut)]
        written = st.writes.call_targets(n, mut, node)
        for i, new in zip(mut, n.outputs[len(results):]):
            st.writes.mutate(written[i], new, node)
        if c.res.returns_tuple:
            return st.emit("prim::TupleConstruct", results,
                           (ir.TupleType([o.type for o in results]),)).output
        return results[0]

    def formatted_value(self, part):
        # `f"{self!r}: ..."` in a layer's error message: the module's repr, folded
        ref = self._container(part.value)
        if ref is None:
            return UNHANDLED
        m = ref.module
        return self.st.const(repr(m) if part.conversion == 114 else str(m))

    # -- module containers ----------------------------------------------------------------------
    def _container(self, node):
        if not _is_chain(node) and not (isinstance(node, ast.Subscript) and
                                        _is_chain(node.value)):
            return None
        v = self.st.exprs.expr(node)
        return v.obj if isinstance(v, Sugar) and isinstance(v.obj, ModRef) else None

    def subscript(self, node):
        ref = self._container(node.value)
        if ref is None:
            return UNHANDLED
        key = node.slice
        if not isinstance(key, ast.Constant):
            self.st.fail("indexing a module container needs a constant index in scripted "
                         "code", node)
        try:
            if isinstance(key.value, str):
                sub = ref.module[key.value]
                return Sugar(ref.sub(key.value, sub))
            items = list(ref.module._modules.items())
            k, sub = items[key.value]
            return Sugar(ref.sub(k, sub))
        except (KeyError, IndexError, TypeError) as e:
            self.st.fail(f"bad index into {type(ref.module).__name__}: {e}", node)

    def _static_items(self, node):
        """Items of an unrollable iteration over module containers, or None."""
        st = self.st
        ref = self._container(node)
        if ref is not None:
            return [Sugar(ref.sub(k, m)) for k, m in ref.module._modules.items()]
        if not isinstance(node, ast.Call) or node.keywords:
            return None
        f = node.func
        if isinstance(f, ast.Attribute) and f.attr in ("items", "values", "keys") and \
                not node.args:
            ref = self._container(f.value)
            if ref is None:
                return None
            mods = list(ref.module._modules.items())
            if f.attr == "values":
                return [Sugar(ref.sub(k, m)) for k, m in mods]
            if f.attr == "keys":
                return [st.const(k) for k, _ in mods]
            return [(st.const(k), Sugar(ref.sub(k, m))) for k, m in mods]
        if isinstance(f, ast.Name) and f.id in ("enumerate", "zip") and node.args:
            fn = st.exprs.resolve_name(f.id, f)
            if fn is enumerate and len(node.args) == 1:
                inner = self._static_items(node.args[0])
                return None if inner is None else \
                    [(st.const(i), x) for i, x in enumerate(inner)]
            if fn is zip:
                parts = [self._static_items(a) for a in node.args]
                if any(p is None for p in parts):
                    return None
                return list(zip(*parts))
        return None

    def for_stmt(self, s):
        st = self.st
        st.cur = s
        items = self._static_items(s.iter)
        if items is None:
            return False
        if s.orelse:
            st.fail("for ... else is not supported in scripted code", s)
        for n in ast.walk(ast.Module(body=s.body, type_ignores=[])):
            if isinstance(n, (ast.Break, ast.Continue, ast.Return)):
                st.fail(f"'{type(n).__name__.lower()}' in a loop over modules is not "
                        "supported in scripted code", n)
        for it in items:
            st.stmts.assign(s.target, it)
            st.stmts.block_stmts(s.body)
        return True

    @contextlib.contextmanager
    def branch(self):
        # static bindings made in a branch stay in it (as the branch's env does)
        saved = dict(self.mod_env)
        try:
            yield
        finally:
            self.mod_env = saved

    def assign(self, t, v):
        st = self.st
        if isinstance(t, ast.Attribute):
            r = self.assign_attribute(t, v)
            return v if r is UNHANDLED else r
        if isinstance(v, tuple) and isinstance(t, (ast.Tuple, ast.List)):
            if len(v) != len(t.elts):
                st.fail(f"cannot unpack {len(v)} values into {len(t.elts)}", t)
            for e, p in zip(t.elts, v):
                st.stmts.assign(e, p)
            return None
        if isinstance(t, ast.Name):
            if isinstance(v, Sugar) and ft.of_python(v.obj) is not None:
                v = st.exprs.to_value(v)  # a static number/str/tuple: an ordinary constant
            elif isinstance(v, Sugar) and not st.loop_depth:  # `fn = type(self)._fn`
                self.mod_env[t.id] = v.obj
                st.env.pop(t.id, None)
                return None
            self.mod_env.pop(t.id, None)
        return v


class _Ctx:
    def __init__(self):
        self.guards: list = []
        self.methods: dict = {}


def compile_method(module, name: str, ctx: _Ctx, top: bool = False,
                   form: str = "call") -> Compiled:
    """`top`: the method is called from Python (a ScriptMethod), not from a scripted caller.
    A module may replace a method by a script-subset twin: `module._jit_twin(name, form)` ->
    None or (function, adapter), form "top", or for a scripted caller `form` ("call", or
    "call_state" when the call passes more than one argument). At the top, `adapter(*args,
    **kwargs) -> (twin_args, finish)` runs in Python around each call (checks, defaults,
    result structure); for a scripted caller it is None (nn/modules/_rnn_script.py)."""
    form = "top" if top else form
    key = (id(module), name, form)
    hit = ctx.methods.get(key)
    if hit is not None:
        ctx.guards.extend(hit.guards)
        return hit
    fn = inspect.getattr_static(type(module), name, None)
    fn = getattr(fn, "__func__", fn)
    adapter = None
    twin = getattr(type(module), "_jit_twin", None)
    got = twin(module, name, form) if twin is not None else None
    if got is not None:
        fn, adapter = got
    if not inspect.isfunction(fn):
        raise ScriptError(f"cannot script {type(module).__name__}.{name}: not a method "
                          "defined in Python")
    if getattr(fn, "_jitorch_ignore", False):
        raise ScriptError(f"{type(module).__name__}.{name} is @ignore'd: it cannot be called "
                          "from a scripted module")
    outer = ctx.guards
    ctx.guards = []
    try:
        hooks = ModuleHooks(module, ctx)
        res = FunctionCompiler(fn, f"{type(module).__name__}.{name}", self_type=ir.NONE,
                               hooks=hooks).compile()
        guards = ctx.guards
    finally:
        ctx.guards = outer + ctx.guards
    g = res.graph
    if g.inputs and g.inputs[0].name == hooks.self_name:  # `self` was resolved statically
        used = any(g.inputs[0] in n.inputs for n in _all_nodes(g.block)) or \
            g.inputs[0] in g.block.returns
        if used:
            raise ScriptError(f"{type(module).__name__}.{name}: `self` can only be used "
                              "through its attributes in a scripted module")
        g.block.params.pop(0)
        for attr in ("mutated_inputs", "no_grad_writes"):
            if getattr(g, attr, None):
                setattr(g, attr, [i - 1 for i in getattr(g, attr)])
        if getattr(g, "return_aliases", None):
            g.return_aliases = {j: i - 1 for j, i in g.return_aliases.items()}
    sig = inspect.signature(fn)
    sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    out = Compiled(res, list(hooks.param_values), guards, sig, adapter, dict(hooks.state))
    ctx.methods[key] = out
    return out


def _all_nodes(block):
    for n in block.nodes:
        yield n
        for b in n.blocks:
            yield from _all_nodes(b)


