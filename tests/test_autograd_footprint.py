"""What a recorded graph costs the cyclic garbage collector, and the gradient of a pick over a
dim without np.add.at.

Every object a live node holds is an allocation counted towards the collector's next pass and
one more object its passes walk (a CRF loop keeps ~900 nodes alive per step): nodes share their
`(shape, dtype)` metas instead of holding fresh tuples. max/min over a dim put their gradient
at one index per lane, which needs no np.add.at (its per-call cost dominated a `max(vec, 1)`
loop's backward); repeated indices (gather) still accumulate. The engine's own fan-in sums are
added to in place and may become a leaf's `.grad`, never aliasing a gradient a hook kept."""
import gc
import weakref

import numpy as np
import pytest

import jitorch as torch
from jitorch.autograd import graph


def _crf_like_step(x, trans):
    """A few tiny ops per tag, as a CRF's forward algorithm runs them (the graph is kept)."""
    fv = x[0].view(1, -1)
    for feat in x[1:]:
        alphas = []
        for t in range(3):
            v = fv + trans[t].view(1, -1) + feat[t].view(1, -1).expand(1, 3)
            m = v[0, int(torch.max(v, 1)[1].item())]
            alphas.append((m + torch.log(torch.sum(torch.exp(v - m)))).view(1))
        fv = torch.cat(alphas).view(1, -1)
    return fv.sum()


def test_nodes_share_their_metas():
    x = torch.ones(2, 3, requires_grad=True)
    a, b = x * 2, x.exp()
    assert a.grad_fn.out_meta is b.grad_fn.out_meta  # one ((shape, dtype),) for both
    c, d = a.view(6), b.view(6)
    # a one-input node's in_meta: the producer's meta, in the shared one-tuple
    assert c.grad_fn.in_meta is a.grad_fn.out_meta is d.grad_fn.in_meta
    assert c.grad_fn.out_meta[0] == ((6,), torch.float32)


def test_a_recorded_graph_allocates_few_collector_tracked_objects_per_node():
    x = torch.randn(8, 3, requires_grad=True)
    trans = torch.randn(3, 3, requires_grad=True)
    _crf_like_step(x, trans).backward()  # first calls: memos, recorders, appliers
    was = gc.isenabled()
    gc.disable()
    try:
        gc.collect()
        before = gc.get_count()[0]  # allocations less deallocations since the collection
        loss = _crf_like_step(x, trans)
        grown = gc.get_count()[0] - before
    finally:
        if was:
            gc.enable()
    nodes, stack = {loss.grad_fn}, [loss.grad_fn]
    while stack:
        for e in stack.pop().next_edges:
            if e is not None and e[0] not in nodes:
                nodes.add(e[0])
                stack.append(e[0])
    # ~10 per node with a fresh meta per output and input, ~6 with shared ones
    assert grown / len(nodes) < 8, (grown, len(nodes))
    loss.backward()
    assert x.grad is not None and trans.grad is not None


@pytest.mark.parametrize("fn", [
    lambda a: a.tanh(), lambda a: a.sigmoid(), lambda a: a.exp(),
    lambda a: a.log_softmax(1),
    lambda a: torch.max(a, 1)[0],  # several outputs: each saved without the node
])
def test_a_node_saving_its_output_is_freed_without_the_cyclic_collector(fn):
    """A node that saves its output keeps it as PyTorch's SavedVariable does, without its
    grad_fn: a graph dropped without backward (a step's unused outputs) is freed by reference
    counting, not left to the cyclic garbage collector."""
    x = torch.randn(2, 3, requires_grad=True)
    was = gc.isenabled()
    gc.disable()
    try:
        y = fn(x * 2)
        node = weakref.ref(y.grad_fn)
        del y
        assert node() is None
    finally:
        if was:
            gc.enable()


