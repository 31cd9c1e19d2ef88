"""Tracing (`script/frontend/trace.py`) and the IR interpreter (`script/ir/interpreter.py`).

Traced graphs are run by the interpreter and compared with eager; the data-dependence guards,
in-place functionalisation, structured arguments/results, traced objects, and every prim op of
the interpreter (with errors naming the node's source line) each have a test.
"""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import jitorch
from jitorch.script.ir import interpreter
from jitorch.script import ir
from jitorch.script.kernels.signals import ScriptRuntimeError
from jitorch.script.ir.interpreter import run_graph
from jitorch.script.frontend.trace import TracerError, TracerWarning, trace_graph


def _run(graph, *args):
    info = graph.trace_info
    return info.unflatten_outputs(run_graph(graph, info.flatten_args(args)))


def _same(a, b):
    if isinstance(a, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, jitorch.Tensor):
        assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)
    else:
        assert a == b


def _check(fn, *args):
    """Trace fn, run the graph on fresh copies of the args, compare with eager on copies."""
    graph, _ = trace_graph(fn, tuple(_copy(a) for a in args))
    want = fn(*(_copy(a) for a in args))
    _same(_run(graph, *(_copy(a) for a in args)), want)
    str(graph)  # prints
    return graph


def _copy(a):
    return a.clone() if isinstance(a, jitorch.Tensor) else a


X = jitorch.randn(4, 3, generator=jitorch.Generator().manual_seed(0))
Y = jitorch.randn(3, generator=jitorch.Generator().manual_seed(1))


# --- basics --------------------------------------------------------------------------------
def test_chain_records_every_op_with_all_params():
    g = _check(lambda x, y: (x * 2 + y).tanh().sum(1), X, Y)
    ops = [n.op for n in g.nodes() if not n.op.startswith("prim::")]
    assert ops == ["mul", "add", "tanh", "sum"]
    from jitorch._ops.registry import OPS
    for n in g.nodes():
        if n.op in OPS:
            assert len(n.inputs) == len(OPS[n.op].params)
    assert [v.name for v in g.inputs] == ["x", "y"]
    assert g.inputs[0].type == ir.TensorType(jitorch.float32, (4, 3))


def test_round_trip_through_parser():
    from jitorch.script.ir import parser
    g = _check(lambda x, i: (x[i] * 2, x.split(2)), X, jitorch.tensor([0, 2]))
    text = str(g)
    assert str(parser.parse_graph(text)) == text


def test_factory_tensor_becomes_constant():
    g = _check(lambda x: x + jitorch.ones(3), X)
    consts = [n for n in g.nodes() if n.op == "prim::Constant"
              and isinstance(n.attrs["value"], jitorch.Tensor)]
    assert len(consts) == 1


def test_multi_output_ops_have_one_output_per_element():
    g = _check(lambda x: (x.sort(0), x.split(2), x.max(1)), X)
    split = next(n for n in g.nodes() if n.op == "split")
    assert len(split.outputs) == 2


def test_split_into_one_chunk():
    _check(lambda x: x.split(4)[0] * 2, X)


def test_list_of_tensors_argument_to_op():
    _check(lambda x, y: jitorch.cat([x, y.unsqueeze(0)]) + jitorch.stack((y, y)).sum(), X, Y)


def test_nested_tracing_is_an_error():
    def inner(x):
        trace_graph(lambda y: y + 1, (x,))
        return x
    with pytest.raises(TracerError, match="nested"):
        trace_graph(inner, (X,))


# --- data-dependence guards ------------------------------------------------------------------
def _branch(x):
    if x.sum() > 0:  # the guard names this line
        return x
    return -x


