"""Shape, view, join/split and reordering ops: the semantics the OpInfo table can't express.

Views share memory and version counters with their base (writes go both ways), in-place writes
through views reach autograd, multi-output ops return tuples of views, cat/stack promote dtypes
and follow PyTorch's legacy empty-tensor rule, keyword forms work, and errors carry PyTorch's
exception types and messages. Expected values are closed forms or NumPy.
"""
import numpy as np
import pytest

import jitorch as torch


def arange(*shape, dtype=torch.float64):
    """A fresh (non-view) tensor 0, 1, 2, ... of `shape`."""
    return torch.tensor(np.arange(int(np.prod(shape))).reshape(shape), dtype=dtype)


def check(t, values, dtype=None, shape=None):
    """Values, dtype and shape of a tensor result."""
    values = np.asarray(values)
    assert isinstance(t, torch.Tensor)
    assert tuple(t.shape) == (values.shape if shape is None else tuple(shape))
    if dtype is not None:
        assert t.dtype is dtype
    np.testing.assert_array_equal(t.detach().numpy(), values)


# --- views share storage -----------------------------------------------------------------------
VIEWS = {
    "view": lambda a: a.view(6, 4),
    "view_as": lambda a: a.view_as(torch.zeros(4, 6)),
    "reshape": lambda a: a.reshape(4, 6),
    "reshape_as": lambda a: a.reshape_as(torch.zeros(24)),
    "flatten": lambda a: a.flatten(1),
    "ravel": lambda a: a.ravel(),
    "unflatten": lambda a: a.unflatten(2, (2, 2)),
    "squeeze": lambda a: a.unsqueeze(0).squeeze(0),
    "unsqueeze": lambda a: a.unsqueeze(1),
    "permute": lambda a: a.permute(2, 0, 1),
    "transpose": lambda a: a.transpose(0, 2),
    "swapaxes": lambda a: a.swapaxes(0, 1),
    "swapdims": lambda a: a.swapdims(0, 1),
    "movedim": lambda a: a.movedim(0, 2),
    "moveaxis": lambda a: a.moveaxis((0, 1), (1, 0)),
    "t": lambda a: a.select(0, 1).t(),
    "adjoint": lambda a: a.adjoint(),
    "diagonal": lambda a: a.diagonal(0, 1, 2),
    "diagonal-offset": lambda a: a.diagonal(-1, 2, 1),
    "narrow": lambda a: a.narrow(2, 1, 2),
    "select": lambda a: a.select(1, 2),
    "unbind": lambda a: a.unbind(1)[1],
    "split": lambda a: a.split(2, 2)[1],
    "split-sizes": lambda a: a.split([1, 3], 2)[1],
    "chunk": lambda a: a.chunk(2, 1)[1],
    "tensor_split": lambda a: a.tensor_split([1, 3], 2)[1],
    "hsplit": lambda a: a.hsplit(3)[2],
    "vsplit": lambda a: a.vsplit([1])[1],
    "dsplit": lambda a: a.dsplit(2)[1],
    "expand-unit": lambda a: a.unsqueeze(0).expand(1, 2, 3, 4),
    "atleast_3d": lambda a: torch.atleast_3d(a.select(0, 0)),
    "chain": lambda a: a.transpose(0, 1).select(0, 1).narrow(0, 1, 1).squeeze(0)
    .unsqueeze(1).diagonal(0, 0, 1),
}


def _mask(f):
    """Where the view `f` looks into a (2, 3, 4) tensor, computed with NumPy-only means."""
    base = arange(2, 3, 4)
    picked = np.unique(f(base).numpy())
    return np.isin(np.arange(24).reshape(2, 3, 4), picked)


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_shares_storage_and_version(name):
    f = VIEWS[name]
    base = arange(2, 3, 4)
    v = f(base)
    assert v._base is base
    v.mul_(10)
    mask = _mask(f)
    want = np.arange(24.).reshape(2, 3, 4) * np.where(mask, 10, 1)
    check(base, want, torch.float64)
    assert base._version_value == v._version_value == 1
    base.add_(1)  # and back: the view sees writes to its base
    np.testing.assert_array_equal(v.numpy(), f(torch.tensor(want + 1)).numpy())


