"""Compiled matrix products (targets/cpu/lower_linalg.py + targets/cpu/blas.py) vs eager jitorch.

Scripted functions hold many products each (compiles are shared across tests): all rank pairs
1-3 of matmul, mm, bmm, addmm with beta/alpha, linear-like `x @ w.t() + b`, transposed and
strided operands made inside the program, float32/float64 and integer dtypes (which must not
call BLAS), 0-size dims, and the size-mismatch errors with PyTorch's messages. blas.py's kernel
choice depends on run-time sizes (tiled kernel for M <= SMALL_M, BLAS above): both sides are
exercised. Also checks blas.mm_into directly on NumPy views of every layout.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitorch as t
from jitorch.script.targets.cpu import blas


def _compiled(fn):
    assert not fn.code.startswith("# runs interpreted"), fn.code.splitlines()[0]


def _close(got, ref, tol):
    got, ref = np.asarray(got.numpy()), np.asarray(ref.numpy())
    assert got.dtype == ref.dtype and got.shape == ref.shape
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, ref)


def products(a3, b3, b2, v, m, c3, x, w, bias, i2, m1, m2):
    return (a3 @ b3, a3 @ b2, v @ b2, m @ v, v @ v, c3 @ b3, t.bmm(a3, b3), t.mm(m1, m2),
            t.addmm(i2, m1, m2, beta=0.5, alpha=2.0), t.addmm(bias, m1, m2),
            t.addmm(i2, m1, m2, beta=0.0), t.addmm(bias, m1, m2, alpha=3.0),
            x @ w.t() + bias, m1.t() @ x, x[:, ::2] @ w[:, ::2].t(), m.t() @ m,
            t.matmul(a3.transpose(1, 2).transpose(1, 2), b3[:, :, :]))


def _args(rng, dtype, M, K, N, B=2):
    def r(*shape):
        return t.tensor(np.round(rng.standard_normal(shape) * 3)).to(dtype)
    # a3 (B,M,K) b3 (B,K,N) b2 (K,N) v (K) m (M,K) c3 (1,M,K) x (M,K) w (N,K) bias (N)
    # i2 (M,N) m1 (M,K) m2 (K,N)
    return (r(B, M, K), r(B, K, N), r(K, N), r(K), r(M, K), r(1, M, K), r(M, K), r(N, K), r(N),
            r(M, N), r(M, K), r(K, N))


_f = t.jit.script(products)
# M up to blas.SMALL_M runs the tiled kernel, above it BLAS (gemv for one row); N = 17 and 100
# leave masked column tails; 0-size dims take the early exits
SHAPES = [(1, 5, 3), (1, 40, 100), (7, 33, 45), (40, 70, 100), (70, 9, 17), (3, 1, 1),
          (0, 5, 3), (4, 0, 3), (4, 5, 0)]


@pytest.mark.parametrize("dtype,tol", [(t.float32, 1e-4), (t.float64, 1e-10),
                                       (t.int32, 0)])
@pytest.mark.parametrize("M,K,N", SHAPES)
def test_products_match_eager(dtype, tol, M, K, N):
    rng = np.random.default_rng(M * 100 + K * 10 + N)
    args = _args(rng, dtype, M, K, N)
    ref = products(*args)
    got = _f(*args)
    _compiled(_f)
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        _close(g, r, tol)


def _mm(x, y):
    return x @ y


def test_errors_have_pytorch_messages():
    a, b = t.ones(3, 4), t.ones(5, 2)
    args = list(_args(np.random.default_rng(0), t.float32, 3, 4, 5))
    args[11] = t.ones(3, 5)  # m2 of addmm/mm: inner dims 4 vs 3
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(3x4 and 3x5\)"):
        _f(*args)
    args = list(_args(np.random.default_rng(0), t.float32, 3, 4, 5))
    args[3] = t.ones(6)  # v: v @ b2 is (6) @ (4, 5), the first product to fail
    with pytest.raises(RuntimeError) as eager:
        products(*args)
    assert "cannot be multiplied (1x6 and 4x5)" in str(eager.value)
    with pytest.raises(RuntimeError) as scripted:  # eager's class and message, compiled too
        _f(*args)
    assert str(scripted.value).startswith(str(eager.value) + "\n  in scripted code at ")
    mm = t.jit.script(_mm)
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied "
                                           r"\(3x4 and 5x2\)"):
        mm(a, b)
    with pytest.raises(RuntimeError, match=r"Expected size for first two dimensions of batch2 "
                                           r"tensor to be: \[2, 4\] but got: \[2, 5\]."):
        mm(t.ones(2, 3, 4), t.ones(2, 5, 2))


def test_bool_and_mixed_dtypes_raise_like_eager():
    mm = t.jit.script(_mm)
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        mm(t.ones(2, 2, dtype=t.bool), t.ones(2, 2, dtype=t.bool))
    with pytest.raises(RuntimeError, match="same dtype"):
        mm(t.ones(2, 2), t.ones(2, 2, dtype=t.float64))


def _views(x):
    yield x                                             # C-contiguous
    yield np.ascontiguousarray(x.T).T                   # transposed (column-major)
    big = np.zeros((x.shape[0] * 2 + 1, x.shape[1] * 3 + 2), x.dtype)
    big[1::2, 2::3] = x
    yield big[1::2, 2::3]                               # no unit stride: BLAS needs a copy
    yield np.ascontiguousarray(x[::-1])[::-1]           # negative row stride


@pytest.mark.parametrize("M", [2, 60])  # tiled kernel / BLAS
def test_mm_into_any_layout(M):
    rng = np.random.default_rng(M)
    a = rng.standard_normal((M, 9)).astype(np.float32)
    b = rng.standard_normal((9, 20)).astype(np.float32)
    ref = a.astype(np.float64) @ b
    for av in _views(a):
        for bv in _views(b):
            np.testing.assert_allclose(blas.matmul2(av, bv), ref, rtol=1e-4, atol=1e-4)
    for cv in _views(np.ones((M, 20), np.float32)):
        before = cv.copy()
        blas.mm_into(a, b, cv, True)  # c += a @ b through any layout of c
        np.testing.assert_allclose(cv, before + ref, rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="operand shapes do not match"):
        blas.mm_into(a, b, np.empty((M, 19), np.float32), False)
