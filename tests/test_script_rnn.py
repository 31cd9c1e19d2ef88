"""Scripted recurrent layers: `jitorch.jit.script(nn.LSTM / nn.GRU / nn.RNN)` (the generated
twin of `forward`, nn/modules/_rnn_script.py) and the char-LSTM example's scripted time loop
under autodiff.

Most checks differentiate the scripted graph and run forward/backward through the interpreter
(the compiled programs' reference semantics), then check that the CPU code generator lowers
both graphs (no Numba compile: fast). Two tests run compiled programs end to end (a small RNN
module and the example's `lstm_seq`); their compiles are cached on disk across runs.
"""
import os
import sys

import numpy as np
import pytest

import jitorch as t
from jitorch import nn
from jitorch.nn.modules import _rnn_script
from jitorch.script.runtime import autodiff as autodiff_rt, keys, programs
from jitorch.script.ir.interpreter import run_graph
from jitorch.script.passes.autodiff import differentiate

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import train_char_lstm  # noqa: E402


def _flat(out):
    y, hid = out
    return [y] + (list(hid) if isinstance(hid, tuple) else [hid])


def _out_grads(outs, seed=0):
    rng = np.random.default_rng(seed)
    return [t.tensor(rng.standard_normal(o.shape), dtype=o.dtype) for o in outs]


def _eager(m, x, hx):
    x = x.detach().clone().requires_grad_(True)
    m.zero_grad()
    outs = _flat(m(x, hx) if hx is not None else m(x))
    sum((o * g).sum() for o, g in zip(outs, _out_grads(outs))).backward()
    return outs, [x.grad] + [p.grad.clone() for p in m.parameters()]


def _interpreted(sm, m, x, hx):
    """Forward/backward graphs of the scripted module run by the interpreter."""
    meth = sm._methods["forward"]
    v = meth._current()
    x = x.detach().clone().requires_grad_(True)
    args, finish = v.adapter(x, hx) if hx is not None else v.adapter(x)
    full = list(args) + v.tensors(m)
    types = [keys._arg_type(a, ty, True) for a, ty in zip(full, v.sf._types)]
    g = autodiff_rt._pre_fusion(v.sf.graph, types)
    d = differentiate(g, full)
    with t.no_grad():
        res = run_graph(d.forward, full)
    k = len(g.outputs)
    outs, saved = res[:k], res[k:]
    with t.no_grad():
        grads = run_graph(d.backward, _out_grads(outs) + list(saved))
    by_input = dict(zip([id(a) for a in full], grads))
    pgrads = [by_input[id(p)] for p in m.parameters()]
    gx = grads[0]
    return _flat(finish(tuple(outs))), [gx] + pgrads, d


def _lowered(graph):
    types = [programs._symbolic(v.type) for v in graph.inputs]
    _, prog, reason = programs._lower(graph, types)
    assert prog is not None, reason


def _same(a, b, atol=1e-5):
    assert len(a) == len(b)
    for p, q in zip(a, b):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), atol=atol, rtol=1e-4)


