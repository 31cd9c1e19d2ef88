"""Tensor factories in scripted and traced code honour `device=` (issue 16): the factory node
carries `%device` (_ops/factories.py), the type pass places its result where eager does
(passes/types.py `stamp_device`), the interpreter makes it there, the CPU code generator lowers
only factories on the CPU (targets/cpu/lower_factory.py), and jit.save/jit.load keep it.

Device-generic tests take the `device` fixture (cpu, and cuda where this process has it:
tests/devices.py); tests of what only exists with CUDA take `cuda`. The cuda cases run on the
simulator in tests/test_cuda_sim_tier.py (`-k cuda` under JITORCH_CUDA_SIM=1)."""
import io
import json
import re
import zipfile

import numpy as np
import pytest

import jitorch
import jitorch as torch
import jitorch.nn as nn
import jitorch.nn.functional as F
from devices import DEVICES


@pytest.fixture(params=[d for d in DEVICES if d != "cpu"])
def cuda(request):
    return request.param


MIXED = ("Expected all tensors to be on the same device, but found at least two devices, "
         "cuda:0 and cpu!")
CUDA_DEV = torch.device("cuda")  # a global: `torch.device(...)` in scripted code is a PythonOp


def _same(got, want):
    assert got.device == want.device, (got.device, want.device)
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().cpu().numpy(),
                               rtol=1e-6, atol=1e-7)


def _interpreted():
    return jitorch.jit.stats()["interpreted_runs"]


def _reasons():
    return dict(jitorch.jit.stats()["interpreted_reasons"])


def _why(name: str) -> list:
    """Why the programs of scripted function `name` are interpreted (its jit.stats entry)."""
    return jitorch.jit.stats()["functions"][name]["reasons"]


# --- library composites -------------------------------------------------------------------------
def losses(a, y, w):
    return (F.cross_entropy(a, y), F.nll_loss(F.log_softmax(a, 1), y),
            F.cross_entropy(a, y, weight=w, label_smoothing=0.1),
            F.nll_loss(a.log_softmax(1), y, reduction="none", ignore_index=1))


def test_scripted_losses_follow_eager_on_the_device(device):
    """cross_entropy / nll_loss make `arange(c, device=x.device)`: on cuda it was made on the
    CPU and the scripted call raised the mixed-devices error."""
    jitorch.manual_seed(0)
    a = jitorch.randn(5, 4).to(device).requires_grad_()
    y = jitorch.tensor([0, 1, 2, 3, 1]).to(device)
    w = jitorch.rand(4).to(device)
    s = jitorch.jit.script(losses)
    got, want = s(a, y, w), losses(a, y, w)
    for g, e in zip(got, want):
        assert g.device.type == device
        _same(g, e)
    ga, = jitorch.autograd.grad(got[0] + got[2], a)
    wa, = jitorch.autograd.grad(want[0] + want[2], a)
    _same(ga, wa)


# --- device= in scripted code --------------------------------------------------------------------
def made_on(x, n: int):
    a = torch.zeros(n, 2, device=x.device)
    b = torch.arange(n, device=x.device)
    c = torch.full((n,), 1.5, device=x.device, dtype=x.dtype)
    d = torch.tensor([[1, 2], [3, n]], device=x.device)
    e = torch.ones(2, dtype=torch.float64, device=x.device)
    f = torch.linspace(0, 1, n, device=x.device)
    g = torch.eye(n, device=x.device)
    h = torch.scalar_tensor(2.5, device=x.device)
    i = torch.zeros_like(x, device="cpu")
    j = x.new_full((n,), 3)
    k = torch.ones(n, device=x.device, dtype=x.dtype) * x + b
    m = torch.tensor(2.0) * x  # a 0-d CPU tensor mixes with any device, as in eager
    return a, b, c, d, e, f, g, h, i, j, k, m


def test_device_keyword_places_every_factory(device):
    s = jitorch.jit.script(made_on)
    x = jitorch.randn(3).to(device)
    got, want = s(x, 3), made_on(x, 3)
    assert [t.device.type for t in got] == [device] * 8 + ["cpu"] + [device] * 3
    for g, e in zip(got, want):
        _same(g, e)