@pytest.mark.parametrize("conv,what", [
    (lambda t: bool(t.sum() > 0), "Python boolean"), (lambda t: t.sum().item(), "Python number"),
    (lambda t: int(t.sum()), "Python integer"), (lambda t: float(t.sum()), "Python float"),
    (lambda t: [0, 1, 2][t[0, 0].long()], "Python index"), (lambda t: t.tolist(), "Python list"),
    (lambda t: t.numpy(), "NumPy array"), (lambda t: complex(t.sum()), "Python complex"),
])
def test_data_dependence_warns_as_pytorch(conv, what):
    # PyTorch: a TracerWarning at the user's line, and the value becomes a constant
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        trace_graph(lambda x: x * 1 if conv(x) is not None else x, (X,))
    tw = [x for x in w if issubclass(x.category, TracerWarning)]
    assert len(tw) == 1, [str(x.message) for x in w]
    assert str(tw[0].message).startswith(f"Converting a tensor to a {what} might cause the "
                                         "trace to be incorrect.")
    assert tw[0].filename == __file__


def test_data_dependent_branch_names_the_line():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g, _ = trace_graph(_branch, (X,))
    (tw,) = [x for x in w if issubclass(x.category, TracerWarning)]
    assert tw.lineno == _branch.__code__.co_firstlineno + 1
    (loc, what, data), = g.trace_conversions
    assert what == "Python boolean" and "if x.sum() > 0:" in loc.text
    assert bool(data) == (float(X.sum()) > 0)


def test_conversions_work_outside_and_on_untraced_tensors():
    c = jitorch.tensor(2.0)

    def f(x):
        return x * float(c) * c.item()  # c is not traced: its data is fine to read
    _check(f, X)
    assert bool(jitorch.tensor(True)) and int(jitorch.tensor(3)) == 3


def test_guard_is_per_thread():
    seen = []
    go, done = threading.Event(), threading.Event()

    def other():
        go.wait(5)
        t = jitorch.tensor([1.0])
        seen.append(float(t))  # a tensor of another thread converts while a trace runs
        done.set()

    th = threading.Thread(target=other)
    th.start()

    def f(x):
        go.set()
        done.wait(5)
        return x + 1
    trace_graph(f, (X,))
    th.join()
    assert seen == [1.0]


# --- in-place ops ------------------------------------------------------------------------------
def test_inplace_op_rebinds_the_tensor():
    def f(x, y):
        z = x * 1
        z.add_(y)
        z.mul_(2).tanh_()
        return z
    g = _check(f, X, Y)
    assert not any(n.op.endswith("_") and not n.op.startswith("_") for n in g.nodes())


def test_inplace_through_views_updates_base_and_other_views():
    def f(x, y):
        z = x.clone()
        row = z[1]
        col = z[:, 2]
        z[0] = 5.0
        col.mul_(3)
        z.view(-1)[0:2].fill_(1)
        z.t()[1].add_(y[:4] if y.shape[0] >= 4 else 1.0)
        return z, row, col
    _check(f, X, Y)


def test_setitem_forms():
    def f(x, y, i, m):
        z = x.clone()
        z[i] = y  # advanced
        z[m] = 0.0  # mask
        z[1:3, None, 0] = y[0]  # basic, broadcast copy
        z[..., 1] += y[1]
        return z
    _check(f, X, Y, jitorch.tensor([0, 3]), X > 0.5)


def test_copy_with_dtype_cast_and_int_target():
    def f(x):
        z = jitorch.zeros(4, 3, dtype=jitorch.int64)
        z.copy_(x * 10)
        w = (x > 0).long()
        w.add_(2)
        return z, w
    _check(f, X)


def test_inplace_on_input_warns_and_is_functional():
    x = X.clone()
    with pytest.warns(TracerWarning, match="input is modified in place"):
        g, _ = trace_graph(lambda a: a.mul_(2), (x,))
    fresh = X.clone()
    out = run_graph(g, [fresh])[0]
    np.testing.assert_allclose(out.numpy(), X.numpy() * 2)
    np.testing.assert_array_equal(fresh.numpy(), X.numpy())  # the graph does not write


