"""Linear algebra semantics the OpInfo table can't express: PyTorch's error types and messages,
named-tuple results, in-place and out= forms, views, call forms of einsum/tensordot/norm,
dtype corner cases, LinAlgError, and higher-order gradients."""
import numpy as np
import pytest

import jitorch
from jitorch import linalg as LA

F32, F64 = jitorch.float32, jitorch.float64


def t(a, dtype=None, requires_grad=False):
    return jitorch.tensor(np.asarray(a), dtype=dtype, requires_grad=requires_grad)


def check(x, expected, dtype=None, atol=1e-6):
    expected = np.asarray(expected)
    assert isinstance(x, jitorch.Tensor)
    assert tuple(x.shape) == expected.shape
    if dtype is not None:
        assert x.dtype is dtype
    np.testing.assert_allclose(x.detach().numpy(), expected, atol=atol, rtol=1e-5)


def rnd(*shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def well(n, *batch, seed=0):
    return rnd(*batch, n, n, seed=seed) + 3 * np.eye(n)


# --- matmul and friends ---------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb,msg", [
    ((2, 3), (4, 5), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ((3,), (4, 5), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)"),
    ((2, 2, 3), (4, 5), "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)"),
    ((2, 3), (4,), "size mismatch, got input (2), mat (2x3), vec (4)"),
    ((3,), (4,), "inconsistent tensor size, expected tensor [3] and src [4]"),
    ((2, 2, 3), (2, 4, 5), "Expected size for first two dimensions of batch2 tensor to be: "
                           "[2, 3] but got: [2, 4]."),
    ((2, 2, 3), (4, 3, 5), "The size of tensor a (2) must match the size of tensor b (4) at "
                           "non-singleton dimension 0"),
    ((), (3,), "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
])
def test_matmul_shape_errors(sa, sb, msg):
    with pytest.raises(RuntimeError) as e:
        jitorch.matmul(jitorch.ones(sa), jitorch.ones(sb))
    assert msg in str(e.value)


def test_matmul_dtype_errors():
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "
                                           "float != double"):
        jitorch.ones(2, 3) @ jitorch.ones(3, 2, dtype=F64)
    with pytest.raises(RuntimeError, match="long int != int"):
        jitorch.mm(jitorch.ones(2, 3, dtype=jitorch.int64), jitorch.ones(3, 2, dtype=jitorch.int32))
    with pytest.raises(RuntimeError, match="dot : expected both vectors to have same dtype, but "
                                           "found Float and Double"):
        jitorch.ones(3) @ jitorch.ones(3, dtype=F64)
    with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented for "
                                                  "'Bool'"):
        jitorch.mm(jitorch.ones(2, 2, dtype=jitorch.bool), jitorch.ones(2, 2, dtype=jitorch.bool))
    with pytest.raises(NotImplementedError, match='"dot" not implemented'):
        jitorch.dot(jitorch.ones(2, dtype=jitorch.bool), jitorch.ones(2, dtype=jitorch.bool))


def test_matmul_batched_broadcast_values_and_grad():
    a, b = rnd(2, 1, 2, 3), rnd(3, 3, 2, seed=1)
    x, y = t(a, requires_grad=True), t(b, requires_grad=True)
    r = x @ y
    check(r, np.matmul(a, b), F64)
    r.sum().backward()
    check(x.grad, np.matmul(np.ones((2, 3, 2, 2)), np.swapaxes(b, -1, -2)).sum(1, keepdims=True))
    check(y.grad, np.matmul(np.swapaxes(a, -1, -2), np.ones((2, 3, 2, 2))).sum(0))
    # 1-D operands are promoted and the added dim removed again
    check(t(np.arange(3.)) @ t(np.arange(24.).reshape(2, 3, 4)),
          np.arange(3.) @ np.arange(24.).reshape(2, 3, 4), F64)


def test_matmul_half_and_int_dtypes():
    a = jitorch.ones(2, 3, dtype=jitorch.float16)
    check(a @ jitorch.ones(3, 2, dtype=jitorch.float16), np.full((2, 2), 3.0), jitorch.float16)
    r = jitorch.ones(2, 3, dtype=jitorch.uint8) @ jitorch.ones(3, dtype=jitorch.uint8)
    check(r, [3, 3], jitorch.uint8)


def test_product_specific_errors():
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        jitorch.mm(jitorch.ones(3), jitorch.ones(3, 2))
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        jitorch.bmm(jitorch.ones(2, 3), jitorch.ones(2, 3, 4))
    with pytest.raises(RuntimeError, match="vector \\+ matrix @ vector expected, got 1, 1, 1"):
        jitorch.mv(jitorch.ones(3), jitorch.ones(3))
    with pytest.raises(RuntimeError, match="1D tensors expected, but got 2D and 1D tensors"):
        jitorch.dot(jitorch.ones(3, 1), jitorch.ones(3))
    with pytest.raises(RuntimeError, match="outer: Expected 1-D argument self, but got 2-D"):
        jitorch.outer(jitorch.ones(3, 2), jitorch.ones(2))
    with pytest.raises(RuntimeError, match="inner\\(\\) the last dimension must match"):
        jitorch.inner(jitorch.ones(2, 3), jitorch.ones(4, 4))
    with pytest.raises(TypeError, match="kron\\(\\): argument 'other'"):
        jitorch.kron(jitorch.ones(2), 2)


