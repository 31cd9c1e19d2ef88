"""Scripted attention and Transformer layers run as compiled programs, not through Python.

`multi_head_attention_forward` compiles through its script twin (script/frontend/composite.py),
which needs: None for an Optional argument and bool arguments specialised per call
(types.specialize), `x.dim()`/`x.dtype` tests folded during type propagation, narrow with run-time
bounds, a raise lowered in compiled code (with the interpreter building messages the program
cannot), and `_narrow_backward` lowered for the backward. Each test checks `jit.stats()` says
compiled and compares with eager.
"""
from typing import Optional

import numpy as np
import pytest

import jitorch as jt
import jitorch.nn as nn


def _fill(shape, seed):
    n = int(np.prod(shape))
    return jt.tensor((np.sin(np.arange(n) * 0.731 + seed * 1.3) * 0.4)
                     .reshape(shape).astype(np.float32))


def _interpreted():
    return dict(jt.jit.stats()["interpreted_reasons"])


@pytest.fixture(autouse=True)
def _fresh_stats():
    jt.jit.reset_stats()


@pytest.fixture(scope="module")
def mha():
    jt.manual_seed(0)
    m = nn.MultiheadAttention(8, 2).requires_grad_(False)
    return m, jt.jit.script(m)


KPM = np.array([[False] * 5, [False] * 3 + [True] * 2, [False] * 5])
CASES = {  # one compiled specialisation each (mask presence, mask dtypes, the bool flags)
    "plain": {},
    "bool_masks_no_weights": {"attn_mask": jt.ones(5, 5).triu(1).bool(),
                              "key_padding_mask": jt.tensor(KPM), "need_weights": False},
    "float_masks_per_head": {"attn_mask": nn.Transformer.generate_square_subsequent_mask(5),
                             "key_padding_mask": jt.tensor(KPM).float() * -1e4,
                             "average_attn_weights": False},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mha_compiles_and_matches_eager(mha, case):
    m, s = mha
    q, k = _fill((5, 3, 8), 1), _fill((5, 3, 8), 2)
    got, want = s(q, k, k, **CASES[case]), m(q, k, k, **CASES[case])
    assert _interpreted() == {}
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), atol=1e-6)
    if want[1] is None:
        assert got[1] is None
    else:
        np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), atol=1e-6)


def test_mha_unbatched_and_batch_first():
    jt.manual_seed(1)
    for bf, shape, avg in ((False, (5, 8), False), (True, (3, 5, 8), True)):
        m = nn.MultiheadAttention(8, 2, batch_first=bf).requires_grad_(False)
        x = _fill(shape, 3)
        got = jt.jit.script(m)(x, x, x, average_attn_weights=avg)
        want = m(x, x, x, average_attn_weights=avg)
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-6)
    assert _interpreted() == {}


def test_encoder_compiles_forward_backward_and_checks_inputs():
    # the backward is ~1500 lines: every program compiles, whatever its size
    jt.manual_seed(2)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 1)
    s = jt.jit.script(enc)
    x = _fill((2, 4, 8), 4)
    with jt.no_grad():
        np.testing.assert_allclose(s(x).numpy(), enc(x).numpy(), atol=1e-5)
    assert _interpreted() == {}
    w = _fill((2, 4, 8), 5)
    (s(x) * w).sum().backward()
    grads = [p.grad.numpy().copy() for p in enc.parameters()]
    enc.zero_grad()
    (enc(x) * w).sum().backward()
    for a, p in zip(grads, enc.parameters()):
        np.testing.assert_allclose(a, p.grad.numpy(), atol=1e-5)
    assert _interpreted() == {}  # the backward program compiled too
    # errors from compiled code keep eager's type and message
    with jt.no_grad(), pytest.raises(RuntimeError, match="Need attn_mask"):
        s(x, is_causal=True)
    with jt.no_grad(), pytest.raises(AssertionError) as got:
        s(_fill((2, 4, 6), 6))
    with pytest.raises(AssertionError) as want:
        enc(_fill((2, 4, 6), 6))
    assert str(want.value) in str(got.value)


