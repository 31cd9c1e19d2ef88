"""Eager calls of nn.RNN / nn.LSTM / nn.GRU served by their fused whole-sequence loops
(nn/modules/_rnn_fused.py: one autograd node) or their compiled whole-sequence function
(nn/modules/_eager_compiled.py): the same values, gradients (weights, input, initial states,
second order) and errors as the eager per-step loop (`JITORCH_EAGER_COMPILED_LAYERS=0`), the
compiled tier counted in `jitorch.jit.stats()`, and a first call under background compiles
answered at once. Small shapes, few configurations: each scripted one is a forward and a
backward program to compile."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import jitorch as jt
from jitorch import nn
from jitorch.nn.modules import _eager_compiled, _rnn_fused

from eager_layer_checks import check_compiled_matches_eager

IN, HID, T, B = 3, 4, 5, 2

CASES = {  # name: (layer, its kwargs, initial states given); together: 2 layers,
    # bidirectional, batch_first, states given and not (a small set); the fused loops
    # (nn/modules/_rnn_fused.py) serve these
    "lstm-batch_first-states": (nn.LSTM, dict(batch_first=True), True),
    "gru-2layer-no-states": (nn.GRU, dict(num_layers=2), False),
    "rnn-relu-bidir-states": (nn.RNN, dict(bidirectional=True, nonlinearity="relu"), True),
    "lstm-tanh-bidir-2layer": (nn.LSTM, dict(bidirectional=True, num_layers=2), False),
    "gru-bidir-no-bias": (nn.GRU, dict(bidirectional=True, bias=False), True),
}
SCRIPTED = {  # ... and the scripted composite this one (a projection: compiles twice)
    "lstm-proj-states": (nn.LSTM, dict(proj_size=2), True),
}

def _inputs(m, batched=True, T_=T):
    g = np.random.default_rng(0)
    nd = 2 if m.bidirectional else 1
    shape = (B, T_, IN) if m.batch_first else (T_, B, IN)
    x = jt.tensor(g.standard_normal(shape if batched else (T_, IN)).astype(np.float32),
                  requires_grad=True)
    lead = (m.num_layers * nd, B) if batched else (m.num_layers * nd,)
    sizes = [m.proj_size or HID] + ([HID] if m.mode == "LSTM" else [])  # h (projected), c
    states = [jt.tensor(g.standard_normal(lead + (n,)).astype(np.float32), requires_grad=True)
              for n in sizes]
    return x, states


def _step(m, x, states):
    """Output, final states and every gradient of one forward+backward."""
    for t in [x, *states, *m.parameters()]:
        t.grad = None
    if states:
        out, hn = m(x, tuple(states) if m.mode == "LSTM" else states[0])
    else:
        out, hn = m(x)
    hn = list(hn) if isinstance(hn, tuple) else [hn]
    loss = (out * out).sum() + sum((h * (k + 2)).sum() for k, h in enumerate(hn))
    loss.backward()
    return [out.detach().numpy()] + [h.detach().numpy() for h in hn] + \
        [t.grad.numpy() for t in [x, *states, *m.parameters()]]



def _fused_case(name, T_=T, dtype=np.float32):
    cls, kw, given = CASES[name]
    jt.manual_seed(0)
    m = cls(IN, HID, **kw)
    if dtype == np.float64:
        m.double()
    x, states = _inputs(m, T_=T_)
    x, states = (x.detach().to(jt.float64).requires_grad_(True),
                 [s.detach().to(jt.float64).requires_grad_(True) for s in states]) \
        if dtype == np.float64 else (x, states)
    return m, x, states if given else []


def _fused_matches_eager(m, x, states, monkeypatch, tol):
    monkeypatch.setenv(_eager_compiled.ENV, "0")
    want = _step(m, x, states)
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    calls = jt.jit.stats()["calls"]
    layer = f"nn.{type(m).__name__}"
    fused = jt.jit.stats()["fused_layers"].get(layer, 0)
    out, _ = m(x, *([tuple(states) if m.mode == "LSTM" else states[0]] if states else []))
    assert jt.jit.stats()["fused_layers"][layer] == fused + 1  # jit.stats() shows the call
    # the whole sequence (all layers, directions, steps) is one autograd node
    assert type(out.grad_fn).__name__ == "_FunctionNode" and out.grad_fn.name() == "_SeqBackward"
    got = _step(m, x, states)
    assert jt.jit.stats()["calls"] == calls  # no scripted function ran
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", list(CASES))
def test_fused_layer_matches_the_eager_loop(name, monkeypatch):
    _fused_matches_eager(*_fused_case(name), monkeypatch, 1e-5)


def test_fused_layer_long_sequence_float64(monkeypatch):
    """60 steps in float64: gradients through the whole recurrence match the eager loop's to
    float64 precision (the weight gradients are one matmul over the sequence)."""
    _fused_matches_eager(*_fused_case("lstm-tanh-bidir-2layer", T_=60, dtype=np.float64),
                         monkeypatch, 1e-10)


PACKED = {  # name: (layer, its kwargs, initial states given, enforce_sorted, dtype)
    "lstm-bidir-2layer-unsorted": (nn.LSTM, dict(bidirectional=True, num_layers=2), True, False,
                                   np.float32),
    "lstm-f64": (nn.LSTM, {}, False, False, np.float64),
    "gru-2layer-sorted": (nn.GRU, dict(num_layers=2), True, True, np.float32),
    "rnn-tanh-bidir-unsorted": (nn.RNN, dict(bidirectional=True), False, False, np.float32),
    "rnn-relu-bidir-2layer": (nn.RNN, dict(bidirectional=True, num_layers=2,
                                           nonlinearity="relu"), True, False, np.float32),
}
LENGTHS = [3, 5, 1, 5]  # unsorted, a tie, a sequence of one step


def _packed_inputs(m, dtype=np.float32):
    """A padded batch of len(LENGTHS) sequences (T, B', IN) and initial states, as `_inputs`."""
    g = np.random.default_rng(0)
    nd = 2 if m.bidirectional else 1
    lead = (m.num_layers * nd, len(LENGTHS), HID)
    arrays = [g.standard_normal((max(LENGTHS), len(LENGTHS), IN))] + \
        [g.standard_normal(lead) for _ in range(2 if m.mode == "LSTM" else 1)]
    x, *states = [jt.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    return x, states


def _packed_step(m, x, states, enforce_sorted, create_graph=False):
    """`_step` on `pack_padded_sequence(x, LENGTHS)`: packed output, final states, gradients
    (second order through the input gradient where `create_graph`)."""
    from jitorch.nn.utils.rnn import pack_padded_sequence
    lengths = LENGTHS if not enforce_sorted else sorted(LENGTHS, reverse=True)
    for t in [x, *states, *m.parameters()]:
        t.grad = None
    p = pack_padded_sequence(x, lengths, enforce_sorted=enforce_sorted)
    out, hn = m(p, *([tuple(states) if m.mode == "LSTM" else states[0]] if states else []))
    hn = list(hn) if isinstance(hn, tuple) else [hn]
    loss = (out.data * out.data).sum() + sum((h * (k + 2)).sum() for k, h in enumerate(hn))
    if create_graph:
        g, = jt.autograd.grad(loss, x, create_graph=True)
        loss = (g * g).sum()
    loss.backward()
    return out.data.grad_fn.name(), [out.data.detach().numpy()] + \
        [h.detach().numpy() for h in hn] + [t.grad.numpy() for t in [x, *states, *m.parameters()]]


@pytest.mark.parametrize("name", list(PACKED))
def test_packed_input_served_by_the_fused_loops(name, monkeypatch):
    """A PackedSequence input runs the fused loops (the sequences still running at each step;
    counted as "nn.<Layer>[packed]" in jit.stats()): the eager packed loop's output, final
    states (each sequence's at its own length, given states in the batch's order) and
    gradients of the input, the states and every weight."""
    cls, kw, given, enforce_sorted, dtype = PACKED[name]
    jt.manual_seed(0)
    m = cls(IN, HID, **kw)
    if dtype == np.float64:
        m.double()
    x, states = _packed_inputs(m, dtype)
    states = states if given else []
    monkeypatch.setenv(_eager_compiled.ENV, "0")
    _, want = _packed_step(m, x, states, enforce_sorted)
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    key = f"nn.{cls.__name__}[packed]"
    fused = jt.jit.stats()["fused_layers"].get(key, 0)
    how, got = _packed_step(m, x, states, enforce_sorted)
    assert jt.jit.stats()["fused_layers"].get(key, 0) == fused + 1
    assert how == "_SeqBackward"  # one node for every layer, direction and step
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_packed_input_fused_matches_pytorch_and_second_order(monkeypatch):
    """The fused loops on a packed reference case (tests/data/rnn_packed_refs.npz: PyTorch
    2.13's values and gradients, float64; 2 layers, both directions, unsorted, states given)
    and create_graph=True through the fused packed node (the eager loop run again and
    differentiated: its second-order gradients)."""
    from gen_rnn_packed_refs import run_case
    refs = np.load(os.path.join(os.path.dirname(__file__), "data", "rnn_packed_refs.npz"))
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    fused = jt.jit.stats()["fused_layers"].get("nn.LSTM[packed]", 0)
    got, _, _ = run_case(jt, "lstm_2l_bi")  # (the other cases: loops of other dtypes)
    assert jt.jit.stats()["fused_layers"]["nn.LSTM[packed]"] == fused + 1
    for key, value in got.items():
        np.testing.assert_allclose(value, refs[f"lstm_2l_bi/{key}"], rtol=1e-9, atol=1e-11,
                                   err_msg=key)
    jt.manual_seed(0)
    m = nn.LSTM(IN, HID, bidirectional=True)
    x, states = _packed_inputs(m)
    monkeypatch.setenv(_eager_compiled.ENV, "0")
    _, want = _packed_step(m, x, states, False, create_graph=True)
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    how, got = _packed_step(m, x, states, False, create_graph=True)
    assert how == "_SeqBackward"
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, rows", [("lstm-tanh-bidir-2layer", 2 * B),
                                         ("lstm-batch_first-states", 1)])