def test_vdot_conjugates_and_outer_promotes():
    a, b = np.array([1 + 2j, 3j]), np.array([2 + 1j, 1 - 1j])
    check(jitorch.vdot(t(a), t(b)), np.vdot(a, b), jitorch.complex128)
    check(jitorch.dot(t(a), t(b)), np.dot(a, b), jitorch.complex128)
    r = jitorch.outer(jitorch.arange(3), jitorch.ones(2, dtype=F64))
    check(r, np.outer(np.arange(3), np.ones(2)), F64)
    check(jitorch.inner(jitorch.tensor(2), jitorch.ones(3)), [2.0, 2.0, 2.0], F32)


def test_addmm_semantics():
    inp, m1, m2 = rnd(2, 3), rnd(2, 4, seed=1), rnd(4, 3, seed=2)
    r = jitorch.addmm(t(inp), t(m1), t(m2), beta=0.5, alpha=2)
    check(r, 0.5 * inp + 2 * m1 @ m2, F64)
    # beta=0 ignores the input entirely, NaN included
    r = jitorch.addmm(jitorch.full((2, 3), float("nan")), jitorch.ones(2, 3), jitorch.ones(3, 3),
                      beta=0)
    check(r, np.full((2, 3), 3.0), F32)
    # integer tensors truncate the coefficients, like PyTorch
    i64 = jitorch.int64
    r = jitorch.addmm(jitorch.ones(2, 3, dtype=i64), jitorch.ones(2, 3, dtype=i64),
                      jitorch.ones(3, 3, dtype=i64), alpha=1.5)
    check(r, np.full((2, 3), 4), i64)
    with pytest.raises(RuntimeError, match="self and mat2 must have the same dtype, but got "
                                           "Double and Float"):
        jitorch.addmm(jitorch.ones(2, 3, dtype=F64), jitorch.ones(2, 3), jitorch.ones(3, 3))
    with pytest.raises(RuntimeError, match="value cannot be converted to type float"):
        jitorch.addmm(jitorch.ones(2, 3), jitorch.ones(2, 3), jitorch.ones(3, 3), alpha=1j)
    with pytest.raises(RuntimeError, match="The expanded size of the tensor \\(3\\) must match "
                                           "the existing size \\(4\\)"):
        jitorch.addmm(jitorch.ones(2, 4), jitorch.ones(2, 3), jitorch.ones(3, 3))


@pytest.mark.parametrize("name,shapes,ref", [
    ("addmm", ((2, 3), (2, 4), (4, 3)), lambda i, a, b: i + 2 * a @ b),
    ("addmv", ((2,), (2, 4), (4,)), lambda i, a, b: i + 2 * a @ b),
    ("addbmm", ((2, 3), (5, 2, 4), (5, 4, 3)), lambda i, a, b: i + 2 * (a @ b).sum(0)),
    ("baddbmm", ((5, 2, 3), (5, 2, 4), (5, 4, 3)), lambda i, a, b: i + 2 * a @ b),
])
def test_fused_products_in_place(name, shapes, ref):
    arrays = [rnd(*s, seed=k) for k, s in enumerate(shapes)]
    x = t(arrays[0])
    v = x._version_value
    out = getattr(x, name + "_")(t(arrays[1]), t(arrays[2]), alpha=2)
    assert out is x and x._version_value > v
    check(x, ref(*arrays), F64)


def test_addmm_inplace_autograd():
    w = t(rnd(2, 3), requires_grad=True)
    a = t(rnd(2, 4, seed=1), requires_grad=True)
    b = t(rnd(4, 3, seed=2))
    y = w * 1
    y.addmm_(a, b, beta=3)
    y.sum().backward()
    check(w.grad, np.full((2, 3), 3.0))
    check(a.grad, np.ones((2, 3)) @ b.numpy().T)


def test_out_argument():
    o = jitorch.empty(0)
    r = jitorch.mm(jitorch.ones(2, 3), jitorch.ones(3, 2), out=o)
    assert r is o
    check(o, np.full((2, 2), 3.0), F32)
    o = jitorch.empty(2, 2, dtype=F64)
    LA.inv(t(np.eye(2) * 2), out=o)
    check(o, np.eye(2) / 2, F64)