def test_optional_none_and_bool_arguments_specialise():
    @jt.jit.script
    def f(x, m: Optional[jt.Tensor], flag: bool):
        if m is not None:
            x = x + m
        if flag:
            return x * 2
        return x - 1

    x = jt.ones(3)
    assert f(x, None, True).tolist() == [2.0] * 3
    assert f(x, jt.ones(3), False).tolist() == [1.0] * 3
    assert f(x, None, False).tolist() == [0.0] * 3
    assert _interpreted() == {}
    assert jt.jit.stats()["compiles"] == 3


def test_rank_and_dtype_tests_fold_per_specialisation():
    @jt.jit.script
    def f(x):
        if x.dim() == 3:
            y = x.sum(0)
        else:
            y = x * 2
        if x.dtype == jt.float64:
            y = y + 1
        return y

    np.testing.assert_allclose(f(jt.ones(2, 3, 4)).numpy(), np.full((3, 4), 2.0))
    np.testing.assert_allclose(f(jt.ones(3, 4, dtype=jt.float64)).numpy(), np.full((3, 4), 3.0))
    assert _interpreted() == {}


def test_narrow_with_run_time_bounds_is_checked():
    @jt.jit.script
    def f(x, start: int, n: int):
        return x.narrow(0, start, n) * 1

    x = jt.arange(6.0)
    assert f(x, 1, 3).tolist() == [1.0, 2.0, 3.0]
    assert f(x, -2, 2).tolist() == [4.0, 5.0]
    assert _interpreted() == {}
    with pytest.raises(RuntimeError, match="exceeds dimension size") as e:  # as eager's
        f(x, 4, 3)
    assert not isinstance(e.value, IndexError)


def test_raise_in_compiled_code():
    @jt.jit.script
    def f(x, n: int):
        if n > x.size(0):
            raise ValueError(f"n={n} is larger than {list(x.shape)}")
        return x[:1] * n

    assert f(jt.ones(4), 2).tolist() == [2.0]
    assert _interpreted() == {}
    with pytest.raises(ValueError, match=r"n=5 is larger than \[4\]") as e:
        f(jt.ones(4), 5)
    assert isinstance(e.value, jt.jit.Error)


def test_embedding_compiles_with_bounds_checks_and_grad():
    jt.manual_seed(3)
    emb = nn.Embedding(6, 4, padding_idx=0)
    s = jt.jit.script(emb)
    idx = jt.tensor([[1, 0, 5], [2, 2, 3]])
    with jt.no_grad():
        np.testing.assert_allclose(s(idx).numpy(), emb(idx).numpy())
    assert _interpreted() == {}
    w = _fill((2, 3, 4), 7)
    (s(idx) * w).sum().backward()
    got = emb.weight.grad.numpy().copy()
    emb.zero_grad()
    (emb(idx) * w).sum().backward()
    np.testing.assert_allclose(got, emb.weight.grad.numpy(), atol=1e-6)
    assert not got[0].any()  # padding_idx gets no gradient
    assert _interpreted() == {}
    with jt.no_grad(), pytest.raises(IndexError, match="index out of range in self"):
        s(jt.tensor([[1, 6]]))


def test_saved_module_with_run_time_slices_loads(tmp_path):
    class Window(nn.Module):
        def forward(self, x, start: int):
            return x[:, start:start + 2] * 2

    s = jt.jit.script(Window())
    path = str(tmp_path / "w.jtz")
    jt.jit.save(s, path)
    x = jt.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(jt.jit.load(path)(x, 1).numpy(), (x[:, 1:3] * 2).numpy())


