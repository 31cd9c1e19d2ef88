"""`jit.trace` through scripted code (script/frontend/trace_call.py): a call of a scripted function
or module made while tracing is recorded as one `prim::CallFunction` of its graph, never as a
constant of its result, so the traced program follows the scripted code's branches on new
inputs: functions, submodules, tuples, keywords and defaults, writes to arguments, backward
through the call, and jit.save / jit.load of the traced module.
"""
from __future__ import annotations

import io
from typing import Tuple

import numpy as np

import jitorch as t
from jitorch import jit, nn


def same_value(a, b) -> bool:
    return isinstance(a, t.Tensor) and isinstance(b, t.Tensor) and a.dtype == b.dtype and \
        tuple(a.shape) == tuple(b.shape) and np.allclose(a.numpy(), b.numpy(), atol=1e-6)


@jit.script
def _branchy(x):
    if x.sum() > 0:
        return x * 2
    return x - 1


@jit.script
def _pair(x, k: float = 2.0) -> Tuple[t.Tensor, t.Tensor]:
    if x.sum() > 0:
        return x * k, x + 1
    return x - k, x * 0


@jit.script
def _bump(x, y):
    x.add_(y)
    return x * 2


def _calls(graph) -> list:
    return [n for n in graph.block.nodes if n.op == "prim::CallFunction"]


def test_trace_records_a_scripted_function_call():
    def f(x):
        return _branchy(x) + 1

    tf = jit.trace(f, (t.ones(3),))
    assert len(_calls(tf.graph)) == 1
    assert not any(n.op == "prim::Constant" and isinstance(n.attrs.get("value"), t.Tensor)
                   for n in tf.graph.block.nodes)
    for x in (t.ones(3), -t.ones(3), t.tensor([1.0, -5.0])):  # both branches, another size
        assert same_value(tf(x), f(x))


def test_trace_records_tuples_keywords_and_defaults():
    def f(x):
        a, b = _pair(x, k=3)
        c, d = _pair(x)
        return a + b * c - d

    tf = jit.trace(f, (t.ones(3),))
    assert len(_calls(tf.graph)) == 2
    for x in (t.ones(3), -t.ones(4)):
        assert same_value(tf(x), f(x))


def test_trace_records_writes_of_the_scripted_call():
    def g(x, y):
        z = x.clone()
        w = _bump(z, y)
        return z + w

    tg = jit.trace(g, (t.ones(3), t.ones(3)))
    for x, y in ((t.ones(3), t.ones(3)), (t.tensor([1.0, -2.0]), t.tensor([3.0, 0.5]))):
        assert same_value(tg(x, y), g(x, y))


def test_trace_of_a_scripted_function_itself():
    tf = jit.trace(_branchy, (t.ones(2),))
    assert same_value(tf(-t.ones(2)), _branchy(-t.ones(2)))


def test_trace_backward_through_a_scripted_call():
    @jit.script
    def sq(x):
        if x.sum() > 0:
            return (x * x).sum()
        return x.sum()

    def h(x):
        return sq(x * 3)

    th = jit.trace(h, (t.ones(3),))
    for x0 in ([1.0, 2.0, -0.5], [-1.0, -1.0, -1.0]):
        grads = []
        for run in (h, th):
            x = t.tensor(x0, requires_grad=True)
            run(x).backward()
            grads.append(x.grad.numpy())
        np.testing.assert_allclose(grads[1], grads[0])


class _Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            return y.relu(), y
        return y, y * 2


class _Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = jit.script(_Sub())
        self.w = nn.Parameter(t.tensor([0.5, -1.0, 2.0]))

    def forward(self, x):
        a, b = self.sub(x)
        return a * self.w + b


def test_trace_module_with_scripted_submodule():
    t.manual_seed(0)
    m = _Outer()
    tm = jit.trace(m, (t.ones(2, 3),))
    assert len(_calls(tm.graph)) == 1
    for x in (t.randn(4, 3), -t.ones(2, 3) * 5, t.ones(1, 3) * 5):
        assert same_value(tm(x).detach(), m(x).detach())
    # backward: the input's and every parameter's gradient as eager
    x0 = t.randn(4, 3).numpy()
    grads = []
    for run in (m, tm):
        m.zero_grad()
        x = t.tensor(x0, requires_grad=True)
        run(x).sum().backward()
        grads.append([x.grad.numpy()] + [p.grad.numpy().copy() for p in m.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    # the call is inlined on save: the loaded module keeps the submodule's branch
    buf = io.BytesIO()
    jit.save(tm, buf)
    buf.seek(0)
    lm = jit.load(buf)
    for x in (t.randn(3, 3), -t.ones(2, 3) * 5):
        assert same_value(lm(x).detach(), m(x).detach())



def test_trace_records_a_forked_scripted_call():
    def f(x):
        fut = jit.fork(_branchy, x)
        return jit.wait(fut) + 1

    tf = jit.trace(f, (t.ones(2),))
    assert len(_calls(tf.graph)) == 1
    for x in (t.ones(3), -t.ones(2)):
        assert same_value(tf(x), f(x))