# --- einsum / tensordot ---------------------------------------------------------------------------
def test_einsum_call_forms():
    a, b = rnd(2, 3), rnd(3, 4, seed=1)
    want = a @ b
    check(jitorch.einsum("ij,jk->ik", t(a), t(b)), want, F64)
    check(jitorch.einsum("ij,jk", [t(a), t(b)]), want, F64)
    check(jitorch.einsum(t(a), [0, 1], t(b), [1, 2], [0, 2]), want, F64)
    check(jitorch.einsum(t(a), [0, Ellipsis], [Ellipsis]), a.sum(0), F64)
    # implicit output: labels sorted with upper case first, as in PyTorch
    assert jitorch.einsum("Ba", t(a)).shape == (2, 3)
    assert jitorch.einsum("aB", t(a)).shape == (3, 2)
    check(jitorch.einsum("i i->i", t(np.arange(9.).reshape(3, 3))), [0.0, 4.0, 8.0], F64)


def test_einsum_broadcasting():
    a, b = rnd(1, 2, 3), rnd(5, 3, 4, seed=1)
    check(jitorch.einsum("bij,bjk->bik", t(a), t(b)), np.matmul(a, b), F64)
    x, y = rnd(2, 3), rnd(4, 1, 3, seed=2)
    check(jitorch.einsum("...i,...i->...", t(x), t(y)), (x * y).sum(-1), F64)


@pytest.mark.parametrize("args,msg", [
    (("ij,jk->ik", (2, 3), (4, 4)), "einsum(): subscript j has size 4 for operand 1 which does "
                                    "not broadcast with previously seen size 3"),
    (("ij,jk->ik", (2, 3)), "einsum(): fewer operands were provided than specified in the "
                            "equation"),
    (("ij", (2, 3), (1,)), "einsum(): more operands were provided than specified"),
    (("ij->ii", (2, 2)), "einsum(): output subscript i appears more than once in the output"),
    (("i1->i", (2, 2)), "einsum(): invalid subscript given at index 1 in the equation string, "
                        "subscripts must be in [a-zA-Z]"),
    (("ij->ijk", (2, 3)), "einsum(): output subscript k does not appear in the equation"),
    (("ijk->", (2, 3)), "einsum(): the number of subscripts in the equation (3) does not match "
                        "the number of dimensions (2) for operand 0 and no ellipsis was given"),
])
def test_einsum_errors(args, msg):
    eq, *shapes = args
    with pytest.raises(RuntimeError) as e:
        jitorch.einsum(eq, *[jitorch.ones(*s) for s in shapes])
    assert msg in str(e.value)


def test_einsum_dtypes():
    i32 = jitorch.int32
    # a one-operand reduction sums in int64; products keep the dtype
    check(jitorch.einsum("ij->", jitorch.ones(2, 3, dtype=i32)), 6, jitorch.int64)
    check(jitorch.einsum("ii->i", jitorch.ones(2, 2, dtype=i32)), [1, 1], i32)
    check(jitorch.einsum("ij,ij->", jitorch.ones(2, 3, dtype=i32), jitorch.ones(2, 3, dtype=i32)),
          6, i32)
    b = jitorch.ones(2, 3, dtype=jitorch.bool)
    check(jitorch.einsum("ij,ij->ij", b, b), np.ones((2, 3), bool), jitorch.bool)
    with pytest.raises(NotImplementedError, match='"bmm" not implemented'):
        jitorch.einsum("ij,ij->", b, b)
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        jitorch.einsum("ij,jk", jitorch.ones(2, 3), jitorch.ones(3, 2, dtype=F64))
    check(jitorch.einsum("ij->i", jitorch.ones(2, 3, dtype=jitorch.float16)), [3, 3],
          jitorch.float16)


def test_einsum_higher_order_gradients():
    a = t(rnd(2, 2, 3), requires_grad=True)
    b = t(rnd(3, seed=1), requires_grad=True)
    assert jitorch.autograd.gradgradcheck(lambda x, y: jitorch.einsum("iij,j->i", x, y), [a, b])


def test_tensordot_forms_and_errors():
    a, b = rnd(2, 3, 4), rnd(4, 3, 5, seed=1)
    want = np.tensordot(a, b, axes=([1, 2], [1, 0]))
    check(jitorch.tensordot(t(a), t(b), dims=([1, 2], [1, 0])), want, F64)
    check(jitorch.tensordot(t(a), t(b), dims=t(np.array([[1, 2], [1, 0]]))), want, F64)
    check(jitorch.tensordot(t(a), t(b), 1), np.tensordot(a, b, 1), F64)
    check(jitorch.tensordot(t(a), t(b), dims=0), np.tensordot(a, b, 0), F64)
    with pytest.raises(RuntimeError, match="tensordot expects dims >= 0, but got dims=-1"):
        jitorch.tensordot(t(a), t(b), dims=-1)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has "
                                           "size 3 in dim 1 and second has size 4 in dim 0"):
        jitorch.tensordot(t(a), t(b), dims=([1], [0]))
    with pytest.raises(RuntimeError, match="both inputs should have same dtype"):
        jitorch.tensordot(t(a), t(b, dtype=F32), 1)