def test_cpu_programs_with_device_keywords_compile():
    """On the CPU, `device=x.device` (or "cpu") still compiles: `x.device` folds to the
    program's device and the CPU code generator lowers the factory as before."""
    s = jitorch.jit.script(made_on)
    x = jitorch.randn(4)
    before = _interpreted()
    for g, e in zip(s(x, 4), made_on(x, 4)):
        _same(g, e)
    assert _interpreted() == before, _reasons()
    ops = [n.op for n in s.graph_for(x, 4).nodes()]
    assert "prim::PythonOp" not in ops and "arange" in ops
    assert not any(n.op == "prim::GetAttr" and n.attrs.get("name") == "device"
                   for n in s.graph_for(x, 4).nodes())


def on_cuda(x):
    return x + torch.ones(3, device="cuda"), torch.arange(3, device="cuda:0"), \
        torch.zeros(2, device=CUDA_DEV)


def test_static_cuda_device_makes_cuda_tensors(cuda):
    s = jitorch.jit.script(on_cuda)
    for x in (jitorch.randn(3, device=cuda), jitorch.tensor(1.0)):  # a CPU program too
        got, want = s(x), on_cuda(x)
        for g, e in zip(got, want):
            assert g.device.type == "cuda"
            _same(g, e)


def cuda_from_cpu(x):
    return torch.zeros(3, device="cuda") + 1, x * 2


def test_cpu_program_with_a_cuda_factory_is_interpreted(cuda):
    """A CPU program never lowers a factory placed on another device: the interpreter makes it
    there, as eager."""
    s = jitorch.jit.script(cuda_from_cpu)
    x = jitorch.randn(3)
    got = s(x)
    for g, e in zip(got, cuda_from_cpu(x)):
        _same(g, e)
    assert any("zeros on device cuda:0" in r for r in _why("cuda_from_cpu")), \
        _why("cuda_from_cpu")


def on_meta(x):
    return x + torch.zeros(3, device="meta")


def test_factory_on_a_device_without_storage_raises_eagers_error():
    s = jitorch.jit.script(on_meta)
    x = jitorch.randn(3)
    with pytest.raises(NotImplementedError) as want:
        on_meta(x)
    with pytest.raises(NotImplementedError) as got:
        s(x)
    assert str(want.value) in str(got.value)
    assert any("zeros on device meta" in r for r in _why("on_meta")), _why("on_meta")


# --- devices that mix --------------------------------------------------------------------------
def cpu_factory(x):
    return x + torch.zeros(3, device="cpu")


def default_device_factory(x):
    return x * torch.arange(3)  # no device: the default device, the CPU


def cuda_factory(x):
    return x + torch.zeros(3, device="cuda")


def test_factory_on_another_device_raises_pytorchs_error(cuda):
    for fn, x in ((cpu_factory, jitorch.ones(3, device=cuda)),
                  (default_device_factory, jitorch.ones(3, device=cuda)),
                  (cuda_factory, jitorch.ones(3))):
        with pytest.raises(RuntimeError) as e:
            fn(x)
        assert str(e.value) == MIXED
        with pytest.raises(RuntimeError) as e:
            jitorch.jit.script(fn)(x)
        assert str(e.value).startswith(MIXED), str(e.value)


def placed(x):
    a = torch.zeros(3, device=x.device)
    b = torch.arange(3)
    c = torch.zeros_like(x)
    d = x.new_ones(2)
    e = torch.tensor([1.0], device="cpu")
    return a, b + 1, c, d, e


def test_specialised_types_carry_each_factorys_device(cuda):
    s = jitorch.jit.script(placed)
    x = jitorch.randn(3, device=cuda)
    g = s.graph_for(x)
    devices = {n.op: n.output.type.device for n in g.nodes()
               if n.op in ("zeros", "arange", "zeros_like", "new_ones", "tensor", "add")}
    assert devices == {"zeros": "cuda:0", "arange": "cpu", "zeros_like": "cuda:0",
                       "new_ones": "cuda:0", "tensor": "cpu", "add": "cpu"}, devices
    assert not any(n.op == "prim::GetAttr" for n in g.nodes())  # x.device folded
    assert [t.device.type for t in s(x)] == ["cuda", "cpu", "cuda", "cuda", "cpu"]


