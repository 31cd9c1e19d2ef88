"""Module attributes as state in scripted methods (frontend/module.py's ModuleHooks mixes this in).

An attribute a method WRITES (`self.n += 1`, `self.count = self.count + k`, `self.table[k] = v`,
`self.hist.append(v)`; instance or class attribute, on `self` or a submodule) is state, not a
setting: never folded or guarded, the module sees the new value after the call and the next
call reads it. Owns which paths a method writes (`_written_paths`), their IR types
(`attr_type`: the class-level annotation, else the value's), reads (`attr_get`: the state
tensor of an int/float/bool attribute, else an `AttrGet` Python call) and writes
(`assign_attribute`: in place into the state tensor, else an `AttrSet` Python call), and a
read-only dict attribute as a fresh `prim::DictConstruct` per call (`dict_const`).

An int/float/bool state attribute is a 0-d tensor GRAPH INPUT (`Compiled.state`: the
ScriptMethod makes it from the attribute before each call and sets the attribute from it
after), read with `prim::TensorToScalar` and written in place, so the method still compiles; a
str/list/dict one is read and written by `prim::PythonOp` calls (such a graph runs interpreted:
dicts have no lowering). Its type stays the one it had when compiled (TorchScript's attribute
types). `self.buf += x` on a parameter/buffer/tensor attribute is the in-place `add_`.
"""
from __future__ import annotations

import ast

from ..._tensor import Tensor
from . import types as ft
from .. import ir
from .expr import Sugar
from .loops import _MUTATORS  # container methods that change their receiver in place
from .state import UNHANDLED


class AttrGet:
    """`self.<path>` of an attribute the method writes, read when the node runs."""

    def __init__(self, module, name: str):
        self.module, self.name = module, name

    def __call__(self):
        return getattr(self.module, self.name)


class AttrSet:
    """`self.<path> = v` in a scripted method: Python's setattr on the module (its instance
    attribute, as Python's `self.n += 1` makes of a class attribute)."""

    def __init__(self, module, name: str):
        self.module, self.name = module, name

    def __call__(self, v):
        setattr(self.module, self.name, v)


# the Python types of attribute state held in a 0-d tensor, and their IR types
_STATE = {int: ir.INT, float: ir.FLOAT, bool: ir.BOOL}

def _attr_annotation(cls, name):
    """The class-level annotation of attribute `name` (`table: Dict[str, int]`), or None."""
    import typing
    for k in cls.__mro__:
        ann = k.__dict__.get("__annotations__", {})
        if name in ann:
            a = ann[name]
            if isinstance(a, str):
                try:
                    a = typing.get_type_hints(k).get(name)
                except Exception:  # a name the annotation uses is not importable here
                    return None
            return a
    return None


