"""jitorch.func.vmap: results against a Python loop over the batch (jitorch row by row, and
NumPy), batching rules of the common op families, in_dims/out_dims, nesting, chunking,
composition with grad/jacrev/jvp (per-sample gradients), and PyTorch's errors."""
import numpy as np
import pytest

import jitorch
import jitorch.nn.functional as F
from jitorch import nn
from jitorch.func import functional_call, grad, jacrev, jvp, vjp, vmap

rng = np.random.default_rng(0)


def rand(*shape):
    return jitorch.tensor(rng.standard_normal(shape).astype(np.float32))


def close(a, b, tol=1e-5):
    a = a.detach().numpy() if isinstance(a, jitorch.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, jitorch.Tensor) else np.asarray(b)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def looped(f, args, in_dims, out_dim=0):
    """The definition of vmap: f on each sample, stacked."""
    sizes = [a.shape[d] for a, d in zip(args, in_dims) if d is not None]
    outs = [f(*[a if d is None else a.select(d, i) for a, d in zip(args, in_dims)])
            for i in range(sizes[0])]
    return jitorch.stack(outs, out_dim)


def check(f, *args, in_dims=0, out_dims=0):
    dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
    got = vmap(f, in_dims=in_dims, out_dims=out_dims)(*args)
    close(got, looped(f, args, dims, out_dims))
    return got


X = rand(4, 3, 5)
W = rand(5)


# ----------------------------------------------------------------------------- elementwise
@pytest.mark.parametrize("f", [
    lambda a, b: a * b + 1,
    lambda a, b: jitorch.where(a > 0, a, b.exp()),
    lambda a, b: (a - b).clamp(-0.5, 0.5).sigmoid(),
    lambda a, b: jitorch.maximum(a, b) ** 2 / (1 + b.abs()),
])
def test_elementwise_broadcasts_like_samples(f):
    check(f, X, W, in_dims=(0, None))
    check(f, X, rand(4, 5), in_dims=(0, 0))  # a (3, 5) sample with a (5,) sample
    check(f, rand(3, 4, 5), rand(5, 4), in_dims=(1, 1))


def test_elementwise_matches_numpy():
    a, b = rand(4, 3), rand(3, 4)
    got = vmap(lambda x, y: x * y - x, in_dims=(0, 1))(a, b)
    close(got, a.numpy() * b.numpy().T - a.numpy())


def test_promotion_uses_logical_ranks():
    # a 0-dim float64 sample does not promote a float32 vector (PyTorch's rule)
    r = vmap(lambda s, v: s + v)(jitorch.ones(4, dtype=jitorch.float64), jitorch.ones(4, 3))
    assert r.dtype == jitorch.float32
    r = vmap(lambda s, v: s + v)(jitorch.ones(4, dtype=jitorch.float64),
                                 jitorch.ones(4, dtype=jitorch.float32))
    assert r.dtype == jitorch.float64


# ----------------------------------------------------------------------------- reductions
@pytest.mark.parametrize("f", [
    lambda a: a.sum(),
    lambda a: a.sum(1),
    lambda a: a.sum((0, 1), keepdim=True),
    lambda a: a.mean(-1, keepdim=True),
    lambda a: a.var(0),
    lambda a: a.amax(1),
    lambda a: a.argmax(),
    lambda a: a.argmax(1),
    lambda a: a.max(),
    lambda a: a.median(),
    lambda a: a.norm(),
    lambda a: a.logsumexp(0),
    lambda a: a.prod(1),
    lambda a: a.cumsum(1),
    lambda a: a.sort(1).values,
    lambda a: a.topk(2, 1).indices,
    lambda a: a.max(0).values,
    lambda a: F.softmax(a, -1),
    lambda a: F.log_softmax(a, 0),
])
def test_reductions_shift_dims(f):
    check(f, X)


def test_reduction_of_scalar_samples():
    check(lambda a: a.sum(0), rand(4))
    check(lambda a: a.cumsum(0), rand(4))
    check(lambda a: a.sum(), rand(4))


