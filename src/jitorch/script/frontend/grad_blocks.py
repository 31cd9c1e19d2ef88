"""`with jitorch.no_grad():` (and `enable_grad()`, `set_grad_enabled(b)`, `inference_mode()`) in
scripted code, as TorchScript compiles them.

A compiled program has no grad mode of its own: gradients come from the autodiff pass, which
differentiates the values that flow from inputs requiring grad. So the frontend splices such a
`with` away before anything else reads the function's AST (as `markers.py` does for
`record_function`) and, for a block that disables grad, passes every name the block assigns (at
its end: `NO_GRAD("name")`, which rebinds the name when it is defined there; a loop's target or a
name assigned on one path may not be) and every value it returns through `NO_GRAD(...)`, which
the call builder compiles to the `_no_grad_value` op (registry: nondiff, elementwise): those
values carry no gradient history, which is what the block means to the code after it. A block
that enables grad changes nothing (the caller's mode applies, as it does in TorchScript).

In-place writes follow eager's rules for a block that disables grad: every AST node of such a
block is marked (`grad_off(node)`), and the write builder (frontend/alias.py) compiles a write
marked so as a write that records no history: allowed on a leaf that requires grad, the tensor
keeping its autograd identity (graph.no_grad_writes lists the arguments written only so).
"""
from __future__ import annotations

import ast

NAME = "__jitorch_no_grad_value__"  # the marker's name in the function's scope
_OFF = "_jitorch_grad_off"  # the attribute marking the AST nodes of a block that disables grad


def grad_off(node) -> bool:
    """Was `node` written inside a block that disables grad (and no enabling block in it)?"""
    return getattr(node, _OFF, False)


def no_grad_value(x):
    """The marker (compiled by CallBuilder.call_python; eager: detach a tensor)."""
    return x.detach() if hasattr(x, "detach") else x


def _mode(call, scope):
    """None when `call` is not a grad-mode context manager, else True/False (grad enabled)."""
    from ... import autograd
    from ...autograd import grad_mode
    from .markers import _resolve
    if not isinstance(call, ast.Call):
        return None
    obj = _resolve(call.func, scope)
    if obj is None:
        return None
    if obj in (grad_mode.no_grad, getattr(autograd, "no_grad", None)):
        return False
    if obj in (grad_mode.enable_grad, getattr(autograd, "enable_grad", None)):
        return True
    names = {"set_grad_enabled": None, "inference_mode": True}
    name = getattr(obj, "__name__", "")
    if name in names and getattr(obj, "__module__", "").startswith("jitorch"):
        arg = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg in ("mode", "enabled")), None)
        if arg is None and names[name] is None:
            return None
        val = True if arg is None else (arg.value if isinstance(arg, ast.Constant) else arg)
        if not isinstance(val, bool):
            return "dynamic"
        return (not val) if name == "inference_mode" else val
    return None


def _assigned(body) -> list:
    """Names the statements assign (in order, once each), nested blocks included."""
    out: list = []

    class Find(ast.NodeVisitor):
        def visit_Name(self, node):
            if isinstance(node.ctx, ast.Store) and node.id not in out:
                out.append(node.id)

        def visit_FunctionDef(self, node):
            pass

    for s in body:
        Find().visit(s)
    return out


def _wrap(e):
    call = ast.Call(ast.Name(NAME, ast.Load()), [e], [])
    return ast.copy_location(call, e)


def strip_grad_blocks(fdef, scope, fail):
    """-> fdef with grad-mode `with` blocks spliced away (see the module docstring)."""
    used = [False]

    class Splice(ast.NodeTransformer):
        disabled = 0

        def visit_With(self, node):
            modes = [_mode(it.context_expr, scope) for it in node.items]
            if all(m is None for m in modes):
                return self.generic_visit(node)
            if any(m is None for m in modes):
                fail("a grad-mode context manager cannot share a with statement with another "
                     "context manager in scripted code", node)
            if "dynamic" in modes:
                fail("set_grad_enabled() in scripted code needs a constant True or False",
                     node)
            for it in node.items:
                if it.optional_vars is not None:
                    fail("'with no_grad() as name:' is not supported in scripted code (drop "
                         "the 'as' target)", it.optional_vars)
            off = not modes[-1]  # the innermost manager decides
            self.disabled += off
            for s in node.body:  # (an inner block visited below marks its own nodes again)
                for e in ast.walk(s):
                    setattr(e, _OFF, off)
            body = []
            for s in node.body:
                r = self.visit(s)
                body.extend(r if isinstance(r, list) else [r])
            self.disabled -= off
            if off:
                used[0] = True
                for name in _assigned(node.body):
                    a = ast.Expr(_wrap(ast.Constant(name)))
                    body.append(ast.copy_location(a, node.body[-1]))
            return body

        def visit_Return(self, node):
            if self.disabled and node.value is not None:
                if isinstance(node.value, ast.Tuple):
                    node.value.elts = [_wrap(e) for e in node.value.elts]
                else:
                    node.value = _wrap(node.value)
            return node

        def visit_FunctionDef(self, node):  # nested definitions are refused later
            return node if node is not fdef else self.generic_visit(node)

    fdef = Splice().visit(fdef)
    if used[0]:
        scope.locals[NAME] = no_grad_value
    return ast.fix_missing_locations(fdef)
