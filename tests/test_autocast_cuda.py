"""Autocast and GradScaler on CUDA (issue 16): `jitorch.autocast("cuda")`,
`jitorch.cuda.amp.{autocast,GradScaler}`, `jitorch.amp.GradScaler("cuda")`, with PyTorch's CUDA
op lists (aten/src/ATen/autocast_mode.cpp) declared per op beside the CPU ones. The list tests
run everywhere; the behaviour tests in the cuda tier (`JITORCH_CUDA_SIM=1`, or a GPU)."""
import math

import numpy as np
import pytest

import jitorch as torch
import jitorch.nn as nn
import jitorch.nn.functional as F
from jitorch import _autocast
from devices import DEVICES


@pytest.fixture(params=[d for d in DEVICES if d != "cpu"])
def cuda(request):
    return request.param


@torch.script
def scripted_bce(x, y):
    return F.binary_cross_entropy(x, y)


def test_cuda_lists_are_declared_per_op():
    from jitorch._ops.registry import OPS
    on = {n: _autocast.policy_on(op.autocast, "cuda") for n, op in OPS.items()}
    for n in ("mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "addmv", "mv", "conv1d",
              "conv2d"):
        assert on[n] == "lower", n
    for n in ("exp", "log", "log1p", "pow", "rsqrt", "acos", "sum", "cumsum", "prod", "norm",
              "logsumexp", "softplus"):
        assert on[n] == "fp32", n
    for n in ("cat", "stack", "addcmul", "addcdiv", "atan2", "dot", "cross", "index_put",
              "scatter_add", "tensordot"):
        assert on[n] == "promote", n
    for n in ("cholesky", "_linalg_svd", "inverse", "fft_fft", "quantile", "trace", "index_copy"):
        assert on[n] is None and _autocast.policy_on(OPS[n].autocast, "cpu") is not None, n
    cuda = {f.__name__: _autocast.policy_on(f.autocast, "cuda") for f in (
        F.linear, F.layer_norm, F.group_norm, F.mse_loss, F.cross_entropy, F.kl_div, torch.einsum,
        torch.cdist, F.grid_sample, F.binary_cross_entropy, torch.stft)}
    assert cuda == {"linear": "lower", "layer_norm": "fp32", "group_norm": "fp32",
                    "mse_loss": "fp32", "cross_entropy": "fp32", "kl_div": "fp32",
                    "einsum": "lower", "cdist": "fp32", "grid_sample": "promote",
                    "binary_cross_entropy": "banned", "stft": None}
    assert _autocast.policy_on(torch.softmax.autocast, "cuda") == "fp32"
    with pytest.raises(ValueError, match="unknown autocast policy"):
        _autocast.policy({"tpu": "fp32"})


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cuda_autocast_casts_by_category(cuda, dtype):
    low = getattr(torch, dtype)
    a = torch.randn(4, 4, device=cuda)
    b = torch.randn(4, 4, device=cuda)
    with torch.autocast("cuda", dtype=low):
        assert torch.is_autocast_enabled("cuda") and torch.get_autocast_dtype("cuda") is low
        mm = a @ b
        assert mm.dtype is low and mm.device.type == "cuda"
        np.testing.assert_allclose(mm.float().cpu().numpy(),
                                   (a.to(low).float() @ b.to(low).float()).cpu().numpy(),
                                   rtol=1e-2, atol=1e-2)
        h = mm.exp()  # fp32 list: a lower-precision input runs in float32
        assert h.dtype is torch.float32
        assert F.softmax(mm, -1).dtype is torch.float32
        assert F.layer_norm(mm, (4,)).dtype is torch.float32
        assert mm.sum().dtype is torch.float32
        assert torch.cat([mm, a]).dtype is torch.float32  # promote: the widest
        assert torch.addcmul(a, mm, mm).dtype is torch.float32
        assert F.linear(a, b).dtype is low
        cpu = torch.randn(2, 2) @ torch.randn(2, 2)  # CPU tensors: CPU autocast is off
        assert cpu.dtype is torch.float32
        p, t = a.sigmoid(), torch.rand(4, 4, device=cuda)
        for bce in (F.binary_cross_entropy, scripted_bce):  # the same error in every tier
            with pytest.raises(RuntimeError, match="binary_cross_entropy and torch.nn.BCELoss "
                                                   "are unsafe to autocast"):
                bce(p, t)
    assert not torch.is_autocast_enabled("cuda")
    with torch.autocast("cpu"):  # CPU autocast leaves CUDA tensors alone
        assert (a @ b).dtype is torch.float32