# ----------------------------------------------------------------------------- shape ops
@pytest.mark.parametrize("f", [
    lambda a: a.reshape(-1),
    lambda a: a.view(5, 3),
    lambda a: a.transpose(0, 1),
    lambda a: a.t(),
    lambda a: a.permute(1, 0),
    lambda a: a.unsqueeze(-1),
    lambda a: a.unsqueeze(0).squeeze(),
    lambda a: a.unsqueeze(1).squeeze(1),
    lambda a: a.flatten(),
    lambda a: a.expand(2, 3, 5),
    lambda a: a.select(1, 2),
    lambda a: a.narrow(1, 1, 3),
    lambda a: a[1],
    lambda a: a[:, 1:4],
    lambda a: a[..., None, ::2],
    lambda a: a[[0, 2]],
    lambda a: a[:, [0, 4]],
    lambda a: a[jitorch.tensor([True, False, True])],
    lambda a: a.diagonal(),
    lambda a: a.movedim(0, 1),
    lambda a: a.flip(1),
    lambda a: a.roll(1, 1),
    lambda a: a.roll(2),
    lambda a: a.tile(2),
    lambda a: a.repeat(2, 1),
    lambda a: jitorch.cat([a, W.expand(1, 5)], 0),
    lambda a: jitorch.stack([a, a * 2], 1),
    lambda a: a.split(2, 1)[1],
    lambda a: a.chunk(3, 1)[0],
    lambda a: a.unbind(0)[2],
    lambda a: a.tril(),
    lambda a: a.reshape(15).view_as(W.expand(3, 5)),
    lambda a: a.gather(1, jitorch.tensor([[0], [1], [4]])),
    lambda a: a.index_select(1, jitorch.tensor([4, 0])),
])
def test_shape_ops(f):
    check(f, X)


def test_shape_reads_are_logical():
    seen = []

    def f(a):
        seen.append((tuple(a.shape), a.dim(), a.numel(), len(a)))
        return a.reshape(a.shape[0], -1)

    check(f, X)
    assert seen[0] == ((3, 5), 2, 15, 3)


# ----------------------------------------------------------------------------- linear algebra
@pytest.mark.parametrize("shapes,in_dims", [
    (((4, 5), (5,)), (0, None)),
    (((4, 5), (4, 5)), (0, 0)),
    (((5,), (4, 5, 3)), (None, 0)),
    (((4, 3, 5), (5, 2)), (0, None)),
    (((4, 3, 5), (4, 5, 2)), (0, 0)),
    (((4, 2, 3, 5), (5, 2)), (0, None)),
    (((3, 5), (4, 2, 5, 2)), (None, 0)),
    (((4, 5), (4, 6, 5, 2)), (0, 0)),
])
def test_matmul(shapes, in_dims):
    a, b = rand(*shapes[0]), rand(*shapes[1])
    check(lambda x, y: x @ y, a, b, in_dims=in_dims)


def test_matrix_ops():
    check(lambda x, y: x.mm(y), rand(4, 3, 5), rand(5, 2), in_dims=(0, None))
    check(lambda x, y: x.mv(y), rand(4, 3, 5), rand(4, 5))
    check(lambda x, y: x.dot(y), rand(4, 5), rand(5), in_dims=(0, None))
    check(lambda x, y: jitorch.bmm(x, y), rand(4, 2, 3, 5), rand(2, 5, 2), in_dims=(0, None))
    check(lambda x, y: jitorch.outer(x, y), rand(4, 3), rand(5), in_dims=(0, None))
    check(lambda x, w, b: F.linear(x, w, b), rand(4, 3, 5), rand(2, 5), rand(2),
          in_dims=(0, None, None))
    check(lambda x, w: F.linear(x, w), rand(3, 5), rand(4, 2, 5), in_dims=(None, 0))
    check(lambda x, y: jitorch.einsum("ij,j->i", x, y), rand(4, 3, 5), rand(5),
          in_dims=(0, None))
    check(lambda x, y: jitorch.einsum("...j,kj", x, y), rand(4, 3, 5), rand(4, 2, 5))
    check(lambda x: jitorch.linalg.inv(x @ x.mT + jitorch.eye(3)), rand(4, 3, 3))
    with pytest.raises(RuntimeError, match="mm"):
        vmap(lambda x, y: x.mm(y))(rand(4, 5), rand(4, 5))


