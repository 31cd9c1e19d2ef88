"""jitorch.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp against closed-form
derivatives, PyTorch's result structure (tuple in -> tuple out), v checks, strict mode and
create_graph."""
import numpy as np
import pytest

import jitorch
from jitorch.autograd import functional as AF

F64 = jitorch.float64


def t(a):
    return jitorch.tensor(np.asarray(a, dtype=np.float64))


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy() if isinstance(a, jitorch.Tensor)
                                          else a), b, rtol=tol, atol=tol)


X = np.array([0.5, -1.2, 2.0])
Y = np.array([1.5, 0.3, -0.7])
M = np.array([[1.0, 2.0, -1.0], [0.5, -0.3, 0.2]])


def cube(x):
    return x ** 3


def cubesum(x):
    return (x ** 3).sum()


# ----------------------------------------------------------------------------- vjp / jvp
def test_vjp_single_and_tuple():
    out, g = AF.vjp(cube, t(X), t(Y))
    close(out, X ** 3)
    close(g, Y * 3 * X ** 2)
    assert isinstance(g, jitorch.Tensor)
    out, g = AF.vjp(lambda a, b: (a * b, a.sin()), (t(X), t(Y)), (t(Y), t(X)))
    assert isinstance(out, tuple) and isinstance(g, tuple) and len(g) == 2
    close(g[0], Y * Y + X * np.cos(X))
    close(g[1], Y * X)


def test_vjp_scalar_output_v_none():
    out, g = AF.vjp(cubesum, t(X))
    close(out, (X ** 3).sum())
    close(g, 3 * X ** 2)


def test_jvp_single_and_tuple():
    out, jv = AF.jvp(lambda x: M_t() @ x.sin(), t(X), t(Y))
    close(out, M @ np.sin(X))
    close(jv, M @ (np.cos(X) * Y))
    out, jv = AF.jvp(lambda a, b: (a * b, (a + b).sum()), (t(X), t(Y)), (t(Y), t(X)))
    assert isinstance(jv, tuple) and len(jv) == 2
    close(jv[0], Y * Y + X * X)
    close(jv[1], (Y + X).sum())


def M_t():
    return t(M)


def test_jvp_of_output_independent_of_input_is_zero():
    _, jv = AF.jvp(lambda a, b: a * 2, (t(X), t(Y)), (t(Y), t(X)))
    close(jv, 2 * Y)
    _, jv = AF.jvp(lambda x: jitorch.ones(2, dtype=F64), t(X), t(Y))
    close(jv, np.zeros(2))


# ----------------------------------------------------------------------------- jacobian
def test_jacobian_single():
    j = AF.jacobian(lambda x: M_t() @ x.exp(), t(X))
    close(j, M * np.exp(X))
    assert tuple(j.shape) == (2, 3)


def test_jacobian_nested_structure():
    def f(a, b):
        return a * b, (a ** 2).sum()

    j = AF.jacobian(f, (t(X), t(Y)))
    assert isinstance(j, tuple) and len(j) == 2 and all(len(r) == 2 for r in j)
    close(j[0][0], np.diag(Y))
    close(j[0][1], np.diag(X))
    close(j[1][0], 2 * X)
    close(j[1][1], np.zeros(3))  # independent of b: zeros (not strict)
    # tuple input, single output: a tuple over inputs
    j = AF.jacobian(lambda a, b: a * b, (t(X), t(Y)))
    assert isinstance(j, tuple) and len(j) == 2 and isinstance(j[0], jitorch.Tensor)
    # single input, tuple output: a tuple over outputs
    j = AF.jacobian(lambda a: (a, a.sum()), t(X))
    assert isinstance(j, tuple) and tuple(j[1].shape) == (3,)


def test_jacobian_shapes_follow_output_then_input():
    x = jitorch.tensor(np.arange(6.0).reshape(2, 3))
    j = AF.jacobian(lambda a: a.sum(0), x)
    assert tuple(j.shape) == (3, 2, 3)
    ref = np.zeros((3, 2, 3))
    for i in range(3):
        ref[i, :, i] = 1
    close(j, ref)


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_vectorize_matches_rows(strategy):
    def f(a, b):
        return (a[:, None] * b).tanh(), (a * b).sum()

    rows = AF.jacobian(f, (t(X), t(Y)))
    vec = AF.jacobian(f, (t(X), t(Y)), vectorize=True, strategy=strategy)
    for r_out, v_out in zip(rows, vec):
        for r, v in zip(r_out, v_out):
            assert tuple(r.shape) == tuple(v.shape)
            close(v, r.numpy())


