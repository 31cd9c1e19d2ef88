"""The frontends agree with eager Python / TorchScript where they used to differ silently.

- unpacking (`a, b = x`): a tensor's first dim, a run-time list's length and a shape's rank are
  checked at run time, in compiled code and in the interpreter, with Python's errors;
- scalar ops: a table of every numeric scalar op the frontend emits, compiled vs Python, over
  negative, zero and non-finite operands (values, result types and exception types);
- `for` targets that rebind a variable (an argument, an outer loop's target) keep Python's
  value after the loop;
- a tuple returned from an `if` keeps its gradients.
Tracing through scripted code: tests/test_trace_script_calls.py.
"""
from __future__ import annotations

import importlib.util
import math
import sys
from typing import List, Tuple

import numpy as np
import pytest

import jitorch as t
from jitorch import jit
from jitorch.script.frontend import function as frontend
from jitorch.script.ir import interpreter
from jitorch.script.ir.errors import ScriptError


def interp(fn, *args):
    """Run fn's frontend graph in the interpreter (no compile)."""
    res = frontend.compile_function(fn)
    out = interpreter.run_graph(res.graph, list(args))
    out = out[:len(out) - len(getattr(res.graph, "mutated_inputs", ()))]
    return tuple(out) if res.returns_tuple else out[0]


def compiled(sf):
    """sf's last call ran a compiled program (not the interpreter)."""
    code = sf.code
    assert "runs interpreted" not in code.splitlines()[0], code.splitlines()[0]
    return sf


def outcome(f, *args):
    """('ok', value) or ('raise', exception)."""
    try:
        return "ok", f(*args)
    except Exception as e:  # noqa: BLE001 (compared below)
        return "raise", e


def same_value(a, b) -> bool:
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same_value, a, b))
    if isinstance(a, t.Tensor):
        return isinstance(b, t.Tensor) and a.dtype == b.dtype and \
            np.allclose(a.numpy(), b.numpy(), equal_nan=True)
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


def agree(want, got) -> bool:
    if want[0] == "raise":
        return got[0] == "raise" and isinstance(got[1], type(want[1]))
    return got[0] == "ok" and same_value(want[1], got[1])


# --- unpacking ------------------------------------------------------------------------------------
def unpack2(x):
    a, b = x
    return a + b


def unpack_rows(x):
    s = x[0, 0] * 0
    for a, b in x:  # each row of x unpacks into two
        s = s + a * b
    return s


def unpack_nested(x, y):
    (a, b), c = x, y
    return a + b + c


def unpack_list(xs: List[t.Tensor]):
    a, b = xs
    return a * b


def unpack_shape(x):
    h, w = x.shape
    return x.sum() * h + w


@pytest.mark.parametrize("fn,args", [
    (unpack2, (t.ones(4, 3),)), (unpack2, (t.ones(1, 3),)), (unpack2, (t.ones(2, 3),)),
    (unpack2, (t.tensor(3.0),)), (unpack2, (t.ones(0, 3),)),
    (unpack_rows, (t.ones(3, 4),)), (unpack_rows, (t.ones(3, 2),)),
    (unpack_nested, (t.ones(3, 2), t.ones(2))), (unpack_nested, (t.ones(2, 2), t.ones(2))),
    (unpack_list, ([t.ones(2)] * 3,)), (unpack_list, ([t.ones(2)],)),
    (unpack_list, ([t.ones(2), t.ones(2) * 3],)),
    (unpack_shape, (t.ones(2, 3, 4),)), (unpack_shape, (t.ones(2, 3),)),
])
def test_unpack_checks_the_count_at_run_time(fn, args):
    want = outcome(fn, *args)
    for got in (outcome(interp, fn, *args), outcome(jit.script(fn), *args)):
        assert agree(want, got), (want, got)
        if want[0] == "raise":  # Python's message
            assert str(want[1]).split(" (")[0] in str(got[1]), (want[1], got[1])


