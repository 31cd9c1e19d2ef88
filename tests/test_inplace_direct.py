"""In-place elementwise ops with no history to record write straight into the tensor's array
(autograd/inplace.py `_write_direct`; NumPy `out=` through an op's `extra["into"]`): the same
values as the out-of-place op, the version counter bumped once, views and overlapping operands
seen as the general path sees them, and autograd's in-place checks and PyTorch's errors kept."""
from __future__ import annotations

import numpy as np
import pytest

import jitorch as jt
from jitorch._ops.registry import OPS


def _no_impl(monkeypatch, *names):
    """Make the ops' result-array impls raise: the `out=` path must not call them."""
    def boom(*a, **k):
        raise AssertionError("the in-place call computed a result array")
    for n in names:
        monkeypatch.setattr(OPS[n], "impl", boom)


CASES = [  # (method, extra args, out-of-place reference)
    ("add_", lambda y: (y,), dict(alpha=-0.25), lambda x, y: x + y * np.float32(-0.25)),
    ("sub_", lambda y: (y,), dict(alpha=3), lambda x, y: x - y * np.float32(3)),
    ("mul_", lambda y: (y,), {}, lambda x, y: x * y),
    ("mul_", lambda y: (0.5,), {}, lambda x, y: x * np.float32(0.5)),
    ("addcdiv_", lambda y: (y, y + 3), dict(value=0.1),
     lambda x, y: x + np.float32(0.1) * (y / (y + 3))),
    ("addcmul_", lambda y: (y, y), dict(value=2), lambda x, y: x + np.float32(2) * y * y),
]


@pytest.mark.parametrize("method, args, kw, ref", CASES)
def test_writes_into_the_array_of_a_view(method, args, kw, ref, monkeypatch):
    rng = np.random.default_rng(0)
    base_np = rng.standard_normal((4, 5)).astype(np.float32)
    y_np = rng.standard_normal((3, 5)).astype(np.float32)
    base = jt.tensor(base_np)
    view = base[1:]  # shares storage and version counter with base
    data, v0 = base._data, base._version[0]
    expected = base_np.copy()
    expected[1:] = ref(base_np[1:], y_np)
    _no_impl(monkeypatch, method[:-1])
    assert view.__getattribute__(method)(*args(jt.tensor(y_np)), **kw) is view
    np.testing.assert_array_equal(base.numpy(), expected)
    assert base._data is data  # written in place, not replaced
    assert base._version[0] == view._version[0] == v0 + 1


def test_overlapping_operand_reads_the_old_values():
    x = jt.arange(6.0)
    x[1:].add_(x[:-1])  # NumPy buffers the overlapping operand, as the copying path did
    assert x.tolist() == [0.0, 1.0, 3.0, 5.0, 7.0, 9.0]


def test_no_grad_parameter_update_and_the_autograd_checks():
    w = jt.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used"):
        w.add_(1.0)
    before = w.detach().numpy().copy()
    with jt.no_grad():
        w.add_(jt.ones(3), alpha=2)
    assert w.grad_fn is None and w.requires_grad and w.is_leaf
    np.testing.assert_array_equal(w.detach().numpy(), before + 2)
    # a tensor saved for backward and then modified: the version check still fires
    z = w * 2
    y = z * z  # (mul saves its operands)
    with jt.no_grad():
        z.mul_(3.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_errors_of_the_general_path():
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        jt.zeros(1).expand(3).add_(1.0)
    with pytest.raises(RuntimeError, match=r"output with shape \[3\] doesn't match the "
                                           r"broadcast shape \[2, 3\]"):
        jt.zeros(3).add_(jt.zeros(2, 3))
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        jt.zeros(3, dtype=jt.long).mul_(1.5)


def test_other_dtypes_and_broadcast_operands_take_the_general_path():
    x = jt.ones(2, 3)
    x.add_(jt.tensor([1.0, 2.0, 3.0], dtype=jt.float64))  # broadcast, promoted: then cast back
    assert x.dtype == jt.float32 and x.tolist() == [[2.0, 3.0, 4.0]] * 2
    n = jt.arange(4)
    n.mul_(3)
    assert n.dtype == jt.long and n.tolist() == [0, 3, 6, 9]
