"""List methods in scripted code: `insert`, `pop`, `remove`, `sort`, `reverse`, `extend`, `index`,
`count`, `clear`, `append`, also on a list reached through a subscript (`d["k"].append(x)`,
`l[i].append(x)`), and slice assignment (`l[a:b] = vs`).

Lists are values in the IR (a method that mutates one rebinds its variable: methods.py), so
each method is written here once as script-subset source over the list operations the
compiler already lowers (slices, concatenation, indexing, `len`, loops), and compiled in place
of the call with the receiver, the arguments and the result bound to fresh names. The list is
then stored back where it came from: its variable, or `d["k"] = ...` / `l[i] = ...` through
the ordinary subscript assignment. What the methods raise follows Python's messages.
"""
from __future__ import annotations

import ast
import itertools

from . import types as ft
from .. import ir

# each template reads L (the list), A0, A1 (the arguments) and may set L and R (the result)
_TEMPLATES = {
    "append": (1, "L = L + [A0]"),
    "extend": (1, "L = L + A0"),
    "insert": (2, "L = L[:A0] + [A1] + L[A0:]"),
    "clear": (0, "L = L[:0]"),
    "reverse": (0, "L = L[::-1]"),
    "pop0": (0, "if len(L) == 0:\n    raise IndexError('pop from empty list')\n"
                "R = L[-1]\nL = L[:-1]"),
    "pop1": (1, "J = A0 + len(L) if A0 < 0 else A0\n"
                "if J < 0 or J >= len(L):\n    raise IndexError('pop index out of range')\n"
                "R = L[J]\nL = L[:J] + L[J + 1:]"),
    "index": (1, "R = -1\nfor K in range(len(L)):\n    if R < 0:\n        if L[K] == A0:\n"
                 "            R = K\n"
                 "if R < 0:\n    raise ValueError(f'{A0} is not in list')"),
    "count": (1, "R = 0\nfor E in L:\n    if E == A0:\n        R += 1"),
    "remove": (1, "R = -1\nfor K in range(len(L)):\n    if R < 0:\n        if L[K] == A0:\n"
                  "            R = K\n"
                  "if R < 0:\n    raise ValueError('list.remove(x): x not in list')\n"
                  "L = L[:R] + L[R + 1:]\nR = None"),
    # insertion sort: stable, as list.sort is (and stable for reverse=True too: `<`)
    "sort": (0, "for I in range(1, len(L)):\n    J = I\n"
                "    while J > 0 and L[J - 1] CMP L[J]:\n"
                "        L = L[:J - 1] + [L[J], L[J - 1]] + L[J + 1:]\n        J -= 1"),
}
_RETURNS = {"pop0", "pop1", "index", "count"}
_BY_VALUE = {"index", "count", "remove", "sort"}  # compare elements: not for tensors
METHODS = frozenset(("append", "extend", "insert", "clear", "reverse", "pop", "index", "count",
                     "remove", "sort"))

_ids = itertools.count()


def _where(node):
    """The receiver of a method call as an assignment target, or None when it is not one."""
    if isinstance(node, ast.Name):
        return ast.Name(node.id, ast.Store())
    if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Slice):
        return ast.Subscript(node.value, node.slice, ast.Store())
    if isinstance(node, ast.Attribute):  # `self.hist.append(v)`: the module frontend's hook
        return ast.Attribute(node.value, node.attr, ast.Store())
    return None