class AttributeState:
    """The state-attribute half of ModuleHooks: needs `self.st`, `self.self_name`,
    `self.state`, `self.attr_types` and `self.param_value` from its host."""

    def _chain_path(self, node):
        """'a.b' for the target `self.a.b`, else None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id == self.self_name and parts:
            return ".".join(reversed(parts))
        return None

    def _written_paths(self) -> set:
        """Paths of the `self.a.b` attributes this method's body assigns, augments, assigns an
        item of, or calls a list/dict mutator on."""
        out = set()
        for n in self.st.nodes():
            if isinstance(n, ast.Assign):
                targets = list(n.targets)
            elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
                targets = [n.target]
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                    n.func.attr in _MUTATORS:
                targets = [n.func.value]
            else:
                continue
            while targets:
                t = targets.pop()
                if isinstance(t, (ast.Tuple, ast.List)):
                    targets.extend(t.elts)
                    continue
                while isinstance(t, ast.Subscript):
                    t = t.value
                p = self._chain_path(t)
                if p is not None:
                    out.add(p)
        return out

    def attr_type(self, m, name, path, v, node) -> ir.Type:
        """A plain attribute's IR type: its class-level annotation, else its value's."""
        ann = _attr_annotation(type(m), name)
        if ann is not None:
            try:
                return ft.from_annotation(ann)
            except ft.AnnotationError as e:
                self.st.fail(f"module attribute '{path}': {e}", node)
        if isinstance(v, dict):
            kt = vt = None
            for k, e in v.items():
                a, b = ft.of_python(k), ft.of_python(e)
                kt = a if kt is None or a is None else ft.unify(kt, a)
                vt = b if vt is None or b is None else ft.unify(vt, b)
                if kt is None or vt is None:
                    self.st.fail(f"module attribute '{path}' of {type(m).__name__}: a dict "
                                 "needs keys of one type and values of one type (int/float/"
                                 "bool/str/None or tuples/lists of those; annotate it as "
                                 "Dict[K, V])", node)
            if not v:
                self.st.fail(f"module attribute '{path}' of {type(m).__name__} is an empty "
                             "dict: annotate its type (`" + name + ": Dict[K, V]` in the "
                             "class body)", node)
            return ir.DictType(kt, vt)
        ty = ft.of_python(v)
        if ty is None:
            self.st.fail(f"module attribute '{path}' of {type(m).__name__} has type "
                         f"{type(v).__name__}, which scripted code cannot use", node)
        return ty

    def dict_const(self, v: dict, ty, node) -> ir.Value:
        """A dict attribute read (not written) by the method: a fresh dict each call."""
        st = self.st
        ins = []
        for k, e in v.items():
            ins += [st.const(k), st.const(list(e) if isinstance(e, list) else e)]
        st.cur = node
        return st.emit("prim::DictConstruct", ins, (ty,)).output

    def attr_get(self, m, name, path, v, node) -> ir.Value:
        st = self.st
        if path in self.state:  # the state tensor's current value
            st.cur = node
            ty = self.attr_types[path]
            return st.emit("prim::TensorToScalar", [self.param_value(path)], (ty,),
                           {"type": self.state[path].__name__}).output
        ty = self.attr_types.get(path)
        if ty is None:
            ty = self.attr_types[path] = self.attr_type(m, name, path, v, node)
        self.st.cur = node
        return self.st.python_op(AttrGet(m, name), [], (ty,), name=f"self.{path}").output

    def assign_attribute(self, t: ast.Attribute, v):
        """`self.a.b = v` (StmtBuilder.assign): an AttrSet of the module's attribute."""
        st = self.st
        path = self._chain_path(t)
        if path is None:
            return UNHANDLED
        owner = st.exprs.expr(t.value)
        from .module import ModRef  # (module.py mixes this class in: imported when used)
        if not (isinstance(owner, Sugar) and isinstance(owner.obj, ModRef)):
            return UNHANDLED
        m = owner.obj.module
        d = m.__dict__
        name = t.attr
        if name in d.get("_parameters", {}) or name in d.get("_buffers", {}) or \
                isinstance(d.get(name), Tensor) or name in d.get("_modules", {}):
            st.fail(f"assigning to the {'submodule' if name in d.get('_modules', {}) else 'tensor'}"
                    f" attribute '{path}' is not supported in scripted code (write into it in "
                    f"place: `self.{path} += v`, `self.{path}.copy_(v)`)", t)
        ty = self.attr_types.get(path)
        if ty is None:
            cur = d[name] if name in d else getattr(type(m), name, None)
            if cur is None and name not in d and not hasattr(type(m), name):
                st.fail(f"module '{type(m).__name__}' has no attribute '{name}' (scripted code "
                        "assigns only attributes set in __init__ or on the class)", t)
            ty = self.attr_types[path] = self.attr_type(m, name, path, cur, t)
        v = st.exprs.coerce(st.exprs.to_value(v), ty, t)
        st.cur = t
        if path in self.state:  # written into the state tensor, as `fill_` would
            cur = self.param_value(path)
            st.writes.mutate(cur, st.writes.write_op(cur, v), t)
            return None
        st.python_op(AttrSet(m, name), [v], (ir.NONE,), name=f"self.{path} =")
        return None