def test_cuda_autocast_gradients_return_in_the_leaf_dtype(cuda):
    w = torch.randn(3, 2, device=cuda, requires_grad=True)
    x = torch.randn(5, 3, device=cuda)
    with torch.cuda.amp.autocast():
        y = x @ w
        assert y.dtype is torch.float16
        loss = F.mse_loss(y, torch.zeros(5, 2, device=cuda))
        assert loss.dtype is torch.float32
    loss.backward()
    assert w.grad.dtype is torch.float32 and w.grad.device == w.device
    assert torch.backends.cuda.is_built()


def _model(dev):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)).to(dev)


def test_grad_scaler_scales_unscales_steps_and_updates(cuda):
    model = _model(cuda)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 4, growth_interval=2)
    assert scaler.is_enabled()
    x, y = torch.randn(6, 4, device=cuda), torch.randn(6, 1, device=cuda)
    with torch.autocast("cuda"):
        loss = F.mse_loss(model(x), y)
    scaled = scaler.scale(loss)
    assert scaled.device == loss.device and scaler._scale.device == loss.device
    np.testing.assert_allclose(scaled.item(), loss.item() * 16, rtol=1e-6)
    scaled.backward()
    before = [p.detach().clone() for p in model.parameters()]
    scaled_grads = [p.grad.detach().clone() for p in model.parameters()]
    scaler.unscale_(opt)
    for p, g in zip(model.parameters(), scaled_grads):
        np.testing.assert_allclose(p.grad.cpu().numpy(), g.cpu().numpy() / 16, rtol=1e-6)
    scaler.step(opt)
    for p, b in zip(model.parameters(), before):
        np.testing.assert_allclose(p.detach().cpu().numpy(),
                                   (b - 0.1 * p.grad).cpu().numpy(), rtol=1e-6)
    scaler.update()
    assert scaler.get_scale() == 16.0 and scaler._get_growth_tracker() == 1
    for _ in range(1):  # a second clean step grows the scale (growth_interval=2)
        opt.zero_grad()
        scaler.scale(F.mse_loss(model(x), y)).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 32.0 and scaler._get_growth_tracker() == 0


def test_grad_scaler_skips_the_step_on_inf_and_backs_off(cuda):
    model = _model(cuda)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    scaler = torch.cuda.amp.GradScaler(init_scale=8.0)
    x = torch.randn(3, 4, device=cuda)
    scaler.scale(model(x).sum()).backward()
    model[0].weight.grad[0, 0] = math.inf
    before = [p.detach().clone() for p in model.parameters()]
    assert scaler.step(opt) is None
    assert all(torch.equal(p.detach(), b) for p, b in zip(model.parameters(), before))
    assert not opt.state  # the optimizer never stepped
    scaler.update()
    assert scaler.get_scale() == 4.0 and scaler._get_growth_tracker() == 0
    opt.zero_grad()
    scaler.scale(model(x).sum()).backward()
    model[2].bias.grad.fill_(math.nan)
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0


def test_grad_scaler_across_devices(cuda):
    a = nn.Linear(3, 3)
    b = nn.Linear(3, 1).to(cuda)
    params = list(a.parameters()) + list(b.parameters())
    opt = torch.optim.SGD(params, lr=0.1)
    scaler = torch.amp.GradScaler("cuda", init_scale=4.0)
    out = b(a(torch.randn(2, 3)).to(cuda)).sum()
    scaler.scale(out).backward()
    a.bias.grad[0] = math.inf  # an inf on the CPU skips the whole step
    before = [p.detach().clone() for p in params]
    scaler.step(opt)
    assert all(torch.equal(p.detach(), q) for p, q in zip(params, before))
    scaler.update()
    assert scaler.get_scale() == 2.0