@pytest.mark.parametrize("fn,good,bad", [
    (unpack2, (t.ones(2, 3),), (t.ones(5, 3),)),
    (unpack_rows, (t.ones(3, 2),), (t.ones(3, 3),)),
    (unpack_list, ([t.ones(2)] * 2,), ([t.ones(2)] * 3,)),
    (unpack_shape, (t.ones(2, 3),), None),
])
def test_unpack_checks_live_in_the_compiled_program(fn, good, bad):
    sf = jit.script(fn)
    assert same_value(sf(*good), fn(*good))
    compiled(sf)
    if bad is not None:
        with pytest.raises(ValueError, match="values to unpack"):
            sf(*bad)


def unpack_grad(x, w):
    a, b = x
    return ((a * w).tanh() * b).sum()


def unpack_rows_grad(x, w):
    s = w.sum() * 0
    for a, b in x:
        s = s + (a * w[0]).tanh() * b
    return s


@pytest.mark.parametrize("fn,shapes", [
    (unpack_grad, [((2, 5), (5,)), ((2, 7), (7,))]),
    (unpack_rows_grad, [((3, 2), (4,)), ((5, 2), (6,))]),
])
def test_unpack_check_keeps_gradients_and_one_backward_for_all_sizes(fn, shapes):
    # the check pins one dim; the backward must still serve every size (one per rank)
    sf = jit.script(fn)
    rng = np.random.default_rng(0)
    for sx, sw in shapes:
        x0, w0 = rng.standard_normal(sx, np.float32), rng.standard_normal(sw, np.float32)
        grads = []
        for run in (fn, sf):
            x, w = t.tensor(x0, requires_grad=True), t.tensor(w0, requires_grad=True)
            run(x, w).backward()
            grads.append((x.grad.numpy(), w.grad.numpy()))
        for a, b in zip(*grads):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert sf.code.count("# backward for shapes") == 1, sf.code.splitlines()[:3]
    with pytest.raises(ValueError, match="values to unpack"):
        sf(t.ones(3, 4, requires_grad=True), t.ones(4))


def test_starred_unpacking_is_a_compile_time_error():
    def f(x):
        a, *b = x
        return a

    with pytest.raises(ScriptError, match="starred"):
        jit.script(f)


def test_scripted_raise_is_the_builtin_type_in_both_tiers():
    def f(x, n: int):
        if n > 2:
            raise ValueError("n too large")
        return x + n

    for run in (lambda *a: interp(f, *a), jit.script(f)):
        with pytest.raises(ValueError, match="n too large"):
            run(t.ones(2), 3)
        with pytest.raises(jit.Error):
            run(t.ones(2), 3)


# --- scalar ops: compiled vs Python -----------------------------------------------------------
# Every numeric scalar op the frontend emits, on every operand type pair. Ops that never raise
# share one function per type pair (a tuple of results); the others get one function each, so
# one raising op never hides another's result. Values include negatives, zeros, inf and nan.
_SAFE = {"add": "a + b", "sub": "a - b", "mul": "a * b", "lt": "a < b", "le": "a <= b",
         "eq": "a == b", "ne": "a != b", "min": "min(a, b)", "max": "max(a, b)",
         "and": "a and b"}
_RAISING = {"truediv": "a / b", "floordiv": "a // b", "mod": "a % b", "pow": "a ** b"}
_PAIRS = [("int", "int"), ("float", "float"), ("int", "float"), ("float", "int"),
          ("bool", "bool"), ("bool", "int")]
_EXTRA = {"divmod_int_int": ("int", "int", "divmod(a, b)"),
          "divmod_float_float": ("float", "float", "divmod(a, b)"),
          "pow_builtin_int_int": ("int", "int", "pow(a, b)"),
          "bitwise_int_int": ("int", "int", "(a & b, a | b, a ^ b)"),
          "bitwise_bool_bool": ("bool", "bool", "(a & b, a | b, a ^ b)"),
          "bitwise_bool_int": ("bool", "int", "(a & b, a | b, a ^ b)"),
          "lshift_int_int": ("int", "int", "a << b"), "rshift_int_int": ("int", "int", "a >> b"),
          "shift_bool_int": ("bool", "int", "a << b")}
