"""Each rebinding of a straight-line variable as a variable of its own: the lean compiler's
stand-in for Numba's SSA renaming, where the typer (typer.py) would need it.

The typer gives a variable one type, the unification of everything assigned to it. A generated
function may bind one name to values of different types in turn (lower_conv.py's
`cv1 = np.ascontiguousarray(x)` then `cv1 = cv1.reshape((1, ...))`: a 3-d, then a 4-d array),
which no unification holds; Numba's SSA pass gives each definition a name of its own. Here the
same, for the case that needs no phi: a name whose every definition is a plain assignment at the
function's top level (never inside a loop or branch, never augmented, never a loop target), so
that each use sees exactly one definition, the last one before it. `rename(fn)` gives the second
and later definitions fresh names and points every later use at them; any other function is
returned as it is.
"""
from __future__ import annotations

import ast
import copy

__all__ = ["rename"]

_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
           ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def rename(fn: ast.FunctionDef) -> ast.FunctionDef:
    """`fn`, or a copy of it whose top-level rebindings are fresh variables."""
    if any(isinstance(n, _SCOPES) for stmt in fn.body for n in ast.walk(stmt)):
        return fn  # (a nested scope: its names are not this function's; lean declines it)
    rebound = _rebound(fn)
    if not rebound:
        return fn
    fn = copy.deepcopy(fn)
    taken = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)} | \
        {a.arg for a in fn.args.args}
    current: dict = {}  # name -> the name of its definition in force
    for stmt in fn.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        stores = {id(n) for t in targets for n in _target_names(t)}
        for node in ast.walk(stmt):  # uses (and subscript targets) see the definitions so far
            if isinstance(node, ast.Name) and id(node) not in stores and node.id in current:
                node.id = current[node.id]
        for t in targets:
            for node in _target_names(t):
                if node.id not in rebound:
                    continue
                if node.id in current:  # a rebinding: a variable of its own
                    k = 1
                    while f"{node.id}_{k}" in taken:
                        k += 1
                    fresh = f"{node.id}_{k}"
                    taken.add(fresh)
                    current[node.id] = fresh
                    node.id = fresh
                else:
                    current[node.id] = node.id
    return fn


def _target_names(t) -> list:
    """The Name nodes an assignment target binds (a name, or a tuple or list of names)."""
    if isinstance(t, ast.Name):
        return [t]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _target_names(e)]
    return []


def _rebound(fn: ast.FunctionDef) -> set:
    """The names bound more than once, each time by a top-level plain assignment."""
    top: dict = {}
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                for n in _target_names(t):
                    top[id(n)] = n.id
    count: dict = {}
    other: set = {a.arg for a in fn.args.args}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            if id(n) in top:
                count[n.id] = count.get(n.id, 0) + 1
            else:
                other.add(n.id)  # a loop target, an augmented one, one inside a block, ...
    return {name for name, c in count.items() if c > 1 and name not in other}