def test_nn_layers():
    conv, w = rand(4, 2, 1, 7, 7), rand(3, 1, 3, 3)
    check(lambda x, k: F.max_pool2d(F.conv2d(x, k), 2), conv, w, in_dims=(0, None))
    check(lambda x, k: F.conv2d(x, k).relu(), rand(4, 1, 6, 6), w, in_dims=(0, None))
    check(lambda x: F.avg_pool1d(x, 2), rand(4, 2, 3, 8))
    logits, target = rand(4, 6, 5), jitorch.tensor(rng.integers(0, 5, (4, 6)))
    check(lambda lg, tg: F.cross_entropy(lg, tg), logits, target)
    check(lambda lg, tg: F.nll_loss(F.log_softmax(lg, -1), tg, reduction="none"), logits,
          target)
    check(lambda x: F.layer_norm(x, (5,)), X)
    check(lambda x: F.mse_loss(x, jitorch.zeros(3, 5)), X)
    check(lambda i, e: F.embedding(i, e), jitorch.tensor([[0, 2], [1, 1], [3, 0]]), rand(4, 3),
          in_dims=(0, None))


# ----------------------------------------------------------------------------- in/out dims
def test_in_dims_and_out_dims():
    a, b = rand(3, 4), rand(4, 3)
    close(vmap(lambda x, y: x + y, in_dims=(1, 0))(a, b), a.numpy().T + b.numpy())
    close(vmap(lambda x, y: x + y, in_dims=(-1, 0))(a, b), a.numpy().T + b.numpy())
    close(vmap(lambda x: x * 2, out_dims=1)(a), a.numpy().T * 2)
    r = vmap(lambda x: (x, x.sum()), out_dims=(1, 0))(a)
    close(r[0], a.numpy().T)
    close(r[1], a.numpy().sum(1))
    # out_dims None for an output that does not depend on the batch
    r = vmap(lambda x, y: (x * 2, y), in_dims=(0, None), out_dims=(0, None))(a, W)
    assert r[1] is W
    # an unbatched output with an out_dim is expanded over the batch
    close(vmap(lambda x: W)(a), np.broadcast_to(W.numpy(), (3, 5)))


def test_nested_inputs_and_kwargs():
    a, b = rand(3, 4), rand(4, 3)
    r = vmap(lambda d, lst, scale=1.0: d["p"] * lst[0] * scale,
             in_dims=({"p": 0}, [1]))({"p": a}, [b], scale=3.0)
    close(r, a.numpy() * b.numpy().T * 3)
    r = vmap(lambda pair, c: pair[0] + pair[1] + c, in_dims=((0, None), None))((a, W[:4]), 1.0)
    close(r, a.numpy() + W.numpy()[:4] + 1)


def test_nested_vmap():
    a, b = rand(3, 5), rand(4, 5)
    outer_prod = vmap(vmap(lambda x, y: (x * y).sum(), in_dims=(None, 0)), in_dims=(0, None))
    close(outer_prod(a, b), a.numpy() @ b.numpy().T)
    close(vmap(vmap(lambda x: x.sum()))(X), X.numpy().sum(-1))
    close(vmap(vmap(lambda x: x @ W, in_dims=1), in_dims=0)(rand(2, 5, 3, 5)).shape, (2, 3, 5))


def test_chunk_size_matches_unchunked():
    f = lambda x: (x.softmax(-1), x.sum())
    full = vmap(f)(X)
    for c in (1, 3, 4, 10):
        part = vmap(f, chunk_size=c)(X)
        close(part[0], full[0])
        close(part[1], full[1])
    with pytest.raises(ValueError, match="chunk_size should be None or greater than 0"):
        vmap(f, chunk_size=0)


def test_alias_and_zero_size_batch():
    assert jitorch.vmap is vmap
    assert tuple(vmap(lambda x: x.sum(0))(jitorch.zeros(0, 3, 2)).shape) == (0, 2)