@pytest.mark.parametrize("name", list(VIEWS))
def test_inplace_write_through_view_reaches_autograd(name):
    f = VIEWS[name]
    mask = _mask(f)
    w = np.arange(24.).reshape(2, 3, 4)
    x = arange(2, 3, 4).requires_grad_()
    y = x * 2
    f(y).mul_(3).add_(1)  # y = 2x outside the view, 6x + 1 inside
    (y * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * w * np.where(mask, 3, 1))
    np.testing.assert_allclose(y.detach().numpy(),
                               np.where(mask, 6 * np.arange(24.).reshape(2, 3, 4) + 1,
                                        2 * np.arange(24.).reshape(2, 3, 4)))


def test_reshape_flatten_ravel_copy_only_when_strides_require():
    a = arange(2, 3)
    assert a.reshape(3, 2)._base is a and a.flatten()._base is a and a.ravel()._base is a
    at = a.t()
    r = at.reshape(6)
    assert r._base is None and not np.shares_memory(r.numpy(), a.numpy())
    check(r, [0, 3, 1, 4, 2, 5])
    check(at.flatten(), [0, 3, 1, 4, 2, 5])
    assert at.unsqueeze(0).reshape(3, 2)._base is a  # view possible despite the transpose


@pytest.mark.parametrize("size,want", [((1, -1), (1, 6)), ((-1, 3), (2, 3)),
                                       ((3, -1, 1), (3, 2, 1)), ((-1,), (6,)), ((6, 1), (6, 1))])
def test_view_infers_one_minus_one(size, want):
    x = torch.arange(6.0)
    assert tuple(x.view(*size).shape) == want and tuple(x.reshape(size).shape) == want
    assert tuple(torch.ones(0, 4).view(-1, 2).shape) == (0, 2)


def test_view_of_non_contiguous_raises():
    with pytest.raises(RuntimeError, match="view size is not compatible with input tensor's "
                                           r"size and stride .* Use .reshape\(...\) instead."):
        arange(2, 3).t().view(6)


@pytest.mark.parametrize("make", [
    lambda a: a.flip(0), lambda a: a.fliplr(), lambda a: a.flipud(), lambda a: a.roll(1),
    lambda a: a.rot90(), lambda a: a.repeat(1, 1), lambda a: a.tile((1,)),
    lambda a: a.repeat_interleave(1, 0), lambda a: torch.cat([a]), lambda a: torch.stack([a]),
    lambda a: torch.hstack([a]), lambda a: a.flip(()),
])
def test_copying_ops_do_not_share_storage(make):
    a = arange(2, 3)
    r = make(a)
    assert r._base is None and not np.shares_memory(r.numpy(), a.numpy())


def test_expand_views_broadcast_and_refuse_overlapping_writes():
    a = torch.tensor([1.0, 2.0, 3.0])
    e = a.expand(2, 3)
    check(e, [[1, 2, 3], [1, 2, 3]], torch.float32)
    assert e.stride() == (0, 1) and e._base is a
    a.add_(1)
    check(e, [[2, 3, 4], [2, 3, 4]])
    with pytest.raises((RuntimeError, ValueError)):
        e.add_(1)  # two elements share one memory location
    u = a.expand(1, 3)  # no overlap: writable, as in PyTorch
    u.mul_(2)
    check(a, [4, 6, 8])
    s = torch.ones(2, 1).expand(2, 1)  # its own shape: a writable view
    assert s._base is not None and s.shape == (2, 1)
    s.mul_(3)
    assert s._base.tolist() == [[3.0], [3.0]]