def test_fused_lstm_backward_blocks_match_the_eager_loop(name, rows, monkeypatch):
    """The LSTM backward hands its gate gradients to the weight and input gradients
    _BLOCK_ROWS // batch steps at a time; forced here to blocks of 2 steps (T = 5: the last
    block partial; both directions, 2 layers) and of 1 step (initial states given): the eager
    loop's values and gradients."""
    monkeypatch.setattr(_rnn_fused, "_BLOCK_ROWS", rows)
    _fused_matches_eager(*_fused_case(name), monkeypatch, 1e-5)


@pytest.mark.parametrize("bias", [True, False])
def test_fused_lstm_weight_panels_match_the_eager_loop(bias, monkeypatch):
    """From _PACK_ROWS batch rows up, the LSTM's per-step matmul reads [W_ih, W_hh, b]^T in
    contiguous column panels (_rnn_fused._panels; 4H = 80: the last panel partial); forced here
    at batch 2, both directions: the values and gradients of the eager loop, with and without
    biases (the folded bias row, and the weight gradients cut from one matmul)."""
    monkeypatch.setattr(_rnn_fused, "_PACK_ROWS", 1)
    cut, panels = [], _rnn_fused._panels
    monkeypatch.setattr(_rnn_fused, "_panels", lambda *a: cut.append(panels(*a)) or cut[-1])
    jt.manual_seed(0)
    m = nn.LSTM(IN, 20, bidirectional=True, bias=bias)
    x, _ = _inputs(m)
    _fused_matches_eager(m, x, [], monkeypatch, 1e-5)
    mine = [w for w in cut if w.shape[1] == IN + 20 + 1]  # (K = [x, h, 1])
    assert len(mine) == 4 and all(w.shape[0] > 1 for w in mine)  # 2 calls, 2 directions


