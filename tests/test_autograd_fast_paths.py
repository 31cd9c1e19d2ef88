"""The backward engine's fast paths agree with its general paths: per-op generated appliers
against `Node.apply` and recorders against `_record_any` (list slots too), a lone ready node
run without the heap against PyTorch's order, broadcast gradients reduced in NumPy against the
ops (create_graph), saved tensors freed as each node runs. Hooks, retain_grad and higher order
keep working through them."""
import contextlib

import numpy as np
import pytest

import jitorch as torch
import jitorch.nn.functional as F
from jitorch.autograd import graph


def leaf(values, dtype=torch.float64):
    return torch.tensor(values, dtype=dtype, requires_grad=True)


@pytest.mark.parametrize("call,b_dtype", [
    (lambda a, b: torch.add(a, b, alpha=2), np.float32),  # two slots, an attr, a cast
    (lambda a, b: (a * b[0]).sum(1), np.float64),         # a broadcast operand, a shape
    (lambda a, b: torch.sort(a + b, 1)[0] * 2, np.float64),  # several outputs, `result`
    (lambda a, b: F.linear(a, b), np.float64),            # an absent optional slot
    (lambda a, b: a / b, np.float32),                     # needs_input_grad
    (lambda a, b: torch.cat([a, b]).exp(), np.float64),   # a list slot, result
])
def test_generated_appliers_give_node_apply_s_gradients(call, b_dtype):
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((2, 3, 3)) + 2.0

    def grads(make):
        graph._APPLIERS.clear()
        saved_make = graph._make_applier
        graph._make_applier = make
        try:
            a = torch.tensor(an, requires_grad=True)
            b = torch.tensor(bn.astype(b_dtype), requires_grad=True)
            call(a, b).sum().backward()
        finally:
            graph._make_applier = saved_make
            graph._APPLIERS.clear()
        return [(g.dtype, g.numpy()) for g in (a.grad, b.grad)]

    fast, general = grads(graph._make_applier), grads(lambda op: graph.Node.apply)
    for (df, gf), (dg, gg) in zip(fast, general):
        assert df is dg
        np.testing.assert_array_equal(gf, gg)


def test_execution_order_and_tensor_hooks_follow_pytorch():
    # (order from PyTorch 2.13: among ready nodes the most recently created runs first;
    # chains in between run without the ready heap)
    order = []
    x = leaf([0.5, 1.5])
    a = x * 2
    b, c, d = a.exp(), a.sin(), a.cos()
    e = b * c
    loss = (e + d + b).sum()
    for name, t in (("a", a), ("b", b), ("c", c), ("d", d), ("e", e)):
        t.register_hook(lambda g, name=name: order.append(name))
    loss.backward()
    assert order == ["e", "d", "c", "b", "a"]
    t = 2 * np.array([0.5, 1.5])
    want = 2 * (np.exp(t) * (np.sin(t) + np.cos(t)) - np.sin(t) + np.exp(t))
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)


def test_chain_keeps_hooks_retain_grad_and_post_accumulate_hooks():
    x = leaf([1.0, 2.0])
    y = x
    for _ in range(5):
        y = y * 2
    mid = y
    mid.retain_grad()
    seen = []
    mid.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 10)
    posted = []
    x.register_post_accumulate_grad_hook(lambda p: posted.append(p.grad.numpy().copy()))
    (mid + 1).sum().backward()
    np.testing.assert_array_equal(seen[0], [1.0, 1.0])
    np.testing.assert_array_equal(mid.grad.numpy(), [10.0, 10.0])  # after it (as PyTorch)
    np.testing.assert_array_equal(x.grad.numpy(), [320.0, 320.0])
    np.testing.assert_array_equal(posted[0], [320.0, 320.0])


def test_broadcast_reduction_in_numpy_matches_the_ops_and_create_graph_records():
    rng = np.random.default_rng(1)
    an = rng.standard_normal((4, 1, 3)).astype(np.float32)
    bn = rng.standard_normal((5, 3)).astype(np.float32)
    a, b = torch.tensor(an, requires_grad=True), torch.tensor(bn, requires_grad=True)
    ((a * b).exp() * 0.5).sum().backward()  # grads of both reduced: (4,1,3) and (5,3)
    a2, b2 = torch.tensor(an, requires_grad=True), torch.tensor(bn, requires_grad=True)
    ga, gb = torch.autograd.grad(((a2 * b2).exp() * 0.5).sum(), (a2, b2), create_graph=True)
    assert ga.grad_fn is not None and gb.grad_fn is not None  # the ops ran, recorded
    for got, want in ((a.grad, ga), (b.grad, gb)):
        assert got.dtype is torch.float32 and got.shape == want.shape
        np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
    ga.sum().backward()  # second order through the reduced gradient
    assert b2.grad is not None and b2.grad.shape == (5, 3)


def test_freeing_as_nodes_run_keeps_pytorch_s_errors():
    x = leaf([1.0, 2.0])
    y = (x * x).exp().sum()
    y.backward(retain_graph=True)
    y.backward()  # the retained graph runs again, and is then freed
    np.testing.assert_allclose(x.grad.numpy(), 2 * 2 * np.array([1.0, 2.0]) *
                               np.exp([1.0, 4.0]))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second"):
        y.backward()
    z = x.exp()
    w = (z * 2).sum()
    z.mul_(3)  # exp saved its result: the applier still checks its version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        w.backward()


# ops with list slots: cat's and stack's `tensors` (items with and without grad), and advanced
# indexing's `indices` (integer tensors: saved, versioned, no edge)
LIST_CALLS = [
    lambda a, b, c: torch.cat([a, c, b], 1),
    lambda a, b, c: torch.stack((c, a * 2, b), 0).exp(),
    lambda a, b, c: a[torch.tensor([0, 2, 0]), torch.tensor([1, 1, 2])] * b[0, :3],
]