# --- view(dtype) ---------------------------------------------------------------------------------
def test_view_dtype_reinterprets_bytes():
    a = torch.tensor([[1.0, -2.0], [0.5, 3.0]])
    i = a.view(torch.int32)
    check(i, np.array([[1.0, -2.0], [0.5, 3.0]], np.float32).view(np.int32), torch.int32)
    assert i._base is a
    h = a.view(torch.float16)
    check(h, np.array([[1.0, -2.0], [0.5, 3.0]], np.float32).view(np.float16), torch.float16,
          (2, 4))
    d = a.view(dtype=torch.float64)
    check(d, np.array([[1.0, -2.0], [0.5, 3.0]], np.float32).view(np.float64), torch.float64,
          (2, 1))
    b = torch.tensor([1, 0, 2], dtype=torch.uint8).view(torch.bool)
    assert b.dtype is torch.bool and b.shape == (3,)
    i.select(0, 0).fill_(0)  # a view: writing the int bits changes the float
    check(a, [[0.0, 0.0], [0.5, 3.0]])


def test_view_dtype_is_not_differentiable():
    a = torch.ones(2, 2, requires_grad=True)
    assert not a.view(torch.float32).requires_grad
    assert not a.view(torch.int32).requires_grad


@pytest.mark.parametrize("make,msg", [
    (lambda: torch.ones(2, 3).view(torch.float64),
     "self.size(-1) must be divisible by 2 to view Float as Double (different element sizes), "
     "but got 3"),
    (lambda: torch.ones(2, 4).t().view(torch.float64),
     "self.stride(-1) must be 1 to view Float as Double (different element sizes), but got 4"),
    (lambda: torch.tensor(1.0).view(torch.float16),
     "self.dim() cannot be 0 to view Float as Half (different element sizes)"),
])
def test_view_dtype_errors(make, msg):
    with pytest.raises(RuntimeError) as e:
        make()
    assert str(e.value) == msg


# --- keyword forms --------------------------------------------------------------------------------
def test_keyword_forms():
    a = arange(2, 3)
    check(torch.reshape(a, shape=(3, 2)), np.arange(6.).reshape(3, 2))
    check(a.view(size=(6,)), np.arange(6.))
    check(a.permute(dims=(1, 0)), np.arange(6.).reshape(2, 3).T)
    check(torch.permute(a, dims=[1, 0]), np.arange(6.).reshape(2, 3).T)
    check(a.expand(size=(2, 2, 3)), np.broadcast_to(np.arange(6.).reshape(2, 3), (2, 2, 3)))
    check(torch.flip(a, dims=[0]), np.arange(6.).reshape(2, 3)[::-1])
    check(a.repeat(repeats=(1, 2)), np.tile(np.arange(6.).reshape(2, 3), (1, 2)))
    check(torch.squeeze(a.unsqueeze(0), dim=0), np.arange(6.).reshape(2, 3))
    check(torch.cat(tensors=[a, a], dim=1), np.tile(np.arange(6.).reshape(2, 3), (1, 2)))
    check(torch.concatenate([a, a], axis=1), np.tile(np.arange(6.).reshape(2, 3), (1, 2)))
    check(torch.stack(tensors=[a, a], dim=-1).select(-1, 1), np.arange(6.).reshape(2, 3))
    first, second = torch.split(tensor=a, split_size_or_sections=[1, 2], dim=1)
    check(second, np.arange(6.).reshape(2, 3)[:, 1:])
    check(torch.roll(a, shifts=1, dims=1), np.roll(np.arange(6.).reshape(2, 3), 1, 1))
    check(torch.rot90(a, k=1, dims=(0, 1)), np.rot90(np.arange(6.).reshape(2, 3)))
    check(torch.diagonal(a, offset=1, dim1=0, dim2=1), [1, 5])
    check(torch.flatten(arange(2, 3, 4), start_dim=1, end_dim=2), np.arange(24.).reshape(2, 12))
    check(torch.narrow(a, dim=1, start=torch.tensor(1), length=2),
          np.arange(6.).reshape(2, 3)[:, 1:])
    with pytest.raises(TypeError):
        a.view(shape=(6,), size=(6,))