def test_fused_lstm_sees_weights_changed_in_place_between_calls(monkeypatch):
    """The LSTM loop packs [W_ih, W_hh, b]^T from the parameters at every call: weights changed
    in place between calls, by an SGD step's in-place ops (versions bumped) or through `.data`
    (not tracked, as in PyTorch), give the eager loop's values and gradients at the next call."""
    monkeypatch.setattr(_rnn_fused, "_PACK_ROWS", 1)
    jt.manual_seed(0)
    m = nn.LSTM(IN, HID)
    x, _ = _inputs(m)
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    _step(m, x, [])
    with jt.no_grad():
        for p in m.parameters():
            p.sub_(0.5 * p.grad)
    _fused_matches_eager(m, x, [], monkeypatch, 1e-5)
    m.weight_hh_l0.data.mul_(-2.0)
    m.bias_hh_l0.data.add_(1.0)
    _fused_matches_eager(m, x, [], monkeypatch, 1e-5)


@pytest.mark.parametrize("name", list(SCRIPTED))
def test_compiled_layer_matches_the_eager_loop(name, monkeypatch):
    cls, kw, given = SCRIPTED[name]
    jt.manual_seed(0)
    m = cls(IN, HID, **kw)
    x, states = _inputs(m)
    states = states if given else []
    check_compiled_matches_eager(lambda: _step(m, x, states),
                                 lambda: _eager_compiled._function(m).stats, monkeypatch)


