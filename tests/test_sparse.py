"""Sparse COO tensors (issue 19): construction and its checks, coalescing, conversions, the
sparse forms of mm / matmul / add / mul / sum / softmax / t, gradients through sparse @ dense
(w.r.t. the dense operand and the values, by finite differences), and PyTorch's
NotImplementedError for ops that have no sparse form. References are NumPy and SciPy; PyTorch's
printed form and errors were read from torch 2.13."""
import copy

import numpy as np
import pytest
import scipy.sparse as sp

import jitorch
from jitorch.autograd import gradcheck

ROWS = np.array([0, 1, 1, 0, 2])
COLS = np.array([2, 0, 2, 2, 1])
VALS = np.array([3.0, 4.0, 5.0, 1.0, -2.0])


def _coo(dtype=jitorch.float64, requires_grad=False):
    return jitorch.sparse_coo_tensor(jitorch.tensor(np.stack([ROWS, COLS])),
                                     jitorch.tensor(VALS, dtype=dtype), (3, 4),
                                     requires_grad=requires_grad)


def _dense_ref():
    return sp.coo_matrix((VALS, (ROWS, COLS)), shape=(3, 4)).toarray()


def test_construction_metadata_and_coalesce():
    s = _coo()
    assert s.is_sparse and s.layout is jitorch.sparse_coo and not s.is_coalesced()
    assert jitorch.ones(2).layout is jitorch.strided and not jitorch.ones(2).is_sparse
    assert repr(jitorch.sparse_coo) == "jitorch.sparse_coo"
    assert s.shape == (3, 4) and s.dim() == 2 and s.dtype is jitorch.float64
    assert (s._nnz(), s.sparse_dim(), s.dense_dim()) == (5, 2, 0)
    with pytest.raises(RuntimeError, match="Cannot get indices on an uncoalesced tensor"):
        s.indices()
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 4 and c.coalesce() is c
    np.testing.assert_array_equal(c.indices().numpy(), [[0, 1, 1, 2], [2, 0, 2, 1]])
    np.testing.assert_array_equal(c.values().numpy(), [4.0, 4.0, 5.0, -2.0])  # 3 + 1 summed
    np.testing.assert_array_equal(s.to_dense().numpy(), _dense_ref())
    np.testing.assert_array_equal(s._values().numpy(), VALS)  # no check, no coalescing
    # size inferred from the indices; values of several dims make a hybrid tensor
    h = jitorch.sparse_coo_tensor([[0, 2]], [[1.0, 2.0], [3.0, 4.0]])
    assert h.shape == (3, 2) and (h.sparse_dim(), h.dense_dim()) == (1, 1)
    np.testing.assert_array_equal(h.to_dense().numpy(), [[1, 2], [0, 0], [3, 4]])
    assert repr(c).startswith("tensor(indices=tensor([[0, 1, 1, 2],\n"
                              "                       [2, 0, 2, 1]]),\n       values=tensor(")
    assert repr(c).endswith("size=(3, 4), nnz=4, layout=jitorch.sparse_coo)")


def test_to_sparse_round_trip_and_hybrid():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4, 2)) * (rng.random((3, 4, 1)) < 0.5)
    x = jitorch.tensor(a)
    s = x.to_sparse()
    assert s.is_coalesced() and s._nnz() == np.count_nonzero(a)
    np.testing.assert_array_equal(s.to_dense().numpy(), a)
    h = x.to_sparse(2)
    assert (h.sparse_dim(), h.dense_dim()) == (2, 1) and tuple(h.values().shape)[1:] == (2,)
    np.testing.assert_array_equal(h.to_dense().numpy(), a)
    assert x.to_dense() is x


