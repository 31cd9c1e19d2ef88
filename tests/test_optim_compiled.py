"""The optimizers' fused steps run as compiled programs (List[Tensor] arguments lowered, in-place
element writes, guarded in-place methods such as lerp_/addcdiv_, if-merged types), equal the
eager step, and do not recompile when lr changes (codegen/lower_list.py, optim CompiledStep)."""
import numpy as np
import pytest

import jitorch
import jitorch.optim as optim
from jitorch.optim import optimizer as jopt

# fused=True: PyTorch's flag for its fused kernels selects the compiled step (the default is eager)
CASES = [("SGD", dict(lr=0.1, momentum=0.9, fused=True)),
         ("Adam", dict(lr=0.05, fused=True)),
         ("AdamW", dict(lr=0.05, weight_decay=0.1, fused=True))]


def _params(seed, mixed=True):
    g = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 3)] if mixed else [(3, 4), (2, 3)]
    return [g.standard_normal(s).astype(np.float32) for s in shapes]


def _run(cls, kw, arrays, steps, use_script, lrs=None):
    ps = [jitorch.tensor(a, requires_grad=True) for a in arrays]
    opt = getattr(optim, cls)(ps, **kw)
    g = np.random.default_rng(1)
    old = jopt.USE_SCRIPT
    jopt.USE_SCRIPT = use_script
    try:
        for k in range(steps):
            if lrs is not None:
                opt.param_groups[0]["lr"] = lrs[k]
            for p in ps:
                p.grad = jitorch.tensor(g.standard_normal(p.shape).astype(np.float32))
            opt.step()
    finally:
        jopt.USE_SCRIPT = old
    return ps, opt


@pytest.mark.parametrize("cls,kw", CASES, ids=[c for c, _ in CASES])
def test_compiled_step_equals_eager_and_is_compiled(cls, kw):
    arrays = _params(0)
    before = jitorch.jit.stats().get("interpreted_runs", 0)
    ps, opt = _run(cls, kw, arrays, 3, True, lrs=[0.1, 0.05, 0.02])
    assert opt._fn.fallbacks == {}
    assert opt._fn.why_interpreted == {}
    assert jitorch.jit.stats().get("interpreted_runs", 0) == before
    ref, _ = _run(cls, kw, arrays, 3, False, lrs=[0.1, 0.05, 0.02])
    for p, q in zip(ps, ref):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_default_step_is_eager_and_fused_is_compiled():
    arrays = _params(3, mixed=False)
    calls = jitorch.jit.stats()["calls"]
    _run("SGD", dict(lr=0.1), arrays, 1, True)
    assert jitorch.jit.stats()["calls"] == calls      # no scripted call
    _run("SGD", dict(lr=0.1, fused=True), arrays, 1, True)
    assert jitorch.jit.stats()["calls"] > calls


def test_changing_lr_does_not_recompile():
    arrays = _params(2, mixed=False)
    ps, opt = _run("SGD", dict(lr=0.1, momentum=0.9, fused=True), arrays, 2, True)
    n = len(opt._fn.scripted.stats["specializations"]) \
        if "specializations" in opt._fn.scripted.stats else None
    compiles = jitorch.jit.stats()["compiles"]
    for lr in (0.3, 0.01):
        opt.param_groups[0]["lr"] = lr
        for p in ps:
            p.grad = jitorch.ones_like(p)
        opt.step()
    assert jitorch.jit.stats()["compiles"] == compiles
    if n is not None:
        assert len(opt._fn.scripted.stats["specializations"]) == n


def test_list_argument_writes_reach_the_caller():
    from typing import List

    @jitorch.script
    def scale(xs: List[jitorch.Tensor], a: float):
        for i in range(len(xs)):
            xs[i].mul_(a).add_(1.0)

    xs = [jitorch.ones(3), jitorch.ones(2) * 2]
    scale(xs, 3.0)
    assert xs[0].tolist() == [4.0] * 3 and xs[1].tolist() == [7.0] * 2
    assert not any("scale" in str(k) for k in scale.stats["interpreted"].values())
    assert scale.stats["interpreted"] == {}
