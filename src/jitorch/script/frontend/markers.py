"""`with jitorch.profiler.record_function("name"):` in scripted code: a profiler marker.

A compiled program runs without the GIL and records no ranges of its own, so the frontend
compiles such a `with` as if it were not there (its body is spliced into the enclosing
statements before anything else reads the function's AST) and lists the names it met; the
runtime records them as ranges inside each profiled call (`jitorch/profiler/_collector.py`).
A `with` of anything else is left alone (the statement compiler says what it supports).
"""
from __future__ import annotations

import ast


def strip_markers(fdef: ast.FunctionDef, scope, fail) -> tuple[ast.FunctionDef, tuple]:
    """-> (fdef with record_function regions spliced away, their names in source order)."""
    from ...profiler.record_function import record_function
    names: list = []

    def marker(item: ast.withitem):
        call = item.context_expr
        if not isinstance(call, ast.Call) or _resolve(call.func, scope) is not record_function:
            return None
        if item.optional_vars is not None:
            fail("'with record_function(...) as name:' is not supported in scripted code "
                 "(drop the 'as' target)", item.optional_vars)
        name = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg == "name"), None)
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            fail("record_function() in scripted code needs a string literal name", call)
        return name.value

    class Splice(ast.NodeTransformer):
        def visit_With(self, node):
            found = [marker(it) for it in node.items]
            if not any(m is not None for m in found):
                return self.generic_visit(node)
            if not all(m is not None for m in found):
                fail("record_function() cannot share a with statement with another context "
                     "manager in scripted code", node)
            names.extend(found)
            body = []
            for s in node.body:
                r = self.visit(s)
                body.extend(r if isinstance(r, list) else [r])
            return body

        def visit_FunctionDef(self, node):  # nested definitions are refused later
            return node if node is not fdef else self.generic_visit(node)

    fdef = Splice().visit(fdef)
    return fdef, tuple(names)


def _resolve(node, scope):
    """The object a dotted name refers to in the function's scope (None when it is not one)."""
    if isinstance(node, ast.Name):
        obj = scope.lookup(node.id)
        return None if obj is type(scope)._missing else obj
    if isinstance(node, ast.Attribute):
        base = _resolve(node.value, scope)
        return getattr(base, node.attr, None) if base is not None else None
    return None
