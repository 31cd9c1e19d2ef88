"""The scripting frontend, one test per language feature: each function is compiled by
`frontend.compile_function`, verified (closed blocks, SSA), run by the IR interpreter and compared
with calling the Python function eagerly. No Numba compile happens here (fast)."""
from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import numpy as np
import pytest

import jitorch
import jitorch as t
from jitorch.script.frontend import function as frontend
from jitorch.script.ir import interpreter
from jitorch.jit import Final, annotate, ignore, is_scripting, unused
from jitorch.script.ir.verify import verify

SCALE: Final[float] = 2.5
OFFSET = 3


def compile_(fn):
    res = frontend.compile_function(fn)
    verify(res.graph)
    return res


def run(fn, *args):
    res = compile_(fn)
    names = list(res.signature.parameters)
    args = list(args) + [res.defaults[n] for n in names[len(args):]]
    out = interpreter.run_graph(res.graph, args)
    # the graph's last outputs are the final values of the arguments it writes to
    out = out[:len(out) - len(getattr(res.graph, "mutated_inputs", ()))]
    return tuple(out) if res.returns_tuple else out[0]


def same(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, t.Tensor):
        assert isinstance(b, t.Tensor) and a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    else:
        assert a == b and type(a) is type(b), (a, b)


def check(fn, *args):
    same(run(fn, *args), fn(*args))


X = t.arange(12, dtype=t.float32).reshape(3, 4) / 7 - 0.5


# -- functions under test ----------------------------------------------------------------------
def f_ops(x, y):
    return (x * 2 + y).tanh().sum(1) - t.exp(x).mean() + x @ y.T


def f_kwargs(x):
    return t.sum(x, dim=1, keepdim=True) + x.mean(dim=0) + x.clamp(min=0.0)


def f_varargs(x):
    return x.reshape(4, 3).view(-1) + x.permute(1, 0).reshape((12,))


def f_scalars(a: int, b: float, c: bool):
    d = a // 2 + a % 3 - a ** 2
    e = b / a * -b
    return d, e, not c, c and a > 1 or b < 0.0


def f_if(x, n: int):
    if n > 2:
        y = x * 2
    elif n > 0:
        y = x - 1
    else:
        y = x
    return y


def f_tensor_cond(x):
    if x.sum() > 0:
        x = x * 2
    return x


def f_for_range(x, n: int):
    for i in range(1, n, 2):
        x = x + i
    for j in range(n, 0, -1):
        x = x * 1.0 + j
    return x


def f_for_list(x, ws: List[float]):
    for w in ws:
        x = x * w
    return x


def f_for_tuple(x):
    acc = 0
    for v in (1, 2.5, 3):
        acc = acc + v
    return x + acc


def f_for_tensor(x):
    acc = t.zeros(4)
    for row in x:
        acc = acc + row
    return acc


def f_while(n: int):
    i, s = 0, 0
    while i < n:
        s += i
        i += 1
    return s


def f_break_continue(n: int):
    s = 0
    for i in range(n):
        if i % 2 == 1:
            continue
        if i > 6:
            break
        s += i
    return s


def f_early_return(x, n: int):
    if n < 0:
        return x
    if n == 0:
        return x * 0
    y = x + n
    return y * 2


def f_assert(x, n: int):
    assert n > 0, "n must be positive"
    return x + n


def f_assert_fstring(x, n: int):
    assert n < 10, f"n={n} is too big"
    return x


def f_raise(n: int):
    if n > 3:
        raise ValueError(f"n is {n}")
    return n


def f_unpack(x):
    a, (b, c) = x, (x + 1, 2)
    return a + b * c


def f_augassign(x, n: int):
    n += 2
    n *= 3
    x -= 1
    x /= 2
    return x, n


def f_literals(x):
    lst = [x, x * 2]
    d = {"a": 1.0, "b": 2.0}
    tup = (x, 3)
    return lst[1] + d["b"] + tup[1]


def f_listcomp(n: int):
    sq = [i * i for i in range(n) if i != 2]
    return sq, [v + 1 for v in sq]


def f_builtins(a: int, b: float, lst: List[int]):
    return len(lst), min(a, 3), max(b, 1.5), abs(-a), int(b), float(a), bool(a), round(b)


def f_len_tensor(x):
    return len(x), x.size(1), x.dim(), x.shape[0]


def f_isinstance(x, n: int):
    if isinstance(n, int) and isinstance(x, t.Tensor):
        return x + 1
    return x


def f_optional(x, o: Optional[t.Tensor] = None):
    if o is None:
        return x
    return x + o


def f_optional_not(x, o: Optional[t.Tensor] = None):
    if o is not None:
        x = x * o
    return x


