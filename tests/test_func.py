"""jitorch.func: functional_call, grad/grad_and_value, vjp, jvp, jacrev/jacfwd/hessian, vmap;
results against closed-form derivatives, errors as PyTorch's."""
import warnings

import numpy as np
import pytest

import jitorch
from jitorch import func, nn
from jitorch.nn.utils import stateless


def close(a, b, tol=1e-5):
    a = a.detach().numpy() if isinstance(a, jitorch.Tensor) else a
    b = b.detach().numpy() if isinstance(b, jitorch.Tensor) else b
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


@pytest.fixture
def xy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(4).astype(np.float32)
    y = rng.standard_normal(4).astype(np.float32)
    return x, y, jitorch.tensor(x), jitorch.tensor(y)


# ----------------------------------------------------------------------------- functional_call
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("scale", jitorch.ones(2))

    def forward(self, x, shift=0.0):
        return self.lin(x) * self.scale + shift


def test_functional_call_replaces_and_restores():
    m = Net()
    w = jitorch.zeros(2, 3)
    b = jitorch.full((2,), 5.0)
    x = jitorch.randn(4, 3)
    out = func.functional_call(m, {"lin.weight": w, "lin.bias": b}, (x,))
    close(out, np.full((4, 2), 5.0))
    # the module's own parameters are back
    assert isinstance(m.lin.weight, nn.Parameter)
    close(m(x), x @ m.lin.weight.T + m.lin.bias)


def test_functional_call_tuple_of_dicts_kwargs_and_grad():
    m = Net()
    params = {k: v.detach().clone().requires_grad_() for k, v in m.named_parameters()}
    buffers = {"scale": jitorch.full((2,), 2.0)}
    x = jitorch.randn(4, 3)
    out = func.functional_call(m, (params, buffers), x, {"shift": 1.0})
    out.sum().backward()
    close(params["lin.bias"].grad.numpy(), np.full(2, 8.0))  # 4 rows * scale 2
    assert m.lin.bias.grad is None


def test_functional_call_errors():
    m = Net()
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        func.functional_call(m, ({"scale": jitorch.ones(2)}, {"scale": jitorch.ones(2)}),
                             (jitorch.randn(1, 3),))
    with pytest.raises(ValueError, match="Expected all elements"):
        func.functional_call(m, ({"scale": jitorch.ones(2)}, 3), (jitorch.randn(1, 3),))
    with pytest.raises(RuntimeError, match="Missing key"):
        func.functional_call(m, {"scale": jitorch.ones(2)}, (jitorch.randn(1, 3),), strict=True)


def test_functional_call_tied_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(2, 2, bias=False)
            self.b = nn.Linear(2, 2, bias=False)
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x))

    m = Tied()
    eye = jitorch.eye(2)
    x = jitorch.randn(3, 2)
    close(func.functional_call(m, {"a.weight": eye}, (x,)), x)
    # untied: b keeps its original weight
    out = func.functional_call(m, {"a.weight": eye}, (x,), tie_weights=False)
    close(out, x @ m.a.weight.T)


def test_stateless_functional_call_warns():
    m = Net()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = stateless.functional_call(m, {"lin.bias": jitorch.zeros(2),
                                            "lin.weight": jitorch.zeros(2, 3)},
                                        (jitorch.randn(2, 3),))
    assert any(issubclass(i.category, FutureWarning) for i in w)
    close(out.numpy(), np.zeros((2, 2)))


def test_grad_of_functional_call_over_params():
    m = nn.Linear(3, 1)
    params = {k: v.detach() for k, v in m.named_parameters()}
    x = jitorch.randn(5, 3)
    g = func.grad(lambda p: func.functional_call(m, p, (x,)).sum())(params)
    close(g["weight"].numpy(), x.sum(0, keepdim=True).numpy())
    close(g["bias"].numpy(), [5.0])


# ----------------------------------------------------------------------------- grad
def test_grad_argnums_and_value(xy):
    x, y, jx, jy = xy
    f = lambda a, b: (jitorch.sin(a) * b).sum()  # noqa: E731
    gx = func.grad(f)(jx, jy)
    close(gx.numpy(), np.cos(x) * y)
    gx, gy = func.grad(f, argnums=(0, 1))(jx, jy)
    close(gy.numpy(), np.sin(x))
    gy, v = func.grad_and_value(f, argnums=-1)(jx, jy)
    close(gy.numpy(), np.sin(x))
    close(v.item(), (np.sin(x) * y).sum())
    assert not gx.requires_grad and not v.requires_grad


def test_grad_has_aux_and_pytree(xy):
    x, y, jx, jy = xy
    g, aux = func.grad(lambda d: ((d["a"] ** 2).sum(), d["b"][0] + 1), has_aux=True)(
        {"a": jx, "b": [jy]})
    close(g["a"].numpy(), 2 * x)
    close(g["b"][0].numpy(), np.zeros(4))  # unused input: zeros, as torch.func
    close(aux.numpy(), y + 1)


def test_grad_nested_and_composes_with_tape(xy):
    x, _, jx, _ = xy
    gg = func.grad(lambda a: func.grad(lambda b: (b ** 3).sum())(a).sum())(jx)
    close(gg.numpy(), 6 * x, 1e-4)
    z = jx.clone().requires_grad_()
    g = func.grad(lambda a: (a ** 2).sum())(z)
    assert g.requires_grad  # connected to the outer tape, as torch.func
    g.sum().backward()
    close(z.grad.numpy(), np.full(4, 2.0))


