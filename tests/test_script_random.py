"""Random ops in scripted code: dropout compiles in training mode, drawing its mask from
jitorch's Philox stream (jitorch/_philox.py), so that after the same `manual_seed` a compiled
call, an interpreted call and eager code give the same masks and advance the generator alike;
random ops that do not compile name themselves in the interpreted reason.

Run with JITORCH_STRICT=1 (a compiler error raises instead of falling back): compiled here
means no program of the function ran in the interpreter (`jit.stats()`).
"""
import numpy as np
import pytest

import jitorch
import jitorch.nn as nn
import jitorch.nn.functional as F
from jitorch import jit


@pytest.fixture(autouse=True)
def strict(monkeypatch):
    monkeypatch.setenv("JITORCH_STRICT", "1")
    jit.reset_stats()


def _compiled():
    s = jit.stats()
    assert s.interpreted_reasons == {} and s.interpreted_runs == 0, s.interpreted_reasons


def _state():
    return jitorch.get_rng_state().numpy().copy()


class _Net(nn.Module):
    def __init__(self, p=0.3):
        super().__init__()
        self.lin = nn.Linear(8, 6)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(self.lin(x).tanh())


def test_philox_known_answers():
    # Random123's known-answer vectors for philox4x32-10
    from jitorch._philox import philox4x32
    u = np.uint64
    cases = [((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
             ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                                     0x6d5451fd)),
             ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
              (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]
    for c, k, want in cases:
        assert tuple(int(w) for w in philox4x32(*map(u, c), *map(u, k))) == want


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_and_the_kernel_draw_the_same_masks(dtype):
    # eager code draws with NumPy until Numba is loaded, then with the programs' kernel
    from jitorch import _philox
    _philox.fill_dropout_mask  # noqa: B018 (loads Numba: dropout_mask takes the kernel)
    for n, p in ((1, 0.5), (6, 0.1), (1023, 0.35), (4096, 0.9)):
        jitorch.manual_seed(4)
        a = _philox.numpy_dropout_mask((n,), p, dtype)
        st = _state()
        jitorch.manual_seed(4)
        b = _philox.dropout_mask((n,), p, dtype)
        assert a.dtype == b.dtype == dtype
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(st, _state())


def test_dropout_module_compiles_forward_and_backward_like_eager():
    jitorch.manual_seed(0)
    m = _Net()
    sm = jit.script(m)
    x = jitorch.randn(5, 8, dtype=jitorch.float32, requires_grad=True)
    for seed in (1, 2):
        jitorch.manual_seed(seed)
        ys = sm(x)
        ys.sum().backward()
        gs, gw, st = x.grad.clone(), m.lin.weight.grad.clone(), _state()
        x.grad = m.lin.weight.grad = m.lin.bias.grad = None
        jitorch.manual_seed(seed)
        ye = m(x)
        ye.sum().backward()
        # the same mask (same zeros) and values, the generator advanced alike
        np.testing.assert_array_equal(ys.detach().numpy() == 0, ye.detach().numpy() == 0)
        assert (ye.detach().numpy() == 0).any() and (ye.detach().numpy() != 0).any()
        np.testing.assert_allclose(ys.detach().numpy(), ye.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
        # (float32 sums over the batch in another order: rounding only)
        np.testing.assert_allclose(gs.numpy(), x.grad.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(gw.numpy(), m.lin.weight.grad.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(st, _state())
        x.grad = m.lin.weight.grad = m.lin.bias.grad = None
    _compiled()
    assert "prim::PythonOp" not in str(sm.forward.graph_for(x))


@pytest.mark.parametrize("dtype", [jitorch.float32, jitorch.float64])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)])
def test_compiled_mask_is_eagers_bit_for_bit(dtype, shape):
    @jit.script
    def f(x):
        return F.dropout(x, 0.4)
    x = jitorch.randn(*shape, dtype=dtype) + 3.0
    jitorch.manual_seed(11)
    a = f(x)
    sa = _state()
    jitorch.manual_seed(11)
    b = F.dropout(x, 0.4)
    assert a.dtype is dtype and jitorch.equal(a, b)
    np.testing.assert_array_equal(sa, _state())
    _compiled()
    assert not f.stats["interpreted"]


def test_two_calls_draw_different_masks_and_a_seed_repeats_them():
    @jit.script
    def f(x):
        return F.dropout(x, 0.5) * 3.0 + F.dropout(x, 0.5)

    def eager(x):
        return F.dropout(x, 0.5) * 3.0 + F.dropout(x, 0.5)
    x = jitorch.ones(64, 32)
    jitorch.manual_seed(3)
    a, b = f(x), f(x)
    assert not jitorch.equal(a, b)
    # the two masks of one call differ too, and are drawn in the program's order
    assert set(np.unique(a.numpy()).tolist()) == {0.0, 2.0, 6.0, 8.0}
    jitorch.manual_seed(3)
    assert jitorch.equal(f(x), a) and jitorch.equal(f(x), b)
    jitorch.manual_seed(3)
    assert jitorch.equal(eager(x), a) and jitorch.equal(eager(x), b)
    kept = (a.numpy() != 0).mean()
    assert 0.7 < kept < 0.8  # 1 - 0.5 ** 2
    _compiled()


def test_the_interpreter_draws_the_compiled_programs_masks():
    from jitorch.script.ir import interpreter

    @jit.script
    def f(x):
        return F.dropout(x * 2.0, 0.25)
    x = jitorch.randn(6, 9)
    jitorch.manual_seed(5)
    compiled = f(x)
    g = f.graph_for(x)
    jitorch.manual_seed(5)
    interpreted = interpreter.run_graph(g, [x])[0]
    assert jitorch.equal(compiled, interpreted)
    _compiled()


def test_eval_mode_is_the_identity_and_draws_nothing():
    m = _Net().eval()
    sm = jit.script(m)
    x = jitorch.randn(4, 8)
    before = _state()
    np.testing.assert_allclose(sm(x).detach().numpy(), m.lin(x).tanh().detach().numpy(),
                               rtol=1e-6)
    np.testing.assert_array_equal(before, _state())
    _compiled()


def test_p_zero_and_p_one_as_pytorch():
    @jit.script
    def zero(x):
        return F.dropout(x, 0.0, True) * 1.0

    @jit.script
    def one(x):
        return F.dropout(x * 1.0, 1.0, True)
    x = jitorch.randn(3, 4, requires_grad=True)
    before = _state()
    y0 = zero(x)
    np.testing.assert_array_equal(y0.detach().numpy(), x.detach().numpy())
    y1 = one(x)
    np.testing.assert_array_equal(y1.detach().numpy(), np.zeros((3, 4), np.float32))
    y1.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 4), np.float32))
    np.testing.assert_array_equal(before, _state())  # neither draws
    _compiled()


