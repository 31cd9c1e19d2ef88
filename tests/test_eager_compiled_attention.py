"""Eager calls of nn.MultiheadAttention and nn.TransformerEncoderLayer served by their compiled
flat function (nn/modules/_eager_compiled.py): the same values and gradients (inputs and every
parameter) as the eager path (`JITORCH_EAGER_COMPILED_LAYERS=0`), dropout in training mode
included (the same random stream as eager), the compiled tier counted in `jitorch.jit.stats()`, the
eager errors, and the eager path kept where a submodule has a hook. Two configurations only:
each is a forward and a backward program to compile."""
from __future__ import annotations

import numpy as np
import pytest

import jitorch as jt
from jitorch import nn
from jitorch.nn.modules import _eager_compiled

from eager_layer_checks import check_compiled_matches_eager

E, H, L, S, B = 8, 2, 5, 4, 2


def _t(shape, seed, grad=True):
    g = np.random.default_rng(seed)
    return jt.tensor(g.standard_normal(shape).astype(np.float32), requires_grad=grad)


KPM = jt.tensor(np.array([[False] * S, [False] * (S - 1) + [True]]))


def _mha_case():
    """Cross-attention, batch_first, a key padding mask, the averaged weights returned, dropout
    of the weights in training mode."""
    m = nn.MultiheadAttention(E, H, dropout=0.25, batch_first=True)
    return m, (_t((B, L, E), 1), _t((B, S, E), 2), _t((B, S, E), 3)), \
        dict(key_padding_mask=KPM, need_weights=True)


def _encoder_case():
    """Post-norm, gelu, a float causal mask (no dropout: each dropout site is a Philox mask
    to compile, and the MHA case has one)."""
    m = nn.TransformerEncoderLayer(E, H, 16, dropout=0.0, activation="gelu")
    return m, (_t((L, B, E), 4),), dict(src_mask=nn.Transformer.generate_square_subsequent_mask(L))


CASES = {"nn.MultiheadAttention[eager]": _mha_case,
         "nn.TransformerEncoderLayer[eager]": _encoder_case}


def _step(m, args, kwargs):
    """Outputs and every gradient of one forward+backward (the seed reset: dropout masks)."""
    for t in [*args, *m.parameters()]:
        t.grad = None
    jt.manual_seed(7)
    res = m(*args, **kwargs)
    outs = list(res) if isinstance(res, tuple) else [res]
    (outs[0] * outs[0]).sum().backward()
    return [o.detach().numpy() for o in outs] + \
        [t.grad.numpy() for t in [*args, *m.parameters()]]


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_layer_matches_the_eager_path(name, monkeypatch):
    jt.manual_seed(0)
    m, args, kwargs = CASES[name]()
    check_compiled_matches_eager(lambda: _step(m, args, kwargs),
                                 lambda: jt.jit.stats()["functions"][name], monkeypatch)


def _error(m, *args, **kwargs):
    with pytest.raises(Exception) as e:
        m(*args, **kwargs)
    return type(e.value), str(e.value)


def test_errors_are_the_eager_forms(monkeypatch):
    # (the eager path runs its LayerNorm compiled: not the layer's function this counts)
    monkeypatch.setattr(_eager_compiled, "functional", lambda *a, **k: None)
    mha = nn.MultiheadAttention(E, H)
    enc = nn.TransformerEncoderLayer(E, H, 16, dropout=0.0, norm_first=True)
    x, y = jt.randn(L, B, E), jt.randn(S, B, E)
    bad = [(mha, (x, y, y[:, :1]), {}),  # key and value batch sizes differ
           (mha, (jt.randn(L, B, E + 1), y, y), {}),  # wrong embedding size
           (mha, (x, y, y), dict(key_padding_mask=jt.zeros(B, S + 1).bool())),
           (mha, (x, y, y), dict(attn_mask=jt.zeros(L, S, dtype=jt.int64))),
           (mha, (x, y, y), dict(is_causal=True)),  # the hint needs a mask
           (mha, (jt.randn(B, L, E, 1), y, y), {}),
           (enc, (jt.randn(L, B, E + 2),), {}),  # pre-norm: LayerNorm's message first
           (enc, (x,), dict(src_mask=jt.zeros(L + 1, L))),
           (enc, (x,), dict(src_key_padding_mask=jt.zeros(B + 1, L).bool()))]
    for m, args, kwargs in bad:
        monkeypatch.setenv(_eager_compiled.ENV, "0")
        want = _error(m, *args, **kwargs)
        monkeypatch.setenv(_eager_compiled.ENV, "1")
        before = jt.jit.stats()["calls"]
        assert _error(m, *args, **kwargs) == want
        assert jt.jit.stats()["calls"] == before  # rejected before any compiled call


def test_a_hooked_submodule_keeps_the_eager_path(monkeypatch):
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    enc = nn.TransformerEncoderLayer(E, H, 16, dropout=0.0)
    seen = []
    enc.linear1.register_forward_hook(lambda mod, inp, out: seen.append(out.shape))
    name = "nn.TransformerEncoderLayer[eager]"
    before = jt.jit.stats()["functions"].get(name, {}).get("calls", 0)
    x = jt.randn(L, B, E)
    with jt.no_grad():
        got = enc(x)
        monkeypatch.setenv(_eager_compiled.ENV, "0")
        want = enc(x)
    assert seen == [(L, B, 16)] * 2  # the hook ran: the eager forward called the submodule
    assert jt.jit.stats()["functions"].get(name, {}).get("calls", 0) == before
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_bias_kv_attention_keeps_the_eager_path(monkeypatch):
    """bias_k / bias_v (a rare variant the flat source does not write out): the eager path."""
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    jt.manual_seed(0)
    m = nn.MultiheadAttention(E, H, add_bias_kv=True)
    x = jt.randn(L, E)  # unbatched
    before = jt.jit.stats()["calls"]
    with jt.no_grad():
        out, w = m(x, x, x)
    assert jt.jit.stats()["calls"] == before
    assert tuple(out.shape) == (L, E) and tuple(w.shape) == (L, L + 1)
