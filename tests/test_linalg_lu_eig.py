"""Issue 19's linear algebra and matrix builders beyond the OpInfo table: the eigen-equation
and gradients of `linalg.eig`/`eigvals` (complex results), LU errors and legacy forms,
`block_diag`, `cartesian_prod`, `cov`, `corrcoef` against NumPy (values and gradients by
finite differences)."""
import numpy as np
import pytest

import jitorch as jt

LA = jt.linalg


def _fd_grad(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        d = np.zeros_like(a)
        d[i] = eps
        g[i] = (f(a + d) - f(a - d)) / (2 * eps)
    return g


def test_eig_solves_the_eigen_equation_with_complex_results():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 4, 4)).astype(np.float32)
    w, v = LA.eig(jt.tensor(a))
    assert w.dtype is jt.complex64 and v.dtype is jt.complex64
    np.testing.assert_allclose(a @ v.numpy(), v.numpy() * w.numpy()[..., None, :], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(v.numpy(), axis=-2), 1, atol=1e-6)
    np.testing.assert_allclose(LA.eigvals(jt.tensor(a)).numpy(), w.numpy())
    with pytest.raises(RuntimeError, match="A must be batches of square matrices"):
        LA.eig(jt.ones(2, 3))


def test_eig_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 4))  # two complex-conjugate pairs or real: both covered
    wr = rng.standard_normal((4, 2))

    def loss_np(m):
        w, v = np.linalg.eig(m)
        vr = np.abs(v)  # |v| is invariant under the eigenvectors' phase
        return (np.stack([w.real, w.imag], -1) * wr).sum() + (vr ** 2 * wr[:, :1].T).sum()

    t = jt.tensor(a, requires_grad=True)
    w, v = LA.eig(t)
    loss = ((jt.view_as_real(w) * jt.tensor(wr)).sum()
            + (v.abs() ** 2 * jt.tensor(wr[:, :1].T)).sum())
    loss.backward()
    np.testing.assert_allclose(t.grad.numpy(), _fd_grad(loss_np, a), atol=1e-5)
    t.grad = None
    LA.eigvals(t).abs().sum().backward()
    np.testing.assert_allclose(t.grad.numpy(),
                               _fd_grad(lambda m: np.abs(np.linalg.eigvals(m)).sum(), a),
                               atol=1e-5)


def test_lu_errors_and_legacy_forms():
    sing = jt.tensor([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(LA.LinAlgError, match=r"U\[2,2\] is zero"):
        LA.lu_factor(sing)
    LU, piv, info = LA.lu_factor_ex(sing)
    assert info.item() == 2 and piv.dtype is jt.int32
    assert len(jt.lu(sing, get_infos=True)) == 3
    with pytest.raises(RuntimeError, match="LU without pivoting is not implemented on the CPU"):
        LA.lu_factor(sing, pivot=False)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 2))
    x = jt.lu_solve(jt.tensor(b), *jt.lu(jt.tensor(a)))
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), atol=1e-10)
    sol, coeff = jt.triangular_solve(jt.tensor(b), jt.tensor(a), upper=False, transpose=True)
    np.testing.assert_allclose(sol.numpy(), np.linalg.solve(np.swapaxes(np.tril(a), -1, -2), b))
    np.testing.assert_array_equal(coeff.numpy(), a)
    P, L, U = jt.lu_unpack(*LA.lu_factor(jt.tensor(a[:, :, :2])))  # a tall matrix
    assert (P.shape, L.shape, U.shape) == ((2, 3, 3), (2, 3, 2), (2, 2, 2))
    np.testing.assert_allclose((P @ L @ U).numpy(), a[:, :, :2], atol=1e-12)


def test_block_diag_and_cartesian_prod():
    out = jt.block_diag(jt.tensor([[1, 2], [3, 4]]), jt.tensor([5.0, 6.0]), jt.tensor(7))
    assert out.dtype is jt.float32
    np.testing.assert_array_equal(out.numpy(), [[1, 2, 0, 0, 0], [3, 4, 0, 0, 0],
                                                [0, 0, 5, 6, 0], [0, 0, 0, 0, 7]])
    x = jt.tensor([[1.0, 2.0]], requires_grad=True)
    (jt.block_diag(x, x * 2) * jt.arange(8.0).reshape(2, 4)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0 + 2 * 6, 1 + 2 * 7]])
    np.testing.assert_array_equal(jt.cartesian_prod(jt.tensor([1, 2]), jt.tensor([3, 4, 5])),
                                  [[1, 3], [1, 4], [1, 5], [2, 3], [2, 4], [2, 5]])
    with pytest.raises(RuntimeError, match="Input 0 has 3 dimensions"):
        jt.block_diag(jt.ones(1, 1, 1))


def test_cov_and_corrcoef_match_numpy():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 6))
    fw = np.array([1, 2, 1, 3, 1, 2])
    aw = rng.uniform(0.1, 1, 6)
    np.testing.assert_allclose(jt.cov(jt.tensor(x)).numpy(), np.cov(x))
    np.testing.assert_allclose(
        jt.cov(jt.tensor(x), correction=0, fweights=jt.tensor(fw), aweights=jt.tensor(aw)),
        np.cov(x, ddof=0, fweights=fw, aweights=aw))
    np.testing.assert_allclose(jt.tensor(x).corrcoef().numpy(), np.corrcoef(x))
    assert jt.cov(jt.tensor(x[0])).dim() == 0
    t = jt.tensor(x, requires_grad=True)
    jt.corrcoef(t).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), _fd_grad(lambda m: np.corrcoef(m).sum(), x),
                               atol=1e-6)
    with pytest.raises(RuntimeError, match="fweights cannot be negative"):
        jt.cov(jt.tensor(x), fweights=-jt.tensor(fw))


def test_ex_forms_cond_tensorinv_tensorsolve_vander():
    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, 3))
    inv, info = LA.inv_ex(jt.tensor(a))
    np.testing.assert_allclose(inv.numpy(), np.linalg.inv(a))
    assert info.tolist() == [0, 0]
    assert LA.inv_ex(jt.tensor([[1.0, 2.0], [2.0, 4.0]])).info.item() == 2
    assert LA.cholesky_ex(-jt.eye(2)).info.item() == 1
    with pytest.raises(LA.LinAlgError):
        LA.cholesky_ex(-jt.eye(2), check_errors=True)
    for p in (None, -2, "fro", "nuc", 1, float("inf")):
        np.testing.assert_allclose(LA.cond(jt.tensor(a), p).numpy(), np.linalg.cond(a, p))
    t = rng.standard_normal((4, 6, 8, 3))
    np.testing.assert_allclose(LA.tensorinv(jt.tensor(t), 2).numpy(), np.linalg.tensorinv(t, 2))
    A, B = rng.standard_normal((6, 2, 3)), rng.standard_normal((2, 3))
    np.testing.assert_allclose(LA.tensorsolve(jt.tensor(A), jt.tensor(B), dims=(0,)).numpy(),
                               np.linalg.tensorsolve(A, B, axes=(0,)))
    np.testing.assert_array_equal(LA.vander(jt.tensor([[1, 2], [3, 4]]), N=3).numpy(),
                                  np.stack([np.vander(r, 3, increasing=True)
                                            for r in [[1, 2], [3, 4]]]))
