"""Scripted and traced modules (script/runtime/module.py): jitorch.jit.script(module),
trace(module), freeze; parameters are graph inputs (no recompiles on optimizer steps /
load_state_dict)."""
from typing import Optional

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from jitorch.jit import ScriptError


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(jitorch.randn(4, 3))
        self.b = nn.Parameter(jitorch.zeros(3))
        self.acts = nn.ModuleDict({"a": nn.Tanh(), "b": nn.Sigmoid()})

    def forward(self, x):
        y = jitorch.matmul(x, self.w) + self.b
        for k, f in self.acts.items():
            y = f(y)
        return y


class Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scale = 2.0

    def forward(self, x):
        return self.lin(x) * self.scale


class Tree(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Sub(), Sub()])
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2, bias=False))
        self.extra: Optional[jitorch.Tensor] = None
        self.k = 3

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = jitorch.tanh(layer(x)) + i
        if self.training:
            x = x * 0.5
        if self.extra is not None:
            x = x + self.extra
        return self.head(x) * self.k + len(self.layers) + self.layers[0].scale

    @jitorch.jit.export
    def first(self, x, n: int = 2):
        return self.layers[0](x) * n


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def tree():
    jitorch.manual_seed(0)
    m = Tree()
    return m, jitorch.jit.script(m)


def test_forward_matches_eager_train_eval_and_guards(tree):
    m, sm = tree
    x = jitorch.randn(3, 4)
    with jitorch.no_grad():
        _close(sm(x), m(x))
        sm.eval()
        assert not m.training and not m.layers[0].training
        _close(sm(x), m(x))
        m.extra = jitorch.ones(4)       # Optional attribute set: a new variant
        _close(sm(x), m(x))
        m.k = 5                         # a guarded int attribute: recompiled, not stale
        _close(sm(x), m(x))
        m.extra, m.k = None, 3
        sm.train()
        _close(sm(x), m(x))
    assert len(sm.forward._variants) >= 4


def test_exported_method_graph_code_and_names(tree):
    m, sm = tree
    x = jitorch.randn(2, 4)
    with jitorch.no_grad():
        _close(sm.first(x), m.first(x))
        _close(sm.first(x, n=3), m.first(x, 3))
    assert sm.original_name == "Tree"
    names = [v.name for v in sm.graph.inputs]
    assert names[0] == "x" and "self_layers_0_lin_weight" in names
    assert "prim::CallFunction" in str(sm.forward.graph)
    assert isinstance(sm.code, str) and isinstance(sm.first.code, str)
    assert [v.name for v in sm.first.graph.inputs][:2] == ["x", "n"]


def test_behaves_as_module(tree):
    m, sm = tree
    assert [id(p) for p in sm.parameters()] == [id(p) for p in m.parameters()]
    assert list(sm.state_dict()) == list(m.state_dict())
    sm.eval()
    assert not sm.training and not m.training
    sm.train()
    assert m.training and m.layers[1].lin.training
    assert "RecursiveScriptModule" in repr(sm)


def test_gradients_match_eager_and_no_recompiles():
    jitorch.manual_seed(1)
    m = Mlp()
    sm = jitorch.jit.script(m)
    x = jitorch.randn(5, 4)
    sm(x).sum().backward()
    g = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(x).sum().backward()
    for a, p in zip(g, m.parameters()):
        _close(a, p.grad)
    assert "backward" in sm.code  # compiled forward and backward programs
    opt = jitorch.optim.SGD(m.parameters(), lr=0.1)
    before = sm.forward._current().sf.stats["specialisations"]
    for _ in range(2):
        opt.zero_grad()
        sm(x).sum().backward()
        opt.step()
    m.load_state_dict({k: v * 2 for k, v in m.state_dict().items()})
    out = sm(x)
    _close(out, m(x))
    assert sm.forward._current().sf.stats["specialisations"] == before
    assert len(sm.forward._variants) == 1