def _error(m, *args):
    with pytest.raises(Exception) as e:
        m(*args)
    return type(e.value), str(e.value)


def test_errors_are_the_eager_forms(monkeypatch):
    m = nn.LSTM(IN, HID, num_layers=2)
    bad = [(jt.randn(T, B, IN + 1),),  # wrong input size
           (jt.randn(T, B, IN), (jt.randn(2, B + 1, HID), jt.randn(2, B, HID))),
           (jt.randn(T, B, IN), (jt.randn(2, B, HID), jt.randn(2, B, HID + 1))),
           (jt.randn(T, B, IN), jt.randn(2, B, HID)),
           (jt.randn(B, IN, IN, IN),)]
    for args in bad:
        monkeypatch.setenv(_eager_compiled.ENV, "0")
        want = _error(m, *args)
        monkeypatch.setenv(_eager_compiled.ENV, "1")
        assert _error(m, *args) == want


def test_first_call_runs_while_the_program_compiles_in_the_background(monkeypatch, tmp_path):
    monkeypatch.setenv("JITORCH_COMPILE", "background")
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))  # cold: nothing on disk
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    # the fused loops not yet loaded in this process nor marked in this cache: the compile
    # worker compiles (here: loads) them meanwhile, the call runs the scripted composite
    monkeypatch.setattr(_rnn_fused.LOOPS, "loaded", {})
    monkeypatch.setattr(_rnn_fused.LOOPS, "jobs", {})
    jt.manual_seed(0)
    m = nn.RNN(IN, HID + 1)  # a configuration of its own: no program of it in memory
    x = jt.randn(T, B, IN)
    with jt.no_grad():
        before = jt.jit.stats()
        out, h = m(x)
        after = jt.jit.stats()
        monkeypatch.setenv(_eager_compiled.ENV, "0")
        want_out, want_h = m(x)
    assert _eager_compiled._function(m).stats["tier"] == "interpreted-while-compiling"
    assert after["background_compiles"] == before["background_compiles"] + 1
    assert after["interpreted_while_compiling"] == before["interpreted_while_compiling"] + 1
    assert after["numba_compiles"] == before["numba_compiles"]  # nothing compiled in the call
    np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), want_h.numpy(), rtol=1e-6, atol=1e-6)
    assert after["fused_loops"]["RNN_TANH float32"] == "compiling in the compile worker"
    # a packed input meanwhile: the eager packed loop (no scripted packed composite; the fused
    # loops once the worker is done), nothing compiled in the call
    from jitorch.nn.utils.rnn import pack_padded_sequence
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    with jt.no_grad():
        y, h = m(pack_padded_sequence(x, [T] + [T - 2] * (B - 1)))
        monkeypatch.setenv(_eager_compiled.ENV, "0")
        want_y, want_h = m(pack_padded_sequence(x, [T] + [T - 2] * (B - 1)))
    np.testing.assert_allclose(y.data.numpy(), want_y.data.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h.numpy(), want_h.numpy(), rtol=1e-6, atol=1e-6)
    assert jt.jit.stats()["numba_compiles"] == before["numba_compiles"]
    assert _rnn_fused.LOOPS.jobs["RNN_TANH", "float32"].done.wait(600)
    assert _rnn_fused.ready("RNN_TANH", np.dtype(np.float32))  # later calls: the fused loops
    assert jt.jit.stats()["fused_loops"]["RNN_TANH float32"] == "loaded from the disk cache"