def test_random_fill_becomes_constant():
    def f(x):
        n = jitorch.empty(3).uniform_()
        return x + n, n
    g, (a, n) = trace_graph(f, (X,))
    b, m = _run(g, X)
    np.testing.assert_array_equal(n.numpy(), m.numpy())


def test_detach_aliases_the_traced_value():
    g = _check(lambda x: x.detach() * 2 + x, X)
    assert not any(n.op == "prim::Constant" and isinstance(n.attrs["value"], jitorch.Tensor)
                   for n in g.nodes())


def test_version_counters_restored_after_trace():
    x = X.clone()
    ver = x._version
    trace_graph(lambda a: a * 2, (x,))
    assert x._version is ver


# --- structured arguments and results -----------------------------------------------------------
def test_tuple_list_dict_namedtuple_results():
    def f(x, y):
        return (x + 1, [y * 2, {"a": x.sum(), "n": 3}]), x.max(0)
    g = _check(f, X, Y)
    assert len(g.outputs) == 5


def test_static_args_are_baked_and_checked():
    def f(x, dim, scale):
        return x.sum(dim) * scale
    g = _check(f, X, 1, 2.5)
    assert len(g.inputs) == 1
    with pytest.raises(ValueError, match="static"):
        g.trace_info.flatten_args((X, 0, 2.5))


def test_nested_tensor_arguments():
    def f(pair, d):
        return pair[0] @ pair[1] + d["b"]
    g = _check(f, (X, X.t()), {"b": Y[0]})
    assert [v.name for v in g.inputs] == ["pair_0", "pair_1", "d_0"]


def test_callable_object_with_forward():
    class Affine:
        def __init__(self):
            self.w = jitorch.randn(3, 2)
            self.b = jitorch.zeros(2)

        def forward(self, x):
            return x @ self.w + self.b

    m = Affine()
    g, out = trace_graph(m, X)
    assert g.name == "Affine.forward"
    consts = [n for n in g.nodes() if n.op == "prim::Constant"
              and isinstance(n.attrs["value"], jitorch.Tensor)]
    assert len(consts) == 2
    _same(_run(g, X), m.forward(X))


def test_jit_trace_end_to_end():
    fn = jitorch.jit.trace(lambda x, y: ((x * 2 + y).abs().sum(0), x - y), (X, Y))
    x2, y2 = jitorch.randn(6, 3), jitorch.randn(3)
    got = fn(x2, y2)
    want = ((x2 * 2 + y2).abs().sum(0), x2 - y2)
    _same(tuple(got), want)
    assert "mul" in str(fn.graph)


# --- the interpreter: every prim op -------------------------------------------------------------
LOC = ir.SourceLoc("user.py", 7, 4, "    y = boom(x)")


def _graph(params, build):
    g = ir.Graph("g", ir.Block(params=params))
    ret = build(g.block)
    g.block.returns = list(ret)
    return g


def _node(block, op, inputs, types, **attrs):
    n = ir.Node(op, inputs, types, attrs=attrs, loc=LOC)
    block.nodes.append(n)
    return n


def _const(block, v, ty):
    return _node(block, "prim::Constant", [], [ty], value=v).output


T = ir.TensorType(jitorch.float32, (None,))


def test_interp_if_and_tensor_condition():
    x = ir.Value(T, "x")

    def build(b):
        cond = _node(b, "gt", [x, _const(b, 0, ir.INT)], [T]).output
        anyc = _node(b, "any", [cond, _const(b, None, ir.NONE), _const(b, False, ir.BOOL)],
                     [ir.TensorType(jitorch.bool, ())]).output
        p1, p2 = ir.Value(T), ir.Value(T)
        then = ir.Block([p1], [], [])
        then.nodes.append(ir.Node("neg", [p1], [T]))
        then.returns = [then.nodes[0].output]
        els = ir.Block([p2], [], [p2])
        n = ir.Node("prim::If", [anyc, x], [T], blocks=[then, els])
        b.nodes.append(n)
        return [n.output]

    g = _graph([x], build)
    assert run_graph(g, [jitorch.tensor([1.0, -2.0])])[0].tolist() == [-1.0, 2.0]
    assert run_graph(g, [jitorch.tensor([-1.0])])[0].tolist() == [-1.0]


