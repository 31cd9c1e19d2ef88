"""Compile-time errors of the scripting frontend: one test per unsupported construct or
type/name error. Each checks the message, the reported file:line:col, the quoted source line
and that the caret sits under the offending construct."""
from __future__ import annotations

import inspect
from typing import List

import pytest

import jitorch
from jitorch.script.frontend import function as frontend
ScriptError = jitorch.jit.ScriptError


def e_try(x):
    try:
        x = x + 1
    except Exception:
        pass
    return x


def e_lambda(x):
    f = lambda y: y + 1  # noqa: E731
    return f(x)


G = 1


def e_global(x):
    global G
    return x


def e_nonlocal():
    z = 1

    def inner(x):
        nonlocal z
        return x
    return inner


def e_varargs(x, *rest):
    return x


def e_kwargs(x, **kw):
    return x


def e_yield(x):
    yield x


def e_with(x):
    with open("f") as fh:
        return x


def e_del(x):
    y = x
    del y
    return x


def e_starred(x, lst: List[int]):
    return f_two(*lst)


def f_two(a: int, b: int):
    return a + b


def e_set(x):
    s = {1, 2}
    return x


def e_genexp(x, lst: List[int]):
    return sum(v for v in lst)


def e_undefined(x):
    return x + not_defined_anywhere


def e_branch_types(x, n: int):
    if n > 0:
        y = x
    else:
        y = "text"
    return y


def e_return_in_loop(x, n: int):
    for i in range(n):
        return x
    return x


def e_bad_annotation(x: "NoSuchType"):  # noqa: F821
    return x


def e_range_step(x, k: int):
    for i in range(0, 10, k):
        x = x + i
    return x


def e_nested_def(x):
    def helper(y):
        return y
    return helper(x)


def e_loop_type_change(n: int):
    v = 0
    for i in range(n):
        v = 0.5
    return v


def e_unknown_method(x):
    return x.no_such_method_here(1)


def e_bad_op_args(x):
    return x.sum(1, 2, 3, 4, 5)


def e_recursive(x, n: int):
    if n > 0:
        return e_recursive(x, n - 1)
    return x


def e_import(x):
    import os
    return x


async def e_async(x):
    return x


def e_tuple_assign_item(x):
    p = (1, 2)
    p[0] = 3
    return x


def e_list_of_mixed(x):
    return [1, "a"]


CASES = [
    (e_try, "try blocks are not supported", "try:"),
    (e_lambda, "lambda expressions are not supported", "lambda y: y + 1"),
    (e_global, "global statements are not supported", "global G"),
    (e_varargs, "*args and **kwargs are not supported", "rest"),
    (e_kwargs, "*args and **kwargs are not supported", "kw)"),
    (e_yield, "generators (yield) are not supported", "yield x"),
    (e_with, "with statements are not supported", 'with open("f") as fh:'),
    (e_del, "del statements are not supported", "del y"),
    (e_starred, "*args in calls are not supported", "*lst"),
    (e_set, "set literals are not supported", "{1, 2}"),
    (e_genexp, "generator expressions are not supported", "(v for v in lst)"),
    (e_undefined, "undefined value 'not_defined_anywhere'", "not_defined_anywhere"),
    (e_branch_types, "variable 'y' has type Tensor in the true branch and str", "if n > 0:"),

    (e_bad_annotation, "cannot resolve the type annotation", '"NoSuchType"'),
    (e_range_step, "range() step must be a constant", "k):"),
    (e_nested_def, "nested function definitions are not supported", "def helper(y):"),
    (e_loop_type_change, "variable 'v' changes type in the loop", "for i in range(n):"),
    (e_unknown_method, "Tensor has no method 'no_such_method_here'",
     "x.no_such_method_here(1)"),
    (e_bad_op_args, "sum(): too many positional arguments", "x.sum(1, 2, 3, 4, 5)"),
    (e_import, "import statements are not supported", "import os"),
    (e_async, "async functions are not supported", "async def e_async(x):"),
    (e_tuple_assign_item, "tuples are immutable", "p[0]"),
    (e_list_of_mixed, "list elements have different types", '[1, "a"]'),
]


@pytest.mark.parametrize("fn, message, snippet", CASES, ids=[c[0].__name__ for c in CASES])
def test_compile_error(fn, message, snippet):
    with pytest.raises(ScriptError) as info:
        frontend.compile_function(fn)
    check_error(info.value, fn, message, snippet)


def check_error(err, fn, message, snippet):
    text = str(err)
    assert message in text, text
    lines, first = inspect.getsourcelines(fn)
    hits = [i for i, ln in enumerate(lines) if snippet in ln]
    assert hits, snippet
    src = lines[hits[0]].rstrip("\n")
    lineno = first + hits[0]
    col = src.index(snippet)
    assert f"test_script_errors.py:{lineno}:{col}" in text, text
    out = text.splitlines()
    k = next(i for i, ln in enumerate(out) if ln.strip() == src.strip() and ln.endswith(src))
    caret = out[k + 1]
    prefix = len(out[k]) - len(src)
    assert caret[prefix + col] == "^", text
    assert caret[prefix:prefix + col].strip() == "", text


def test_nonlocal_in_nested_function():
    inner = e_nonlocal()
    with pytest.raises(ScriptError) as info:
        frontend.compile_function(inner)
    check_error(info.value, inner, "nonlocal statements are not supported", "nonlocal z")


def test_recursion_is_an_error():
    with pytest.raises(ScriptError, match="recursive call"):
        frontend.compile_function(e_recursive)


def test_errors_are_reexported_by_jit():
    assert issubclass(ScriptError, RuntimeError)
    sc = getattr(jitorch.jit, "ScriptError", ScriptError)
    assert sc is ScriptError


def test_script_raises_at_decoration_time():
    with pytest.raises(ScriptError, match="try blocks"):
        jitorch.jit.script(e_try)


def e_partial(x, n: int):
    if n > 0:
        result = x
    return result * 2


def test_variable_defined_in_one_branch():
    with pytest.raises(ScriptError) as info:
        frontend.compile_function(e_partial)
    check_error(info.value, e_partial, "'result' is not defined on every path through the if",
                "result * 2")


def e_callee(x):
    return x.no_such_method_in_callee()


def e_caller(x):
    return e_callee(x) + 1


def test_error_in_a_called_function_names_the_callee_line():
    with pytest.raises(ScriptError) as info:
        frontend.compile_function(e_caller)
    check_error(info.value, e_callee, "Tensor has no method 'no_such_method_in_callee'",
                "x.no_such_method_in_callee()")
