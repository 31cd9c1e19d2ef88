"""TorchScript as people write it (issue 11): tracing's data-dependence warnings and
`check_trace`/`check_inputs`, each case checked against eager Python results. PyTorch's messages
are quoted from torch.jit (2.x)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitorch
from jitorch import nn

_CONVERT = "Converting a tensor to a Python boolean might cause the trace to be incorrect."


def _branchy(x):
    if x.sum() > 0:  # the line the warning names
        return x * 2
    return x * 3


def _tracer_warnings(w):
    return [x for x in w if issubclass(x.category, jitorch.jit.TracerWarning)]


def test_data_dependent_branch_warns_and_records_the_branch_taken():
    x = jitorch.ones(3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tf = jitorch.jit.trace(_branchy, x)
    tw = _tracer_warnings(w)
    # once while tracing, once in the check's second trace (as PyTorch does)
    assert len(tw) == 2 and all(str(t.message).startswith(_CONVERT) for t in tw)
    assert {(t.filename, t.lineno) for t in tw} == {
        (__file__, _branchy.__code__.co_firstlineno + 1)}
    np.testing.assert_array_equal(tf(x).numpy(), _branchy(x).numpy())
    # the branch taken (x * 2) is what the trace does, also for an input that eager sends
    # the other way: PyTorch's semantics
    np.testing.assert_array_equal(tf(-x).numpy(), (-x * 2).numpy())
    assert not np.array_equal(tf(-x).numpy(), _branchy(-x).numpy())


def test_int_float_item_become_constants_with_their_warnings():
    def g(x):
        n = int(x.sum())
        return x * n + float(x.max()) + x.sum().item()
    x = jitorch.arange(3.0)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tg = jitorch.jit.trace(g, x, check_trace=False)
    kinds = [str(t.message).split(" might")[0] for t in _tracer_warnings(w)]
    assert kinds == ["Converting a tensor to a Python integer",
                     "Converting a tensor to a Python float",
                     "Converting a tensor to a Python number"]
    np.testing.assert_allclose(tg(x).numpy(), g(x).numpy())
    y = jitorch.ones(3)  # constants baked from x: 3 * y + 2 + 3
    np.testing.assert_allclose(tg(y).numpy(), (y * 3 + 2.0 + 3.0).numpy())
    assert tg.stats["tier"] != "interpreted" or not jitorch.jit.stats()["interpreted_reasons"]


def test_check_inputs_that_take_the_other_branch_fail_the_sanity_check():
    x = jitorch.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jitorch.jit.TracerWarning)
        with pytest.raises(jitorch.jit.TracingCheckError) as e:
            jitorch.jit.trace(_branchy, x, check_inputs=[(-x,)])
    msg = str(e.value)
    assert msg.startswith("Tracing failed sanity checks!")
    assert "ERROR: Graphs differed across invocations!" in msg
    assert "if x.sum() > 0:" in msg and "True when traced and from False" in msg
    # check inputs on the same path pass
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jitorch.jit.TracerWarning)
        tf = jitorch.jit.trace(_branchy, x, check_inputs=[(x + 1,), x * 5])
    np.testing.assert_array_equal(tf(x + 2).numpy(), _branchy(x + 2).numpy())


def test_check_trace_warns_when_outputs_differ():
    def noisy(x):
        return x + jitorch.rand(3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        jitorch.jit.trace(noisy, jitorch.ones(3))
    msgs = [str(t.message) for t in _tracer_warnings(w)]
    assert any(m.startswith("Output nr 1. of the traced function does not match the "
                            "corresponding output of the Python function. Detailed error:\n"
                            "Tensor-likes are not close!") for m in msgs), msgs
    with warnings.catch_warnings(record=True) as w:  # check_trace=False: no check
        warnings.simplefilter("always")
        jitorch.jit.trace(noisy, jitorch.ones(3), check_trace=False)
    assert not _tracer_warnings(w)


def test_deterministic_trace_passes_the_check_silently():
    def f(x, y):
        return (x @ y).relu() + 1
    x, y = jitorch.randn(2, 3), jitorch.randn(3, 4)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tf = jitorch.jit.trace(f, (x, y), check_inputs=[(x * 2, y), (x, -y)])
    assert not _tracer_warnings(w)
    np.testing.assert_allclose(tf(-x, y).numpy(), f(-x, y).numpy(), rtol=1e-5, atol=1e-6)


class _Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        if h.mean() > 0:
            return h.relu()
        return h.tanh()


def test_module_trace_warns_and_checks_like_functions():
    m = _Gate()
    with jitorch.no_grad():  # h = x: the branch follows the sign of x's mean
        m.lin.weight.copy_(jitorch.eye(4))
        m.lin.bias.zero_()
    x = jitorch.ones(2, 4) * 0.5
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tm = jitorch.jit.trace(m, x)
    assert any(str(t.message).startswith(_CONVERT) for t in _tracer_warnings(w))
    np.testing.assert_allclose(tm(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jitorch.jit.TracerWarning)
        with pytest.raises(jitorch.jit.TracingCheckError):
            jitorch.jit.trace(m, x, check_inputs=[-x])
        with pytest.raises(jitorch.jit.TracingCheckError):
            jitorch.jit.trace_module(m, {"forward": x}, check_inputs=[{"forward": -x}])
        jitorch.jit.trace_module(m, {"forward": x}, check_inputs=[{"forward": x * 3}])


# --- the legacy API: jit.ScriptModule subclasses with @jit.script_method; .save ---------------
class _Cell(jitorch.jit.ScriptModule):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    @jitorch.jit.script_method
    def forward(self, x, h):
        new_h = jitorch.tanh(self.linear(x) + h)
        return new_h, new_h

    def python_helper(self):  # not a script method: stays Python
        return "py"


class _Outer(jitorch.jit.ScriptModule):
    def __init__(self):
        super().__init__()
        self.cell = _Cell()
        self.steps = 2

    @jitorch.jit.script_method
    def forward(self, x):
        h = jitorch.zeros(3, 4)
        for _ in range(self.steps):
            y, h = self.cell(x, h)
        return h

    @jitorch.jit.script_method
    def twice(self, x):
        return self.forward(x) * 2


def _outer_eager(m, x):
    h = jitorch.zeros(3, 4)
    for _ in range(m.steps):
        h = jitorch.tanh(m.cell.linear(x) + h)
    return h


def test_script_method_subclass_runs_compiled():
    jitorch.manual_seed(0)
    c = _Cell()
    x, h = jitorch.randn(3, 4), jitorch.randn(3, 4)
    y, y2 = c(x, h)
    np.testing.assert_allclose(y.detach().numpy(),
                               jitorch.tanh(c.linear(x) + h).detach().numpy(), rtol=1e-5)
    assert isinstance(c, jitorch.jit.ScriptModule) and c.python_helper() == "py"
    assert isinstance(c.forward, jitorch.script.runtime.module.ScriptMethod)
    assert "tanh" in str(c.graph)
    assert isinstance(jitorch.jit.script(nn.Linear(2, 2)), jitorch.jit.ScriptModule)
    assert jitorch.jit.script(c) is c
    o = _Outer()
    np.testing.assert_allclose(o(x).detach().numpy(), _outer_eager(o, x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(o.twice(x).detach().numpy(),
                               2 * _outer_eager(o, x).detach().numpy(), rtol=1e-5, atol=1e-6)
    o.steps = 3  # an attribute the method reads: guarded, recompiled
    np.testing.assert_allclose(o(x).detach().numpy(), _outer_eager(o, x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_save_method_and_file_objects(tmp_path):
    import io
    jitorch.manual_seed(1)
    o = _Outer()
    x = jitorch.randn(3, 4)
    want = _outer_eager(o, x).detach().numpy()
    buf = io.BytesIO()
    o.save(buf)  # ScriptModule.save to a file object
    buf.seek(0)
    np.testing.assert_allclose(jitorch.jit.load(buf)(x).detach().numpy(), want, rtol=1e-5,
                               atol=1e-6)
    path = tmp_path / "outer.pt"
    o.save(str(path))  # and to a path
    np.testing.assert_allclose(jitorch.jit.load(str(path))(x).detach().numpy(), want,
                               rtol=1e-5, atol=1e-6)
    sm = jitorch.jit.script(nn.Sequential(nn.Linear(4, 2), nn.ReLU()))
    buf = io.BytesIO()
    sm.save(buf, _extra_files={"note.txt": "hi"})  # .save of any scripted module
    jitorch.jit.save(sm, buf2 := io.BytesIO())
    for b in (buf, buf2):
        b.seek(0)
        got = jitorch.jit.load(b)(x).detach().numpy()
        np.testing.assert_allclose(got, sm(x).detach().numpy(), rtol=1e-6)


def test_a_conversion_that_leaves_the_program_alone_passes_the_check():
    def f(x):
        if x.sum() > 0:  # both branches record the same program
            y = x * 2
        else:
            y = x * 2
        return y
    x = jitorch.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jitorch.jit.TracerWarning)
        tf = jitorch.jit.trace(f, x, check_inputs=[(-x,)])
    np.testing.assert_array_equal(tf(-x).numpy(), f(-x).numpy())
