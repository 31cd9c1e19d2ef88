"""jitorch.jit.save / jitorch.jit.load (script/runtime/serialize.py): module archives that load and
run in a fresh process without the model's source; damaged files give clear RuntimeErrors."""
import io
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from jitorch.script.runtime import serialize


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(4, 8)
        self.act = nn.ReLU()
        self.l2 = nn.Linear(8, 2)
        self.register_buffer("shift", jitorch.ones(2))
        self.k = 2

    def forward(self, x, scale: float = 1.0):
        return (self.l2(self.act(self.l1(x))) + self.shift) * scale * self.k

    @jitorch.jit.export
    def hidden(self, x):
        return jitorch.tanh(self.l1(x))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    jitorch.manual_seed(0)
    d = tmp_path_factory.mktemp("jit")
    sm = jitorch.jit.script(Net().eval())
    x = jitorch.randn(3, 4)
    with jitorch.no_grad():
        ref = {"x": x, "y": sm(x), "y2": sm(x, 2.0), "h": sm.hidden(x)}
    jitorch.jit.save(sm, str(d / "net.pt"))
    jitorch.save(ref, str(d / "io.pt"))
    return d, sm, ref


def test_load_in_fresh_process_without_source(saved):
    d, _, _ = saved
    code = f"""
import sys, jitorch
assert 'test_jit_save_load' not in sys.modules
m = jitorch.jit.load({str(d / 'net.pt')!r})
d = jitorch.load({str(d / 'io.pt')!r})
with jitorch.no_grad():
    for got, want in ((m(d['x']), d['y']), (m(d['x'], scale=2.0), d['y2']),
                      (m.hidden(d['x']), d['h'])):
        assert float((got - want).abs().max()) < 1e-5, (got, want)
assert m.original_name == 'Net', m.original_name
assert sorted(m.state_dict()) == ['l1.bias', 'l1.weight', 'l2.bias', 'l2.weight', 'shift']
print('OK')
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and "OK" in r.stdout, r.stderr


def test_load_in_process_state_and_training(saved):
    d, sm, ref = saved
    m = jitorch.jit.load(str(d / "net.pt"))
    with jitorch.no_grad():
        np.testing.assert_allclose(m(ref["x"]).numpy(), ref["y"].numpy(), rtol=1e-5)
    m.load_state_dict({k: v * 0 for k, v in m.state_dict().items()})  # params are inputs
    with jitorch.no_grad():
        np.testing.assert_allclose(m(ref["x"]).numpy(), 0.0)
    assert not m.training
    assert "graph @" in str(m.graph)


def test_traced_module_roundtrip_via_file_object():
    jitorch.manual_seed(1)
    net = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 1))
    x = jitorch.randn(4, 3)
    tm = jitorch.jit.trace(net, (x,))
    buf = io.BytesIO()
    jitorch.jit.save(tm, buf)
    buf.seek(0)
    m = jitorch.jit.load(buf)
    with jitorch.no_grad():
        np.testing.assert_allclose(m(x).numpy(), net(x).numpy(), rtol=1e-5, atol=1e-6)


def _archive(saved):
    return (saved[0] / "net.pt").read_bytes()


def test_truncated_and_corrupted_files(saved, tmp_path):
    data = _archive(saved)
    for bad in (data[: len(data) // 2], data[:100], b"not a zip at all"):
        p = tmp_path / "bad.pt"
        p.write_bytes(bad)
        with pytest.raises(RuntimeError, match="jitorch.jit.load"):
            jitorch.jit.load(str(p))
    # a damaged IR member: the parser's error becomes the RuntimeError
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename.endswith(".ir"):
                body = body.replace(b"graph @", b"grph @")
            z.writestr(info.filename, body)
    out.seek(0)
    with pytest.raises(RuntimeError, match="not a valid jitorch file"):
        jitorch.jit.load(out)


def _rewrite_manifest(data, fn):
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "manifest.json":
                man = json.loads(body)
                fn(man)
                body = json.dumps(man).encode()
            z.writestr(info.filename, body)
    out.seek(0)
    return out


def test_newer_version_and_foreign_callables(saved):
    data = _archive(saved)
    with pytest.raises(RuntimeError, match="newer"):
        jitorch.jit.load(_rewrite_manifest(data, lambda m: m.update(version=99)))

    # a file naming a callable outside jitorch is refused (nothing is imported from it)
    def evil(man):
        meth = man["module"]["methods"]["forward"]
        meth["python_ops"] = [{"kind": "fn", "fn": ["os", "system"]}] + meth["python_ops"]
    with pytest.raises(RuntimeError, match="outside jitorch|do not match"):
        jitorch.jit.load(_rewrite_manifest(data, evil))
    with pytest.raises(ValueError, match="outside jitorch"):
        serialize._lookup("os", "system")
    with pytest.raises(ValueError, match="outside jitorch"):
        serialize._lookup("jitorch.serialization", "os.system")
    with pytest.raises(RuntimeError, match="jitorch.jit.load"):
        jitorch.jit.load(_rewrite_manifest(data, lambda m: m.update(format="jitorch.save")))


def test_save_refuses_what_it_cannot_carry(tmp_path):
    with pytest.raises(TypeError, match="ScriptModule"):
        jitorch.jit.save(Net(), str(tmp_path / "x.pt"))

    @jitorch.jit.ignore
    def helper(x):
        return x + 1

    class UsesPython(nn.Module):
        def forward(self, x):
            return helper(x)

    sm = jitorch.jit.script(UsesPython())
    with pytest.raises(RuntimeError, match="helper"):
        jitorch.jit.save(sm, str(tmp_path / "x.pt"))


class WithConst(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.c = jitorch.arange(3.0)      # a plain tensor attribute

    def forward(self, x):
        return self.lin(x) + self.c


def test_tensor_attributes_and_constants_roundtrip():
    jitorch.manual_seed(4)
    m = WithConst()
    x = jitorch.randn(2, 3)
    for sm in (jitorch.jit.trace(m, (x,)), jitorch.jit.script(m)):
        buf = io.BytesIO()
        jitorch.jit.save(sm, buf)
        buf.seek(0)
        loaded = jitorch.jit.load(buf)
        with jitorch.no_grad():
            np.testing.assert_allclose(loaded(x).numpy(), m(x).numpy(), rtol=1e-5, atol=1e-6)


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(jitorch.randn(3, 2))

    def forward(self, x):
        return jitorch.tanh(jitorch.matmul(x, self.w))


def test_loaded_module_trains_and_frozen_module_saves():
    jitorch.manual_seed(5)
    m = Tiny()
    sm = jitorch.jit.script(m)
    x = jitorch.randn(4, 3)
    for mod in (sm, jitorch.jit.freeze(jitorch.jit.script(Tiny()).eval())):
        buf = io.BytesIO()
        jitorch.jit.save(mod, buf)
        buf.seek(0)
        loaded = jitorch.jit.load(buf)
        if mod is sm:
            loaded(x).sum().backward()   # parameters are inputs: gradients reach them
            m(x).sum().backward()
            np.testing.assert_allclose(loaded.w.grad.numpy(), m.w.grad.numpy(), rtol=1e-5,
                                       atol=1e-6)
        else:
            with jitorch.no_grad():
                np.testing.assert_allclose(loaded(x).numpy(), mod(x).numpy(), rtol=1e-6)