_COUNTS = {"lshift_int_int": [-1, 0, 1, 3, 60, 64], "rshift_int_int": [-1, 0, 1, 3, 63, 64],
           "shift_bool_int": [-1, 0, 1, 62, 64]}  # shift counts (no int64 overflow: it wraps)
_UNARY_SAFE = {"neg": "-a", "abs": "abs(a)", "float": "float(a)", "bool": "bool(a)",
               "not": "not a"}
_UNARY_INTS = {"invert": "~a"}
_UNARY = {"int_float": ("float", "int(a)"), "int_int": ("int", "int(a)"),
          "pow_neg_const_int": ("int", "a ** -2"), "pow_neg_const_bool": ("bool", "a ** -2"),
          "pow_neg_const_float": ("float", "a ** -2"), "rpow_neg_int": ("int", "2 ** -a"),
          "rpow_neg_bool": ("bool", "2 ** -a")}
_MATH = ["exp", "expm1", "sin", "cos", "tan", "atan", "sinh", "cosh", "tanh", "asinh", "floor",
         "ceil", "trunc", "fabs", "isnan", "isinf", "erf", "erfc", "degrees", "sqrt", "log",
         "log2", "log10", "log1p"]
_MATH2 = ["atan2", "copysign", "hypot", "log"]
_VALUES = {"int": [-7, -1, 0, 1, 3], "bool": [False, True],
           "float": [-2.5, -0.0, 0.0, 0.5, 3.0, math.inf, -math.inf, math.nan]}
_BIG = [-1e308, -1.0, 0.0, 1.0, 710.0, 1e308, math.inf, math.nan]  # math: domain and range


def _selector(name, params, exprs) -> str:
    """One function computing exprs[k] (each converted to float: one result type)."""
    body = "".join(f"    if k == {i}:\n        return float({e})\n" for i, e in enumerate(exprs))
    return f"def {name}({params}, k: int) -> float:\n{body}    return 0.0\n"