def test_a_saved_output_keeps_its_version_check_and_double_backward():
    x = torch.tensor([0.3, -0.7], dtype=torch.float64, requires_grad=True)
    y = x.tanh()
    y.add_(1)  # the saved output's version counter moved: the node names itself
    with pytest.raises(RuntimeError, match=r"output 0 of TanhBackward0, is at version 1; "
                                           r"expected version 0"):
        y.sum().backward()
    # create_graph: the rule reads the output with its grad_fn back (tanh'' flows through it)
    (g,) = torch.autograd.grad(x.tanh().sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    t = np.tanh(np.array([0.3, -0.7]))
    assert np.allclose(gg.numpy(), -2 * t * (1 - t * t))
    assert torch.autograd.gradgradcheck(lambda a: a.sigmoid().exp().softmax(0), (x,))


@pytest.mark.parametrize("fn,rows,dim,keepdim,want_idx,want_grad", [
    # ties: the first extremum takes the gradient (PyTorch's index), as a lane's one index
    ("max", [[1., 3., 3., 2.]], 1, False, [1], [[0., 1., 0., 0.]]),
    ("max", [[1., 3., 3., 2.], [5., 5., 0., 5.]], 1, True, [[1], [0]],
     [[0., 1., 0., 0.], [2., 0., 0., 0.]]),
    ("min", [[1., 2.], [2., 1.], [1., 1.]], 0, False, [0, 1], [[1., 0.], [0., 2.], [0., 0.]]),
    ("max", [[float("nan"), 1., float("nan")]], 1, False, [0], [[1., 0., 0.]]),
])
def test_max_min_dim_gradient_at_one_index_per_lane_without_add_at(
        monkeypatch, fn, rows, dim, keepdim, want_idx, want_grad):
    x = torch.tensor(rows, requires_grad=True)
    values, idx = getattr(torch, fn)(x, dim, keepdim=keepdim)
    assert idx.tolist() == want_idx
    monkeypatch.setattr(np, "add", _UfuncWithoutAt(np.add))
    weights = torch.arange(1, values.numel() + 1, dtype=torch.float32).reshape(values.shape)
    (values * weights).sum().backward()
    assert x.grad.tolist() == want_grad


class _UfuncWithoutAt:
    """np.add, whose `.at` raises (a ufunc's attributes cannot be patched themselves)."""

    def __init__(self, uf):
        self._uf = uf

    def __call__(self, *args, **kwargs):
        return self._uf(*args, **kwargs)

    def __getattr__(self, name):
        if name == "at":
            raise AssertionError("np.add.at on the gradient of a one-index-per-lane pick")
        return getattr(self._uf, name)


def test_gather_gradient_still_accumulates_repeated_indices():
    x = torch.arange(6., requires_grad=True).reshape(2, 3)
    x.retain_grad()
    torch.gather(x, 1, torch.tensor([[0, 0], [2, 1]])).sum().backward()
    assert x.grad.tolist() == [[2., 0., 0.], [0., 1., 1.]]


def test_fan_in_sums_in_place_and_a_leaf_takes_its_sum_without_aliasing_anything_kept():
    w = torch.tensor([[1., 2.], [3., 4.]], requires_grad=True)
    kept = []
    x = torch.ones(2, 2, requires_grad=True)
    x.register_hook(lambda g: kept.append(g))  # a hook that keeps the gradient: copied
    loss = (w * 2).sum() + (w * x).sum() + (w + 1).sum() + (x * 3).sum()
    loss.backward()
    assert w.grad.tolist() == [[4., 4.], [4., 4.]]  # 2 + x + 1, summed over three uses
    assert x.grad.tolist() == [[4., 5.], [6., 7.]]
    ((w * 2).sum() + (w * x).sum() + (x * 3).sum()).backward()  # accumulates into .grad
    assert w.grad.tolist() == [[7., 7.], [7., 7.]]
    assert x.grad.tolist() == [[8., 10.], [12., 14.]]
    assert [g.tolist() for g in kept] == [[[4., 5.], [6., 7.]]] * 2
    s = torch.tensor(2., requires_grad=True)  # 0-d gradients: NumPy sums them to scalars
    (s * s + s * 3 + s).backward()
    assert s.grad.item() == 8.