def test_gradient_matches_finite_differences_with_a_fixed_mask():
    @jit.script
    def f(x, w):
        return (F.dropout(x, 0.3) * w).sin().sum()

    def fixed(x, w):  # the same mask on every evaluation
        jitorch.manual_seed(21)
        return f(x, w)
    x = jitorch.randn(4, 5, dtype=jitorch.float64, requires_grad=True)
    w = jitorch.randn(4, 5, dtype=jitorch.float64, requires_grad=True)
    assert jitorch.autograd.gradcheck(fixed, (x, w))
    _compiled()


def test_in_place_dropout_compiles():
    @jit.script
    def f(x):
        y = x * 1.0
        F.dropout(y, 0.5, True, True)
        return y
    x = jitorch.ones(10, 10)
    jitorch.manual_seed(2)
    a = f(x)
    jitorch.manual_seed(2)
    assert jitorch.equal(a, F.dropout(x, 0.5))
    _compiled()


def test_attention_dropout_compiles_in_training_mode():
    jitorch.manual_seed(0)
    m = nn.MultiheadAttention(8, 2, dropout=0.5)

    class Att(nn.Module):
        def __init__(self):
            super().__init__()
            self.att = m

        def forward(self, q):
            return self.att(q, q, q, need_weights=False)[0]
    eager = Att()
    sm = jit.script(eager)
    q = jitorch.randn(3, 2, 8, requires_grad=True)
    jitorch.manual_seed(9)
    ys = sm(q)
    ys.sum().backward()
    gs = q.grad.clone()
    q.grad = None
    jitorch.manual_seed(9)
    ye = eager(q)
    ye.sum().backward()
    np.testing.assert_allclose(ys.detach().numpy(), ye.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gs.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    _compiled()


def test_rng_state_round_trip_restores_dropout_masks():
    x = jitorch.ones(50)
    st = jitorch.get_rng_state()
    a = F.dropout(x, 0.5)
    with jitorch.random.fork_rng():
        F.dropout(x, 0.5)
    b = F.dropout(x, 0.5)
    jitorch.set_rng_state(st)
    assert jitorch.equal(F.dropout(x, 0.5), a) and jitorch.equal(F.dropout(x, 0.5), b)


def test_vmap_refuses_the_mask_in_randomness_error_mode():
    from jitorch.func import vmap
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda r: F.dropout(r, 0.5))(jitorch.ones(3, 40))


def test_a_random_op_that_is_not_compiled_is_named_in_the_reason(monkeypatch):
    monkeypatch.delenv("JITORCH_STRICT")

    @jit.script
    def noise(x):
        return x * jitorch.rand_like(x)

    @jit.script
    def normal(x):
        return x + jitorch.randn(3)
    noise(jitorch.ones(3, requires_grad=True)).sum().backward()  # autodiff's reason
    normal(jitorch.ones(3))  # the code generator's
    reasons = " | ".join(jit.stats().interpreted_reasons)
    assert "'rand_like'" in reasons and "'randn'" in reasons, reasons


def test_trace_records_the_mask_and_save_load_keep_it(tmp_path):
    import warnings
    jitorch.manual_seed(0)
    m = _Net(0.5)
    x = jitorch.randn(4, 8)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tm = jit.trace(m, (x,))
    msgs = [str(i.message) for i in w]
    assert any(s.startswith("Trace had nondeterministic nodes. Did you forget call .eval() on "
                            "your model? Nodes:\n\t_dropout_mask") for s in msgs), msgs
    sm = jit.script(m)
    jit.save(sm, str(tmp_path / "m.pt"))
    lm = jit.load(str(tmp_path / "m.pt"))
    outs = []
    for f in (tm, lm, m):  # a new mask per call, the same after the same seed
        jitorch.manual_seed(8)
        outs.append((f(x).detach().numpy(), f(x).detach().numpy()))
    for a, b in outs:
        assert not np.array_equal(a == 0, b == 0)
        np.testing.assert_array_equal(a == 0, outs[-1][0] == 0)
        np.testing.assert_allclose(a, outs[-1][0], rtol=1e-6, atol=1e-7)
    _compiled()