# ----------------------------------------------------------------------------- in place
def test_inplace_on_batched_tensors():
    def f(x):
        y = x.clone()
        y.mul_(2).add_(1)
        y[0] = 5.0
        return y

    check(f, X)
    check(lambda x: x.clone().fill_(x[0, 0]), X)
    check(lambda x: x.clone().zero_() + x, X)
    base = X.clone()
    vmap(lambda x: x.add_(1))(base)  # writes through to the physical batch
    close(base, X.numpy() + 1)


def test_inplace_into_unbatched_from_batched_is_an_error():
    with pytest.raises(RuntimeError, match="vmap: add_\\(self, \\*extra_args\\) is not "
                                           "possible"):
        vmap(lambda x: jitorch.zeros(3, 5).add_(x))(X)
    with pytest.raises(RuntimeError, match="vmap: copy_"):
        vmap(lambda x: jitorch.zeros(3, 5).copy_(x))(X)
    with pytest.raises(RuntimeError, match="vmap: copy_"):
        vmap(lambda x: jitorch.zeros(3).fill_(x.sum()))(X)


# ----------------------------------------------------------------------------- composition
def test_per_sample_gradients_function():
    def loss(w, x, t):
        return ((x @ w - t) ** 2).mean()

    x, tgt = rand(6, 3, 5), rand(6, 3)
    g = vmap(grad(loss), in_dims=(None, 0, 0))(W, x, tgt)
    ref = jitorch.stack([grad(loss)(W, x[i], tgt[i]) for i in range(6)])
    close(g, ref)
    # closed form: 2/3 * x_i^T (x_i w - t_i)
    xn, tn, wn = x.numpy(), tgt.numpy(), W.numpy()
    close(g, np.stack([2 / 3 * xn[i].T @ (xn[i] @ wn - tn[i]) for i in range(6)]))


def test_per_sample_gradients_model():
    """The PyTorch tutorial: vmap(grad(loss)) over functional_call of a CNN."""
    jitorch.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(1, 3, 3)
            self.fc1 = nn.Linear(3 * 3 * 3, 8)
            self.fc2 = nn.Linear(8, 4)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv(x)), 2)
            x = F.relu(self.fc1(x.flatten(1)))
            return F.log_softmax(self.fc2(x), dim=1)

    model = Net()
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    data, targets = rand(5, 1, 8, 8), jitorch.tensor([1, 3, 0, 2, 2])

    def compute_loss(params, buffers, sample, target):
        pred = functional_call(model, (params, buffers), (sample.unsqueeze(0),))
        return F.nll_loss(pred, target.unsqueeze(0))

    g = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)
    for i in range(5):
        gi = grad(compute_loss)(params, buffers, data[i], targets[i])
        for k in params:
            assert tuple(g[k].shape) == (5,) + tuple(params[k].shape)
            close(g[k][i], gi[k])


def test_vmap_of_jacrev_vjp_jvp():
    f = lambda x: (x @ W.reshape(5, 1)).tanh().sin()
    close(vmap(jacrev(f))(X), looped(jacrev(f), (X,), (0,)))
    t = rand(4, 3, 5)
    got = vmap(lambda x, v: jvp(f, (x,), (v,))[1])(X, t)
    close(got, looped(lambda x, v: jvp(f, (x,), (v,))[1], (X, t), (0, 0)))
    ct = rand(4, 3, 1)
    got = vmap(lambda x, c: vjp(f, x)[1](c)[0])(X, ct)
    close(got, looped(lambda x, c: vjp(f, x)[1](c)[0], (X, ct), (0, 0)))


def test_grad_through_vmap():
    x = X.clone().requires_grad_()
    vmap(lambda a: (a.sin() @ W).sum())(x).sum().backward()
    close(x.grad, np.cos(X.numpy()) * W.numpy())
    close(grad(lambda a: vmap(lambda r: (r ** 2).sum())(a).sum())(X), 2 * X.numpy())


def test_jacobian_vectorized_uses_vmap():
    from jitorch.autograd.functional import jacobian
    f = lambda x: (x @ W.reshape(5, 1) * x).relu()
    close(jacobian(f, X[0], vectorize=True), jacobian(f, X[0]))