def test_interp_loop_with_carried_and_captured_and_while():
    x = ir.Value(T, "x")
    n_ = ir.Value(ir.INT, "n")

    def build(b):
        i, c, cap = ir.Value(ir.INT), ir.Value(T), ir.Value(T)
        body = ir.Block([i, c, cap])
        add = ir.Node("add", [c, cap, _const(body, 1, ir.INT)], [T])
        body.nodes.append(add)
        cont = ir.Node("prim::ScalarOp", [i, _const(body, 2, ir.INT)], [ir.BOOL],
                       attrs={"fn": "lt"})
        body.nodes.append(cont)
        body.returns = [cont.output, add.output]
        loop = ir.Node("prim::Loop", [n_, _const(b, True, ir.BOOL), x, x], [T], blocks=[body])
        b.nodes.append(loop)
        return [loop.output]

    g = _graph([x, n_], build)
    assert run_graph(g, [jitorch.tensor([1.0]), 10])[0].tolist() == [4.0]  # stops after i=2
    assert run_graph(g, [jitorch.tensor([1.0]), 2])[0].tolist() == [3.0]
    assert run_graph(g, [jitorch.tensor([1.0]), 0])[0].tolist() == [1.0]


def test_interp_containers_scalars_getattr_and_calls():
    x = ir.Value(T, "x")
    callee = ir.Graph("double", ir.Block([ir.Value(T, "a")]))
    d = ir.Node("mul", [callee.inputs[0], None], [T])
    cst = ir.Node("prim::Constant", [], [ir.INT], attrs={"value": 2})
    d.inputs[1] = cst.output
    callee.block.nodes += [cst, d]
    callee.block.returns = [d.output]

    def build(b):
        tup = _node(b, "prim::TupleConstruct", [x, _const(b, 3, ir.INT)],
                    [ir.TupleType([T, ir.INT])]).output
        a, k = _node(b, "prim::TupleUnpack", [tup], [T, ir.INT]).outputs
        k2 = _node(b, "prim::TupleIndex", [tup, _const(b, 1, ir.INT)], [ir.INT]).output
        s = _node(b, "prim::ScalarOp", [k, k2], [ir.INT], fn="mul").output
        sq = _node(b, "prim::ScalarOp", [s], [ir.FLOAT], fn="math.sqrt").output
        lst = _node(b, "prim::ListConstruct", [a, a], [ir.ListType(T)]).output
        l0, _ = _node(b, "prim::ListUnpack", [lst], [T, T]).outputs
        dct = _node(b, "prim::DictConstruct", [_const(b, "k", ir.STR), s],
                    [ir.DictType(ir.STR, ir.INT)]).output
        shape = _node(b, "prim::GetAttr", [l0], [ir.ANY], name="shape").output
        called = _node(b, "prim::CallFunction", [l0], [T], fn=callee).output
        py = _node(b, "prim::PythonOp", [called, sq], [T, ir.FLOAT],
                   fn=lambda t, f: (t + f, f * 2)).outputs
        item = _node(b, "prim::TensorToScalar", [_node(b, "sum", [py[0], _const(
            b, None, ir.NONE), _const(b, False, ir.BOOL), _const(b, None, ir.NONE)],
            [ir.TensorType(jitorch.float32, ())]).output], [ir.INT], type=ir.INT).output
        _node(b, "prim::Assert", [_const(b, True, ir.BOOL), _const(b, "fine", ir.STR)], [])
        return [dct, shape, py[1], item, tup]

    g = _graph([x], build)
    dct, shape, f2, item, tup = run_graph(g, [jitorch.tensor([1.0, 2.0])])
    assert dct == {"k": 9} and tuple(shape) == (2,) and f2 == 6.0
    assert item == int((2 + 3.0) + (4 + 3.0)) and isinstance(item, int)
    assert tup[1] == 3


