"""The interpreter tier written out as Python (script/ir/graph_to_python.py) against the IR
interpreter it replaces after a graph's first run: the same values, autograd records and
errors (type, message, the user's line), and a source that no value of a graph can write into.
"""
import numpy as np
import pytest

import jitorch as jt
from jitorch.script import ir
from jitorch.script.ir import graph_to_python, interpreter
from jitorch.script.kernels.signals import ScriptRuntimeError


def rnn(x, h, w1, w2, b):
    for _ in range(3):
        h = jt.tanh(x @ w1 + h @ w2 + b)
    return h


def branches(x, n: int):
    if n > 2:
        y, z = x * 2, x + 1
    else:
        y, z = x - 1, x / 2
    k = 0
    while k < n:  # a while loop: no trip count
        y = y + z
        k += 1
    return y, z


def lists_and_tuples(x):
    parts = jt.chunk(x, 2, 0)
    a, b = parts[0], parts[1]
    vals, idx = jt.max(x, 1)
    out = [a.sum(), b.sum()]
    s = 0.0
    for t in out:
        s += float(t)
    return vals, idx, s, len(out) * 2 + x.size(0) // 2


def factories(x):
    z = jt.zeros(x.shape[0], 3)
    return z + jt.arange(3.0), jt.ones_like(x)


def nested_error(x, w):
    y = x
    for i in range(2):
        if i == 1:
            y = y @ w  # the shape error is here, in a loop body's branch
    return y


def raises(x, n: int):
    if n < 0:
        raise ValueError("n must be >= 0, got " + str(n))
    return x * n


def library_error(x):
    return jt.nn.functional.layer_norm(x, (5,))  # the error names this line, not jitorch's


CASES = [
    ("rnn", rnn, lambda: (jt.randn(4, 8), jt.randn(4, 16), jt.randn(8, 16),
                          jt.randn(16, 16), jt.randn(16))),
    ("branches-3", branches, lambda: (jt.randn(3, 2), 3)),
    ("branches-1", branches, lambda: (jt.randn(3, 2), 1)),
    ("lists", lists_and_tuples, lambda: (jt.randn(4, 3),)),
    ("factories", factories, lambda: (jt.randn(2, 3),)),
]


def _same(a, b):
    if isinstance(a, jt.Tensor):
        assert isinstance(b, jt.Tensor) and a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for p, q in zip(a, b):
            _same(p, q)
    else:
        assert type(a) is type(b) and a == b


@pytest.mark.parametrize("name,fn,make", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("grad", [False, True])
def test_values_and_gradients_are_the_interpreters(name, fn, make, grad):
    args = [a.requires_grad_(grad) if isinstance(a, jt.Tensor) and a.is_floating_point()
            else a for a in make()]
    g = jt.jit.script(fn).graph_for(*args)
    want = interpreter.run_graph(g, args)
    got = graph_to_python.GraphFunction(g).run(args)
    _same(want, got)
    if grad:
        leaves = [a for a in args if isinstance(a, jt.Tensor) and a.requires_grad]
        tw = [t.sum() for t in want if isinstance(t, jt.Tensor) and t.requires_grad]
        tg = [t.sum() for t in got if isinstance(t, jt.Tensor) and t.requires_grad]
        assert len(tw) == len(tg)
        if not tw:  # (factories: nothing to differentiate, in both)
            return
        loss_w, loss_g = sum(tw), sum(tg)
        gw = jt.autograd.grad(loss_w, leaves, allow_unused=True)
        gg = jt.autograd.grad(loss_g, leaves, allow_unused=True)
        _same([x for x in gw if x is not None], [x for x in gg if x is not None])


def _error(run):
    with pytest.raises(Exception) as info:
        run()
    e = info.value
    return type(e).__mro__, str(e), isinstance(e, ScriptRuntimeError)


@pytest.mark.parametrize("fn,good,bad", [
    (nested_error, lambda: (jt.randn(2, 3), jt.randn(3, 3)),
     lambda: (jt.randn(2, 3), jt.randn(4, 4))),
    (raises, lambda: (jt.randn(2), 1), lambda: (jt.randn(2), -1)),
    (library_error, lambda: (jt.randn(3, 5),), lambda: (jt.randn(3, 4),)),
], ids=["shape-error-in-nested-block", "user-raise", "library-composite-check"])
def test_errors_are_the_interpreters(fn, good, bad):
    g = jt.jit.script(fn).graph_for(*good())  # the specialised graph the tier runs
    a = bad()
    want = _error(lambda: interpreter.run_graph(g, a))
    got = _error(lambda: graph_to_python.GraphFunction(g).run(a))
    assert got == want
    assert "in scripted code at" in got[1] and __file__ in got[1]


def test_unpack_error_is_pythons():
    x = ir.Value(ir.ListType(ir.IntType()), "xs")
    n = ir.Node("prim::ListUnpack", [x], [ir.IntType(), ir.IntType()])
    g = ir.Graph("unpack", ir.Block([x], [n], list(n.outputs)))
    assert graph_to_python.GraphFunction(g).run([[1, 2]]) == [1, 2]
    want = _error(lambda: interpreter.run_graph(g, [[1, 2, 3]]))
    assert _error(lambda: graph_to_python.GraphFunction(g).run([[1, 2, 3]])) == want
    assert "too many values to unpack (expected 2)" in want[1]


def test_no_value_of_a_graph_is_written_into_its_source():
    # a constant and a graph name crafted as code: bound as values, never run as text
    hostile = "x'); __import__('os').system('exit 3'); ('"
    c = ir.Node("prim::Constant", [], [ir.StrType()], attrs={"value": hostile})
    g = ir.Graph(hostile + "\nimport os", ir.Block([], [c], [c.outputs[0]]))
    gf = graph_to_python.GraphFunction(g)
    assert gf.run([]) == [hostile]
    assert gf.fn.__code__.co_filename.startswith("<scripted @")
    assert "\n" not in gf.fn.__code__.co_filename and "'" not in gf.fn.__code__.co_filename


def test_interpreted_calls_run_the_written_function():
    # under autocast a scripted call runs interpreted: its first run walks the graph, later
    # runs call the graph written out as Python, with the walk's results
    sf = jt.jit.script(rnn)
    args = CASES[0][2]()
    with jt.autocast("cpu"):
        outs = [sf(*args) for _ in range(3)]
    fn = sf._interpret.fn
    assert isinstance(getattr(fn, "__self__", None), graph_to_python.GraphFunction)
    for o in outs[1:]:
        _same(outs[0], o)