@pytest.mark.parametrize("kwargs,msg", [
    (dict(indices=[[0, 1, 1]], values=[1.0, 2.0]), "indices and values must have same nnz, but "
     "got nnz from indices: 3, nnz from values: 2"),
    (dict(indices=[[0, 1], [1, 0]], values=[1.0, 2.0], size=(2, 2, 2)),
     r"'len\(size\) == sparse_dim \+ dense_dim' is not satisfied: len\(size\) = 3, "
     "sparse_dim = 2, dense_dim = 0"),
    (dict(indices=[[0, 3], [1, 0]], values=[1.0, 2.0], size=(2, 2)),
     "size is inconsistent with indices: for dim 0, size is 2 but found index 3"),
    (dict(indices=[[0.0, 1.0]], values=[1.0, 2.0]), "indices must be an int64 tensor"),
])
def test_construction_errors(kwargs, msg):
    with pytest.raises(RuntimeError, match=msg):
        jitorch.sparse_coo_tensor(**kwargs)


def test_matrix_products_against_scipy():
    s = _coo()
    a = _dense_ref()
    d = np.arange(8.0).reshape(4, 2)
    for got in (jitorch.sparse.mm(s, jitorch.tensor(d)), jitorch.spmm(s, jitorch.tensor(d)),
                jitorch.mm(s, jitorch.tensor(d)), jitorch.matmul(s, jitorch.tensor(d)),
                s @ jitorch.tensor(d), s.mm(jitorch.tensor(d))):
        assert got.layout is jitorch.strided
        np.testing.assert_allclose(got.numpy(), a @ d)
    np.testing.assert_allclose((s @ jitorch.arange(4.0, dtype=jitorch.float64)).numpy(),
                               a @ np.arange(4.0))
    w = jitorch.tensor(d.T)
    np.testing.assert_allclose(jitorch.nn.functional.linear(s, w).numpy(), a @ d)  # as PyTorch
    bias = jitorch.ones(3, 2, dtype=jitorch.float64)
    np.testing.assert_allclose(jitorch.addmm(bias, s, jitorch.tensor(d), beta=2).numpy(),
                               2 + a @ d)
    np.testing.assert_allclose(jitorch.sparse.addmm(bias, s, jitorch.tensor(d), alpha=3)
                               .numpy(), 1 + 3 * a @ d)
    e = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose((jitorch.tensor(e) @ s).numpy(), e @ a)  # dense @ sparse
    ss = jitorch.sparse.mm(s, s.t())
    assert ss.is_sparse and ss.is_coalesced()
    np.testing.assert_allclose(ss.to_dense().numpy(), a @ a.T)
    with pytest.raises(RuntimeError, match="Expected dim 0 size 4, got 3"):
        jitorch.sparse.mm(s, jitorch.ones(3, 2, dtype=jitorch.float64))
    with pytest.raises(RuntimeError, match="expected scalar type Double but found Float"):
        jitorch.sparse.mm(s, jitorch.ones(4, 2))


def test_elementwise_sums_and_transpose():
    s, a = _coo(), _dense_ref()
    c = s.coalesce()
    both = c + c
    assert both.is_sparse and both.is_coalesced()
    np.testing.assert_array_equal(both.to_dense().numpy(), 2 * a)
    assert not (s + s).is_coalesced()
    np.testing.assert_array_equal((s + s).to_dense().numpy(), 2 * a)
    np.testing.assert_array_equal((s - c * 3).to_dense().numpy(), -2 * a)
    np.testing.assert_array_equal((0.5 * s).to_dense().numpy(), a / 2)
    np.testing.assert_array_equal((s / 4).to_dense().numpy(), a / 4)
    np.testing.assert_array_equal((-s).to_dense().numpy(), -a)
    d = np.arange(12.0).reshape(3, 4)
    prod = s * jitorch.tensor(d)
    assert prod.is_sparse
    np.testing.assert_array_equal(prod.to_dense().numpy(), a * d)
    np.testing.assert_array_equal((jitorch.tensor(d) + s).numpy(), a + d)  # dense result
    other = jitorch.tensor(d).to_sparse()
    np.testing.assert_array_equal((s * other).to_dense().numpy(), a * d)  # the intersection
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + jitorch.tensor(d)
    with pytest.raises(RuntimeError, match=r"expected sizes of 'self' and 'other' to match"):
        s + jitorch.ones(2, 2).to_sparse()
    t = s.t()
    assert t.shape == (4, 3) and not t.is_coalesced()
    np.testing.assert_array_equal(t.to_dense().numpy(), a.T)
    assert jitorch.sparse.sum(s).item() == a.sum() and s.sum().item() == a.sum()
    col = jitorch.sparse.sum(s, 0)
    assert col.is_sparse and col.is_coalesced() and col.shape == (4,)
    np.testing.assert_array_equal(col.to_dense().numpy(), a.sum(0))
    np.testing.assert_array_equal(s.sum(1).to_dense().numpy(), a.sum(1))
    whole = jitorch.sparse.sum(s, (0, 1))
    assert not whole.is_sparse and whole.item() == a.sum()


