"""Per-op eager forward cuts (issue 20): the CRF loop's ops (`max(vec, 1)`, `view(1, -1)`,
`expand`, `-`) on their short paths, giving what the general paths give.

Each test pins the mechanism (the short path is taken) and its agreement with the general one:
values, dtypes, strides, read-only flags, errors and what autograd records.
"""
import numpy as np
import pytest

import jitorch as jt
from jitorch._ops import minmax, shape
from jitorch._ops.registry import OPS


def test_sub_checks_bools_after_its_fast_path(monkeypatch):
    # the public function is the generated op (no wrapper calling the guard first) ...
    assert jt.sub.__code__.co_filename == "<jitorch op sub>"
    assert jt.Tensor.sub is jt.sub
    calls = []
    check = OPS["sub"].extra["check"]
    monkeypatch.setitem(jt.sub.__globals__, "_guard", lambda *a, **k: calls.append(1) or
                        check(*a, **k))
    x = jt.tensor([1.0, 2.0], requires_grad=True)
    y = x - jt.tensor([0.5, 0.5])
    assert calls == [] and y.grad_fn.name() == "SubBackward0"  # the fast path: no guard call
    # ... which never takes what the guard rejects: bool tensors and Python bools
    b = jt.tensor([True, False])
    for f, msg in [(lambda: b - b, "two bool tensors"), (lambda: x - b, "with a bool tensor"),
                   (lambda: jt.sub(b, 1), "with a bool tensor"),
                   (lambda: jt.sub(x, True), "with a bool tensor"),
                   (lambda: True - x, "with a bool tensor")]:
        with pytest.raises(RuntimeError, match=msg):
            f()
    assert len(calls) == 5
    assert (2 - x).tolist() == [1.0, 0.0] and jt.sub(2, x).tolist() == [1.0, 0.0]
    assert jt.sub(x, x, alpha=2).tolist() == [-1.0, -2.0]


def test_max_of_one_row_takes_no_gather(monkeypatch):
    def refuse(*a):
        raise AssertionError("a one-lane max(dim) gathers nothing")
    x = jt.tensor([[1.0, float("nan"), 3.0, float("nan")]], requires_grad=True)
    monkeypatch.setattr(minmax, "_lane_values", refuse)
    v, i = jt.max(x, 1)
    assert type(jt.max(x, 1)) is jt.return_types.max
    assert np.isnan(v.item()) and i.tolist() == [1] and i.dtype is jt.int64
    assert v.shape == (1,) and v.grad_fn is not None and i.grad_fn is None
    v.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 0.0, 0.0]]
    monkeypatch.undo()
    z = jt.tensor([[-0.0, 0.0]])
    assert str(jt.min(z, 1).values) == "tensor([-0.])" and jt.max(z, 1).indices.tolist() == [0]
    # keepdim, several lanes and rank 1 take the general path, as before
    assert jt.max(jt.tensor([[1.0, 5.0], [7.0, 2.0]]), 1).indices.tolist() == [1, 0]
    assert jt.max(x.detach(), 1, keepdim=True).indices.shape == (1, 1)
    assert jt.min(jt.tensor([3.0, 1.0]), 0).indices.item() == 1
    # only the indices are saved, as PyTorch saves them: an in-place write to them is caught,
    # one to the values is not (their gradient does not read them)
    v, i = jt.max(x * 1, 1)
    i.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        v.sum().backward()
    y = jt.tensor([[1.0, 3.0, 2.0]], requires_grad=True)
    v, i = jt.min(y * 1, 1)
    assert v.grad_fn.saved["result"][0] is None
    v.mul_(2)
    v.sum().backward()
    assert y.grad.tolist() == [[2.0, 0.0, 0.0]]


def test_expand_memo_gives_the_general_views():
    shape._EXPANDS.clear()
    a = jt.tensor([[1.0], [2.0]])
    first = a.expand(2, 3)
    assert len(shape._EXPANDS) == 1  # the common call memoised ...
    again = a.expand(2, 3)  # ... and read back: the same view as made the first time
    for r in (first, again):
        assert r._data.strides == (4, 0) and not r._data.flags.writeable
        assert r._data.base is not None and r.tolist() == [[1.0] * 3, [2.0] * 3]
    # an expansion with no repeated element stays writable, as PyTorch's
    w = a.expand(-1, 1)
    w = a.expand(-1, 1)
    assert w._data.flags.writeable
    w[0, 0] = 5.0
    assert a[0, 0].item() == 5.0 and a._version[0] == w._version[0] == 1
    # a non-contiguous input of the same shape is not the memoised contiguous one
    t = jt.arange(4.0).view(2, 2).t()[:, :1]
    assert t.expand(2, 3).tolist() == [[0.0] * 3, [1.0] * 3]
    with pytest.raises(RuntimeError, match="must match the existing size"):
        a.expand(3, 3)


def test_view_sizes_are_memoised_only_when_valid():
    shape._VIEW_SHAPES.clear()
    x = jt.arange(6.0)
    assert x.view(2, -1).shape == (2, 3) and shape._VIEW_SHAPES == {((2, -1), 6): (2, 3)}
    assert x.view(2, -1).shape == (2, 3)
    with pytest.raises(RuntimeError, match="invalid for input of size 6"):
        x.view(4, -1)
    assert ((4, -1), 6) not in shape._VIEW_SHAPES


def test_memoised_shapes_take_lists_too():
    # (the compiler passes sizes as lists: never memoised, same results)
    a = np.ones((2, 1), np.float32)
    assert shape._expand(a, [2, 3]).shape == (2, 3)
    assert shape._view(a, [1, -1]).shape == (1, 2)