@contextlib.contextmanager
def _generic(recorders=True, appliers=True):
    """graph.py's generators patched to give the generic paths, for one run."""
    saved = graph._make_recorder, graph._make_applier
    graph.clear_recorders()
    graph._APPLIERS.clear()
    if recorders:
        graph._make_recorder = lambda op: False
    if appliers:
        graph._make_applier = lambda op: graph.Node.apply
    try:
        yield
    finally:
        graph._make_recorder, graph._make_applier = saved
        graph.clear_recorders()
        graph._APPLIERS.clear()


def test_fast_paths_record_through_the_op_s_recorder_and_follow_clear_recorders(monkeypatch):
    """The registry's fast path calls the op's positional recorder directly (held in its own
    namespace): `graph.clear_recorders` makes it follow `_make_recorder` as patched."""
    a = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = torch.add(a, a, alpha=3.0)  # the positional recorder: the attr saved, both edges
    assert y.grad_fn.saved == {"alpha": 3.0} and len(y.grad_fn.next_edges) == 2
    t = a.tanh()
    # the result's version, on its data and version counter without its grad_fn (no cycle)
    assert [(u._data is t._data and u._version is t._version and u.grad_fn is None, v)
            for u, v in t.grad_fn.versions] == [(True, 0)]
    seen = []
    record_any = graph._record_any
    monkeypatch.setattr(graph, "_record_any", lambda op, *rest: seen.append(op.name)
                        or record_any(op, *rest))
    with _generic(appliers=False):
        torch.add(a, a, alpha=3.0).tanh().view_as(a).sum().backward()
    assert seen == ["add", "tanh", "view_as", "sum"]
    np.testing.assert_allclose(a.grad.numpy(), 4 * (1 - np.tanh(4 * a.detach().numpy()) ** 2))
    seen.clear()
    a.view_as(y).tanh()  # `view_as` (a shape-only slot) has no recorder: always generic
    assert seen == ["view_as"]


def _list_inputs():
    rng = np.random.default_rng(3)
    a = torch.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    b = torch.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    c = torch.tensor(rng.standard_normal((3, 3)))  # no grad: a None edge among the items
    return a, b, c


def _list_node(t):
    """The cat / stack / _index node behind `t`."""
    n = t.grad_fn
    while n.op.name not in ("cat", "stack", "_index"):
        n = next(e[0] for e in n.next_edges if e is not None)
    return n


@pytest.mark.parametrize("call", LIST_CALLS)
def test_list_slot_recorder_builds_the_generic_node(call):
    def node_of(generic):
        with _generic(appliers=False) if generic else _generic(False, False):
            n = _list_node(call(*_list_inputs()))
            return (n.op, [e if e is None else (type(e[0]), e[1]) for e in n.next_edges],
                    n.in_meta, n.out_meta, n.multi, n.saved is None or sorted(n.saved),
                    n.saved and n.saved.get("tensors_shape"),
                    [(tuple(t.shape), v) for t, v in n.versions])

    fast = node_of(False)
    assert graph._make_recorder(fast[0]) is not False  # (the generated path ran)
    assert fast == node_of(True)


@pytest.mark.parametrize("call", LIST_CALLS)
def test_list_slot_paths_give_the_generic_grads_hooks_and_create_graph(call):
    def run(generic):
        with _generic() if generic else _generic(False, False):
            a, b, c = _list_inputs()
            seen = []
            a.register_hook(lambda g: seen.append(g.detach().numpy().copy()) or g * 3)
            out = call(a, b, c)
            _list_node(out).register_hook(lambda gi, go: seen.append(len(gi)))
            ga, gb = torch.autograd.grad((out * out).sum(), (a, b), create_graph=True)
            assert ga.grad_fn is not None  # the rules' ops recorded
            (ga.sum() + gb.sum()).backward()  # second order through the list-slot nodes
            return [ga.detach().numpy(), gb.detach().numpy(), a.grad.numpy(), b.grad.numpy(),
                    *seen]

    for got, want in zip(run(False), run(True), strict=True):
        np.testing.assert_array_equal(got, want)


def test_list_slot_recorder_keeps_saved_index_versions():
    a = leaf([[1.0, 2.0], [3.0, 4.0]])
    i = torch.tensor([1, 0])
    y = a[i, i].sum()
    i.add_(0)  # an in-place write to a saved index bumps its version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


@pytest.mark.parametrize("rows,dtype", [(1, np.float32), (5, np.float64)])
def test_linear_backward_in_numpy_matches_its_ops_bit_for_bit(rows, dtype):
    # a first-order backward runs _linear_fused's VJP on arrays; create_graph takes its ops
    rng = np.random.default_rng(1)
    x, w = (torch.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True)
            for s in ((rows, 7), (4, 7)))
    b = torch.tensor(rng.standard_normal(4).astype(dtype), requires_grad=True)
    gy = rng.standard_normal((rows, 4)).astype(dtype)
    gy[0, 0] = -0.0  # an outer product (one row) keeps the product's sign
    fast = torch.autograd.grad(F.linear(x, w, b), (x, w, b), torch.tensor(gy))
    ops = torch.autograd.grad(F.linear(x, w, b), (x, w, b), torch.tensor(gy), create_graph=True)
    for f, o in zip(fast, ops):
        assert f.dtype == o.dtype and not f.requires_grad
        np.testing.assert_array_equal(f.numpy(), o.detach().numpy())
        assert (np.signbit(f.numpy()) == np.signbit(o.detach().numpy())).all()