def test_sparse_softmax_over_stored_entries():
    s = _coo()
    a = _dense_ref()
    stored = sp.coo_matrix((np.ones(5), (ROWS, COLS)), shape=(3, 4)).toarray() > 0
    want = np.where(stored, np.exp(np.where(stored, a, -np.inf) - a.max(1, keepdims=True)), 0)
    want = want / want.sum(1, keepdims=True)
    got = jitorch.sparse.softmax(s, 1)
    np.testing.assert_allclose(got.to_dense().numpy(), want)
    np.testing.assert_allclose(jitorch.sparse.log_softmax(s, 1).values().numpy(),
                               np.log(want[stored]))


def test_gradients_through_sparse_products_by_finite_differences():
    idx = jitorch.tensor(np.stack([ROWS, COLS]))
    vals = jitorch.tensor(VALS, requires_grad=True)
    dense = jitorch.tensor(np.random.default_rng(1).standard_normal((4, 2)), requires_grad=True)

    def spmm(v, d):
        return jitorch.sparse.mm(jitorch.sparse_coo_tensor(idx, v, (3, 4)), d)
    assert gradcheck(spmm, (vals, dense))
    assert gradcheck(lambda v, d: jitorch.ones(2, 3, dtype=jitorch.float64)
                     @ jitorch.sparse_coo_tensor(idx, v, (3, 4)) @ d, (vals, dense))
    assert gradcheck(lambda v: jitorch.sparse.softmax(
        jitorch.sparse_coo_tensor(idx, v, (3, 4)), 1).to_dense(), (vals,))
    assert gradcheck(lambda v: jitorch.sparse.sum(
        jitorch.sparse_coo_tensor(idx, v, (3, 4)).coalesce() * 3, 1).to_dense(), (vals,))
    x = jitorch.tensor(_dense_ref(), requires_grad=True)
    (x.to_sparse().values() * 2).sum().backward()  # a gather: 2 where stored, else 0
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * (_dense_ref() != 0))
    # a leaf sparse tensor that requires grad gets a sparse .grad on its pattern
    s = _coo(requires_grad=True)
    (s @ dense).sum().backward()
    assert s.requires_grad and s.is_leaf and s.grad.is_sparse
    assert repr(s).endswith("layout=jitorch.sparse_coo, requires_grad=True)")
    c = copy.deepcopy(s.coalesce().detach())
    assert c.is_coalesced() and c.double().is_coalesced() and not c.requires_grad
    np.testing.assert_allclose(s.grad.to_dense().numpy(), _pattern_grad(dense))


def _pattern_grad(dense):
    """d(sum(S @ D))/dS on S's stored entries (duplicates summed by to_dense)."""
    g = np.zeros((3, 4))
    np.add.at(g, (ROWS, COLS), dense.detach().numpy().sum(1)[COLS])
    return g


@pytest.mark.parametrize("call,op", [
    (lambda s: jitorch.exp(s), "aten::exp"), (lambda s: s.view(12), "aten::view"),
    (lambda s: s.relu(), "aten::relu"), (lambda s: s.sum(0, keepdim=True), "aten::sum"),
    (lambda s: jitorch.sigmoid(s), "aten::sigmoid"), (lambda s: s.mul_(2), "aten::mul_"),
    (lambda s: jitorch.cat([s, s]), "aten::cat"),
])
def test_ops_without_a_sparse_form_name_the_op_and_backend(call, op):
    with pytest.raises(NotImplementedError, match=f"Could not run '{op}.*' with arguments from "
                                                  "the 'SparseCPU' backend"):
        call(_coo())
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy"):
        _coo().numpy()
