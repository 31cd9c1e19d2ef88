"""The training step a PyTorch user writes, scripted: `jit.script(model)`, a loss, `backward()`
and an optimizer at its defaults. Its gradients have PyTorch's layout (a row-major parameter
gets a row-major `.grad`: passes/simplify.py writes a Linear weight's gradient as `g.t() @ x`,
not `(x.t() @ g).t()`), the default optimizer step runs the compiled program on them
(optim/optimizer.py), and params, grads and state equal the eager step's."""
import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F
from jitorch.optim import functional as OF
from jitorch.optim import optimizer as jopt


class WithLoss(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, y):
        return F.cross_entropy(self.model(x), y)


def _model(seed):
    jitorch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 5), nn.ReLU(), nn.Linear(5, 3))


def _steps(opt_name, scripted, n=3):
    model = _model(0)
    step_fn = WithLoss(model)
    if scripted:
        step_fn = jitorch.jit.script(step_fn)
    opt = getattr(jitorch.optim, opt_name)(model.parameters())  # PyTorch's defaults
    g = np.random.default_rng(0)
    x = jitorch.from_numpy(g.standard_normal((4, 6)).astype(np.float32))
    y = jitorch.from_numpy(g.integers(0, 3, 4))
    grads = []
    for _ in range(n):
        opt.zero_grad()
        step_fn(x, y).backward()
        grads.append([p.grad.detach().clone() for p in model.parameters()])
        opt.step()
    return model, opt, grads


def test_scripted_weight_grads_are_row_major_like_the_parameters():
    model, _, grads = _steps("SGD", scripted=True, n=1)
    for p, gr in zip(model.parameters(), grads[0]):
        assert p.grad.is_contiguous() and p.grad.stride() == p.stride()


@pytest.mark.parametrize("opt_name", ["SGD", "Adam"])
def test_scripted_step_with_default_optimizer_is_compiled_and_equals_eager(opt_name,
                                                                            monkeypatch):
    cls = getattr(jitorch.optim, opt_name)
    # a fresh CompiledStep, so `_direct` below is this test's
    monkeypatch.setattr(cls, "_fn", jopt.CompiledStep(getattr(OF, opt_name.upper())))
    model, opt, grads = _steps(opt_name, scripted=True)
    assert opt._fn._direct and opt._fn.fallbacks == {}  # the compiled program, flat chunks
    monkeypatch.setattr(jopt, "USE_SCRIPT", False)
    ref_model, ref_opt, ref_grads = _steps(opt_name, scripted=False)
    for gs, rs in zip(grads, ref_grads):
        for a, b in zip(gs, rs):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), ref_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
        for k, v in opt.state[p].items():
            np.testing.assert_allclose(np.asarray(v.tolist()),
                                       np.asarray(ref_opt.state[q][k].tolist()),
                                       rtol=1e-5, atol=1e-6)
