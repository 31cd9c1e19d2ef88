"""`optim.LBFGS` against PyTorch-generated runs (REFS at the bottom, tests/gen_compat_refs.py):
the same problems, closures and options give the same losses, parameters and evaluation
counts; plus the time-sequence use (a small LSTM fitted by LBFGS, PyTorch's example) and the
argument checks."""
import math

import numpy as np
import pytest

import jitorch
import jitorch.nn as nn


def _data():
    i = np.arange(24, dtype=np.float64)
    A = np.cos(i * 0.7).reshape(8, 3) + np.eye(8, 3)
    b = np.sin(np.arange(8) * 1.3)
    return A, b


def run(lib, line_search_fn=None, history_size=100, dtype="float64", lr=1.0, max_iter=20,
        steps=3):
    """Least squares plus a quartic term; the same closure in jitorch and torch."""
    A, b = _data()
    d = getattr(lib, dtype)
    At, bt = lib.tensor(A).to(d), lib.tensor(b).to(d)
    w = lib.zeros(3, dtype=d, requires_grad=True)
    v = lib.tensor([0.5, -0.5], dtype=d, requires_grad=True)
    opt = lib.optim.LBFGS([w, v], lr=lr, max_iter=max_iter, history_size=history_size,
                          line_search_fn=line_search_fn)

    def closure():
        opt.zero_grad()
        r = At @ w - bt
        loss = (r * r).mean() + (w ** 4).sum() * 0.05 + ((v - w[:2]) ** 2).sum()
        loss.backward()
        return loss
    losses = [float(opt.step(closure)) for _ in range(steps)]
    params = np.concatenate([w.detach().numpy(), v.detach().numpy()])
    return losses, params, opt.state[w]["func_evals"]


CASES = {
    "fixed_step": {},
    "fixed_step_short_history": {"history_size": 2, "lr": 0.5},
    "strong_wolfe": {"line_search_fn": "strong_wolfe"},
    "strong_wolfe_short_history": {"line_search_fn": "strong_wolfe", "history_size": 3,
                                   "max_iter": 7},
    "float32": {"dtype": "float32", "line_search_fn": "strong_wolfe"},
}


@pytest.mark.parametrize("key", sorted(CASES))
def test_matches_pytorch(key):
    losses, params, evals = run(jitorch, **CASES[key])
    ref = REFS[key]
    tol = 1e-5 if CASES[key].get("dtype") == "float32" else 1e-9
    np.testing.assert_allclose(losses, ref["losses"], rtol=tol, atol=tol)
    np.testing.assert_allclose(params, ref["params"], rtol=tol, atol=tol)
    assert evals == ref["evals"]


def test_time_sequence_lstm_fits():
    """PyTorch's time-sequence-prediction example, small: an LSTMCell + Linear fitted to sine
    waves with LBFGS and the strong-Wolfe search lowers the loss by 10x in a few steps."""
    jitorch.manual_seed(0)
    t = np.arange(12, dtype=np.float64)
    data = np.sin(t[None, :] * 0.5 + np.arange(3)[:, None] * 0.8)
    inp, target = jitorch.tensor(data[:, :-1]), jitorch.tensor(data[:, 1:])

    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = nn.LSTMCell(1, 8)
            self.out = nn.Linear(8, 1)

        def forward(self, x):
            h = jitorch.zeros(x.size(0), 8, dtype=jitorch.float64)
            c = jitorch.zeros(x.size(0), 8, dtype=jitorch.float64)
            outs = []
            for i in range(x.size(1)):
                h, c = self.cell(x[:, i:i + 1], (h, c))
                outs.append(self.out(h))
            return jitorch.cat(outs, 1)

    model = Seq().double()
    opt = jitorch.optim.LBFGS(model.parameters(), lr=0.8, max_iter=10,
                              line_search_fn="strong_wolfe")
    crit = nn.MSELoss()

    def closure():
        opt.zero_grad()
        loss = crit(model(inp), target)
        loss.backward()
        return loss
    first = float(opt.step(closure))
    for _ in range(3):
        last = float(opt.step(closure))
    assert last < first / 10, (first, last)


def test_argument_checks():
    p = jitorch.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        jitorch.optim.LBFGS([p], lr=-1)
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        jitorch.optim.LBFGS([{"params": [p]}, {"params": [jitorch.zeros(1,
                                                                         requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        jitorch.optim.LBFGS([p], line_search_fn="armijo")
    opt = jitorch.optim.LBFGS([p])
    with pytest.raises(TypeError, match="closure"):
        opt.step()
    assert opt.defaults["max_eval"] == 25 and opt.defaults["history_size"] == 100


def test_converged_problem_returns_at_once():
    p = jitorch.zeros(2, requires_grad=True)
    opt = jitorch.optim.LBFGS([p])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (p * 0).sum()
        loss.backward()
        return loss
    assert math.isclose(float(opt.step(closure)), 0.0) and len(calls) == 1


def test_state_dict_round_trip_continues_identically():
    _, _, _ = run(jitorch, steps=1)
    A, b = _data()
    w1 = jitorch.zeros(3, dtype=jitorch.float64, requires_grad=True)
    w2 = jitorch.zeros(3, dtype=jitorch.float64, requires_grad=True)
    At, bt = jitorch.tensor(A), jitorch.tensor(b)
    o1, o2 = jitorch.optim.LBFGS([w1], max_iter=3), jitorch.optim.LBFGS([w2], max_iter=3)

    def closure_for(w, o):
        def closure():
            o.zero_grad()
            loss = ((At @ w - bt) ** 2).mean()
            loss.backward()
            return loss
        return closure
    o1.step(closure_for(w1, o1))
    with jitorch.no_grad():
        w2.copy_(w1)
    o2.load_state_dict(o1.state_dict())
    o1.step(closure_for(w1, o1))
    o2.step(closure_for(w2, o2))
    np.testing.assert_array_equal(w1.detach().numpy(), w2.detach().numpy())


# --- generated by tests/gen_compat_refs.py with PyTorch (do not edit by hand) ----
REFS = {
    'fixed_step':
        {'losses': [0.949111206, 0.359666528, 0.359666528], 'params': [-0.35876203, 0.652200413,
        -0.0963463415, -0.358762223, 0.65219952], 'evals': 16},
    'fixed_step_short_history':
        {'losses': [0.949111206, 0.359675898, 0.359666529], 'params': [-0.358723831,
        0.652156992, -0.0963293742, -0.358719986, 0.652148626], 'evals': 34},
    'strong_wolfe':
        {'losses': [0.949111206, 0.359666528, 0.359666528], 'params': [-0.358755152, 0.65218988,
        -0.0963378184, -0.358756664, 0.652191087], 'evals': 16},
    'strong_wolfe_short_history':
        {'losses': [0.949111206, 0.390962073, 0.359667461], 'params': [-0.358765951,
        0.652200062, -0.0963411371, -0.358772314, 0.652198256], 'evals': 22},
    'float32':
        {'losses': [0.949111223, 0.359666526, 0.359666526], 'params': [-0.358755171, 0.65218991,
        -0.0963378027, -0.358756691, 0.652191103], 'evals': 16},
}