def test_jacobian_strategy_errors():
    with pytest.raises(AssertionError, match="forward-mode"):
        AF.jacobian(cube, t(X), strategy="sideways")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        AF.jacobian(cube, t(X), strategy="forward-mode")
    with pytest.raises(RuntimeError, match="strict=True"):
        AF.jacobian(cube, t(X), strict=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="create_graph=True"):
        AF.jacobian(cube, t(X), create_graph=True, vectorize=True, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="vectorized=True"):
        AF.jacobian(cube, t(X), strict=True, vectorize=True)


def test_jacobian_strict():
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode."):
        AF.jacobian(lambda a, b: a * 2, (t(X), t(Y)), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients"):
        AF.jacobian(lambda a: jitorch.ones(2, dtype=F64), t(X), strict=True)
    # not strict: an output that does not require grad gives zeros
    close(AF.jacobian(lambda a: jitorch.ones(2, dtype=F64), t(X)), np.zeros((2, 3)))


# ----------------------------------------------------------------------------- hessian
def test_hessian_single():
    h = AF.hessian(cubesum, t(X))
    close(h, np.diag(6 * X))


def test_hessian_tuple_inputs_nested():
    h = AF.hessian(lambda a, b: (a ** 2 * b).sum(), (t(X), t(Y)))
    assert isinstance(h, tuple) and len(h) == 2 and len(h[0]) == 2
    close(h[0][0], np.diag(2 * Y))
    close(h[0][1], np.diag(2 * X))
    close(h[1][0], np.diag(2 * X))
    close(h[1][1], np.zeros((3, 3)))


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("outer", ["reverse-mode", "forward-mode"])
def test_hessian_strategies(vectorize, outer):
    if outer == "forward-mode" and not vectorize:
        with pytest.raises(NotImplementedError):
            AF.hessian(cubesum, t(X), outer_jacobian_strategy=outer)
        return
    h = AF.hessian(lambda x: (x.sin() * x).sum(), t(X), vectorize=vectorize,
                   outer_jacobian_strategy=outer)
    close(h, np.diag(2 * np.cos(X) - X * np.sin(X)))


def test_hessian_errors():
    with pytest.raises(RuntimeError, match="should contain a single element"):
        AF.hessian(cube, t(X))
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        AF.hessian(lambda x: (x.sum(), x.sum()), t(X))
    with pytest.raises(RuntimeError, match="While computing the hessian, found that the "
                                           "jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        AF.hessian(lambda x: x.sum(), t(X), strict=True)
    with pytest.raises(AssertionError):
        AF.hessian(cubesum, t(X), outer_jacobian_strategy="nope")


# ----------------------------------------------------------------------------- vhp / hvp
@pytest.mark.parametrize("fn", [AF.vhp, AF.hvp])
def test_vhp_hvp(fn):
    def f(a):
        return (a[0] * a[1] * a[2]) + (a ** 3).sum()

    out, r = fn(f, t(X), t(Y))
    H = np.diag(6 * X) + np.array([[0, X[2], X[1]], [X[2], 0, X[0]], [X[1], X[0], 0]])
    close(out, X.prod() + (X ** 3).sum())
    close(r, H @ Y)  # H is symmetric: vhp == hvp
    out, r = fn(lambda a, b: (a * a * b).sum(), (t(X), t(Y)), (t(Y), t(X)))
    assert isinstance(r, tuple) and len(r) == 2
    close(r[0], 2 * Y * Y + 2 * X * X)
    close(r[1], 2 * X * Y)


@pytest.mark.parametrize("fn", [AF.vhp, AF.hvp])
def test_vhp_hvp_errors(fn):
    name = fn.__name__
    with pytest.raises(RuntimeError, match=f"The Tensor returned by the function given to "
                                           f"{name} should contain a single element"):
        fn(cube, t(X), t(Y))
    with pytest.raises(RuntimeError, match=f"The function given to {name} should return a "
                                           "single Tensor"):
        fn(lambda x: (x.sum(),), t(X), t(Y))
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the "
                                           "user-provided function is a single Tensor with a "
                                           "single element."):
        fn(cubesum, t(X))
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        fn(lambda x: x.sum(), t(X), t(Y), strict=True)


def test_hvp_of_linear_gradient_zero_when_not_strict():
    _, r = AF.hvp(lambda x: (x * 2).sum(), t(X), t(Y))
    close(r, np.zeros(3))


# ----------------------------------------------------------------------------- v checks
def test_v_validation_messages():
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be jitorch.Size\(\[3\]\) "
                                           r"but got jitorch.Size\(\[2\]\)."):
        AF.vjp(cube, t(X), jitorch.ones(2, dtype=F64))
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        AF.vjp(cube, t(X), (t(X), t(X)))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but "
                                           "got 1."):
        AF.jvp(lambda a, b: a * b, (t(X), t(Y)), (t(X),))
    with pytest.raises(RuntimeError, match=r"Entry 1 in v has invalid size"):
        AF.jvp(lambda a, b: a * b, (t(X), t(Y)), (t(X), jitorch.ones(4, dtype=F64)))
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided "
                                           "function returns a single Tensor with a single "
                                           "element."):
        AF.vjp(cube, t(X))