# --- multi-output ops -----------------------------------------------------------------------------
def test_split_family_returns_tuples_of_views():
    a = arange(2, 5)
    for parts in (a.split(2, 1), a.chunk(3, 1), a.tensor_split(3, 1), a.unbind(1), a.hsplit(5)):
        assert isinstance(parts, tuple)
        assert all(p._base is a for p in parts)
    assert [tuple(p.shape) for p in a.split(2, 1)] == [(2, 2), (2, 2), (2, 1)]
    assert [tuple(p.shape) for p in a.split([1, 0, 4], 1)] == [(2, 1), (2, 0), (2, 4)]
    assert [tuple(p.shape) for p in torch.arange(6).chunk(4)] == [(2,), (2,), (2,)]
    assert [tuple(p.shape) for p in torch.ones(0).chunk(3)] == [(0,), (0,), (0,)]
    assert [tuple(p.shape) for p in torch.arange(7).tensor_split(3)] == [(3,), (2,), (2,)]
    assert [p.tolist() for p in torch.arange(7).tensor_split(torch.tensor([1, 5]))] == \
        [[0], [1, 2, 3, 4], [5, 6]]
    assert [p.tolist() for p in torch.arange(7).tensor_split(torch.tensor(2))] == \
        [[0, 1, 2, 3], [4, 5, 6]]
    assert [x.tolist() for x in torch.tensor([[1, 2], [3, 4]])] == [[1, 2], [3, 4]]


def test_split_gradient_with_unused_pieces():
    x = arange(2, 5).requires_grad_()
    a, b, c = x.split(2, 1)
    (b * 3).sum().backward()  # a and c get materialized zero gradients
    check(x.grad, [[0, 0, 3, 3, 0], [0, 0, 3, 3, 0]], torch.float64)
    x.grad = None
    x.unbind(0)[1].sum().backward()
    check(x.grad, [[0] * 5, [1] * 5])
    x.grad = None
    x.chunk(5, 1)[4].sum().backward()  # a single used piece
    check(x.grad, [[0, 0, 0, 0, 1]] * 2)


def test_tensor_split_overlapping_indices_gradient():
    x = torch.arange(7, dtype=torch.float64, requires_grad=True)
    parts = x.tensor_split([1, 5, 3, 10])  # [0:1], [1:5], [5:5], [3:7], [10:]
    assert [p.tolist() for p in parts] == [[0], [1, 2, 3, 4], [], [3, 4, 5, 6], []]
    total = parts[0].sum()
    for p in parts[1:]:
        total = total + p.sum()
    total.backward()
    check(x.grad, [1, 1, 1, 2, 2, 1, 1])


def test_cat_gradient_is_split_back_per_input():
    a = arange(2, 2).requires_grad_()
    b = torch.ones(2, 3, dtype=torch.float64, requires_grad=True)
    e = torch.zeros(0, dtype=torch.float64, requires_grad=True)  # legacy-skipped input
    out = torch.cat([a, e, b], 1)
    (out * torch.arange(10, dtype=torch.float64).reshape(2, 5)).sum().backward()
    check(a.grad, [[0, 1], [5, 6]])
    check(b.grad, [[2, 3, 4], [7, 8, 9]])
    check(e.grad, np.zeros(0))


def test_cat_does_not_save_its_inputs():
    # PyTorch's cat keeps only shapes for backward: modifying an input afterwards is fine
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    a = x * 1
    out = torch.cat([a, a])
    a.add_(1)
    out.sum().backward()
    check(x.grad, [2, 2])


# --- cat / stack dtypes and rules ----------------------------------------------------------------
@pytest.mark.parametrize("d1,d2,want", [
    (torch.float64, torch.int64, torch.float64),
    (torch.int32, torch.int64, torch.int64),
    (torch.bool, torch.uint8, torch.uint8),
    (torch.float16, torch.bfloat16, torch.float32),
    (torch.int64, torch.float32, torch.float32),
    (torch.complex64, torch.float64, torch.complex128),
])
def test_cat_and_stack_promote(d1, d2, want):
    a, b = torch.ones(2, dtype=d1), torch.zeros(2, dtype=d2)
    check(torch.cat([a, b]), [1, 1, 0, 0], want)
    check(torch.stack([a, b]), [[1, 1], [0, 0]], want)
    check(torch.hstack([a, b]), [1, 1, 0, 0], want)