def test_row_region_with_two_row_lengths_gives_eagers_result():
    # the reduced input's rows (3) are not the output's (5): the program hands this call to
    # the interpreter instead of raising a broadcast error
    def g(s, z):
        return z + s.mean(2).sum(1, keepdim=True)

    s, z = _fill((3, 3, 5), 8), _fill((3, 5), 9)
    with jt.no_grad():
        np.testing.assert_allclose(jt.jit.script(g)(s, z).numpy(), g(s, z).numpy(), atol=1e-6)


def test_row_region_length_mismatch_raises_pytorchs_error():
    def h(x, z):
        return (x - x.amax(-1, keepdim=True)) + z

    sh = jt.jit.script(h)
    with jt.no_grad():
        np.testing.assert_allclose(sh(_fill((3, 5), 1), _fill((5,), 2)).numpy(),
                                   h(_fill((3, 5), 1), _fill((5,), 2)).numpy(), atol=1e-6)
        with pytest.raises(RuntimeError, match="must match the size"):
            sh(_fill((3, 5), 1), _fill((4,), 2))


def test_index_select_and_its_backward_compile():
    @jt.jit.script
    def f(x, i):
        return x.index_select(0, i) * 2

    x, i = _fill((4, 3), 10).requires_grad_(), jt.tensor([3, 0, 3])
    want = (x.index_select(0, i) * 2).detach().numpy()
    np.testing.assert_allclose(f(x, i).detach().numpy(), want)
    f(x, i).sum().backward()  # index_add along dim 0
    np.testing.assert_allclose(x.grad.numpy()[:, 0], [2.0, 0.0, 0.0, 4.0])
    assert _interpreted() == {}
    with pytest.raises(IndexError, match="index out of range"):
        f(x.detach(), jt.tensor([4]))


def _select_1(x, i):
    return x.index_select(1, i) * 2


def _select_2(x, i):
    return x.index_select(2, i) * 2


def _select_m1(x, i):
    return x.index_select(-1, i) * 2


def _add_1(x, i, s):
    return x.index_add(1, i, s, alpha=3)


def _add_2(x, i, s):
    return x.index_add(2, i, s, alpha=3)


def _add_m1(x, i, s):
    return x.index_add(-1, i, s, alpha=3)


@pytest.mark.parametrize("dim,sel,add", [(1, _select_1, _add_1), (2, _select_2, _add_2),
                                         (-1, _select_m1, _add_m1)], ids=["1", "2", "-1"])
def test_index_select_and_index_add_along_other_dims_compile(dim, sel, add):
    """The (outer, size(dim), inner) view: gathers and their backward along a constant dim."""
    sf, sg = jt.jit.script(sel), jt.jit.script(add)

    def f(x, i, dim):
        return sf(x, i)

    def g(x, i, s, dim):
        return sg(x, i, s)

    x, i = _fill((2, 5, 4), 10).requires_grad_(), jt.tensor([3, 0, 3])
    want = x.index_select(dim, i) * 2
    np.testing.assert_allclose(f(x, i, dim).detach().numpy(), want.detach().numpy())
    (f(x, i, dim) ** 2).sum().backward()
    got, x.grad = x.grad, None
    (want ** 2).sum().backward()
    np.testing.assert_allclose(got.numpy(), x.grad.numpy(), rtol=1e-6)
    shape = list(x.shape)
    shape[dim] = 3
    y, s = _fill((2, 5, 4), 3).detach(), _fill(tuple(shape), 7).detach()
    np.testing.assert_allclose(g(y, i, s, dim).numpy(), y.index_add(dim, i, s, alpha=3).numpy(),
                               rtol=1e-6)
    assert _interpreted() == {}
    with pytest.raises(IndexError, match="index out of range"):
        f(x.detach(), jt.tensor([5]), dim)
    with pytest.raises(RuntimeError, match="source tensor shape must match"):
        g(y, i, _fill((1, 1, 1), 1).expand(2, 2, 2).contiguous(), dim)