def list_method(st, bm, node):
    """Compile `recv.name(args)` for a list receiver; returns the call's value."""
    name = bm.name
    t = ft.base(bm.value.type)
    key = name
    if name == "pop":
        key = "pop1" if node.args else "pop0"
    if name in _BY_VALUE and isinstance(ft.base(t.elem), ir.TensorType):
        st.fail(f"list.{name}() on a list of tensors is not supported in scripted code "
                "(it compares tensors)", node)
    nargs, src = _TEMPLATES[key]
    if name == "sort":
        rev = next((k.value for k in node.keywords if k.arg == "reverse"), None)
        if node.args or any(k.arg not in ("reverse",) for k in node.keywords):
            st.fail("list.sort() in scripted code takes only reverse= (no key=)", node)
        if rev is not None and not (isinstance(rev, ast.Constant) and
                                    isinstance(rev.value, bool)):
            st.fail("list.sort(reverse=...) needs a constant True or False in scripted code",
                    node)
        src = src.replace("CMP", "<" if rev is not None and rev.value else ">")
    elif node.keywords:
        st.fail(f"list.{name}() takes no keyword arguments", node)
    elif len(node.args) != nargs:
        st.fail(f"list.{name}() takes {nargs} argument(s) ({len(node.args)} given)", node)
    target = _where(bm.node.value)
    if target is None:
        st.fail(f"list.{name}() is only supported on a variable or a subscript of one "
                "(`l.{name}(...)`, `d[k].{name}(...)`)", node)
    uid = next(_ids)
    names = {n: f"__jitorch_list{uid}_{n}" for n in ("L", "R", "J", "K", "E", "I",
                                                      "A0", "A1")}
    env = st.env
    env[names["L"]] = bm.value
    for i, a in enumerate(node.args):  # evaluated once, in order, after the receiver
        env[names[f"A{i}"]] = st.exprs.expr_value(a)
    tree = ast.parse(src)

    class Rename(ast.NodeTransformer):
        def visit_Name(self, n):
            return ast.copy_location(ast.Name(names.get(n.id, n.id), n.ctx), n)

    body = Rename().visit(tree).body
    for s in body:
        for sub in ast.walk(s):  # errors and raises point at the call
            ast.copy_location(sub, node)
            if hasattr(sub, "end_lineno"):
                sub.end_lineno, sub.end_col_offset = node.end_lineno, node.end_col_offset
    cur = st.cur
    for s in body:
        st.cur = s
        st.stmts.stmt(s)
    st.cur = cur
    new = env[names["L"]]
    if new.type != bm.value.type and isinstance(target, ast.Name):
        u = ft.unify(bm.value.type, new.type)
        new = st.exprs.coerce(new, u, node) if u is not None else new
    st.stmts.assign(ast.copy_location(target, bm.node.value), new)
    st.cur = cur
    return env[names["R"]] if key in _RETURNS else st.const(None)


def slice_assign(st, t: ast.Subscript, v) -> bool:
    """`l[a:b] = vs` for a list variable `l`: `l = l[:a] + vs + l[b:]`; False when `t` is not
    one (a tensor, or not a slice)."""
    if not isinstance(t.slice, ast.Slice) or not isinstance(t.value, ast.Name):
        return False
    base = st.env.get(t.value.id)
    if base is None or not isinstance(ft.base(base.type), ir.ListType):
        return False
    if t.slice.step is not None:
        st.fail("slice assignment with a step is not supported for lists in scripted code", t)
    if not isinstance(ft.base(v.type), ir.ListType):
        st.fail("can only assign a list to a slice of a list", t)
    uid = next(_ids)
    vname, lname = f"__jitorch_list{uid}_V", t.value.id
    st.env[vname] = v
    lo = t.slice.lower if t.slice.lower is not None else ast.Constant(0)
    parts = [ast.Subscript(ast.Name(lname, ast.Load()), ast.Slice(None, lo, None), ast.Load()),
             ast.Name(vname, ast.Load())]
    if t.slice.upper is not None:
        parts.append(ast.Subscript(ast.Name(lname, ast.Load()),
                                   ast.Slice(t.slice.upper, None, None), ast.Load()))
    expr = ast.BinOp(ast.BinOp(parts[0], ast.Add(), parts[1]), ast.Add(), parts[2]) \
        if len(parts) == 3 else ast.BinOp(parts[0], ast.Add(), parts[1])
    for sub in ast.walk(expr):
        ast.copy_location(sub, t)
    new = st.exprs.expr_value(expr)
    st.env[lname] = new
    return True
