"""Compiled programs on CUDA, through the runtime (issue 16's "done when"): scripted modules'
train steps on a cuda device give the eager CPU run's weights with nothing interpreted, under
JITORCH_STRICT=1 (a compiler error raises instead of falling back); argument writes, errors,
`fn.code` and jit.save/load on the device. Runs in the cuda tier (the simulator in CI,
tests/test_cuda_sim_tier.py; a GPU where there is one)."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F
from devices import DEVICES


@pytest.fixture(params=[d for d in DEVICES if d != "cpu"])
def cuda(request, monkeypatch):
    monkeypatch.setenv("JITORCH_STRICT", "1")
    return request.param


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2, self.l3 = nn.Linear(8, 16), nn.Linear(16, 16), nn.Linear(16, 4)

    def forward(self, x, y):
        h = F.relu(self.l1(x))
        h = F.gelu(self.l2(h))
        return F.cross_entropy(self.l3(h), y)


class Encoder(nn.Module):
    def __init__(self, dropout=0.0):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=dropout,
                                                batch_first=True)

    def forward(self, x):
        return self.layer(x).pow(2).mean()


def _train(model, inputs, opt_cls, steps=3, script=True, **opt_kw):
    sm = jitorch.jit.script(model) if script else model
    opt = opt_cls(sm.parameters(), **opt_kw)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = sm(*inputs)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return sm, losses


def _on_device_nothing_interpreted(model, inputs, device, opt_cls, before_each=None,
                                   **opt_kw):
    """The device run of the scripted train step, compared with the same steps run eagerly on
    the CPU (the reference: that the scripted CPU program gives eager's values is the CPU
    tests', and compiling it here would cost more than the device run); asserts the device run
    was compiled. `before_each()` runs before each of the two runs (reseeding)."""
    cpu_model = copy.deepcopy(model)
    if before_each is not None:
        before_each()
    _, cpu_losses = _train(cpu_model, inputs, opt_cls, script=False, **opt_kw)
    if before_each is not None:
        before_each()
    before = jitorch.jit.stats()
    dev_sm, dev_losses = _train(model.to(device), [x.to(device) for x in inputs], opt_cls,
                                **opt_kw)
    after = jitorch.jit.stats()
    assert after.interpreted_runs == before.interpreted_runs, after.interpreted_reasons
    assert after.interpreted_reasons == before.interpreted_reasons  # (backward programs too)
    assert after.calls > before.calls
    for p in dev_sm.parameters():
        assert p.device.type == device and p.grad.device.type == device
    np.testing.assert_allclose(dev_losses, cpu_losses, rtol=1e-5)
    for (name, p), q in zip(dev_sm.named_parameters(), cpu_model.parameters()):
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=name)
    return dev_sm


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_scripted_mlp_train_step_gives_the_cpus_weights_with_nothing_interpreted(cuda, opt):
    jitorch.manual_seed(0)
    model = MLP()
    inputs = [jitorch.randn(6, 8), jitorch.tensor([0, 3, 1, 2, 3, 0])]
    kw = dict(lr=0.1, momentum=0.9) if opt == "sgd" else dict(lr=1e-3)
    cls = jitorch.optim.SGD if opt == "sgd" else jitorch.optim.Adam
    sm = _on_device_nothing_interpreted(model, inputs, cuda, cls, **kw)
    code = sm.code
    assert "launch(" in code and "@cuda.jit" in code  # fused groups are the target's kernels
    assert "implementation('matmul')" in code  # (cuBLAS on a GPU)


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_scripted_transformer_encoder_layer_train_step_on_the_device(cuda, dropout):
    """With dropout in training mode too: the masks come from jitorch's Philox stream, so the
    device run draws the CPU run's masks after the same manual_seed (docs/random.md)."""
    jitorch.manual_seed(0)
    model, x = Encoder(dropout), jitorch.randn(2, 5, 16)
    state = jitorch.random.get_rng_state()

    def reseed():
        jitorch.random.set_rng_state(state)
    _on_device_nothing_interpreted(model, [x], cuda, jitorch.optim.SGD, before_each=reseed,
                                   lr=0.05)


def test_a_program_that_writes_its_argument_writes_the_device_tensor(cuda):
    @jitorch.jit.script
    def bump(x, y):
        x.add_(y)
        return x * 2

    x, y = jitorch.randn(3, 4), jitorch.randn(4)
    xd, yd = x.to(cuda), y.to(cuda)
    before = jitorch.jit.stats().interpreted_runs
    out = bump(xd, yd)
    assert jitorch.jit.stats().interpreted_runs == before
    np.testing.assert_allclose(xd.cpu().numpy(), (x + y).numpy(), rtol=1e-6)
    np.testing.assert_allclose(out.cpu().numpy(), ((x + y) * 2).numpy(), rtol=1e-6)
    assert out.device.type == cuda and xd._version[0] > 0


def test_a_shape_error_is_the_cpus_error_at_the_users_line(cuda):
    @jitorch.jit.script
    def f(x, y):
        return (x + y).relu()

    errors = []
    for dev in ("cpu", cuda):
        f(jitorch.randn(2, 3).to(dev), jitorch.randn(2, 3).to(dev))  # the program exists
        with pytest.raises(RuntimeError) as e:
            f(jitorch.randn(2, 3).to(dev), jitorch.randn(4, 3).to(dev))
        errors.append(str(e.value))
    assert errors[0] == errors[1]
    assert "must match the size of tensor b" in errors[1] and "test_cuda_programs.py" in errors[1]


def test_jit_save_load_runs_compiled_on_the_device(cuda, tmp_path):
    jitorch.manual_seed(0)
    model = MLP()
    x, y = jitorch.randn(6, 8), jitorch.tensor([0, 3, 1, 2, 3, 0])
    sm = jitorch.jit.script(model)
    want = float(model(x, y))  # eager on the CPU (the reference; nothing compiled for it)
    jitorch.jit.save(sm, str(tmp_path / "m.pt"))
    loaded = jitorch.jit.load(str(tmp_path / "m.pt"), map_location=cuda)
    assert all(p.device.type == cuda for p in loaded.parameters())
    before = jitorch.jit.stats().interpreted_runs
    got = loaded(x.to(cuda), y.to(cuda))
    assert jitorch.jit.stats().interpreted_runs == before
    assert got.device.type == cuda
    np.testing.assert_allclose(float(got), want, rtol=1e-5)