def test_unsupported_attribute_names_it():
    class Bad(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = object()

        def forward(self, x):
            return x * self.table

    with pytest.raises(ScriptError, match=r"'table'.*object"):
        jitorch.jit.script(Bad())


def test_self_as_value_and_missing_attribute():
    class NoAttr(nn.Module):
        def forward(self, x):
            return x * self.nothing

    with pytest.raises(ScriptError, match="nothing"):
        jitorch.jit.script(NoAttr())


def test_trace_module_params_are_inputs():
    jitorch.manual_seed(2)
    m = Mlp()
    x = jitorch.randn(3, 4)
    tm = jitorch.jit.trace(m, (x,))
    names = [v.name for v in tm.graph.inputs]
    assert len(names) == 3  # x, w, b
    _close(tm(x), m(x))
    tm(x).sum().backward()
    g = [p.grad.clone() for p in m.parameters()]
    m.zero_grad()
    m(x).sum().backward()
    for a, p in zip(g, m.parameters()):
        _close(a, p.grad)
    with jitorch.no_grad():
        m.w.mul_(2)                     # parameters are inputs: the trace sees the update
    _close(tm(x), m(x))


def test_freeze(tree):
    m, sm = tree
    with pytest.raises(RuntimeError, match="eval"):
        jitorch.jit.freeze(sm)
    sm.eval()
    fm = jitorch.jit.freeze(sm)
    x = jitorch.randn(2, 4)
    with jitorch.no_grad():
        ref = m(x)
    _close(fm(x), ref)
    assert not any(p.requires_grad for p in fm.parameters())
    with jitorch.no_grad():
        m.layers[0].lin.weight.add_(1.0)   # the frozen module keeps its snapshot
    _close(fm(x), ref)
    with jitorch.no_grad():
        m.layers[0].lin.weight.sub_(1.0)
    sm.train()


def test_to_hooks_trace_module_and_replaced_parameter():
    jitorch.manual_seed(3)
    m = nn.Sequential(nn.Linear(3, 4), nn.Tanh())
    sm = jitorch.script(m)               # the package-level decorator routes modules too
    calls = []
    sm.register_forward_hook(lambda mod, a, o: calls.append(o.shape))
    sm.to(jitorch.float64)
    x = jitorch.randn(2, 3, dtype=jitorch.float64)
    with jitorch.no_grad():
        assert sm(x).dtype == jitorch.float64
        _close(sm(x), m(x))
        m[0].weight = nn.Parameter(jitorch.zeros(4, 3, dtype=jitorch.float64))
        _close(sm(x), m(x))              # read at each call: no stale tensor
    assert calls and tuple(calls[0]) == (2, 4)
    tm = jitorch.jit.trace_module(m, {"forward": (x,)})
    with jitorch.no_grad():
        _close(tm(x), m(x))
    with pytest.raises(NotImplementedError, match="other"):
        jitorch.jit.trace_module(m, {"forward": (x,), "other": (x,)})


def test_scripted_child_inside_scripted_parent():
    class Parent(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = jitorch.jit.script(Sub())

        def forward(self, x):
            return self.inner(x) * 2

    p = Parent()
    sp = jitorch.jit.script(p)
    x = jitorch.randn(2, 4)
    with jitorch.no_grad():
        _close(sp(x), p(x))
    assert "self_inner_lin_weight" in [v.name for v in sp.graph.inputs]


def test_freeze_snapshots_buffers():
    m = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)).eval()
    fm = jitorch.jit.freeze(jitorch.jit.script(m))
    x = jitorch.randn(4, 3)
    with jitorch.no_grad():
        ref = fm(x)
        m[1].running_mean.add_(5.0)       # the original's buffer changes; the frozen copy not
    _close(fm(x), ref)
    assert fm.original_name == "Sequential"


def test_attribute_access_through_the_script_module():
    m = Sub()
    sm = jitorch.jit.script(m)
    x = jitorch.randn(2, 4)
    assert sm.scale == 2.0
    sm.scale = 3.0                        # set on the module: the guard recompiles
    assert m.scale == 3.0
    with jitorch.no_grad():
        _close(sm(x), m.lin(x) * 3.0)
    assert sm.lin is m.lin


def test_buffer_writes_reach_the_module_also_from_loops_branches_and_submodules():
    class Counter(jitorch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("c", jitorch.zeros(2))

        def forward(self, x, n: int):
            for i in range(n):
                self.c.add_(x)
            if x.sum() > 0:
                self.c.mul_(2)
            return self.c + 1   # reads the written value

    class Outer(jitorch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Counter()

        def forward(self, x, n: int):
            return self.inner(x, n)

    for cls in (Counter, Outer):
        eager, scripted_src = cls(), cls()
        sm = jitorch.jit.script(scripted_src)
        for _ in range(2):
            want, got = eager(jitorch.ones(2), 3), sm(jitorch.ones(2), 3)
            assert got.tolist() == want.tolist()
        buf = eager.c if cls is Counter else eager.inner.c
        sbuf = scripted_src.c if cls is Counter else scripted_src.inner.c
        assert sbuf.tolist() == buf.tolist() == [18.0, 18.0]


def test_guards_see_in_place_changes_of_list_attributes():
    # attribute guards are re-checked only after a Module attribute is assigned, except for
    # list/dict attributes, which can change in place without an assignment
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.factors = [2.0]

        def forward(self, x):
            for f in self.factors:
                x = x * f
            return x

    m = Scale()
    sm = jitorch.jit.script(m)
    x = jitorch.ones(2)
    assert sm(x).tolist() == [2.0, 2.0]
    m.factors.append(3.0)  # no __setattr__
    assert sm(x).tolist() == [6.0, 6.0]
    m.factors = [5.0]
    assert sm(x).tolist() == [5.0, 5.0]


def test_a_parameter_first_read_inside_an_if_that_returns():
    """A module storage first touched on one path (an `if` that returns) is the graph input on
    the others (it was a KeyError at the function's other exit)."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(jitorch.arange(3.0))

        def _w(self, x):
            return x * self.weight

        def forward(self, x):
            if x.dim() == 1:
                return self._w(x.unsqueeze(0)).squeeze(0)
            return self._w(x)

    m = M()
    sm = jitorch.jit.script(m)
    for x in (jitorch.ones(2, 3), jitorch.ones(3)):
        np.testing.assert_array_equal(sm(x).detach().numpy(), m(x).detach().numpy())
