"""Dict methods in scripted code: `keys`/`values`/`items` (lists, so every value type iterates
and indexes: `for k, v in d.items()`, `list(d.keys())[i]`), `pop`, `setdefault`, `update`,
`clear`, also on a dict reached through a subscript (`d["a"].update(e)`).

Dicts are values in the IR, held as Python dicts and used through `prim::PythonOp` calls (they
have no lowering): a method that mutates one is a call returning the new dict (and the method's
result), which is stored back where the dict came from, its variable or a subscript, as list
methods do (list_methods.py). The helpers are module-level functions that the allow-list of
runtime/loadable.py names (LIBRARY: the frontend may not import the runtime), so that a saved
module names them and a loaded one may call them: each checks that its receiver is a dict (a loaded graph's types are not trusted) and
computes a new dict or a list from its arguments, nothing else."""
from __future__ import annotations

import ast

from . import types as ft
from .. import ir


def _dict(d, name: str) -> dict:
    if type(d) is not dict:
        raise TypeError(f"dict.{name}() needs a dict, not {type(d).__name__}")
    return d


def dict_keys(d):
    return list(_dict(d, "keys").keys())


def dict_values(d):
    return list(_dict(d, "values").values())


def dict_items(d):
    return list(_dict(d, "items").items())


def dict_pop(d, k, *default):
    e = dict(_dict(d, "pop"))
    return e, e.pop(k, *default)


def dict_setdefault(d, k, default=None):
    e = dict(_dict(d, "setdefault"))
    return e, e.setdefault(k, default)


def dict_update(d, other):
    e = dict(_dict(d, "update"))
    e.update(_dict(other, "update"))  # a dict only: no iterable of the caller's to walk
    return e, None


def dict_clear(d):
    _dict(d, "clear")
    return {}, None


_VIEWS = {"keys": dict_keys, "values": dict_values, "items": dict_items}
_MUTATORS = {"pop": (dict_pop, (1, 2)), "setdefault": (dict_setdefault, (1, 2)),
             "update": (dict_update, (1, 1)), "clear": (dict_clear, (0, 0))}
METHODS = frozenset(_VIEWS) | frozenset(_MUTATORS)


def dict_method(st, bm, node):
    """Compile `recv.name(args)` for a dict receiver; returns the call's value."""
    from .list_methods import _where
    name, d = bm.name, bm.value
    t = ft.base(d.type)
    if node.keywords:
        st.fail(f"dict.{name}() takes no keyword arguments in scripted code", node)
    if name in _VIEWS:
        if node.args:
            st.fail(f"dict.{name}() takes no arguments", node)
        out = {"keys": ir.ListType(t.key), "values": ir.ListType(t.value),
               "items": ir.ListType(ir.TupleType([t.key, t.value]))}[name]
        st.cur = node
        return st.python_op(_VIEWS[name], [d], (out,), name=f"dict.{name}").output
    fn, (lo, hi) = _MUTATORS[name]
    if not lo <= len(node.args) <= hi:
        st.fail(f"dict.{name}() takes {lo if lo == hi else f'{lo} to {hi}'} argument(s) "
                f"({len(node.args)} given)", node)
    target = _where(bm.node.value)
    if target is None:
        st.fail(f"dict.{name}() is only supported on a variable or a subscript of one", node)
    args = [st.exprs.to_value(st.exprs.expr_value(a)) for a in node.args]
    res = ir.NONE
    if name in ("pop", "setdefault"):
        res = t.value
        if len(args) == 2 and args[1].type != t.value:
            res = ft.unify(t.value, args[1].type) or ir.ANY
    st.cur = node
    pair = st.python_op(fn, [d] + args, (ir.TupleType([d.type, res]),),
                        name=f"dict.{name}").output
    new, r = st.exprs.unpack(pair, 2, node)
    st.stmts.assign(ast.copy_location(target, bm.node.value), new)
    st.cur = node
    return r