def _module(tmp_path_factory):
    src = ["import math", ""]
    for ta, tb in _PAIRS:
        src.append(f"def safe_{ta}_{tb}(a: {ta}, b: {tb}):\n"
                   f"    return ({', '.join(_SAFE.values())})\n")
        for name, e in _RAISING.items():
            src.append(f"def {name}_{ta}_{tb}(a: {ta}, b: {tb}):\n    return {e}\n")
    for name, (ta, tb, e) in _EXTRA.items():
        src.append(f"def {name}(a: {ta}, b: {tb}):\n    return {e}\n")
    for ta in _VALUES:
        exprs = list(_UNARY_SAFE.values()) + (list(_UNARY_INTS.values()) if ta != "float" else [])
        src.append(f"def unary_{ta}(a: {ta}):\n    return ({', '.join(exprs)})\n")
    for name, (ta, e) in _UNARY.items():
        src.append(f"def {name}(a: {ta}):\n    return {e}\n")
    src.append(_selector("math1", "a: float", [f"math.{f}(a)" for f in _MATH]))
    src.append(_selector("math2", "a: float, b: float", [f"math.{f}(a, b)" for f in _MATH2]))
    path = tmp_path_factory.mktemp("scalar_ops") / "scalar_ops_agree.py"
    path.write_text("\n".join(src))
    spec = importlib.util.spec_from_file_location("scalar_ops_agree", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["scalar_ops_agree"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    return _module(tmp_path_factory)


def _cases():
    """(function name, op name of each result, argument tuples)."""
    for ta, tb in _PAIRS:
        pairs = [(a, b) for a in _VALUES[ta] for b in _VALUES[tb]]
        yield f"safe_{ta}_{tb}", [f"{k}_{ta}_{tb}" for k in _SAFE], pairs
        for name in _RAISING:
            yield f"{name}_{ta}_{tb}", None, pairs
    for name, (ta, tb, _) in _EXTRA.items():
        yield name, None, [(a, b) for a in _VALUES[ta] for b in _COUNTS.get(name, _VALUES[tb])]
    for ta in _VALUES:
        names = list(_UNARY_SAFE) + (list(_UNARY_INTS) if ta != "float" else [])
        yield f"unary_{ta}", names, [(a,) for a in _VALUES[ta]]
    for name, (ta, _) in _UNARY.items():
        yield name, None, [(a,) for a in _VALUES[ta]]
    yield "math1", None, [(a, k) for a in _BIG for k in range(len(_MATH))]
    yield "math2", None, [(a, b, k) for a in _BIG[::2] for b in _BIG[1::2]
                          for k in range(len(_MATH2))]


def _typed_like_torchscript(op, want, got) -> bool:
    """Where a static type cannot follow Python's operand objects, TorchScript's rule:
    min/max of operands of two types give the promoted type (Python returns whichever operand
    wins: min(-7, 2.5) is the int -7), and `a and b` is the bool of Python's result."""
    kind, *types = op.split("_")
    if kind in ("min", "max") and len(types) == 2 and types[0] != types[1]:
        return type(got) is (float if "float" in types else int) and \
            (got == want or math.isnan(got) and math.isnan(want))
    if kind == "and":
        return type(got) is bool and got == bool(want)
    return False


def _agree_elems(names, want, got) -> bool:
    if names is None or want[0] != "ok" or got[0] != "ok":
        return agree(want, got)
    return len(want[1]) == len(got[1]) and all(
        same_value(w, g) or _typed_like_torchscript(op, w, g)
        for op, w, g in zip(names, want[1], got[1]))


@pytest.mark.parametrize("name,names,cases", list(_cases()), ids=[c[0] for c in _cases()])
def test_scalar_op_compiled_agrees_with_python(ops, name, names, cases):
    py = getattr(ops, name)
    sf = jit.script(py)
    bad = []
    for args in cases:
        want, got = outcome(py, *args), outcome(sf, *args)
        if not _agree_elems(names, want, got):
            bad.append((args, want, got))
        if got[0] == "ok":
            compiled(sf)  # the guards hand only the odd operands to the interpreter
    assert not bad, bad


def test_int_power_types_follow_the_exponent():
    def const_neg(a: int):
        return a ** -1

    def const_pos(a: int):
        return a ** 2

    def runtime(a: int, b: int):
        return a ** b

    assert jit.script(const_neg)(4) == 0.25 and interp(const_neg, 4) == 0.25
    out = frontend.compile_function(const_neg).graph.outputs[0]
    assert str(out.type) == "float"
    r = jit.script(const_pos)(3)
    assert r == 9 and type(r) is int
    f = jit.script(runtime)
    assert f(2, 3) == 8 and type(f(2, 3)) is int
    assert f(4, -1) == 0.25 and interp(runtime, 4, -1) == 0.25  # Python's float
    with pytest.raises(ZeroDivisionError):
        f(0, -1)

    def literal():
        return 4 ** -1

    assert jit.script(literal)() == 0.25


def pow_after_write(x, a: int, b: int):
    x.add_(1.0)
    return a ** b


def pow_after_list_write(xs: List[t.Tensor], a: int, b: int):
    for i in range(len(xs)):
        xs[i].add_(1.0)
    return a ** b


def test_handing_a_call_to_the_interpreter_writes_arguments_once():
    sf = jit.script(pow_after_write)
    x = t.zeros(2)
    assert sf(x, 2, 3) == 8
    compiled(sf)
    assert sf(x, 4, -1) == 0.25  # the interpreter's float, the write made once
    np.testing.assert_array_equal(x.numpy(), [2.0, 2.0])
    # a program writing its list arguments in place cannot run the call again: it raises
    sl = jit.script(pow_after_list_write)
    xs = [t.zeros(2), t.zeros(2)]
    assert sl(xs, 2, 3) == 8
    compiled(sl)
    with pytest.raises(RuntimeError, match="int \\*\\* negative int"):
        sl(xs, 4, -1)


def test_int_of_a_float_tensor_element_agrees():
    def f(x):
        return int(x)

    sf = jit.script(f)
    assert sf(t.tensor(-2.5)) == -2
    compiled(sf)
    assert sf(t.tensor(1e30)) == int(t.tensor(1e30))  # a Python int beyond int64
    with pytest.raises(ValueError):
        sf(t.tensor(math.nan))
    with pytest.raises(OverflowError):
        sf(t.tensor(math.inf))


@pytest.mark.parametrize("src", ["a << b", "a & b", "a ^ b", "~a"])
def test_bitwise_ops_on_floats_are_compile_time_errors(tmp_path, src):
    path = tmp_path / "bitwise_float_mod.py"
    path.write_text(f"def f(a: float, b: int):\n    return {src}\n")
    spec = importlib.util.spec_from_file_location("bitwise_float_mod", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(ScriptError, match="operand type"):
        jit.script(mod.f)


# --- for targets that rebind a variable -------------------------------------------------------
def loop_arg(x, i: int):
    for i in range(3):
        x = x + i
    return x + i


def loop_zero_trips(x, i: int):
    for i in range(0):
        x = x + i
    return x + i


def loop_nested(x, i: int, j: int):
    for i in range(2):
        for j in range(3):
            x = x + j
    return x + i * 10 + j * 100


def loop_inner_target(x, i: int):
    for _ in range(2):
        for i in range(3):
            x = x + 1
    return x + i


def loop_enumerate(x, i: int):
    for i, v in enumerate([1, 2, 3]):
        x = x + v
    return x * i


def loop_list(x, v: int, xs: List[int]):
    for v in xs:
        x = x + v
    return x * v


def loop_tensor_rows(x, r):
    for r in x:
        x = x + r
    return x + r


def while_arg(x, n: int):
    while n > 0:
        n = n - 1
        x = x + n
    return x + n


def comprehension_scope(x, i: float):
    ys = [i * 2 for i in range(3)]
    return x * i + ys[2]


@pytest.mark.parametrize("fn,args", [
    (loop_arg, (t.zeros(2), 7)), (loop_zero_trips, (t.zeros(2), 7)),
    (loop_nested, (t.zeros(2), 7, 8)), (loop_inner_target, (t.zeros(2), 9)),
    (loop_enumerate, (t.zeros(2), 9)), (loop_list, (t.zeros(2), 5, [4, 6])),
    (loop_list, (t.zeros(2), 5, [])), (loop_tensor_rows, (t.ones(3, 2), t.zeros(2))),
    (while_arg, (t.zeros(2), 3)), (comprehension_scope, (t.ones(2), 1.5)),
])
def test_loop_target_rebinding_a_variable(fn, args):
    want = fn(*args)
    assert same_value(interp(fn, *args), want)
    assert same_value(jit.script(fn)(*args), want)


def test_loop_target_changing_a_variables_type_is_an_error():
    def f(x, xs: List[int]):
        for x in xs:
            pass
        return x

    with pytest.raises(ScriptError, match="changes type"):
        jit.script(f)


# --- a tuple returned from an if, under autograd ----------------------------------------------
def tuple_from_if(x) -> Tuple[t.Tensor, t.Tensor]:
    y = x * 2
    if y.sum() > 0:
        return y.relu(), y
    return y, y * 3


def tuple_var_from_if(x):
    y = x * 2
    if y.sum() > 0:
        st = (y.relu(), y)
    else:
        st = (y, y * 3)
    return st[0] + st[1]


@pytest.mark.parametrize("fn", [tuple_from_if, tuple_var_from_if])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_tuple_valued_if_keeps_gradients(fn, sign):
    x0 = np.array([[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], np.float32) * sign
    sf = jit.script(fn)
    grads = []
    for run in (fn, sf):
        x = t.tensor(x0, requires_grad=True)
        out = run(x)
        total = sum(o.sum() for o in out) if isinstance(out, tuple) else out.sum()
        total.backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0])