# ----------------------------------------------------------------------------- errors
def test_errors_on_inputs():
    f = lambda x: x
    with pytest.raises(ValueError, match="Expected at least one Tensor to vmap over"):
        vmap(f, in_dims=(None,))(X)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a"):
        vmap(f, in_dims=None)(X)
    with pytest.raises(ValueError, match=r"got sizes \[4, 3\] for the mapped dimension"):
        vmap(lambda a, b: a + b)(rand(4, 2), rand(3, 2))
    with pytest.raises(ValueError, match="expected in_dim to satisfy -3 <= in_dim < 3"):
        vmap(f, in_dims=3)(X)
    with pytest.raises(ValueError, match="We cannot vmap over non-Tensor arguments"):
        vmap(lambda a, b: a, in_dims=(0, 0))(X, 2.0)
    with pytest.raises(ValueError, match="in_dims is not compatible with the structure"):
        vmap(lambda a, b: a, in_dims=(0,))(X, X)
    with pytest.raises(ValueError, match="expected `in_dims` to be int or a"):
        vmap(f, in_dims=[0])(X)
    with pytest.raises(ValueError, match="got no inputs"):
        vmap(lambda: W)()


def test_errors_on_outputs():
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        vmap(lambda x: x, out_dims=None)(X)
    with pytest.raises(ValueError, match="must only return Tensors, got type <class 'float'>"):
        vmap(lambda x: 1.0)(X)
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure"):
        vmap(lambda x: (x, x), out_dims=(0, 0, 0))(X)


def test_data_dependent_python_is_refused():
    with pytest.raises(RuntimeError, match=r"calling .item\(\)"):
        vmap(lambda x: x.sum().item())(X)
    with pytest.raises(RuntimeError, match="data-dependent control flow"):
        vmap(lambda x: x * 2 if x.sum() > 0 else x)(X)


def test_op_without_rule_names_it():
    with pytest.raises(NotImplementedError, match="vmap: no batching rule for 'unique'"):
        vmap(lambda x: x.unique())(X)


def test_randomness():
    with pytest.raises(RuntimeError, match="vmap: called random operation while in "
                                           "randomness error mode"):
        vmap(lambda x: x + jitorch.randn(3, 5))(X)
    with pytest.raises(RuntimeError, match="randomness error mode"):
        vmap(lambda x: F.dropout(x, 0.5))(X)
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda x: x, randomness="sometimes")
    with pytest.raises(NotImplementedError, match="randomness='different'"):
        vmap(lambda x: x, randomness="different")
    # random values drawn outside vmap are ordinary inputs
    noise = jitorch.randn(4, 3, 5)
    check(lambda x, n: x + n, X, noise)


def test_mode_is_removed_after_errors():
    from jitorch._ops import registry
    with pytest.raises(NotImplementedError):
        vmap(lambda x: x.unique())(X)
    assert registry._mode_state.stack == []


def test_registry_batch_rules_are_declared_rules():
    from jitorch._ops import batching
    from jitorch._ops.registry import OPS
    declared = [op for op in OPS.values() if op.batch is not None]
    assert len(declared) > 60
    assert all(isinstance(op.batch, batching.Rule) for op in declared)
    for name in ("add", "exp", "where", "sum", "cumsum", "zeros_like"):
        assert batching.rule_for(OPS[name]) is not None