def test_cat_legacy_empty_rule():
    a = arange(2, 2)
    check(torch.cat([a, torch.zeros(0), a], 0), np.tile(np.arange(4.).reshape(2, 2), (2, 1)))
    check(torch.cat([a, torch.zeros(0)], 1), np.arange(4.).reshape(2, 2))
    # the skipped tensor still takes part in type promotion
    check(torch.cat([torch.ones(2, dtype=torch.int64), torch.zeros(0, dtype=torch.float64)]),
          [1, 1], torch.float64)
    check(torch.cat([torch.zeros(0), torch.zeros(0)]), np.zeros(0), torch.float32)


def test_cat_stack_out():
    out = torch.empty(0, dtype=torch.float64)
    r = torch.cat([arange(2), arange(3)], out=out)
    assert r is out
    check(out, [0, 1, 0, 1, 2], torch.float64)
    torch.stack([arange(2), arange(2)], 1, out=out)
    check(out, [[0, 0], [1, 1]])


def test_hstack_family_shapes():
    v = torch.tensor([1, 2, 3])
    m = torch.tensor([[1, 2], [3, 4], [5, 6]])
    check(torch.vstack([v, v]), [[1, 2, 3], [1, 2, 3]], torch.int64)
    check(torch.row_stack([v, v]), [[1, 2, 3], [1, 2, 3]], torch.int64)
    check(torch.dstack([v, v]), [[[1, 1], [2, 2], [3, 3]]])
    check(torch.column_stack([m, v]), [[1, 2, 1], [3, 4, 2], [5, 6, 3]])
    check(torch.hstack([torch.tensor(1), torch.tensor(2)]), [1, 2])
    check(torch.column_stack([torch.tensor(1), torch.tensor(2)]), [[1, 2]])


# --- other semantics -----------------------------------------------------------------------------
def test_broadcast_shapes_and_tensors():
    s = torch.broadcast_shapes((2, 1), (3,), 1)
    assert isinstance(s, torch.Size) and s == (2, 3)
    assert torch.broadcast_shapes() == torch.Size([])
    a, b = torch.broadcast_tensors(torch.tensor([[1.0], [2.0]]), torch.tensor([10.0, 20.0]))
    check(a, [[1, 1], [2, 2]], torch.float32)
    check(b, [[10, 20], [10, 20]], torch.float32)
    assert b.stride() == (0, 1)


def test_atleast_forms():
    x = torch.tensor(5.0)
    v = torch.tensor([1.0, 2.0])
    check(torch.atleast_1d(x), [5.0])
    assert torch.atleast_1d(v) is v
    check(torch.atleast_2d(v), [[1, 2]])
    check(torch.atleast_3d(v), [[[1], [2]]])
    r = torch.atleast_2d(x, v)
    assert isinstance(r, tuple) and [tuple(t.shape) for t in r] == [(1, 1), (1, 2)]
    r = torch.atleast_1d([x, v])
    assert isinstance(r, tuple) and len(r) == 2
    assert torch.atleast_1d((x,))[0].shape == (1,)
    assert torch.atleast_3d() == ()


def test_adjoint_conjugates_complex():
    z = torch.tensor([[1 + 2j, 3 - 1j]])
    check(z.adjoint(), [[1 - 2j], [3 + 1j]], torch.complex64)
    check(z.t(), [[1 + 2j], [3 - 1j]], torch.complex64)


def test_repeat_interleave_forms():
    check(torch.repeat_interleave(torch.tensor([1, 2, 0])), [0, 1, 1], torch.int64)
    check(torch.repeat_interleave(torch.tensor([2, 1], dtype=torch.int32)), [0, 0, 1],
          torch.int32)
    x = torch.tensor([[1, 2], [3, 4]])
    check(x.repeat_interleave(2), [1, 1, 2, 2, 3, 3, 4, 4], torch.int64)
    check(torch.repeat_interleave(x, torch.tensor([1, 2]), dim=0), [[1, 2], [3, 4], [3, 4]])
    check(x.repeat_interleave(torch.tensor([3]), 1), [[1, 1, 1, 2, 2, 2], [3, 3, 3, 4, 4, 4]])
    y = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    (y.repeat_interleave(torch.tensor([2, 0, 3])) * torch.arange(5.0)).sum().backward()
    check(y.grad, [1, 0, 9], torch.float64)