# --- triangular / diagonal ------------------------------------------------------------------------
def test_tril_triu_in_place_and_errors():
    a = rnd(3, 4)
    x = t(a)
    assert x.tril_(-1) is x
    check(x, np.tril(a, -1), F64)
    y = t(a)
    y.triu_(diagonal=1)
    check(y, np.triu(a, 1), F64)
    b = jitorch.ones(2, 3, 3, dtype=jitorch.bool)
    check(jitorch.tril(b), np.tril(np.ones((3, 3), bool))[None].repeat(2, 0), jitorch.bool)
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        jitorch.tril(jitorch.ones(3))
    # autograd through the in-place form on a non-leaf
    w = t(a, requires_grad=True)
    z = w * 2
    z.triu_()
    z.sum().backward()
    check(w.grad, 2 * np.triu(np.ones((3, 4))))


def test_diag_family():
    check(jitorch.diag(t([1.0, 2.0]), 1), np.diag([1.0, 2.0], 1), F64)
    check(jitorch.diag(jitorch.arange(6).reshape(2, 3), -1), [3], jitorch.int64)
    check(jitorch.diag(jitorch.ones(0)), np.zeros((0, 0)), F32)
    with pytest.raises(RuntimeError, match="diag\\(\\): Supports 1D or 2D tensors. Got 3D"):
        jitorch.diag(jitorch.ones(2, 3, 4))
    r = jitorch.diag_embed(jitorch.ones(2, 3), offset=1, dim1=0, dim2=2)
    assert r.shape == (4, 2, 4) and r.dtype is F32
    with pytest.raises(RuntimeError, match="diagonal dimensions cannot be identical 0, 0"):
        jitorch.diag_embed(jitorch.ones(2, 3), dim1=0, dim2=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        jitorch.diag_embed(jitorch.ones(2, 3), dim1=0, dim2=3)


def test_linalg_diagonal_is_a_writable_view():
    base = jitorch.zeros(2, 3, 3)
    d = LA.diagonal(base, offset=1)
    assert d.shape == (2, 2)
    d._data[...] = 7  # storage is shared: writing the view writes the base
    np.testing.assert_array_equal(base.numpy()[1], np.diag([7.0, 7.0], 1))
    x = t(rnd(2, 3, 3), requires_grad=True)
    LA.diagonal(x, dim1=0, dim2=2).sum().backward()
    g = np.zeros((2, 3, 3))
    g[0, :, 0] = g[1, :, 1] = 1
    check(x.grad, g)
    with pytest.raises(IndexError):
        LA.diagonal(jitorch.ones(3))


def test_trace_dtypes():
    check(jitorch.trace(jitorch.ones(2, 3, dtype=jitorch.int32)), 2, jitorch.int64)
    check(jitorch.trace(jitorch.ones(3, 3, dtype=jitorch.float16)), 3, jitorch.float16)
    with pytest.raises(NotImplementedError, match='"trace" not implemented for \'Bool\''):
        jitorch.trace(jitorch.ones(2, 2, dtype=jitorch.bool))
    with pytest.raises(RuntimeError, match="trace: expected a matrix, but got tensor with dim 1"):
        jitorch.trace(jitorch.ones(3))


def test_cross_default_dims():
    a, b = rnd(3, 3), rnd(3, 3, seed=1)
    # torch.cross without dim uses the first dim of size 3; linalg.cross the last one
    check(jitorch.cross(t(a), t(b)), np.cross(a, b, axis=0), F64)
    check(LA.cross(t(a), t(b)), np.cross(a, b, axis=-1), F64)
    check(t(a).cross(t(b), dim=1), np.cross(a, b, axis=1), F64)
    with pytest.raises(RuntimeError, match="linalg.cross: inputs dimension -1 must have length 3. "
                                           "Got 2 and 2"):
        LA.cross(jitorch.ones(3, 2), jitorch.ones(3, 2))
    with pytest.raises(RuntimeError, match="inputs must have the same number of dimensions"):
        LA.cross(jitorch.ones(2, 3), jitorch.ones(3))
    with pytest.raises(RuntimeError, match="expected scalar type Float but found Double"):
        LA.cross(jitorch.ones(2, 3), jitorch.ones(2, 3, dtype=F64))


# --- decompositions -----------------------------------------------------------------------------
def test_linalg_errors_are_runtime_errors():
    assert issubclass(LA.LinAlgError, RuntimeError)
    with pytest.raises(LA.LinAlgError, match="linalg.inv: The diagonal element 2 is zero, the "
                                             "inversion could not be completed because the "
                                             "input matrix is singular."):
        LA.inv(jitorch.ones(2, 2))
    batch = t(np.stack([np.eye(2), np.ones((2, 2))]))
    with pytest.raises(LA.LinAlgError, match="linalg.inv: \\(Batch element 1\\): The diagonal "
                                             "element 2 is zero"):
        LA.inv(batch)
    with pytest.raises(LA.LinAlgError, match="torch.linalg.solve: The solver failed because the "
                                             "input matrix is singular."):
        LA.solve(jitorch.ones(2, 2), jitorch.ones(2))
    with pytest.raises(LA.LinAlgError, match="linalg.cholesky: The factorization could not be "
                                             "completed because the input is not positive-"
                                             "definite \\(the leading minor of order 2 is not "
                                             "positive-definite\\)."):
        LA.cholesky(jitorch.ones(2, 2))


@pytest.mark.parametrize("fn,msg,exc", [
    (lambda: LA.inv(jitorch.ones(2, 3)), "linalg.inv: A must be batches of square matrices, but "
                                         "they are 2 by 3 matrices", RuntimeError),
    (lambda: LA.inv(jitorch.ones(3)), "linalg.inv: The input tensor A must have at least 2 "
                                      "dimensions.", RuntimeError),
    (lambda: LA.inv(jitorch.ones(2, 2, dtype=jitorch.int64)), "linalg.inv: Expected a floating "
     "point or complex tensor as input. Got Long", RuntimeError),
    (lambda: LA.inv(jitorch.ones(2, 2, dtype=jitorch.float16)), "linalg.inv: Low precision "
     "dtypes not supported. Got Half", RuntimeError),
    (lambda: LA.det(jitorch.ones(2, 2, dtype=jitorch.float16)), '"lu_cpu" not implemented for '
     "'Half'", NotImplementedError),
    (lambda: LA.eigh(jitorch.ones(2, 2, dtype=jitorch.int64)), '"linalg_eigh_cpu" not '
     "implemented for 'Long'", NotImplementedError),
    (lambda: LA.eigh(jitorch.ones(2, 2), UPLO="X"), "Expected UPLO argument to be 'L' or 'U', "
     "but got X", RuntimeError),
    (lambda: LA.qr(jitorch.ones(3, 2), mode="x"), "qr received unrecognized mode 'x'",
     RuntimeError),
    (lambda: LA.solve(t(np.eye(2), F32), jitorch.ones(3)),
     "linalg.solve: Incompatible shapes of A and B for the equation AX = B (2x2 and 3x1)",
     RuntimeError),
    (lambda: LA.solve(t(np.eye(2)), jitorch.ones(2)), "linalg.solve: Expected A and B to have "
     "the same dtype, but found A of type Double and B of type Float instead", RuntimeError),
    (lambda: LA.pinv(jitorch.ones(3, dtype=F64)), "linalg.pinv(Double{[3]}): expected a tensor "
     "with 2 or more dimensions of float, double, cfloat or cdouble types", RuntimeError),
    (lambda: LA.lstsq(jitorch.ones(3, 2), jitorch.ones(3, 1), driver="foo"),
     "torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)",
     RuntimeError),
    (lambda: LA.lstsq(jitorch.ones(3, 2), jitorch.ones(2, 1)),
     "torch.linalg.lstsq: input.size(-2) should match other.size(-2)", RuntimeError),
    (lambda: LA.matrix_power(jitorch.ones(2, 3), 2), "linalg.matrix_power: A must be batches of "
     "square matrices, but they are 2 by 3 matrices", RuntimeError),
    (lambda: LA.multi_dot([jitorch.ones(3)]), "multi_dot(): expected at least 2 tensors but got "
     "1", RuntimeError),
    (lambda: LA.multi_dot([jitorch.ones(2, 3), jitorch.ones(4, 5)]), "multi_dot(): tensors 0 and "
     "1 with shapes [2, 3] and [4, 5] cannot be multiplied", RuntimeError),
])
def test_decomposition_errors(fn, msg, exc):
    with pytest.raises(exc) as e:
        fn()
    assert msg in str(e.value)


def test_named_tuple_results():
    a = well(3)
    r = LA.slogdet(t(a))
    assert type(r).__name__ == "linalg_slogdet" and r._fields == ("sign", "logabsdet")
    s, ld = np.linalg.slogdet(a)
    check(r.sign, s, F64)
    check(r.logabsdet, ld, F64)
    assert type(jitorch.slogdet(t(a))).__name__ == "slogdet"
    assert type(t(a).slogdet()).__name__ == "slogdet"
    q = LA.qr(t(a))
    assert type(q).__name__ == "linalg_qr" and q._fields == ("Q", "R")
    check(q.Q @ q.R, a)
    e = LA.eigh(t(a + a.T))
    assert e._fields == ("eigenvalues", "eigenvectors")
    check(e.eigenvectors @ jitorch.diag_embed(e.eigenvalues) @ e.eigenvectors.mT, a + a.T)
    u = LA.svd(t(a))
    assert type(u).__name__ == "linalg_svd" and u._fields == ("U", "S", "Vh")
    old = jitorch.svd(t(a))
    assert type(old).__name__ == "svd" and old._fields == ("U", "S", "V")
    check(old.U @ jitorch.diag_embed(old.S) @ old.V.mT, a)
    ls = LA.lstsq(t(rnd(4, 2)), t(rnd(4, 1, seed=1)))
    assert ls._fields == ("solution", "residuals", "rank", "singular_values")
    sol, res, rank, sv = ls  # unpacks like a tuple
    assert rank.dtype is jitorch.int64 and int(rank) == 2
    assert res.shape == (0,) and sv.shape == (0,)  # gelsy fills neither


def test_old_api_svd_and_qr():
    a = rnd(3, 2)
    r = jitorch.svd(t(a), some=False)
    assert r.U.shape == (3, 3) and r.V.shape == (2, 2)
    r = jitorch.svd(t(a), compute_uv=False)
    check(r.S, np.linalg.svd(a, compute_uv=False), F64)
    check(r.U, np.zeros((3, 3)), F64)
    check(r.V, np.zeros((2, 2)), F64)
    q = jitorch.qr(t(a), some=False)
    assert q.Q.shape == (3, 3) and q.R.shape == (3, 2)
    q = LA.qr(t(a), mode="r")
    assert q.Q.shape == (0,)
    check(q.R, np.linalg.qr(a, mode="r"), F64)


def test_qr_backward_limits():
    x = t(rnd(3, 2), requires_grad=True)
    with pytest.raises(RuntimeError, match="The derivative of linalg.qr depends on Q, which is "
                                           "not computed when mode='r'"):
        LA.qr(x, mode="r").R.sum().backward()
    y = t(rnd(3, 2), requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows > "
                                           "ncols"):
        LA.qr(y, mode="complete").Q.sum().backward()


def test_solve_vector_and_batched_rhs():
    A = well(3, 2)
    b = rnd(2, 3, seed=1)  # A.shape[:-1]: a batch of vectors
    check(LA.solve(t(A), t(b)), np.linalg.solve(A, b[..., None])[..., 0], F64)
    B = rnd(3, 2, seed=2)
    check(LA.solve(t(A[0]), t(B.T), left=False), np.linalg.solve(A[0].T, B).T, F64)


def test_cholesky_upper_and_aliases():
    a = np.array([[4.0, 2.0], [2.0, 3.0]])
    L = np.linalg.cholesky(a)
    check(LA.cholesky(t(a)), L, F64)
    check(LA.cholesky(t(a), upper=True), L.T, F64)
    check(jitorch.cholesky(t(a), True), L.T, F64)
    check(t(a).cholesky(), L, F64)
    with pytest.raises(NotImplementedError, match='"cholesky_cpu" not implemented for \'Long\''):
        jitorch.cholesky(jitorch.ones(2, 2, dtype=jitorch.int64))


def test_top_level_aliases_and_methods():
    a = well(3)
    x = t(a)
    check(jitorch.det(x), np.linalg.det(a), F64)
    check(x.det(), np.linalg.det(a), F64)
    check(jitorch.inverse(x), np.linalg.inv(a), F64)
    check(x.inverse(), np.linalg.inv(a), F64)
    check(jitorch.logdet(x), np.log(np.linalg.det(a)), F64)
    check(x.pinverse(), np.linalg.pinv(a), F64)
    check(jitorch.matrix_power(x, 2), a @ a, F64)
    check(x.matrix_power(-1), np.linalg.inv(a), F64)
    check(jitorch.logdet(t(-np.eye(3))), np.nan, F64)
    check(jitorch.logdet(jitorch.zeros(2, 2)), -np.inf, F32)


def test_complex_values():
    a = well(2) + 1j * rnd(2, 2, seed=5)
    x = t(a)
    check(LA.inv(x), np.linalg.inv(a), jitorch.complex128)
    check(LA.det(x), np.linalg.det(a), jitorch.complex128)
    check(LA.eigvalsh(t(a + a.conj().T)), np.linalg.eigvalsh(a + a.conj().T), F64)
    check(LA.matrix_norm(x), np.linalg.norm(a), F64)


def test_empty_inputs():
    check(LA.inv(jitorch.zeros(0, 2, 2)), np.zeros((0, 2, 2)), F32)
    check(LA.det(jitorch.zeros(0, 0)), 1.0, F32)
    r = LA.svd(jitorch.zeros(0, 3))
    assert r.U.shape == (0, 0) and r.S.shape == (0,)
    check(r.Vh, np.eye(3), F32)
    e = LA.eigh(jitorch.zeros(0, 0))
    assert e.eigenvalues.shape == (0,) and e.eigenvectors.shape == (0, 0)


def test_pinv_and_rank_tolerances():
    a = np.diag([10.0, 1.0, 1e-3])
    x = t(a)
    check(LA.pinv(x, 0.5), np.diag([0.1, 0.0, 0.0]), F64)  # positional rcond is rtol
    check(LA.pinv(x, atol=0.5), np.diag([0.1, 1.0, 0.0]), F64)
    check(jitorch.pinverse(x, rcond=0.5), np.diag([0.1, 0.0, 0.0]), F64)
    check(LA.pinv(t([[2.0, 1.0], [1.0, 2.0]]), hermitian=True),
          np.linalg.inv([[2.0, 1.0], [1.0, 2.0]]), F64)
    check(LA.matrix_rank(x), 3, jitorch.int64)
    check(LA.matrix_rank(x, atol=0.5), 2, jitorch.int64)
    check(LA.matrix_rank(x, rtol=0.5), 1, jitorch.int64)
    check(LA.matrix_rank(x, 0.5), 2, jitorch.int64)  # positional tol is atol
    check(LA.matrix_rank(jitorch.ones(4, 3, 2)), [1, 1, 1, 1], jitorch.int64)
    assert not LA.matrix_rank(t(a, requires_grad=True)).requires_grad


def test_lstsq_drivers():
    A = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    B = np.ones((3, 1))
    x = np.linalg.lstsq(A, B, rcond=None)[0]
    r = LA.lstsq(t(A), t(B), driver="gelsd")
    check(r.solution, x, F64)
    check(r.residuals, [1 / 3], F64)
    check(r.rank, 2, jitorch.int64)
    check(r.singular_values, np.linalg.svd(A, compute_uv=False), F64)
    r = LA.lstsq(t(A), t(B), driver="gels")
    assert r.rank.shape == (0,) and r.residuals.shape == (1,)
    check(LA.lstsq(t(A), t(np.ones(3))).solution, x[:, 0], F64)


def test_matrix_power_and_multi_dot():
    a = well(2)
    check(LA.matrix_power(t(a), 0), np.eye(2), F64)
    check(LA.matrix_power(t(a), -2), np.linalg.matrix_power(np.linalg.inv(a), 2), F64)
    i64 = jitorch.int64
    check(LA.matrix_power(jitorch.ones(2, 2, dtype=i64), 3), np.full((2, 2), 4), i64)
    with pytest.raises(RuntimeError, match="linalg.inv: Expected a floating point"):
        LA.matrix_power(jitorch.ones(2, 2, dtype=i64), -1)
    vs = [rnd(3), rnd(3, 4, seed=1), rnd(4, seed=2)]
    check(LA.multi_dot([t(v) for v in vs]), np.linalg.multi_dot(vs), F64)
    with pytest.raises(RuntimeError, match="multi_dot\\(\\): the first tensor must be 1D or 2D "
                                           "but got 3D"):
        LA.multi_dot([jitorch.ones(2, 3, 4), jitorch.ones(4, 5)])
    with pytest.raises(RuntimeError, match="all tensors must have be the same dtype but tensor 0 "
                                           "is float and tensor 1 double"):
        LA.multi_dot([jitorch.ones(2, 3), jitorch.ones(3, 5, dtype=F64)])


def test_vecdot():
    x, y = rnd(2, 3), rnd(3, seed=1)
    check(LA.vecdot(t(x), t(y)), x @ y, F64)
    check(LA.vecdot(t(x), t(rnd(2, 3, seed=2)), dim=0), (x * rnd(2, 3, seed=2)).sum(0), F64)
    with pytest.raises(RuntimeError, match="linalg.vecdot: Expected a floating point or complex "
                                           "tensor as input. Got Long"):
        LA.vecdot(jitorch.ones(3, dtype=jitorch.int64), jitorch.ones(3, dtype=jitorch.int64))


def test_singular_det_gradient_is_the_adjugate():
    # the gradient of det is adj(A)^T, which stays finite (and non-zero) for a rank n-1 matrix
    x = t([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)
    LA.det(x).backward()
    check(x.grad, [[4.0, -2.0], [-2.0, 1.0]])


@pytest.mark.parametrize("name,fn,shapes", [
    ("inv", lambda a: LA.inv(a), [(3, 3)]),
    ("det", lambda a: LA.det(a), [(3, 3)]),
    ("solve", lambda a, b: LA.solve(a, b), [(3, 3), (3, 2)]),
    ("cholesky", lambda a: LA.cholesky(a @ a.mT + t(3 * np.eye(3))), [(3, 3)]),
    ("qr", lambda a: LA.qr(a), [(3, 2)]),
    ("eigh", lambda a: LA.eigh(a + a.mT), [(3, 3)]),
    ("svdvals", lambda a: LA.svdvals(a), [(3, 2)]),
    ("pinv", lambda a: LA.pinv(a), [(3, 2)]),
    ("nuclear", lambda a: LA.matrix_norm(a, "nuc"), [(3, 2)]),
])
def test_second_order_gradients(name, fn, shapes):
    ins = [t(rnd(*s, seed=k) + (3 * np.eye(s[-1]) if s[0] == s[-1] else 0), requires_grad=True)
           for k, s in enumerate(shapes)]
    assert jitorch.autograd.gradgradcheck(fn, ins, atol=1e-4)


# --- norms --------------------------------------------------------------------------------------
def test_vector_norm_semantics():
    x = t([3.0, -4.0])
    check(LA.vector_norm(x), 5.0, F64)
    check(LA.vector_norm(x, float("inf")), 4.0, F64)
    check(LA.vector_norm(x, 0), 2.0, F64)
    check(LA.vector_norm(jitorch.ones(2, 3), dim=(0, 1), keepdim=True), [[6 ** 0.5]], F32)
    check(LA.vector_norm(jitorch.tensor([3 + 4j])), 5.0, F32)
    check(LA.vector_norm(jitorch.ones(2, dtype=jitorch.float16)), 2 ** 0.5, jitorch.float16,
          atol=1e-3)
    check(LA.vector_norm(jitorch.ones(2), dtype=F64), 2 ** 0.5, F64)
    check(LA.vector_norm(jitorch.ones(0, 3)), 0.0, F32)
    check(LA.vector_norm(jitorch.ones(0, 3), float("inf"), dim=1), np.zeros(0), F32)
    with pytest.raises(TypeError, match="argument 'ord' must be Number, not str"):
        LA.vector_norm(x, "fro")
    with pytest.raises(RuntimeError, match="linalg.vector_norm cannot compute the inf norm on an "
                                           "empty tensor because the operation does not have an "
                                           "identity"):
        LA.vector_norm(jitorch.ones(0, 3), float("inf"))
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. "
                                           "Got Long"):
        LA.vector_norm(jitorch.ones(3, dtype=jitorch.int64))
    with pytest.raises(RuntimeError, match="the dtype of the input \\(Double\\) should be "
                                           "convertible without narrowing to the specified dtype "
                                           "\\(Float\\)"):
        LA.vector_norm(jitorch.ones(3, dtype=F64), dtype=F32)
    with pytest.raises(IndexError):
        LA.vector_norm(jitorch.ones(2, 3), dim=5)


def test_norm_gradients_at_ties_and_zero():
    x = t([1.0, -3.0, 3.0, 2.0], requires_grad=True)
    LA.vector_norm(x, float("inf")).backward()
    check(x.grad, [0.0, -0.5, 0.5, 0.0])  # ties share the gradient
    z = t([0.0, 0.0], requires_grad=True)
    LA.vector_norm(z).backward()
    check(z.grad, [0.0, 0.0])  # no NaN at the origin


def test_matrix_norm_semantics():
    a = rnd(2, 3, 4)
    for o in ("fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf")):
        check(LA.matrix_norm(t(a), o), np.linalg.norm(a, o, axis=(-2, -1)), F64)
    r = LA.matrix_norm(t(a), 1, dim=(2, 0), keepdim=True)
    check(r, np.linalg.norm(a, 1, axis=(2, 0), keepdims=True), F64)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: Order 3 not supported."):
        LA.matrix_norm(t(a), 3)
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: dims must be different. Got "
                                           "\\(0, 0\\)"):
        LA.matrix_norm(t(a), dim=(0, 0))
    with pytest.raises(RuntimeError, match="Low precision dtypes not supported. Got Half"):
        LA.matrix_norm(jitorch.ones(2, 2, dtype=jitorch.float16), 2)
    check(LA.matrix_norm(jitorch.ones(2, 2, dtype=jitorch.float16)), 2.0, jitorch.float16)


def test_norm_dispatch():
    a = rnd(2, 3, 4)
    check(LA.norm(t(a)), np.linalg.norm(a.ravel()), F64)
    check(LA.norm(t(a[0]), 2), np.linalg.norm(a[0], 2), F64)
    check(LA.norm(t(a), 3, dim=1), (np.abs(a) ** 3).sum(1) ** (1 / 3), F64)
    check(LA.norm(t(a), "nuc", dim=(0, 2)), np.linalg.norm(a, "nuc", axis=(0, 2)), F64)
    with pytest.raises(RuntimeError, match="If dim is not specified but ord is, the input must be "
                                           "1D or 2D. Got 3D."):
        LA.norm(t(a), 2)
    with pytest.raises(RuntimeError, match="If dim is specified, it must be of length 1 or 2. Got "
                                           "\\[0, 1, 2\\]"):
        LA.norm(t(a), dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match="linalg.matrix_norm: The input tensor A must have at "
                                           "least 2 dimensions."):
        LA.norm(jitorch.ones(3), "fro")