@pytest.mark.parametrize("f,args,in_dims", [
    (lambda x, i: x[i], (X, jitorch.tensor([[0, 2], [1, 1], [2, 0], [0, 0]])), (0, 0)),
    (lambda x, i: x[:, i], (X, jitorch.tensor([[0, 4], [1, 3], [2, 2], [3, 1]])), (0, 0)),
    (lambda x, m: x.masked_fill(m, 0.5), (X, X > 0), (0, 0)),
    (lambda x, m: x.masked_fill(m, -1.0), (X, jitorch.tensor([True, False, True, False, True])),
     (0, None)),
    (lambda x: F.one_hot(x, 4), (jitorch.tensor([[0, 1], [3, 2], [1, 1]]),), (0,)),
    (lambda x: x.diff(dim=1), (X,), (0,)),
    (lambda x: x.repeat_interleave(2, 0), (X,), (0,)),
    (lambda x: jitorch.quantile(x, jitorch.tensor([0.25, 0.5]), dim=1), (X,), (0,)),
    (lambda x, y: jitorch.linalg.solve(x @ x.mT + 3 * jitorch.eye(3), y),
     (rand(4, 3, 3), rand(4, 3)), (0, 0)),
    (lambda x: jitorch.kron(x[:2, :2], x[1:, 3:]), (X,), (0,)),
    (lambda x: x.cumprod(1), (X,), (0,)),
])
def test_more_rules(f, args, in_dims):
    check(f, *args, in_dims=in_dims)


def test_gradients_through_more_rules():
    idx = jitorch.tensor([[0, 2], [1, 1], [2, 0], [0, 0]])

    def f(w, x, i):
        return ((x[i] * w).cumprod(-1) + x.logcumsumexp(0)[:2]).sum()

    g = vmap(grad(f), in_dims=(None, 0, 0))(W, X, idx)
    close(g, jitorch.stack([grad(f)(W, X[k], idx[k]) for k in range(4)]))
    g = vmap(grad(f, argnums=1), in_dims=(None, 0, 0))(W, X, idx)
    close(g, jitorch.stack([grad(f, argnums=1)(W, X[k], idx[k]) for k in range(4)]))


def test_vmap_over_a_scripted_function():
    @jitorch.script
    def f(x):
        return x * 2 + x.sum()

    f(X[0])  # compiled for unbatched samples first
    check(f, X)


def test_vmap_over_a_scripted_module_method_is_refused():
    lin = jitorch.jit.script(nn.Linear(5, 2))
    lin(X[0])
    with pytest.raises(NotImplementedError, match="scripted module method cannot run under "
                                                  "jitorch.func.vmap"):
        vmap(lin)(X)


def test_vmap_of_forward_over_reverse_hessian():
    x = rand(4, 3)
    h = vmap(jitorch.func.jacfwd(jacrev(lambda a: (a ** 3).sum())))(x)
    close(h, np.stack([np.diag(6 * r) for r in x.numpy()]), 1e-4)
    close(vmap(jitorch.func.hessian(lambda a: (a ** 3).sum()))(x), h, 1e-4)


def test_vmap_of_jvp_with_unbatched_primals():
    """jacfwd's scheme: one primal, a batch of tangents (the primal's ops are computed once,
    their tangents batched)."""
    x = rand(5)
    f = lambda a: (a.sin() * a).cumsum(0) @ W.reshape(5, 1).expand(5, 3)
    cols = vmap(lambda t: jvp(f, (x,), (t,))[1])(jitorch.eye(5))
    close(cols.t(), jitorch.func.jacfwd(f)(x))
    prim = vmap(lambda t: jvp(f, (x,), (t,))[0], out_dims=None)(jitorch.eye(5))
    close(prim, f(x))


def test_writes_that_would_lose_the_batch_are_errors():
    with pytest.raises(RuntimeError, match="vmap: out_"):
        vmap(lambda x: jitorch.add(x, 1, out=jitorch.empty(3, 5)))(X)
    close(vmap(lambda x: jitorch.add(x, 1, out=x.clone()))(X), X.numpy() + 1)
    w = W.clone().requires_grad_()
    with pytest.raises(RuntimeError, match="vmap: backward"):
        vmap(lambda x: (x @ w).sum().backward())(X)


def test_differentiable_write_into_a_view_is_refused():
    def f(x):
        y = x.clone()
        y[1:].mul_(3)
        return (y * y).sum()

    with pytest.raises(NotImplementedError, match="into a view of a batched tensor"):
        vmap(grad(f))(X[:, 0])
    # out of place, the same function works
    g = lambda x: (jitorch.cat([x[:1], x[1:] * 3]) ** 2).sum()
    close(vmap(grad(g))(X[:, 0]), looped(grad(g), (X[:, 0],), (0,)))