def test_flip_roll_rot90_values():
    a = torch.tensor([[1, 2, 3], [4, 5, 6]])
    check(a.flip(0, 1), [[6, 5, 4], [3, 2, 1]], torch.int64)
    check(a.fliplr(), [[3, 2, 1], [6, 5, 4]])
    check(a.flipud(), [[4, 5, 6], [1, 2, 3]])
    check(a.roll(1), [[6, 1, 2], [3, 4, 5]])
    check(a.roll((1, -1), (0, 1)), [[5, 6, 4], [2, 3, 1]])
    check(a.rot90(), [[3, 6], [2, 5], [1, 4]])
    check(a.rot90(-1), [[4, 1], [5, 2], [6, 3]])
    check(a.rot90(2, [1, 0]), [[6, 5, 4], [3, 2, 1]])
    check(a.repeat(2, 1, 1).sum(0), [[2, 4, 6], [8, 10, 12]])
    check(torch.tile(a, (2,)), [[1, 2, 3, 1, 2, 3], [4, 5, 6, 4, 5, 6]])


def test_second_order_gradients():
    """The backward rules are differentiable themselves (narrow/select/diagonal scatter into
    zeros through internal ops; split and cat are each other's gradients)."""
    x = torch.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    fns = [
        lambda t: (t.narrow(1, 1, 2) * t.narrow(1, 0, 2) * t.narrow(1, 2, 2)).sum(),
        lambda t: (t.select(0, 1) * t.select(0, 2) * t.select(0, 0)).sum(),
        lambda t: (t.diagonal(1) * t.diagonal(-1).sum() * t.diagonal(0).sum()).sum(),
        lambda t: (torch.cat([t, t * t], 1) * torch.cat([t * t, t], 1)).sum(),
        lambda t: (t.split([1, 3], 1)[1] * t.split(2, 1)[0].sum()).sum(),
        lambda t: (t.repeat_interleave(torch.tensor([1, 0, 2]), 0) * t.repeat(2, 1)
                   .narrow(0, 0, 3)).sum(),
        lambda t: (t.unbind(1)[0] * t.unbind(1)[3]).sum(),
        lambda t: (t.tensor_split([3, 1], 1)[2] * t.tensor_split([3, 1], 1)[0].sum()).sum(),
        lambda t: (torch.stack([t, t * t], 2) * t.flip(0).roll(1).unsqueeze(2)).sum(),
    ]
    for f in fns:
        assert torch.autograd.gradgradcheck(f, (x,))


# --- errors: PyTorch's exception types and messages ---------------------------------------------
def _ones(*s):
    return torch.ones(*s)


