"""Library composites (nn.functional & co) compile inside @script (script/frontend/composite.py):
values and gradients equal eager, sizes change without recompiling, and calls outside what a
compiled twin covers (a non-constant dim) still run (through the interpreter)."""
import numpy as np
import pytest

import jitorch
import jitorch.nn.functional as F
from jitorch import jit


def block(x, w, b, g, beta, tgt):
    h = F.layer_norm(F.linear(x, w, b), (8,), g, beta, 1e-5)
    h = F.dropout(h, 0.1, False)
    return F.cross_entropy(h * F.softmax(h, -1), tgt)


def norms(x, rm, rv, wc):
    a = F.group_norm(x, 2, wc, None, 1e-5) + F.batch_norm(x, rm, rv, wc, None, False, 0.1, 1e-5)
    return a + F.rms_norm(x, (5,), None, 1e-6) + F.normalize(x, 2.0, 1) + x.log_softmax(1)


def losses(x, t, cls):
    a = F.mse_loss(x, t) + F.l1_loss(x, t, reduction="sum") + F.smooth_l1_loss(x, t)
    b = F.huber_loss(x, t, delta=0.5) + F.softmin(x, 1).sum() + F.gelu(x, approximate="tanh").sum()
    return a + b + F.nll_loss(x, cls) + F.cross_entropy(x, cls, label_smoothing=0.1)


block_s, norms_s, losses_s = jitorch.script(block), jitorch.script(norms), jitorch.script(losses)


def _counts():
    s = jit.stats()
    return s["interpreted_runs"], s["compiles"]


def _block_args(n, gen):
    x = jitorch.randn(n, 4, generator=gen)
    ps = [jitorch.randn(8, 4, generator=gen), jitorch.randn(8, generator=gen),
          jitorch.randn(8, generator=gen), jitorch.randn(8, generator=gen)]
    for p in ps:
        p.requires_grad_(True)
    return [x] + ps + [jitorch.randint(0, 8, (n,), generator=gen)]


def test_block_compiled_values_and_grads_across_sizes():
    gen = jitorch.Generator().manual_seed(0)
    before = None
    for n in (5, 7):
        args = _block_args(n, gen)
        out = block_s(*args)
        ref_args = [a.detach().requires_grad_(a.requires_grad) for a in args]
        ref = block(*ref_args)
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-4)
        out.backward()
        ref.backward()
        for a, r in zip(args[1:5], ref_args[1:5]):
            np.testing.assert_allclose(a.grad.numpy(), r.grad.numpy(), rtol=1e-3, atol=1e-5)
        before = before or _counts()  # forward and backward compiled; the next size must not
    assert _counts() == before
    assert not block_s.stats["interpreted"]  # this function's own record (the global one
    # also holds other test files' fallbacks under pytest-xdist)


def test_norms_compiled_across_sizes():
    gen = jitorch.Generator().manual_seed(1)
    rm, rv = jitorch.randn(4, generator=gen), jitorch.rand(4, generator=gen) + 0.5
    wc = jitorch.randn(4, generator=gen)
    before = None
    for n in (3, 6):
        x = jitorch.randn(n, 4, 5, generator=gen)
        np.testing.assert_allclose(norms_s(x, rm, rv, wc).numpy(), norms(x, rm, rv, wc).numpy(),
                                   rtol=1e-4, atol=1e-5)
        before = before or _counts()
    assert _counts() == before
    assert before[0] == _counts()[0]


def test_losses_compiled_across_sizes():
    gen = jitorch.Generator().manual_seed(2)
    start = _counts()[0]
    before = None
    for n in (3, 6):
        x, t = jitorch.randn(n, 4, generator=gen), jitorch.randn(n, 4, generator=gen)
        cls = jitorch.tensor([-100] + [i % 4 for i in range(n - 1)])
        np.testing.assert_allclose(losses_s(x, t, cls).numpy(), losses(x, t, cls).numpy(),
                                   rtol=1e-4)
        before = before or _counts()
    assert _counts() == before
    assert _counts()[0] == start  # nothing interpreted


def test_non_constant_static_args_fall_back_to_eager():
    @jitorch.script
    def f(x, d: int):
        return F.softmax(x, d)
    x = jitorch.randn(3, 4)
    np.testing.assert_allclose(f(x, 0).numpy(), F.softmax(x, 0).numpy(), rtol=1e-5)


def test_probability_targets_raise_instead_of_being_read_as_indices():
    @jitorch.script
    def ce(x, y):
        return F.cross_entropy(x, y)

    x = jitorch.randn(4, 3)
    idx = jitorch.tensor([0, 2, 1, 1])
    assert ce(x, idx).item() == pytest.approx(F.cross_entropy(x, idx).item(), rel=1e-5)
    with pytest.raises(NotImplementedError, match="class-probability"):
        ce(x, jitorch.softmax(jitorch.randn(4, 3), 1))
