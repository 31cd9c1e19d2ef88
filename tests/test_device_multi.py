"""Models split across devices (PyTorch 1.1's multi-device modules, issue 16): one submodule on
the CPU, the next on CUDA (and the reverse), activations moved with `.to()`. Gradients land on
each parameter's own device and equal the all-CPU run; optimizers step each parameter on its
device; clip_grad_norm_ reduces norms across devices. Runs in the cuda tier (simulator or GPU)."""
import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
from devices import DEVICES


@pytest.fixture(params=[d for d in DEVICES if d != "cpu"])
def cuda(request):
    return request.param


class Split(nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.first, self.second = first, second
        self.a = nn.Sequential(nn.Linear(3, 5), nn.Tanh()).to(first)
        self.b = nn.Linear(5, 2).to(second)

    def forward(self, x):
        return self.b(self.a(x.to(self.first)).to(self.second))


def _pair(first, second):
    jitorch.manual_seed(0)
    split = Split(first, second)
    ref = Split("cpu", "cpu")
    ref.load_state_dict({k: v.cpu() for k, v in split.state_dict().items()})
    return split, ref


def _loss(model, x, y):
    out = model(x)
    return nn.functional.mse_loss(out, y.to(out.device))


def _close(model, ref, what):
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        got = getattr(p, what) if what else p
        want = getattr(q, what) if what else q
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(),
                                   rtol=1e-5, atol=1e-6,
                                   err_msg=name)


@pytest.mark.parametrize("order", ["cpu-first", "cuda-first"])
@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_split_model_trains_like_the_cpu_one(cuda, order, opt):
    first, second = ("cpu", cuda) if order == "cpu-first" else (cuda, "cpu")
    model, ref = _pair(first, second)
    make = {"SGD": lambda ps: jitorch.optim.SGD(ps, lr=0.1, momentum=0.9),
            "Adam": lambda ps: jitorch.optim.Adam(ps, lr=0.01)}[opt]
    o1, o2 = make(model.parameters()), make(ref.parameters())
    x, y = jitorch.randn(4, 3), jitorch.randn(4, 2)
    for _ in range(2):
        o1.zero_grad()
        o2.zero_grad()
        _loss(model, x, y).backward()
        _loss(ref, x, y).backward()
        assert all(p.grad.device == p.device for p in model.parameters())
        _close(model, ref, "grad")
        n1 = nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        n2 = nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
        assert abs(n1.item() - n2.item()) < 1e-5
        o1.step()
        o2.step()
        assert {p.device.type for p in model.a.parameters()} == {jitorch.device(first).type}
        assert {p.device.type for p in model.b.parameters()} == {jitorch.device(second).type}
        _close(model, ref, None)
    for p in model.parameters():  # optimizer state lives with its parameter
        for v in o1.state[p].values():
            if isinstance(v, jitorch.Tensor) and v.dim() > 0:
                assert v.device == p.device


def test_clip_grad_norm_reports_on_the_first_device_and_clips_each(cuda):
    a = jitorch.tensor([3.0], requires_grad=True)
    b = jitorch.tensor([4.0], device=cuda, requires_grad=True)
    (a * a / 2 + (b * b / 2).cpu()).sum().backward()  # grads 3 and 4: total norm 5
    total = nn.utils.clip_grad_norm_([b, a], 1.0)
    assert total.device == b.device and abs(total.item() - 5.0) < 1e-6
    assert a.grad.device.type == "cpu" and b.grad.device == b.device
    assert abs(a.grad.item() - 0.6) < 1e-5 and abs(b.grad.item() - 0.8) < 1e-5
