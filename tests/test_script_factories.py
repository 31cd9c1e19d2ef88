"""Tensor factories inside scripted/traced code (_ops/factories.py, targets/cpu/lower_factory.py):
values and dtypes against eager, compiled (not interpreted), no recompile for new sizes, eager's
errors for bad run-time arguments, and the PythonOp fallback for what is not static."""
from typing import List

import numpy as np
import pytest

import jitorch
import jitorch as torch
from jitorch.script.frontend.trace import trace_graph


def _stats():
    return jitorch.jit.stats()


def _same(a, b, exact=True):
    assert type(a) is type(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert tuple(a.shape) == tuple(b.shape)
    assert a.requires_grad == b.requires_grad
    if exact:
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    else:
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-15, atol=1e-15)


def _ops(fn):
    return [n.op for n in fn.graph.nodes()]


def every_factory(x, n: int):
    a = torch.zeros(x.size(0), 4)
    b = torch.ones([x.size(0), n], dtype=torch.float64)
    c = torch.full((2, n), 1.5)
    d = torch.full((n,), 3)
    f = torch.empty(x.shape)
    g = torch.zeros_like(x)
    h = torch.ones_like(x, dtype=torch.int32)
    i = torch.full_like(x, 3)
    k = torch.arange(n)
    m = torch.arange(1.0, n, 0.5)
    p = torch.linspace(0, 1, n)
    q = torch.linspace(-2.0, 3.0, n, dtype=torch.float64)
    r = torch.eye(n, 3)
    t = torch.tensor([[1.0, 2.0], [float(n), 4.0]])
    u = torch.tensor([n, 2])
    y = torch.scalar_tensor(n)
    z = x.new_zeros(2, n)
    bb = x.new_full((n, 1), 7)
    cc = x.new_tensor([1, 2, n])
    gg = torch.linspace(0, 10, n, dtype=torch.int32)
    return a, b, c, d, f, g, h, i, k, m, p, q, r, t, u, y, z, bb, cc, gg


every_factory_s = jitorch.jit.script(every_factory)
F64_LINSPACE = 11


def test_every_factory_compiles_and_matches_eager():
    assert "prim::PythonOp" not in _ops(every_factory_s)
    x = torch.randn(3, 4)
    before = _stats()
    got = every_factory_s(x, 5)
    mid = _stats()
    assert mid["interpreted_runs"] == before["interpreted_runs"], mid["interpreted_reasons"]
    for k, (a, b) in enumerate(zip(got, every_factory(x, 5))):
        _same(a, b, exact=k != F64_LINSPACE)  # float64 linspace: eager rounds in long double
    # new sizes: same program, new values
    x2 = torch.randn(6, 2)
    for n in (1, 9):
        for a, b in zip(every_factory_s(x2, n), every_factory(x2, n)):
            _same(a, b, exact=False)
    after = _stats()
    assert after["numba_compiles"] == mid["numba_compiles"]
    assert after["interpreted_runs"] == before["interpreted_runs"]


def like_and_new(x, n: int):
    return (torch.zeros_like(x), torch.full_like(x, 2), x.new_zeros(n), x.new_ones((n, 2)),
            x.new_empty([n], dtype=torch.int16), torch.empty_like(x), torch.ones_like(x),
            torch.zeros(n, dtype=torch.bool), torch.tensor([True, False]),
            torch.tensor(n, dtype=torch.float64), torch.full([1, n], True),
            torch.arange(2, n + 5, 3, dtype=torch.float64), torch.eye(n, dtype=torch.int64),
            torch.zeros(size=(n, 2)), torch.zeros(()), torch.full((), n), torch.ones(0, n),
            torch.eye(0))


def test_like_and_new_keep_input_dtype():
    s = jitorch.jit.script(like_and_new)
    x = torch.arange(6).reshape(2, 3).to(torch.int32)
    before = _stats()["interpreted_runs"]
    got = s(x, 4)
    for a, b in zip(got, like_and_new(x, 4)):
        _same(a, b)
    assert [a.dtype for a in got[:4]] == [torch.int32] * 4
    assert _stats()["interpreted_runs"] == before