def test_grad_errors(xy):
    _, _, jx, _ = xy
    with pytest.raises(RuntimeError, match="Expected f\\(\\*args\\) to return a scalar Tensor, "
                                           "got tensor with 1 dims"):
        func.grad(lambda a: a)(jx)
    with pytest.raises(RuntimeError, match="to return a Tensor, got <class 'float'>"):
        func.grad(lambda a: 3.0)(jx)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 1 positional inputs"):
        func.grad(lambda a: a.sum(), argnums=2)(jx)
    with pytest.raises(RuntimeError, match="argnums must be non-empty"):
        func.grad(lambda a: a.sum(), argnums=())(jx)
    with pytest.raises(RuntimeError, match="argnums elements must be unique"):
        func.grad(lambda a: a.sum(), argnums=(0, 0))(jx)
    with pytest.raises(RuntimeError, match="argnums must be int or Tuple"):
        func.grad(lambda a: a.sum(), argnums=1.0)(jx)
    with pytest.raises(RuntimeError, match="should be a tuple: \\(output, aux\\)"):
        func.grad(lambda a: a.sum(), has_aux=True)(jx)
    with pytest.raises(ValueError, match="must be Tensor, got <class 'float'>"):
        func.grad(lambda a: a)(3.0)
    with pytest.raises(RuntimeError, match="floating point"):
        func.grad(lambda a: a.sum())(jitorch.arange(3))


# ----------------------------------------------------------------------------- vjp / jvp
def test_vjp(xy):
    x, y, jx, jy = xy
    out, fn = func.vjp(lambda a, b: (a * b, a.exp()), jx, jy)
    close(out[0].numpy(), x * y)
    ga, gb = fn((jitorch.ones(4), jitorch.full((4,), 2.0)))
    close(ga.numpy(), y + 2 * np.exp(x), 1e-4)
    close(gb.numpy(), x)
    ga2, _ = fn((jitorch.ones(4), jitorch.zeros(4)))  # callable again
    close(ga2.numpy(), y)
    with pytest.raises(RuntimeError, match="pytree structure of cotangents"):
        fn(jitorch.ones(4))
    with pytest.raises(RuntimeError, match="Mismatch in shape: grad_output\\[0\\]"):
        fn((jitorch.ones(5), jitorch.ones(4)))
    with pytest.raises(RuntimeError, match="return only tensors, got unsupported type"):
        func.vjp(lambda a: 3, jx)
    out, fn, aux = func.vjp(lambda a: (a.sin(), a.cos()), jx, has_aux=True)
    close(aux.numpy(), np.cos(x))
    close(fn(jitorch.ones(4))[0].numpy(), np.cos(x))


def test_jvp(xy):
    x, y, jx, jy = xy
    out, t = func.jvp(lambda a, b: a.sin() * b, (jx, jy), (jitorch.ones(4), jitorch.zeros(4)))
    close(out.numpy(), np.sin(x) * y)
    close(t.numpy(), np.cos(x) * y)
    assert forward_tangent_cleared(out)
    out, t, aux = func.jvp(lambda a: (a * 3, a), (jx,), (jitorch.ones(4),), has_aux=True)
    close(t.numpy(), np.full(4, 3.0))
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        func.jvp(lambda a: a, jx, jx)
    with pytest.raises(RuntimeError, match="same python structure"):
        func.jvp(lambda a: a, (jx,), (jx, jx))
    with pytest.raises(RuntimeError, match="different size"):
        func.jvp(lambda a: a, (jx,), (jitorch.ones(5),))
    with pytest.raises(RuntimeError, match="return only tensors"):
        func.jvp(lambda a: 3, (jx,), (jx,))


def forward_tangent_cleared(t):
    return jitorch.autograd.forward_ad.unpack_dual(t).tangent is None


# ----------------------------------------------------------------------------- jacobians
def test_jacrev_jacfwd_hessian(xy):
    x, y, jx, jy = xy
    f = lambda a, b: a.sin() * b[:2].sum()  # noqa: E731
    want_a = np.diag(np.cos(x) * y[:2].sum())
    want_b = np.outer(np.sin(x), [1, 1, 0, 0])
    for jac in (func.jacrev, func.jacfwd):
        ja, jb = jac(f, argnums=(0, 1))(jx, jy)
        close(ja.numpy(), want_a, 1e-4)
        close(jb.numpy(), want_b, 1e-4)
        j = jac(lambda m: m.sum(1))(jitorch.ones(2, 3))
        assert tuple(j.shape) == (2, 2, 3)
    h = func.hessian(lambda a: (a ** 3).sum())(jx)
    close(h.numpy(), np.diag(6 * x), 1e-4)


# vmap: tests/test_vmap.py


def test_forward_over_reverse():
    """jvp/jacfwd over grad/jacrev: the dual inputs keep their tangents through the inner
    reverse transform (which cuts only its own tape)."""
    x = np.array([0.3, -1.1, 2.0])
    t = jitorch.tensor(x)
    h = func.jacfwd(func.jacrev(lambda a: (a.sin() * a).sum()))(t)
    close(h.numpy(), np.diag(2 * np.cos(x) - x * np.sin(x)), 1e-10)
    _, hv = func.jvp(func.grad(lambda a: (a ** 3).sum()), (t,), (jitorch.ones(3, dtype=t.dtype),))
    close(hv.numpy(), 6 * x, 1e-10)