def test_input_type_errors():
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor "
                                        "or a tuple of Tensors but the given inputs has type "
                                        "<class 'int'>."):
        AF.jacobian(cube, 3)
    with pytest.raises(TypeError, match="but the value at index 1 has type"):
        AF.vjp(lambda a, b: a, (t(X), 2.0), t(X))
    with pytest.raises(TypeError, match="outputs of the user-provided function given to vjp"):
        AF.vjp(lambda a: 3.0, t(X), t(X))


# ----------------------------------------------------------------------------- strict / graph
def test_strict_messages():
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients. The outputs must be computed"):
        AF.vjp(lambda x: x.detach(), t(X), t(X), strict=True)
    with pytest.raises(RuntimeError, match="The output of the user-provided function is "
                                           "independent of input 1. This is not allowed in "
                                           "strict mode."):
        AF.vjp(lambda a, b: a * 2, (t(X), t(Y)), t(X), strict=True)
    # not strict: zeros for the independent input
    _, g = AF.vjp(lambda a, b: a * 2, (t(X), t(Y)), t(X))
    close(g[1], np.zeros(3))


def test_results_detached_without_create_graph():
    x = t(X).requires_grad_()
    out, g = AF.vjp(cube, x, t(Y))
    assert not out.requires_grad and not g.requires_grad
    assert not AF.jacobian(cube, x).requires_grad
    assert not AF.hessian(cubesum, x).requires_grad


def test_create_graph_differentiates_again():
    x = t(X).requires_grad_()
    _, g = AF.vjp(cubesum, x, create_graph=True)  # 3 x^2, connected to x
    assert g.requires_grad
    (gg,) = jitorch.autograd.grad(g.sum(), x)
    close(gg, 6 * X)
    j = AF.jacobian(lambda a: a ** 2, x, create_graph=True)
    (jj,) = jitorch.autograd.grad(j.sum(), x)
    close(jj, 2 * np.ones(3))
    h = AF.hessian(cubesum, x, create_graph=True)
    (hh,) = jitorch.autograd.grad(h.sum(), x)
    close(hh, 6 * np.ones(3))
    _, hv = AF.hvp(cubesum, x, t(Y), create_graph=True)
    (d,) = jitorch.autograd.grad(hv.sum(), x)
    close(d, 6 * Y)


def test_strict_create_graph_independent_jacobian():
    x = t(X)
    with pytest.raises(RuntimeError, match="The jacobian of the user-provided function is "
                                           "independent of input 0. This is not allowed in "
                                           "strict mode when create_graph=True."):
        AF.vjp(lambda a: a * 2, x, t(Y), create_graph=True, strict=True)


def test_exported_from_jitorch_autograd():
    assert jitorch.autograd.functional.jacobian is AF.jacobian