ERRORS = [
    (lambda: _ones(2, 3).reshape(4, 2), RuntimeError, "shape '[4, 2]' is invalid for input of "
                                                       "size 6"),
    (lambda: _ones(2, 3).reshape(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: _ones(0, 3).reshape(0, -1), RuntimeError,
     "cannot reshape tensor of 0 elements into shape [0, -1] because the unspecified dimension "
     "size -1 can be any value and is ambiguous"),
    (lambda: _ones(2, 3).view(-2, 3), RuntimeError,
     "invalid shape dimension -2 at index 0 of shape [-2, 3]"),
    (lambda: _ones(2, 5).view(3, -1), RuntimeError, "shape '[3, -1]' is invalid for input of "
                                                     "size 10"),
    (lambda: _ones(2, 5).view(0, -1), RuntimeError, "shape '[0, -1]' is invalid for input of "
                                                     "size 10"),
    (lambda: _ones(2, 3).view(-1, 2, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda: _ones(2, 3).expand(2, 3, 4), RuntimeError,
     "The expanded size of the tensor (4) must match the existing size (3) at non-singleton "
     "dimension 2.  Target sizes: [2, 3, 4].  Tensor sizes: [2, 3]"),
    (lambda: _ones(2, 1).expand(-1, 2, 1), RuntimeError,
     "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension 0"),
    (lambda: torch.broadcast_shapes((2, 1), (3, 4)), RuntimeError,
     "Attempting to broadcast a dimension of length 3 at -2! Mismatching argument at index 1 "
     "had (3, 4); but expected shape should be broadcastable to [2, 4]"),
    (lambda: torch.broadcast_tensors(_ones(2, 2), _ones(3)), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 1"),
    (lambda: _ones(2, 3).flatten(1, 0), RuntimeError,
     "flatten() has invalid args: start_dim cannot come after end_dim"),
    (lambda: _ones(2, 3).flatten(2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: _ones(2, 3).unflatten(1, (2, 2)), RuntimeError,
     "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (3) in the input "
     "tensor"),
    (lambda: _ones(2, 3).unflatten(1, ()), RuntimeError, "unflatten: sizes must be non-empty"),
    (lambda: _ones(1, 2, 1).squeeze((0, 0)), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    (lambda: _ones(1, 2, 1).squeeze(3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda: _ones(2, 3).unsqueeze(3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda: _ones(2, 3).permute(0), RuntimeError,
     "permute(sparse_coo): number of dimensions in the tensor input does not match the length "
     "of the desired ordering of dimensions i.e. input.dim() = 2 is not equal to len(dims) = 1"),
    (lambda: _ones(2, 3).permute(0, 0), RuntimeError, "permute(): duplicate dims are not "
                                                      "allowed."),
    (lambda: _ones(2, 3).transpose(0, 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: _ones(2, 3, 4).movedim((0, 0), (2, 0)), RuntimeError,
     "movedim: repeated dim in `source` ([0, 0])"),
    (lambda: _ones(2, 3, 4).movedim((0, 1), (2, 2)), RuntimeError,
     "movedim: repeated dim in `destination` ([2, 2])"),
    (lambda: _ones(2, 3, 4).movedim((0, 1), (2,)), RuntimeError,
     "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the "
     "same number of dims as destination ([2] dims)"),
    (lambda: _ones(2, 3, 4).t(), RuntimeError,
     "t() expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda: _ones(3).adjoint(), RuntimeError,
     "tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor."),
    (lambda: _ones(3, 4).diagonal(0, 0, 0), RuntimeError,
     "diagonal dimensions cannot be identical 0, 0"),
    (lambda: _ones(3).diagonal(), IndexError,
     "Dimension out of range (expected to be in range of [-1, 0], but got 1)"),
    (lambda: _ones(2, 3).narrow(1, 2, 2), RuntimeError,
     "start (2) + length (2) exceeds dimension size (3)."),
    (lambda: _ones(2, 3).narrow(1, -4, 1), IndexError,
     "start out of range (expected to be in range of [-3, 3], but got -4)"),
    (lambda: _ones(2, 3).narrow(1, 0, -1), RuntimeError, "narrow(): length must be "
                                                         "non-negative."),
    (lambda: torch.tensor(1.0).narrow(0, 0, 1), RuntimeError,
     "narrow() cannot be applied to a 0-dim tensor."),
    (lambda: _ones(2, 3).select(1, 3), IndexError,
     "select(): index 3 out of range for tensor of size [2, 3] at dimension 1"),
    (lambda: torch.tensor(1.0).select(0, 0), IndexError,
     "select() cannot be applied to a 0-dim tensor."),
    (lambda: torch.tensor(1.0).unbind(), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    (lambda: torch.cat([_ones(2, 2), _ones(3, 3)], 1), RuntimeError,
     "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for "
     "tensor number 1 in the list."),
    (lambda: torch.cat([_ones(2, 2), _ones(2, 2, 2)]), RuntimeError,
     "Tensors must have same number of dimensions: got 2 and 3"),
    (lambda: torch.cat([]), ValueError, "torch.cat(): expected a non-empty list of Tensors"),
    (lambda: torch.cat([torch.tensor(1.0), torch.tensor(2.0)]), RuntimeError,
     "zero-dimensional tensor (at position 0) cannot be concatenated"),
    (lambda: torch.cat([_ones(2, 2)], 2), IndexError,
     "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda: torch.cat(_ones(2, 3)), TypeError,
     "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    (lambda: torch.stack([_ones(2, 3), _ones(2, 4)]), RuntimeError,
     "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at "
     "entry 1"),
    (lambda: torch.stack([]), RuntimeError, "stack expects a non-empty TensorList"),
    (lambda: torch.hstack([]), RuntimeError, "hstack expects a non-empty TensorList"),
    (lambda: torch.split(_ones(2, 3), 0, 1), RuntimeError,
     "split_size can only be 0 if dimension size is 0, but got dimension size of 3"),
    (lambda: torch.split(_ones(2, 3), -1, 1), RuntimeError,
     "split expects split_size be non-negative, but got split_size=-1"),
    (lambda: torch.split(_ones(2, 3), [1, 1], 1), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at "
     "dimension 1), but got split_sizes=[1, 1]"),
    (lambda: torch.split(torch.tensor(1.0), 1), RuntimeError,
     "split expects at least a 1-dimensional tensor"),
    (lambda: torch.chunk(_ones(2, 3), 0, 1), RuntimeError,
     "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda: torch.tensor_split(_ones(3), 0), RuntimeError,
     "number of sections must be larger than 0, got 0"),
    (lambda: torch.tensor_split(_ones(7), torch.tensor([3.0])), RuntimeError,
     "tensor_split expected tensor_indices_or_sections to have dtype of long, but got Float"),
    (lambda: torch.tensor_split(_ones(7), torch.tensor([[3]])), RuntimeError,
     "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
     "one-dimensional tensor, but got a tensor with 2 dims"),
    (lambda: torch.hsplit(_ones(2, 4), 3), RuntimeError,
     "torch.hsplit attempted to split along dimension 1, but the size of the dimension 4 is "
     "not divisible by the split_size 3!"),
    (lambda: torch.vsplit(_ones(4), 2), RuntimeError,
     "torch.vsplit requires a tensor with at least 2 dimension, but got a tensor with 1 "
     "dimensions!"),
    (lambda: torch.dsplit(_ones(4, 4), 2), RuntimeError,
     "torch.dsplit requires a tensor with at least 3 dimension, but got a tensor with 2 "
     "dimensions!"),
    (lambda: _ones(2, 3).repeat(2), RuntimeError,
     "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
     "tensor"),
    (lambda: _ones(2, 3).repeat(-1, 1), RuntimeError,
     "Trying to create tensor with negative dimension -2: [-2, 3]"),
    (lambda: torch.repeat_interleave(_ones(2, 3), torch.tensor([1, 2, 3]), 0), RuntimeError,
     "repeats must have the same size as input along dim, but got repeats.size(0) = 3 and "
     "input.size(0) = 2"),
    (lambda: torch.repeat_interleave(_ones(2, 3), torch.tensor([-1, 2]), 0), RuntimeError,
     "repeats can not be negative"),
    (lambda: torch.repeat_interleave(_ones(2, 3), -1, 0), RuntimeError,
     "Repeats must be non-negative"),
    (lambda: torch.repeat_interleave(_ones(2, 3), torch.tensor([1.0, 2.0]), 0),
     NotImplementedError, "\"repeat_interleave_cpu\" not implemented for 'Float'"),
    (lambda: _ones(2, 3).flip(0, 0), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    (lambda: _ones(3).fliplr(), RuntimeError, "Input must be >= 2-d."),
    (lambda: torch.tensor(1.0).flipud(), RuntimeError, "Input must be >= 1-d."),
    (lambda: _ones(2, 3).roll((1, 2), (0,)), RuntimeError,
     "shifts and dimensions must align. shifts: 2, dims:1"),
    (lambda: _ones(2, 3).roll((), ()), RuntimeError, "`shifts` required"),
    (lambda: _ones(2, 3).rot90(1, (0,)), RuntimeError,
     "expected total rotation dims == 2, but got dims = 1"),
    (lambda: _ones(3).rot90(), RuntimeError, "expected total dims >= 2, but got total dims = 1"),
    (lambda: _ones(2, 3).rot90(1, (0, 0)), RuntimeError,
     "expected rotation dims to be different, but got dim0 = 0 and dim1 = 0"),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_pytorch(i):
    make, exc, msg = ERRORS[i]
    with pytest.raises(exc) as e:
        make()
    assert str(e.value) == msg
