"""A differentiated pair's saved int scalars cross the entries' boundary as one array (issue 17,
passes/autodiff_pack.py): the CPU forward entry returns no int, its backward takes none, and
gradients are eager's on every tier (to fast-math rounding where compiled)."""
import numpy as np

import jitorch as t
from jitorch.script import ir
from jitorch.script.ir.interpreter import run_graph


def _step(x, w, b):
    h = (x @ w.t() + b).tanh()
    return (h.reshape(-1, 2) * h.size(0)).sum()


def _args(seed):
    rng = np.random.default_rng(seed)
    x = t.tensor(rng.standard_normal((4, 3)), dtype=t.float32)
    w = t.tensor(rng.standard_normal((2, 3)), dtype=t.float32).requires_grad_()
    b = t.tensor(rng.standard_normal(2), dtype=t.float32).requires_grad_()
    return x, w, b


def _eager_grads(x, w, b):
    w, b = w.detach().clone().requires_grad_(), b.detach().clone().requires_grad_()
    _step(x, w, b).backward()
    return w.grad.numpy(), b.grad.numpy()


def test_saved_sizes_are_one_list_and_grads_are_eager():
    from jitorch.script.frontend.trace import tensor_type
    from jitorch.script.runtime import autodiff as rad
    s = t.jit.script(_step)
    for seed in (1, 2):  # (the second call takes AutodiffEntry.run's direct path)
        x, w, b = _args(seed)
        s(x, w, b).backward()
        for got, want in zip((w.grad, b.grad), _eager_grads(x, w, b)):
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    src = s.code
    assert "_jt_pack_ints((" in src and ".T.T" not in src
    base = rad._pre_fusion(s.graph, [tensor_type(a, symbolic=True) for a in (x, w, b)])
    d = rad._differentiate(base, [x, w, b])
    saved = d.forward.outputs[1:]
    assert not any(isinstance(v.type, ir.IntType) for v in saved)  # no int returned...
    assert saved[-1].type == ir.ListType(ir.INT)  # ...but one list of them
    n_grads = len(d.backward.inputs) - d.n_saved
    assert not any(isinstance(p.type, ir.IntType) for p in d.backward.inputs[n_grads:])
    # the interpreter tier runs the same pair on a Python list
    fed = dict(rad._fed(d))
    with t.no_grad():
        res = run_graph(d.forward, [x, w, b])
        rest = iter(res[1:])
        held = [(x, w, b)[fed[k]] if k in fed else next(rest) for k in range(d.n_saved)]
        assert isinstance(held[-1], list) and all(type(v) is int for v in held[-1])
        grads = run_graph(d.backward, [t.tensor(1.0), *held])
    for got, want in zip(grads[1:], _eager_grads(x, w, b)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