CPU = torch.device("cpu")  # a global: `torch.device(...)` called in scripted code is a PythonOp


def static_kwargs_and_sizes(x, n: int):
    a = torch.zeros(2, n, device="cpu", requires_grad=False, pin_memory=False)
    b = torch.zeros_like(x, memory_format=None, layout=None)
    c = torch.arange(n, device=CPU, dtype=torch.int32)
    d = torch.ones(n, dtype=float)
    e = torch.full((n,), 2, dtype=torch.bool)
    f = torch.zeros(n, 2, dtype=x.dtype, device=x.device)  # x.dtype, x.device: constants
    g = torch.full((n,), 2, dtype=x.dtype)
    # size forms: one int, varargs, a list, a tuple, x.size(), x.shape
    h = torch.zeros(n)
    i = torch.zeros([n, 2, 1])
    j = torch.zeros((n, x.size(1)))
    k = torch.ones(x.size())
    m = torch.ones(x.shape)
    return a, b, c, d, e, f, g, h, i, j, k, m


def test_static_keywords_and_size_forms_compile():
    s = jitorch.jit.script(static_kwargs_and_sizes)
    assert "prim::PythonOp" not in _ops(s)
    x = torch.randn(2, 3).double()
    before = _stats()["interpreted_runs"]
    for a, b in zip(s(x, 3), static_kwargs_and_sizes(x, 3)):
        _same(a, b)
    assert _stats()["interpreted_runs"] == before


def list_size(lst: List[int]):
    return torch.zeros(lst)


def test_size_list_of_runtime_length_is_interpreted_and_correct():
    s = jitorch.jit.script(list_size)
    before = _stats()["interpreted_runs"]
    for lst in ([2, 5], [3]):
        _same(s(lst), list_size(lst))
    assert _stats()["interpreted_runs"] == before + 2


def bad_args(n: int, m: int, s: float, e: float, st: float, k: int):
    a = torch.zeros(2, n)
    b = torch.ones(n, m)
    c = torch.full((m,), 1.0)
    d = torch.arange(s, e, st)
    f = torch.linspace(s, e, k)
    g = torch.eye(k)
    return a, b, c, d, f, g


def _raises_like(fn_s, fn, *args):
    with pytest.raises(Exception) as eager:
        fn(*args)
    before = _stats()["interpreted_runs"]
    with pytest.raises(type(eager.value)) as got:
        fn_s(*args)
    assert _stats()["interpreted_runs"] == before  # raised by the compiled program
    assert str(eager.value) in str(got.value)


def test_bad_runtime_arguments_raise_like_eager():
    s = jitorch.jit.script(bad_args)
    for a, b in zip(s(1, 2, 0.0, 2.0, 0.5, 3), bad_args(1, 2, 0.0, 2.0, 0.5, 3)):
        _same(a, b)
    good = (1, 2, 0.0, 2.0, 0.5, 3)
    for i, v in ((0, -1), (1, -3),                 # negative sizes
                 (4, 0.0), (4, -1.0),              # step must be nonzero, inconsistent sign
                 (3, float("inf")), (5, -1)):      # unsupported range, linspace steps < 0
        args = list(good)
        args[i] = v
        _raises_like(s, bad_args, *args)


def test_bad_static_arguments_raise_like_eager():
    def neg():
        return torch.zeros(2, -1)

    def bad_dtype(x):
        return torch.zeros(2, dtype=x)

    with pytest.raises(RuntimeError, match="negative|non-negative"):
        jitorch.jit.script(neg)()
    s = jitorch.jit.script(bad_dtype)
    with pytest.raises(TypeError):
        s(torch.ones(1))


def fallbacks(x, n: int):
    a = torch.zeros(n, requires_grad=True)
    b = torch.randn(n, 2)
    return a, b.shape[0] + x


def test_not_static_stays_python_op():
    s = jitorch.jit.script(fallbacks)
    ops = _ops(s)
    assert ops.count("prim::PythonOp") == 2 and "zeros" not in ops
    a, b = s(torch.zeros(1), 3)
    assert a.requires_grad and a.shape == (3,) and b.item() == 3


