"""`with jitorch.autocast("cpu", ...):` in scripted code: an autocast region.

Before anything else reads the function's AST, each such `with` becomes its body between two
calls of `@jit.ignore`d functions (`_autocast.script_enter(<the autocast arguments>)` and
`_autocast.script_exit()`), which the call builder compiles as `prim::PythonOp`s. A graph that
holds a PythonOp runs in the interpreter, where the ops of the region go through eager
dispatch and get autocast's casts (compiled programs do not lower bfloat16 yet). A region left
by an exception is closed by the interpreter (`_autocast.unwind_script_regions`). `return`,
`break` and `continue` inside a region are refused: they would leave it without its exit.
"""
from __future__ import annotations

import ast

ENTER, EXIT = "__jitorch_autocast_enter", "__jitorch_autocast_exit"


def rewrite_regions(fdef: ast.FunctionDef, scope, fail) -> ast.FunctionDef:
    from ... import _autocast
    from ...amp.autocast_mode import autocast
    found = []

    def is_region(item: ast.withitem) -> bool:
        call = item.context_expr
        if not isinstance(call, ast.Call):
            return False
        try:
            f = scope.eval(call.func)
        except Exception:  # not a name the scope resolves: not ours
            return False
        return isinstance(f, type) and issubclass(f, autocast)

    class Rewrite(ast.NodeTransformer):
        def visit_FunctionDef(self, node):
            return node if node is not fdef else self.generic_visit(node)

        def visit_With(self, node):
            node = self.generic_visit(node)
            if not any(is_region(it) for it in node.items):
                return node
            if len(node.items) != 1:
                fail("autocast() cannot share a with statement with another context manager "
                     "in scripted code", node)
            item = node.items[0]
            if item.optional_vars is not None:
                fail("'with autocast(...) as name:' is not supported in scripted code (drop "
                     "the 'as' target)", item.optional_vars)
            for sub in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                if isinstance(sub, (ast.Return, ast.Break, ast.Continue)):
                    fail(f"'{type(sub).__name__.lower()}' inside a scripted autocast region is "
                         "not supported (move it after the with statement)", sub)
            call = item.context_expr
            cls = scope.eval(call.func)
            args, kws = list(call.args), list(call.keywords)
            if cls is not autocast:  # jitorch.cpu.amp.autocast(enabled, dtype, cache_enabled)
                args = [ast.Constant("cpu")]
                kws += [ast.keyword(arg=k, value=a) for k, a in
                        zip(("enabled", "dtype", "cache_enabled"), call.args)]
            found.append(node)
            enter = ast.Expr(ast.Call(ast.Name(ENTER, ast.Load()), args, kws))
            leave = ast.Expr(ast.Call(ast.Name(EXIT, ast.Load()), [], []))
            out = [enter] + node.body + [leave]
            for s in out:
                ast.copy_location(s, node)
                ast.fix_missing_locations(s)
            return out

    fdef = Rewrite().visit(fdef)
    if found:
        scope.locals[ENTER] = _autocast.script_enter
        scope.locals[EXIT] = _autocast.script_exit
    return fdef