CASES = {
    "lstm": (nn.LSTM, dict()),
    "lstm_2l_bi_bf": (nn.LSTM, dict(num_layers=2, bidirectional=True, batch_first=True)),
    "lstm_proj_nobias": (nn.LSTM, dict(proj_size=2, bias=False)),
    "gru_bi": (nn.GRU, dict(bidirectional=True)),
    "rnn_relu_2l": (nn.RNN, dict(num_layers=2, nonlinearity="relu")),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("with_state", [False, True])
def test_scripted_module_graphs_match_eager_and_lower(case, with_state):
    cls, kw = CASES[case]
    t.manual_seed(3)
    m = cls(3, 4, **kw)
    sm = t.jit.script(m)
    bf = kw.get("batch_first", False)
    x = t.randn(2, 5, 3) if bf else t.randn(5, 2, 3)
    hx = None
    if with_state:
        nd = 2 if kw.get("bidirectional") else 1
        n = kw.get("num_layers", 1) * nd
        h0 = t.randn(n, 2, kw.get("proj_size") or 4)
        hx = (h0, t.randn(n, 2, 4)) if cls is nn.LSTM else h0
    want_out, want_grads = _eager(m, x, hx)
    got_out, got_grads, d = _interpreted(sm, m, x, hx)
    _same(got_out, want_out)
    _same(got_grads, want_grads)
    _lowered(d.forward)
    _lowered(d.backward)


def test_unbatched_input_and_checks_go_through_the_adapter():
    t.manual_seed(4)
    m = nn.RNN(3, 4)  # the end-to-end test's module: its programs are shared
    sm = t.jit.script(m)
    x = t.randn(5, 3)
    got, want = sm(x), m(x)
    assert got[0].shape == (5, 4) and got[1].shape == (1, 4)
    _same(_flat(got), _flat(want))
    with pytest.raises(RuntimeError, match="input_size"):
        sm(t.randn(5, 2, 7))
    with pytest.raises(RuntimeError, match="Expected hidden size"):
        sm(t.randn(5, 2, 3), t.randn(2, 2, 4))


def test_twin_source_is_shared_and_names_parameters():
    a, b = nn.LSTM(3, 4, num_layers=2), nn.LSTM(3, 4, num_layers=2)
    src = _rnn_script.source(a)
    assert "self.weight_hh_l1" in src and "out1[t] = h" in src
    assert _rnn_script.twin(a)[0] is _rnn_script.twin(b)[0]
    bi = _rnn_script.source(nn.GRU(3, 4, bidirectional=True, dropout=0.5, num_layers=2))
    assert "weight_ih_l0_reverse" in bi and "F.dropout" in bi


def test_dropout_between_layers_only_in_training():
    t.manual_seed(5)
    m = nn.RNN(3, 4, num_layers=2, dropout=0.5)
    sm = t.jit.script(m)
    x = t.randn(4, 2, 3)
    sm.eval()
    m.eval()
    want_out, want_grads = _eager(m, x, None)
    got_out, got_grads, _ = _interpreted(sm, m, x, None)
    _same(got_out, want_out)
    _same(got_grads, want_grads)
    assert "dropout" not in str(sm.graph)
    sm.train()
    assert "dropout" in str(sm.graph)  # a new variant (guarded on `training`)


# --- end to end: compiled programs ----------------------------------------------------------------
def _stats():
    s = t.jit.stats()
    return s["compiles"], s["interpreted_runs"]


def test_scripted_rnn_module_compiles_forward_and_backward():
    t.manual_seed(6)
    m = nn.RNN(3, 4)
    sm = t.jit.script(m)
    x = t.randn(5, 2, 3)
    _, interp0 = _stats()
    want_out, want_grads = _eager(m, x, None)
    xs = x.detach().clone().requires_grad_(True)
    m.zero_grad()
    outs = _flat(sm(xs))
    sum((o * g).sum() for o, g in zip(outs, _out_grads(outs))).backward()
    _same(outs, want_out)
    _same([xs.grad] + [p.grad for p in m.parameters()], want_grads)
    compiles, interp = _stats()
    assert interp == interp0, t.jit.stats()["interpreted_reasons"]
    # another sequence length and batch reuse the programs
    sm(t.randn(7, 3, 3, requires_grad=True))[0].sum().backward()
    assert _stats() == (compiles, interp)


def test_char_lstm_example_backward_is_compiled():
    seq = train_char_lstm.lstm_seq
    t.manual_seed(7)
    T, B, E, H = 4, 2, 3, 5
    base = [t.randn(T, B, E), t.randn(4 * H, E), t.randn(4 * H), t.randn(4 * H, H),
            t.randn(4 * H)]
    h, c = t.randn(B, H), t.randn(B, H)

    def grads(fn):
        args = [a.detach().clone().requires_grad_(True) for a in base]
        hs, h1, c1 = fn(*args, h, c)
        ((hs * hs).sum() + h1.sum() + (c1 * 2).sum()).backward()
        return [a.grad for a in args]

    _, interp0 = _stats()
    _same(grads(seq), grads(train_char_lstm.lstm_seq_eager), atol=1e-4)
    assert _stats()[1] == interp0, t.jit.stats()["interpreted_reasons"]


class _Tagger(nn.Module):
    """A model calling a recurrent layer inside its scripted forward."""

    def __init__(self, cls, **kw):
        super().__init__()
        self.rnn = cls(3, 4, **kw)
        self.head = nn.Linear(8 if kw.get("bidirectional") else 4, 2)

    def forward(self, x, h0):
        y, _ = self.rnn(x)
        z, hn = self.rnn(x, h0)
        return self.head(y) + self.head(z), hn


class _LSTMTagger(_Tagger):
    def forward(self, x, h0):
        y, (h, c) = self.rnn(x)
        z, (h2, c2) = self.rnn(x, (h0, h0 * 2.0))
        return self.head(y) + self.head(z), h2 + c


@pytest.mark.parametrize("model", ["lstm_bf", "gru_bi"])
def test_recurrent_layer_inside_a_scripted_model(model):
    t.manual_seed(8)
    m = _LSTMTagger(nn.LSTM, batch_first=True) if model == "lstm_bf" else \
        _Tagger(nn.GRU, bidirectional=True)
    sm = t.jit.script(m)
    nd = 1 if model == "lstm_bf" else 2
    x = t.randn(2, 5, 3) if model == "lstm_bf" else t.randn(5, 2, 3)
    h0 = t.randn(nd, 2, 4)
    xs = x.clone().requires_grad_(True)
    m.zero_grad()
    want = m(xs, h0)
    sum((o * g).sum() for o, g in zip(want, _out_grads(want))).backward()
    want_grads = [xs.grad] + [p.grad.clone() for p in m.parameters()]
    v = sm._methods["forward"]._current()
    full = [x.clone().requires_grad_(True), h0] + v.tensors(m)
    types = [keys._arg_type(a, ty, True) for a, ty in zip(full, v.sf._types)]
    g = autodiff_rt._pre_fusion(v.sf.graph, types)
    d = differentiate(g, full)
    with t.no_grad():
        res = run_graph(d.forward, full)
        outs = res[:len(g.outputs)]
        grads = run_graph(d.backward, _out_grads(outs) + list(res[len(g.outputs):]))
    _same(outs, want)
    by_input = dict(zip([id(a) for a in full], grads))
    _same([grads[0]] + [by_input[id(p)] for p in m.parameters()], want_grads)
    _lowered(d.forward)
    _lowered(d.backward)