def test_backward_factories_are_made_on_the_programs_device(cuda):
    """autodiff traces VJP rules on CPU stand-ins: the factories they make (select's zeros)
    go on the program's device, where eager's rule makes them."""
    from jitorch.script import ir
    from jitorch.script.frontend.trace import tensor_type
    from jitorch.script.runtime import autodiff as rad

    def sel(x, i: int):
        return x.select(0, i) * 2

    s = jitorch.jit.script(sel)
    x = jitorch.randn(3, 2, device=cuda, requires_grad=True)
    base = rad._pre_fusion(s.graph, [tensor_type(x, symbolic=True), ir.INT])
    d = rad._differentiate(base, [x, 1])
    zeros = [n for n in d.backward.nodes() if n.op == "zeros"]
    assert zeros and all(n.output.type.device == "cuda:0" for n in zeros)
    assert all(str(n.inputs[-1].node.attrs["value"]) == "cuda:0" for n in zeros)
    got, = jitorch.autograd.grad(s(x, 1).sum(), x)
    want, = jitorch.autograd.grad(sel(x, 1).sum(), x)
    _same(got, want)


# --- traced code ---------------------------------------------------------------------------------
def traced(x):
    return x + torch.full((5000,), 2.0, device=x.device)  # large: traced as its factory


def test_traced_factory_keeps_its_device(device):
    x = jitorch.randn(5000).to(device)
    t = jitorch.jit.trace(traced, (x,))
    full = [n for n in t.graph.nodes() if n.op == "full"]
    assert len(full) == 1 and full[0].output.type.device == str(x.device)
    x2 = jitorch.randn(5000).to(device)
    before = _interpreted()
    _same(t(x2), traced(x2))
    if device == "cpu":
        assert _interpreted() == before, _reasons()


# --- jit.save / jit.load -------------------------------------------------------------------------
class Placed(nn.Module):
    def forward(self, x):
        n = x.shape[0]
        return x + torch.arange(n, device=x.device) + torch.full((n,), 2.0, device=x.device,
                                                                 dtype=x.dtype)


def _rewrite(data: bytes, ir_fn, manifest_fn) -> io.BytesIO:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w") as z:
        for info in zin.infolist():
            body = zin.read(info.filename)
            if info.filename.endswith(".ir"):
                body = ir_fn(body.decode()).encode()
            elif info.filename.endswith("manifest.json"):
                man = json.loads(body)
                manifest_fn(man)
                body = json.dumps(man).encode()
            z.writestr(info.filename, body)
    out.seek(0)
    return out


def _saved(module) -> bytes:
    buf = io.BytesIO()
    jitorch.jit.save(jitorch.jit.script(module), buf)
    return buf.getvalue()


def test_loaded_module_makes_factories_on_the_callers_device(device):
    m = jitorch.jit.load(io.BytesIO(_saved(Placed())))
    x = jitorch.randn(4).to(device)
    _same(m(x), Placed()(x))


class Saved1(nn.Module):
    """Factories a version 1 archive could hold (`device=` was dropped then)."""
    def forward(self, x):
        n = x.shape[0]
        return x + torch.arange(n, device=x.device) + torch.full((n,), 2.0) + x.new_zeros(n)


# what version 1 wrote: factory nodes without their last input, `%device`
_NO_DEVICE = re.compile(r"(= (?:arange|full|new_zeros)\(.*), %\d+\)$", re.M)


def test_version_1_archives_still_load():
    data = _saved(Saved1())
    old = _rewrite(data, lambda t: _NO_DEVICE.sub(r"\1)", t), lambda m: m.update(version=1))
    m = jitorch.jit.load(old)
    x = jitorch.randn(4)
    _same(m(x), Saved1()(x))
    # a version 2 file whose factory lacks its device is refused, naming the node
    bad = _rewrite(data, lambda t: _NO_DEVICE.sub(r"\1)", t), lambda m: None)
    with pytest.raises(RuntimeError, match="arange.*takes 5 inputs"):
        jitorch.jit.load(bad)