def f_math(a: float, n: int):
    return math.sqrt(a) + math.exp(a) + math.floor(a) + math.pi * n


def f_helper(x, k: int):
    return x * k


def f_calls(x):
    return f_helper(x, 3) + f_helper(x, k=2)


def f_annotate(n: int):
    xs = annotate(List[int], [])
    for i in range(n):
        xs.append(i)
    return xs


def f_final(x):
    return x * SCALE + OFFSET


@ignore
def py_side(x) -> int:
    return int(x.numel())


def f_ignore(x):
    return py_side(x) + 1


@unused
def never(x):
    return x


def f_unused(x, flag: bool):
    if flag:
        return never(x)
    return x


def f_is_scripting(x):
    if is_scripting():
        return x + 1
    return x - 1


def f_index(x, i: int):
    return x[1], x[-1, 1:3], x[:, None, ::2], x[..., 0:1], x[i], x[i, 2], x[1:, i]


def f_index_dynamic_slice(x, i: int):
    return x[i:], x[:, i:i + 2]


def f_index_tensor(x, idx):
    return x[idx]


def f_setitem(x, i: int):
    y = x
    x[0] = 7.0
    x[i, 1:3] = t.ones(2)
    return x, y


def f_ternary(x, n: int):
    return x * 2 if n > 0 else x, 1 if n > 0 else 2


def f_string(s: str, n: int):
    return s + "!" * n, f"{s}={n}"


def f_casts(x):
    return x.double(), x.long(), x.to(t.int32), float(x.sum())


def f_inplace_method(x):
    y = x.clone()
    y.add_(1)
    return y


def f_tuple_arg(p: Tuple[int, float], x):
    a, b = p
    return x * a + b


def f_library(x):
    return t.zeros(3, 4) + x.exp() if hasattr_dummy() else x


def hasattr_dummy() -> bool:
    return True


def f_library_tuple(x):
    v, i = t.sort(x, 1)
    m = x.max(1)[0]
    return v + m.unsqueeze(1), i


def f_multi_assign(x):
    a = b = x + 1
    return a * b


def f_print(x):
    print("value", 1)
    return x


def f_docstring(x):
    """A docstring is skipped."""
    return x


@pytest.mark.parametrize("fn, args", [
    (f_ops, (X, X + 1)),
    (f_kwargs, (X,)),
    (f_varargs, (X,)),
    (f_scalars, (5, 1.5, True)),
    (f_scalars, (1, -2.0, False)),
    (f_if, (X, 3)), (f_if, (X, 1)), (f_if, (X, -1)),
    (f_tensor_cond, (X,)), (f_tensor_cond, (-X.abs(),)),
    (f_for_range, (X, 5)),
    (f_for_list, (X, [2.0, 0.5, 3.0])),
    (f_for_tuple, (X,)),
    (f_for_tensor, (X,)),
    (f_while, (6,)),
    (f_break_continue, (20,)),
    (f_early_return, (X, -1)), (f_early_return, (X, 0)), (f_early_return, (X, 4)),
    (f_assert, (X, 2)),
    (f_assert_fstring, (X, 2)),
    (f_raise, (2,)),
    (f_unpack, (X,)),
    (f_augassign, (X, 1)),
    (f_literals, (X,)),
    (f_listcomp, (5,)),
    (f_builtins, (4, 2.5, [1, 2])),
    (f_len_tensor, (X,)),
    (f_isinstance, (X, 1)),
    (f_optional, (X,)), (f_optional, (X, X)),
    (f_optional_not, (X,)), (f_optional_not, (X, X)),
    (f_math, (2.0, 3)),
    (f_calls, (X,)),
    (f_annotate, (4,)),
    (f_final, (X,)),
    (f_ignore, (X,)),
    (f_unused, (X, False)),
    (f_index, (X, 2)), (f_index, (X, -1)),
    (f_index_dynamic_slice, (X, 1)),
    (f_index_tensor, (X, t.tensor([2, 0]))),
    (f_ternary, (X, 1)), (f_ternary, (X, -1)),
    (f_string, ("ab", 2)),
    (f_casts, (X,)),
    (f_inplace_method, (X,)),
    (f_tuple_arg, ((2, 0.5), X)),
    (f_library, (X,)),
    (f_library_tuple, (X,)),
    (f_multi_assign, (X,)),
    (f_print, (X,)),
    (f_docstring, (X,)),
], ids=lambda v: getattr(v, "__name__", "") if callable(v) else "")
def test_feature_matches_eager(fn, args):
    check(fn, *args)


def test_is_scripting_folds_to_true():
    same(run(f_is_scripting, X), X + 1)
    same(f_is_scripting(X), X - 1)