_WORKER_COMPILES = r"""
import numpy as np, jitorch as jt
from jitorch.nn.modules import _rnn_fused as r
f32 = np.dtype(np.float32)
assert not r.ready("RNN_TANH", f32)  # cold: queued on the compile worker, not compiled here
assert jt.jit.stats()["fused_loops"]["RNN_TANH float32"] == "compiling in the compile worker"
assert jt.jit.wait_compiled(600)  # waits for the worker's job
assert r.LOOPS.jobs["RNN_TANH", "float32"].result["how"] == "compiled"  # the worker compiled
assert r.ready("RNN_TANH", f32)
disps = (r._mm, r._rnn_fwd, r._rnn_bwd)
assert all(sum(d.stats.cache_misses.values()) == 0 for d in disps)  # none compiled here:
assert all(sum(d.stats.cache_hits.values()) > 0 for d in disps)  # loaded from the disk cache
assert jt.jit.stats()["fused_loops"]["RNN_TANH float32"] == "loaded from the disk cache"
r.LOOPS.loaded.clear(), r.LOOPS.jobs.clear()
assert r.ready("RNN_TANH", f32) and not r.LOOPS.jobs  # a warm start loads at once: no job
print("ok")
"""


def test_fused_loops_stay_uncompiled_when_the_worker_dies(monkeypatch, tmp_path):
    """A worker that dies mid-job leaves the loops unmarked (the next process asks again) and
    this process's calls on the scripted composite, with the reason in `jitorch.jit.stats()`."""
    monkeypatch.setenv("JITORCH_COMPILE", "background")
    monkeypatch.setenv("JITORCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("JITORCH_COMPILE_WORKER_FAULT", "die")
    monkeypatch.setattr(_rnn_fused.LOOPS, "loaded", {})
    monkeypatch.setattr(_rnn_fused.LOOPS, "jobs", {})
    f64 = np.dtype(np.float64)
    assert not _rnn_fused.ready("GRU", f64)
    assert _rnn_fused.LOOPS.jobs["GRU", "float64"].done.wait(600)
    assert not _rnn_fused.ready("GRU", f64)
    assert jt.jit.stats()["fused_loops"]["GRU float64"].startswith(
        "not compiled: the compile worker died")
    marker = _rnn_fused.LOOPS.marker(("GRU", "float64"))
    assert marker is not None and not os.path.exists(marker)


def test_fused_loops_compile_in_the_compile_worker_not_in_the_caller(tmp_path):
    """Cold (fresh Numba and jitorch cache directories), the first `ready` queues the loops on
    jitorch's compile worker process and returns False (the scripted composite serves); after
    `jitorch.jit.wait_compiled()` the caller loads them from the disk cache, compiling none
    itself, and a later start finds them marked there and loads them at once."""
    env = dict(os.environ, JITORCH_COMPILE="background", NUMBA_CACHE_DIR=str(tmp_path / "nb"),
               JITORCH_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    got = subprocess.run([sys.executable, "-c", _WORKER_COMPILES], env=env, capture_output=True,
                         text=True, timeout=600)
    assert got.returncode == 0 and got.stdout.strip() == "ok", got.stderr[-3000:]


def test_cse_keeps_two_factory_buffers_apart():
    """Two `x.new_zeros(...)` of the twin (the output buffers of two layers or directions, each
    written in place by its time loop) stay two: merged, the second loop overwrote the first's
    outputs (wrong bidirectional values, wrong layer-2 weight gradients)."""
    from jitorch.script.ir.parser import parse_graph
    from jitorch.script.passes import cse
    g = parse_graph("""graph @g(%x: f32[?,4]) {
  %s: int = prim::Constant[value=3]()
  %t: Tuple[int] = prim::TupleConstruct(%s)
  %n: None = prim::Constant[value=None]()
  %0: f32[?] = new_zeros(%x, %t, %n, %n)
  %1: f32[?] = new_zeros(%x, %t, %n, %n)
  %2: f32[?] = tanh(%x)
  %3: f32[?] = tanh(%x)
  return (%0, %1, %2, %3)
}
""")
    cse.run(g)
    assert [n.op for n in g.nodes()].count("new_zeros") == 2
    assert [n.op for n in g.nodes()].count("tanh") == 1


def test_flat_function_found_by_configuration_without_rebuilding_its_source(monkeypatch):
    """`_function(m)` builds the flat source at a configuration's first call only, and finds
    exactly the function of the source it would build (`_script(source(m, "flat"))`), also
    after the configuration changes (training mode with dropout, batch_first, another type)."""
    from jitorch.nn.modules import _rnn_script
    built = []
    source = _rnn_script.source

    def counting(m, form="top"):
        built.append(form)
        return source(m, form)
    monkeypatch.setattr(_rnn_script, "source", counting)
    m = nn.LSTM(IN, HID, num_layers=2, dropout=0.25)
    configs = [lambda: m.train(), lambda: m.eval(), lambda: setattr(m, "batch_first", True)]
    for change in configs:
        change()
        n = len(built)
        sf = _eager_compiled._function(m)
        assert _eager_compiled._function(m) is sf and len(built) == n + 1  # second call: a hit
        assert sf is _eager_compiled._script(source(m, "flat"), "LSTM")
    m.batch_first = False
    m.train()
    assert _eager_compiled._function(m) is not _eager_compiled._function(m.eval())
    g = nn.GRU(IN, HID, num_layers=2, dropout=0.25)  # same sizes, another mode: another function
    assert _eager_compiled._function(g) is _eager_compiled._script(source(g, "flat"), "GRU")
    assert _eager_compiled._function(g) is not _eager_compiled._function(m)


def test_fused_layer_double_backward_input_without_grad_and_in_place_error(monkeypatch):
    """create_graph=True through the fused node gives the eager loop's differentiable grads
    (its loop is run again and differentiated); an input without grad gives the eager weight
    gradients; a weight changed in place before backward raises eager's error."""
    def second_order():
        jt.manual_seed(0)
        m = nn.LSTM(IN, HID, batch_first=True)
        x = jt.randn(B, T, IN, requires_grad=True)
        out, (h, c) = m(x)
        g, = jt.autograd.grad((out * out).sum() + c.sum(), x, create_graph=True)
        (g * g).sum().backward()
        return out.grad_fn.name(), g.detach().numpy(), m.weight_hh_l0.grad.numpy()
    monkeypatch.setenv(_eager_compiled.ENV, "0")
    _, *want = second_order()
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    name, *got = second_order()
    assert name == "_SeqBackward"
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    m = nn.GRU(IN, HID)
    x = jt.randn(T, B, IN)  # no grad: the first layer's input gradient is not computed
    grads = []
    for env in ("0", "1"):
        monkeypatch.setenv(_eager_compiled.ENV, env)
        m.zero_grad()
        m(x)[0].sum().backward()
        grads.append([p.grad.numpy().copy() for p in m.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    out, _ = m(x)
    with jt.no_grad():
        m.weight_hh_l0.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_fused_layer_reuses_only_arrays_nothing_holds(monkeypatch):
    """The fused loops take their large arrays from a per-thread pool (_rnn_fused._empty; here
    every array, small ones too): an output the caller still holds, and the saved arrays of a
    graph kept with retain_graph=True, are never handed out again; those of a released graph
    are (the pool stops growing)."""
    monkeypatch.setattr(_rnn_fused, "_POOL_MIN", 0)
    monkeypatch.setattr(_rnn_fused, "_POOL", type(_rnn_fused._POOL)())
    monkeypatch.setenv(_eager_compiled.ENV, "1")
    jt.manual_seed(0)
    m = nn.LSTM(IN, HID)
    x1, x2 = jt.randn(T, B, IN, requires_grad=True), jt.randn(T, B, IN, requires_grad=True)
    out1, _ = m(x1)
    assert out1.grad_fn.name() == "_SeqBackward"
    kept = out1.detach().numpy().copy()
    loss1 = (out1 * out1).sum()
    loss1.backward(retain_graph=True)
    want = [t.grad.numpy().copy() for t in [x1, *m.parameters()]]
    for i in range(3):  # other calls meanwhile, each released by its backward
        out2, _ = m(x2)
        (out2 * out2).sum().backward()
        del out2
        if i == 0:
            size = len(_rnn_fused._POOL.arrays)
    assert len(_rnn_fused._POOL.arrays) == size  # their arrays were reused
    np.testing.assert_array_equal(out1.detach().numpy(), kept)  # held output untouched
    for t in [x1, *m.parameters()]:
        t.grad = None
    loss1.backward()  # the retained graph's saved arrays are intact
    for a, t in zip(want, [x1, *m.parameters()]):
        np.testing.assert_array_equal(t.grad.numpy(), a)