def test_interp_print_and_fused(capsys):
    x = ir.Value(T, "x")

    def build(b):
        _node(b, "prim::Print", [_const(b, "value:", ir.STR), x], [])
        p = ir.Value(T)
        body = ir.Block([p])
        body.nodes.append(ir.Node("exp", [p], [T]))
        body.returns = [body.nodes[0].output]
        fused = ir.Node("prim::Fused", [x], [T], attrs={"ops": "exp"}, blocks=[body], loc=LOC)
        b.nodes.append(fused)
        return [fused.output]

    g = _graph([x], build)
    out = run_graph(g, [jitorch.tensor([0.0])])[0]
    assert out.tolist() == [1.0]
    assert "value:" in capsys.readouterr().out


def test_interp_assert_and_raise_name_the_line():
    x = ir.Value(ir.INT, "x")

    def build(b):
        ok = _node(b, "prim::ScalarOp", [x, _const(b, 0, ir.INT)], [ir.BOOL], fn="gt").output
        _node(b, "prim::Assert", [ok, _const(b, "x must be positive", ir.STR)], [])
        return [x]

    g = _graph([x], build)
    assert run_graph(g, [1]) == [1]
    with pytest.raises(jitorch.jit.Error if hasattr(jitorch.jit, "Error")
                       else ScriptRuntimeError, match="x must be positive") as e:
        run_graph(g, [-1])
    assert "user.py:7:4" in str(e.value)

    g2 = _graph([x], lambda b: (_node(b, "prim::Raise", [_const(b, "bad ", ir.STR), x], [],
                                      exc="ValueError"), [x])[1])
    with pytest.raises(ScriptRuntimeError, match=r"ValueError: bad 5[\s\S]*user.py:7:4"):
        run_graph(g2, [5])


def test_interp_op_errors_keep_their_type_and_the_line():
    x = ir.Value(T, "x")
    g = _graph([x], lambda b: [_node(b, "_index_view", [x, _const(b, (7,), ir.ANY)],
                                     [ir.TensorType(jitorch.float32, ())]).output])
    with pytest.raises(IndexError) as e:
        run_graph(g, [jitorch.tensor([1.0])])
    assert isinstance(e.value, ScriptRuntimeError)
    assert "user.py:7:4" in str(e.value) and "boom" in str(e.value)


def test_interp_traced_errors_name_the_user_line():
    g, _ = trace_graph(lambda x, y: x + y, (X, Y))
    with pytest.raises(RuntimeError, match=r"must match[\s\S]*test_trace.py"):
        run_graph(g, [X, jitorch.randn(5)])


def test_interp_arity_check():
    g, _ = trace_graph(lambda x: x + 1, (X,))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        run_graph(g, [])


def test_interp_unknown_prim_is_an_error():
    g = _graph([], lambda b: [_node(b, "prim::Nope", [], [ir.INT]).output])
    with pytest.raises(NotImplementedError, match="prim::Nope"):
        run_graph(g, [])


def test_every_prim_op_has_a_rule():
    import inspect
    src = inspect.getsource(interpreter._execute)
    missing = [p for p in ir.PRIM_OPS if f'"{p}"' not in src]
    assert not missing, missing


def test_interp_records_autograd_like_eager():
    g, _ = trace_graph(lambda x: (x * x).sum(), (X,))
    x = X.clone().requires_grad_(True)
    out = run_graph(g, [x])[0]
    (gx,) = jitorch.autograd.grad(out, (x,))
    np.testing.assert_allclose(gx.numpy(), 2 * X.numpy(), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        str(g)