def test_setitem_writes_in_place_like_eager():
    x = X.clone()
    got_x, got_y = t.jit.script(f_setitem)(x, 2)
    want = X.clone()
    want[0] = 7.0
    want[2, 1:3] = t.ones(2)
    same(got_x, want)
    same(got_y, want)       # an alias sees the write, as in PyTorch
    same(x, want)           # and so does the caller's tensor
    assert got_x is x and got_y is x


def test_unused_raises_when_called():
    with pytest.raises(jitorch.jit.Error if hasattr(jitorch.jit, "Error") else
                       jitorch.jit.Error, match="unused"):
        run(f_unused, X, True)


def test_ignore_records_the_gil():
    res = compile_(f_ignore)
    assert res.holds_gil and py_side in [getattr(f, "fn", f) for f in res.python_ops]
    assert not compile_(f_ops).holds_gil


def test_assert_failure_names_the_line():
    with pytest.raises(jitorch.jit.Error, match="n must be positive") as e:
        run(f_assert, X, -1)
    assert "test_script_language.py" in str(e.value) and "assert n > 0" in str(e.value)


def test_assert_fstring_message():
    with pytest.raises(jitorch.jit.Error, match="n=12 is too big"):
        run(f_assert_fstring, X, 12)


def test_raise_names_type_message_and_line():
    with pytest.raises(jitorch.jit.Error, match="ValueError: n is 5") as e:
        run(f_raise, 5)
    assert 'raise ValueError(f"n is {n}")' in str(e.value)


def test_index_error_names_the_line():
    with pytest.raises(IndexError) as e:
        run(f_index, X, 7)
    assert "test_script_language.py" in str(e.value)


def f_index_static(x, i: int):
    return x[1], x[-1, 1:3], x[:, None, ::2], x[i, 2], x[1:, i]


def test_tensor_inputs_are_untyped_and_static_indexing_is_a_view_op():
    check(f_index_static, X, 1)
    res = compile_(f_index_static)
    for v in res.graph.inputs[:1]:
        assert v.type == jitorch.script.ir.TensorType(None, None)
    ops = [n.op for n in res.graph.nodes()]
    assert "_index_view" in ops and "select" in ops and "prim::PythonOp" not in ops


def test_registry_nodes_take_all_params():
    from jitorch._ops.registry import OPS
    res = compile_(f_kwargs)
    for n in res.graph.nodes():
        if not n.op.startswith("prim::"):
            assert len(n.inputs) == len(OPS[n.op].params), n.op
            assert n.loc is not None and n.loc.line > 0


def test_every_node_has_a_user_location():
    res = compile_(f_break_continue)
    import inspect
    first = inspect.getsourcelines(f_break_continue)[1]
    for n in res.graph.nodes():
        assert n.loc is not None and first <= n.loc.line <= first + 9
        assert n.loc.file.endswith("test_script_language.py")


def test_nested_function_with_module_alias_annotation():
    def make():
        import jitorch as tt

        def inner(x: tt.Tensor, k: int) -> tt.Tensor:
            return tt.tanh(x) * k
        return inner
    fn = make()
    same(run(fn, X, 2), fn(X, 2))


def test_closure_variables_resolve():
    k = 4

    def inner(x):
        return x * k
    same(run(inner, X), X * 4)


def test_returns_tuple_flag():
    assert compile_(f_augassign).returns_tuple
    assert not compile_(f_ops).returns_tuple


def test_script_class():
    @jitorch.jit.script
    class Acc:
        def __init__(self, w: t.Tensor, n: int):
            self.w = w
            self.n = n

        def apply(self, x):
            return x * self.w + self.n

        def twice(self, x):
            return self.apply(self.apply(x))

    a = Acc(X, 2)
    res = frontend.compile_class(Acc)._jitorch_class_info.methods["twice"]
    verify(res.graph)
    same(interpreter.run_graph(res.graph, [a, X])[0], a.twice(X))


def test_end_to_end_through_jit_script():
    sf = jitorch.jit.script(f_break_continue)
    assert sf(20) == f_break_continue(20)
    sf2 = jitorch.jit.script(f_ops)
    same(sf2(X, X + 1), f_ops(X, X + 1))


def f_ellipsis(x, i: int):
    return x[..., 0], x[..., None], x[..., i], x[1, ..., None, -1], x[...]


def test_ellipsis_indexing_without_rank():
    y = t.arange(24, dtype=t.float32).reshape(2, 3, 4)
    same(run(f_ellipsis, y, 2), f_ellipsis(y, 2))
    ops = [n.op for n in compile_(f_ellipsis).graph.nodes()]
    assert "prim::PythonOp" not in ops


