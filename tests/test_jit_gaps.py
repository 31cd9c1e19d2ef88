"""TorchScript and tracing gaps of issue 19 (item 6), each against eager PyTorch semantics:

- module and class attributes written by a scripted method (`self.n += 1`, `self.count =
  self.count + x.size(0)`, `self.buf += x`): the module sees the new values after each call
  and the next call reads them, in the compiled tier and in the interpreted one (autocast runs
  scripted calls interpreted); the state survives jit.save/jit.load;
- dict (and list) module attributes read and written in scripted forward; modules calling dict
  methods save and load, and an archive naming anything but the registered dict helpers does
  not load;
- traced sizes (`view(x.size(0), -1)`, `reshape(x.shape[0], ...)`, arithmetic on sizes,
  `nn.Flatten`) are graph values: the trace runs on another batch size; where a size becomes a
  Python number (`int(n)`, `len(x)`) it is baked in with PyTorch's TracerWarning;
- a traced module's submodules are traced modules with `.code` and `.graph`.
"""
import io
import warnings
from typing import Dict, List

import numpy as np
import pytest

import jitorch as jt
import jitorch.nn as nn
from jitorch.jit import TracerWarning
from jitorch.script.runtime import loadable, tiers

import fuzz_archive as fz


def _same(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def _tier(sm) -> str:
    return tiers.function_report(sm.forward._current().sf)["tier"]


def _runs():
    s = jt.jit.stats()
    return s["compiled_runs"], s["interpreted_runs"]


# --- 1. attributes as state ---------------------------------------------------------------------
class Counter(nn.Module):
    total = 0  # a class attribute: `self.total += 2` makes the instance's, as in Python

    def __init__(self):
        super().__init__()
        self.n = 0
        self.count = 0
        self.scale = 0.5
        self.register_buffer("buf", jt.zeros(3))

    def forward(self, x):
        self.n += 1
        self.total += 2
        self.count = self.count + x.size(0)
        if self.n > 2:
            self.scale *= 2.0
        self.buf += x.sum(0)
        return x * self.n + self.total * self.scale


def _state(m):
    return (m.n, m.total, m.count, m.scale, m.buf.numpy().copy())


def _check_state(got, want):
    assert got[:4] == want[:4] and [type(v) for v in got[:4]] == [type(v) for v in want[:4]]
    np.testing.assert_array_equal(got[4], want[4])


def test_attribute_state_compiled_and_interpreted():
    eager, m = Counter(), Counter()
    sm = jt.jit.script(m)
    for k in range(3):  # compiled tier
        x = jt.randn(k + 2, 3)
        _same(sm(x), eager(x))
        _check_state(_state(m), _state(eager))
        assert sm.n == eager.n  # the scripted module shows the original's attributes
    assert _tier(sm) == "compiled"
    assert Counter.total == 0 and eager.total == 6
    before = _runs()
    with jt.autocast("cpu"):  # the interpreted tier
        x = jt.randn(4, 3)
        _same(sm(x), eager(x))
    assert _runs()[1] == before[1] + 1
    _check_state(_state(m), _state(eager))
    x = jt.randn(2, 3)  # and back: the compiled program reads what the interpreter wrote
    _same(sm(x), eager(x))
    _check_state(_state(m), _state(eager))


def test_attribute_state_saves_and_loads(tmp_path):
    eager, m = Counter(), Counter()
    sm = jt.jit.script(m)
    x = jt.ones(2, 3)
    _same(sm(x), eager(x))
    path = str(tmp_path / "counter.pt")
    jt.jit.save(sm, path)
    loaded = jt.jit.load(path)  # the state as saved: after one call
    for _ in range(2):  # the second call passes n > 2: scale doubles
        _same(loaded(x), eager(x))
    assert int(loaded.n) == eager.n == 3 and int(loaded.count) == eager.count == 6  # 0-d tensors
    assert float(loaded.scale) == eager.scale == 1.0
    np.testing.assert_array_equal(loaded.buf.numpy(), eager.buf.numpy())


def test_assigning_a_tensor_attribute_is_refused_with_the_in_place_form():
    class Bad(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("buf", jt.zeros(2))

        def forward(self, x):
            self.buf = x
            return x

    with pytest.raises(jt.jit.ScriptError, match=r"assigning to the tensor attribute 'buf'.*"
                                                 r"self\.buf \+= v"):
        jt.jit.script(Bad())(jt.ones(2))


# --- 2. dict and list attributes ----------------------------------------------------------------
class Tables(nn.Module):
    table: Dict[str, int]

    def __init__(self):
        super().__init__()
        self.table = {"a": 1, "b": 2}
        self.weights = {"x": 0.5, "y": 2.0}  # not annotated: typed from its values
        self.sizes = [3, 4]

    def forward(self, x):
        s = 0
        for k in self.table.keys():
            s += self.table[k]
        for k, v in self.table.items():
            s += v * len(k)
        if "a" in self.table:
            s += self.table.get("a", 0) + self.table.get("z", 10)
        w = 0.0
        for v in self.weights.values():
            w += v
        return x * w + s + self.sizes[1]


class Logs(nn.Module):
    hist: List[int]
    seen: Dict[str, int]

    def __init__(self):
        super().__init__()
        self.hist = []
        self.seen = {}

    def forward(self, x):
        self.hist.append(x.size(0))
        self.seen["calls"] = self.seen.get("calls", 0) + 1
        self.seen["rows"] = self.seen.get("rows", 0) + x.size(0)
        return x * len(self.hist)


def test_dict_and_list_attributes_read_and_written():
    x = jt.randn(2, 3)
    eager, m = Tables(), Tables()
    sm = jt.jit.script(m)
    _same(sm(x), eager(x))
    m.table["c"] = 5  # changed in place: the next call sees it (guarded)
    eager.table["c"] = 5
    _same(sm(x), eager(x))
    eager, m = Logs(), Logs()
    sm = jt.jit.script(m)
    for k in (2, 5):
        x = jt.randn(k, 3)
        _same(sm(x), eager(x))
    assert m.hist == eager.hist == [2, 5]
    assert m.seen == eager.seen == {"calls": 2, "rows": 7}


def test_module_calling_dict_methods_saves_and_loads():
    x = jt.randn(2, 3)
    m = Tables()
    buf = io.BytesIO()
    jt.jit.save(jt.jit.script(m), buf)
    loaded = jt.jit.load(io.BytesIO(buf.getvalue()))
    _same(loaded(x), m(x))
    # a module writing a dict attribute cannot carry it: a clear refusal at save
    with pytest.raises(RuntimeError, match=r"jitorch\.jit\.save: Logs\.forward writes the "
                                           "module attribute"):
        jt.jit.save(jt.jit.script(Logs()), io.BytesIO())


@pytest.mark.parametrize("target", [["jitorch.script.frontend.dict_methods", "dict_method"],
                                    ["jitorch.script.frontend.dict_methods", "ast.parse"],
                                    ["jitorch.script.frontend.module", "AttrSet"]])
def test_hostile_archive_of_dict_calls_does_not_load(target):
    buf = io.BytesIO()
    jt.jit.save(jt.jit.script(Tables()), buf)
    data = buf.getvalue()

    def evil(man):
        ops = man["module"]["methods"]["forward"]["python_ops"]
        k = next(i for i, r in enumerate(ops) if r.get("fn") == [
            "jitorch.script.frontend.dict_methods", "dict_keys"])
        ops[k] = {"kind": "fn", "fn": target}
    with pytest.raises(RuntimeError, match="is not a function a loaded module may call"):
        jt.jit.load(io.BytesIO(fz.edit_manifest(data, evil)))
    # the registered helpers check their receiver (a graph's declared types are not trusted)
    keys = loadable.lookup("jitorch.script.frontend.dict_methods", "dict_keys")
    with pytest.raises(TypeError, match="needs a dict"):
        keys("not a dict")


# --- 3. traced sizes ------------------------------------------------------------------------------
def sizes(x):
    b = x.size(0)
    return (x.view(x.size(0), -1), x.reshape(x.shape[0], 2, -1), x.view(b * 2, -1),
            x.flatten(1) * x.size()[0])


def test_traced_sizes_are_graph_values():
    with warnings.catch_warnings():
        warnings.simplefilter("error", TracerWarning)  # nothing is baked in
        tr = jt.jit.trace(sizes, jt.randn(2, 3, 4))
    text = str(tr.graph)
    assert "prim::GetAttr[name='shape']" in text and "fn='mul'" in text
    assert type(jt.ones(2).size(0)) is int  # eager sizes are plain ints again
    for n in (5, 1):  # compiled, then interpreted (autocast)
        x = jt.randn(n, 3, 4)
        with jt.autocast("cpu", enabled=n == 1):
            got = tr(x)
        for a, b in zip(got, sizes(x)):
            assert a.shape == b.shape
            _same(a, b)
    flat = nn.Sequential(nn.Linear(4, 4), nn.Flatten())
    tm = jt.jit.trace(flat, jt.randn(2, 3, 4))
    x = jt.randn(6, 3, 4)
    _same(tm(x), flat(x))


def test_sizes_made_python_numbers_are_baked_with_the_tracer_warning():
    def as_int(x):
        return x.view(int(x.size(0)), -1)

    def by_len(x):
        return x.view(len(x), -1)

    for fn, msg in ((as_int, "Converting a tensor to a Python integer"),
                    (by_len, "Using len to get tensor shape")):
        with pytest.warns(TracerWarning, match=msg):
            tr = jt.jit.trace(fn, jt.randn(2, 3, 4))
        assert "GetAttr" not in str(tr.graph)


# --- 4. traced submodules -------------------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(nn.Linear(12, 8), nn.ReLU())
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.layer1(x.view(x.size(0), -1)))


def test_traced_submodules_have_code_and_graph():
    net = Net()
    tr = jt.jit.trace(net, jt.randn(2, 3, 4))
    assert "relu" in str(tr.layer1.graph) and "matmul" in str(tr.layer1.graph)
    assert "relu" not in str(tr.head.graph)
    assert "relu" in getattr(tr.layer1, "1").code
    assert tr.layer1._get_name() == "TracedModule"
    x = jt.randn(5, 12)
    _same(tr.layer1(x), net.layer1(x))
    _same(tr(x.view(5, 3, 4)), net(x.view(5, 3, 4)))
    assert "matmul" in tr.layer1.code  # after a call: the program's code