def rnn(x, w, u):
    h = torch.zeros(x.size(1), w.size(1))
    for t in range(x.size(0)):
        h = torch.tanh(x[t] @ w + h @ u)
    return h


def test_rnn_initial_state_compiles_and_does_not_recompile():
    s = jitorch.jit.script(rnn)
    torch.manual_seed(0)
    w, u = torch.randn(3, 5), torch.randn(5, 5)
    x = torch.randn(4, 2, 3)
    before = _stats()
    np.testing.assert_allclose(s(x, w, u).numpy(), rnn(x, w, u).numpy(), rtol=1e-5, atol=1e-6)
    mid = _stats()
    assert mid["interpreted_runs"] == before["interpreted_runs"], mid["interpreted_reasons"]
    x2 = torch.randn(7, 6, 3)
    np.testing.assert_allclose(s(x2, w, u).numpy(), rnn(x2, w, u).numpy(), rtol=1e-5,
                               atol=1e-6)
    after = _stats()
    assert after["numba_compiles"] == mid["numba_compiles"]
    assert after["interpreted_runs"] == before["interpreted_runs"]


def test_factories_under_autograd_give_eager_grads():
    def f(x):
        h = torch.zeros(x.size(0), 4)
        c = torch.ones_like(x)
        return ((h + x * 2) * c).sum()
    s = jitorch.jit.script(f)
    x1 = torch.randn(3, 4, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_(True)
    s(x1).backward()
    f(x2).backward()
    np.testing.assert_allclose(x1.grad.numpy(), x2.grad.numpy())
    out = s(torch.randn(2, 4))
    assert not out.requires_grad


def test_interpreter_runs_factory_nodes():
    from jitorch.script.ir import interpreter
    g = every_factory_s.graph
    x = torch.randn(3, 4)
    for a, b in zip(interpreter.run_graph(g, [x, 4]), every_factory(x, 4)):
        _same(a, b)


def test_types_pass_gives_dtype_and_rank():
    from jitorch.script import ir
    from jitorch.script.passes.types import specialize
    g = specialize(every_factory_s.graph, [ir.TensorType(torch.float64, (3, 4)), ir.INT])
    want = [(torch.float32, 2), (torch.float64, 2), (torch.float32, 2), (torch.int64, 1),
            (torch.float32, 2), (torch.float64, 2), (torch.int32, 2), (torch.float64, 2),
            (torch.int64, 1), (torch.float32, 1), (torch.float32, 1), (torch.float64, 1),
            (torch.float32, 2), (torch.float32, 2), (torch.int64, 1), (torch.float32, 0),
            (torch.float64, 2), (torch.float64, 2), (torch.float64, 1), (torch.int32, 1)]
    assert [(o.type.dtype, o.type.ndim) for o in g.outputs] == want


def test_graph_prints_parses_and_verifies():
    from jitorch.script.ir import parser, printer, verify
    g = jitorch.jit.script(bad_args).graph
    text = printer.print_graph(g)
    assert "zeros(" in text and "full(" in text
    verify.verify(parser.parse_graph(text))
    text = printer.print_graph(every_factory_s.graph)  # dtype constants, lists, tuples
    g = parser.parse_graph(text)
    verify.verify(g)
    assert printer.print_graph(g) == text


def test_trace_records_large_uniform_constants_as_factories():
    def f(x):
        return x.sum() + torch.zeros(100, 100), torch.full((70, 70), 2.5), x + torch.ones(3)
    x = torch.randn(3)
    g, _ = trace_graph(f, (x,))
    ops = [n.op for n in g.nodes()]
    assert "zeros" in ops and "full" in ops  # baked sizes, as PyTorch's tracer
    t = jitorch.jit.trace(f, (x,))
    before = _stats()["interpreted_runs"]
    for a, b in zip(t(x), f(x)):
        _same(a, b)
    assert _stats()["interpreted_runs"] == before