def f_static(x, d: int, keep: bool, i: int):
    return x.sum(d, keep).select(0, i)


def test_static_args_are_the_attribute_arguments():
    res = compile_(f_static)
    assert set(res.static_args) == {"d", "keep"}
    check(f_static, X, 1, True, 0)


def f_return_in_loop(x, n: int):
    for i in range(n):
        if i * i > 10:
            return x * i
    return x


def f_return_in_nested_loops(n: int) -> int:
    i = 0
    while i < n:
        for j in range(n):
            if i * j == 6:
                return i * 10 + j
        i += 1
    return -1


@pytest.mark.parametrize("n", [2, 5])
def test_return_inside_loops(n):
    check(f_return_in_loop, X, n)
    check(f_return_in_nested_loops, n)
    check(f_return_in_nested_loops, 9)


def f_overloads(x):
    parts = x.unbind(0)
    return (x.view(4, 3), t.sub(x, 1, alpha=2), x.pow(2), t.where(x > 0, x, x * 0),
            x.view(t.int32), parts[1])


def test_overloaded_wrappers_use_the_op_when_the_call_binds():
    check(f_overloads, X)
    ops = [n.op for n in compile_(f_overloads).graph.nodes()]
    assert {"view", "sub", "pow", "where", "unbind"} <= set(ops)
    assert ops.count("prim::PythonOp") == 1  # view(dtype) stays Python


def f_enumerate_zip(x, ws: List[float], d: Dict[str, int]):
    acc = x
    for i, w in enumerate(ws):
        acc = acc + w * i
    for k, (w, row) in enumerate(zip(ws, x), 1):
        acc = acc + row * w * k
    n = 0
    for key in d:
        n += d[key]
    return acc, n


def test_enumerate_zip_and_dict_iteration():
    check(f_enumerate_zip, X, [1.0, 2.0, 3.0, 4.0], {"a": 1, "b": 5})


class Pair:
    def __init__(self, w: t.Tensor, k: int):
        self.w = w
        self.k = k

    def scaled(self, x):
        return x * self.w + self.k


ScriptedPair = jitorch.jit.script(Pair)


def f_uses_class(p: Pair, x):
    return p.scaled(x) + p.k


def f_builds_class(x):
    p = Pair(x, 3)
    return p.scaled(x)


def test_script_class_as_argument_and_constructed():
    p = Pair(X, 2)
    check(f_uses_class, p, X)
    check(f_builds_class, X)


WEIGHT = t.tensor([1.0, 2.0, 3.0, 4.0])
SIZES = [2, 6]


def f_global_tensor_and_list(x):
    return x * WEIGHT + SIZES[1], x.reshape(SIZES)


def test_global_tensor_and_list_constants():
    check(f_global_tensor_and_list, X)


def f_isinstance_optional(x, o: Optional[t.Tensor] = None):
    if isinstance(o, t.Tensor):
        return x + o
    return x


def f_raise_branch(x, n: int):
    if n > 0:
        y = x * n
    else:
        raise ValueError("n must be positive")
    return y


def test_isinstance_refines_optional_and_raise_branch_merges():
    check(f_isinstance_optional, X)
    check(f_isinstance_optional, X, X)
    check(f_raise_branch, X, 2)
    with pytest.raises(jitorch.jit.Error, match="n must be positive"):
        run(f_raise_branch, X, 0)


# --- the source of a scripted function (frontend.function.source_lines) ------------------------
def _src_plain(x):
    y = (x +
         1)  # a statement over two lines
    return y
    # a comment after the function


def _src_dead(x):
    return x
    x = x + 1  # unreachable: its bytecode is dropped, its lines still belong to the function


def _src_pass(x):
    if x:
        return 1
    else:
        pass


def _src_doc():
    """only a docstring,
    over two lines"""


def _src_wrapper(fn):
    import functools

    @functools.wraps(fn)
    def inner(*a):
        return fn(*a)
    return inner


@pytest.mark.parametrize("fn", [_src_plain, _src_dead, _src_pass, _src_doc,
                                _src_wrapper(_src_plain)])
def test_source_lines_are_inspects(fn, monkeypatch):
    import ast
    import inspect
    import textwrap
    want = inspect.getsourcelines(fn)
    if fn is _src_plain:  # its end comes from its bytecode: the tokenizer is not needed
        monkeypatch.setattr(inspect, "getblock", None)
    lines, first, tree = frontend.source_lines(fn)
    n = len(lines)
    assert first == want[1] and lines == want[0][:n]
    assert all(not ln.strip() or ln.lstrip().startswith("#") for ln in want[0][n:])
    if tree is not None:
        assert ast.dump(tree) == ast.dump(ast.parse(textwrap.dedent("".join(lines))))
